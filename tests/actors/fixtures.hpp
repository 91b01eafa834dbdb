#pragma once
/// Shared helpers of the actor tests: specs built from config/quickstart with
/// overrides, and the centralized optimum of the logistic-regression task.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "atrain/engine.hpp"

namespace atrain::test {

/// config/quickstart.textproto with `overrides` applied, prepared.
[[nodiscard]] std::shared_ptr<const run_plan> quickstart(const std::vector<std::string>& overrides);

/// Why quickstart(overrides) is refused (the spec_error's text); "" when
/// it is accepted.
[[nodiscard]] std::string quickstart_refusal(const std::vector<std::string>& overrides);

/// Overrides for a small, fast quickstart: 2000 training rows, 500 test
/// rows, 6 nodes, 0.6 s of virtual time, no progress; then `extra`.
[[nodiscard]] std::vector<std::string> small_task(std::vector<std::string> extra);

/// Bytes all nodes sent per gradient they computed, over a whole run.
[[nodiscard]] double bytes_per_gradient(const proto::RunReport& r);

/// Same from any spec under config/.
[[nodiscard]] std::shared_ptr<const run_plan> config(const std::string& name,
                                                     const std::vector<std::string>& overrides);
/// Why config(name, overrides) is refused ("" when it is accepted).
[[nodiscard]] std::string config_refusal(const std::string& name,
                                         const std::vector<std::string>& overrides);

/// Minimum of mean softplus(-s (w.x + b)) + l2/2 |[w,b]|^2 over the plan's
/// training set, by Newton's method in double (independent of the kernels).
[[nodiscard]] double logistic_optimum(const run_plan& plan, double l2);

/// Runs make(7), make(7) and make(8): the same seed must give the same trace
/// hash and a byte-identical report (wall time aside), another seed another
/// trace and another final loss.
void expect_replay(const std::function<std::shared_ptr<const run_plan>(std::uint64_t seed)>& make);

/// R-FAST: drives a virtual run one event at a time and checks the tracker
/// mass invariant after every event (an error past 1e-10). Returns the
/// report; `checks` and `worst` say how many checks ran and the worst residual.
[[nodiscard]] proto::RunReport run_checking_mass(std::shared_ptr<const run_plan> plan,
                                                 std::size_t& checks, double& worst);

/// config/algorithms/FILE over links losing `loss` of the packets (and of
/// the acks) with 1 ms latency: the run must reach the config's target, with
/// packets dropped and retransmitted (acknowledged links), and no error.
void expect_target_over_lossy_links(const std::string& file, double loss = 0.3);

}  // namespace atrain::test
