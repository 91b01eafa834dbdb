/// R-FAST tracking epochs: the survivors' common-root check, the re-rooted
/// graph pair, and the wiring of a new epoch.
#include "algorithms/rfast/rfast_epoch.hpp"

#include <algorithm>

#include "algorithms/rfast/rfast.hpp"
#include "atrain/actors/network.hpp"

namespace atrain {

namespace {

[[nodiscard]] std::string kind_name(const topology_settings& t) {
  switch (t.builder) {
    case topology_builder::tree_pair:
      return "tree pair of arity " + std::to_string(t.tree_arity);
    case topology_builder::star:
      return "star";
    case topology_builder::ring:
      return "ring";
    case topology_builder::directed_ring:
      return "directed ring";
    case topology_builder::exponential:
      return "exponential graph";
    case topology_builder::complete:
      return "complete graph";
    case topology_builder::torus:
      return "torus";
    case topology_builder::random_regular:
      return "random regular graph";
    default:
      return "explicit graph pair";
  }
}

/// The spec's kind of graph pair over m nodes whose root is `root` (compact
/// ids); empty when the kind cannot be rebuilt.
[[nodiscard]] std::optional<topology> rebuild(const topology_settings& t, std::size_t m,
                                              std::uint32_t root) {
  const bool tree = t.builder == topology_builder::tree_pair;
  if (m == 1)
    return make_topology(make_from_edges(1, {}), make_from_edges(1, {}), tree);
  digraph g;
  switch (t.builder) {
    case topology_builder::tree_pair: {
      auto down = make_tree(m, t.tree_arity, root);
      auto up = down.reversed();
      return make_topology(std::move(down), std::move(up), true);
    }
    case topology_builder::star:
      g = make_star(m, root);
      break;
    case topology_builder::ring:
      g = make_ring(m);
      break;
    case topology_builder::directed_ring:
      g = make_directed_ring(m);
      break;
    case topology_builder::exponential:
      g = make_exponential(m);
      break;
    case topology_builder::directed_exponential:
      g = make_directed_exponential(m);
      break;
    case topology_builder::complete:
      g = make_complete(m);
      break;
    default:
      return std::nullopt;
  }
  auto copy = g;
  return make_topology(std::move(g), std::move(copy), false);
}

/// The kinds rebuild() can build over other nodes than the spec's.
constexpr const char* rebuildable_kinds = "re-rooting supports tree pairs, stars, rings, directed "
                                          "rings, (directed) exponential and complete graphs";

[[nodiscard]] bool rebuildable(const topology_settings& t) {
  switch (t.builder) {
    case topology_builder::tree_pair:
    case topology_builder::star:
    case topology_builder::ring:
    case topology_builder::directed_ring:
    case topology_builder::exponential:
    case topology_builder::directed_exponential:
    case topology_builder::complete:
      return true;
    default:
      return false;
  }
}

[[nodiscard]] std::uint32_t index_of(const std::vector<std::uint32_t>& ids, std::uint32_t id) {
  return static_cast<std::uint32_t>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
}

[[nodiscard]] std::vector<std::uint32_t> run_ids(const std::vector<std::uint32_t>& compact,
                                                 const std::vector<std::uint32_t>& members) {
  std::vector<std::uint32_t> out;
  out.reserve(compact.size());
  for (auto k : compact)
    out.push_back(members.at(k));
  return out;
}

[[nodiscard]] std::string id_list(const std::vector<std::uint32_t>& ids) {
  std::string s;
  for (auto i : ids)
    s += (s.empty() ? "" : ",") + std::to_string(i);
  return "{" + s + "}";
}

}  // namespace

void check_rfast_joins(const loaded_spec& ls, const topology_settings& t) {
  if (ls.spec.faults().join_size() > 0 && !rebuildable(t))
    throw spec_error(ls.where("faults.join") +
                     ": rfast starts without the absent nodes on a pair " +
                     "of the spec's kind built over the others, and " + kind_name(t) +
                     " cannot be: " + rebuildable_kinds);
}

rfast_epoch_plan first_rfast_epoch(const run_plan& plan) {
  rfast_epoch_plan e;
  e.members.resize(plan.nodes());
  for (std::uint32_t i = 0; i < e.members.size(); ++i)
    e.members[i] = i;
  e.topo = std::make_shared<const topology>(*plan.topo);
  e.root = e.topo->roots.front();
  e.kind = kind_name(plan.topology);
  return e;
}

std::vector<std::uint32_t> surviving_roots(const rfast_epoch_plan& e,
                                           const std::vector<std::uint32_t>& survivors) {
  if (survivors.empty())
    return {};
  std::vector<std::uint32_t> keep;  // compact ids of e
  for (auto id : survivors)
    keep.push_back(index_of(e.members, id));
  return run_ids(
    common_roots(induced_subgraph(e.topo->g_r, keep), induced_subgraph(e.topo->g_c, keep)),
    survivors);
}

caf::expected<rfast_epoch_plan> next_rfast_epoch(const run_plan& plan, const rfast_epoch_plan& e,
                                                 const std::vector<std::uint32_t>& survivors,
                                                 const std::vector<bool>& worker_up) {
  auto alive = [&](std::uint32_t id) {
    return std::binary_search(survivors.begin(), survivors.end(), id);
  };
  auto up = [&](std::uint32_t id) { return alive(id) && worker_up.at(id); };
  std::uint32_t root = survivors.front();
  if (alive(e.root)) {
    root = e.root;
  } else {
    const auto children = run_ids(e.topo->g_r.out(index_of(e.members, e.root)), e.members);
    auto pick = std::find_if(children.begin(), children.end(), up);
    if (pick == children.end())
      pick = std::find_if(survivors.begin(), survivors.end(), up);
    if (pick != children.end() && pick != survivors.end())
      root = *pick;
  }
  const auto& spec_topology = plan.topology;
  std::optional<topology> topo;
  try {
    topo = rebuild(spec_topology, survivors.size(), index_of(survivors, root));
  } catch (const topology_error& err) {
    return caf::make_error(caf::sec::invalid_argument,
                           "re-rooting over " + id_list(survivors) + ": " + err.what());
  }
  if (!topo)
    return caf::make_error(caf::sec::invalid_argument,
                           "the survivors " + id_list(survivors) + " of the " + e.kind +
                             " share no common root, and a " + e.kind +
                             " cannot be rebuilt over other nodes (" + rebuildable_kinds + ")");
  rfast_epoch_plan next;
  next.epoch = e.epoch + 1;
  next.members = survivors;
  next.kind = e.kind;
  const auto roots = run_ids(topo->roots, survivors);
  next.root = std::binary_search(roots.begin(), roots.end(), root) ? root : roots.front();
  next.topo = std::make_shared<const topology>(std::move(*topo));
  return next;
}

caf::expected<rfast_epoch_plan> rejoin_rfast_epoch(const run_plan& plan, const rfast_epoch_plan& e,
                                                   const std::vector<std::uint32_t>& members,
                                                   const std::vector<bool>& worker_up) {
  if (members.size() < plan.nodes()) {
    if (!rebuildable(plan.topology))
      return caf::make_error(caf::sec::invalid_argument,
                             "not every node is back (" + id_list(members) +
                               " are in the run) "
                               "and a " +
                               e.kind +
                               " cannot be rebuilt over other nodes than "
                               "the spec's (" +
                               rebuildable_kinds + ")");
    return next_rfast_epoch(plan, e, members, worker_up);
  }
  auto next = first_rfast_epoch(plan);
  next.epoch = e.epoch + 1;
  return next;
}

void repoint_rfast_routes(caf::event_based_actor* sup, run_context& ctx, std::uint32_t id,
                          const caf::actor_addr& old_buffer, const caf::actor& buffer) {
  for (auto& [edge, handle] : rfast_route_table(ctx)->route) {
    if (edge.second != id)
      continue;
    if (handle.address() == old_buffer)
      handle = buffer;  // a perfect link: the sender's route is the buffer itself
    else
      sup->send(handle, restart_atom::value, old_buffer, buffer);
  }
}

std::shared_ptr<rfast_routes> rfast_route_table(run_context& ctx) {
  return process_shared<rfast_routes>(ctx, "rfast.routes",
                                      [] { return std::make_shared<rfast_routes>(); });
}

void start_rfast_epoch(caf::event_based_actor* sup, const context_ptr& ctx,
                       std::vector<node_actors>& nodes, const rfast_epoch_plan& e,
                       const std::vector<bool>& worker_up, link_list& new_links) {
  const auto& t = *e.topo;
  const auto& ids = e.members;
  auto table = rfast_route_table(*ctx);
  std::vector<std::pair<std::uint32_t, std::uint32_t>> missing;
  for (const auto* g : {&t.g_r, &t.g_c})
    for (const auto& edge : g->edges()) {
      const std::pair<std::uint32_t, std::uint32_t> run_edge{ids[edge.from], ids[edge.to]};
      if (table->route.count(run_edge) == 0)
        missing.push_back(run_edge);
    }
  std::vector<caf::actor> buffers;
  for (const auto& n : nodes)
    buffers.push_back(n.buffer);
  network net{sup, ctx, missing, buffers, new_links};
  for (const auto& edge : missing)
    table->route[edge] = net.route(edge.first, edge.second);
  auto routes_to = [&](std::uint32_t from, const std::vector<std::uint32_t>& out) {
    std::vector<caf::actor> r;
    for (auto to : out)
      r.push_back(table->route.at({from, to}));
    return r;
  };
  for (std::uint32_t k = 0; k < ids.size(); ++k) {
    const auto id = ids[k];
    rfast_epoch view;
    view.epoch = e.epoch;
    view.in_r = run_ids(t.g_r.in(k), ids);
    for (auto j : t.g_r.in(k))
      view.r_in.push_back(t.r(k, j));
    view.r_self = t.r(k, k);
    view.in_c = run_ids(t.g_c.in(k), ids);
    for (auto j : t.g_c.in(k))
      view.c_in.push_back(t.c(k, j));
    view.c_self = t.c(k, k);
    auto to_buffer = view;
    to_buffer.out = run_ids(t.g_c.out(k), ids);
    to_buffer.routes = routes_to(id, to_buffer.out);
    sup->send(caf::actor_cast<rfast_buffer_actor>(nodes[id].buffer), epoch_atom::value,
              std::move(to_buffer));
    view.out = run_ids(t.g_r.out(k), ids);
    view.routes = routes_to(id, view.out);
    nodes[id].worker_routes = view.routes;
    table->worker_view[id] = view;
    if (worker_up.at(id))
      sup->send(caf::actor_cast<rfast_worker_actor>(nodes[id].worker), epoch_atom::value,
                std::move(view));
  }
}

}  // namespace atrain
