#pragma once
/// Convolutional networks on oneDNN 2.6 with one flat float parameter buffer,
/// so every algorithm (trackers, push-sum, ring chunks, sparse coordinates)
/// treats them like the MLP.
///
/// A network is an image input (channels x height x width, NCHW rows of the
/// dataset: row = c * H * W + h * W + w), a list of layers, and a head: a
/// dense layer to `classes` logits with softmax cross-entropy. A dense layer
/// after a spatial one flattens it (c, h, w order).
///
/// Parameters, layer by layer in the order given, plain layouts:
///   conv:       W (out, in, kh, kw), then b (out)
///   dense:      W (out, in) with in in flattened (c, h, w) order, then b (out)
///   batch_norm: gamma (C), then beta (C)
///   relu, pools: none.
/// init: He-uniform U(-sqrt(6/fan_in), +sqrt(6/fan_in)) weights drawn in
/// parameter order from atrain::rng(seed); zero biases; gamma 1, beta 0.
/// l2/2 |W|^2 over conv and dense weights only.
///
/// Batch normalization: loss_and_gradient uses the minibatch's statistics
/// (training). loss() and accuracy() (inference) use statistics taken over
/// the first min(rows, 4096) rows of the evaluated batch, layer by layer,
/// then applied to every row: the parameters are all an algorithm shares, so
/// running averages kept per worker would not belong to the model being
/// evaluated ("precise BN" on a fixed subset). A gradient batch of a net
/// with batch norm must fit one chunk (<= 4096 rows; std::invalid_argument).
///
/// Primitives are built once per chunk row count and kept, as in the MLP
/// (model.hpp). Convolutions are created with format_tag::any, so oneDNN
/// picks its JIT kernels and their activation formats: blocked (nChw16c)
/// where the channels fill the blocks, nhwc where a conv of few channels
/// would pad them to 16 or fall back to reference kernels (LeNet-5's).
/// ReLU, pooling and batch norm work on whatever format reaches them (a ReLU
/// right after batch norm runs inside it: fuse_norm_relu). The parameter
/// buffer stays plain as documented above: reorders built once per shape
/// move conv weights into the chosen format and their gradients back every
/// step, and the last spatial activation to nchw for the first dense layer
/// (dense layers run on plain nc/oi, bound to the buffer directly). The
/// copies those reorders write (and channels a conv still pads) make a chunk
/// take more memory than cnn_activations_per_row counts. Same inputs give
/// bit-identical results on repeats and clone()s (for a given oneDNN thread
/// count). Not thread-safe: one clone() per actor.
///
/// bf16 (cnn_config::bf16; needs AVX512_BF16, cnn_bf16_supported(), and
/// make_cnn throws rather than fall back to f32): convolutions and the
/// hidden dense layers compute in bf16. Their inputs (activations, weights
/// and diff_dst) are converted from f32 every step by reorders built once
/// per chunk row count, into the formats oneDNN picks for bf16; they
/// accumulate in f32 and write f32 (dst, diff_src, diff weights and bias:
/// oneDNN 2.6 has JIT kernels for all of these). Everything else stays f32:
/// the head (the last dense layer, 0.2% of LeNet-5's work, and the logits the
/// loss reads), ReLU, pools, batch norm, softmax cross-entropy, the
/// parameter buffer and the gradient ("fp32 master weights": an optimiser
/// updates f32 parameters). Precision: a bf16 value keeps 8 significant
/// bits (rounding error <= 2^-9 relative), so through convs and dense
/// layers alone the gradient stays within ~5e-3 of f32's (relative L2);
/// with ReLUs and max pools, units whose decision the rounding flips move
/// it by 2-6e-2 for LeNet-5 and VGG_SMALL (most in the first layers), the
/// loss by < 1e-3. Training follows f32: LeNet-5 on MNIST reaches the same
/// held-out loss within 10% (tests/kernels/cnn_bf16_test.cpp). Results are
/// bit-identical on repeats and clone()s as in f32, but differ from f32's.
/// Speed: about 1.2-1.5x f32's steps per CPU second for LeNet-5 and
/// VGG_SMALL at batch 64 on one AVX512_BF16 core (bench_kernels).
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "atrain/kernels/model.hpp"

namespace atrain {

struct image_shape {
  std::size_t channels = 1;
  std::size_t height = 0;
  std::size_t width = 0;
  [[nodiscard]] std::size_t size() const noexcept { return channels * height * width; }
};

struct cnn_layer {
  enum class kind { conv, relu, max_pool, avg_pool, batch_norm, dense };
  kind type = kind::relu;
  std::size_t out = 0;       // conv: output channels; dense: output width
  std::size_t kernel_h = 0;  // conv and pools
  std::size_t kernel_w = 0;
  std::size_t stride = 1;  // conv and pools (both directions)
  std::size_t pad = 0;     // conv and pools: zeros on each side (avg: excluded)
};

struct cnn_config {
  image_shape input;
  std::vector<cnn_layer> layers;  // the head (dense to classes) comes after them
  std::size_t classes = 10;
  double l2 = 0;
  bool bf16 = false;  // convs and hidden dense layers in bf16 (see above); needs AVX512_BF16
};

/// Whether oneDNN's effective ISA has native bf16 (avx512_core_bf16 or
/// above), which make_cnn requires of a config with bf16 set.
[[nodiscard]] bool cnn_bf16_supported();

/// What is wrong with a config, if anything: `layer` is the index in
/// config.layers (layers.size() for the head, and for the input or classes),
/// `field` the layer's field ("kernel", "out", "stride", ...), `reason` a
/// sentence with the figures, e.g. "kernel 5x5 is larger than its padded
/// input 4x4".
struct cnn_problem {
  std::size_t layer = 0;
  std::string field;
  std::string reason;
};

/// Checks that the layers chain from the input to the head: positive sizes,
/// kernels within their padded inputs, pads smaller than kernels, no conv or
/// pool after a dense layer (batch norm there normalises features), at most
/// `max_params` parameters and `max_activations` floats of activations per
/// row (overflow-checked).
[[nodiscard]] std::optional<cnn_problem> check_cnn(const cnn_config& c, std::size_t max_params,
                                                   std::size_t max_activations);

/// Number of parameters of a config that check_cnn accepts.
[[nodiscard]] std::size_t cnn_num_params(const cnn_config& c);

/// Floats of activations one row produces (input included) for a config that
/// check_cnn accepts: the engine bounds a chunk's memory with it.
[[nodiscard]] std::size_t cnn_activations_per_row(const cnn_config& c);

/// Throws std::invalid_argument with check_cnn's text ("cnn layer 2 (conv):
/// kernel: ...") when the config is refused (limits: 1e9 parameters, 1e8
/// activations per row), or when l2 < 0 or classes < 2; and ("cnn: bf16
/// needs a CPU with AVX512_BF16; ...") when c.bf16 && !cnn_bf16_supported().
[[nodiscard]] std::unique_ptr<model> make_cnn(const cnn_config& c);

/// LeNet-5 for 28x28 inputs: conv 6 5x5 pad 2, relu, max 2, conv 16 5x5,
/// relu, max 2, dense 120, relu, dense 84, relu (then the head).
[[nodiscard]] cnn_config lenet5(image_shape input, std::size_t classes);

/// A small VGG-style net: 3 blocks of conv 3x3 pad 1 (32, 64, 128 channels),
/// batch norm, relu, max 2; then dense 128, relu (then the head).
[[nodiscard]] cnn_config vgg_small(image_shape input, std::size_t classes);

}  // namespace atrain
