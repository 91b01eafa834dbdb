/// DiLoCo (ALGORITHMS.md §10): inner SGD steps, the pseudo-gradients
/// averaged by the ring, an outer Nesterov step. Every outer step of every
/// node is checked against an independent computation: the average against
/// the mean of all nodes' pseudo-gradients, the outer model and momentum
/// against the Nesterov rule in double from the node's previous ones.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "algorithms/diloco/diloco.hpp"
#include "atrain/actors/run_plan.hpp"
#include "restart_fixtures.hpp"
#include "ring_fixtures.hpp"
#include "source_dir.hpp"

namespace t = atrain::test;
using namespace atrain::test::restart;

namespace {

using ledger = std::map<std::uint64_t, std::map<std::uint32_t, atrain::diloco_sync>>;

/// A driven run of diloco.textproto with `sets`, its outer steps by round and node.
atrain::proto::RunReport run_ledger(const std::vector<std::string>& sets, ledger& out) {
  return drive("diloco.textproto", sets, [&](const auto&, const auto& probe) {
    harvest(probe, atrain::diloco_take_syncs, [&](std::uint32_t i, auto& s) {
      BOOST_TEST(out[s.round].count(i) == 0u, "round " << s.round << " twice on node " << i);
      out[s.round][i] = std::move(s);
    });
  });
}

struct checked {
  std::size_t full = 0;       // rounds every node finished
  double worst_average = 0;   // |avg - mean(delta)| / (1 + |mean|)
  double worst_nesterov = 0;  // outer and momentum against the rule in double
};

/// Every node's outer step of a round used one average and left one outer
/// model and momentum; where all n took part, the average is the mean of
/// their pseudo-gradients. With `nesterov`, each node's outer model and
/// momentum follow from its previous ones (x^0 and 0 first) by the rule.
checked check_ledger(const ledger& l, const atrain::run_plan& plan, std::uint32_t fragments,
                     bool nesterov) {
  const auto& c = plan.spec.algorithm().diloco();
  const double eta = c.outer_step_size(), mu = c.momentum();
  const std::size_t n = plan.nodes(), d = plan.dim();
  std::vector<std::vector<float>> outer(n, plan.x0), momentum(n, std::vector<float>(d, 0.0F));
  checked out;
  for (const auto& [k, by_node] : l) {
    const auto& first = by_node.begin()->second;
    const auto [b, e] = atrain::ring_chunk(d, fragments, static_cast<std::uint32_t>(k % fragments));
    BOOST_TEST(first.begin == b);
    BOOST_TEST(first.end == e);
    for (const auto& [i, s] : by_node) {
      BOOST_TEST((s.average == first.average), "round " << k << ": node " << i << " differs");
      BOOST_TEST((s.outer == first.outer), "round " << k << ": node " << i << "'s outer model");
      BOOST_TEST((s.momentum == first.momentum), "round " << k << ": node " << i);
      if (!nesterov)
        continue;
      for (std::size_t j = 0; j < d; ++j) {
        double m = momentum[i][j], o = outer[i][j];
        if (j >= b && j < e) {
          const double avg = s.average[j - b];
          m = mu * m + avg;
          o -= eta * (avg + mu * m);
        }
        const double dev = std::max(std::abs(m - s.momentum[j]) / (1 + std::abs(m)),
                                    std::abs(o - s.outer[j]) / (1 + std::abs(o)));
        out.worst_nesterov = std::max(out.worst_nesterov, dev);
      }
      outer[i] = s.outer;
      momentum[i] = s.momentum;
    }
    if (by_node.size() != n)
      continue;
    ++out.full;
    for (std::size_t j = 0; j < e - b; ++j) {
      double mean = 0;
      for (const auto& [i, s] : by_node)
        mean += s.delta[j];
      mean /= static_cast<double>(n);
      out.worst_average =
        std::max(out.worst_average, std::abs(mean - first.average[j]) / (1.0 + std::abs(mean)));
    }
  }
  return out;
}

/// check_spec's refusal of the DiLoCo spec with `sets` ("" when accepted).
std::string refusal(const std::vector<std::string>& sets) {
  try {
    atrain::check_spec(
      atrain::load_spec(atrain::test::source_dir() + "/config/algorithms/diloco.textproto", sets));
  } catch (const atrain::spec_error& e) {
    return e.what();
  }
  return {};
}

}  // namespace

BOOST_AUTO_TEST_SUITE(diloco)

// The ring with fragments under random delivery and duplicates: round k sums
// fragment k mod F exactly (against the sum in double) on every rank alike,
// and a rank sends 2(n-1)/n of the fragment, not of the vector.
BOOST_AUTO_TEST_CASE(the_ring_reduces_one_fragment_per_round) {
  const std::uint32_t n = 4, fragments = 3;
  const std::size_t d = 23, rounds = 7;
  std::mt19937 gen{5};
  std::normal_distribution<float> value;
  std::vector<std::vector<std::vector<float>>> v(rounds, std::vector<std::vector<float>>(n));
  for (auto& round : v)
    for (auto& x : round)
      for (std::size_t j = 0; j < d; ++j)
        x.push_back(value(gen));
  const auto res = t::simulate_ring(v, {}, n, d, 11, fragments);
  for (std::size_t k = 0; k < rounds; ++k) {
    const auto [b, e] = atrain::ring_chunk(d, fragments, static_cast<std::uint32_t>(k % fragments));
    std::size_t sent = 0;
    for (std::uint32_t r = 0; r < n; ++r) {
      sent += res.floats_sent[k][r];
      for (std::size_t j = b; j < e; ++j) {
        BOOST_TEST(res.sums[k][r][j] == res.sums[k][0][j]);
        double exact = 0;
        for (std::uint32_t q = 0; q < n; ++q)
          exact += v[k][q][j];
        BOOST_TEST(std::abs(res.sums[k][r][j] - exact) < 1e-5);
      }
    }
    BOOST_TEST(sent == 2 * (n - 1) * (e - b));  // every chunk once per step
  }
}

BOOST_AUTO_TEST_CASE(reaches_the_quickstart_target_with_one_sync_per_h_steps) {
  const auto r = t::ring_run("diloco.textproto", {});
  BOOST_REQUIRE(r.has_time_to_target());
  BOOST_TEST(r.final().test_accuracy() >= 0.845);
  const double rounds = t::check_ring_traffic(r, 124);  // 123 features + bias
  const double grads = static_cast<double>(r.per_node(0).gradients());
  BOOST_TEST(rounds <= grads / 8 + 1);  // H = 8
  BOOST_TEST(rounds >= grads / 8 - 1);
  BOOST_TEST_MESSAGE("diloco: time to 0.845 " << r.time_to_target() << " s (virtual), "
                                              << r.gradients_total() << " gradients, "
                                              << r.bytes_sent() << " bytes");
}

BOOST_AUTO_TEST_CASE(every_outer_step_is_the_nesterov_rule_on_the_mean_pseudo_gradient) {
  ledger l;
  const std::vector<std::string> sets{"stop.stop_at_target=false", "stop.time_seconds=2"};
  const auto r = run_ledger(sets, l);
  const auto plan = t::config("algorithms/diloco.textproto", sets);
  const auto c = check_ledger(l, *plan, 1, true);
  BOOST_TEST(c.full > 10u);
  BOOST_TEST(c.full + 1 >= l.size());  // only the last round may be cut by the stop
  BOOST_TEST(c.worst_average < 1e-5);
  BOOST_TEST(c.worst_nesterov < 1e-5);
  BOOST_TEST_MESSAGE("diloco: " << c.full << " outer steps on all 8 nodes, worst average "
                                << c.worst_average << ", worst Nesterov " << c.worst_nesterov
                                << "; " << r.gradients_total() << " gradients");
}

// Streaming: 4 fragments, one averaged every 2 inner steps while the inner
// steps go on; a fragment's chunk is a quarter of the vector.
BOOST_AUTO_TEST_CASE(streaming_fragments_cycle_and_reach_the_target) {
  const std::vector<std::string> sets{"algorithm.diloco.fragments=4",
                                      "algorithm.diloco.overlap=true"};
  ledger l;
  const auto r = run_ledger(sets, l);
  expect_target(r);
  const auto plan = t::config("algorithms/diloco.textproto", sets);
  const auto c = check_ledger(l, *plan, 4, false);  // mixing changes x, not o and m
  const auto n = check_ledger(l, *plan, 4, true);
  BOOST_TEST(c.full > 20u);
  BOOST_TEST(c.worst_average < 1e-5);
  BOOST_TEST(n.worst_nesterov < 1e-5);
  const auto plain = t::ring_run("diloco.textproto", {});
  // Values per gradient (24-byte packet headers aside): a quarter of the
  // vector every 2 steps = a whole one every 8; fewer when a sync waits for
  // the fragment before it.
  auto floats_per_gradient = [](const atrain::proto::RunReport& x) {
    return (static_cast<double>(x.bytes_sent()) - 24.0 * static_cast<double>(x.messages_sent())) /
           4.0 / static_cast<double>(x.gradients_total());
  };
  const double streamed = floats_per_gradient(r), whole = floats_per_gradient(plain);
  BOOST_TEST(streamed <= 1.1 * whole);
  BOOST_TEST(streamed >= 0.5 * whole);
  BOOST_TEST_MESSAGE("streaming diloco: target at " << r.time_to_target() << " s, " << c.full
                                                    << " fragment averages; floats per gradient "
                                                    << streamed << " against " << whole);
}

BOOST_AUTO_TEST_CASE(same_seed_same_trace) {
  t::expect_replay("diloco.textproto");
}

BOOST_AUTO_TEST_CASE(reaches_the_target_over_lossy_acknowledged_links) {
  t::expect_target_over_lossy_links("diloco.textproto");
}

BOOST_AUTO_TEST_CASE(a_restarted_rank_takes_the_outer_model_and_momentum) {
  for (const std::string overlap : {"false", "true"}) {
    ledger l;
    const auto r =
      run_ledger({"faults.crash=[{node: 5 at_seconds: 0.3 restart_after_seconds: 0.2}]",
                  "algorithm.diloco.fragments=2", "algorithm.diloco.overlap=" + overlap},
                 l);
    expect_target(r);
    expect_restarted(r, 0, "joining the ring at round ");
    const auto plan = t::config("algorithms/diloco.textproto", {"algorithm.diloco.fragments=2"});
    const auto c = check_ledger(l, *plan, 2, false);
    BOOST_TEST(c.full > 5u);
    BOOST_TEST(c.worst_average < 1e-5);
    BOOST_TEST_MESSAGE("diloco overlap " << overlap << " with a restart: " << c.full
                                         << " rounds on all 8, worst average " << c.worst_average
                                         << "; " << r.faults(0).effect());
  }
}

// Inner AdamW: on a node's first inner step the moments give m/(1-b1) = g
// and sqrt(v/(1-b2)) = |g|, so with no weight decay each value moves by lr
// against its gradient's sign (0 where the gradient is 0): the first sync's
// pseudo-gradient o - x is lr times a sign vector on every node (SGD's would
// be lr g). The outer steps still follow the Nesterov rule.
BOOST_AUTO_TEST_CASE(adamw_inner_steps_move_by_lr_on_the_first_step_and_reach_the_target) {
  ledger l;
  const std::vector<std::string> sets{
    "algorithm.diloco={inner: ADAMW step_size: 0.1 weight_decay: 0 inner_steps: 1 "
    "outer_step_size: 1 momentum: 0.5}",
    "stop.stop_at_target=false", "stop.time_seconds=1"};
  (void)run_ledger(sets, l);
  BOOST_REQUIRE(l.count(0) == 1u);
  std::size_t moved = 0, values = 0;
  for (const auto& [i, s] : l.at(0))
    for (const float d : s.delta) {
      ++values;
      BOOST_TEST(std::abs(d) <= 0.1F + 1e-6F, "node " << i << ": " << d);
      moved += std::abs(d) > 0.0999F ? 1 : 0;
      BOOST_TEST((std::abs(d) > 0.0999F || std::abs(d) < 1e-4F), "node " << i << ": " << d);
    }
  BOOST_TEST(moved * 10 > values);  // a9a's minibatches touch a good share of the features
  const auto plan = t::config("algorithms/diloco.textproto", sets);
  const auto c = check_ledger(l, *plan, 1, true);
  BOOST_TEST(c.full > 10u);
  BOOST_TEST(c.worst_nesterov < 1e-5);
  const auto r =
    atrain::run_experiment(t::config("beyond/diloco_adamw.textproto", {"progress=false"}));
  BOOST_REQUIRE(r);
  BOOST_TEST(r->has_time_to_target());
  BOOST_TEST_MESSAGE("diloco AdamW: first sync moved " << moved << " of " << values
                                                       << " values by lr; diloco_adamw target at "
                                                       << r->time_to_target() << " s");
}

BOOST_AUTO_TEST_CASE(bad_blocks_are_refused_naming_the_field) {
  BOOST_TEST(refusal({}).empty());
  auto says = [](const std::vector<std::string>& sets, const std::string& what) {
    const auto msg = refusal(sets);
    BOOST_TEST(msg.find(what) != std::string::npos, msg);
  };
  says({"algorithm.diloco.fragments=3"},
       "algorithm.diloco.inner_steps: must be a multiple of fragments (3)");
  says({"algorithm.diloco.momentum=1"}, "algorithm.diloco.momentum: must be in [0, 1) (got 1)");
  says({"algorithm.diloco.outer_step_size=0"}, "algorithm.diloco.outer_step_size: must be > 0");
  says({"algorithm.diloco.mixing=0.5"}, "algorithm.diloco.mixing: is used only with overlap");
  says({"algorithm.diloco.overlap=true", "algorithm.diloco.mixing=1"},
       "algorithm.diloco.mixing: must be in [0, 1) (got 1)");
  says({"algorithm.diloco.inner_steps=0"}, "algorithm.diloco.inner_steps: must be >= 1");
  says({"algorithm.diloco.fragments=2048", "algorithm.diloco.inner_steps=2048"},
       "algorithm.diloco.fragments: must be <= 1024");
  says({"algorithm.diloco.beta1=0.5"}, "algorithm.diloco.beta1: is used only with inner: ADAMW");
  says({"algorithm.diloco.inner=ADAMW", "algorithm.diloco.beta2=1"},
       "algorithm.diloco.beta2: must be in [0, 1) (got 1)");
  says({"algorithm.diloco.inner=ADAMW", "algorithm.diloco.epsilon=0"},
       "algorithm.diloco.epsilon: must be > 0");
  says({"algorithm.diloco.inner=ADAMW", "algorithm.diloco.weight_decay=-1"},
       "algorithm.diloco.weight_decay: must be >= 0");
}

BOOST_AUTO_TEST_SUITE_END()
