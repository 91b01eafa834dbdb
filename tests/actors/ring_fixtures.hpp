#pragma once
/// Checks shared by the Ring-AllReduce, Local SGD and straggler-policy
/// tests: the ring state machine under random delivery, a finished run's
/// report is complete, and the ring's traffic matches 2(n-1)/n d floats per
/// round per node.
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "algorithms/ring/ring.hpp"
#include "fixtures.hpp"

namespace atrain::test {

struct ring_result {
  std::vector<std::vector<std::vector<float>>> sums;  // [round][rank]
  std::vector<std::vector<double>> counts;            // [round][rank]
  std::vector<std::vector<std::size_t>> floats_sent;  // [round][rank]
};

/// Runs `rounds` all-reduces of `v[round][rank]` over n ranks. Packets in
/// flight are delivered in random order; a fifth of the deliveries are
/// duplicates (the packet stays in flight). A rank starts its next round as
/// soon as it finishes one, so chunks of round k+1 overtake those of round k.
/// `count[round][rank]`: the contribution counts that travel with the chunks
/// (straggler_policy SKIP); empty: none travel (WAIT), one per rank.
/// `fragments`: round k reduces fragment k mod fragments only.
/// `codec`: every chunk travels coded (ring_allreduce::set_codec);
/// floats_sent then counts the coded bytes / 4.
inline ring_result simulate_ring(const std::vector<std::vector<std::vector<float>>>& v,
                                 const std::vector<std::vector<double>>& count, std::uint32_t n,
                                 std::size_t d, std::uint32_t seed, std::uint32_t fragments = 1,
                                 std::optional<codec::codec_config> codec = std::nullopt) {
  const std::size_t rounds = v.size();
  std::vector<ring_allreduce> ranks;
  for (std::uint32_t r = 0; r < n; ++r) {
    ranks.emplace_back(r, n, d, fragments);
    if (codec)
      ranks.back().set_codec(*codec);
  }
  ring_result res;
  res.sums.assign(rounds, std::vector<std::vector<float>>(n));
  res.counts.assign(rounds, std::vector<double>(n, -1));
  res.floats_sent.assign(rounds, std::vector<std::size_t>(n, 0));
  auto begin = [&](std::uint32_t r, std::size_t k) {
    return ranks[r].begin(v[k][r].data(), count.empty() ? 1.0 : count[k][r]);
  };
  std::vector<std::pair<std::uint32_t, ring_allreduce::send>> flight;  // (receiver, chunk)
  auto post = [&](std::uint32_t from, std::vector<ring_allreduce::send> sends) {
    for (auto& s : sends) {
      res.floats_sent[s.round][from] += s.chunk.size() + s.coded.size() / 4;
      flight.emplace_back((from + 1) % n, std::move(s));
    }
  };
  for (std::uint32_t r = 0; r < n; ++r)
    post(r, begin(r, 0));
  std::mt19937 gen{seed};
  while (!flight.empty()) {
    const auto k = std::uniform_int_distribution<std::size_t>{0, flight.size() - 1}(gen);
    const bool duplicate = std::uniform_int_distribution<int>{0, 4}(gen) == 0;
    auto [to, s] = flight[k];
    if (!duplicate)
      flight.erase(flight.begin() + static_cast<std::ptrdiff_t>(k));
    const auto before = ranks[to].round();
    std::vector<ring_allreduce::send> out;
    const auto verdict =
      ranks[to].offer(s.round, s.step, s.chunk, out,
                      count.empty() ? std::nullopt : std::optional<double>{s.count}, s.coded);
    BOOST_REQUIRE(verdict != ring_allreduce::verdict::invalid);
    post(to, std::move(out));
    if (ranks[to].round() != before) {
      BOOST_REQUIRE(ranks[to].finished());
      res.sums[before][to] = ranks[to].sum();
      res.counts[before][to] = ranks[to].count();
      if (before + 1 < rounds)
        post(to, begin(to, before + 1));
    }
  }
  for (std::uint32_t r = 0; r < n; ++r)
    BOOST_REQUIRE(ranks[r].round() == rounds);
  return res;
}

/// Runs config/algorithms/<file> with `overrides` (progress off) and checks
/// the report is complete.
inline proto::RunReport ring_run(const std::string& file, std::vector<std::string> overrides) {
  overrides.push_back("progress=false");
  auto report = run_experiment(config("algorithms/" + file, overrides));
  BOOST_REQUIRE(report);
  BOOST_TEST(report->error().empty(), report->error());
  BOOST_TEST(report->gradients_total() > 0u);
  BOOST_TEST(report->messages_sent() > 0u);
  BOOST_TEST(!report->trace_hash().empty());
  BOOST_TEST(report->packets_rejected() == 0u);
  return *report;
}

/// Every ring packet of an n-node run carries one chunk of d/n floats (+-1
/// for d not divisible by n) and a 24-byte header, so bytes per message
/// lies in [24 + 4 floor(d/n), 24 + 4 ceil(d/n)]; with 2(n-1) packets per
/// round that is 2(n-1)/n d floats per node per round. Returns the rounds
/// node 0 has started (messages / 2(n-1), rounded up).
inline double check_ring_traffic(const proto::RunReport& r, std::size_t d) {
  const std::size_t n = r.nodes();
  BOOST_REQUIRE(r.per_node_size() == static_cast<int>(n));
  double rounds = 0;
  for (const auto& node : r.per_node()) {
    BOOST_REQUIRE(node.messages_sent() > 0u);
    const double per_msg =
      static_cast<double>(node.bytes_sent()) / static_cast<double>(node.messages_sent());
    BOOST_TEST(per_msg >= 24.0 + 4.0 * static_cast<double>(d / n));
    BOOST_TEST(per_msg <= 24.0 + 4.0 * static_cast<double>((d + n - 1) / n));
    const double node_rounds =
      static_cast<double>(node.messages_sent()) / static_cast<double>(2 * (n - 1));
    const double floats =
      (static_cast<double>(node.bytes_sent()) - 24.0 * static_cast<double>(node.messages_sent())) /
      4.0;
    const double expected = 2.0 * static_cast<double>(n - 1) / static_cast<double>(n) *
                            static_cast<double>(d) * node_rounds;
    BOOST_TEST(std::abs(floats - expected) <= static_cast<double>(node.messages_sent()),
               "node " << node.node() << ": " << floats
                       << " floats sent, 2(n-1)/n d x rounds = " << expected);
    if (node.node() == 0)
      rounds = node_rounds;
  }
  BOOST_TEST_MESSAGE("ring traffic: " << rounds << " rounds, " << r.per_node(0).bytes_sent()
                                      << " bytes from node 0");
  return rounds;
}

/// With duplicating and reordering links: the same seed twice gives the same
/// trace and report, another seed another trace.
inline void expect_replay(const std::string& file) {
  expect_replay([&](std::uint64_t seed) {
    return config("algorithms/" + file,
                  {"stop.time_seconds=1", "stop.stop_at_target=false", "link.reorder=0.3",
                   "link.reorder_delay_seconds=0.01", "link.duplicate=0.2", "progress=false",
                   "seed=" + std::to_string(seed)});
  });
}

}  // namespace atrain::test
