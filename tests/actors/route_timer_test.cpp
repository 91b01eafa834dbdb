// route_timer: RFC 6298's estimator over answers, and when a route counts as
// awaiting an answer (folding's busy()) or as late (a silent peer).
#include <boost/test/unit_test.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include "atrain/actors/route_timer.hpp"

namespace {

constexpr std::int64_t ms = 1'000'000;

}  // namespace

BOOST_AUTO_TEST_SUITE(route_timer_suite)

BOOST_AUTO_TEST_CASE(no_packet_is_never_awaiting) {
  atrain::route_timer t;
  BOOST_TEST(!t.awaiting(0));
  BOOST_TEST(t.rto_seconds() == atrain::route_timer::initial_rto_seconds);
  BOOST_TEST(t.srtt_seconds() == 0.0);  // reported as "no answer yet"
}

BOOST_AUTO_TEST_CASE(first_answer_waits_the_initial_rto) {
  atrain::route_timer t;
  t.sent(0);
  BOOST_TEST(t.awaiting(999 * ms));  // a fresh connection may take a while
  BOOST_TEST(!t.awaiting(1001 * ms));
}

BOOST_AUTO_TEST_CASE(estimate_follows_rfc_6298) {
  // Round trips in ms; the expected srtt/rttvar computed here step by step.
  const std::vector<double> rtts{20, 30, 10, 25, 40, 20};
  atrain::route_timer t;
  double srtt = -1, var = 0;
  std::int64_t now = 0;
  for (double r : rtts) {
    t.sent(now);
    t.answered(now, now + static_cast<std::int64_t>(r * ms), true);
    const double s = r / 1000;
    if (srtt < 0) {
      srtt = s;
      var = s / 2;
    } else {
      var = 0.75 * var + 0.25 * std::abs(srtt - s);
      srtt = 0.875 * srtt + 0.125 * s;
    }
    now += 100 * ms;
  }
  BOOST_TEST(std::abs(t.rto_seconds() - (srtt + 4 * var)) < 1e-12);
  BOOST_TEST(std::abs(t.srtt_seconds() - srtt) < 1e-12);
  BOOST_TEST(t.unanswered() == 0U);
}

BOOST_AUTO_TEST_CASE(late_packet_stops_awaiting) {
  atrain::route_timer t;
  t.sent(0);
  t.answered(0, 20 * ms, true);  // srtt 20 ms, rttvar 10 ms: rto 60 ms
  BOOST_TEST(std::abs(t.rto_seconds() - 0.060) < 1e-12);
  t.sent(100 * ms);
  BOOST_TEST(t.awaiting(159 * ms));
  BOOST_TEST(!t.awaiting(161 * ms));  // late: the node steps without it
}

BOOST_AUTO_TEST_CASE(answers_out_of_order_and_failures) {
  atrain::route_timer t;
  t.sent(0);
  t.answered(0, 20 * ms, true);  // rto 60 ms
  t.sent(100 * ms);              // will fail at the reply timeout
  t.sent(110 * ms);
  t.answered(110 * ms, 130 * ms, true);  // the newer one first: its own send time
  BOOST_TEST(t.unanswered() == 1U);
  BOOST_TEST(!t.awaiting(170 * ms));  // the oldest (100 ms) is late
  const double before = t.rto_seconds();
  t.answered(100 * ms, 10'100 * ms, false);  // a failure takes no sample (Karn)
  BOOST_TEST(t.rto_seconds() == before);
  BOOST_TEST(t.unanswered() == 0U);
  BOOST_TEST(!t.awaiting(10'200 * ms));
}

BOOST_AUTO_TEST_SUITE_END()
