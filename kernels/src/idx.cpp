// IDX (MNIST layout) loader: u8 images (magic 2051) + u8 labels (magic 2049).
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "atrain/kernels/dataset.hpp"
#include "dataset_internal.hpp"

namespace atrain {
namespace {

std::string hex32(std::uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

/// Checks magic and header length against the file's first bytes `head` and its
/// size; returns the item count (bytes 4..7).
std::uint32_t check_header(const std::string& path, const std::string& head, std::uint64_t size,
                           std::uint32_t magic, std::size_t header, const char* what) {
  if (size < 4) {
    detail::fail_offset(path, size,
                        "truncated header: file has " + std::to_string(size) + " bytes, need " +
                          std::to_string(header));
  }
  const std::uint32_t got = detail::load_be32(head.data());
  if (got != magic) {
    detail::fail_offset(path, 0,
                        "bad magic " + hex32(got) + " (" + std::to_string(got) + "), expected " +
                          hex32(magic) + " (" + std::to_string(magic) + ") for IDX " + what);
  }
  if (size < header) {
    detail::fail_offset(path, size,
                        "truncated header: file has " + std::to_string(size) + " bytes, need " +
                          std::to_string(header));
  }
  const std::uint32_t count = detail::load_be32(head.data() + 4);
  if (count == 0)
    detail::fail_offset(path, 4, std::string("no ") + what + " (count is 0)");
  return count;
}

/// The payload must be exactly `expected` bytes after the header.
void check_length(const std::string& path, std::uint64_t size, std::uint64_t expected,
                  const char* what) {
  if (size < expected) {
    detail::fail_offset(path, size,
                        std::string("truncated ") + what + ": expected " +
                          std::to_string(expected) + " bytes, file has " + std::to_string(size));
  }
  if (size > expected) {
    detail::fail_offset(path, expected,
                        std::to_string(size - expected) + " trailing bytes after the " + what);
  }
}

constexpr std::size_t img_header = 16;
constexpr std::size_t lab_header = 8;

/// The images file's first bytes and size, without keeping its contents.
std::pair<std::string, std::uint64_t> head_of(const std::string& path) {
  std::string head;
  const auto size = for_each_chunk(path, [&head](const char* p, std::size_t n) {
    if (head.size() < img_header)
      head.append(p, std::min(n, img_header - head.size()));
  });
  return {head, size};
}

/// Where each row read goes in the dataset: slot[row], or -1 (not kept).
std::vector<std::int64_t> slots_of(const std::vector<std::uint32_t>& keep, std::size_t n) {
  std::vector<std::int64_t> slot(n, -1);
  for (std::size_t i = 0; i < keep.size(); ++i) {
    if (keep[i] >= n || slot[keep[i]] >= 0)
      throw std::out_of_range("load_idx_rows: row " + std::to_string(keep[i]) + " of " +
                              std::to_string(n) + " (or twice)");
    slot[keep[i]] = static_cast<std::int64_t>(i);
  }
  return slot;
}

}  // namespace

dataset load_idx_rows(const std::string& images_path, const std::string& labels_path,
                      std::size_t max_rows, const row_choice& choose) {
  // The images pass through twice, never whole: their header and size first
  // (every check), then only the kept rows' pixels, straight into floats.
  const auto [head, img_size] = head_of(images_path);
  const std::string lab = read_maybe_gzip(labels_path);

  const std::uint32_t n_img =
    check_header(images_path, head, img_size, 2051, img_header, "images (u8, 3 dims)");
  const std::uint32_t n_lab =
    check_header(labels_path, lab, lab.size(), 2049, lab_header, "labels (u8, 1 dim)");
  const std::uint32_t rows = detail::load_be32(head.data() + 8);
  const std::uint32_t cols = detail::load_be32(head.data() + 12);
  if (rows == 0 || cols == 0) {
    detail::fail_offset(images_path, rows == 0 ? 8 : 12,
                        "zero image size " + std::to_string(rows) + " x " + std::to_string(cols));
  }
  // rows x cols fits in 64 bits; it is bounded before it multiplies the count.
  const std::uint64_t pixels = std::uint64_t{rows} * cols;
  if (pixels > data_limits::max_dimension)
    detail::fail_offset(images_path, 8,
                        "image size " + std::to_string(rows) + " x " + std::to_string(cols) +
                          " = " + std::to_string(pixels) + " pixels; the limit is " +
                          std::to_string(data_limits::max_dimension) + " features");
  // pixels <= 10^7 and n_img < 2^32: no overflow. Compared with the real size.
  check_length(images_path, img_size, img_header + pixels * n_img, "pixel data");
  const std::uint64_t used = max_rows == 0 ? n_img : std::min<std::uint64_t>(n_img, max_rows);
  if (used > data_limits::max_dense_values / pixels)
    detail::fail_offset(images_path, 4,
                        std::to_string(used) + " images x " + std::to_string(pixels) +
                          " pixels is more than " + std::to_string(data_limits::max_dense_values) +
                          " values, the limit for a dense feature matrix");
  check_length(labels_path, lab.size(), lab_header + std::uint64_t{n_lab}, "label data");
  if (n_img != n_lab) {
    detail::fail_offset(images_path, 4,
                        "image count " + std::to_string(n_img) + " != label count " +
                          std::to_string(n_lab) + " in " + labels_path);
  }

  const auto* lp = reinterpret_cast<const unsigned char*>(lab.data() + lab_header);
  const unsigned char max_label = *std::max_element(lp, lp + n_lab);

  const std::size_t n = static_cast<std::size_t>(used);
  dataset d;
  d.dim = static_cast<std::size_t>(pixels);
  d.classes = std::size_t{max_label} + 1;
  d.labels.assign(lp, lp + n);
  std::vector<std::int64_t> slot;  // empty: every row, in file order
  if (choose) {
    const auto keep = choose(d.labels, d.classes);
    slot = slots_of(keep, n);
    std::vector<std::int32_t> kept(keep.size());
    for (std::size_t i = 0; i < keep.size(); ++i)
      kept[i] = d.labels[keep[i]];
    d.labels = std::move(kept);
  }
  d.features.resize(d.labels.size() * d.dim);
  static const detail::pixel_table scale;
  std::uint64_t at = 0;  // offset in the file's contents
  const auto again = for_each_chunk(images_path, [&](const char* p, std::size_t len) {
    while (len > 0) {
      if (at < img_header) {  // the header again
        const auto skip = std::min<std::uint64_t>(len, img_header - at);
        at += skip;
        p += skip;
        len -= static_cast<std::size_t>(skip);
        continue;
      }
      const std::uint64_t row = (at - img_header) / d.dim;
      const std::uint64_t col = (at - img_header) % d.dim;
      const auto take = static_cast<std::size_t>(std::min<std::uint64_t>(len, d.dim - col));
      const std::int64_t to = row >= n       ? -1
                              : slot.empty() ? static_cast<std::int64_t>(row)
                                             : slot[row];
      if (to >= 0)
        std::transform(p, p + take,
                       d.features.begin() +
                         static_cast<std::ptrdiff_t>(static_cast<std::uint64_t>(to) * d.dim + col),
                       scale);
      at += take;
      p += take;
      len -= take;
    }
  });
  if (again != img_size)
    detail::fail_offset(images_path, std::min(again, img_size),
                        "the file changed while it was read (" + std::to_string(img_size) +
                          " bytes, then " + std::to_string(again) + ")");
  return d;
}

dataset load_idx(const std::string& images_path, const std::string& labels_path,
                 std::size_t max_rows) {
  return load_idx_rows(images_path, labels_path, max_rows, {});
}

dataset select_rows(const dataset& d, const std::vector<std::uint32_t>& rows) {
  dataset out;
  out.dim = d.dim;
  out.classes = d.classes;
  out.features.resize(rows.size() * d.dim);
  out.labels.reserve(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] >= d.size())
      throw std::out_of_range("select_rows: row " + std::to_string(rows[i]) + " of " +
                              std::to_string(d.size()));
    std::copy_n(d.row(rows[i]), d.dim,
                out.features.begin() + static_cast<std::ptrdiff_t>(i * d.dim));
    out.labels.push_back(d.labels[rows[i]]);
  }
  return out;
}

}  // namespace atrain
