// Running sums over a lossy link (codec.hpp: running_sum_sender/receiver).
//
// Message = header (24 bytes, little-endian) + payload:
//   byte 0 version (1), byte 1 type (1 increment, 2 full), bytes 2-3 zero,
//   u32 n, u64 seq (>= 1), u64 base (= seq - 1: the message it extends)
//   increment  a codec blob (codec.cpp) of n floats: decode(rho - sent())
//   full       n x f64: rho itself
//   full32     n x f32: rho itself, when every value is a float (a replica
//              of a float model): half the bytes of `full`, the same sum
// Both ends add the same decoded floats to a float64 sum in the same order, so
// the receiver's sum after message s is the sender's sent() after s, bit for bit.
// An increment applies only on its base; a full message on anything older.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "atrain/kernels/codec.hpp"
#include "codec_internal.hpp"

namespace atrain::codec {

using namespace wire;

namespace {

constexpr std::uint8_t type_increment = 1;
constexpr std::uint8_t type_full = 2;
constexpr std::uint8_t type_full32 = 3;

std::vector<std::uint8_t> message_header(std::uint8_t type, std::size_t n, std::uint64_t seq,
                                         std::size_t payload) {
  std::vector<std::uint8_t> out(running_sum_header_bytes + payload);
  out[0] = 1;
  out[1] = type;
  put_u32(out.data() + 4, static_cast<std::uint32_t>(n));
  put_u64(out.data() + 8, seq);
  put_u64(out.data() + 16, seq - 1);
  return out;
}

bool fits_float(double x) {
  return std::abs(x) <= static_cast<double>(std::numeric_limits<float>::max());
}

}  // namespace

running_sum_sender::running_sum_sender(const codec_config& config, std::size_t n,
                                       std::uint32_t resync_every)
  : config_(config), resync_every_(resync_every), sent_(n, 0.0), last_rho_(n, 0.0), increment_(n),
    decoded_(n) {
  if (auto why = validate(config))
    throw std::invalid_argument("running_sum_sender: " + *why);
  if (n > max_elements)
    throw std::invalid_argument("running_sum_sender: " + std::to_string(n) + " elements, at most " +
                                std::to_string(max_elements));
  if (resync_every == 0)
    throw std::invalid_argument("running_sum_sender: resync_every must be at least 1");
}

std::vector<std::uint8_t> running_sum_sender::encode(const double* rho, bool full) {
  const std::size_t n = sent_.size();
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(rho[i]))
      throw std::invalid_argument("running_sum_sender: rho[" + std::to_string(i) +
                                  "] is not finite");
  ++seq_;
  last_rho_.assign(rho, rho + n);
  bool exact = full || seq_ % resync_every_ == 0;
  for (std::size_t i = 0; i < n && !exact; ++i) {
    const double d = rho[i] - sent_[i];
    exact = !fits_float(d);
    increment_[i] = exact ? 0.0f : static_cast<float>(d);
  }
  if (!exact) {
    const auto blob = codec::encode(config_, increment_.data(), n);
    (void)decode_into(blob.data(), blob.size(), decoded_.data(), n);  // our own blob is valid
    for (std::size_t i = 0; i < n && !exact; ++i)
      exact = !std::isfinite(decoded_[i]);  // fp16 overflow: send the sum instead
    if (!exact) {
      auto out = message_header(type_increment, n, seq_, blob.size());
      std::copy(blob.begin(), blob.end(), out.begin() + running_sum_header_bytes);
      for (std::size_t i = 0; i < n; ++i)
        sent_[i] += static_cast<double>(decoded_[i]);
      return out;
    }
  }
  sent_ = last_rho_;
  const bool floats = std::all_of(
    rho, rho + n, [](double x) { return static_cast<double>(static_cast<float>(x)) == x; });
  auto out = message_header(floats ? type_full32 : type_full, n, seq_, (floats ? 4 : 8) * n);
  std::uint8_t* p = out.data() + running_sum_header_bytes;
  for (std::size_t i = 0; i < n; ++i) {
    if (floats) {
      const float x = static_cast<float>(rho[i]);
      std::uint32_t bits;
      std::memcpy(&bits, &x, 4);
      put_u32(p + 4 * i, bits);
    } else {
      std::uint64_t bits;
      std::memcpy(&bits, &rho[i], 8);
      put_u64(p + 8 * i, bits);
    }
  }
  return out;
}

std::vector<double> running_sum_sender::unsent() const {
  std::vector<double> out(sent_.size());
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = last_rho_[i] - sent_[i];
  return out;
}

bool running_sum_sender::restore(std::uint64_t seq, const std::vector<double>& sent,
                                 const std::vector<double>& last) {
  const auto finite = [](const std::vector<double>& v) {
    return std::all_of(v.begin(), v.end(), [](double x) { return std::isfinite(x); });
  };
  if (sent.size() != sent_.size() || last.size() != sent_.size() || !finite(sent) || !finite(last))
    return false;
  seq_ = seq;
  sent_ = sent;
  last_rho_ = last;
  return true;
}

running_sum_receiver::running_sum_receiver(std::size_t n) : sum_(n, 0.0), decoded_(n) {
  if (n > max_elements)
    throw std::invalid_argument("running_sum_receiver: " + std::to_string(n) +
                                " elements, at most " + std::to_string(max_elements));
}

receive_result running_sum_receiver::receive(const std::uint8_t* data, std::size_t size,
                                             std::uint64_t max_seq) {
  const auto refuse = [](std::string why) {
    return receive_result{receive_outcome::malformed, std::move(why)};
  };
  const std::size_t n = sum_.size();
  if (size < running_sum_header_bytes)
    return refuse("truncated: " + std::to_string(size) + " bytes, the header needs " +
                  std::to_string(running_sum_header_bytes));
  if (data[0] != 1)
    return refuse("unsupported version " + std::to_string(data[0]) + " (expected 1)");
  const std::uint8_t type = data[1];
  if (type != type_increment && type != type_full && type != type_full32)
    return refuse("bad message type " + std::to_string(type));
  if (data[2] != 0 || data[3] != 0)
    return refuse("reserved header bytes are not zero");
  if (get_u32(data + 4) != n)
    return refuse("n " + std::to_string(get_u32(data + 4)) + " where " + std::to_string(n) +
                  " was expected");
  const std::uint64_t seq = get_u64(data + 8);
  if (seq == 0 || get_u64(data + 16) != seq - 1)
    return refuse("seq " + std::to_string(seq) + " with base " +
                  std::to_string(get_u64(data + 16)) + " (a base must be seq - 1)");
  if (seq > max_seq)
    return refuse("running-sum message " + std::to_string(seq) + " in packet " +
                  std::to_string(max_seq));
  const std::uint8_t* p = data + running_sum_header_bytes;
  const std::size_t payload = size - running_sum_header_bytes;
  if (type != type_increment) {
    const std::size_t width = type == type_full ? 8 : 4;
    if (payload != width * n)
      return refuse("full message of " + std::to_string(payload) + " payload bytes, expected " +
                    std::to_string(width * n));
    const auto value = [&](std::size_t i) {
      if (width == 8) {
        const std::uint64_t bits = get_u64(p + 8 * i);
        double x;
        std::memcpy(&x, &bits, 8);
        return x;
      }
      const std::uint32_t bits = get_u32(p + 4 * i);
      float x;
      std::memcpy(&x, &bits, 4);
      return static_cast<double>(x);
    };
    for (std::size_t i = 0; i < n; ++i)
      if (!std::isfinite(value(i)))
        return refuse("full message value " + std::to_string(i) + " is not finite");
    if (seq <= applied_seq_)
      return {receive_outcome::stale, {}};
    for (std::size_t i = 0; i < n; ++i)
      sum_[i] = value(i);
    applied_seq_ = seq;
    return {receive_outcome::applied_full, {}};
  }
  if (auto why = decode_into(p, payload, decoded_.data(), n))
    return refuse("increment: " + *why);
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(decoded_[i]))
      return refuse("increment value " + std::to_string(i) + " is not finite");
  if (seq - 1 != applied_seq_)
    return {seq <= applied_seq_ ? receive_outcome::stale : receive_outcome::gap, {}};
  for (std::size_t i = 0; i < n; ++i)
    sum_[i] += static_cast<double>(decoded_[i]);
  applied_seq_ = seq;
  return {receive_outcome::applied_increment, {}};
}

bool running_sum_receiver::restore(std::uint64_t applied_seq, const std::vector<double>& sum) {
  if (sum.size() != sum_.size() ||
      !std::all_of(sum.begin(), sum.end(), [](double x) { return std::isfinite(x); }))
    return false;
  applied_seq_ = applied_seq;
  sum_ = sum;
  return true;
}

}  // namespace atrain::codec
