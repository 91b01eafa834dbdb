/// prepare_run: from a validated spec to everything the actors need.
#include "atrain/actors/run_plan.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/algorithms.hpp"

#include "model_of.hpp"
#include "run_data.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace atrain {

using plan_detail::load;
using plan_detail::load_train;
using plan_detail::refuse;

void check_spec(const loaded_spec& ls) {
  spec_facts facts;
  if (const auto* algo = find_algorithm(ls.spec.algorithm().kind_case())) {
    // A copy of the block only the refusal below reads (prepare_run keeps its own).
    const auto config = algo->parse(ls.spec.algorithm());
    if (algo->check_block)
      facts.check_block = [algo, &ls](spec_checker& c) {
        algo->check_block(c, ls.spec.algorithm());
      };
    facts.uses_topology = algo->uses_topology;
    facts.lossless_links = algo->links.acknowledged;
    facts.coded_links = algo->links.coding != nullptr;
    if (algo->whole_restart_refusal)
      facts.whole_restart_refusal = [algo, config](std::uint32_t k) {
        return algo->whole_restart_refusal(*config, k);
      };
    if (algo->whole_restart_unsaved)
      facts.whole_restart_unsaved = algo->whole_restart_unsaved;
    if (!algo->joins) {
      std::string takers;
      for (const auto& d : algorithm_registry())
        if (d.joins)
          takers += std::string{takers.empty() ? "" : ", "} + d.name;
      facts.joins_refused = std::string{algo->name} +
                            " takes no nodes joining a running job yet (these do: " + takers + ")";
    }
  }
  validate(ls, facts);
}

const algorithm_descriptor& run_plan::algorithm() const {
  if (descriptor == nullptr)
    throw std::logic_error("run_plan::algorithm: the plan was not prepared (prepare_run)");
  return *descriptor;
}

namespace {

topology build_topology(const loaded_spec& ls, std::size_t n) {
  const auto& t = ls.spec.topology();
  const std::uint64_t seed = derive_seed(ls.spec.seed(), 0x544f504fULL);
  try {
    digraph g;
    switch (t.builder()) {
      case proto::TopologySpec::RING:
        g = make_ring(n);
        break;
      case proto::TopologySpec::DIRECTED_RING:
        g = make_directed_ring(n);
        break;
      case proto::TopologySpec::EXPONENTIAL:
        g = make_exponential(n);
        break;
      case proto::TopologySpec::DIRECTED_EXPONENTIAL:
        g = make_directed_exponential(n);
        break;
      case proto::TopologySpec::BIPARTITE_EXPONENTIAL:
        g = make_bipartite_exponential(n);
        break;
      case proto::TopologySpec::STAR:
        g = make_star(n, t.root());
        break;
      case proto::TopologySpec::TORUS:
        g = make_torus(t.rows(), t.cols());
        break;
      case proto::TopologySpec::COMPLETE:
        g = make_complete(n);
        break;
      case proto::TopologySpec::RANDOM_REGULAR:
        g = make_random_regular(n, t.degree(), seed);
        break;
      case proto::TopologySpec::TREE_PAIR: {
        auto tree = make_tree(n, t.arity() == 0 ? 2 : t.arity(), t.root());
        auto up = tree.reversed();
        return make_topology(std::move(tree), std::move(up), true);
      }
      case proto::TopologySpec::EXPLICIT: {
        auto edges = [](const auto& list) {
          std::vector<edge> out;
          for (const auto& e : list)
            out.push_back({e.from(), e.to()});
          return out;
        };
        return make_topology(make_from_edges(n, edges(t.r_edges())),
                             make_from_edges(n, edges(t.c_edges())), false);
      }
      default:
        refuse(ls, "topology.builder", "no builder chosen");
    }
    auto copy = g;
    return make_topology(std::move(g), std::move(copy), false);
  } catch (const topology_error& e) {
    refuse(ls, "topology", e.what());
  }
}

/// prepare_run and prepare_host_run: `local` null on the driver.
std::shared_ptr<const run_plan> prepare(const loaded_spec& ls,
                                        const std::vector<std::uint32_t>* local) {
  check_spec(ls);
  if (!algorithm_implemented(ls.spec.algorithm().kind_case()))
    refuse(ls, "algorithm",
           "this engine does not implement '" + algorithm_name_of(ls.spec) + "' yet");
  auto plan = std::make_shared<run_plan>();
  plan->spec = ls.spec;
  static_cast<run_settings&>(*plan) = settings_of(ls.spec);
  plan->label = algorithm_name_of(ls.spec);
  plan->spec_file = ls.file;
  plan->base_dir = ls.base_dir;
  const auto& spec = ls.spec;
  const auto& algo = algorithm_of(spec);
  plan->descriptor = &algo;
  if (algo.parse == nullptr)  // registry_test checks every descriptor has one
    throw std::logic_error(std::string{"algorithm '"} + algo.name + "' has no parse hook");
  plan->algo_config = algo.parse(spec.algorithm());
  const bool single = algo.single_node;
  const std::size_t n = single ? 1 : spec.nodes();

  auto data = load_train(ls, n, local);
  plan->train = std::move(data.train);
  plan->shard = std::move(data.shard);
  plan->train_rows = data.rows;
  plan->row_offset = std::move(data.offset);
  if (local != nullptr) {  // the driver evaluates: a host needs only the shape
    auto shape = std::make_shared<dataset>();
    shape->dim = plan->train->dim;
    shape->classes = plan->train->classes;
    plan->test = std::move(shape);
  } else {
    plan->test =
      spec.dataset().test_path().empty() ? plan->train : load(ls, true, plan->train->dim);
  }
  if (plan->test->dim != plan->train->dim)
    refuse(ls, "dataset.test_path",
           "test features have dimension " + std::to_string(plan->test->dim) +
             " but training features " + std::to_string(plan->train->dim));
  check_model_size(ls, plan->train->dim, plan->train->classes);  // bounds: RELIABILITY.md
  if (single && spec.nodes() != 1)
    plan->warnings.push_back(std::string{algo.name} + " runs on one node; nodes = " +
                             std::to_string(spec.nodes()) + " ignored");

  if (algo.uses_topology) {  // the others talk over node ids
    plan->topo = build_topology(ls, n);
    for (const auto& w : plan->topo->warnings)
      plan->warnings.push_back("topology: " + w);
  }
  if (algo.check_topology)
    algo.check_topology(ls, *plan->topo);

  const auto& cost = spec.cost();
  plan->tau.assign(n, cost.tau_seconds());
  for (std::size_t i = 0; i < n && i < static_cast<std::size_t>(cost.tau_per_node_size()); ++i)
    plan->tau[i] = cost.tau_per_node(static_cast<int>(i));
  plan->faults = fault_schedule{spec.faults()};
  plan->slowdown.assign(n, 1.0);
  for (const auto& s : cost.slowdown())
    if (s.node() < n)
      plan->slowdown[s.node()] = s.factor();

  auto built = model_of(ls, *plan->train);
  plan->prototype = std::move(built.prototype);
  plan->zeta2_rows = built.zeta2_rows;
  plan->x0.resize(plan->prototype->num_params());
  plan->prototype->init_params(plan->x0.data(), derive_seed(spec.seed(), 0x494e4954ULL));

  const std::size_t want = spec.eval().train_loss_samples();
  if (local != nullptr)  // train_loss is the driver's
    return plan;
  plan->train_eval_rows.resize(plan->train->size());
  std::iota(plan->train_eval_rows.begin(), plan->train_eval_rows.end(), 0U);
  if (want > 0 && want < plan->train->size()) {
    rng gen{derive_seed(spec.seed(), 0x4556414cULL)};
    gen.shuffle(plan->train_eval_rows.begin(), plan->train_eval_rows.end());
    plan->train_eval_rows.resize(want);
    std::sort(plan->train_eval_rows.begin(), plan->train_eval_rows.end());
  }
  return plan;
}

}  // namespace

std::shared_ptr<const run_plan> prepare_run(const loaded_spec& ls) {
  return prepare(ls, nullptr);
}

std::shared_ptr<const run_plan> prepare_host_run(const loaded_spec& ls,
                                                 const std::vector<std::uint32_t>& local) {
  return prepare(ls, &local);
}

namespace {

/// Where node k's rows start in a host's train; throws when they are not there.
std::uint32_t base_of(const run_plan& p, std::uint32_t k) {
  if (p.row_offset.at(k) == run_plan::not_local)
    throw std::out_of_range("run_plan: node " + std::to_string(k) +
                            "'s training rows are not on this host");
  return static_cast<std::uint32_t>(p.row_offset[k]);
}

}  // namespace

std::vector<std::uint32_t> run_plan::sampler_rows(std::uint32_t k) const {
  if (row_offset.empty())
    return shard.at(k);
  std::vector<std::uint32_t> rows(shard.at(k).size());
  std::iota(rows.begin(), rows.end(), base_of(*this, k));
  return rows;
}

std::vector<std::uint32_t> run_plan::whole_rows(std::uint32_t k,
                                                std::vector<std::uint32_t> rows) const {
  if (row_offset.empty())
    return rows;
  const auto base = base_of(*this, k);
  for (auto& r : rows)
    r = shard.at(k).at(r - base);
  return rows;
}

std::vector<std::uint32_t> run_plan::train_rows_of(std::uint32_t k,
                                                   std::vector<std::uint32_t> rows) const {
  if (row_offset.empty())
    return rows;
  const auto base = base_of(*this, k);
  const auto& s = shard.at(k);  // sorted ascending (every split sorts its shards)
  for (auto& r : rows) {
    const auto it = std::lower_bound(s.begin(), s.end(), r);
    if (it == s.end() || *it != r)
      throw std::out_of_range("run_plan: row " + std::to_string(r) + " is not in node " +
                              std::to_string(k) + "'s shard");
    r = base + static_cast<std::uint32_t>(it - s.begin());
  }
  return rows;
}

}  // namespace atrain
