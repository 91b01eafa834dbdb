/// SGP/OSGP's push-sum ledger check (sgp_test.cpp, sgp_restart_test.cpp):
/// replays a virtual run event by event and checks mass conservation.
#pragma once

#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "algorithms/sgp/sgp.hpp"
#include "fixtures.hpp"

namespace atrain::test::sgp_check {

/// The test's own rotation: m = ceil(log2 n), peer = (i + 2^(k mod m)) mod n.
inline std::uint32_t expected_peer(std::uint32_t i, std::uint64_t k, std::uint32_t n) {
  const auto m = static_cast<std::uint64_t>(std::ceil(std::log2(static_cast<double>(n))));
  return static_cast<std::uint32_t>((i + (std::uint64_t{1} << (k % m))) % n);
}

/// Reads the nodes' ledgers after every scheduler event and checks, in
/// double and independently of the actors' own sums:
///   sum_i w_i + sum_{in flight} w            == n
///   sum_i x_i + sum_{in flight} x            == n x^0 - sum_{steps} gamma_k g
/// where "in flight" = sent and not (yet) added by the receiver. Also: every
/// send goes to the rotating peer of its step, steps are sent in order, no
/// message is added that was not sent or added twice, gamma_k is the
/// schedule's, and OSGP is never more than tau steps ahead.
///
/// Restarts: no check while a worker is down. Once its replacement appears
/// (joined), the messages sent to the node up to the replacement's fences
/// are lost (taken out of the account; the replacement must never add
/// them), the replacement's (x, w) must be half of its donor's state just
/// before the donation (same ratio x / w, bit for bit), and from there on
/// the living nodes' mass plus the mass in flight to them must stay what it
/// was at the join: sum w == w_after, sum x + sum gamma g == x_after.
struct ledger_check {
  std::uint32_t n = 0;
  double gamma0 = 0, decay = 0;
  std::uint64_t tau = 0;         // steps allowed ahead of the oldest missing (SGP: 0)
  bool skip_first_send = false;  // test of the test: forget one message in flight
  std::vector<double> x0;
  std::vector<double> descended;  // sum of gamma_k g over all steps
  std::map<std::pair<std::uint32_t, std::uint64_t>, atrain::pushsum_sent> in_flight;
  std::vector<std::size_t> sent_seen, added_seen, descents_seen;
  std::vector<std::vector<bool>> added_steps;  // per receiver, by sender step
  std::vector<std::uint64_t> oldest_missing;
  double worst_w = 0, worst_x = 0;
  std::uint64_t checks = 0, sends = 0, adds = 0, max_lead = 0;
  bool failed = false;
  // Restarts.
  double w_total;                            // sum w + in flight that must hold (n until a loss)
  std::vector<double> x_total;               // sum x + in flight + sum gamma g that must hold
  std::vector<caf::actor_addr> incarnation;  // per node, as last observed
  std::vector<std::uint64_t> base;           // per node: the step its incarnation began at
  std::vector<double> last_w;                // per node: w at its last observation
  std::vector<std::vector<double>> last_x;   // ... and x (kept while someone is down)
  std::set<std::pair<std::uint32_t, std::uint64_t>> lost;  // (sender, step) lost at a join
  struct join_record {
    std::uint32_t node, donor;
    std::uint64_t step;
    double w_before, w_after, w_dead, w_lost_messages;
    std::size_t lost_messages;
    double ratio_error;      // max |x/w - donor's x/w before the donation|
    std::size_t sent_to_it;  // messages its in-neighbours sent it before the join
    std::uint64_t checks_at_join;
  };
  std::vector<join_record> joins;
  std::vector<std::size_t> donated_seen;                  // per node: donations accounted for
  std::vector<std::vector<std::uint64_t>> steps_sent_to;  // per receiver: sender steps
  std::uint64_t fenced_drops = 0;
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>> added_to;  // (to, from, step)
  bool someone_down = false;

  ledger_check(const atrain::run_plan& plan, std::uint64_t max_ahead)
    : n(static_cast<std::uint32_t>(plan.nodes())), tau(max_ahead),
      x0(plan.x0.begin(), plan.x0.end()), descended(plan.dim(), 0.0), sent_seen(n), added_seen(n),
      descents_seen(n), added_steps(n), oldest_missing(n), w_total(static_cast<double>(n)),
      x_total(plan.dim()), incarnation(n), base(n, 0), last_w(n, 0.0), last_x(n),
      donated_seen(n, 0), steps_sent_to(n) {
    for (std::size_t k = 0; k < x0.size(); ++k)
      x_total[k] = static_cast<double>(n) * x0[k];
    const auto& a = plan.spec.algorithm();
    const auto& ps = a.has_osgp() ? a.osgp() : a.sgp();
    gamma0 = ps.step_size();
    decay = ps.decay();
  }

  void fail(const std::string& what) {
    if (!failed)
      BOOST_ERROR(what);
    failed = true;
  }

  /// While a worker is down: the living nodes' (x, w) before this event
  /// (a donor's state just before it gives half away).
  void remember(const atrain::run_probe& probe) {
    for (std::uint32_t i = 0; i < n; ++i)
      if (const auto* node = probe.states<atrain::pushsum_node>()[i];
          node != nullptr && node->donated.size() == donated_seen[i]) {
        last_x[i] = node->x;
        last_w[i] = node->w;
      }
  }

  /// Node i's replacement appeared (joined at node.steps): the accounting
  /// of the join (see the struct's comment).
  void rejoin(std::uint32_t i, const atrain::pushsum_node& node, const atrain::run_probe& probe) {
    if (!node.joined || node.sent.size() != 0 || !node.added.empty())
      return fail("node " + std::to_string(i) + "'s replacement was first seen after it began");
    join_record j{};
    j.node = i;
    j.donor = node.donor;
    j.step = node.steps;
    j.w_before = w_total;
    j.w_dead = last_w[i];
    j.checks_at_join = checks;
    sent_seen[i] = added_seen[i] = descents_seen[i] = 0;
    base[i] = node.steps;
    const auto m = static_cast<std::uint64_t>(node.fence.size());
    auto& to_it = steps_sent_to[i];
    const auto before = [&](std::uint64_t step) { return step < node.fence.at(step % m); };
    j.sent_to_it = static_cast<std::size_t>(std::count_if(to_it.begin(), to_it.end(), before));
    to_it.erase(std::remove_if(to_it.begin(), to_it.end(), before), to_it.end());
    auto& have = added_steps[i];
    for (std::uint64_t a = 0; a < m; ++a)
      for (std::uint64_t s = a; s < node.fence[a]; s += m) {
        if (have.size() <= s)
          have.resize(s + 1, false);
        have[s] = true;
      }
    for (auto it = in_flight.begin(); it != in_flight.end();) {
      const auto step = it->second.step;
      if (it->second.to == i && step < node.fence.at(step % m)) {
        ++j.lost_messages;
        j.w_lost_messages += it->second.w;
        for (std::size_t k = 0; k < x_total.size(); ++k)
          x_total[k] -= it->second.x.ptr()[k];
        lost.insert(it->first);
        it = in_flight.erase(it);
      } else {
        ++it;
      }
    }
    // The dead incarnation's (x, w) as last seen went with it.
    w_total -= j.w_dead + j.w_lost_messages;
    for (std::size_t k = 0; k < x_total.size(); ++k)
      x_total[k] -= last_x[i].at(k);
    j.w_after = w_total;
    // Half of the donor's state just before the donation: the same ratio.
    const auto* donor = probe.states<atrain::pushsum_node>().at(node.donor);
    if (donor == nullptr || donor->donated.empty() || last_x[node.donor].empty())
      return fail("node " + std::to_string(i) + "'s donor " + std::to_string(node.donor) +
                  " gave nothing");
    donated_seen[node.donor] = donor->donated.size();
    const double wd = last_w[node.donor];
    if (node.w != wd / 2 || donor->donated.back().w != wd / 2)
      fail("the replacement's weight is not half the donor's");
    for (std::size_t k = 0; k < node.x.size(); ++k)
      j.ratio_error =
        std::max(j.ratio_error, std::abs(node.x[k] / node.w - last_x[node.donor][k] / wd));
    joins.push_back(j);
  }

  /// One event: false before start, while a worker is down or during
  /// shutdown (some node is gone).
  bool observe(const atrain::run_probe& probe) {
    for (const auto* node : probe.states<atrain::pushsum_node>())
      if (node == nullptr) {
        if (someone_down || std::any_of(probe.states<atrain::pushsum_node>().begin(),
                                        probe.states<atrain::pushsum_node>().end(),
                                        [](const auto* p) { return p != nullptr; }))
          someone_down = true;
        if (someone_down)
          remember(probe);
        return false;
      }
    // The ledgers of the nodes that were running, then each replacement's
    // join (every message sent to it so far is in the account), then theirs.
    // Sends before adds: after an outage a message may be sent and added
    // between two observations.
    std::vector<std::uint32_t> joined;
    for (std::uint32_t i = 0; i < n; ++i) {
      if (incarnation[i] && incarnation[i] != probe.workers.at(i))
        joined.push_back(i);
      else
        take_sends(i, *probe.states<atrain::pushsum_node>()[i]);
      incarnation[i] = probe.workers.at(i);
    }
    for (auto i : joined) {
      rejoin(i, *probe.states<atrain::pushsum_node>()[i], probe);
      take_sends(i, *probe.states<atrain::pushsum_node>()[i]);
    }
    for (std::uint32_t i = 0; i < n; ++i)
      take_adds(i, *probe.states<atrain::pushsum_node>()[i]);
    someone_down = false;
    double w = 0;
    std::vector<double> x(x0.size(), 0.0);
    for (std::uint32_t i = 0; i < n; ++i) {
      const auto* node = probe.states<atrain::pushsum_node>()[i];
      w += node->w;
      last_w[i] = node->w;
      last_x[i] = node->x;
      for (std::size_t k = 0; k < x.size(); ++k)
        x[k] += node->x[k];
    }
    for (const auto& [key, s] : in_flight) {
      w += s.w;
      for (std::size_t k = 0; k < x.size(); ++k)
        x[k] += s.x.ptr()[k];
    }
    double err = 0, scale = 1;
    for (std::size_t k = 0; k < x.size(); ++k) {
      const double want = x_total[k] - descended[k];
      err = std::max(err, std::abs(x[k] - want));
      scale = std::max(scale, std::abs(want));
    }
    worst_w = std::max(worst_w, std::abs(w - w_total) / n);
    worst_x = std::max(worst_x, err / scale);
    ++checks;
    if (worst_w > 1e-13 || worst_x > 1e-12)
      fail("push-sum mass not conserved: w residual " + std::to_string(worst_w) + ", x residual " +
           std::to_string(worst_x));
    return true;
  }

  void take_sends(std::uint32_t i, const atrain::pushsum_node& node) {
    for (; descents_seen[i] < node.descents.size(); ++descents_seen[i]) {
      const auto& d = node.descents[descents_seen[i]];
      const auto step = base[i] + descents_seen[i];
      const double gamma = gamma0 / (1.0 + decay * static_cast<double>(step));
      if (d.step != step || std::abs(d.gamma - gamma) > 1e-15 * gamma)
        fail("descent " + std::to_string(step) + " of node " + std::to_string(i) +
             " has the wrong step or step size");
      for (std::size_t k = 0; k < descended.size(); ++k)
        descended[k] += gamma * static_cast<double>(d.g[k]);
    }
    for (; sent_seen[i] < node.sent.size(); ++sent_seen[i]) {
      const auto& s = node.sent[sent_seen[i]];
      const auto step = base[i] + sent_seen[i];
      if (s.step != step || s.to != expected_peer(i, s.step, n))
        fail("node " + std::to_string(i) + " sent step " + std::to_string(s.step) + " to " +
             std::to_string(s.to) + ", not to the rotating peer of step " + std::to_string(step));
      ++sends;
      steps_sent_to[s.to].push_back(s.step);
      if (skip_first_send && sends == 1)
        continue;
      in_flight[{i, s.step}] = s;
    }
    if (base[i] + node.sent.size() != node.steps && n > 1)
      fail("node " + std::to_string(i) + " did not send exactly once per step");
  }

  void take_adds(std::uint32_t i, const atrain::pushsum_node& node) {
    // A dropped message is one lost at the join, or a copy of one the dead
    // incarnation added (a retransmission); never one the account holds live.
    for (const auto& f : node.fenced) {
      const auto it = in_flight.find({f.from, f.step});
      if ((it != in_flight.end() && it->second.to == i) ||
          (lost.count({f.from, f.step}) == 0 && added_to.count({i, f.from, f.step}) == 0))
        fail("node " + std::to_string(i) + " dropped a message sent after it joined");
    }
    fenced_drops = std::max<std::uint64_t>(fenced_drops, node.fenced.size());
    auto& have = added_steps[i];
    for (; added_seen[i] < node.added.size(); ++added_seen[i]) {
      const auto& a = node.added[added_seen[i]];
      auto it = in_flight.find({a.from, a.step});
      if (it == in_flight.end() || it->second.to != i) {
        if (!(skip_first_send && a.step == 0))
          fail("node " + std::to_string(i) + " added a message never sent to it, or twice");
      } else {
        in_flight.erase(it);
      }
      added_to.insert({i, a.from, a.step});
      ++adds;
      if (have.size() <= a.step)
        have.resize(a.step + 1, false);
      have[a.step] = true;
    }
    while (oldest_missing[i] < have.size() && have[oldest_missing[i]])
      ++oldest_missing[i];
    // A node starts step k only when k - oldest missing <= tau; while it
    // waits after step k-1 it is tau + 1 ahead at most.
    const std::uint64_t lead = node.steps - std::min(node.steps, oldest_missing[i]);
    if (node.joined && node.steps == base[i])
      return;  // a replacement that has not completed a step of its own: steps inherited
    max_lead = std::max(max_lead, lead);
    if (lead > tau + 1)
      fail("node " + std::to_string(i) + " ran " + std::to_string(lead) +
           " steps ahead of its oldest missing message");
  }
};

/// Drives a virtual run event by event under `check`; returns the report.
inline atrain::proto::RunReport run_checked(std::shared_ptr<const atrain::run_plan> plan,
                                            ledger_check& check) {
  auto probe = std::make_shared<atrain::run_probe>();
  atrain::run_options opts;
  opts.probe = probe;
  atrain::virtual_run run{std::move(plan), opts};
  while (run.step() && !check.failed)
    check.observe(*probe);
  auto report = run.run();
  BOOST_REQUIRE(report);
  return *report;
}

inline std::uint64_t max_ahead(const atrain::run_plan& plan) {
  const auto& a = plan.spec.algorithm();
  return a.has_osgp() ? std::max<std::uint32_t>(1, a.osgp().max_staleness()) : 0;
}

}  // namespace atrain::test::sgp_check
