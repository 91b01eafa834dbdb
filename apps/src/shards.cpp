#include "shards.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
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

}  // namespace

std::string shards_json(const loaded_spec& spec, const run_plan& plan) {
  const auto& d = plan.spec.dataset();
  const bool same = d.test_path().empty();
  std::ostringstream out;
  out << "{\n  \"spec\": " << json_string(spec.file) << ",\n"
      << "  \"seed\": " << plan.spec.seed() << ",\n"
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
  out << "\n  ]\n}\n";
  return out.str();
}

int shards(const parsed& p) {
  loaded_spec spec;
  const auto plan = prepare(p, &spec);
  if (!plan)
    return 2;
  const auto json = shards_json(spec, *plan);
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
