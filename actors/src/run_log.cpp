#include "atrain/actors/run_log.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "atrain.pb.h"
#include "atrain/actors/exceptions.hpp"
#include "atrain/messages/json.hpp"

namespace atrain {

const char* metrics_csv_header() {
  return "time_seconds,gradients,train_loss,test_accuracy,consensus_error,messages,bytes,"
         "dropped,node_test_accuracy_mean,node_test_accuracy_min,node_train_loss_max,"
         "worst_node\n";
}

std::string metrics_csv_line(const metric_sample& m) {
  char line[512];
  const int n = std::snprintf(
    line, sizeof line, "%.9g,%llu,%.9g,%.9g,%.9g,%llu,%llu,%llu,", m.time_seconds,
    static_cast<unsigned long long>(m.gradients), m.train_loss, m.test_accuracy, m.consensus_error,
    static_cast<unsigned long long>(m.messages), static_cast<unsigned long long>(m.bytes),
    static_cast<unsigned long long>(m.dropped));
  if (m.nodes_evaluated == 0)
    std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), ",,,\n");
  else
    std::snprintf(line + n, sizeof line - static_cast<std::size_t>(n), "%.9g,%.9g,%.9g,%u\n",
                  m.node_test_accuracy_mean, m.node_test_accuracy_min, m.node_train_loss_max,
                  m.worst_node);
  return line;
}

metric_sample sample_of(const proto::MetricRow& m) {
  metric_sample r;
  r.time_seconds = m.time_seconds();
  r.gradients = m.gradients();
  r.train_loss = m.train_loss();
  r.test_accuracy = m.test_accuracy();
  r.consensus_error = m.consensus_error();
  r.messages = m.messages();
  r.bytes = m.bytes();
  r.dropped = m.dropped();
  r.nodes_evaluated = m.nodes_evaluated();
  r.node_test_accuracy_mean = m.node_test_accuracy_mean();
  r.node_test_accuracy_min = m.node_test_accuracy_min();
  r.node_train_loss_max = m.node_train_loss_max();
  r.worst_node = m.worst_node();
  return r;
}

void set_row(proto::MetricRow& m, const metric_sample& row) {
  m.set_time_seconds(row.time_seconds);
  m.set_gradients(row.gradients);
  m.set_train_loss(row.train_loss);
  m.set_test_accuracy(row.test_accuracy);
  m.set_consensus_error(row.consensus_error);
  m.set_messages(row.messages);
  m.set_bytes(row.bytes);
  m.set_dropped(row.dropped);
  m.set_nodes_evaluated(row.nodes_evaluated);
  m.set_node_test_accuracy_mean(row.node_test_accuracy_mean);
  m.set_node_test_accuracy_min(row.node_test_accuracy_min);
  m.set_node_train_loss_max(row.node_train_loss_max);
  m.set_worst_node(row.worst_node);
}

caf::expected<run_log_files> open_run_log(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return caf::make_error(caf::sec::runtime_error, dir + ": cannot create: " + ec.message());
  auto open = [&](const char* name) -> caf::expected<std::shared_ptr<std::FILE>> {
    const auto path = (fs::path{dir} / name).string();
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f)
      return caf::make_error(caf::sec::runtime_error,
                             path + ": cannot write: " + std::strerror(errno));
    return std::shared_ptr<std::FILE>{f, [](std::FILE* p) { std::fclose(p); }};
  };
  auto metrics = open("metrics.csv");
  if (!metrics)
    return metrics.error();
  auto events = open("events.jsonl");
  if (!events)
    return events.error();
  std::fputs(metrics_csv_header(), metrics->get());
  std::fflush(metrics->get());
  return run_log_files{std::move(*metrics), std::move(*events)};
}

namespace {

struct log_state {
  run_log_files files;
  long last_row = -1;  // offset of the last CSV row (a replacement truncates there)
  static inline const char* name = "atrain_run_log";
};

void put(std::FILE* f, const std::string& line) {
  std::fputs(line.c_str(), f);
  std::fflush(f);
}

/// The node columns of an evaluation event, when measured.
std::string node_fields(const metric_sample& m) {
  if (m.nodes_evaluated == 0)
    return {};
  return ", \"nodes_evaluated\": " + json::integer(std::uint64_t{m.nodes_evaluated}) +
         ", \"node_test_accuracy_mean\": " + json::number(m.node_test_accuracy_mean) +
         ", \"node_test_accuracy_min\": " + json::number(m.node_test_accuracy_min) +
         ", \"node_train_loss_max\": " + json::number(m.node_train_loss_max) +
         ", \"worst_node\": " + json::integer(std::uint64_t{m.worst_node});
}

std::string evaluation_event(const metric_sample& m, bool replaces) {
  using json::integer;
  using json::number;
  return "{\"event\": \"evaluation\", \"time_seconds\": " + number(m.time_seconds) +
         ", \"gradients\": " + integer(m.gradients) + ", \"train_loss\": " + number(m.train_loss) +
         ", \"test_accuracy\": " + number(m.test_accuracy) +
         ", \"consensus_error\": " + number(m.consensus_error) +
         ", \"messages\": " + integer(m.messages) + ", \"bytes\": " + integer(m.bytes) +
         ", \"dropped\": " + integer(m.dropped) + node_fields(m) +
         (replaces ? ", \"replaces_previous\": true}\n" : "}\n");
}

caf::behavior run_log_actor(caf::stateful_actor<log_state>* self, run_log_files files) {
  name_exceptions(self);
  self->state.files = std::move(files);
  self->set_down_handler([self](caf::down_msg&) { self->quit(); });
  return {
    [=](const caf::actor& watched) { self->monitor(watched); },
    [=](metric_atom, const metric_sample& row, bool replace_last) {
      auto& st = self->state;
      auto* f = st.files.metrics.get();
      const bool replaces = replace_last && st.last_row >= 0;
      if (replaces) {
        std::fflush(f);
        if (ftruncate(fileno(f), st.last_row) == 0)
          std::fseek(f, st.last_row, SEEK_SET);
      }
      st.last_row = std::ftell(f);
      put(f, metrics_csv_line(row));
      put(st.files.events.get(), evaluation_event(row, replaces));
    },
    [=](log_atom, const std::string& line) { put(self->state.files.events.get(), line + "\n"); },
  };
}

}  // namespace

caf::actor spawn_run_log(caf::actor_system& sys, run_log_files files) {
  return sys.spawn(run_log_actor, std::move(files));
}

void log_event(caf::local_actor* self, const run_context& ctx, const std::string& kind,
               const std::string& fields) {
  if (!ctx.log)
    return;
  std::string line =
    "{\"event\": " + json::quote(kind) + ", \"time_seconds\": " + json::number(ctx.seconds(self));
  if (!fields.empty())
    line += ", " + fields;
  caf::anon_send(ctx.log, log_atom::value, line + "}");
}

}  // namespace atrain
