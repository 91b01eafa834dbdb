// DiLoCo's spec block: algorithm.diloco.*.
#include <algorithm>
#include <cmath>
#include <string>

#include "algorithms/diloco/diloco.hpp"
#include "algorithms/ring/ring.hpp"
#include "atrain/actors/algorithm.hpp"
#include "atrain/messages/spec_checker.hpp"

namespace atrain {

namespace {
constexpr std::uint32_t max_fragments = 1024;  // each fragment is a ring round
}  // namespace

void diloco_check_block(spec_checker& c, const proto::AlgorithmSpec& a) {
  ring_check_codec(c);
  const auto& b = a.diloco();
  c.schedule("diloco", b);
  if (b.inner_steps() < 1)
    c.bad("algorithm.diloco.inner_steps", "must be >= 1 (got 0)");
  if (b.has_outer_step_size())
    c.positive("algorithm.diloco.outer_step_size", b.outer_step_size());
  // Non-finite values are reported once by validate() (spec_checker.hpp).
  if (b.has_momentum() && std::isfinite(b.momentum()) && !(b.momentum() >= 0 && b.momentum() < 1))
    c.bad("algorithm.diloco.momentum", "must be in [0, 1) (got " + c.num(b.momentum()) + ")");
  const auto f = std::max<std::uint32_t>(1, b.fragments());
  if (f > max_fragments)
    c.bad("algorithm.diloco.fragments",
          "must be <= " + std::to_string(max_fragments) + " (got " + std::to_string(f) + ")");
  else if (b.inner_steps() >= 1 && b.inner_steps() % f != 0)
    c.bad("algorithm.diloco.inner_steps",
          "must be a multiple of fragments (" + std::to_string(f) +
            "): a fragment is averaged every inner_steps / fragments steps (got " +
            std::to_string(b.inner_steps()) + ")");
  const bool adamw = b.inner() == proto::Diloco::ADAMW;
  if (b.inner() != proto::Diloco::SGD && !adamw)
    c.bad("algorithm.diloco.inner", "must be SGD or ADAMW");
  auto unit = [&](const char* field, bool has, double v) {
    const std::string path = std::string{"algorithm.diloco."} + field;
    if (has && !adamw)
      c.bad(path, "is used only with inner: ADAMW");
    else if (has && std::isfinite(v) && !(v >= 0 && v < 1))
      c.bad(path, "must be in [0, 1) (got " + c.num(v) + ")");
  };
  unit("beta1", b.has_beta1(), b.beta1());
  unit("beta2", b.has_beta2(), b.beta2());
  if (b.has_epsilon() && !adamw)
    c.bad("algorithm.diloco.epsilon", "is used only with inner: ADAMW");
  else if (b.has_epsilon())
    c.positive("algorithm.diloco.epsilon", b.epsilon());
  if (b.has_weight_decay() && !adamw)
    c.bad("algorithm.diloco.weight_decay", "is used only with inner: ADAMW");
  else if (b.has_weight_decay() && std::isfinite(b.weight_decay()) && !(b.weight_decay() >= 0))
    c.bad("algorithm.diloco.weight_decay", "must be >= 0 (got " + c.num(b.weight_decay()) + ")");
  if (b.has_mixing()) {
    if (!b.overlap())
      c.bad("algorithm.diloco.mixing", "is used only with overlap: true");
    else if (std::isfinite(b.mixing()) && !(b.mixing() >= 0 && b.mixing() < 1))
      c.bad("algorithm.diloco.mixing", "must be in [0, 1) (got " + c.num(b.mixing()) + ")");
  }
}

std::shared_ptr<const algorithm_config> diloco_parse_block(const proto::AlgorithmSpec& a) {
  const auto& b = a.diloco();
  auto c = config_with_steps<diloco_config>(b);
  c->inner_steps = std::max<std::uint32_t>(1, b.inner_steps());
  c->outer_step = b.has_outer_step_size() ? b.outer_step_size() : 0.7;
  c->momentum = b.has_momentum() ? b.momentum() : 0.9;
  c->fragments = std::max<std::uint32_t>(1, b.fragments());
  c->overlap = b.overlap();
  c->mixing = b.has_mixing() ? b.mixing() : 0.5;
  c->adamw = b.inner() == proto::Diloco::ADAMW;
  c->adam.beta1 = b.has_beta1() ? b.beta1() : 0.9;
  c->adam.beta2 = b.has_beta2() ? b.beta2() : 0.999;
  c->adam.epsilon = b.has_epsilon() ? b.epsilon() : 1e-8;
  c->adam.weight_decay = b.has_weight_decay() ? b.weight_decay() : 0.01;
  return c;
}

}  // namespace atrain
