// The codecs of codec.hpp: formats, conversions and the validating decoders.
//
// Blob = header (12 bytes, little-endian) + payload:
//   byte 0 version (1), byte 1 kind, bytes 2-3 zero, u32 n, u32 param
//   none  param 0      n x f32
//   fp16  param 0      n x u16 (IEEE binary16)
//   bf16  param 0      n x u16 (the high half of an f32)
//   int8  param block  ceil(n / block) x f32 scale, then n x i8 in [-127, 127]
//   topk  param k      k x u32 strictly increasing indices < n, then k x f32
// Conversions are integer code (no F16C, no FPU rounding mode), so a blob is
// the same bit for bit on every CPU; this file is compiled with
// -ffp-contract=off so no FMA changes the float arithmetic of int8 or the residual.
#include "atrain/kernels/codec.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <stdexcept>

#include "codec_internal.hpp"

namespace atrain::codec {

using namespace wire;

namespace {

std::uint16_t float_to_half(float f) {
  const std::uint32_t x = float_bits(f);
  const auto sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u)  // NaN: quiet, keeping the payload's top bits
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((ax >> 13) & 0x3ffu));
  if (ax >= 0x477ff000u)  // >= 65520 (65504 + half an ulp, a tie to even 2^16) and inf
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (ax >= 0x38800000u) {  // a normal half (|f| >= 2^-14): rebias, round to nearest even
    const std::uint32_t odd = (ax >> 13) & 1u;
    return static_cast<std::uint16_t>(sign | ((ax - 0x38000000u + 0xfffu + odd) >> 13));
  }
  const std::uint32_t exp = ax >> 23;
  if (exp < 102)  // |f| < 2^-25: rounds to zero (2^-25 itself ties to the even 0)
    return sign;
  // A subnormal half m * 2^-24 with m = round((1.mant) * 2^(exp - 127 + 24)).
  const std::uint32_t mant = (ax & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126 - exp;  // 14 .. 24
  std::uint32_t m = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1);
  const std::uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (m & 1u)))
    ++m;  // m = 0x400 is the smallest normal, which the bits already say
  return static_cast<std::uint16_t>(sign | m);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24 is exact in float
    const float mag = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -mag : mag;
  }
  if (exp == 31)
    return bits_float(sign | 0x7f800000u | (mant << 13));
  return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
}

std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u)  // NaN: quiet, sign and top payload kept
    return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  const std::uint32_t odd = (x >> 16) & 1u;
  return static_cast<std::uint16_t>((x + 0x7fffu + odd) >> 16);  // overflow lands on inf
}

float bf16_to_float(std::uint16_t h) {
  return bits_float(static_cast<std::uint32_t>(h) << 16);
}

std::size_t block_count(std::size_t n, std::uint32_t block) {
  return (n + block - 1) / block;
}

void require_valid(const codec_config& config, std::size_t n) {
  if (auto why = validate(config))
    throw std::invalid_argument("codec: " + *why);
  if (n > max_elements)
    throw std::invalid_argument("codec: " + std::to_string(n) + " elements, at most " +
                                std::to_string(max_elements));
}

std::uint32_t header_param(const codec_config& config, std::size_t n) {
  switch (config.kind) {
    case codec_kind::int8:
      return config.block;
    case codec_kind::topk:
      return static_cast<std::uint32_t>(topk_count(config.topk_fraction, n));
    default:
      return 0;
  }
}

/// Payload bytes for a kind, n and header param (the caller has bounded n and param).
std::uint64_t payload_bytes(codec_kind kind, std::uint64_t n, std::uint32_t param) {
  switch (kind) {
    case codec_kind::none:
      return 4 * n;
    case codec_kind::fp16:
    case codec_kind::bf16:
      return 2 * n;
    case codec_kind::int8:
      return 4 * block_count(n, param) + n;
    case codec_kind::topk:
      return 8 * std::uint64_t{param};
  }
  return 0;
}

/// Block b's scale max|v|/127 over its finite values (0 for a zero block).
float block_scale(const float* v, std::size_t len) {
  float mx = 0;
  for (std::size_t i = 0; i < len; ++i)
    if (std::isfinite(v[i]))
      mx = std::max(mx, std::abs(v[i]));
  return mx / 127.0f;
}

std::int8_t quantize(float v, float scale) {
  if (!(scale > 0) || !std::isfinite(v))  // a zero block, or a value int8 cannot carry
    return 0;
  const double q = std::nearbyint(static_cast<double>(v) / static_cast<double>(scale));
  return static_cast<std::int8_t>(std::clamp(q, -127.0, 127.0));
}

void encode_int8(const float* v, std::size_t n, std::uint32_t block, std::uint8_t* out) {
  std::uint8_t* q = out + 4 * block_count(n, block);
  for (std::size_t b = 0; b * block < n; ++b) {
    const std::size_t lo = b * block;
    const std::size_t len = std::min<std::size_t>(block, n - lo);
    const float scale = block_scale(v + lo, len);
    put_u32(out + 4 * b, float_bits(scale));
    for (std::size_t i = lo; i < lo + len; ++i)
      q[i] = static_cast<std::uint8_t>(quantize(v[i], scale));
  }
}

/// NaN ranks below every number, so the order stays strict and weak.
float magnitude(float x) {
  return std::isnan(x) ? -1.0f : std::abs(x);
}

void encode_topk(const float* v, std::size_t n, std::size_t k, std::uint8_t* out) {
  std::vector<std::uint32_t> idx(n);
  std::iota(idx.begin(), idx.end(), 0u);
  const auto larger = [v](std::uint32_t a, std::uint32_t b) {
    const float ma = magnitude(v[a]);
    const float mb = magnitude(v[b]);
    return ma > mb || (ma == mb && a < b);  // ties: the lower index wins
  };
  if (k < n)
    std::nth_element(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k), idx.end(), larger);
  std::sort(idx.begin(), idx.begin() + static_cast<std::ptrdiff_t>(k));
  for (std::size_t j = 0; j < k; ++j) {
    put_u32(out + 4 * j, idx[j]);
    put_u32(out + 4 * (k + j), float_bits(v[idx[j]]));
  }
}

struct header {
  codec_kind kind;
  std::uint32_t n;
  std::uint32_t param;
};

/// Checks everything but the payload's values; the blob's size must be exact.
std::optional<std::string> check_header(const std::uint8_t* data, std::size_t size,
                                        std::size_t max_n, header& h) {
  if (size < header_bytes)
    return "truncated: " + std::to_string(size) + " bytes, the header needs " +
           std::to_string(header_bytes);
  if (data[0] != 1)
    return "unsupported version " + std::to_string(data[0]) + " (expected 1)";
  if (data[1] > static_cast<std::uint8_t>(codec_kind::topk))
    return "bad kind " + std::to_string(data[1]);
  if (data[2] != 0 || data[3] != 0)
    return "reserved header bytes are not zero";
  h = {static_cast<codec_kind>(data[1]), get_u32(data + 4), get_u32(data + 8)};
  const std::size_t bound = std::min(max_n, max_elements);
  if (h.n > bound)
    return "n " + std::to_string(h.n) + " beyond the bound " + std::to_string(bound);
  if (h.kind == codec_kind::int8 && h.param == 0)
    return "int8 block 0";
  if (h.kind == codec_kind::topk && h.param > h.n)
    return "top-k k " + std::to_string(h.param) + " > n " + std::to_string(h.n);
  if (h.kind != codec_kind::int8 && h.kind != codec_kind::topk && h.param != 0)
    return std::string(to_string(h.kind)) + " header param " + std::to_string(h.param) +
           " is not 0";
  const std::uint64_t want = header_bytes + payload_bytes(h.kind, h.n, h.param);
  if (size != want)
    return (size < want ? "truncated: " : "trailing bytes: ") + std::to_string(size) +
           " bytes, the header implies " + std::to_string(want);
  return std::nullopt;
}

std::optional<std::string> check_payload(const header& h, const std::uint8_t* p) {
  if (h.kind == codec_kind::int8) {
    const std::size_t blocks = block_count(h.n, h.param);
    for (std::size_t b = 0; b < blocks; ++b) {
      const float s = bits_float(get_u32(p + 4 * b));
      if (!std::isfinite(s) || s < 0)
        return "int8 block " + std::to_string(b) + " has a non-finite or negative scale";
    }
    for (std::size_t i = 0; i < h.n; ++i)
      if (p[4 * blocks + i] == 0x80)
        return "int8 value -128 at " + std::to_string(i) + " outside [-127, 127]";
  } else if (h.kind == codec_kind::topk) {
    for (std::size_t j = 0; j < h.param; ++j) {
      const std::uint32_t i = get_u32(p + 4 * j);
      if (i >= h.n)
        return "top-k index " + std::to_string(i) + " out of range (n " + std::to_string(h.n) + ")";
      if (j > 0 && i <= get_u32(p + 4 * (j - 1)))
        return "top-k indices not strictly increasing at " + std::to_string(j);
    }
  }
  return std::nullopt;
}

void write_values(const header& h, const std::uint8_t* p, float* out) {
  switch (h.kind) {
    case codec_kind::none:
      for (std::size_t i = 0; i < h.n; ++i)
        out[i] = bits_float(get_u32(p + 4 * i));
      break;
    case codec_kind::fp16:
      for (std::size_t i = 0; i < h.n; ++i)
        out[i] = half_to_float(get_u16(p + 2 * i));
      break;
    case codec_kind::bf16:
      for (std::size_t i = 0; i < h.n; ++i)
        out[i] = bf16_to_float(get_u16(p + 2 * i));
      break;
    case codec_kind::int8: {
      const std::uint8_t* q = p + 4 * block_count(h.n, h.param);
      for (std::size_t i = 0; i < h.n; ++i) {
        const float scale = bits_float(get_u32(p + 4 * (i / h.param)));
        out[i] = static_cast<float>(static_cast<std::int8_t>(q[i])) * scale;
      }
      break;
    }
    case codec_kind::topk:
      std::fill(out, out + h.n, 0.0f);
      for (std::size_t j = 0; j < h.param; ++j)
        out[get_u32(p + 4 * j)] = bits_float(get_u32(p + 4 * (h.param + j)));
      break;
  }
}

}  // namespace

const char* to_string(codec_kind kind) {
  switch (kind) {
    case codec_kind::none:
      return "none";
    case codec_kind::fp16:
      return "fp16";
    case codec_kind::bf16:
      return "bf16";
    case codec_kind::int8:
      return "int8";
    case codec_kind::topk:
      return "topk";
  }
  return "unknown";
}

std::optional<std::string> validate(const codec_config& config) {
  if (static_cast<std::uint8_t>(config.kind) > static_cast<std::uint8_t>(codec_kind::topk))
    return "unknown codec kind " + std::to_string(static_cast<int>(config.kind));
  if (config.kind == codec_kind::int8 && config.block == 0)
    return "int8 block must be at least 1";
  if (config.kind == codec_kind::topk && !(config.topk_fraction > 0 && config.topk_fraction <= 1))
    return "topk_fraction must be in (0, 1]";
  return std::nullopt;
}

std::size_t topk_count(double fraction, std::size_t n) {
  if (n == 0)
    return 0;
  const double k = std::round(fraction * static_cast<double>(n));
  return std::clamp<std::size_t>(k < 1 ? 1 : static_cast<std::size_t>(k), 1, n);
}

std::size_t encoded_size(const codec_config& config, std::size_t n) {
  require_valid(config, n);
  return header_bytes + payload_bytes(config.kind, n, header_param(config, n));
}

std::vector<std::uint8_t> encode(const codec_config& config, const float* v, std::size_t n) {
  std::vector<std::uint8_t> out(encoded_size(config, n));
  const std::uint32_t param = header_param(config, n);
  out[0] = 1;
  out[1] = static_cast<std::uint8_t>(config.kind);
  put_u32(out.data() + 4, static_cast<std::uint32_t>(n));
  put_u32(out.data() + 8, param);
  std::uint8_t* p = out.data() + header_bytes;
  switch (config.kind) {
    case codec_kind::none:
      for (std::size_t i = 0; i < n; ++i)
        put_u32(p + 4 * i, float_bits(v[i]));
      break;
    case codec_kind::fp16:
      for (std::size_t i = 0; i < n; ++i)
        put_u16(p + 2 * i, float_to_half(v[i]));
      break;
    case codec_kind::bf16:
      for (std::size_t i = 0; i < n; ++i)
        put_u16(p + 2 * i, float_to_bf16(v[i]));
      break;
    case codec_kind::int8:
      encode_int8(v, n, config.block, p);
      break;
    case codec_kind::topk:
      encode_topk(v, n, param, p);
      break;
  }
  return out;
}

decode_result decode(const std::uint8_t* data, std::size_t size, std::size_t max_n) {
  decode_result r;
  header h{};
  if (auto why = check_header(data, size, max_n, h)) {
    r.error = std::move(*why);
    return r;
  }
  if (auto why = check_payload(h, data + header_bytes)) {
    r.error = std::move(*why);
    return r;
  }
  r.values.resize(h.n);  // bounded by max_n and max_elements above
  write_values(h, data + header_bytes, r.values.data());
  return r;
}

std::optional<std::string> decode_into(const std::uint8_t* data, std::size_t size, float* out,
                                       std::size_t n) {
  header h{};
  if (auto why = check_header(data, size, n, h))
    return why;
  if (h.n != n)
    return "n " + std::to_string(h.n) + " where " + std::to_string(n) + " was expected";
  if (auto why = check_payload(h, data + header_bytes))
    return why;
  write_values(h, data + header_bytes, out);
  return std::nullopt;
}

error_feedback_encoder::error_feedback_encoder(const codec_config& config, std::size_t n)
  : config_(config), residual_(n, 0.0f), corrected_(n), decoded_(n) {
  require_valid(config, n);
}

std::vector<std::uint8_t> error_feedback_encoder::encode(const float* v, std::size_t n) {
  if (n != residual_.size())
    throw std::invalid_argument("error_feedback_encoder: " + std::to_string(n) +
                                " elements, made for " + std::to_string(residual_.size()));
  if (!config_.error_feedback)
    return codec::encode(config_, v, n);
  for (std::size_t i = 0; i < n; ++i)
    corrected_[i] = v[i] + residual_[i];
  auto out = codec::encode(config_, corrected_.data(), n);
  // Our own blob is valid; decoding it gives exactly what the receiver gets.
  (void)decode_into(out.data(), out.size(), decoded_.data(), n);
  for (std::size_t i = 0; i < n; ++i) {
    const float r = corrected_[i] - decoded_[i];
    residual_[i] = std::isfinite(r) ? r : 0.0f;  // an input or value out of range is not carried
  }
  return out;
}

void error_feedback_encoder::reset() {
  std::fill(residual_.begin(), residual_.end(), 0.0f);
}

bool error_feedback_encoder::restore(const std::vector<float>& residual) {
  if (residual.size() != residual_.size() ||
      !std::all_of(residual.begin(), residual.end(), [](float r) { return std::isfinite(r); }))
    return false;
  residual_ = residual;
  return true;
}

}  // namespace atrain::codec
