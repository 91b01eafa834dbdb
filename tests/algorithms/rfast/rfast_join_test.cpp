/// R-FAST joins (docs/RELIABILITY.md "Joining nodes"): nodes absent from the
/// start; the run begins with a tracking epoch over the nodes present, and
/// each join starts a new one with the joiner in both graphs (the spec's
/// pair once every node is in). The mass invariant is checked after every
/// event of every epoch; a joiner computes nothing before its join.
#include <boost/test/unit_test.hpp>

#include <array>
#include <string>

#include "atrain/engine.hpp"
#include "fixtures.hpp"
#include "mass_watch.hpp"

namespace t = atrain::test;

namespace {

using overrides = std::vector<std::string>;

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// config/beyond/elastic_join.textproto (nodes 8..11 join at 0.25, 0.5,
/// 0.75 and 1 s) to 2 s, plus `extra`.
std::shared_ptr<const atrain::run_plan> elastic(overrides extra = {}) {
  extra.insert(extra.end(), {"progress=false", "stop.stop_at_target=false", "stop.time_seconds=2"});
  return t::config("beyond/elastic_join.textproto", extra);
}

constexpr std::array<double, 4> join_at{0.25, 0.5, 0.75, 1.0};

}  // namespace

BOOST_AUTO_TEST_SUITE(rfast_join)

BOOST_AUTO_TEST_CASE(eight_nodes_grow_to_twelve_keeping_the_mass_and_reach_the_target) {
  mass_watch w;
  std::array<std::uint64_t, 4> pushed_before{};  // a joiner's pushes seen before its join
  const auto r = run_watching_mass(elastic(), {{1, 8}, {2, 9}, {3, 10}, {4, 11}, {5, 12}}, w,
                                   [&](atrain::run_probe& p, double now) {
                                     for (std::uint32_t j = 0; j < 4; ++j) {
                                       const auto* tr = p.states<atrain::rfast_tracker>().at(8 + j);
                                       if (tr != nullptr && now < join_at[j])
                                         pushed_before[j] =
                                           std::max(pushed_before[j], tr->pushes());
                                     }
                                   });
  BOOST_REQUIRE(r.faults_size() == 4);
  for (int j = 0; j < 4; ++j) {
    const auto& f = r.faults(j);
    BOOST_TEST(f.kind() == "join");
    BOOST_TEST(
      contains(f.effect(), "the run starts with tracking epoch 1 over the 8 nodes present"),
      f.effect());
    BOOST_TEST(contains(f.effect(), "joined at " + std::to_string(join_at[j]) + " s with node "),
               f.effect());
    BOOST_TEST(contains(f.effect(), "new tracking epoch " + std::to_string(j + 2) + " with node " +
                                      std::to_string(8 + j) + " in"),
               f.effect());
    BOOST_TEST(pushed_before[static_cast<std::size_t>(j)] == 0u);
  }
  BOOST_TEST(contains(r.faults(3).effect(), "over all 12 nodes (the spec's pair), root 0"),
             r.faults(3).effect());
  for (std::uint32_t e = 1; e <= 5; ++e)
    BOOST_TEST(w.checks[e] > 100u, "epoch " << e << ": " << w.checks[e] << " mass checks");
  BOOST_TEST(w.members_last == 12u);
  BOOST_TEST(w.worst < 1e-12);
  BOOST_TEST(w.worst_phi < 1e-12);
  BOOST_TEST(r.mass_residual() < 1e-12);
  BOOST_TEST(r.has_time_to_target());
  // The later a node joins, the fewer gradients it computes; every joiner computes.
  for (int k = 8; k < 11; ++k)
    BOOST_TEST(r.per_node(k).gradients() > r.per_node(k + 1).gradients());
  BOOST_TEST(r.per_node(11).gradients() > 0u);
  BOOST_TEST(r.per_node(0).gradients() > r.per_node(8).gradients());
  BOOST_TEST_MESSAGE("elastic 8 -> 12: target at " << r.time_to_target() << " s; mass checks "
                                                   << w.checks[1] << "/" << w.checks[5]
                                                   << " (epochs 1/5), worst " << w.worst);
}

BOOST_AUTO_TEST_CASE(a_tree_pairs_root_joining_late_starts_re_rooted_and_becomes_the_root) {
  mass_watch w;
  const auto r = run_watching_mass(
    t::config("faults/root_lost.textproto",
              {"progress=false", "faults.crash=[]", "faults.join=[{node: 0 at_seconds: 0.5}]",
               "stop.stop_at_target=false", "stop.time_seconds=2", "eval.period_seconds=0.05"}),
    {{1, 7}, {2, 8}}, w);
  BOOST_REQUIRE(r.faults_size() == 1);
  const auto& e = r.faults(0).effect();
  BOOST_TEST(contains(e, "the run starts with tracking epoch 1 over the 7 nodes present: tree "
                         "pair of arity 2, root 1"),
             e);
  BOOST_TEST(contains(e, "new tracking epoch 2 with node 0 in: tree pair of arity 2 over all 8 "
                         "nodes (the spec's pair), root 0"),
             e);
  BOOST_TEST(w.checks[1] > 100u);
  BOOST_TEST(w.checks[2] > 100u);
  BOOST_TEST(w.worst < 1e-12);
  BOOST_TEST(r.has_time_to_target());
  BOOST_TEST(contains(r.evaluated_model(), "common root (node 0)"), r.evaluated_model());
}

BOOST_AUTO_TEST_CASE(a_run_with_joins_replays_exactly) {
  auto a = atrain::run_experiment(elastic({"stop.time_seconds=1.2"}));
  auto b = atrain::run_experiment(elastic({"stop.time_seconds=1.2"}));
  BOOST_REQUIRE(a);
  BOOST_REQUIRE(b);
  BOOST_TEST(a->trace_hash() == b->trace_hash());
  BOOST_TEST(a->final().test_accuracy() == b->final().test_accuracy());
}

BOOST_AUTO_TEST_CASE(a_node_joins_when_asked_and_one_never_asked_stays_out) {
  // at_seconds 0: the node joins when the run is asked (run_control::join).
  auto control = std::make_shared<atrain::run_control>();
  atrain::run_options opts;
  opts.control = control;
  atrain::virtual_run vr{elastic({"faults.join=[{node: 10}, {node: 11}]", "stop.time_seconds=1"}),
                         opts};
  bool asked = false;
  while (vr.step())
    if (!asked && vr.now_seconds() >= 0.4) {
      control->join(10);
      control->join(3);   // present from the start: refused (events.jsonl says why)
      control->join(10);  // joined already: refused
      asked = true;
    }
  const auto r = vr.run();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().empty(), r->error());
  BOOST_REQUIRE(r->faults_size() == 2);
  BOOST_TEST(contains(r->faults(0).effect(), "joined at 0.4"), r->faults(0).effect());
  BOOST_TEST(r->per_node(10).gradients() > 0u);
  BOOST_TEST(!contains(r->faults(1).effect(), "joined"), r->faults(1).effect());
  BOOST_TEST(r->per_node(11).gradients() == 0u);
  BOOST_TEST(r->has_time_to_target());
}

BOOST_AUTO_TEST_CASE(joins_on_a_pair_that_cannot_be_rebuilt_are_refused) {
  try {
    (void)elastic({"topology.builder=TORUS", "topology.rows=3", "topology.cols=4"});
    BOOST_FAIL("a torus with joins was accepted");
  } catch (const atrain::spec_error& e) {
    BOOST_TEST(contains(e.what(), "faults.join"), e.what());
    BOOST_TEST(contains(e.what(), "torus cannot be"), e.what());
  }
}

BOOST_AUTO_TEST_SUITE_END()
