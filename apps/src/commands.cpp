#include "commands.hpp"

#include <fstream>
#include <iomanip>
#include <iostream>

#include "atrain/engine.hpp"
#include "options.hpp"

namespace atrain::cli {

namespace {

/// Loads, validates and prepares; prints the spec error and returns null.
std::shared_ptr<const run_plan> prepare(const parsed& p, loaded_spec* out = nullptr) {
  try {
    auto spec = load_spec(p.spec, p.overrides);
    auto plan = prepare_run(spec);
    if (out)
      *out = std::move(spec);
    return plan;
  } catch (const spec_error& e) {
    std::cerr << "atrain: invalid spec:\n" << e.what() << "\n";
    return nullptr;
  }
}

void print_summary(const proto::RunReport& r) {
  std::cout << "algorithm       " << r.algorithm() << " (" << r.clock() << " clock, " << r.nodes()
            << " nodes, seed " << r.seed() << ")\n"
            << "stopped         " << r.stop_reason() << " at t=" << r.duration_seconds() << " s\n"
            << "evaluated model " << r.evaluated_model() << "\n"
            << "final           train_loss=" << std::setprecision(6) << r.final().train_loss()
            << " test_accuracy=" << r.final().test_accuracy() << "\n";
  if (r.target_accuracy() > 0) {
    std::cout << "time to " << r.target_accuracy() << "  ";
    if (r.has_time_to_target())
      std::cout << r.time_to_target() << " s\n";
    else
      std::cout << "not reached\n";
  }
  std::cout << "gradients       " << r.gradients_total() << "\n"
            << "messages        " << r.messages_sent() << " (" << r.bytes_sent() << " bytes, "
            << r.packets_dropped() << " dropped)\n"
            << "staleness       mean " << r.staleness_mean() << ", max " << r.staleness_max()
            << "\n"
            << "consensus error " << r.consensus_error() << "\n";
  if (r.late_contributions() > 0) {  // straggler_policy SKIP: who joined late, how often
    std::cout << "late gradients  " << r.late_contributions() << " (";
    const char* sep = "";
    for (const auto& n : r.per_node())
      if (n.late_contributions() > 0) {
        std::cout << sep << "node " << n.node() << ": " << n.late_contributions();
        sep = ", ";
      }
    std::cout << ")\n";
  }
  if (r.algorithm() == "rfast")
    std::cout << "mass residual   " << r.mass_residual() << "\n";
  if (!r.resumed_from().empty())
    std::cout << "resumed from    " << r.resumed_from() << " (taken at t=" << r.resumed_at_seconds()
              << " s)\n";
  for (const auto& c : r.checkpoints())
    std::cout << "checkpoint " << c.number() << "    requested at t=" << c.requested_seconds()
              << " s, taken at t=" << c.taken_seconds() << " s (drain " << c.drain_seconds()
              << " s) -> " << c.file() << " (" << c.bytes() << " bytes)\n";
  std::cout << "trace hash      " << r.trace_hash() << " (" << r.trace_events() << " events)\n";
  for (const auto& w : r.warnings())
    std::cout << "warning: " << w << "\n";
  if (!r.error().empty())
    std::cout << "error: " << r.error() << "\n";
}

} // namespace

int run(const parsed& p) {
  loaded_spec spec;
  auto plan = prepare(p, &spec);
  if (!plan)
    return 2;
  run_options opts;
  opts.progress = p.progress;
  opts.threads = p.threads;
  if (!p.caf.empty())
    opts.configure_system = [caf = p.caf](caf::actor_system_config& cfg) {
      return apply_caf(cfg, caf);
    };
  opts.deploy.hosts = p.hosts;
  opts.deploy.tls = {p.tls_cert, p.tls_key, p.tls_ca};
  if (!p.secret_file.empty()) {
    auto secret = read_secret_file(p.secret_file);
    if (!secret) {
      std::cerr << "atrain run: --secret-file: " << error_text(secret.error()) << "\n";
      return 2;
    }
    opts.deploy.secret = *secret;
  }
  // The deployment as the run will see it (flags over the spec's deploy
  // block): no secret nor TLS, unusable TLS files, a bad placement exit 2
  // here, before any host is contacted.
  auto deploy = deploy_options_of(*plan, opts.deploy);
  if (!deploy) {
    std::cerr << "atrain run: " << error_text(deploy.error()) << "\n";
    return 2;
  }
  if (!p.resume.empty()) {
    auto ck = load_checkpoint(p.resume, *plan);
    if (!ck) {
      std::cerr << "atrain run: cannot resume: " << error_text(ck.error()) << "\n";
      return 2;
    }
    // Taken with another deploy (host count, placement): refused here, before
    // any host is contacted (run_experiment checks it again for embedders).
    if (auto ok = check_resume_deploy(**ck, p.resume, *deploy, plan->nodes()); !ok) {
      std::cerr << "atrain run: cannot resume: " << error_text(ok.error()) << "\n";
      return 2;
    }
    opts.resume = std::move(*ck);
    opts.resume_file = p.resume;
  }
  auto report = run_experiment(plan, opts);
  if (!report) {
    std::cerr << "atrain run: " << error_text(report.error()) << "\n";
    return 1;
  }
  print_summary(*report);
  const std::string out = !p.out.empty() ? p.out : resolve_path(spec, plan->spec.out_dir());
  if (!out.empty()) {
    if (auto ok = write_outputs(*report, out); !ok) {
      std::cerr << "atrain run: " << error_text(ok.error()) << "\n";
      return 1;
    }
    std::cout << "wrote           " << out << "/report.json, metrics.csv, report.pb\n";
  }
  return report->error().empty() ? 0 : 1;
}

int topology(const parsed& p) {
  auto plan = prepare(p);
  if (!plan)
    return 2;
  if (!plan->topo) {
    std::cout << "nodes 1 (single-node algorithm: no topology)\n";
    return 0;
  }
  const auto& t = *plan->topo;
  std::cout << "nodes  " << t.g_r.size() << "\n"
            << "G_R    " << t.g_r.num_edges() << " edges (pull models)\n"
            << "G_C    " << t.g_c.num_edges() << " edges (push tracker mass)\n"
            << "roots  ";
  for (auto r : t.roots)
    std::cout << r << ' ';
  std::cout << "\ngap    R " << t.gap_r << ", C " << t.gap_c << "\n";
  for (const auto& e : t.g_r.edges())
    std::cout << "  R " << e.from << " -> " << e.to << "\n";
  for (const auto& e : t.g_c.edges())
    std::cout << "  C " << e.from << " -> " << e.to << "\n";
  for (const auto& w : t.warnings)
    std::cout << "warning: " << w << "\n";
  if (!p.dot.empty()) {
    std::ofstream out{p.dot};
    out << to_dot(t);
    if (!out) {
      std::cerr << "atrain: " << p.dot << ": cannot write\n";
      return 1;
    }
    std::cout << "wrote  " << p.dot << "\n";
  }
  return 0;
}

int check(const parsed& p) {
  auto plan = prepare(p);
  if (!plan)
    return 2;
  std::cout << p.spec << ": OK (" << plan->algorithm_name() << ", " << plan->nodes()
            << " nodes, " << plan->train->size() << " training samples, " << plan->dim()
            << " parameters)\n";
  for (const auto& w : plan->warnings)
    std::cout << "warning: " << w << "\n";
  return 0;
}

} // namespace atrain::cli
