#include "shards.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <sstream>

#include "atrain/engine.hpp"

namespace atrain::cli {

namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      static const char* hex = "0123456789abcdef";
      out += "\\u00";
      out += hex[(c >> 4) & 0xf];
      out += hex[c & 0xf];
    } else {
      out += c;
    }
  }
  return out + "\"";
}

/// The file a dataset path names, absolute so that a peer can open it from anywhere.
std::string absolute_file(const loaded_spec& spec, const std::string& p) {
  if (p.empty())
    return "";
  return std::filesystem::absolute(resolve_path(spec, p)).lexically_normal().string();
}

void index_list(std::ostream& out, const std::vector<std::uint32_t>& rows) {
  out << '[';
  for (std::size_t i = 0; i < rows.size(); ++i)
    out << (i ? "," : "") << rows[i];
  out << ']';
}

void u64_list(std::ostream& out, const google::protobuf::RepeatedField<std::uint64_t>& v) {
  out << '[';
  for (int i = 0; i < v.size(); ++i)
    out << (i ? "," : "") << v.Get(i);
  out << ']';
}

// How ζ² is defined, in the JSON and the summary alike.
constexpr const char* zeta2_definition =
  "(1/n) sum_i |grad f_i(x) - grad F(x)|^2, F the loss over all training rows (at x* grad F = 0)";

void split_json(std::ostream& out, const proto::DataSplit& split, std::size_t batch) {
  out << ",\n  \"shard_rows\": ";
  u64_list(out, split.shard_rows());
  out << ",\n  \"class_histograms\": [";
  for (int i = 0; i < split.class_histogram_size(); ++i) {
    out << (i ? ",\n    " : "\n    ");
    u64_list(out, split.class_histogram(i).rows());
  }
  out << "\n  ],\n  \"histograms_omitted\": " << (split.histograms_omitted() ? "true" : "false")
      << ",\n  \"heterogeneity\": {\"zeta2_x0\": " << std::setprecision(17) << split.zeta2_x0()
      << ", \"sigma2_x0\": " << split.sigma2_x0() << ", \"batch_size\": " << batch;
  if (split.has_zeta2_optimum())
    out << ", \"zeta2_optimum\": " << split.zeta2_optimum()
        << ", \"optimum_loss\": " << split.optimum_loss()
        << ", \"optimum_gradient_norm\": " << split.optimum_gradient_norm();
  out << ", \"zeta2_definition\": " << json_string(zeta2_definition) << "}";
}

/// The human summary: each node's rows and class histogram, then zeta^2 and sigma^2 at x0
/// and zeta^2 at the centralized optimum (convex models).
void print_summary(std::ostream& out, const run_plan& plan, const proto::DataSplit& split) {
  out << "shards: " << split.policy() << ", " << plan.nodes() << " nodes, " << plan.train->size()
      << " training rows, " << plan.train->classes << " classes\n"
      << "  node     rows  rows per class\n";
  for (int i = 0; i < split.shard_rows_size(); ++i) {
    out << std::setw(6) << i << std::setw(9) << split.shard_rows(i) << "  ";
    if (i < split.class_histogram_size()) {
      const auto& h = split.class_histogram(i).rows();
      const int shown = std::min(h.size(), 16);
      for (int c = 0; c < shown; ++c)
        out << (c ? " " : "") << h.Get(c);
      if (shown < h.size())
        out << " ... (" << h.size() << " classes)";
    } else {
      out << "(histograms omitted: nodes x classes > 65536)";
    }
    out << '\n';
  }
  out << "zeta^2 at x0 = " << split.zeta2_x0() << "   [" << zeta2_definition << "]\n"
      << "sigma^2 at x0 = " << split.sigma2_x0() << "   [minibatch gradient variance, batch "
      << plan.batch_size << " without replacement, mean over nodes]\n";
  if (split.has_zeta2_optimum())
    out << "zeta^2 at x* = " << split.zeta2_optimum()
        << "   [the centralized optimum by full-batch L-BFGS: F(x*) = " << split.optimum_loss()
        << ", |grad F(x*)| = " << split.optimum_gradient_norm() << "]\n";
  else
    out << "zeta^2 at x*: not computed (the model is not convex)\n";
}

}  // namespace

std::string shards_json(const loaded_spec& spec, const run_plan& plan,
                        const proto::DataSplit* split) {
  const auto& d = plan.spec.dataset();
  const bool same = d.test_path().empty();
  std::ostringstream out;
  out << "{\n  \"spec\": " << json_string(spec.file) << ",\n"
      << "  \"seed\": " << plan.seed << ",\n"
      << "  \"nodes\": " << plan.nodes() << ",\n"
      << "  \"shard_policy\": "
      << json_string(proto::ShardSpec::Policy_Name(plan.spec.shard().policy())) << ",\n"
      << "  \"format\": " << json_string(proto::DatasetSpec::Format_Name(d.format())) << ",\n"
      << "  \"dim\": " << plan.train->dim << ",\n"
      << "  \"classes\": " << plan.train->classes << ",\n"
      << "  \"train\": {\"path\": " << json_string(absolute_file(spec, d.train_path()))
      << ", \"labels_path\": " << json_string(absolute_file(spec, d.train_labels_path()))
      << ", \"rows\": " << plan.train->size() << "},\n"
      << "  \"test\": {\"same_as_train\": " << (same ? "true" : "false")
      << ", \"path\": " << json_string(absolute_file(spec, same ? d.train_path() : d.test_path()))
      << ", \"labels_path\": "
      << json_string(absolute_file(spec, same ? d.train_labels_path() : d.test_labels_path()))
      << ", \"rows\": " << plan.test->size() << "},\n"
      << "  \"train_eval_rows\": ";
  index_list(out, plan.train_eval_rows);
  out << ",\n  \"shards\": [";
  for (std::size_t i = 0; i < plan.shard.size(); ++i) {
    out << (i ? ",\n    " : "\n    ");
    index_list(out, plan.shard[i]);
  }
  out << "\n  ]";
  if (split)
    split_json(out, *split, plan.batch_size);
  out << "\n}\n";
  return out.str();
}

int shards(const parsed& p) {
  loaded_spec spec;
  const auto plan = prepare(p, &spec);
  if (!plan)
    return 2;
  auto split = describe_split(*plan, true);
  (void)add_optimum_heterogeneity(*plan, split);
  print_summary(std::cerr, *plan, split);
  const auto json = shards_json(spec, *plan, &split);
  if (p.out.empty() || p.out == "-") {
    std::cout << json;
    return 0;
  }
  std::error_code ec;  // a missing parent directory is made, as `run --out` does
  if (const auto dir = std::filesystem::path{p.out}.parent_path(); !dir.empty())
    std::filesystem::create_directories(dir, ec);
  std::ofstream out{p.out};
  out << json;
  out.close();
  if (!out) {
    std::cerr << "atrain: " << p.out << ": cannot write\n";
    return 1;
  }
  std::cerr << "wrote " << p.out << " (" << plan->nodes() << " shards of " << plan->train->size()
            << " training rows)\n";
  return 0;
}

}  // namespace atrain::cli
