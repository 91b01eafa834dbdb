/// link.codec on the shared runtime (actors/link_codec.hpp): the coders
/// against the kernel codecs, and every algorithm that codes its packets
/// reaching its config's target with a fraction of the bytes.
#include <boost/test/unit_test.hpp>

#include <cmath>

#include "atrain.pb.h"
#include "atrain/actors/link_codec.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace codec = atrain::codec;

namespace {

atrain::stream_coding one_of_each(std::uint32_t kind) {
  return kind == 1   ? atrain::stream_coding::values
         : kind == 2 ? atrain::stream_coding::running_sum
         : kind == 4 ? atrain::stream_coding::replica
                     : atrain::stream_coding::raw;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(link_codec)

BOOST_AUTO_TEST_CASE(values_are_coded_per_receiver_with_their_own_residual) {
  const atrain::codec_settings s{{codec::codec_kind::int8, 4, 0.01, true}, 16};
  atrain::link_coder coder(s, one_of_each);
  codec::error_feedback_encoder to_a(s.config, 8), to_b(s.config, 8);
  const std::vector<float> v1{1, -2, 3.3f, 0.01f, 5, 6, -7, 8.8f};
  const std::vector<float> v2{0.5f, 0.25f, -3, 2, 1e-3f, 9, 1, -1};
  // Receiver 5 gets both vectors, receiver 6 only the second: separate residuals.
  for (const auto& [to, v, ref] :
       {std::tuple{5u, &v1, &to_a}, std::tuple{5u, &v2, &to_a}, std::tuple{6u, &v2, &to_b}}) {
    atrain::packet p;
    p.to = to;
    p.kind = 1;
    p.f = atrain::float_blob{*v};
    coder.encode(p);
    BOOST_TEST(p.f.empty());
    const auto expected = ref->encode(v->data(), v->size());
    BOOST_TEST(p.coded.vec() == expected);
    const auto opened = atrain::open_values(p, 8);
    BOOST_REQUIRE(opened.has_value());
    const auto decoded = codec::decode(expected.data(), expected.size(), 8);
    BOOST_TEST(opened->f.vec() == decoded.values);
  }
  std::string why;
  atrain::packet wrong;
  wrong.coded = atrain::blob<std::uint8_t>{to_a.encode(v1.data(), 8)};
  BOOST_TEST(!atrain::open_values(wrong, 9, &why).has_value());
  BOOST_TEST(!why.empty());
  // A raw stream is left alone.
  atrain::packet raw;
  raw.kind = 3;
  raw.f = atrain::float_blob{v1};
  coder.encode(raw);
  BOOST_TEST(raw.coded.empty());
  BOOST_TEST(raw.f.vec() == v1);
}

BOOST_AUTO_TEST_CASE(running_sums_decode_to_the_senders_sum_and_survive_a_save) {
  const atrain::codec_settings s{{codec::codec_kind::int8, 256, 0.01, false}, 4};
  atrain::link_coder coder(s, one_of_each);
  atrain::sum_decoder decoder(3);
  std::vector<double> rho{0, 0, 0};
  for (int m = 1; m <= 9; ++m) {
    for (std::size_t i = 0; i < rho.size(); ++i)
      rho[i] += 0.1 * m * static_cast<double>(i + 1);
    atrain::packet p;
    p.from = 4;
    p.to = 1;
    p.kind = 2;
    p.seq = static_cast<std::uint64_t>(m);
    p.d = atrain::double_blob{rho};
    coder.encode(p);
    BOOST_TEST(p.d.empty());
    const auto r = decoder.receive(p);
    // The first message and every 4th are exact; the others increments.
    BOOST_TEST((r.outcome == codec::receive_outcome::applied_full) == (m == 1 || m % 4 == 0));
    BOOST_TEST((r.outcome != codec::receive_outcome::malformed));
    if (r.outcome == codec::receive_outcome::applied_full)
      BOOST_TEST(decoder.sum(4, 2) == rho);
    for (std::size_t i = 0; i < rho.size(); ++i)
      BOOST_TEST(std::abs(decoder.sum(4, 2)[i] - rho[i]) <= 0.01 * std::abs(rho[i]));
    if (m == 5) {  // save both ends and go on from the copies
      atrain::proto::CodecState state;
      coder.save(state);
      decoder.save(state);
      BOOST_TEST(atrain::check_codec_state(state, 3).empty());
      BOOST_TEST(!atrain::check_codec_state(state, 4).empty());
      atrain::link_coder coder2(s, one_of_each);
      atrain::sum_decoder decoder2(3);
      coder2.restore(state);
      decoder2.restore(state);
      coder = coder2;
      decoder = decoder2;
    }
  }
}

BOOST_AUTO_TEST_CASE(a_replica_follows_the_model_even_through_top_k) {
  // Top-k 25 % of each change from the receiver's copy: the copy carries what
  // was not sent, so sending an unchanged model again closes the gap.
  const atrain::codec_settings s{{codec::codec_kind::topk, 256, 0.25, false}, 1000};
  atrain::link_coder coder(s, one_of_each);
  atrain::sum_decoder decoder(8);
  std::vector<float> x{1, 2, 3, 4, 5, 6, 7, 8};
  const auto send = [&](std::uint64_t seq) {
    atrain::packet p;
    p.from = 2;
    p.to = 3;
    p.kind = 4;
    p.seq = seq;
    p.f = atrain::float_blob{x};
    coder.encode(p);
    BOOST_TEST(p.f.empty());
    const auto r = decoder.receive(p);
    BOOST_TEST((r.outcome != codec::receive_outcome::malformed));
    double gap = 0;
    for (std::size_t i = 0; i < x.size(); ++i)
      gap = std::max(gap, std::abs(decoder.sum(2, 4)[i] - static_cast<double>(x[i])));
    return gap;
  };
  BOOST_TEST(send(1) == 0.0);  // the first message is exact
  for (auto& v : x)
    v += 0.5f * v;  // every value changes; 2 of 8 changes per message
  const double first = send(2);
  double last = first;
  for (std::uint64_t seq = 3; seq <= 6; ++seq)
    last = send(seq);
  BOOST_TEST(first > 0.5);
  BOOST_TEST(last == 0.0);  // 4 messages of 2 values: every change delivered
}

BOOST_AUTO_TEST_CASE(every_coding_algorithm_reaches_its_target_with_a_third_of_the_bytes) {
  for (const char* file :
       {"adpsgd.textproto", "dpsgd.textproto", "dasgd.textproto", "async_ps.textproto"}) {
    const auto raw =
      atrain::run_experiment(t::config("algorithms/" + std::string{file}, {"progress=false"}));
    const auto int8 = atrain::run_experiment(
      t::config("algorithms/" + std::string{file},
                {"progress=false", "link.codec={kind: INT8 error_feedback: true}"}));
    BOOST_REQUIRE(raw);
    BOOST_REQUIRE(int8);
    BOOST_TEST(int8->error().empty(), int8->error());
    BOOST_TEST(int8->stop_reason() == "target accuracy reached", file);
    const double ratio = t::bytes_per_gradient(*int8) / t::bytes_per_gradient(*raw);
    BOOST_TEST_MESSAGE(file << ": int8 " << t::bytes_per_gradient(*int8) << " bytes per gradient ("
                            << ratio << "x raw); target at " << int8->time_to_target() << " s (raw "
                            << raw->time_to_target() << " s)");
    BOOST_TEST(ratio < 0.35, file << " " << ratio);
  }
  // LOSCAR sends 10 % of the coordinates, K = 12 values at d = 124: headers
  // weigh (24 + 4K bytes raw against 24 + 12 + 4 + K coded), as in the rings.
  {
    const auto raw =
      atrain::run_experiment(t::config("algorithms/loscar.textproto", {"progress=false"}));
    const auto int8 = atrain::run_experiment(
      t::config("algorithms/loscar.textproto",
                {"progress=false", "link.codec={kind: INT8 error_feedback: true}"}));
    BOOST_REQUIRE(raw);
    BOOST_REQUIRE(int8);
    BOOST_TEST(int8->stop_reason() == "target accuracy reached");
    const double ratio = t::bytes_per_gradient(*int8) / t::bytes_per_gradient(*raw);
    BOOST_TEST(std::abs(ratio - (40.0 + 12) / (24.0 + 4 * 12)) < 0.01, ratio);
  }
  // The ring algorithms code their own chunks (no error feedback: every rank
  // must end with the same sum).
  for (const char* file : {"allreduce.textproto", "local_sgd.textproto", "diloco.textproto"}) {
    const auto raw =
      atrain::run_experiment(t::config("algorithms/" + std::string{file}, {"progress=false"}));
    const auto int8 = atrain::run_experiment(
      t::config("algorithms/" + std::string{file}, {"progress=false", "link.codec={kind: INT8}"}));
    BOOST_REQUIRE(raw);
    BOOST_REQUIRE(int8);
    BOOST_TEST(int8->error().empty(), int8->error());
    BOOST_TEST(int8->packets_rejected() == 0u);
    BOOST_TEST(int8->stop_reason() == "target accuracy reached", file);
    const double ratio = t::bytes_per_gradient(*int8) / t::bytes_per_gradient(*raw);
    BOOST_TEST_MESSAGE(file << ": int8 " << t::bytes_per_gradient(*int8) << " bytes per gradient ("
                            << ratio << "x raw); target at " << int8->time_to_target() << " s (raw "
                            << raw->time_to_target() << " s)");
    // A chunk of L = 124/8 values: 24 + 4L bytes raw, 24 + 12 + 4 + L coded
    // (packet header, codec header, one scale, a byte a value): headers weigh.
    const double L = 124.0 / 8;
    BOOST_TEST(std::abs(ratio - (40 + L) / (24 + 4 * L)) < 0.01, file << " " << ratio);
  }
  BOOST_TEST(t::quickstart_refusal({"algorithm.allreduce={step_size: 2}",
                                    "link.codec={kind: INT8 error_feedback: true}"})
               .find("link.codec.error_feedback: a ring codes each chunk once") !=
             std::string::npos);
}

BOOST_AUTO_TEST_CASE(a_flow_controlled_outbox_codes_what_leaves_and_conserves_mass) {
  // link.window: packets wait behind a busy route and the newest wins; the
  // running sums are coded only when they leave, so no increment is skipped.
  auto plan = t::quickstart(t::small_task(
    {"link.bandwidth_bytes_per_second=60000", "link.window=2", "link.codec={kind: BF16}"}));
  std::size_t checks = 0;
  double worst = 0;
  const auto report = t::run_checking_mass(plan, checks, worst);
  BOOST_TEST(report.error().empty(), report.error());
  BOOST_TEST(checks > 1000u);
  BOOST_TEST(worst < 1e-10);
  BOOST_TEST(report.packets_rejected() == 0u);
}

BOOST_AUTO_TEST_SUITE_END()
