#pragma once
/// link.codec (issue 19): how a node's outbox codes the packets it sends and
/// how a receiver opens them (docs/ALGORITHMS.md "Codecs on links").
///
/// Coding happens once per packet and receiver, when the packet leaves the
/// outbox (after any merging behind a busy route), so a retransmission or a
/// duplicate carries the same bytes. The coded packet's f or d is empty; its
/// bytes (and the link's transmission time) are the coded size. Receivers
/// decode: values with open_values, running sums with a sum_decoder.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "atrain/kernels/codec.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

namespace proto {
class CodecState;
}  // namespace proto

/// How an algorithm's stream is coded (link_policy::coding).
enum class stream_coding : std::uint8_t {
  raw,          // sent as it is (control packets, sums an algorithm needs exact)
  values,       // f: models or gradients, coded value by value (error feedback if asked)
  running_sum,  // d: a running sum, coded increments on exact float64 copies
  /// f: a model the receiver keeps, coded as the change from the copy it
  /// holds (a running sum of the model's changes), decoded by a sum_decoder.
  replica,
  /// f: the sender's newest model, of which the receiver keeps the newest:
  /// `values` under FP16, BF16 and INT8 (no message depends on another, so
  /// a lost or replaced one costs nothing later), `replica` under TOPK
  /// (value by value it would zero most of the model).
  model,
};

/// Whether a `model` stream travels as a replica under this codec.
[[nodiscard]] inline bool models_as_replicas(const codec::codec_config& c) {
  return c.kind == codec::codec_kind::topk;
}

/// link_policy::coding of an algorithm whose every packet carries a model or
/// a gradient in f.
[[nodiscard]] inline stream_coding values_coding(std::uint32_t /*kind*/) {
  return stream_coding::values;
}

/// The spec's link.codec as coders use it.
struct codec_settings {
  codec::codec_config config;
  std::uint32_t resync_every = 16;
  [[nodiscard]] bool active() const noexcept { return config.kind != codec::codec_kind::none; }
};

/// A sender's coders, one per (receiver, stream).
class link_coder {
public:
  /// `mine`: the streams this outbox sends, when a node has several
  /// outboxes (checkpoints keep each one's coders apart); nullptr: all.
  link_coder(codec_settings settings, stream_coding (*coding)(std::uint32_t kind),
             bool (*mine)(std::uint32_t kind) = nullptr);

  /// Codes `p` for its receiver p.to in place (a raw stream, or a packet
  /// without that payload, is left as it is).
  void encode(packet& p);
  /// Starts every stream again (a new tracking epoch: new receivers, sums from 0).
  void reset() { values_.clear(), sums_.clear(); }
  /// Starts the streams to `receiver` again (a replacement worker there: its
  /// decoder holds no copy, so the next message is exact).
  void reset(std::uint32_t receiver);

  /// Appends its coders to s.sender; restore() takes back those of the
  /// streams it sends (a node's outboxes share one NodeState). Sizes are
  /// checked by check_codec_state first.
  void save(proto::CodecState& s) const;
  void restore(const proto::CodecState& s);

private:
  using key = std::pair<std::uint32_t, std::uint32_t>;  // (receiver, stream)
  [[nodiscard]] std::vector<std::uint8_t> encode_sum(const key& k, const double* v, std::size_t n);

  codec_settings settings_;
  stream_coding (*coding_)(std::uint32_t kind);
  bool (*mine_)(std::uint32_t kind);
  std::map<key, codec::error_feedback_encoder> values_;
  std::map<key, codec::running_sum_sender> sums_;  // running sums and replicas
  std::vector<double> widened_;                    // a replica's model in float64
};

/// A receiver's running sums and replicas, one per (sender, stream).
class sum_decoder {
public:
  explicit sum_decoder(std::size_t dim) : dim_(dim) {}

  /// Applies a running-sum packet's coded increment or exact sum. On
  /// applied_*, sum(p.from, p.kind) is the sender's sum as of p. A message
  /// numbered above the packet's own seq is malformed: an honest sender
  /// codes at most one message per packet it numbers.
  [[nodiscard]] codec::receive_result receive(const packet& p);
  [[nodiscard]] const std::vector<double>& sum(std::uint32_t from, std::uint32_t kind) const;
  /// Drops one stream's copy (it held what the receiver cannot use): the
  /// sender's next exact message starts it again.
  void forget(std::uint32_t from, std::uint32_t kind) { sums_.erase({from, kind}); }
  void reset() { sums_.clear(); }

  void save(proto::CodecState& s) const;
  void restore(const proto::CodecState& s);

private:
  std::size_t dim_;
  std::map<std::pair<std::uint32_t, std::uint32_t>, codec::running_sum_receiver> sums_;
};

/// `p` with its coded values decoded into f (a copy: blobs are shared). An
/// uncoded packet comes back as it is. nullopt when the bytes are malformed
/// or do not hold exactly `dim` values; `why` then says so.
[[nodiscard]] std::optional<packet> open_values(const packet& p, std::size_t dim,
                                                std::string* why = nullptr);

/// Empty when a checkpoint's codec part fits vectors of `dim` values, else why not.
[[nodiscard]] std::string check_codec_state(const proto::CodecState& s, std::size_t dim);

/// The spec's codec (plan.link) as coders take it.
struct link_settings;
[[nodiscard]] codec_settings codec_of(const link_settings& l);

/// An outbox's coder for the run (its algorithm's link_policy::coding;
/// `mine` as link_coder's), or nullptr when the spec asks for no codec.
struct run_plan;
[[nodiscard]] std::shared_ptr<link_coder> coder_for(const run_plan& plan,
                                                    bool (*mine)(std::uint32_t kind) = nullptr);

}  // namespace atrain
