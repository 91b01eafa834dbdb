#pragma once
/// Shared by the restart tests (tests/actors/restart_test.cpp and each
/// algorithm's <name>_restart_test.cpp): a driven virtual run over
/// duplicating, reordering links, and the checks every restart test makes.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
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

/// The worst relative deviation of a ring step's result from the mean of
/// its nodes' contributions (Local SGD's average, DiLoCo's).
inline double mean_deviation(const std::map<std::uint32_t, ring_use>& by_node) {
  const auto& avg = by_node.begin()->second.result;
  double w = 0;
  for (std::size_t j = 0; j < avg.size(); ++j) {
    double s = 0;
    for (const auto& [i, u] : by_node)
      s += u.contributed[j];
    s /= static_cast<double>(by_node.size());
    w = std::max(w, std::abs(s - avg[j]) / (1.0 + std::abs(s)));
  }
  return w;
}

/// The worst relative deviation of a Ring-AllReduce step's sum from its
/// nodes' contributions added up here in double (the ring adds in float,
/// in another order); every node must hold the same sum.
inline double sum_deviation(const std::map<std::uint32_t, ring_use>& by_node) {
  const auto& sum = by_node.begin()->second.sum;
  double w = 0;
  for (std::size_t j = 0; j < sum.size(); ++j) {
    double s = 0;
    for (const auto& [i, u] : by_node) {
      BOOST_TEST((u.sum == sum));
      s += u.contributed[j];
    }
    w = std::max(w, std::abs(s - sum[j]) / (1.0 + std::abs(s)));
  }
  return w;
}

/// Ring joins (faults.join): nodes 8-11 of a 12-node run join at 0.25,
/// 0.5, 0.75 and 1 s.
inline const std::string ring_joins =
  "faults.join=[{node: 8 at_seconds: 0.25}, {node: 9 at_seconds: 0.5}, "
  "{node: 10 at_seconds: 0.75}, {node: 11 at_seconds: 1.0}]";

/// What check_ring_joins found: ring steps checked (all but the last, which
/// the stop may cut) by how many nodes took part, and the worst deviation.
struct ring_growth {
  std::map<std::size_t, std::size_t> steps_by_size;
  double worst = 0;
};

/// Every node that took part in ring step k holds the same result, the
/// step's result is what exactly those nodes' contributions give (`check`
/// returns the worst relative deviation: a member left out, or a non-member
/// counted in, would show), and no step has fewer nodes than the one before.
template <class Check>
inline ring_growth
check_ring_joins(const std::map<std::uint64_t, std::map<std::uint32_t, ring_use>>& steps,
                 Check check) {
  ring_growth out;
  std::size_t before = 0, left = steps.size();
  for (const auto& [k, by_node] : steps) {
    if (--left == 0)
      break;  // the stop may cut the last step
    const auto& first = by_node.begin()->second;
    for (const auto& [i, u] : by_node)
      BOOST_TEST((u.result == first.result), "step " << k << ": node " << i << " differs");
    BOOST_TEST(by_node.size() >= before, "step " << k << ": " << by_node.size() << " nodes");
    before = by_node.size();
    ++out.steps_by_size[by_node.size()];
    out.worst = std::max(out.worst, check(by_node));
  }
  return out;
}

/// The report's four join records: each node joined the ring.
inline void expect_ring_joins(const atrain::proto::RunReport& r) {
  BOOST_REQUIRE(r.faults_size() == 4);
  for (int j = 0; j < 4; ++j) {
    const auto& e = r.faults(j).effect();
    BOOST_TEST(r.faults(j).kind() == "join");
    BOOST_TEST(e.find("joined at") != std::string::npos, e);
    BOOST_TEST(e.find("the ring now over " + std::to_string(9 + j) + " nodes") != std::string::npos,
               e);
  }
}

/// " 4 of 8 3 of 9 ...": steps by ring size, for the test's message.
inline std::string sizes_of(const ring_growth& g) {
  std::string out;
  for (const auto& [n, c] : g.steps_by_size)
    out += " " + std::to_string(c) + " of " + std::to_string(n);
  return out;
}

/// 8 nodes stepped before the first join, and every size from 8 to 12 ran.
inline void expect_ring_grew(const ring_growth& g, std::size_t before_first_join) {
  for (std::size_t n = 8; n <= 12; ++n)
    BOOST_TEST(g.steps_by_size.count(n) == 1u, n << " nodes: no step");
  BOOST_TEST(g.steps_by_size.begin()->first == 8u);
  BOOST_TEST(g.steps_by_size.rbegin()->first == 12u);
  if (g.steps_by_size.count(8) > 0)
    BOOST_TEST(g.steps_by_size.at(8) >= before_first_join);
}

}  // namespace atrain::test::restart
