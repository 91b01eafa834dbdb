// check_spec: the validator given each algorithm's facts from its descriptor
// (its own spec block's checks, hubs a whole-node restart would lose,
// acknowledged links, whether the topology block matters, R-FAST's unsaved
// epochs).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "../messages/spec_fixture.hpp"
#include "atrain/actors/run_plan.hpp"
#include "source_dir.hpp"

namespace {

/// check_spec's message for the quickstart with `sets` ("" when accepted).
std::string refusal(const std::vector<std::string>& sets) {
  try {
    atrain::check_spec(
      atrain::load_spec(atrain::test::source_dir() + "/config/quickstart.textproto", sets));
  } catch (const atrain::spec_error& e) {
    return e.what();
  }
  return {};
}

bool says(const std::string& msg, const std::string& what) {
  return msg.find(what) != std::string::npos;
}

namespace sf = spec_fixture;

/// The messages tests' base spec as the engine checks it.
void engine_check(const atrain::loaded_spec& s) {
  atrain::check_spec(s);
}

/// Each algorithm's own block (algorithm_descriptor::check_block), on the
/// messages tests' base spec: path, line and reason as validate() reports them.
std::vector<sf::bad_case> block_cases() {
  using E = std::vector<std::pair<std::string, std::string>>;
  using O = std::vector<std::string>;
  using sf::at;
  using sf::rfast_block;
  return {
    {"rfast variant unset", E{{"    variant: PHI\n", ""}}, O{}, at::line, "rfast {",
     "algorithm.rfast.variant", "step-size scaling must be explicit"},
    {"negative step size", E{{"step_size: 0.05", "step_size: -0.05"}}, O{}, at::line,
     "step_size: -0.05", "algorithm.rfast.step_size", "must be > 0 (got -0.05)"},
    {"zero step size", E{{"step_size: 0.05", "step_size: 0"}}, O{}, at::line, "step_size: 0",
     "algorithm.rfast.step_size", "must be > 0"},
    {"phi_min above 1", E{{"phi_min: 0.05", "phi_min: 1.5"}}, O{}, at::line, "phi_min: 1.5",
     "algorithm.rfast.phi_min", "must be in (0, 1]"},
    {"phi_min zero", E{{"phi_min: 0.05", "phi_min: 0"}}, O{}, at::line, "phi_min: 0",
     "algorithm.rfast.phi_min", "must be in (0, 1]"},
    {"negative decay", E{{"decay: 0.001", "decay: -1"}}, O{}, at::line, "decay: -1",
     "algorithm.rfast.decay", "must be >= 0"},
    {"centralized zero step", E{{rfast_block, "centralized {\n    step_size: 0\n  }"}}, O{},
     at::line, "step_size: 0", "algorithm.centralized.step_size", "must be > 0"},
    {"loscar sparsity zero", E{}, O{"algorithm.loscar={step_size: 0.3 round_seconds: 0.01}"},
     at::set, "", "algorithm.loscar.sparsity", "must be in (0, 1]"},
    {"loscar without round length", E{}, O{"algorithm.loscar={step_size: 0.3 sparsity: 0.1}"},
     at::set, "", "algorithm.loscar.round_seconds", "must be > 0"},
    {"async_ps server out of range", E{}, O{"algorithm.async_ps={step_size: 1 server: 99}"},
     at::set, "", "algorithm.async_ps.server", "does not exist"},
    {"override negative step size", E{}, O{"algorithm.rfast.step_size=-1"}, at::set, "",
     "algorithm.rfast.step_size", "must be > 0 (got -1)"},
    {"loscar round below the floor", E{},
     O{"algorithm.loscar={step_size: 0.3 round_seconds: 1e-9 sparsity: 0.1}"}, at::set, "",
     "algorithm.loscar.round_seconds", "must be >= 1e-06 s"},
    {"override selects centralized without step", E{}, O{"algorithm.centralized.decay=0"}, at::line,
     "algorithm {", "algorithm.centralized.step_size", "must be > 0"},
  };
}

}  // namespace

BOOST_AUTO_TEST_SUITE(check_spec)

BOOST_AUTO_TEST_CASE(each_block_is_refused_with_path_line_and_reason) {
  for (const auto& c : block_cases())
    sf::expect_refused(c, engine_check);
}

BOOST_AUTO_TEST_CASE(every_problem_is_reported) {
  const std::string text = sf::edit(sf::base_spec, {{"nodes: 4", "nodes: 0"},
                                                    {"step_size: 0.05", "step_size: -1"},
                                                    {"loss: 0.01", "loss: 1.5"},
                                                    {"period_seconds: 0.5", "period_seconds: -2"}});
  const std::string msg = sf::refusal(engine_check, text);
  const auto lines = sf::split_lines(msg);
  BOOST_TEST(lines.size() == 4u, msg);
  BOOST_TEST(msg.find("spec.textproto:5: nodes: ") != std::string::npos, msg);
  BOOST_TEST(msg.find("algorithm.rfast.step_size: must be > 0") != std::string::npos, msg);
  BOOST_TEST(msg.find("link.loss: must be in [0, 1]") != std::string::npos, msg);
  BOOST_TEST(msg.find("eval.period_seconds: must be > 0") != std::string::npos, msg);
}

// messages/ knows no algorithm: validate() alone checks that one is chosen, not
// its block; check_spec adds the block's checks from the descriptor, in their
// place among the others (after the model, before the topology).
BOOST_AUTO_TEST_CASE(the_block_is_checked_by_the_engine_only) {
  const std::string text = sf::edit(sf::base_spec, {{"step_size: 0.05", "step_size: -1"},
                                                    {"phi_min: 0.05", "phi_min: 2"},
                                                    {"batch_size: 8", "batch_size: 0"},
                                                    {"tau_seconds: 0.01", "tau_seconds: 0"}});
  const std::string alone =
    sf::refusal([](const atrain::loaded_spec& s) { atrain::validate(s); }, text);
  const std::string engine = sf::refusal(engine_check, text);
  const std::string l = sf::label + ":";
  auto at = [&](const char* snippet) {
    return l + std::to_string(sf::line_of(text, snippet)) + ": ";
  };
  const std::string batch = at("batch_size: 0") + "model.batch_size: must be >= 1 (got 0)";
  const std::string tau =
    at("tau_seconds: 0") +
    "cost.tau_seconds: must be > 0 (got 0), or give tau_per_node with one entry per node";
  BOOST_TEST(alone == batch + "\n" + tau);
  BOOST_TEST(engine == batch + "\n" + at("step_size: -1") +
                         "algorithm.rfast.step_size: must be > 0 (got -1)\n" + at("phi_min: 2") +
                         "algorithm.rfast.phi_min: must be in (0, 1] (got 2)\n" + tau);
  // No algorithm: both say so, the same way.
  const std::string none = sf::edit(sf::base_spec, {{sf::rfast_block, ""}});
  const std::string choose = l + std::to_string(sf::line_of(none, "algorithm {")) +
                             ": algorithm: choose an algorithm: rfast, centralized, ";
  BOOST_TEST(sf::refusal(engine_check, none).rfind(choose, 0) == 0u);
  BOOST_TEST(sf::refusal(engine_check, none) ==
             sf::refusal([](const atrain::loaded_spec& s) { atrain::validate(s); }, none));
}

BOOST_AUTO_TEST_CASE(hubs_cannot_restart_whole) {
  const std::string whole = "faults.crash=[{node: 2 whole_node: true restart_after_seconds: 1}]";
  auto msg = refusal({"algorithm.async_ps={step_size: 1 server: 2}", whole});
  BOOST_TEST(says(msg, "faults.crash[0].restart_after_seconds: a whole node cannot be restarted: "
                       "node 2 holds the parameter server"),
             msg);
  msg = refusal({"algorithm.loscar={step_size: 0.3 round_seconds: 0.01 sparsity: 0.1 "
                 "aggregator: 2}",
                 whole});
  BOOST_TEST(says(msg, "node 2 holds the LOSCAR aggregator"), msg);
  // Another node of the same runs restarts whole.
  msg = refusal({"algorithm.async_ps={step_size: 1 server: 3}", whole});
  BOOST_TEST(msg.empty(), msg);
  msg = refusal({whole});  // R-FAST respawns worker and buffer
  BOOST_TEST(msg.empty(), msg);
}

BOOST_AUTO_TEST_CASE(only_fire_and_forget_links_may_lose_everything) {
  auto msg = refusal({"algorithm.dasgd={step_size: 0.1}", "link.loss=1"});
  BOOST_TEST(says(msg, "link.loss: must be < 1 for acknowledged links"), msg);
  msg = refusal({"link.loss=1"});  // R-FAST's links are fire-and-forget
  BOOST_TEST(!says(msg, "link.loss"), msg);
}

BOOST_AUTO_TEST_CASE(rfast_whole_restart_is_not_checkpointed) {
  const auto msg = refusal({"checkpoint={at_seconds: [1] file: \"c.ckpt\"}",
                            "faults.crash=[{node: 1 whole_node: true restart_after_seconds: 1}]"});
  BOOST_TEST(says(msg, "faults.crash[0].whole_node: R-FAST's whole-node restart starts new "
                       "tracking epochs"),
             msg);
}

BOOST_AUTO_TEST_CASE(the_topology_block_counts_where_one_is_used) {
  const std::vector<std::string> bad_tree = {"topology={builder: TREE_PAIR arity: 0}"};
  auto msg = refusal(bad_tree);  // R-FAST
  BOOST_TEST(says(msg, "topology.arity"), msg);
  auto sets = bad_tree;
  sets.push_back("algorithm.allreduce={step_size: 0.5}");  // talks over node ids
  msg = refusal(sets);
  BOOST_TEST(msg.empty(), msg);
}

BOOST_AUTO_TEST_CASE(joins_are_refused_where_they_cannot_happen) {
  const std::string join = "faults.join=[{node: 3 at_seconds: 0.5}]";
  BOOST_TEST(refusal({join}).empty(), refusal({join}));  // R-FAST takes joins
  // An algorithm without joins names the ones that take them.
  auto msg = refusal({"algorithm.centralized={step_size: 0.5}", join});
  BOOST_TEST(says(msg, "faults.join[0]: centralized takes no nodes joining a running job yet "
                       "(these do: rfast, allreduce, "),
             msg);
  msg = refusal({"algorithm.allreduce={step_size: 0.5}", join});
  BOOST_TEST(msg.empty(), msg);  // the ring runs over the nodes present
  msg = refusal({"faults.join=[{node: 3 at_seconds: 0.5}, {node: 3 at_seconds: 1}]"});
  BOOST_TEST(says(msg, "faults.join[1].node: node 3 joins twice"), msg);
  msg = refusal({join, "faults.crash=[{node: 3 at_seconds: 0.2}]"});
  BOOST_TEST(says(msg, "faults.crash[0].at_seconds: node 3 is absent until its join at 0.5 s"),
             msg);
  msg = refusal({join, "faults.crash=[{node: 3 at_seconds: 0.7 restart_after_seconds: 0.1}]"});
  BOOST_TEST(msg.empty(), msg);  // a crash after the join
  msg = refusal({"nodes=2", "faults.join=[{node: 0 at_seconds: 1}, {node: 1 at_seconds: 1}]"});
  BOOST_TEST(says(msg, "faults.join: every node joins later"), msg);
  msg = refusal({join, "checkpoint={at_seconds: [1] file: \"c.ckpt\"}"});
  BOOST_TEST(says(msg, "faults.join: joins cannot be combined with checkpoints yet"), msg);
  msg = refusal({"faults.join=[{node: 9 at_seconds: 0.5}]"});
  BOOST_TEST(says(msg, "faults.join[0].node"), msg);
  msg = refusal({"faults.join=[{node: 3 at_seconds: -1}]"});
  BOOST_TEST(says(msg, "faults.join[0].at_seconds"), msg);
}

BOOST_AUTO_TEST_SUITE_END()
