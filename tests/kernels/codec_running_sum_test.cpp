// atrain::codec's running sums over a simulated lossy, duplicating, reordering
// channel, and every decoder fed hostile bytes (part of the codec suite).
#include <boost/test/unit_test.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "atrain/kernels/codec.hpp"

using namespace atrain::codec;
using bytes = std::vector<std::uint8_t>;

namespace {

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), 8 * a.size()) == 0;
}

bool contains(const std::string& s, const char* word) {
  return s.find(word) != std::string::npos;
}

void put_u32(bytes& b, std::size_t at, std::uint32_t x) {
  for (int i = 0; i < 4; ++i)
    b[at + i] = static_cast<std::uint8_t>(x >> (8 * i));
}

void put_f32(bytes& b, std::size_t at, float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  put_u32(b, at, u);
}

/// The decoder's error for blob (empty when it decoded), bounded by max_n.
std::string error_of(const bytes& blob, std::size_t max_n = 1000) {
  return decode(blob.data(), blob.size(), max_n).error;
}

/// One config of each kind (int8's blocks and top-k's k smaller than n).
const codec_config every_kind[] = {{codec_kind::none},
                                   {codec_kind::fp16},
                                   {codec_kind::bf16},
                                   {codec_kind::int8, 8},
                                   {codec_kind::topk, 256, 0.2}};

struct channel_stats {
  std::size_t messages = 0, delivered = 0, invariant_checks = 0;
  std::size_t outcomes[5] = {};
  std::uint64_t bytes = 0;
};

/// Sends `messages` running-sum messages of a growing rho over a channel that
/// loses 20 %, duplicates 10 % and reorders; checks the receiver after each delivery.
channel_stats run_channel(const codec_config& c, std::size_t n, std::uint32_t resync,
                          std::size_t messages, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::normal_distribution<double> step(0.05, 1.0);
  running_sum_sender sender(c, n, resync);
  running_sum_receiver receiver(n);
  std::vector<std::vector<double>> history{std::vector<double>(n, 0.0)};  // sent() after seq s
  std::vector<double> rho(n, 0.0);
  std::vector<bytes> in_flight;
  channel_stats st;
  const auto deliver = [&](std::size_t at) {
    const bytes m = std::move(in_flight[at]);
    in_flight.erase(in_flight.begin() + static_cast<std::ptrdiff_t>(at));
    const auto r = receiver.receive(m.data(), m.size());
    ++st.delivered;
    ++st.outcomes[static_cast<int>(r.outcome)];
    BOOST_REQUIRE_MESSAGE(r.outcome != receive_outcome::malformed, r.error);
    // The receiver holds exactly what the sender had sent as of a message it applied.
    BOOST_REQUIRE(receiver.applied_seq() < history.size());
    BOOST_REQUIRE(same_bits(receiver.sum(), history[receiver.applied_seq()]));
    if (receiver.applied_seq() == sender.seq()) {  // up to date: the mass is all accounted for
      const auto unsent = sender.unsent();
      for (std::size_t i = 0; i < n; ++i)
        BOOST_REQUIRE(std::abs(unsent[i] + receiver.sum()[i] - rho[i]) <=
                      1e-12 * std::max(1.0, std::abs(rho[i])));
      ++st.invariant_checks;
    }
  };
  for (std::size_t t = 0; t < messages; ++t) {
    for (auto& x : rho)
      x += step(g) * (1 + static_cast<double>(t % 7));  // increments of varied sizes
    auto m = sender.encode(rho.data());
    history.push_back(sender.sent());
    ++st.messages;
    st.bytes += m.size();
    if (u(g) >= 0.2) {
      if (u(g) < 0.1)
        in_flight.push_back(m);
      in_flight.push_back(std::move(m));
    }
    while (in_flight.size() > 4 || (!in_flight.empty() && u(g) < 0.5))
      deliver(std::uniform_int_distribution<std::size_t>(0, in_flight.size() - 1)(g));
  }
  while (!in_flight.empty())
    deliver(in_flight.size() - 1);
  // A final full message, delivered: both ends hold rho itself.
  const auto last = sender.encode(rho.data(), true);
  history.push_back(sender.sent());
  in_flight.push_back(last);
  deliver(0);
  BOOST_TEST(same_bits(receiver.sum(), rho));
  return st;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(codec)

BOOST_AUTO_TEST_CASE(running_sums_survive_loss_duplicates_and_reordering) {
  const std::size_t n = 64;
  const std::uint32_t resync = 16;
  for (const auto& c : every_kind) {
    const auto st = run_channel(c, n, resync, 3000, 17);
    const auto& o = st.outcomes;
    const double ratio = static_cast<double>(st.bytes) / (8.0 * n * st.messages);
    BOOST_TEST_MESSAGE(to_string(c.kind)
                       << " running sum, n " << n << ", full every " << resync << ": "
                       << st.messages << " messages, " << st.delivered << " delivered (" << o[0]
                       << " increments and " << o[1] << " full applied, " << o[2] << " stale, "
                       << o[3] << " gaps), mass checked " << st.invariant_checks
                       << " times; bytes per message " << st.bytes / st.messages << " = " << ratio
                       << "x the float64 sum (" << 8 * n << ")");
    BOOST_TEST(o[0] > 0u);
    BOOST_TEST(o[1] > 0u);
    BOOST_TEST(o[2] > 0u);  // duplicates and late messages were seen and ignored
    BOOST_TEST(o[3] > 0u);  // losses left increments without their base
    BOOST_TEST(st.invariant_checks > 50u);
    if (c.kind != codec_kind::none)
      BOOST_TEST(ratio < 0.5);
  }
}

BOOST_AUTO_TEST_CASE(an_increment_applies_only_on_its_base) {
  const std::size_t n = 3;
  running_sum_sender s({codec_kind::fp16}, n, 4);
  running_sum_receiver r(n);
  std::vector<double> rho{1.5, -2.25, 1e-3};
  const auto m1 = s.encode(rho.data());
  rho[0] += 1;
  const auto m2 = s.encode(rho.data());
  rho[1] += 1;
  const auto m3 = s.encode(rho.data());
  rho[2] += 1;
  const auto m4 = s.encode(rho.data());  // seq 4: full
  BOOST_TEST(m4.size() == running_sum_header_bytes + 8 * n);
  BOOST_TEST(m1.size() < m4.size());
  BOOST_TEST((r.receive(m2.data(), m2.size()).outcome == receive_outcome::gap));  // m1 lost
  BOOST_TEST(r.applied_seq() == 0u);
  BOOST_TEST((r.receive(m1.data(), m1.size()).outcome == receive_outcome::applied_increment));
  BOOST_TEST((r.receive(m1.data(), m1.size()).outcome == receive_outcome::stale));  // duplicate
  BOOST_TEST((r.receive(m3.data(), m3.size()).outcome == receive_outcome::gap));
  BOOST_TEST((r.receive(m4.data(), m4.size()).outcome == receive_outcome::applied_full));
  BOOST_TEST(same_bits(r.sum(), rho));
  BOOST_TEST((r.receive(m2.data(), m2.size()).outcome == receive_outcome::stale));  // late
  BOOST_TEST((r.receive(m4.data(), m4.size()).outcome == receive_outcome::stale));
  BOOST_TEST(same_bits(r.sum(), rho));
  // An increment too large for fp16 goes out as the exact sum instead.
  rho[0] += 1e6;
  const auto m5 = s.encode(rho.data());
  BOOST_TEST(m5.size() == running_sum_header_bytes + 8 * n);
  BOOST_TEST((r.receive(m5.data(), m5.size()).outcome == receive_outcome::applied_full));
  BOOST_TEST(same_bits(r.sum(), s.sent()));
}

// A message numbered above what its transport's packet allows (max_seq) is
// refused before it can become the newest and silence the stream.
BOOST_AUTO_TEST_CASE(a_message_numbered_above_its_packet_is_refused) {
  const std::size_t n = 2;
  running_sum_sender s({codec_kind::int8}, n, 4);
  running_sum_receiver r(n);
  std::vector<double> rho{1, 2};
  const auto m1 = s.encode(rho.data());
  rho[0] += 0.5;
  const auto m2 = s.encode(rho.data());
  const auto refused = r.receive(m2.data(), m2.size(), 1);
  BOOST_TEST((refused.outcome == receive_outcome::malformed));
  BOOST_TEST(refused.error.find("running-sum message 2 in packet 1") != std::string::npos,
             refused.error);
  BOOST_TEST(r.applied_seq() == 0u);
  BOOST_TEST((r.receive(m1.data(), m1.size(), 1).outcome == receive_outcome::applied_increment));
  BOOST_TEST((r.receive(m2.data(), m2.size(), 2).outcome == receive_outcome::applied_increment));
  BOOST_TEST(r.applied_seq() == 2u);
}

BOOST_AUTO_TEST_CASE(an_exact_sum_of_floats_travels_in_four_bytes_a_value) {
  // A replica of a float model: its exact messages need no float64.
  const std::size_t n = 4;
  running_sum_sender s({codec_kind::int8}, n, 2);
  running_sum_receiver r(n);
  std::vector<double> x{0.1f, -3.5f, 1e-20f, 65504.0f};  // each a float
  const auto m1 = s.encode(x.data(), true);
  BOOST_TEST(m1.size() == running_sum_header_bytes + 4 * n);
  BOOST_TEST((r.receive(m1.data(), m1.size()).outcome == receive_outcome::applied_full));
  BOOST_TEST(same_bits(r.sum(), x));
  x[2] = 0.1;  // not a float: the exact message takes 8 bytes a value
  (void)s.encode(x.data());
  const auto m3 = s.encode(x.data(), true);
  BOOST_TEST(m3.size() == running_sum_header_bytes + 8 * n);
  // A four-byte message announcing a non-finite value, or of the wrong size, is refused.
  auto bad = m1;
  bad[running_sum_header_bytes + 3] = 0x7f;
  bad[running_sum_header_bytes + 2] = 0xc0;  // the first value: a NaN
  running_sum_receiver fresh(n);
  const auto res = fresh.receive(bad.data(), bad.size());
  BOOST_TEST((res.outcome == receive_outcome::malformed));
  BOOST_TEST(res.error.find("not finite") != std::string::npos, res.error);
  bad = m1;
  bad.pop_back();
  BOOST_TEST((fresh.receive(bad.data(), bad.size()).outcome == receive_outcome::malformed));
}

BOOST_AUTO_TEST_CASE(hostile_blobs_are_refused_with_the_reason) {
  std::vector<float> v(37);
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<float>(i) - 18.5f;
  for (const auto& c : every_kind) {
    const auto blob = encode(c, v.data(), v.size());
    BOOST_TEST(error_of(blob).empty());
    for (std::size_t len = 0; len < blob.size(); ++len)
      BOOST_TEST(contains(error_of(bytes(blob.begin(), blob.begin() + len)), "truncated"));
    auto longer = blob;
    longer.push_back(0);
    BOOST_TEST(contains(error_of(longer), "trailing"));
    auto version = blob;
    version[0] = 2;
    BOOST_TEST(contains(error_of(version), "version"));
    auto reserved = blob;
    reserved[3] = 1;
    BOOST_TEST(contains(error_of(reserved), "reserved"));
    for (std::uint8_t k : {5, 200, 255}) {
      auto bad = blob;
      bad[1] = k;
      BOOST_TEST(contains(error_of(bad), "bad kind"));
    }
    auto huge = blob;
    put_u32(huge, 4, 0xffffffffu);
    BOOST_TEST(contains(error_of(huge, std::numeric_limits<std::size_t>::max()), "bound"));
    BOOST_TEST(contains(error_of(blob, v.size() - 1), "bound"));
    float sentinel[37];
    std::fill(sentinel, sentinel + 37, 7.0f);
    const auto wrong_n = decode_into(blob.data(), blob.size(), sentinel, 36);
    BOOST_TEST((wrong_n && contains(*wrong_n, "36")));
    BOOST_TEST(std::all_of(sentinel, sentinel + 37, [](float x) { return x == 7.0f; }));
  }
  const std::size_t h = header_bytes;
  // top-k announcing 2^32 - 1 elements with one kept value: only the bound stops it.
  bytes topk_huge(h + 8, 0);
  topk_huge[0] = 1;
  topk_huge[1] = static_cast<std::uint8_t>(codec_kind::topk);
  put_u32(topk_huge, 4, 0xffffffffu);
  put_u32(topk_huge, 8, 1);
  BOOST_TEST(contains(error_of(topk_huge, std::numeric_limits<std::size_t>::max()), "bound"));
  const auto i8 = encode({codec_kind::int8, 8}, v.data(), v.size());
  const float bad_scales[] = {std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(), -1.0f};
  for (float s : bad_scales) {
    auto bad = i8;
    put_f32(bad, h + 4 * 2, s);
    BOOST_TEST(contains(error_of(bad), "scale"));
  }
  auto minus128 = i8;
  minus128[h + 4 * 5 + 3] = 0x80;
  BOOST_TEST(contains(error_of(minus128), "-128"));
  auto block0 = i8;
  put_u32(block0, 8, 0);
  BOOST_TEST(contains(error_of(block0), "block 0"));
  const auto tk = encode({codec_kind::topk, 256, 0.2}, v.data(), v.size());  // k = 7
  auto out_of_range = tk;
  put_u32(out_of_range, h + 4 * 6, 37);
  BOOST_TEST(contains(error_of(out_of_range), "out of range"));
  auto unsorted = tk;
  put_u32(unsorted, h, 36);
  BOOST_TEST(contains(error_of(unsorted), "strictly increasing"));
  auto repeated = tk;
  std::copy(tk.begin() + h, tk.begin() + h + 4, repeated.begin() + h + 4);
  BOOST_TEST(contains(error_of(repeated), "strictly increasing"));
  auto k_above_n = tk;
  put_u32(k_above_n, 4, 6);
  BOOST_TEST(contains(error_of(k_above_n), "k 7 > n 6"));
  auto fp16_param = encode({codec_kind::fp16}, v.data(), v.size());
  put_u32(fp16_param, 8, 3);
  BOOST_TEST(contains(error_of(fp16_param), "param"));
}

BOOST_AUTO_TEST_CASE(hostile_running_sum_messages_change_nothing) {
  const std::size_t n = 5;
  running_sum_sender s({codec_kind::int8, 2}, n, 3);
  running_sum_receiver r(n);
  std::vector<double> rho{1, 2, 3, 4, 5};
  const auto inc = s.encode(rho.data());
  (void)s.encode(rho.data());
  const auto full = s.encode(rho.data());
  const auto refused = [&](bytes m, const char* word) {
    const auto before = r.sum();
    const auto res = r.receive(m.data(), m.size());
    BOOST_TEST(contains(res.error, word), res.error);
    return res.outcome == receive_outcome::malformed && same_bits(before, r.sum()) &&
           r.applied_seq() == 0;
  };
  BOOST_TEST(refused(bytes(inc.begin(), inc.begin() + 10), "truncated"));
  BOOST_TEST(refused(bytes(inc.begin(), inc.end() - 1), "truncated"));
  auto m = inc;
  m[1] = 9;
  BOOST_TEST(refused(m, "type"));
  m = inc;
  put_u32(m, 4, 6);
  BOOST_TEST(refused(m, "expected"));
  m = inc;
  m[8] = 0;  // seq 0
  BOOST_TEST(refused(m, "base"));
  m = full;
  m[16] = 0;  // base 0 for seq 3
  BOOST_TEST(refused(m, "base"));
  m = full;
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::memcpy(m.data() + running_sum_header_bytes + 8, &nan, 8);
  BOOST_TEST(refused(m, "not finite"));
  m = full;
  m.push_back(0);
  BOOST_TEST(refused(m, "payload"));
  m = inc;
  put_u32(m, running_sum_header_bytes + 4, 4);  // the blob's own n
  BOOST_TEST(refused(m, "increment"));
  // Random corruption: never a crash, never a change unless the message applied.
  std::mt19937 g(99);
  std::size_t applied = 0;
  for (int t = 0; t < 20000; ++t) {
    running_sum_receiver fresh(n);
    bytes x = t % 2 ? inc : full;
    for (int f = 0; f < 1 + t % 4; ++f)
      x[g() % x.size()] ^= static_cast<std::uint8_t>(1u << (g() % 8));
    if (t % 5 == 0)
      x.resize(g() % (x.size() + 1));
    const auto res = fresh.receive(x.data(), x.size());
    if (res.outcome == receive_outcome::malformed)
      BOOST_REQUIRE(same_bits(fresh.sum(), std::vector<double>(n, 0.0)));
    else
      applied += res.outcome == receive_outcome::applied_full ||
                 res.outcome == receive_outcome::applied_increment;
    const auto d =
      decode(x.data() + std::min<std::size_t>(x.size(), running_sum_header_bytes),
             x.size() - std::min<std::size_t>(x.size(), running_sum_header_bytes), 1000);
    BOOST_REQUIRE(d.ok() ? d.values.size() <= 1000 : d.values.empty());
  }
  BOOST_TEST_MESSAGE("20000 corrupted messages: " << applied
                                                  << " still applied (flips in "
                                                     "values), the rest refused");
}

BOOST_AUTO_TEST_SUITE_END()
