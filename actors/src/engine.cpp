/// The engine facade: both clocks, one code path (docs/ARCHITECTURE.md "The two clocks").
#include "atrain/engine.hpp"

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <thread>

#include <caf/scheduler/test_coordinator.hpp>

#include "atrain/actors/network.hpp"
#include "atrain/actors/run_log.hpp"
#include "atrain/actors/supervisor.hpp"
#include "atrain/messages/json.hpp"

namespace atrain {

namespace {

bool want_progress(const run_plan& plan, const run_options& opts) {
  if (opts.progress)
    return *opts.progress;
  if (plan.progress)
    return *plan.progress;
  return isatty(STDERR_FILENO) != 0;
}

caf::expected<proto::RunReport> take_report(run_sink& sink) {
  std::lock_guard<std::mutex> guard{sink.mtx};
  if (!sink.report)
    return caf::make_error(caf::sec::runtime_error, "the run ended without a report");
  return *sink.report;
}

struct system_config : caf::actor_system_config {
  explicit system_config(bool virtual_clock, std::size_t threads, const tls_files* net = nullptr) {
    register_message_types(*this);
    if (net)
      configure_networking(*this, *net);
    if (virtual_clock)
      set("scheduler.policy", caf::atom("testing"));
    else
      configure_real_clock(*this, threads);
    set("logger.console-verbosity", caf::atom("quiet"));
  }
};

/// Opens the run's live log when it has an output directory (the "start"
/// event first); throws std::runtime_error naming the file.
std::optional<run_log_files> open_log(const run_plan& plan, const run_options& opts) {
  if (opts.out_dir.empty())
    return std::nullopt;
  auto files = open_run_log(opts.out_dir);
  if (!files)
    throw std::runtime_error(caf::to_string(files.error()));
  std::string line =
    "{\"event\": \"start\", \"time_seconds\": 0, \"name\": " + json::quote(plan.name) +
    ", \"algorithm\": " + json::quote(plan.algorithm_name()) +
    ", \"clock\": " + json::quote(plan.virtual_clock() ? "VIRTUAL" : "REAL") +
    ", \"nodes\": " + json::integer(static_cast<std::uint64_t>(plan.nodes())) +
    ", \"seed\": " + json::integer(static_cast<std::uint64_t>(plan.seed)) +
    ", \"time_budget_seconds\": " + json::number(plan.stop.time_seconds) +
    ", \"target_accuracy\": " + json::number(plan.stop.target_accuracy) +
    (opts.resume_file.empty() ? std::string{}
                              : ", \"resumed_from\": " + json::quote(opts.resume_file)) +
    "}\n";
  std::fputs(line.c_str(), files->events.get());
  std::fflush(files->events.get());
  return std::move(*files);
}

/// The live log's writer, watching the supervisor (it ends with it).
void start_log(caf::actor_system& sys, run_context& ctx, std::optional<run_log_files> files) {
  if (files)
    ctx.log = spawn_run_log(sys, std::move(*files));
}

void watch_supervisor(const run_context& ctx, const caf::actor& sup) {
  if (ctx.log)
    caf::anon_send(ctx.log, sup);
}

/// Bounds the actor system's shutdown on a multi-host driver: CAF's
/// middleman waits until every connection has sent what it queued, so a
/// host that froze or was cut off near the end (not yet declared lost)
/// would hold the exit. Armed once the run is over; after `grace` it drops
/// the connections that are still open (abandon_host). A thread of the
/// caller, never an actor's. Declared before the actor system: its
/// destructor (the end of the wait) runs after the system's.
class exit_watch {
public:
  void arm(const deployment& d, std::chrono::milliseconds grace) {
    deployment sockets;  // no actor handles: they must not outlive the system
    sockets.sockets = d.sockets;
    sockets.peers = d.peers;
    thread_ = std::thread{[this, sockets = std::move(sockets), grace] {
      std::unique_lock<std::mutex> lock{mtx_};
      if (cv_.wait_for(lock, grace, [this] { return done_; }))
        return;
      for (std::size_t h = 0; h < sockets.sockets.size(); ++h)
        abandon_host(sockets, h);
    }};
  }

  ~exit_watch() {
    {
      std::lock_guard<std::mutex> guard{mtx_};
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable())
      thread_.join();
  }

private:
  std::mutex mtx_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace

// ---- stopping a run from outside

void run_control::stop(std::string reason) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (requested_)
    return;
  requested_ = true;
  if (direct_) {
    if (auto sup = caf::actor_cast<caf::actor>(sup_))
      caf::anon_send(sup, stop_atom::value, std::move(reason));
    return;
  }
  pending_ = std::move(reason);
}

bool run_control::stop_requested() const {
  std::lock_guard<std::mutex> guard{mtx_};
  return requested_;
}

void run_control::attach(const caf::actor& supervisor, bool direct) {
  std::lock_guard<std::mutex> guard{mtx_};
  sup_ = supervisor.address();
  direct_ = direct;
  if (direct_ && pending_)  // requested before the run started
    caf::anon_send(supervisor, stop_atom::value, *std::exchange(pending_, std::nullopt));
  if (direct_)
    for (auto node : std::exchange(joins_, {}))
      caf::anon_send(supervisor, join_atom::value, node);
}

void run_control::detach() {
  std::lock_guard<std::mutex> guard{mtx_};
  sup_ = caf::actor_addr{};
  direct_ = false;
}

std::optional<std::string> run_control::take() {
  std::lock_guard<std::mutex> guard{mtx_};
  return std::exchange(pending_, std::nullopt);
}

void run_control::join(std::uint32_t node) {
  std::lock_guard<std::mutex> guard{mtx_};
  if (direct_) {
    if (auto sup = caf::actor_cast<caf::actor>(sup_))
      caf::anon_send(sup, join_atom::value, node);
    return;
  }
  joins_.push_back(node);  // the driving thread's next step (or the run's start) sends it
}

std::vector<std::uint32_t> run_control::take_joins() {
  std::lock_guard<std::mutex> guard{mtx_};
  return std::exchange(joins_, {});
}

// ---- virtual clock

struct virtual_run::impl {
  system_config cfg;
  caf::actor_system sys;
  caf::scheduler::test_coordinator& sched;
  std::shared_ptr<run_sink> sink = std::make_shared<run_sink>();
  caf::actor sup;
  caf::actor_addr sup_addr;  // for a stop request (sup is dropped while driving)
  std::shared_ptr<run_control> control;

  explicit impl()
    : cfg(true, 1), sys(cfg),
      sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}
};

virtual_run::virtual_run(std::shared_ptr<const run_plan> plan, run_options opts)
  : impl_(std::make_unique<impl>()), ctx_(std::make_shared<run_context>()) {
  ctx_->plan = std::move(plan);
  ctx_->probe = opts.probe;
  ctx_->resume = opts.resume;
  ctx_->resume_file = opts.resume_file;
  if (ctx_->probe)
    ctx_->probe->assign_nodes(ctx_->plan->nodes());
  start_log(impl_->sys, *ctx_, open_log(*ctx_->plan, opts));
  impl_->sup =
    spawn_supervisor(impl_->sys, ctx_, caf::actor{}, impl_->sink, want_progress(*ctx_->plan, opts));
  impl_->sup_addr = impl_->sup.address();
  watch_supervisor(*ctx_, impl_->sup);
  impl_->control = std::move(opts.control);
  if (impl_->control)
    impl_->control->attach(impl_->sup, false);
}

virtual_run::~virtual_run() {
  // Every actor must be gone before ~actor_system, or it waits forever
  // (notes/caf-virtual-time.md, gotcha 2).
  if (impl_->sup)
    caf::anon_send_exit(impl_->sup, caf::exit_reason::kill);
  impl_->sup = nullptr;
  if (impl_->control)
    impl_->control->detach();
  impl_->control = nullptr;
  while (step()) {
  }
}

bool virtual_run::step() {
  auto& sched = impl_->sched;
  if (impl_->control) {  // stop and join requests, applied at the current virtual time
    auto sup = caf::actor_cast<caf::actor>(impl_->sup_addr);
    if (auto reason = impl_->control->take(); reason && sup)
      caf::anon_send(sup, stop_atom::value, std::move(*reason));
    for (auto node : impl_->control->take_joins())
      if (sup)
        caf::anon_send(sup, join_atom::value, node);
  }
  if (sched.try_run_once()) {
    ++jobs_;
    return true;
  }
  auto& clk = sched.clock();
  if (!clk.has_pending_timeout())
    return false;
  const auto next = clk.schedule().begin()->first;
  if (next > clk.current_time)
    clk.current_time = next;
  clk.trigger_expired_timeouts();
  ++advances_;
  return true;
}

caf::expected<proto::RunReport> virtual_run::run() {
  impl_->sup = nullptr;  // the supervisor ends itself; we only drive
  while (step()) {
  }
  auto r = take_report(*impl_->sink);
  if (r)  // after the run: report-only, a pass over the training set per node
    r->mutable_data_split()->MergeFrom(describe_split(*ctx_->plan, false));
  return r;
}

double virtual_run::now_seconds() const {
  return std::chrono::duration<double>(impl_->sched.clock().now() - ctx_->t0).count();
}

// ---- both clocks

caf::expected<proto::RunReport> run_experiment(std::shared_ptr<const run_plan> plan,
                                               const run_options& opts) {
  // Wall time is measured here, by the caller's thread, never inside actors.
  const auto started = std::chrono::steady_clock::now();
  auto stamp = [&](caf::expected<proto::RunReport> r) {
    if (r)
      r->set_wall_seconds(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count());
    return r;
  };
  if (plan->virtual_clock()) {
    if (!opts.deploy.hosts.empty() || !plan->deploy.hosts.empty())
      return caf::make_error(caf::sec::invalid_argument,
                             "only REAL-clock runs span hosts (the spec says clock: VIRTUAL)");
    try {
      virtual_run run{std::move(plan), opts};
      return stamp(run.run());
    } catch (const std::runtime_error& e) {  // the output directory
      return caf::make_error(caf::sec::runtime_error, e.what());
    }
  }
  auto deploy = deploy_options_of(*plan, opts.deploy);
  if (!deploy)
    return deploy.error();
  const bool multi_host = !deploy->hosts.empty();
  if (opts.resume)
    if (auto ok = check_resume_deploy(*opts.resume, opts.resume_file, *deploy, plan->nodes()); !ok)
      return ok.error();
  auto sink = std::make_shared<run_sink>();
  std::optional<run_log_files> log;
  try {
    log = open_log(*plan, opts);
  } catch (const std::runtime_error& e) {
    return caf::make_error(caf::sec::runtime_error, e.what());
  }
  {
    exit_watch exit_bound;
    system_config cfg{false, opts.threads, multi_host ? &deploy->tls : nullptr};
    if (opts.configure_system)
      if (auto err = opts.configure_system(cfg))
        return err;
    caf::actor_system sys{cfg};
    auto ctx = std::make_shared<run_context>();
    ctx->plan = plan;
    ctx->probe = opts.probe;
    ctx->resume = opts.resume;
    ctx->resume_file = opts.resume_file;
    if (multi_host) {
      auto d = connect_hosts(sys, *plan, *deploy);
      if (!d)
        return d.error();
      ctx->deploy = std::move(*d);
      ctx->spans_processes = true;
    }
    if (ctx->probe)
      ctx->probe->assign_nodes(plan->nodes());
    start_log(sys, *ctx, std::move(log));
    auto sup = spawn_supervisor(sys, ctx, caf::actor{}, sink, want_progress(*plan, opts));
    watch_supervisor(*ctx, sup);
    if (opts.control)
      opts.control->attach(sup, true);
    sup = nullptr;
    sys.await_all_actors_done();
    if (opts.control)  // before the system goes: a late stop() sends nothing
      opts.control->detach();
    if (ctx->deploy)  // the healthy hosts' connections close well within it
      exit_bound.arm(*ctx->deploy, std::chrono::seconds{1});
    ctx->log = nullptr;
  }
  auto report = take_report(*sink);
  if (report)  // as virtual_run::run does
    report->mutable_data_split()->MergeFrom(describe_split(*plan, false));
  if (report && multi_host && links_emulated(*plan))
    report->add_warnings(
      "links were emulated (the spec's link model, link faults or restarts): every packet between "
      "nodes "
      "went through a link actor in the driver's process, an extra hop each way; without them "
      "the hosts send to each other directly (link.latency_seconds=0)");
  return stamp(std::move(report));
}

caf::expected<caf::actor> spawn_run(caf::actor_system& sys, std::shared_ptr<const run_plan> plan,
                                    caf::actor listener, bool progress) {
  if (plan->virtual_clock())
    return caf::make_error(caf::sec::invalid_argument,
                           "spawn_run embeds REAL-clock runs; use run_experiment or "
                           "virtual_run for clock: VIRTUAL");
  auto ctx = std::make_shared<run_context>();
  ctx->plan = std::move(plan);
  return spawn_supervisor(sys, ctx, std::move(listener), nullptr, progress);
}

caf::expected<void> write_outputs(const proto::RunReport& report, const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return caf::make_error(caf::sec::runtime_error, dir + ": cannot create: " + ec.message());
  auto write = [&](const std::string& name, const std::string& bytes) -> caf::expected<void> {
    const auto path = (fs::path{dir} / name).string();
    std::ofstream out{path, std::ios::binary};
    out << bytes;
    out.close();
    if (!out)
      return caf::make_error(caf::sec::runtime_error, path + ": cannot write");
    return caf::unit;
  };
  std::string csv = metrics_csv_header();
  for (const auto& m : report.metrics())
    csv += metrics_csv_line(sample_of(m));
  std::string pb;
  report.SerializeToString(&pb);
  if (auto r = write("report.json", report_to_json(report)); !r)
    return r;
  if (auto r = write("metrics.csv", csv); !r)
    return r;
  return write("report.pb", pb);
}

}  // namespace atrain
