// CIFAR-10 binary loader: records of 1 label byte + 3072 pixel bytes.
#include <algorithm>
#include <string>

#include "atrain/kernels/dataset.hpp"
#include "dataset_internal.hpp"

namespace atrain {

dataset load_cifar10(const std::vector<std::string>& paths, std::size_t max_rows) {
  constexpr std::size_t dim = 3072;
  constexpr std::size_t record = dim + 1;
  if (paths.empty())
    throw dataset_error("load_cifar10: no files given");

  static const detail::pixel_table scale;
  dataset d;
  d.dim = dim;
  d.classes = 10;
  for (const std::string& path : paths) {
    if (max_rows != 0 && d.size() >= max_rows)
      break;
    const std::string bytes = read_maybe_gzip(path);
    if (bytes.empty())
      detail::fail_offset(path, 0, "empty file (no records)");
    if (bytes.size() % record != 0) {
      const std::size_t partial = bytes.size() / record * record;
      detail::fail_offset(path, partial,
                          "file size " + std::to_string(bytes.size()) +
                            " is not a multiple of the " + std::to_string(record) +
                            "-byte record size (partial record of " +
                            std::to_string(bytes.size() - partial) + " bytes)");
    }
    std::size_t n = bytes.size() / record;
    if (max_rows != 0)
      n = std::min(n, max_rows - d.size());
    for (std::size_t r = 0; r < n; ++r) {
      const auto label = static_cast<unsigned char>(bytes[r * record]);
      if (label > 9) {
        detail::fail_offset(path, r * record,
                            "label " + std::to_string(label) + " > 9 in record " +
                              std::to_string(r));
      }
    }
    const std::size_t base = d.size();
    if (base + n > data_limits::max_dense_values / dim)
      detail::fail_offset(path, 0,
                          std::to_string(base + n) + " records x " + std::to_string(dim) +
                            " pixels is more than " +
                            std::to_string(data_limits::max_dense_values) +
                            " values, the limit for a dense feature matrix");
    d.labels.resize(base + n);
    d.features.resize((base + n) * dim);
    for (std::size_t r = 0; r < n; ++r) {
      const char* rec = bytes.data() + r * record;
      d.labels[base + r] = static_cast<unsigned char>(rec[0]);
      std::transform(rec + 1, rec + record,
                     d.features.begin() + static_cast<std::ptrdiff_t>((base + r) * dim), scale);
    }
  }
  return d;
}

}  // namespace atrain
