#pragma once
/// Helpers shared by the topology tests.
#include <string>

#include "atrain/topology/graph.hpp"

namespace atrain::test {

/// True when calling f throws topology_error whose message contains `part`.
template <class F>
bool throws_with(F&& f, const std::string& part) {
  try {
    f();
  } catch (const topology_error& e) {
    return std::string(e.what()).find(part) != std::string::npos;
  }
  return false;
}

}  // namespace atrain::test
