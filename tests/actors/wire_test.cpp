/// Every message type round-trips through CAF's binary serializer, because the
/// same messages cross machines.
#include <boost/test/unit_test.hpp>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <limits>

#include "atrain/actors/blob_checks.hpp"
#include "atrain/messages/blob_pool.hpp"
#include "atrain/messages/wire.hpp"

namespace {

struct wire_config : caf::actor_system_config {
  wire_config() {
    atrain::register_message_types(*this);
    set("scheduler.max-threads", 1);
  }
};

struct wire_fixture {
  wire_config cfg;
  caf::actor_system sys{cfg};

  template <class T>
  T round_trip(T x) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto err = sink(x);
    BOOST_REQUIRE_MESSAGE(!err, "serialize: " + sys.render(err));
    T y;
    caf::binary_deserializer source{sys, buf};
    err = source(y);
    BOOST_REQUIRE_MESSAGE(!err, "deserialize: " + sys.render(err));
    return y;
  }

  /// Through a type-erased caf::message, as BASP does.
  template <class T>
  T through_message(T x) {
    auto msg = caf::make_message(std::move(x));
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    auto err = sink(msg);
    BOOST_REQUIRE_MESSAGE(!err, "serialize message: " + sys.render(err));
    caf::message back;
    caf::binary_deserializer source{sys, buf};
    err = source(back);
    BOOST_REQUIRE_MESSAGE(!err, "deserialize message: " + sys.render(err));
    BOOST_REQUIRE(back.match_elements<T>());
    return back.get_as<T>(0);
  }
};

template <class T>
bool same(const atrain::blob<T>& a, const atrain::blob<T>& b) {
  return a.vec() == b.vec();
}

}  // namespace

BOOST_FIXTURE_TEST_SUITE(wire, wire_fixture)

BOOST_AUTO_TEST_CASE(packet_round_trips_with_raw_blobs) {
  atrain::packet p;
  p.from = 3;
  p.to = 7;
  p.kind = 2;
  p.seq = 123456789012345ULL;
  p.f = atrain::float_blob{std::vector<float>{1.5f, -2.25f, 3e-8f, 1e30f}};
  p.d = atrain::double_blob{std::vector<double>{1e-300, -4.0}};
  p.scalars = {0.5, 0.25};
  for (auto q : {round_trip(p), through_message(p)}) {
    BOOST_TEST(q.from == 3u);
    BOOST_TEST(q.to == 7u);
    BOOST_TEST(q.kind == 2u);
    BOOST_TEST(q.seq == p.seq);
    BOOST_TEST(same(q.f, p.f));
    BOOST_TEST(same(q.d, p.d));
    BOOST_TEST(q.scalars == p.scalars);
    BOOST_TEST(q.bytes() == p.bytes());
  }
}

BOOST_AUTO_TEST_CASE(a_coded_packet_ships_its_bytes_and_counts_them) {
  // link.codec: the outbox leaves f or d empty and ships the coded bytes.
  atrain::packet p;
  p.from = 1;
  p.kind = 2;
  p.seq = 9;
  p.coded = atrain::blob<std::uint8_t>{std::vector<std::uint8_t>{1, 4, 0, 0, 200, 255, 7}};
  p.scalars = {0.5};
  for (auto q : {round_trip(p), through_message(p)}) {
    BOOST_TEST(same(q.coded, p.coded));
    BOOST_TEST(q.f.empty());
    BOOST_TEST(q.d.empty());
    BOOST_TEST(q.bytes() == 24u + 7u + 8u);
  }
}

BOOST_AUTO_TEST_CASE(empty_blobs_round_trip) {
  atrain::packet p;
  auto q = round_trip(p);
  BOOST_TEST(q.f.empty());
  BOOST_TEST(q.d.empty());
}

BOOST_AUTO_TEST_CASE(model_snapshot_round_trips) {
  atrain::model_snapshot s;
  s.node = 5;
  s.gradients = 99;
  s.messages_sent = 7;
  s.bytes_sent = 1 << 20;
  s.staleness_sum = 12.5;
  s.staleness_max = 4;
  s.staleness_count = 10;
  s.params = atrain::float_blob{std::vector<float>(1000, 0.125f)};
  for (auto t : {round_trip(s), through_message(s)}) {
    BOOST_TEST(t.node == 5u);
    BOOST_TEST(t.gradients == 99u);
    BOOST_TEST(t.bytes_sent == s.bytes_sent);
    BOOST_TEST(t.staleness_sum == 12.5);
    BOOST_TEST(t.staleness_count == 10u);
    BOOST_TEST(same(t.params, s.params));
  }
}

BOOST_AUTO_TEST_CASE(mass_account_round_trips) {
  atrain::mass_account a;
  a.node = 1;
  a.z = atrain::double_blob{std::vector<double>{1, 2, 3}};
  a.g_prev = atrain::double_blob{std::vector<double>{4, 5, 6}};
  a.rho_sent = atrain::double_blob{std::vector<double>{7, 8, 9}};
  a.in_c = {0, 2};
  a.c_in = {0.5, 0.25};
  a.rho_consumed = {atrain::double_blob{std::vector<double>{1, 1, 1}},
                    atrain::double_blob{std::vector<double>{2, 2, 2}}};
  a.phi = 0.75;
  a.sigma_sent = 3.5;
  a.sigma_consumed = {1.0, 2.0};
  for (auto b : {round_trip(a), through_message(a)}) {
    BOOST_TEST(b.node == 1u);
    BOOST_TEST(same(b.z, a.z));
    BOOST_TEST(same(b.g_prev, a.g_prev));
    BOOST_TEST(same(b.rho_sent, a.rho_sent));
    BOOST_TEST(b.in_c == a.in_c);
    BOOST_TEST(b.c_in == a.c_in);
    BOOST_REQUIRE(b.rho_consumed.size() == 2u);
    BOOST_TEST(same(b.rho_consumed[1], a.rho_consumed[1]));
    BOOST_TEST(b.phi == 0.75);
    BOOST_TEST(b.sigma_consumed == a.sigma_consumed);
  }
}

BOOST_AUTO_TEST_CASE(stats_metrics_and_reports_round_trip) {
  atrain::link_stats l{1, 2, 30, 4, 5, 6, 7, 8, {9, 10}};
  auto l2 = through_message(l);
  BOOST_TEST(l2.from == 1u);
  BOOST_TEST(l2.to == 2u);
  BOOST_TEST(l2.forwarded == 30u);
  BOOST_TEST(l2.dropped == 4u);
  BOOST_TEST(l2.duplicated == 5u);
  BOOST_TEST(l2.replaced == 6u);
  BOOST_TEST(l2.retransmitted == 7u);
  BOOST_TEST(l2.coalesced == 8u);
  BOOST_TEST((l2.fault_hits == std::vector<std::uint64_t>{9, 10}));
  atrain::metric_sample m{1.5, 10, 0.3, 0.8, 0.01, 5, 600, 7};
  auto m2 = through_message(m);
  BOOST_TEST(m2.time_seconds == 1.5);
  BOOST_TEST(m2.gradients == 10u);
  BOOST_TEST(m2.test_accuracy == 0.8);
  BOOST_TEST(m2.dropped == 7u);
  atrain::report_bytes r{std::string("\0\1\2binary", 9)};
  BOOST_TEST(through_message(r).bytes == r.bytes);
}

BOOST_AUTO_TEST_CASE(hostile_blob_length_is_refused) {
  // A length prefix claiming 2^31 floats must be refused, not allocated.
  atrain::float_blob b{std::vector<float>{1, 2}};
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  BOOST_REQUIRE(!sink(b));
  std::vector<char> forged;
  caf::binary_serializer forge{sys, forged};
  std::size_t huge = (std::size_t{1} << 31) + 1;  // > max_blob_elements, fits the 32-bit prefix
  BOOST_REQUIRE(!forge.begin_sequence(huge));
  atrain::float_blob out;
  caf::binary_deserializer source{sys, forged};
  BOOST_TEST(static_cast<bool>(source(out)));
  BOOST_TEST(out.empty());
}

BOOST_AUTO_TEST_CASE(a_blobs_finiteness_is_checked_once_for_all_its_copies) {
  int checks = 0;
  const auto count = [&checks](const double* x, std::size_t n) {
    ++checks;
    return atrain::all_finite(atrain::double_blob{std::vector<double>(x, x + n)});
  };
  atrain::double_blob good{std::vector<double>{1, -2, 3e300}};
  const auto copy = good;
  BOOST_TEST(good.all_finite(count));
  BOOST_TEST(copy.all_finite(count));
  BOOST_TEST(checks == 1);
  atrain::double_blob bad{std::vector<double>{1, std::numeric_limits<double>::infinity()}};
  const auto bad_copy = bad;
  BOOST_TEST(!bad.all_finite(count));
  BOOST_TEST(!bad_copy.all_finite(count));
  BOOST_TEST(checks == 2);
  // A pooled buffer published again is a new blob: its values are asked anew.
  atrain::blob_pool<double> pool;
  auto buf = pool.take(2);
  (*buf)[0] = 1;
  (*buf)[1] = 2;
  BOOST_TEST(pool.publish(std::move(buf)).all_finite(count));
  auto again = pool.take(2);
  (*again)[0] = std::numeric_limits<double>::quiet_NaN();
  (*again)[1] = 0;
  BOOST_TEST(!pool.publish(std::move(again)).all_finite(count));
  BOOST_TEST(checks == 4);
  // A blob put together by hand has no record: it is checked every time.
  atrain::double_blob bare;
  bare.data = good.data;
  BOOST_TEST(bare.all_finite(count));
  BOOST_TEST(bare.all_finite(count));
  BOOST_TEST(checks == 6);
  // Deserialized blobs carry a fresh record.
  const auto received = round_trip(bad);
  BOOST_TEST(!atrain::all_finite(received));
  BOOST_TEST(!received.all_finite(count));
  BOOST_TEST(checks == 6);  // the record answered
}

BOOST_AUTO_TEST_SUITE_END()
