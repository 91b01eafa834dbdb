// LIBSVM text loader: one pass over the (decompressed) buffer with from_chars,
// sparse triplets first, then densified once the dimension is known.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <system_error>
#include <vector>

#include "atrain/kernels/dataset.hpp"
#include "dataset_internal.hpp"

namespace atrain {
namespace {

constexpr std::int64_t max_label = data_limits::max_classes - 1;
constexpr std::uint64_t max_index = data_limits::max_dimension;

bool is_blank(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

std::string quote(const char* b, const char* e) {
  constexpr std::ptrdiff_t shown = 40;
  std::string s = "'";
  if (e - b > shown) {
    s.append(b, static_cast<std::size_t>(shown));
    s += "...";
  } else {
    s.append(b, e);
  }
  return s + "'";
}

/// Parses an integral label ("3", "+1", "-1", "2.0"); false if not one.
bool parse_label(const char* b, const char* e, std::int64_t& out) {
  const char* p = b;
  if (p < e && *p == '+')
    ++p;
  if (p == e || *p == '+')
    return false;
  std::int64_t v = 0;
  auto r = std::from_chars(p, e, v);
  if (r.ec == std::errc() && r.ptr == e) {
    out = v;
    return true;
  }
  double d = 0;
  auto rd = std::from_chars(p, e, d);
  if (rd.ec != std::errc() || rd.ptr != e || !std::isfinite(d) || d != std::floor(d) ||
      std::fabs(d) > static_cast<double>(max_label)) {
    return false;
  }
  out = static_cast<std::int64_t>(d);
  return true;
}

struct parser {
  parser(const std::string& p, std::size_t d) : path(p), dim(d) {}

  const std::string& path;
  std::size_t dim;  // 0 = infer
  std::size_t line = 0;

  std::vector<std::size_t> row_start{0};
  std::vector<std::uint32_t> cols;  // 0-based
  std::vector<float> vals;
  std::vector<std::int32_t> labels;
  std::uint64_t max_idx = 0;
  bool seen_minus_one = false;
  std::size_t line_minus_one = 0;
  std::int64_t seen_max = -1;
  std::size_t line_max = 0;

  [[noreturn]] void fail(const std::string& reason) const { detail::fail_line(path, line, reason); }

  void label(const char* b, const char* e) {
    std::int64_t v = 0;
    if (!parse_label(b, e, v))
      fail("bad label " + quote(b, e) + " (expected an integer, e.g. +1, -1, 0, 3)");
    if (v < -1)
      fail("bad label " + quote(b, e) + ": negative labels other than -1 are not allowed");
    if (v > max_label)
      fail("bad label " + quote(b, e) + ": class id too large (the limit is " +
           std::to_string(max_label) + ")");
    if (v == -1) {
      if (seen_max > 1) {
        fail("label -1 mixed with multiclass label " + std::to_string(seen_max) + " (line " +
             std::to_string(line_max) + ")");
      }
      if (!seen_minus_one)
        line_minus_one = line;
      seen_minus_one = true;
      labels.push_back(0);
      return;
    }
    if (v > 1 && seen_minus_one) {
      fail("label " + std::to_string(v) + " mixed with binary label -1 (line " +
           std::to_string(line_minus_one) + ")");
    }
    if (v > seen_max) {
      seen_max = v;
      line_max = line;
    }
    labels.push_back(static_cast<std::int32_t>(v));
  }

  void feature(const char* b, const char* e, std::uint64_t& prev) {
    const char* colon =
      static_cast<const char*>(std::memchr(b, ':', static_cast<std::size_t>(e - b)));
    if (!colon)
      fail("bad index:value token " + quote(b, e) + " (no ':')");
    std::uint64_t idx = 0;
    auto ri = std::from_chars(b, colon, idx);
    if (b == colon || ri.ec != std::errc() || ri.ptr != colon) {
      fail("bad index:value token " + quote(b, e) + " (index is not a positive integer)");
    }
    if (idx == 0)
      fail("bad index:value token " + quote(b, e) + ": index 0 (indices are 1-based)");
    if (dim != 0 && idx > dim) {
      fail("index " + std::to_string(idx) + " exceeds dimension " + std::to_string(dim));
    }
    if (idx > max_index)
      fail("index " + std::to_string(idx) + " too large (the limit is " +
           std::to_string(max_index) + " features)");
    if (idx <= prev) {
      fail("indices not strictly increasing: " + std::to_string(idx) + " after " +
           std::to_string(prev));
    }
    const char* v = colon + 1;
    if (v < e && *v == '+') {
      ++v;
      if (v < e && (*v == '+' || *v == '-'))
        fail("bad index:value token " + quote(b, e) + " (value is not a number)");
    }
    if (v == e)
      fail("bad index:value token " + quote(b, e) + " (missing value)");
    float x = 0;
    auto rv = std::from_chars(v, e, x);
    if (rv.ec == std::errc::result_out_of_range && rv.ptr == e) {
      // Underflow becomes 0; overflow is an error.
      const std::string copy(v, e);
      const double d = std::strtod(copy.c_str(), nullptr);
      if (std::isfinite(d) && std::fabs(d) < 1.0) {
        x = static_cast<float>(d);
      } else {
        fail("value out of float range in " + quote(b, e));
      }
    } else if (rv.ec != std::errc() || rv.ptr != e) {
      fail("bad index:value token " + quote(b, e) + " (value is not a number)");
    }
    if (!std::isfinite(x))
      fail("non-finite value in " + quote(b, e));
    prev = idx;
    if (idx > max_idx)
      max_idx = idx;
    cols.push_back(static_cast<std::uint32_t>(idx - 1));
    vals.push_back(x);
  }

  /// One line [b, e) without its '\n'. Returns false for a blank line.
  bool parse_line(const char* b, const char* e) {
    const char* p = b;
    while (p < e && is_blank(*p))
      ++p;
    if (p == e)
      return false;
    const char* t = p;
    while (p < e && !is_blank(*p))
      ++p;
    label(t, p);
    std::uint64_t prev = 0;
    for (;;) {
      while (p < e && is_blank(*p))
        ++p;
      if (p == e)
        break;
      t = p;
      while (p < e && !is_blank(*p))
        ++p;
      feature(t, p, prev);
    }
    row_start.push_back(cols.size());
    return true;
  }
};

}  // namespace

dataset load_libsvm(const std::string& path, std::size_t dim, std::size_t max_rows) {
  const std::string text = read_maybe_gzip(path);
  if (text.empty())
    detail::fail_line(path, 1, "empty file (no samples)");

  parser ps(path, dim);
  // Exact upper bounds up front: regrowing these vectors costs more (copies
  // and page faults) than two counting passes over the text.
  const std::size_t line_bound =
    static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  const std::size_t row_bound = max_rows == 0 ? line_bound : std::min(line_bound, max_rows);
  const std::size_t nnz_bound = static_cast<std::size_t>(std::count(text.begin(), text.end(), ':'));
  ps.labels.reserve(row_bound);
  ps.row_start.reserve(row_bound + 1);
  ps.cols.reserve(nnz_bound);
  ps.vals.reserve(nnz_bound);
  const char* p = text.data();
  const char* const end = p + text.size();
  while (p < end && (max_rows == 0 || ps.labels.size() < max_rows)) {
    ++ps.line;
    const char* eol =
      static_cast<const char*>(std::memchr(p, '\n', static_cast<std::size_t>(end - p)));
    if (!eol)
      eol = end;
    if (ps.parse_line(p, eol) && eol == end)
      ps.fail("the last line has no newline at its end: the file looks truncated (a complete "
              "LIBSVM file ends every line with a newline)");
    p = eol == end ? end : eol + 1;
  }
  if (ps.labels.empty())
    detail::fail_line(path, ps.line, "no samples (only blank lines)");

  dataset d;
  d.dim = dim != 0 ? dim : static_cast<std::size_t>(ps.max_idx);
  d.classes =
    ps.seen_minus_one ? 2 : std::max<std::size_t>(2, static_cast<std::size_t>(ps.seen_max + 1));
  const std::size_t rows = ps.labels.size();
  if (d.dim != 0 && rows > data_limits::max_dense_values / d.dim) {
    throw dataset_error(path + ": " + std::to_string(rows) + " rows x " + std::to_string(d.dim) +
                        " features is more than " + std::to_string(data_limits::max_dense_values) +
                        " values, the limit for a dense feature matrix (" +
                        std::to_string(data_limits::max_dense_values >> 18) + " MiB of floats)");
  }
  d.features.assign(rows * d.dim, 0.0f);
  for (std::size_t r = 0; r < rows; ++r) {
    float* out = d.features.data() + r * d.dim;
    for (std::size_t k = ps.row_start[r]; k < ps.row_start[r + 1]; ++k)
      out[ps.cols[k]] = ps.vals[k];
  }
  d.labels = std::move(ps.labels);
  return d;
}

}  // namespace atrain
