/// prepare_run: from a validated spec to everything the actors need.
#include "atrain/actors/run_plan.hpp"

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/algorithms.hpp"

#include "model_of.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace atrain {

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

[[noreturn]] void refuse(const loaded_spec& ls, const std::string& field, const std::string& why) {
  throw spec_error(ls.where(field) + ": " + why);
}

void check_sha256(const loaded_spec& ls, const std::string& field, const std::string& path,
                  const std::string& expected) {
  if (expected.empty())
    return;
  std::string got;
  try {
    got = sha256_hex(read_maybe_gzip(path));
  } catch (const dataset_error& e) {
    refuse(ls, field, e.what());
  }
  if (got != expected)
    refuse(ls, field,
           path + ": sha256 of the decompressed contents is " + got + ", expected " + expected);
}

std::shared_ptr<const dataset> load(const loaded_spec& ls, bool test, std::size_t dim) {
  const auto& d = ls.spec.dataset();
  const std::string field = test ? "dataset.test_path" : "dataset.train_path";
  const auto path = resolve_path(ls, test ? d.test_path() : d.train_path());
  const auto labels = resolve_path(ls, test ? d.test_labels_path() : d.train_labels_path());
  const std::size_t max_rows = test ? d.max_test_samples() : d.max_train_samples();
  check_sha256(ls, test ? "dataset.test_sha256" : "dataset.train_sha256", path,
               test ? d.test_sha256() : d.train_sha256());
  try {
    switch (d.format()) {
      case proto::DatasetSpec::LIBSVM:
        return std::make_shared<const dataset>(load_libsvm(path, dim, max_rows));
      case proto::DatasetSpec::IDX:
        return std::make_shared<const dataset>(load_idx(path, labels, max_rows));
      case proto::DatasetSpec::CIFAR10:
        return std::make_shared<const dataset>(load_cifar10({path}, max_rows));
      default:
        refuse(ls, "dataset.format", "unsupported format");
    }
  } catch (const dataset_error& e) {
    refuse(ls, field, e.what());
  }
}

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

/// The spec's split of the training rows over n nodes; what the data makes impossible
/// (more classes per node than it has, a bound) is refused naming the field.
shards make_shards(const loaded_spec& ls, const dataset& train, std::size_t n) {
  const auto& sh = ls.spec.shard();
  const std::uint64_t seed = derive_seed(ls.spec.seed(), 0x53484152ULL);
  using P = proto::ShardSpec;
  const char* field = "shard.policy";
  try {
    switch (sh.policy()) {
      case P::LABEL_SKEW:
        field = "shard.dirichlet_alpha";
        return shard_label_skew(train.labels, train.classes, n, sh.dirichlet_alpha(), seed);
      case P::LABEL_SKEW_UNEQUAL:
        field = "shard.dirichlet_alpha";
        return shard_label_skew_unequal(train.labels, train.classes, n, sh.dirichlet_alpha(), seed);
      case P::PATHOLOGICAL:
        field = "shard.classes_per_node";
        if (sh.classes_per_node() > train.classes)
          refuse(ls, field,
                 "must be <= the dataset's " + std::to_string(train.classes) + " classes (got " +
                   std::to_string(sh.classes_per_node()) + ")");
        return shard_pathological(train.labels, train.classes, n, sh.classes_per_node(), seed);
      case P::FEATURE_SKEW: {
        field = "shard.clusters";
        const std::size_t k = sh.clusters() == 0 ? n : sh.clusters();
        if (k > train.size())
          refuse(ls, field,
                 std::to_string(k) + " clusters but only " + std::to_string(train.size()) +
                   " training rows");
        return shard_feature_skew(train, n, k, seed);
      }
      default:
        return shard_iid(train.size(), n, seed);
    }
  } catch (const std::invalid_argument& e) {
    refuse(ls, field, e.what());
  }
}

}  // namespace

std::shared_ptr<const run_plan> prepare_run(const loaded_spec& ls) {
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
  plan->train = load(ls, false, spec.dataset().dimension());
  plan->test = spec.dataset().test_path().empty() ? plan->train : load(ls, true, plan->train->dim);
  if (plan->test->dim != plan->train->dim)
    refuse(ls, "dataset.test_path",
           "test features have dimension " + std::to_string(plan->test->dim) +
             " but training features " + std::to_string(plan->train->dim));
  if (plan->train->size() == 0)
    refuse(ls, "dataset.train_path", "the training set is empty");
  check_model_size(ls, plan->train->dim, plan->train->classes);  // bounds: RELIABILITY.md

  const auto& algo = algorithm_of(spec);
  plan->descriptor = &algo;
  if (algo.parse == nullptr)  // registry_test checks every descriptor has one
    throw std::logic_error(std::string{"algorithm '"} + algo.name + "' has no parse hook");
  plan->algo_config = algo.parse(spec.algorithm());
  const bool single = algo.single_node;
  const std::size_t n = single ? 1 : spec.nodes();
  if (single && spec.nodes() != 1)
    plan->warnings.push_back(std::string{algo.name} + " runs on one node; nodes = " +
                             std::to_string(spec.nodes()) + " ignored");
  if (n > plan->train->size())
    refuse(ls, "nodes",
           "more nodes (" + std::to_string(n) + ") than training samples (" +
             std::to_string(plan->train->size()) + ")");
  plan->shard = make_shards(ls, *plan->train, n);

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

}  // namespace atrain
