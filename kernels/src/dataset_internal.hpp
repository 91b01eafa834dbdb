#pragma once
/// Helpers shared by the dataset loaders (not part of the public API).
#include <cstddef>
#include <cstdint>
#include <string>

#include "atrain/kernels/dataset.hpp"

namespace atrain::detail {

/// "PATH:LINE: reason" (text formats).
[[noreturn]] inline void fail_line(const std::string& path, std::size_t line,
                                   const std::string& reason) {
  throw dataset_error(path + ":" + std::to_string(line) + ": " + reason);
}

/// "PATH: offset N: reason" (binary formats).
[[noreturn]] inline void fail_offset(const std::string& path, std::uint64_t offset,
                                     const std::string& reason) {
  throw dataset_error(path + ": offset " + std::to_string(offset) + ": " + reason);
}

/// Big-endian u32 at p.
[[nodiscard]] inline std::uint32_t load_be32(const char* p) noexcept {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return (std::uint32_t{u[0]} << 24) | (std::uint32_t{u[1]} << 16) | (std::uint32_t{u[2]} << 8) |
         std::uint32_t{u[3]};
}

/// Byte value -> v / 255 as float.
struct pixel_table {
  float v[256];
  pixel_table() noexcept {
    for (int i = 0; i < 256; ++i)
      v[i] = static_cast<float>(i) / 255.0f;
  }
  float operator()(char c) const noexcept { return v[static_cast<unsigned char>(c)]; }
};

}  // namespace atrain::detail
