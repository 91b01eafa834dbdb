/// Acknowledged links and receiver-side de-duplication (network.hpp):
/// every packet arrives at least once, exactly_once lets each through once.
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <random>
#include <vector>

#include "atrain/actors/network.hpp"
#include "fixtures.hpp"

BOOST_AUTO_TEST_SUITE(acknowledged_link)

BOOST_AUTO_TEST_CASE(exactly_once_passes_each_key_once_in_any_order) {
  // Streams (sender, kind) numbered 1..500 (plus a 0), each packet offered
  // three times in a shuffled order: exactly 501 first times per stream.
  std::vector<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>> offers;
  for (std::uint32_t from : {0u, 3u})
    for (std::uint32_t kind : {1u, 2u})
      for (std::uint64_t seq = 0; seq <= 500; ++seq)
        for (int copy = 0; copy < 3; ++copy)
          offers.emplace_back(from, kind, seq);
  std::mt19937 gen(42);
  std::shuffle(offers.begin(), offers.end(), gen);
  atrain::exactly_once filter;
  std::map<std::tuple<std::uint32_t, std::uint32_t, std::uint64_t>, int> passed;
  for (const auto& [from, kind, seq] : offers)
    if (filter.first_time(from, kind, seq))
      ++passed[{from, kind, seq}];
  BOOST_TEST(passed.size() == 4u * 501u);
  for (const auto& [key, count] : passed)
    BOOST_TEST(count == 1);
}

BOOST_AUTO_TEST_CASE(exactly_once_keeps_gaps_apart) {
  atrain::exactly_once filter;
  BOOST_TEST(filter.first_time(1, 1, 5));
  BOOST_TEST(filter.first_time(1, 1, 2));
  BOOST_TEST(!filter.first_time(1, 1, 5));
  BOOST_TEST(filter.first_time(1, 1, 1));
  BOOST_TEST(!filter.first_time(1, 1, 2));
  BOOST_TEST(filter.first_time(1, 1, 3));
  BOOST_TEST(filter.first_time(1, 1, 4));
  BOOST_TEST(!filter.first_time(1, 1, 4));
  BOOST_TEST(filter.first_time(1, 1, 6));
}

BOOST_AUTO_TEST_CASE(rfast_links_stay_fire_and_forget_and_others_acknowledge) {
  namespace t = atrain::test;
  BOOST_TEST(!atrain::links_are_acknowledged(*t::quickstart({})));
  BOOST_TEST(atrain::links_are_acknowledged(
    *t::config("algorithms/allreduce.textproto", {"progress=false"})));
}

BOOST_AUTO_TEST_SUITE_END()
