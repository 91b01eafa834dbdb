#pragma once
/// In-memory datasets, their loaders (LIBSVM, IDX, CIFAR-10), sharding and
/// minibatch sampling. Loaders refuse malformed input with a dataset_error that
/// names the file, the line (text) or byte offset (binary), and the reason.
#include <cstddef>
#include <cstdint>
#include <functional>
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

/// What a data file may ask of the machine (docs/RELIABILITY.md, "Bounds"): each
/// loader refuses a file beyond them with a dataset_error giving the figure and the
/// limit, before allocating for it; every product is overflow-checked.
namespace data_limits {
/// Bytes of one file's contents (after gunzip): counted while inflating, never
/// taken from the gzip trailer.
inline constexpr std::uint64_t max_file_bytes = std::uint64_t{1} << 30;
/// Features per sample (LIBSVM index, IDX rows x cols); = limits::max_dimension.
inline constexpr std::uint64_t max_dimension = 10000000;
/// rows x dimension of the dense feature matrix (2 GiB of floats).
inline constexpr std::uint64_t max_dense_values = std::uint64_t{1} << 29;
/// Class ids are below this (LIBSVM labels; IDX and CIFAR-10 labels are bytes).
inline constexpr std::uint64_t max_classes = std::uint64_t{1} << 16;
/// What a split keeps per node and class (nodes x classes for LABEL_SKEW, nodes x
/// classes per node for PATHOLOGICAL, clusters x dimension for FEATURE_SKEW).
inline constexpr std::uint64_t max_split_cells = std::uint64_t{1} << 26;
}  // namespace data_limits

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
///
/// Labels are integers, written "3", "+1", "-1" or "2.0" (integral values only):
///  - binary: if any label is -1, every label must be -1, 0, 1 or +1; -1 and 0
///    map to 0, +1 and 1 map to 1. classes = 2.
///  - otherwise labels are class ids >= 0 taken as is; classes = max + 1 over
///    the rows read, and at least 2 (a file of 0/1 labels is binary too).
///  Mixing -1 with a label > 1, or any other negative label, is an error.
/// Values are parsed as float and must be finite; values too small for a float
/// (e.g. 1e-50) become 0. Tokens are separated by spaces or tabs; a trailing
/// '\r' and trailing blanks are accepted; blank lines are
/// skipped (they still count for line numbers). Any malformed token is an error:
/// "PATH:LINE: reason". A last line without its newline is refused as truncated
/// (a cut that leaves a well-formed token, e.g. "5:0.25" -> "5:0.2", could not be
/// told apart from valid data otherwise); truncated gzip input is detected.
/// An empty file, or one with only blank lines, is an error. Bounds
/// (data_limits): labels < max_classes, indices <= max_dimension, rows x
/// dimension <= max_dense_values.
[[nodiscard]] dataset load_libsvm(const std::string& path, std::size_t dim = 0,
                                  std::size_t max_rows = 0);

/// IDX (MNIST layout) images + labels, plain or gzip. Pixels scaled to [0, 1]
/// (v / 255). Images: magic 2051 (u8, 3 dims: count, rows, cols), dim = rows *
/// cols; labels: magic 2049 (u8, 1 dim). The two counts must agree and neither
/// file may be truncated or carry trailing bytes. classes = max label + 1 over
/// the whole labels file (10 for MNIST), even when max_rows cuts the rows.
/// Errors: "PATH: offset N: reason" (offsets into the decompressed bytes).
[[nodiscard]] dataset load_idx(const std::string& images_path, const std::string& labels_path,
                               std::size_t max_rows = 0);

/// Which rows a loader keeps, chosen once the labels are read (an `atrain node` host
/// keeps only its nodes' shards): row ids below labels.size(), in the order they are
/// to be stored.
using row_choice = std::function<std::vector<std::uint32_t>(const std::vector<std::int32_t>& labels,
                                                            std::size_t classes)>;

/// load_idx keeping only the rows `choose` returns (all of them when it is empty): only
/// their pixels are decoded, so the peak is the decompressed files plus the rows kept,
/// not the whole float matrix. classes is still over the whole labels file. Throws as
/// load_idx, and std::out_of_range when `choose` returns a row past the rows read.
[[nodiscard]] dataset load_idx_rows(const std::string& images_path, const std::string& labels_path,
                                    std::size_t max_rows, const row_choice& choose);

/// The rows `rows` of d, in that order, as a dataset of their own (dim and classes
/// kept). Throws std::out_of_range on a row >= d.size().
[[nodiscard]] dataset select_rows(const dataset& d, const std::vector<std::uint32_t>& rows);

/// CIFAR-10 binary batch files (each record: 1 label byte + 3072 pixel bytes),
/// concatenated in the given order. Pixels scaled to [0, 1] (v / 255) and kept
/// in the file's channel-major order (1024 R, 1024 G, 1024 B). dim = 3072,
/// classes = 10. Plain or gzip. Each file must be a non-empty whole number of
/// 3073-byte records and every label <= 9, else "PATH: offset N: reason".
[[nodiscard]] dataset load_cifar10(const std::vector<std::string>& paths, std::size_t max_rows = 0);

/// Reads a whole file, gunzipping when it starts with the gzip magic (1f 8b).
/// Concatenated gzip members are all read; trailing zero padding is ignored.
/// The contents may be at most max_bytes: a gzip file is inflated once in chunks
/// to count them (refused as soon as they pass the limit), then once into a buffer
/// of exactly that size. Throws dataset_error naming the file on I/O or gzip
/// failure: "PATH: cannot open: <strerror>", "PATH: read error: <strerror>",
/// "PATH: gzip: <reason>" (truncated stream, corrupt data, trailing garbage),
/// "PATH: ... more than N bytes ... the limit" (too large).
[[nodiscard]] std::string read_maybe_gzip(const std::string& path,
                                          std::uint64_t max_bytes = data_limits::max_file_bytes);

/// Where for_each_chunk hands a file's contents, piece by piece, in order.
using content_sink = std::function<void(const char* data, std::size_t size)>;

/// read_maybe_gzip without keeping the contents: they go to `sink` in pieces of at
/// most 64 KiB (a gzip file: only the compressed bytes are held), with the same
/// checks and errors. Returns the contents' size. A plain file is read whole first.
std::uint64_t for_each_chunk(const std::string& path, const content_sink& sink,
                             std::uint64_t max_bytes = data_limits::max_file_bytes);

/// sha256_hex(read_maybe_gzip(path)), without holding the contents.
[[nodiscard]] std::string sha256_of_contents(const std::string& path);

/// Hex sha256 of a byte string (to verify decompressed dataset contents).
[[nodiscard]] std::string sha256_hex(const std::string& bytes);

/// Sample indices per node: every sample goes to exactly one node.
using shards = std::vector<std::vector<std::uint32_t>>;

/// Random equal-size split (sizes differ by at most one; nodes > samples leaves
/// some shards empty). Each shard is sorted ascending. Deterministic from seed.
/// Throws std::invalid_argument if nodes == 0.
[[nodiscard]] shards shard_iid(std::size_t samples, std::size_t nodes, std::uint64_t seed);

/// Label skew with equal sizes (docs/ALGORITHMS.md, "Shards"): each node draws class
/// proportions ~ Dirichlet(alpha * C * pi), pi = the class frequencies (Dirichlet(alpha)
/// per class on balanced classes; the global mix on average), asks for its N/n (± 1) rows
/// in them; a class asked for more than it has is shared out in proportion to the asks,
/// and nodes left short fill up from the classes left over, their preferred ones first.
/// Sizes are N/n ± 1 and every sample goes to exactly one node, so (1/n) sum f_i is the
/// centralized objective. Small alpha = each node holds mostly one class. Each shard
/// sorted ascending; deterministic from seed. Throws std::invalid_argument if nodes == 0,
/// labels.size() < nodes, alpha is not finite and > 0, a label is outside [0, classes),
/// or nodes x classes > data_limits::max_split_cells.
[[nodiscard]] shards shard_label_skew(const std::vector<std::int32_t>& labels, std::size_t classes,
                                      std::size_t nodes, double alpha, std::uint64_t seed);

/// The unequal-size label skew (policy LABEL_SKEW_UNEQUAL): for each class, node
/// proportions ~ Dirichlet(alpha), so shard sizes differ widely (1 to 20,000 rows on a9a
/// at 16 nodes, alpha 0.1) and (1/n) sum f_i is no longer the centralized objective.
/// Every node gets at least one sample (an empty node takes one random sample from the
/// currently largest shard). Each shard sorted ascending; deterministic from seed.
/// Throws std::invalid_argument as shard_label_skew (but has no nodes x classes bound).
[[nodiscard]] shards shard_label_skew_unequal(const std::vector<std::int32_t>& labels,
                                              std::size_t classes, std::size_t nodes, double alpha,
                                              std::uint64_t seed);

/// Pathological non-iid split (McMahan et al. 2017), equal sizes: the rows sorted by class
/// (shuffled within a class) are cut into nodes x k pieces, laid out in a seeded order, and
/// node j gets k of them adding up to its N/n (± 1) rows. A node holds at most k classes
/// when no piece spans a class boundary (class sizes multiples of the piece size); each
/// boundary inside a piece adds one class to its node. Throws std::invalid_argument if k is
/// not in [1, classes], nodes x k > data_limits::max_split_cells, or as shard_label_skew.
[[nodiscard]] shards shard_pathological(const std::vector<std::int32_t>& labels,
                                        std::size_t classes, std::size_t nodes, std::size_t k,
                                        std::uint64_t seed);

/// Seeded k-means of the rows' features: the cluster (0..k-1) of every row. k-means++
/// seeding and Lloyd's iterations (at most 50, until no assignment changes) on a seeded
/// sample of at most 8192 rows, then each row goes to its nearest center (lower index on
/// ties). Throws std::invalid_argument if k is not in [1, rows] or k x dim >
/// data_limits::max_split_cells.
[[nodiscard]] std::vector<std::uint32_t> kmeans_clusters(const dataset& d, std::size_t k,
                                                         std::uint64_t seed);

/// Feature skew, equal sizes: the rows grouped by kmeans_clusters(d, clusters, seed)
/// (cluster 0 first, shuffled within a cluster) and cut into consecutive N/n (± 1) row
/// runs, node 0 first. With clusters = nodes and equal cluster sizes each node holds
/// exactly one cluster. Throws std::invalid_argument as kmeans_clusters, or if nodes == 0
/// or d.size() < nodes.
[[nodiscard]] shards shard_feature_skew(const dataset& d, std::size_t nodes, std::size_t clusters,
                                        std::uint64_t seed);

/// Seeded minibatch sampler over one node's shard. Draws batches without
/// replacement within an epoch (reshuffled each epoch) and gathers the rows
/// into a contiguous buffer owned by the sampler. The draw sequence is the
/// concatenation of per-epoch permutations of indices; a batch that reaches
/// the end of an epoch continues into the next one, so every batch has exactly
/// batch_size() rows (a batch larger than the shard spans several epochs).
/// indices() is the shard in the current epoch's order. The dataset must
/// outlive the sampler. Throws std::invalid_argument on batch == 0, an empty
/// shard, or an index >= data.size().
class minibatch_sampler {
public:
  minibatch_sampler(const dataset& data, std::vector<std::uint32_t> indices, std::size_t batch,
                    std::uint64_t seed);

  /// The next batch; valid until the next call.
  [[nodiscard]] batch_view next();

  [[nodiscard]] std::size_t batch_size() const noexcept { return batch_; }
  [[nodiscard]] const std::vector<std::uint32_t>& indices() const noexcept { return indices_; }
  /// Where the sampler is (checkpoints): the current permutation of the
  /// shard, the position in it and the shuffling generator.
  [[nodiscard]] std::size_t cursor() const noexcept { return cursor_; }
  [[nodiscard]] const rng& generator() const noexcept { return gen_; }
  /// Puts the sampler back where it was; `order` must be a permutation of
  /// the shard and cursor <= its size (checked by the caller).
  void restore(std::vector<std::uint32_t> order, std::size_t cursor, const rng& gen) {
    indices_ = std::move(order);
    cursor_ = cursor;
    gen_ = gen;
  }

private:
  const dataset* data_;
  std::vector<std::uint32_t> indices_;
  std::size_t batch_;
  std::size_t cursor_ = 0;
  rng gen_;
  std::vector<float> x_;
  std::vector<std::int32_t> y_;
};

}  // namespace atrain
