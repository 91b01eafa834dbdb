#pragma once
/// topology/: graphs, builders, weights, common roots, spectral gap. Knows nothing of CAF.
#include "atrain/topology/graph.hpp"
#include "atrain/topology/weights.hpp"
