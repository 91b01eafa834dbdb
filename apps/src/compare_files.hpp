#pragma once
/// The files `atrain compare` writes (compare.json, bars.csv, staleness.csv,
/// curves.csv, the gnuplot series and figures), from its aggregated results.
#include <filesystem>
#include <string>
#include <vector>

#include "atrain/messages/spec.hpp"
#include "compare.hpp"
#include "summary.hpp"

namespace atrain::cli {

/// `relative` under the first of compare's roots (the working directory, the
/// installed share/atrain, this build's source tree) that has it; "" if none.
[[nodiscard]] std::string find_in_tree(const std::filesystem::path& relative);
/// Those roots, for messages.
[[nodiscard]] std::string roots_text();
[[nodiscard]] std::string compare_json(const compare_args& a,
                                       const std::vector<algorithm_result>& results,
                                       const std::vector<std::uint64_t>& seeds, double target);
[[nodiscard]] std::string bars_csv(const std::vector<algorithm_result>& results);
[[nodiscard]] std::string staleness_csv(const std::vector<algorithm_result>& results);
[[nodiscard]] std::string scenario_text(const compare_args& a, const loaded_spec& base);
[[nodiscard]] std::string series_gp(const std::vector<algorithm_result>& results,
                                    const std::vector<std::uint64_t>& seeds, double target,
                                    const std::string& scenario);
void append_curves(std::string& csv, const std::string& name, const proto::RunReport& r);
[[nodiscard]] bool write_file(const std::filesystem::path& p, const std::string& text);
void draw_figures(const std::string& dir, const std::vector<algorithm_result>& results);

}  // namespace atrain::cli
