/// metropolis_hastings_row: see mixing_row.hpp.
#include "atrain/topology/mixing_row.hpp"

#include <algorithm>
#include <cstddef>

namespace atrain {

mixing_row metropolis_hastings_row(const digraph& g, std::uint32_t i,
                                   const std::vector<bool>& members) {
  auto degree = [&](std::uint32_t v) {
    std::size_t d = 0;
    for (const std::uint32_t u : g.out(v))
      d += members[u] ? 1 : 0;
    return d;
  };
  const std::size_t own = degree(i);
  mixing_row row;
  double off_diagonal = 0;  // summed in g.out(i) order, as metropolis_hastings does
  for (const std::uint32_t j : g.out(i)) {
    if (!members[j]) {
      row.in.push_back(0.0);
      continue;
    }
    const std::size_t larger = std::max(own, degree(j));
    row.in.push_back(1.0 / static_cast<double>(1 + larger));
    off_diagonal += row.in.back();
  }
  row.self = 1.0 - off_diagonal;
  return row;
}

}  // namespace atrain
