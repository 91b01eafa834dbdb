// Whole-file reads with transparent gunzip, and SHA-256 (FIPS 180-4).
#include <sys/stat.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "atrain/kernels/dataset.hpp"

namespace atrain {
namespace {

[[noreturn]] void too_large(const std::string& path, const std::string& what, std::uint64_t limit) {
  throw dataset_error(path + ": " + what + " more than " + std::to_string(limit) +
                      " bytes; the limit for a data file is " + std::to_string(limit) + " bytes (" +
                      std::to_string(limit >> 20) + " MiB)");
}

std::string read_file(const std::string& path, std::uint64_t limit) {
  errno = 0;
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f)
    throw dataset_error(path + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fileno(f.get()), &st) != 0)
    throw dataset_error(path + ": cannot open: " + std::strerror(errno));
  if (S_ISDIR(st.st_mode))
    throw dataset_error(path + ": cannot open: " + std::strerror(EISDIR));
  if (S_ISREG(st.st_mode) && static_cast<std::uint64_t>(st.st_size) > limit)
    too_large(path, "the file holds " + std::to_string(st.st_size) + " bytes,", limit);
  std::string out;
  if (S_ISREG(st.st_mode) && st.st_size > 0)
    out.reserve(static_cast<std::size_t>(st.st_size));
  char chunk[1 << 16];
  for (;;) {
    const std::size_t got = std::fread(chunk, 1, sizeof chunk, f.get());
    if (out.size() + got > limit)  // a file that grows, a pipe
      too_large(path, "the file holds", limit);
    out.append(chunk, got);
    if (got < sizeof chunk)
      break;
  }
  if (std::ferror(f.get()))
    throw dataset_error(path + ": read error: " + std::strerror(errno));
  return out;
}

bool all_zero(const unsigned char* p, std::size_t n) {
  return std::all_of(p, p + n, [](unsigned char c) { return c == 0; });
}

/// Inflates every gzip member of `in`. With dest == nullptr it only counts the
/// output (through a small scratch buffer, handed to `sink` when there is one) and
/// refuses it past `limit`; else it writes exactly `limit` bytes (the count) to
/// dest. Returns the bytes produced.
std::uint64_t inflate_members(const std::string& path, const std::string& in, std::uint64_t limit,
                              unsigned char* dest, const content_sink& sink = {}) {
  const auto* src = reinterpret_cast<const unsigned char*>(in.data());
  const std::size_t n = in.size();
  unsigned char scratch[1 << 16];
  std::uint64_t produced = 0;

  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    throw dataset_error(path + ": gzip: inflateInit failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, &inflateEnd);

  std::size_t consumed = 0;  // input bytes handed to zlib and used
  for (;;) {
    const std::size_t in_left = n - consumed;
    zs.next_in = const_cast<unsigned char*>(src + consumed);
    zs.avail_in = static_cast<uInt>(std::min<std::size_t>(in_left, UINT_MAX));
    if (dest) {
      zs.next_out = dest + produced;
      zs.avail_out = static_cast<uInt>(std::min<std::uint64_t>(limit - produced, UINT_MAX));
    } else {
      zs.next_out = scratch;
      zs.avail_out = sizeof scratch;
    }
    const uInt avail_in_before = zs.avail_in;
    const uInt avail_out_before = zs.avail_out;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    consumed += avail_in_before - zs.avail_in;
    produced += avail_out_before - zs.avail_out;
    if (produced > limit)
      too_large(path, "gzip: the contents inflate to", limit);
    if (!dest && sink && zs.avail_out < avail_out_before)
      sink(reinterpret_cast<const char*>(scratch), avail_out_before - zs.avail_out);

    if (rc == Z_STREAM_END) {
      if (consumed == n)
        break;
      const std::size_t rest = n - consumed;
      if (rest >= 2 && src[consumed] == 0x1f && src[consumed + 1] == 0x8b) {
        inflateReset(&zs);  // next gzip member
        continue;
      }
      if (all_zero(src + consumed, rest))
        break;  // padding
      throw dataset_error(path + ": gzip: trailing garbage after the compressed data at byte " +
                          std::to_string(consumed));
    }
    if (rc == Z_OK)
      continue;
    if (rc == Z_BUF_ERROR) {
      if (consumed == n) {
        throw dataset_error(path + ": gzip: truncated stream (unexpected end of file after " +
                            std::to_string(n) + " compressed bytes)");
      }
      if (dest && produced == limit)  // more than counted: cannot happen on the same bytes
        too_large(path, "gzip: the contents inflate to", limit);
      continue;
    }
    if (rc == Z_MEM_ERROR)
      throw dataset_error(path + ": gzip: out of memory");
    // Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR
    throw dataset_error(path + ": gzip: corrupt data at compressed byte " +
                        std::to_string(consumed) + ": " + (zs.msg ? zs.msg : "invalid stream"));
  }
  return produced;
}

/// Two passes: count the contents against the limit (never trusting the
/// trailer's ISIZE), then inflate into a buffer of exactly that size.
std::string gunzip(const std::string& path, const std::string& in, std::uint64_t limit) {
  const std::uint64_t size = inflate_members(path, in, limit, nullptr);
  std::string out(static_cast<std::size_t>(size), '\0');
  if (size > 0)
    inflate_members(path, in, size, reinterpret_cast<unsigned char*>(out.data()));
  return out;
}

// ---- SHA-256

constexpr std::uint32_t k_round[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

constexpr std::uint32_t rotr(std::uint32_t x, int k) noexcept {
  return (x >> k) | (x << (32 - k));
}

void sha256_block(std::uint32_t h[8], const unsigned char* p) noexcept {
  std::uint32_t w[64];
  for (int i = 0; i < 16; ++i) {
    w[i] = (std::uint32_t{p[4 * i]} << 24) | (std::uint32_t{p[4 * i + 1]} << 16) |
           (std::uint32_t{p[4 * i + 2]} << 8) | std::uint32_t{p[4 * i + 3]};
  }
  for (int i = 16; i < 64; ++i) {
    const std::uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const std::uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  std::uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    const std::uint32_t s1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    const std::uint32_t ch = (e & f) ^ (~e & g);
    const std::uint32_t t1 = hh + s1 + ch + k_round[i] + w[i];
    const std::uint32_t s0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    const std::uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    const std::uint32_t t2 = s0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

/// SHA-256 over bytes handed in pieces.
class sha256_state {
public:
  void update(const char* data, std::size_t n) noexcept {
    const auto* p = reinterpret_cast<const unsigned char*>(data);
    total_ += n;
    if (fill_ > 0) {
      const std::size_t take = std::min(n, sizeof block_ - fill_);
      std::memcpy(block_ + fill_, p, take);
      fill_ += take;
      p += take;
      n -= take;
      if (fill_ < sizeof block_)
        return;
      sha256_block(h_, block_);
      fill_ = 0;
    }
    for (; n >= 64; p += 64, n -= 64)
      sha256_block(h_, p);
    std::memcpy(block_, p, n);
    fill_ = n;
  }

  [[nodiscard]] std::string hex() {
    // Padding: 0x80, zeros, then the bit length big-endian (one or two blocks).
    unsigned char tail[128] = {};
    std::memcpy(tail, block_, fill_);
    tail[fill_] = 0x80;
    const std::size_t tail_len = fill_ + 1 + 8 <= 64 ? 64 : 128;
    const std::uint64_t bits = total_ * 8;
    for (int i = 0; i < 8; ++i)
      tail[tail_len - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
    for (std::size_t b = 0; b < tail_len; b += 64)
      sha256_block(h_, tail + b);
    static const char digits[] = "0123456789abcdef";
    std::string out(64, '0');
    for (int i = 0; i < 8; ++i)
      for (int j = 0; j < 8; ++j)
        out[8 * i + j] = digits[(h_[i] >> (28 - 4 * j)) & 0xf];
    return out;
  }

private:
  std::uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                         0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char block_[64] = {};
  std::size_t fill_ = 0;
  std::uint64_t total_ = 0;
};

bool is_gzip(const std::string& raw) {
  return raw.size() >= 2 && static_cast<unsigned char>(raw[0]) == 0x1f &&
         static_cast<unsigned char>(raw[1]) == 0x8b;
}

}  // namespace

std::uint64_t for_each_chunk(const std::string& path, const content_sink& sink,
                             std::uint64_t max_bytes) {
  const std::string raw = read_file(path, max_bytes);
  if (is_gzip(raw))
    return inflate_members(path, raw, max_bytes, nullptr, sink);
  constexpr std::size_t piece = 1 << 16;
  for (std::size_t at = 0; at < raw.size(); at += piece)
    sink(raw.data() + at, std::min(piece, raw.size() - at));
  return raw.size();
}

std::string sha256_of_contents(const std::string& path) {
  sha256_state h;
  (void)for_each_chunk(path, [&h](const char* p, std::size_t n) { h.update(p, n); });
  return h.hex();
}

std::string read_maybe_gzip(const std::string& path, std::uint64_t max_bytes) {
  std::string raw = read_file(path, max_bytes);
  if (is_gzip(raw))
    return gunzip(path, raw, max_bytes);
  return raw;
}

std::string sha256_hex(const std::string& bytes) {
  sha256_state h;
  h.update(bytes.data(), bytes.size());
  return h.hex();
}

}  // namespace atrain
