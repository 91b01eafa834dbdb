#pragma once
/// In-memory datasets, their loaders (LIBSVM, IDX, CIFAR-10), sharding and
/// minibatch sampling. Loaders refuse malformed input with a dataset_error that
/// names the file, the line (text) or byte offset (binary), and the reason.
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "atrain/kernels/rng.hpp"

namespace atrain {

/// Thrown by every loader on bad input. what() = "FILE:LINE: reason" (text
/// formats) or "FILE: offset N: reason" (binary formats).
class dataset_error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// Dense row-major samples with integer class labels in [0, classes).
/// Binary LIBSVM labels (+1/-1) map to 1/0.
struct dataset {
  std::size_t dim = 0;
  std::size_t classes = 0;
  std::vector<float> features;  // size() * dim
  std::vector<std::int32_t> labels;

  [[nodiscard]] std::size_t size() const noexcept { return labels.size(); }
  [[nodiscard]] const float* row(std::size_t i) const noexcept { return features.data() + i * dim; }
};

/// A contiguous block of rows: what the models consume.
struct batch_view {
  const float* x = nullptr;         // rows * dim
  const std::int32_t* y = nullptr;  // rows
  std::size_t rows = 0;
  std::size_t dim = 0;
};

[[nodiscard]] inline batch_view whole(const dataset& d) noexcept {
  return {d.features.data(), d.labels.data(), d.size(), d.dim};
}

/// LIBSVM text, plain or gzip (detected by magic bytes). dim = 0 infers the
/// dimension from the largest index. Empty rows (label only) are allowed.
/// Indices are 1-based and strictly increasing. max_rows = 0 reads all.
[[nodiscard]] dataset load_libsvm(const std::string& path, std::size_t dim = 0,
                                  std::size_t max_rows = 0);

/// IDX (MNIST layout) images + labels, plain or gzip. Pixels scaled to [0, 1].
[[nodiscard]] dataset load_idx(const std::string& images_path, const std::string& labels_path,
                               std::size_t max_rows = 0);

/// CIFAR-10 binary batch files (each record: 1 label byte + 3072 pixel bytes),
/// concatenated in the given order. Pixels scaled to [0, 1].
[[nodiscard]] dataset load_cifar10(const std::vector<std::string>& paths, std::size_t max_rows = 0);

/// Reads a whole file, gunzipping when it starts with the gzip magic.
/// Throws dataset_error naming the file on I/O or gzip failure.
[[nodiscard]] std::string read_maybe_gzip(const std::string& path);

/// Hex sha256 of a byte string (to verify decompressed dataset contents).
[[nodiscard]] std::string sha256_hex(const std::string& bytes);

/// Sample indices per node: every sample goes to exactly one node.
using shards = std::vector<std::vector<std::uint32_t>>;

/// Random equal-size split (sizes differ by at most one).
[[nodiscard]] shards shard_iid(std::size_t samples, std::size_t nodes, std::uint64_t seed);

/// Label skew: for each class, node proportions ~ Dirichlet(alpha); small alpha
/// = each node holds mostly one class. Every node gets at least one sample.
[[nodiscard]] shards shard_label_skew(const std::vector<std::int32_t>& labels, std::size_t classes,
                                      std::size_t nodes, double alpha, std::uint64_t seed);

/// Seeded minibatch sampler over one node's shard. Draws batches without
/// replacement within an epoch (reshuffled each epoch) and gathers the rows
/// into a contiguous buffer owned by the sampler.
class minibatch_sampler {
public:
  minibatch_sampler(const dataset& data, std::vector<std::uint32_t> indices, std::size_t batch,
                    std::uint64_t seed);

  /// The next batch; valid until the next call.
  [[nodiscard]] batch_view next();

  [[nodiscard]] std::size_t batch_size() const noexcept { return batch_; }
  [[nodiscard]] const std::vector<std::uint32_t>& indices() const noexcept { return indices_; }

private:
  const dataset* data_;
  std::vector<std::uint32_t> indices_;
  std::size_t batch_;
  std::size_t cursor_ = 0;
  rng gen_;
  std::vector<float> x_;
  std::vector<std::int32_t> y_;
};

} // namespace atrain
