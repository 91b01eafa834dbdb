#pragma once
/// The band figures of `atrain compare`: per algorithm, the mean, min and
/// max over its seeds of the curves in curves.csv, at every evaluation time
/// of any seed (each seed linear between its evaluations; over the seeds
/// whose run lasted to that time).
#include <map>
#include <string>
#include <vector>

namespace atrain::cli {

struct band_files {
  std::map<std::string, std::string> csv;  ///< algorithm -> bands_NAME.csv text
  std::string gp;                          ///< bands.gp: which algorithms have which lines
};

/// Builds the band files from the text of curves.csv (columns by name),
/// `algorithms` in compare's order (their colour index). "" or what is wrong.
[[nodiscard]] std::string make_bands(const std::string& curves_csv,
                                     const std::vector<std::string>& algorithms, band_files& out);

}  // namespace atrain::cli
