#include "commands.hpp"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "atrain/engine.hpp"
#include "interrupt.hpp"
#include "options.hpp"
#include "summary.hpp"

namespace atrain::cli {

std::shared_ptr<const run_plan> prepare(const parsed& p, loaded_spec* out) {
  try {
    auto spec = load_spec(p.spec, p.overrides);
    if (p.edit_spec)
      p.edit_spec(spec);
    auto plan = prepare_run(spec);
    if (out)
      *out = std::move(spec);
    return plan;
  } catch (const spec_error& e) {
    std::cerr << "atrain: invalid spec:\n" << e.what() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << "atrain: " << p.spec << ": out of memory while loading the data and preparing "
              << "the run (std::bad_alloc): the spec or its data asks for more memory than this "
              << "machine gives; docs/RELIABILITY.md \"Bounds\" lists the limits\n";
  }
  return nullptr;
}

namespace {

/// runs/<spec name>-<UTC time>[-N] under the working directory, a name no
/// run has yet (never an existing run's directory).
std::string default_out_dir(const std::string& name) {
  namespace fs = std::filesystem;
  char stamp[32];
  const std::time_t now = std::time(nullptr);
  std::tm utc{};
  gmtime_r(&now, &utc);
  std::strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
  std::string base = "runs/" + (name.empty() ? std::string{"run"} : name) + "-" + stamp;
  std::string dir = base;
  for (int k = 2; fs::exists(dir); ++k)
    dir = base + "-" + std::to_string(k);
  return dir;
}

}  // namespace

int run(const parsed& p) {
  auto control = std::make_shared<run_control>();
  interrupt_guard interrupt{control};
  return run(p, control, interrupt);
}

int run(const parsed& p, const std::shared_ptr<run_control>& control, interrupt_guard& interrupt) {
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
  // The output directory is known before the run: metrics.csv and
  // events.jsonl are written as it goes.
  std::string out = !p.out.empty() ? p.out : resolve_path(spec, plan->spec.out_dir());
  if (out.empty()) {
    out = default_out_dir(plan->spec.name());
    if (!p.quiet)
      std::cout << "writing to      " << out << " (no --out or out_dir given)\n" << std::flush;
  }
  opts.out_dir = out;
  opts.control = control;
  auto report = run_experiment(plan, opts);
  if (!report) {
    std::cerr << "atrain run: " << error_text(report.error()) << "\n";
    interrupt.finish();
    return interrupt.exit_status(1);
  }
  if (p.take_report)
    p.take_report(*report);
  const auto written = write_outputs(*report, out);
  if (written && !p.quiet)
    std::cout << "wrote           " << out
              << "/report.json, metrics.csv, events.jsonl, report.pb\n";
  if (!p.quiet)
    print_summary(*report, std::cout);  // its last line says when nodes were lost
  if (!written) {
    std::cerr << "atrain run: " << error_text(written.error()) << "\n";
    interrupt.finish();
    return interrupt.exit_status(1);
  }
  interrupt.finish();
  return interrupt.exit_status(report->error().empty() ? 0 : 1);
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
  std::cout << p.spec << ": OK (" << plan->algorithm_name() << ", " << plan->nodes() << " nodes, "
            << plan->train->size() << " training samples, " << plan->dim() << " parameters)\n";
  for (const auto& w : plan->warnings)
    std::cout << "warning: " << w << "\n";
  return 0;
}

}  // namespace atrain::cli
