// The training data of a plan: loaded, checked, split; on a host only its nodes' rows.
#include "run_data.hpp"

#include "atrain/actors/run_plan.hpp"

namespace atrain::plan_detail {

[[noreturn]] void refuse(const loaded_spec& ls, const std::string& field, const std::string& why) {
  throw spec_error(ls.where(field) + ": " + why);
}

namespace {

/// d, or only the rows `choose` picks (a whole load compacted).
std::shared_ptr<const dataset> chosen(dataset d, const row_choice& choose) {
  if (!choose)
    return std::make_shared<const dataset>(std::move(d));
  return std::make_shared<const dataset>(select_rows(d, choose(d.labels, d.classes)));
}

void check_sha256(const loaded_spec& ls, const std::string& field, const std::string& path,
                  const std::string& expected) {
  if (expected.empty())
    return;
  std::string got;
  try {
    got = sha256_of_contents(path);  // never the whole contents at once
  } catch (const dataset_error& e) {
    refuse(ls, field, e.what());
  }
  if (got != expected)
    refuse(ls, field,
           path + ": sha256 of the decompressed contents is " + got + ", expected " + expected);
}

std::shared_ptr<const dataset> load_rows(const loaded_spec& ls, bool test, std::size_t dim,
                                         const row_choice& choose) {
  const auto& d = ls.spec.dataset();
  const std::string field = test ? "dataset.test_path" : "dataset.train_path";
  const auto path = resolve_path(ls, test ? d.test_path() : d.train_path());
  const auto labels = resolve_path(ls, test ? d.test_labels_path() : d.train_labels_path());
  const std::size_t max_rows = test ? d.max_test_samples() : d.max_train_samples();
  check_sha256(ls, test ? "dataset.test_sha256" : "dataset.train_sha256", path,
               test ? d.test_sha256() : d.train_sha256());
  try {
    switch (d.format()) {
      case proto::DatasetSpec::LIBSVM:
        return chosen(load_libsvm(path, dim, max_rows), choose);
      case proto::DatasetSpec::IDX:
        return std::make_shared<const dataset>(load_idx_rows(path, labels, max_rows, choose));
      case proto::DatasetSpec::CIFAR10:
        return chosen(load_cifar10({path}, max_rows), choose);
      default:
        refuse(ls, "dataset.format", "unsupported format");
    }
  } catch (const dataset_error& e) {
    refuse(ls, field, e.what());
  }
}

/// The spec's split of the training rows over n nodes; what the data makes impossible
/// (more classes per node than it has, a bound) is refused naming the field.
shards make_shards(const loaded_spec& ls, const dataset& train, std::size_t n) {
  const auto& sh = ls.spec.shard();
  const std::uint64_t seed = derive_seed(ls.spec.seed(), 0x53484152ULL);
  using P = proto::ShardSpec;
  const char* field = "shard.policy";
  try {
    switch (sh.policy()) {
      case P::LABEL_SKEW:
        field = "shard.dirichlet_alpha";
        return shard_label_skew(train.labels, train.classes, n, sh.dirichlet_alpha(), seed);
      case P::LABEL_SKEW_UNEQUAL:
        field = "shard.dirichlet_alpha";
        return shard_label_skew_unequal(train.labels, train.classes, n, sh.dirichlet_alpha(), seed);
      case P::PATHOLOGICAL:
        field = "shard.classes_per_node";
        if (sh.classes_per_node() > train.classes)
          refuse(ls, field,
                 "must be <= the dataset's " + std::to_string(train.classes) + " classes (got " +
                   std::to_string(sh.classes_per_node()) + ")");
        return shard_pathological(train.labels, train.classes, n, sh.classes_per_node(), seed);
      case P::FEATURE_SKEW: {
        field = "shard.clusters";
        const std::size_t k = sh.clusters() == 0 ? n : sh.clusters();
        if (k > train.size())
          refuse(ls, field,
                 std::to_string(k) + " clusters but only " + std::to_string(train.size()) +
                   " training rows");
        return shard_feature_skew(train, n, k, seed);
      }
      default:
        return shard_iid(train.size(), n, seed);
    }
  } catch (const std::invalid_argument& e) {
    refuse(ls, field, e.what());
  }
}

/// Refuses a training set that cannot feed n nodes.
void check_rows(const loaded_spec& ls, std::size_t rows, std::size_t n) {
  if (rows == 0)
    refuse(ls, "dataset.train_path", "the training set is empty");
  if (n > rows)
    refuse(ls, "nodes",
           "more nodes (" + std::to_string(n) + ") than training samples (" + std::to_string(rows) +
             ")");
}

/// The rows of the nodes in `local` (ids >= n skipped), node after node; records
/// where each starts in out.offset.
std::vector<std::uint32_t> local_rows(train_data& out, std::size_t n,
                                      const std::vector<std::uint32_t>& local) {
  std::vector<std::uint32_t> rows;
  out.offset.assign(n, run_plan::not_local);
  for (auto k : local) {
    if (k >= n || out.offset[k] != run_plan::not_local)
      continue;
    out.offset[k] = rows.size();
    rows.insert(rows.end(), out.shard[k].begin(), out.shard[k].end());
  }
  return rows;
}

}  // namespace

std::shared_ptr<const dataset> load(const loaded_spec& ls, bool test, std::size_t dim) {
  return load_rows(ls, test, dim, {});
}

train_data load_train(const loaded_spec& ls, std::size_t n,
                      const std::vector<std::uint32_t>* local) {
  const std::size_t dim = ls.spec.dataset().dimension();
  train_data out;
  // A feature-skewed split needs every row's features: loaded whole, then compacted.
  if (local == nullptr || ls.spec.shard().policy() == proto::ShardSpec::FEATURE_SKEW) {
    auto whole = load(ls, false, dim);
    check_rows(ls, whole->size(), n);
    out.rows = whole->size();
    out.shard = make_shards(ls, *whole, n);
    out.train =
      local == nullptr
        ? std::move(whole)
        : std::make_shared<const dataset>(select_rows(*whole, local_rows(out, n, *local)));
    return out;
  }
  // Split on the labels alone, then keep (decode, for IDX) only the local rows.
  out.train =
    load_rows(ls, false, dim, [&](const std::vector<std::int32_t>& labels, std::size_t classes) {
      check_rows(ls, labels.size(), n);
      dataset tags;  // what the label-based splits read: size, labels and classes
      tags.classes = classes;
      tags.labels = labels;
      out.rows = labels.size();
      out.shard = make_shards(ls, tags, n);
      return local_rows(out, n, *local);
    });
  return out;
}

}  // namespace atrain::plan_detail
