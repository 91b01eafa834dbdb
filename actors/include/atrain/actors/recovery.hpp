#pragma once
/// Recovery policies: how an algorithm that restarts its own way lives through
/// lost nodes (a descriptor's `recovery`). The supervisor keeps the generic
/// part — killing, fault records, the restart timer, the time of a loss — and
/// asks the policy what a loss or a restart does; the policy answers with an
/// outcome and acts through `supervision`, the supervisor's side. The
/// supervisor never knows which algorithm it runs.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/evaluator_actor.hpp"

namespace atrain {

/// What a recovery policy may ask of the supervisor.
class supervision {
public:
  virtual ~supervision() = default;
  [[nodiscard]] virtual caf::event_based_actor* self() = 0;
  [[nodiscard]] virtual const context_ptr& ctx() const = 0;
  /// The run's nodes (index = node); a policy that respawns one updates it.
  [[nodiscard]] virtual std::vector<node_actors>& nodes() = 0;
  /// Index = node: its worker is running (not killed, or restarted since).
  [[nodiscard]] virtual std::vector<bool> workers_up() const = 0;
  /// Whether the run killed `a` (a crash, a retirement).
  [[nodiscard]] virtual bool killed(const caf::actor& a) const = 0;
  [[nodiscard]] virtual bool stopping() const = 0;
  [[nodiscard]] virtual const evaluator_actor& evaluator() const = 0;
  /// Kills `a`; its down message is expected.
  virtual void kill(const caf::actor& a) = 0;
  /// Supervises `a` (its failure ends the run naming `name`).
  virtual void adopt(const caf::actor& a, std::string name) = 0;
  /// `a` replaces node k's `old` (`part`: "worker", "gradient buffer").
  virtual void adopt_replacement(std::uint32_t k, const caf::actor& a, const char* part,
                                 const caf::actor_addr& old) = 0;
  /// Node k starts its next incarnation (checkpoints save the count).
  virtual void count_restart(std::uint32_t k) = 0;
  /// A crash's restart is over (a waiting checkpoint may begin).
  virtual void crash_closed() = 0;
  /// Ends the run with an error saying `what`.
  virtual void fail(const std::string& what) = 0;
};

/// Nodes the run lost.
struct node_loss {
  std::vector<std::uint32_t> gone;
  bool whole = false;  // with their gradient buffers (else only their workers)
  double at = 0;       // run seconds
  /// Down only until their restart (whole nodes, a crash's).
  bool back_later = false;
  /// What the supervisor reports of the loss so far ("killed at 3.0 s").
  std::string so_far;
};

/// What a loss did, for the fault record and the evaluator.
struct loss_outcome {
  std::string effect;  // appended to the fault's effect
  /// The policy has a new view of the run to start (start_view) once the
  /// evaluator knows of the loss; the lost nodes' buffers leave the run.
  bool new_view = false;
};

class recovery_policy {
public:
  virtual ~recovery_policy() = default;
  /// What losing `l.gone` does; empty: the run ended (supervision::fail).
  [[nodiscard]] virtual std::optional<loss_outcome> lose(supervision& s, const node_loss& l) = 0;
  /// Starts the view planned by the last lose() (new_view), telling the
  /// evaluator when the loss of `fault` happened (`records`: its fault
  /// records, one per node of a lost host).
  virtual void start_view(supervision& s, std::uint64_t fault, std::uint32_t records,
                          double lost_at) = 0;
  /// Restarts after crash `crash` (armed by the spec); calls
  /// supervision::crash_closed once the restart is over.
  virtual void restart(supervision& s, int crash) = 0;
  /// Nodes absent from the start (faults.join), their actors stopped before
  /// the run's first event: the run goes on without them until their join.
  /// Returns what that does for the fault records; empty: the run ended
  /// (supervision::fail).
  [[nodiscard]] virtual std::optional<std::string> absent(supervision& s,
                                                          const std::vector<std::uint32_t>& nodes);
  /// Join j (faults.join) of a node absent since the start: it comes in as a
  /// whole node restarted would; calls supervision::crash_closed once in.
  virtual void join(supervision& s, int j);
};

using make_recovery_fn = std::unique_ptr<recovery_policy> (*)(const run_plan& plan);

}  // namespace atrain
