// check_spec: the validator given each algorithm's facts from its descriptor
// (hubs a whole-node restart would lose, acknowledged links, whether the
// topology block matters, R-FAST's unsaved epochs).
#include <boost/test/unit_test.hpp>

#include <string>
#include <vector>

#include "atrain/actors/run_plan.hpp"

namespace {

/// check_spec's message for the quickstart with `sets` ("" when accepted).
std::string refusal(const std::vector<std::string>& sets) {
  try {
    atrain::check_spec(
      atrain::load_spec(std::string{ATRAIN_SOURCE_DIR} + "/config/quickstart.textproto", sets));
  } catch (const atrain::spec_error& e) {
    return e.what();
  }
  return {};
}

bool says(const std::string& msg, const std::string& what) {
  return msg.find(what) != std::string::npos;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(check_spec)

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

BOOST_AUTO_TEST_SUITE_END()
