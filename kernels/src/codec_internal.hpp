#pragma once
// Little-endian byte access for the codec's blobs (codec.cpp, codec_running_sum.cpp).
#include <cstdint>
#include <cstring>

namespace atrain::codec::wire {

inline void put_u16(std::uint8_t* p, std::uint16_t x) {
  p[0] = static_cast<std::uint8_t>(x);
  p[1] = static_cast<std::uint8_t>(x >> 8);
}

inline void put_u32(std::uint8_t* p, std::uint32_t x) {
  for (int i = 0; i < 4; ++i)
    p[i] = static_cast<std::uint8_t>(x >> (8 * i));
}

inline void put_u64(std::uint8_t* p, std::uint64_t x) {
  for (int i = 0; i < 8; ++i)
    p[i] = static_cast<std::uint8_t>(x >> (8 * i));
}

inline std::uint16_t get_u16(const std::uint8_t* p) {
  return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}

inline std::uint32_t get_u32(const std::uint8_t* p) {
  std::uint32_t x = 0;
  for (int i = 0; i < 4; ++i)
    x |= static_cast<std::uint32_t>(p[i]) << (8 * i);
  return x;
}

inline std::uint64_t get_u64(const std::uint8_t* p) {
  std::uint64_t x = 0;
  for (int i = 0; i < 8; ++i)
    x |= static_cast<std::uint64_t>(p[i]) << (8 * i);
  return x;
}

inline std::uint32_t float_bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}

inline float bits_float(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace atrain::codec::wire
