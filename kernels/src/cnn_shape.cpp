// check_cnn, the presets and the stages a config produces (cnn_internal.hpp).
#include <limits>
#include <stdexcept>
#include <string>

#include "cnn_internal.hpp"

namespace atrain {

namespace {

constexpr std::size_t huge = std::numeric_limits<std::size_t>::max();

std::size_t mul(std::size_t a, std::size_t b) {
  return a != 0 && b > huge / a ? huge : a * b;
}
std::size_t add(std::size_t a, std::size_t b) {
  return b > huge - a ? huge : a + b;
}

const char* kind_name(cnn_layer::kind k) {
  switch (k) {
    case cnn_layer::kind::conv:
      return "conv";
    case cnn_layer::kind::relu:
      return "relu";
    case cnn_layer::kind::max_pool:
      return "max_pool";
    case cnn_layer::kind::avg_pool:
      return "avg_pool";
    case cnn_layer::kind::batch_norm:
      return "batch_norm";
    case cnn_layer::kind::dense:
      return "dense";
  }
  return "?";
}

std::string dims(std::size_t a, std::size_t b) {
  return std::to_string(a) + "x" + std::to_string(b);
}

/// Output side of a window of k with stride s over n + 2p, or 0 when none fits.
std::size_t out_side(std::size_t n, std::size_t k, std::size_t s, std::size_t p) {
  const std::size_t padded = add(n, mul(2, p));
  return k > padded ? 0 : (padded - k) / s + 1;
}

/// Runs the stages, or says what is wrong (shared by check_cnn and cnn_stages).
std::optional<cnn_problem> walk(const cnn_config& c, std::size_t max_params,
                                std::size_t max_activations, std::vector<detail::cnn_stage>* out) {
  const std::size_t head = c.layers.size();
  const auto problem = [](std::size_t at, std::string field, std::string why) {
    return std::optional<cnn_problem>{cnn_problem{at, std::move(field), std::move(why)}};
  };
  if (c.input.channels == 0 || c.input.height == 0 || c.input.width == 0)
    return problem(head, "input", "the input needs channels, height and width >= 1");
  if (c.classes < 2)
    return problem(head, "classes", "needs >= 2 classes (got " + std::to_string(c.classes) + ")");
  image_shape s = c.input;
  bool flat = false;
  std::size_t params = 0, acts = s.size();
  std::vector<cnn_layer> all = c.layers;
  cnn_layer h;
  h.type = cnn_layer::kind::dense;
  h.out = c.classes;
  all.push_back(h);
  for (std::size_t i = 0; i < all.size(); ++i) {
    const auto& l = all[i];
    detail::cnn_stage st{l, s, s, flat, flat, 0, 0, 0};
    const std::string name = kind_name(l.type);
    using K = cnn_layer::kind;
    if (l.type == K::conv || l.type == K::max_pool || l.type == K::avg_pool) {
      if (flat)
        return problem(i, "type", name + " after a dense layer (its input is flat)");
      if (l.type == K::conv && l.out == 0)
        return problem(i, "out", "needs >= 1 output channels (got 0)");
      if (l.kernel_h == 0 || l.kernel_w == 0)
        return problem(i, "kernel",
                       "needs a kernel of at least 1x1 (got " + dims(l.kernel_h, l.kernel_w) + ")");
      if (l.stride == 0)
        return problem(i, "stride", "needs a stride >= 1 (got 0)");
      if (l.pad >= l.kernel_h || l.pad >= l.kernel_w)
        return problem(i, "pad",
                       "pad " + std::to_string(l.pad) + " must be smaller than the kernel " +
                         dims(l.kernel_h, l.kernel_w));
      const std::size_t oh = out_side(s.height, l.kernel_h, l.stride, l.pad);
      const std::size_t ow = out_side(s.width, l.kernel_w, l.stride, l.pad);
      if (oh == 0 || ow == 0)
        return problem(i, "kernel",
                       "kernel " + dims(l.kernel_h, l.kernel_w) +
                         " is larger than its padded input " +
                         dims(add(s.height, 2 * l.pad), add(s.width, 2 * l.pad)));
      st.out = {l.type == K::conv ? l.out : s.channels, oh, ow};
      if (l.type == K::conv) {
        st.params = add(mul(l.out, mul(s.channels, mul(l.kernel_h, l.kernel_w))), l.out);
        st.weight_off = params;
        st.bias_off = params + st.params - l.out;
      }
    } else if (l.type == K::dense) {
      if (l.out == 0)
        return problem(i, "out", "needs a width >= 1 (got 0)");
      st.out = {l.out, 1, 1};
      st.flat_out = true;
      st.params = add(mul(l.out, s.size()), l.out);
      st.weight_off = params;
      st.bias_off = params + st.params - l.out;
    } else if (l.type == K::batch_norm) {
      st.params = mul(2, s.channels);
      st.weight_off = params;
      st.bias_off = params + s.channels;
    }
    params = add(params, st.params);
    acts = add(acts, st.out.size());
    if (params > max_params)
      return problem(i, name == "dense" && i == head ? "classes" : "out",
                     "the network reaches " + std::to_string(params) +
                       " parameters here; the limit is " + std::to_string(max_params));
    if (acts > max_activations)
      return problem(i, "out",
                     "the network reaches " + std::to_string(acts) +
                       " activations per row here; the limit is " +
                       std::to_string(max_activations));
    s = st.out;
    flat = st.flat_out;
    if (out != nullptr)
      out->push_back(st);
  }
  return std::nullopt;
}

std::string text(const cnn_config& c, const cnn_problem& p) {
  const std::string what = p.layer < c.layers.size() ? kind_name(c.layers[p.layer].type) : "head";
  return "cnn layer " + std::to_string(p.layer) + " (" + what + "): " + p.field + ": " + p.reason;
}

cnn_layer conv(std::size_t out, std::size_t k, std::size_t pad) {
  return {cnn_layer::kind::conv, out, k, k, 1, pad};
}
cnn_layer pool2() {
  return {cnn_layer::kind::max_pool, 0, 2, 2, 2, 0};
}
cnn_layer simple(cnn_layer::kind k, std::size_t out = 0) {
  return {k, out, 0, 0, 1, 0};
}

}  // namespace

std::optional<cnn_problem> check_cnn(const cnn_config& c, std::size_t max_params,
                                     std::size_t max_activations) {
  return walk(c, max_params, max_activations, nullptr);
}

std::size_t cnn_num_params(const cnn_config& c) {
  const auto st = detail::cnn_stages(c);
  return st.back().bias_off + st.back().spec.out;
}

std::size_t cnn_activations_per_row(const cnn_config& c) {
  std::size_t acts = c.input.size();
  for (const auto& st : detail::cnn_stages(c))
    acts += st.out.size();
  return acts;
}

cnn_config lenet5(image_shape input, std::size_t classes) {
  using K = cnn_layer::kind;
  return {input,
          {conv(6, 5, 2), simple(K::relu), pool2(), conv(16, 5, 0), simple(K::relu), pool2(),
           simple(K::dense, 120), simple(K::relu), simple(K::dense, 84), simple(K::relu)},
          classes,
          0};
}

cnn_config vgg_small(image_shape input, std::size_t classes) {
  using K = cnn_layer::kind;
  cnn_config c{input, {}, classes, 0};
  for (std::size_t ch : {32, 64, 128})
    for (const auto& l : {conv(ch, 3, 1), simple(K::batch_norm), simple(K::relu), pool2()})
      c.layers.push_back(l);
  c.layers.push_back(simple(K::dense, 128));
  c.layers.push_back(simple(K::relu));
  return c;
}

namespace detail {

std::vector<cnn_stage> cnn_stages(const cnn_config& c) {
  std::vector<cnn_stage> out;
  // The engine's own bounds are stricter (spec limits); these keep a direct
  // caller of make_cnn from asking for the impossible.
  if (auto p = walk(c, 1000000000, 100000000, &out))
    throw std::invalid_argument(text(c, *p));
  if (!(c.l2 >= 0))
    throw std::invalid_argument("cnn: l2 must be >= 0");
  return out;
}

}  // namespace detail

}  // namespace atrain
