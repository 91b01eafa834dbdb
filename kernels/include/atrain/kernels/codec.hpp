#pragma once
/// Lossy codecs for the vectors a link carries (issue 19, the kernel layer):
/// fp16, bf16, int8 with a per-block scale, top-k sparsification, optional
/// error feedback, and a running-sum protocol whose float64 copies stay equal
/// on both ends (docs/ALGORITHMS.md, "Codecs (kernel layer)").
///
/// Every blob is little-endian with a 12-byte header (version, kind, n, param).
/// The encoders trust their caller (a bad config throws std::invalid_argument);
/// the decoders trust nothing: any byte string gives an error naming the reason,
/// never a crash, and no allocation is made before the header bounds it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace atrain::codec {

enum class codec_kind : std::uint8_t { none, fp16, bf16, int8, topk };

struct codec_config {
  codec_kind kind = codec_kind::none;
  std::uint32_t block = 256;    // int8: values per scale
  double topk_fraction = 0.01;  // topk: k = max(1, round(fraction * n)), at most n
  bool error_feedback = false;  // error_feedback_encoder carries the residual over
};

/// The most elements a blob may announce (2^28 floats, 1 GiB decoded); a
/// decoder's caller bounds n further (the model's dimension).
inline constexpr std::size_t max_elements = std::size_t{1} << 28;
inline constexpr std::size_t header_bytes = 12;

[[nodiscard]] const char* to_string(codec_kind kind);
/// The reason a config is unusable (block 0, fraction outside (0, 1]), or nothing.
[[nodiscard]] std::optional<std::string> validate(const codec_config& config);
/// top-k's k for n elements: max(1, round(fraction * n)), at most n (0 for n = 0).
[[nodiscard]] std::size_t topk_count(double fraction, std::size_t n);
/// Bytes of encode(config, v, n), exactly.
[[nodiscard]] std::size_t encoded_size(const codec_config& config, std::size_t n);

/// Encodes v[0, n). Throws std::invalid_argument for a bad config or n > max_elements.
[[nodiscard]] std::vector<std::uint8_t> encode(const codec_config& config, const float* v,
                                               std::size_t n);

/// A decoded vector, or why the bytes were refused (values empty then).
struct decode_result {
  std::vector<float> values;
  std::string error;
  [[nodiscard]] bool ok() const { return error.empty(); }
};

/// Decodes an untrusted blob announcing at most max_n elements (and at most
/// max_elements); allocates n floats only after the header and size check.
[[nodiscard]] decode_result decode(const std::uint8_t* data, std::size_t size, std::size_t max_n);
/// Decodes a blob that must announce exactly n elements into out[0, n); out is
/// written only when the whole blob is valid. Returns the reason it is not.
[[nodiscard]] std::optional<std::string> decode_into(const std::uint8_t* data, std::size_t size,
                                                     float* out, std::size_t n);

/// encode() with error feedback when config.error_feedback: the residual the
/// last messages could not carry is added to the next input before encoding,
/// and residual = (v + residual) - decode(encoded). Without it, plain encode().
class error_feedback_encoder {
public:
  error_feedback_encoder(const codec_config& config, std::size_t n);

  [[nodiscard]] std::vector<std::uint8_t> encode(const float* v, std::size_t n);
  [[nodiscard]] const std::vector<float>& residual() const { return residual_; }
  void reset();
  /// A checkpoint's residual; false (nothing changed) when its size is not n.
  [[nodiscard]] bool restore(const std::vector<float>& residual);

private:
  codec_config config_;
  std::vector<float> residual_;
  std::vector<float> corrected_;  // v + residual, what is encoded
  std::vector<float> decoded_;
};

/// Running sums (R-FAST's rho, push-sum mass) over a lossy, duplicating,
/// reordering link. Both ends keep the same float64 sum: the sender codes the
/// increment rho - sent(), and both add its decoded value; every resync_every-th
/// message (and any increment that would not be finite) carries the exact sum.
/// Message i (seq i >= 1) is relative to message i - 1; seq 0 is the zero sum.
class running_sum_sender {
public:
  /// Throws std::invalid_argument for a bad config, n > max_elements or resync_every 0.
  running_sum_sender(const codec_config& config, std::size_t n, std::uint32_t resync_every);

  /// The next message for the running sum rho[0, n); full forces an exact one.
  [[nodiscard]] std::vector<std::uint8_t> encode(const double* rho, bool full = false);
  /// The sum the receiver holds once it has applied every message so far.
  [[nodiscard]] const std::vector<double>& sent() const { return sent_; }
  /// rho - sent() for the last rho encoded: the part the algorithm still holds.
  [[nodiscard]] std::vector<double> unsent() const;
  [[nodiscard]] std::uint64_t seq() const { return seq_; }
  /// The last rho encoded (unsent() = last() - sent()).
  [[nodiscard]] const std::vector<double>& last() const { return last_rho_; }
  /// A checkpoint's state; false (nothing changed) when a size is not n or a
  /// value is not finite.
  [[nodiscard]] bool restore(std::uint64_t seq, const std::vector<double>& sent,
                             const std::vector<double>& last);

private:
  codec_config config_;
  std::uint32_t resync_every_;
  std::uint64_t seq_ = 0;
  std::vector<double> sent_;
  std::vector<double> last_rho_;
  std::vector<float> increment_;
  std::vector<float> decoded_;
};

enum class receive_outcome {
  applied_increment,
  applied_full,
  stale,      // a duplicate or an older message than the one applied last
  gap,        // an increment on a base the receiver does not hold (a message was lost)
  malformed,  // refused; error says why
};

struct receive_result {
  receive_outcome outcome;
  std::string error;
};

class running_sum_receiver {
public:
  explicit running_sum_receiver(std::size_t n);

  /// Applies an untrusted message when it extends the sum held, else ignores it.
  /// A message numbered above `max_seq` is malformed (a transport that numbers
  /// its packets passes the packet's: an honest sender codes at most one
  /// message per packet, so a forged number cannot silence the stream).
  [[nodiscard]] receive_result receive(const std::uint8_t* data, std::size_t size,
                                       std::uint64_t max_seq = UINT64_MAX);
  /// Equals the sender's sent() as of message applied_seq(), bit for bit.
  [[nodiscard]] const std::vector<double>& sum() const { return sum_; }
  [[nodiscard]] std::uint64_t applied_seq() const { return applied_seq_; }
  /// A checkpoint's state; false (nothing changed) when sum's size is not n
  /// or a value is not finite.
  [[nodiscard]] bool restore(std::uint64_t applied_seq, const std::vector<double>& sum);

private:
  std::uint64_t applied_seq_ = 0;
  std::vector<double> sum_;
  std::vector<float> decoded_;
};

/// Bytes of a running-sum message before its payload.
inline constexpr std::size_t running_sum_header_bytes = 24;

}  // namespace atrain::codec
