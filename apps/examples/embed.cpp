/// Embedding atrain in your own service: a run inside *your* actor_system,
/// its metrics arriving as messages, stopped from your code.
///
///   example_embed config/quickstart_real.textproto [max_evaluations]
///
/// The listener below stands for your service's actor: it prints every
/// evaluation, asks the run to stop after `max_evaluations`, and prints the
/// final report when the run delivers it.
#include <cstdlib>
#include <iostream>

#include "atrain/engine.hpp"

namespace {

struct service_config : caf::actor_system_config {
  service_config() {
    atrain::register_message_types(*this);  // before the system exists
    set("scheduler.policy", caf::atom("sharing"));
    set("scheduler.max-threads", 2);
  }
};

struct listener_state {
  caf::actor run;
  int seen = 0;
};

caf::behavior listener(caf::stateful_actor<listener_state>* self, int max_evaluations) {
  return {
    [=](caf::actor& run) { self->state.run = std::move(run); },
    [=](atrain::metric_atom, const atrain::metric_sample& m) {
      std::cout << "t=" << m.time_seconds << "s gradients=" << m.gradients
                << " loss=" << m.train_loss << " accuracy=" << m.test_accuracy << "\n";
      if (++self->state.seen == max_evaluations && self->state.run)
        self->send(self->state.run, atrain::stop_atom::value);  // the run still reports
    },
    [=](atrain::done_atom, const atrain::report_bytes& bytes) {
      atrain::proto::RunReport report;
      report.ParseFromString(bytes.bytes);
      std::cout << "done: " << report.stop_reason() << ", final accuracy "
                << report.final().test_accuracy() << ", " << report.gradients_total()
                << " gradients\n";
      self->quit();
    },
  };
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: example_embed SPEC [max_evaluations]\n";
    return 2;
  }
  const int max_evaluations = argc > 2 ? std::atoi(argv[2]) : 3;
  std::shared_ptr<const atrain::run_plan> plan;
  try {
    plan = atrain::prepare_run(atrain::load_spec(argv[1], {"clock=REAL", "progress=false"}));
  } catch (const atrain::spec_error& e) {
    std::cerr << e.what() << "\n";
    return 2;
  }
  service_config cfg;
  caf::actor_system sys{cfg};
  auto watcher = sys.spawn(listener, max_evaluations);
  auto run = atrain::spawn_run(sys, plan, watcher);
  if (!run) {
    std::cerr << atrain::error_text(run.error()) << "\n";
    caf::anon_send_exit(watcher, caf::exit_reason::user_shutdown);
    return 1;
  }
  caf::anon_send(watcher, *run);
  return 0;  // ~actor_system waits until the run and the listener are done
}
