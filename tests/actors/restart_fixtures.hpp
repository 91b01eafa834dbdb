#pragma once
/// Shared by the restart tests (tests/actors/restart_test.cpp and each
/// algorithm's <name>_restart_test.cpp): a driven virtual run over
/// duplicating, reordering links, and the checks every restart test makes.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "fixtures.hpp"
#include "gossip_fixtures.hpp"

namespace atrain::test::restart {

namespace t = atrain::test;
namespace g = atrain::test::gossip;

/// A virtual run of config/algorithms/FILE with `overrides` over links that
/// duplicate and reorder, driven one scheduler event at a time; `each` sees
/// the probe after every event.
template <class Each>
inline atrain::proto::RunReport drive(const std::string& file,
                                      const std::vector<std::string>& overrides, Each each) {
  auto plan = t::config("algorithms/" + file,
                        g::with({"progress=false", "link.duplicate=0.2", "link.reorder=0.3",
                                 "link.reorder_delay_seconds=0.005"},
                                overrides));
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run run{plan, opts};
  while (run.step())
    each(*plan, *probe);
  auto r = run.run();
  BOOST_REQUIRE(r);
  BOOST_TEST(r->error().empty(), r->error());
  return *r;
}

inline void expect_target(const atrain::proto::RunReport& r) {
  BOOST_TEST(r.stop_reason() == "target accuracy reached");
  BOOST_TEST(r.has_time_to_target());
}

/// Calls fn(i, entry) for every ledger entry take(worker i) hands over.
template <class Take, class Fn>
inline void harvest(const atrain::run_probe& probe, Take take, Fn fn) {
  for (std::uint32_t i = 0; i < probe.workers.size(); ++i)
    for (auto& e : take(probe.workers[i]))
      fn(i, e);
}

/// The report's record of crash `i`: restarted, with `source` named.
inline void expect_restarted(const atrain::proto::RunReport& r, int i, const std::string& source) {
  BOOST_REQUIRE(r.faults_size() > i);
  const auto& e = r.faults(i).effect();
  BOOST_TEST(r.faults(i).kind() == "crash");
  BOOST_TEST(e.find("restarted at") != std::string::npos, e);
  BOOST_TEST(e.find(source) != std::string::npos, e);
}

/// "node j's model" for some neighbour j of node k in g_r.
inline bool names_a_neighbour(const atrain::run_plan& plan, std::uint32_t k,
                              const std::string& effect) {
  for (auto j : plan.topo->g_r.out(k))
    if (effect.find("node " + std::to_string(j) + "'s model") != std::string::npos)
      return true;
  return false;
}

/// Ring restarts: per completed ring step (all-reduce step or Local SGD
/// average), what each node used: its contribution and the result.
struct ring_use {
  std::vector<float> contributed;
  std::vector<float> result;  // the model after the step (allreduce) or the average
  std::vector<float> sum;     // allreduce: the ring's sum
};

/// Every node that completed step k holds the same result, and where all n
/// nodes completed it, the result is what their contributions give (`check`
/// returns the worst relative deviation). Returns (steps checked in full,
/// worst deviation).
template <class Check>
inline std::pair<std::size_t, double>
check_ring(const std::map<std::uint64_t, std::map<std::uint32_t, ring_use>>& steps, std::size_t n,
           Check check) {
  std::size_t full = 0;
  double worst = 0;
  for (const auto& [k, by_node] : steps) {
    const auto& first = by_node.begin()->second;
    for (const auto& [i, u] : by_node)
      BOOST_TEST((u.result == first.result), "step " << k << ": node " << i << " differs");
    if (by_node.size() != n)
      continue;
    ++full;
    worst = std::max(worst, check(by_node));
  }
  return {full, worst};
}

}  // namespace atrain::test::restart
