#include "commands.hpp"

#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "atrain/engine.hpp"
#include "interrupt.hpp"
#include "summary.hpp"

namespace atrain::cli {

bool parse(const std::vector<std::string>& args, parsed& p) {
  for (std::size_t i = 0; i < args.size(); ++i) {
    const auto& a = args[i];
    auto value = [&](const char* flag) -> const std::string* {
      if (i + 1 >= args.size()) {
        std::cerr << "atrain: " << flag << " needs a value\n";
        return nullptr;
      }
      return &args[++i];
    };
    if (a == "--set") {
      auto v = value("--set");
      if (!v)
        return false;
      p.overrides.push_back(*v);
    } else if (a.rfind("--set=", 0) == 0) {
      p.overrides.push_back(a.substr(6));
    } else if (a == "--out") {
      auto v = value("--out");
      if (!v)
        return false;
      p.out = *v;
    } else if (a == "--dot") {
      auto v = value("--dot");
      if (!v)
        return false;
      p.dot = *v;
    } else if (a == "--hosts" || a == "--secret-file" || a == "--tls-cert" || a == "--tls-key" ||
               a == "--tls-ca") {
      auto v = value(a.c_str());
      if (!v)
        return false;
      if (a == "--hosts") {
        std::size_t from = 0;
        for (std::size_t comma; (comma = v->find(',', from)) != std::string::npos; from = comma + 1)
          p.hosts.push_back(v->substr(from, comma - from));
        p.hosts.push_back(v->substr(from));
      } else {
        (a == "--secret-file" ? p.secret_file
         : a == "--tls-cert"  ? p.tls_cert
         : a == "--tls-key"   ? p.tls_key
                              : p.tls_ca) = *v;
      }
    } else if (a == "--resume") {
      auto v = value("--resume");
      if (!v)
        return false;
      p.resume = *v;
    } else if (a == "--progress") {
      p.progress = true;
    } else if (a == "--no-progress") {
      p.progress = false;
    } else if (!a.empty() && a[0] == '-') {
      std::cerr << "atrain: unknown option '" << a << "'\n";
      return false;
    } else if (p.spec.empty()) {
      p.spec = a;
    } else {
      std::cerr << "atrain: unexpected argument '" << a << "'\n";
      return false;
    }
  }
  if (p.spec.empty()) {
    std::cerr << "atrain: no SPEC given\n";
    return false;
  }
  return true;
}

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

} // namespace

int run(const parsed& p) {
  loaded_spec spec;
  auto plan = prepare(p, &spec);
  if (!plan)
    return 2;
  run_options opts;
  opts.progress = p.progress;
  opts.deploy.hosts = p.hosts;
  opts.deploy.tls = {p.tls_cert, p.tls_key, p.tls_ca};
  if ((!p.tls_cert.empty() + !p.tls_key.empty() + !p.tls_ca.empty()) % 3 != 0) {
    std::cerr << "atrain: --tls-cert, --tls-key and --tls-ca go together\n";
    return 2;
  }
  if (!p.secret_file.empty()) {
    auto secret = read_secret_file(p.secret_file);
    if (!secret) {
      std::cerr << "atrain: " << caf::to_string(secret.error()) << "\n";
      return 2;
    }
    opts.deploy.secret = *secret;
  }
  if (!p.resume.empty()) {
    auto ck = load_checkpoint(p.resume, *plan);
    if (!ck) {
      std::cerr << "atrain: cannot resume: " << error_text(ck.error()) << "\n";
      return 2;
    }
    // Taken with another deploy (host count, placement): refused here, before
    // any host is contacted (run_experiment checks it again for embedders).
    if (auto d = deploy_options_of(*plan, opts.deploy); d)
      if (auto ok = check_resume_deploy(**ck, p.resume, *d, plan->nodes()); !ok) {
        std::cerr << "atrain: cannot resume: " << error_text(ok.error()) << "\n";
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
    std::cout << "writing to      " << out << " (no --out or out_dir given)\n" << std::flush;
  }
  opts.out_dir = out;
  opts.control = std::make_shared<run_control>();
  interrupt_guard interrupt{opts.control};
  auto report = run_experiment(plan, opts);
  if (!report) {
    std::cerr << "atrain: run failed: " << caf::to_string(report.error()) << "\n";
    interrupt.finish();
    return interrupt.exit_status(1);
  }
  const auto written = write_outputs(*report, out);
  if (written)
    std::cout << "wrote           " << out << "/report.json, metrics.csv, events.jsonl, report.pb\n";
  print_summary(*report, std::cout);  // its last line says when nodes were lost
  if (!written) {
    std::cerr << "atrain: " << caf::to_string(written.error()) << "\n";
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
  std::cout << p.spec << ": OK (" << plan->algorithm_name() << ", " << plan->nodes()
            << " nodes, " << plan->train->size() << " training samples, " << plan->dim()
            << " parameters)\n";
  for (const auto& w : plan->warnings)
    std::cout << "warning: " << w << "\n";
  return 0;
}

} // namespace atrain::cli
