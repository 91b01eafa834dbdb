/// Graphviz output of a topology.
#include <cstdio>
#include <string>

#include "atrain/topology/weights.hpp"

namespace atrain {
namespace {

std::string format_gap(double gap) {
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.4g", gap);
  return buffer;
}

void append_edges(std::string& dot, const digraph& g, const char* style) {
  for (const edge& e : g.edges()) {
    dot +=
      "  " + std::to_string(e.from) + " -> " + std::to_string(e.to) + " [style=" + style + "];\n";
  }
}

}  // namespace

std::string to_dot(const topology& t) {
  std::string dot = "digraph atrain {\n";
  dot += "  label=\"solid: G_R (pull), dashed: G_C (push); double circle: common root; "
         "gap R " +
         format_gap(t.gap_r) + ", gap C " + format_gap(t.gap_c) + (t.tree ? "; tree pair" : "") +
         "\";\n";
  dot += "  node [shape=circle];\n";
  std::vector<bool> is_root(t.g_r.size(), false);
  for (const std::uint32_t r : t.roots) {
    if (r < is_root.size())
      is_root[r] = true;
  }
  // Every node is listed so that isolated nodes still appear.
  for (std::uint32_t i = 0; i < t.g_r.size(); ++i) {
    dot += "  " + std::to_string(i) + (is_root[i] ? " [shape=doublecircle];\n" : ";\n");
  }
  append_edges(dot, t.g_r, "solid");
  append_edges(dot, t.g_c, "dashed");
  return dot + "}\n";
}

}  // namespace atrain
