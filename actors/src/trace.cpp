#include "atrain/actors/trace.hpp"

#include <cstdio>

namespace atrain {

namespace {

/// Order-sensitive mixing step (the splitmix64 finaliser over hash ^ value).
std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ULL;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebULL;
  return h ^ (h >> 31);
}

}  // namespace

void trace::record(std::int64_t t_ns, std::uint32_t node, event_kind kind, std::uint64_t a,
                   std::uint64_t b) {
  std::lock_guard<std::mutex> guard{mtx_};
  auto h = mix(hash_, static_cast<std::uint64_t>(t_ns));
  h = mix(h, (static_cast<std::uint64_t>(kind) << 32) | node);
  h = mix(h, a);
  hash_ = mix(h, b);
  ++events_;
}

std::uint64_t trace::hash() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return hash_;
}

std::uint64_t trace::events() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return events_;
}

std::string trace::hex() const {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(hash()));
  return buf;
}

}  // namespace atrain
