#pragma once
/// One node's row of the Metropolis-Hastings mixing matrix over the nodes
/// that are in the run (D-PSGD with faults.join): what a node needs, without
/// the dense n x n matrix. Kept out of atrain/topology.hpp, which every
/// engine file includes, because only D-PSGD's worker uses it.
#include <cstdint>
#include <vector>

#include "atrain/topology/graph.hpp"

namespace atrain {

/// W_ii and W_ij for j in g.out(i), in that order.
struct mixing_row {
  double self = 1;
  std::vector<double> in;
};

/// Row i of metropolis_hastings over the subgraph of g induced by the nodes
/// with members[j] true (degrees counted among members; W_ij = 0 for a j
/// that is not one). Symmetric and doubly stochastic over the members; with
/// every node a member it equals metropolis_hastings(g)'s row bit for bit.
/// `g` must be symmetric and members.size() == g.size().
[[nodiscard]] mixing_row metropolis_hastings_row(const digraph& g, std::uint32_t i,
                                                 const std::vector<bool>& members);

}  // namespace atrain
