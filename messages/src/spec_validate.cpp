// Semantic validation of an experiment spec: every problem, one per line.
// The data, model, algorithm and topology blocks; spec_validate_run.cpp has the rest.
#include "spec_validate.hpp"

#include <cmath>
#include <filesystem>
#include <set>
#include <vector>

namespace atrain {
namespace validation {

namespace fs = std::filesystem;
// = data_limits::max_classes (kernels/, which messages/ does not depend on).
constexpr std::uint32_t kernel_max_classes = 1u << 16;

std::uint64_t mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? saturated : r;
}
std::uint64_t add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? saturated : r;
}
std::string figure(std::uint64_t x) {
  return x == saturated ? "more than 2^64" : std::to_string(x);
}
// "134217728 (512 MiB of floats)"
std::string floats(std::uint64_t x) {
  return figure(x) + " (" + (x == saturated ? std::string("> 2^64") : std::to_string(x >> 18)) +
         " MiB of floats)";
}

bool valid_utf8(const std::string& s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t len = c < 0x80           ? 1
                      : (c >> 5) == 0x6  ? 2
                      : (c >> 4) == 0xe  ? 3
                      : (c >> 3) == 0x1e ? 4
                                         : 0;
    if (len == 0 || i + len > s.size())
      return false;
    std::uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (std::size_t k = 1; k < len; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 0x2)
        return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    static const std::uint32_t min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += len;
  }
  return true;
}

std::string idx(const std::string& path, int i) {
  return path + "[" + std::to_string(i) + "]";
}

/// "A, B, ... or Z": the cases of AlgorithmSpec's oneof, in field order.
std::string algorithm_choices() {
  const auto* kind = proto::AlgorithmSpec::descriptor()->FindOneofByName("kind");
  std::string out;
  for (int i = 0; i < kind->field_count(); ++i)
    out += (i == 0 ? "" : i + 1 == kind->field_count() ? " or " : ", ") + kind->field(i)->name();
  return out;
}

void checker::generic_checks(const pb::Message& m, const std::string& prefix) {
  const pb::Reflection* r = m.GetReflection();
  std::vector<const FD*> fields;
  r->ListFields(m, &fields);
  for (const FD* f : fields) {
    const std::string path = prefix.empty() ? f->name() : prefix + "." + f->name();
    const int n = f->is_repeated() ? r->FieldSize(m, f) : 1;
    for (int i = 0; i < n; ++i) {
      const std::string p = f->is_repeated() ? idx(path, i) : path;
      double x = 0;
      switch (f->cpp_type()) {
        case FD::CPPTYPE_DOUBLE:
          x = f->is_repeated() ? r->GetRepeatedDouble(m, f, i) : r->GetDouble(m, f);
          break;
        case FD::CPPTYPE_FLOAT:
          x = f->is_repeated() ? r->GetRepeatedFloat(m, f, i) : r->GetFloat(m, f);
          break;
        case FD::CPPTYPE_STRING: {
          std::string scratch;
          const std::string& v = f->is_repeated() ? r->GetRepeatedStringReference(m, f, i, &scratch)
                                                  : r->GetStringReference(m, f, &scratch);
          if (!valid_utf8(v))
            bad(p, "must be valid UTF-8 text");
          continue;
        }
        case FD::CPPTYPE_MESSAGE:
          generic_checks(f->is_repeated() ? r->GetRepeatedMessage(m, f, i) : r->GetMessage(m, f),
                         p);
          continue;
        default:
          continue;
      }
      if (!std::isfinite(x))
        bad(p, "must be a finite number (got " + num(x) + ")");
    }
  }
}

void checker::file_exists(const std::string& path, const std::string& value) {
  if (value.empty())
    return;
  const std::string resolved = resolve_path(s_, value);
  std::error_code ec;
  const auto st = fs::status(resolved, ec);
  if (ec || !fs::exists(st)) {
    bad(path, "file not found: " + resolved);
  } else if (!fs::is_regular_file(st)) {
    bad(path, "not a regular file: " + resolved);
  }
}

void checker::run() {
  const auto& sp = s_.spec;
  const bool nodes_ok = sp.nodes() >= 1 && sp.nodes() <= max_nodes;
  if (sp.nodes() < 1)
    bad("nodes", "must be >= 1 (got 0)");
  if (sp.nodes() > max_nodes)
    bad("nodes",
        "must be <= " + std::to_string(max_nodes) + " (got " + std::to_string(sp.nodes()) + ")");
  if (sp.clock() != proto::VIRTUAL && sp.clock() != proto::REAL)
    bad("clock", "must be VIRTUAL or REAL");

  generic_checks(sp, "");
  dataset();
  model();
  algorithm();
  if (facts_.uses_topology)
    topology(nodes_ok);
  cost(nodes_ok);
  link();
  faults(nodes_ok);
  stop_and_eval();
  deploy();
  checkpoint();
  // The data's dimension and classes are known once loaded (check_model_size then);
  // here the spec's dimension, else lower bounds.
  const std::uint64_t dim = sp.dataset().dimension();
  if (dim <= max_dimension)
    model_size(dim == 0 ? 1 : dim, 2, dim != 0);
}

void checker::model_size(std::uint64_t dim, std::uint64_t classes, bool known) {
  const auto& m = s_.spec.model();
  std::vector<std::uint64_t> widths{dim};
  if (m.has_mlp()) {
    for (const auto h : m.mlp().hidden()) {
      if (h > limits::max_layer_width)
        return;  // reported by model()
      widths.push_back(h);
    }
    widths.push_back(std::max<std::uint64_t>(classes, 2));
  } else if (m.has_logistic_regression()) {
    widths.push_back(1);
  } else {
    return;
  }
  std::uint64_t params = 0;
  std::uint64_t width_sum = 0;
  std::string shape;
  for (std::size_t l = 0; l < widths.size(); ++l) {
    if (l + 1 < widths.size())
      params = add(params, mul(add(widths[l], 1), widths[l + 1]));
    width_sum = add(width_sum, widths[l]);
    shape += (l ? " x " : "") + std::to_string(widths[l]);
  }
  const std::string layers =
    " (layers " + shape + (known ? "" : ", with the dimension and classes still unknown") + ")";
  size_bounds(params, width_sum, "sum of layer widths", layers, known);
}

void checker::size_bounds(std::uint64_t params, std::uint64_t values_per_row, const char* per_row,
                          const std::string& layers, bool known) {
  const auto& m = s_.spec.model();
  const std::string at_least = known ? "" : "at least ";
  if (params > limits::max_params)
    bad("model", "the model has " + at_least + figure(params) + " parameters" + layers +
                   "; the limit is " + floats(limits::max_params));
  const std::uint64_t batch = mul(m.batch_size(), values_per_row);
  if (batch > limits::max_batch_values)
    bad("model.batch_size",
        "batch_size x (" + std::string(per_row) + ") = " + std::to_string(m.batch_size()) + " x " +
          figure(values_per_row) + " = " + at_least + figure(batch) + " values per node" + layers +
          "; the limit is " + floats(limits::max_batch_values));
  const std::uint64_t nodes = s_.spec.nodes();
  const std::uint64_t total = mul(nodes, add(params, batch));
  if (params <= limits::max_params && batch <= limits::max_batch_values &&
      total > limits::max_run_values)
    bad("nodes", "nodes x (parameters + batch values) = " + std::to_string(nodes) + " x " +
                   figure(add(params, batch)) + " = " + at_least + figure(total) + layers +
                   "; the limit is " + floats(limits::max_run_values));
}

void checker::deploy() {
  const auto& d = s_.spec.deploy();
  for (int i = 0; i < d.hosts_size(); ++i) {
    const auto& h = d.hosts(i);
    const auto path = "deploy.hosts[" + std::to_string(i) + "]";
    std::string why;
    const auto hp = parse_host_port(h, why);
    if (!hp || hp->second == 0)
      bad(path, "must be HOST:PORT with a port in 1..65535 (got \"" + h + "\")");
  }
  if (d.hosts_size() > 0 && s_.spec.clock() != proto::REAL)
    bad("deploy.hosts", "only REAL-clock runs span hosts (set clock: REAL)");
  if (d.placement_size() > 0) {
    if (d.hosts_size() == 0)
      bad("deploy.placement", "needs deploy.hosts");
    else if (static_cast<std::uint32_t>(d.placement_size()) != s_.spec.nodes())
      bad("deploy.placement", "needs one host index per node (" + std::to_string(s_.spec.nodes()) +
                                ", got " + std::to_string(d.placement_size()) + ")");
    for (int i = 0; i < d.placement_size(); ++i)
      if (d.placement(i) >= static_cast<std::uint32_t>(std::max(1, d.hosts_size())))
        bad("deploy.placement[" + std::to_string(i) + "]",
            "host index " + std::to_string(d.placement(i)) + " is out of range (" +
              std::to_string(d.hosts_size()) + " hosts)");
  }
  file_exists("deploy.secret_file", d.secret_file());
  const auto& t = d.tls();
  const int given = !t.certificate().empty() + !t.key().empty() + !t.ca().empty();
  if (given != 0 && given != 3)
    bad("deploy.tls", "certificate, key and ca go together (all three or none)");
  file_exists("deploy.tls.certificate", t.certificate());
  file_exists("deploy.tls.key", t.key());
  file_exists("deploy.tls.ca", t.ca());
}

void checker::dataset() {
  const auto& d = s_.spec.dataset();
  using F = proto::DatasetSpec;
  if (d.format() != F::LIBSVM && d.format() != F::IDX && d.format() != F::CIFAR10)
    bad("dataset.format", "must be LIBSVM, IDX or CIFAR10");
  if (d.train_path().empty())
    bad("dataset.train_path", "must be set");
  file_exists("dataset.train_path", d.train_path());
  file_exists("dataset.test_path", d.test_path());
  if (d.format() == F::IDX) {
    if (d.train_labels_path().empty())
      bad("dataset.train_labels_path", "must be set for IDX (the labels file)");
    file_exists("dataset.train_labels_path", d.train_labels_path());
    if (!d.test_path().empty() && d.test_labels_path().empty())
      bad("dataset.test_labels_path", "must be set for IDX when test_path is set");
    file_exists("dataset.test_labels_path", d.test_labels_path());
  }
  if (d.dimension() > max_dimension)
    bad("dataset.dimension", "must be <= " + std::to_string(max_dimension) + " (got " +
                               std::to_string(d.dimension()) + ")");

  const auto& sh = s_.spec.shard();
  using P = proto::ShardSpec;
  if (!P::Policy_IsValid(sh.policy())) {
    bad("shard.policy", "must be IID, LABEL_SKEW, LABEL_SKEW_UNEQUAL, PATHOLOGICAL or "
                        "FEATURE_SKEW (got " +
                          std::to_string(sh.policy()) + ")");
    return;
  }
  const std::string policy = P::Policy_Name(sh.policy());
  if (sh.policy() == P::LABEL_SKEW || sh.policy() == P::LABEL_SKEW_UNEQUAL) {
    if (std::isfinite(sh.dirichlet_alpha()) && !(sh.dirichlet_alpha() > 0))
      bad("shard.dirichlet_alpha",
          "must be > 0 for " + policy + " (got " + num(sh.dirichlet_alpha()) + ")");
  }
  // The class bound against the dataset's own classes is the engine's (run_plan.cpp).
  if (sh.policy() == P::PATHOLOGICAL) {
    if (sh.classes_per_node() == 0)
      bad("shard.classes_per_node", "must be >= 1 for PATHOLOGICAL (got 0)");
    else if (sh.classes_per_node() > kernel_max_classes)
      bad("shard.classes_per_node", "must be <= " + std::to_string(kernel_max_classes) +
                                      ", the most classes a dataset may have (got " +
                                      std::to_string(sh.classes_per_node()) + ")");
  } else if (sh.classes_per_node() != 0) {
    bad("shard.classes_per_node", "is read by PATHOLOGICAL only (policy is " + policy + ")");
  }
  if (sh.policy() == P::FEATURE_SKEW) {
    if (sh.clusters() > limits::max_clusters)
      bad("shard.clusters", "must be <= " + std::to_string(limits::max_clusters) + " (got " +
                              std::to_string(sh.clusters()) + ")");
  } else if (sh.clusters() != 0) {
    bad("shard.clusters", "is read by FEATURE_SKEW only (policy is " + policy + ")");
  }
}

void checker::model() {
  const auto& m = s_.spec.model();
  switch (m.kind_case()) {
    case proto::ModelSpec::kLogisticRegression:
      non_negative("model.logistic_regression.l2", m.logistic_regression().l2());
      break;
    case proto::ModelSpec::kMlp:
      for (int i = 0; i < m.mlp().hidden_size(); ++i) {
        if (m.mlp().hidden(i) < 1)
          bad(idx("model.mlp.hidden", i), "layer width must be >= 1 (got 0)");
        if (m.mlp().hidden(i) > limits::max_layer_width)
          bad(idx("model.mlp.hidden", i),
              "layer width must be <= " + std::to_string(limits::max_layer_width) + " (got " +
                std::to_string(m.mlp().hidden(i)) + ")");
      }
      non_negative("model.mlp.l2", m.mlp().l2());
      break;
    case proto::ModelSpec::kCnn:
      cnn();
      break;
    case proto::ModelSpec::KIND_NOT_SET:
      bad("model", "choose a model: logistic_regression, mlp or cnn");
      break;
  }
  if (m.batch_size() < 1)
    bad("model.batch_size", "must be >= 1 (got 0)");
}

// The algorithm's own block is its descriptor's to check (spec_facts::check_block).
void checker::algorithm() {
  if (s_.spec.algorithm().kind_case() == proto::AlgorithmSpec::KIND_NOT_SET)
    bad("algorithm", "choose an algorithm: " + algorithm_choices());
  else if (facts_.check_block)
    facts_.check_block(*this);
}

void checker::topology(bool nodes_ok) {
  const auto& t = s_.spec.topology();
  const std::uint64_t n = s_.spec.nodes();
  using T = proto::TopologySpec;
  if (!T::Builder_IsValid(t.builder())) {
    bad("topology.builder", "unknown builder " + std::to_string(t.builder()));
    return;
  }
  if (t.builder() == T::BUILDER_UNSPECIFIED) {
    if (n > 1)
      bad("topology.builder", "must be set when nodes > 1");
    return;
  }
  const std::string ns = std::to_string(n);
  const std::string builder = T::Builder_Name(t.builder());
  if (nodes_ok && n > limits::max_topology_nodes) {
    bad("nodes", "must be <= " + std::to_string(limits::max_topology_nodes) +
                   " for an algorithm on a topology (got " + ns +
                   "): its weights R and C are dense nodes x nodes matrices of doubles, " +
                   std::to_string(mul(mul(n, n), 16) >> 20) + " MiB for " + ns + " nodes");
    return;
  }
  if (nodes_ok) {  // per graph, an upper bound: nodes x neighbours
    std::uint64_t log2n = 0;
    while ((std::uint64_t{1} << log2n) < n)
      ++log2n;
    const std::uint64_t edges =
      t.builder() == T::COMPLETE                                                ? mul(n, n - 1)
      : t.builder() == T::RANDOM_REGULAR                                        ? mul(n, t.degree())
      : t.builder() == T::EXPONENTIAL || t.builder() == T::DIRECTED_EXPONENTIAL ? mul(n, log2n)
      : t.builder() == T::BIPARTITE_EXPONENTIAL ? mul(n, 2 * (log2n + 1))
      : t.builder() == T::EXPLICIT
        ? static_cast<std::uint64_t>(std::max(t.r_edges_size(), t.c_edges_size()))
        : mul(n, 4);  // ring, star, torus, tree
    if (edges > limits::max_edges)
      bad("topology.builder", builder + " on " + ns + " nodes has " + figure(edges) +
                                " edges (nodes x neighbours); the limit is " +
                                std::to_string(limits::max_edges) + " per graph");
  }
  switch (t.builder()) {
    case T::TREE_PAIR:
      if (t.arity() < 1)
        bad("topology.arity", "must be >= 1 for TREE_PAIR (got 0)");
      [[fallthrough]];
    case T::STAR:
      if (nodes_ok && t.root() >= n)
        bad("topology.root", "must be < nodes = " + ns + " (got " + std::to_string(t.root()) + ")");
      break;
    case T::TORUS:
      if (nodes_ok && std::uint64_t{t.rows()} * t.cols() != n)
        bad("topology.rows", "rows * cols = " + std::to_string(t.rows()) + " * " +
                               std::to_string(t.cols()) + " must equal nodes = " + ns);
      break;
    case T::RANDOM_REGULAR:
      if (!nodes_ok)
        break;
      if (t.degree() < 1 || t.degree() > n - 1) {
        bad("topology.degree", "must be in [1, nodes - 1] = [1, " + std::to_string(n - 1) +
                                 "] (got " + std::to_string(t.degree()) + ")");
      } else if ((n * t.degree()) % 2 != 0) {
        bad("topology.degree",
            "nodes * degree must be even (" + ns + " * " + std::to_string(t.degree()) + " is odd)");
      }
      break;
    case T::BIPARTITE_EXPONENTIAL:
      if (nodes_ok && n % 2 != 0)
        bad("topology.builder", "BIPARTITE_EXPONENTIAL needs an even number of nodes (even and "
                                "odd nodes are its two sides), got " +
                                  ns);
      break;
    case T::EXPLICIT: {
      auto edges = [&](const char* name,
                       const google::protobuf::RepeatedPtrField<proto::Edge>& es) {
        const std::string base = std::string("topology.") + name;
        if (nodes_ok && n > 1 && es.empty())
          bad(base, "must list at least one edge for EXPLICIT");
        for (int i = 0; i < es.size(); ++i) {
          const std::string p = idx(base, i);
          if (nodes_ok && es[i].from() >= n)
            bad(p + ".from",
                "node " + std::to_string(es[i].from()) + " out of range (nodes = " + ns + ")");
          if (nodes_ok && es[i].to() >= n)
            bad(p + ".to",
                "node " + std::to_string(es[i].to()) + " out of range (nodes = " + ns + ")");
          if (es[i].from() == es[i].to())
            bad(p,
                "self loop " + std::to_string(es[i].from()) + " -> " + std::to_string(es[i].to()));
        }
      };
      edges("r_edges", t.r_edges());
      edges("c_edges", t.c_edges());
      break;
    }
    default:
      break;  // RING, DIRECTED_RING, the EXPONENTIALs, COMPLETE: no parameters
  }
}

}  // namespace validation

namespace {

using validation::checker;

void throw_problems(const checker& c) {
  if (c.problems().empty())
    return;
  std::string msg;
  for (const auto& p : c.problems())
    msg += (msg.empty() ? "" : "\n") + p;
  throw spec_error(msg);
}

}  // namespace

void validate(const loaded_spec& s, const spec_facts& facts) {
  checker c(s, facts);
  c.run();
  throw_problems(c);
}

void check_model_size(const loaded_spec& s, std::uint64_t dim, std::uint64_t classes) {
  const spec_facts facts;
  checker c(s, facts);
  c.model_size(dim, classes, true);
  throw_problems(c);
}

void check_model_figures(const loaded_spec& s, std::uint64_t params, std::uint64_t values_per_row,
                         const std::string& shape) {
  const spec_facts facts;
  checker c(s, facts);
  c.size_bounds(params, values_per_row, "activations per row", " (" + shape + ")", true);
  throw_problems(c);
}

}  // namespace atrain
