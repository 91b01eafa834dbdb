#pragma once
/// SGP and OSGP, push-sum gossip (ALGORITHMS.md §7): the one-peer rotating
/// schedule, the spawn function for a whole network (both algorithms: OSGP
/// is SGP without waiting) and a test hook on each node's push-sum state.
#include <cstdint>
#include <memory>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/node_actor.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// Packet stream of push-sum: (x_i/2, w_i/2) of the sender's step s,
/// seq = s + 1, the numerator half in `d`, the weight half in scalars[0].
enum pushsum_stream : std::uint32_t { pushsum_mass = 31 };

/// Restart: (sgp_donate_atom, k) asks a live node for half of its (x, w).
using sgp_donate_atom = caf::atom_constant<caf::atom("sgpdonate")>;

/// A worker (SGP or OSGP; also its node's buffer for the evaluator):
/// node_actor's messages and
using sgp_worker_actor = node_actor::extend<
  // the supervisor's wiring (gossip::wire_nodes): routes to the out-neighbours, the start;
  caf::reacts_to<init_atom, std::vector<caf::actor>>, caf::reacts_to<start_atom>,
  // its own gradient's timer (its step count);
  caf::reacts_to<wake_atom, std::uint64_t>,
  // push-sum messages (the in-neighbours' links, or they themselves);
  caf::reacts_to<deliver_atom, packet>,
  // the evaluator, asking the node's buffer: (messages, bytes, rejected);
  caf::replies_to<stats_atom>::with<std::uint64_t, std::uint64_t, std::uint64_t>,
  // the supervisor restarting out-neighbour k: (steps, messages and weight
  // sent to k since it last joined); and asking a donor for half its (x, w):
  // (x/2, w/2, steps);
  caf::replies_to<restart_atom, std::uint32_t>::with<std::uint64_t, std::uint64_t, double>,
  caf::replies_to<sgp_donate_atom, std::uint32_t>::with<double_blob, double, std::uint64_t>,
  // node k joining the run (join_sgp_node): begin no step until the
  // resume -> (steps); then (resume, S, k): k is in from step S on;
  caf::replies_to<join_atom, std::uint32_t>::with<std::uint64_t>,
  caf::reacts_to<resume_atom, std::uint64_t, std::uint32_t>,
  // and a replacement's join: (start, step, x, w, fences per in-slot, routes,
  // donor, the nodes in the run from that step on: empty = as before).
  caf::reacts_to<start_atom, std::uint64_t, double_blob, double, std::vector<std::uint64_t>,
                 std::vector<caf::actor>, std::uint32_t, std::vector<std::uint32_t>>>;

/// m = ceil(log2 n): the period of the rotation (0 for n = 1, no messages).
[[nodiscard]] std::uint32_t pushsum_period(std::uint32_t n);

/// The one out-neighbour of node i at step k: (i + 2^(k mod m)) mod n.
/// Requires n > 1.
[[nodiscard]] std::uint32_t pushsum_peer(std::uint32_t i, std::uint64_t k, std::uint32_t n);

/// The one in-neighbour of node i at step k: (i - 2^(k mod m)) mod n.
/// Requires n > 1.
[[nodiscard]] std::uint32_t pushsum_source(std::uint32_t i, std::uint64_t k, std::uint32_t n);

/// One message a node sent: the half of (x, w) of its step `step`.
struct pushsum_sent {
  std::uint32_t to = 0;
  std::uint64_t step = 0;
  double_blob x;  // the packet's own payload (shared, not copied)
  double w = 0;
};

/// One message a node added to its (x, w), once (duplicates are not added).
struct pushsum_added {
  std::uint32_t from = 0;
  std::uint64_t step = 0;      // the sender's step
  std::uint64_t at_steps = 0;  // the receiver's completed steps when it was added
};

/// One gradient step: x_i -= gamma g.
struct pushsum_descent {
  std::uint64_t step = 0;
  double gamma = 0;
  std::vector<float> g;
};

/// One node's push-sum state. A virtual run with a run_probe exposes it in
/// run_probe::pushsum (readable between two scheduler steps) and keeps the
/// ledger: what the node sent, added and descended, in order. A restarted
/// worker appears there once it has joined.
struct pushsum_node {
  std::vector<double> x;    // numerator x_i (float64: push-sum mass is exact)
  double w = 1;             // weight w_i
  std::uint64_t steps = 0;  // completed steps
  bool record = false;      // keep the ledger below (probe only)
  std::vector<pushsum_sent> sent;
  std::vector<pushsum_added> added;
  std::vector<pushsum_descent> descents;
  /// Halves of (x, w) given to a restarted node (`step`: this node's steps then).
  std::vector<pushsum_sent> donated;
  /// A replacement: it joined at step `steps` with the half `donor` gave;
  /// incoming seqs <= fence[a] from in-slot a (sender step s, a = s mod m)
  /// were sent before the join and are dropped (`fenced`, once each).
  bool joined = false;
  std::uint32_t donor = 0;
  std::vector<std::uint64_t> fence;
  std::vector<pushsum_added> fenced;
};

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
/// SGP or OSGP, as the spec says; links i -> i + 2^a mod n for a < m.
[[nodiscard]] node_actors spawn_sgp_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                         std::uint32_t i);

/// Restart (supervision): a replacement for node `k`'s crashed worker, a
/// child of `sup`, keeping every message until join_sgp_worker starts it.
[[nodiscard]] caf::actor spawn_sgp_replacement(caf::event_based_actor* sup, const context_ptr& ctx,
                                               std::uint32_t k);

/// Starts the replacement at the step after the last one the dead worker
/// handed its links, with half of a live in-neighbour's (x, w) (the donor
/// keeps the other half: same ratio x/w, mass among the living unchanged).
/// Every push-sum message sent to node k before the join (its in-neighbours'
/// steps up to their answer, or a dead one's link's last seq) is lost with
/// the dead worker: the replacement drops those that still arrive and does
/// not wait for them. From the join on, the living nodes' mass plus the mass
/// in flight to them is conserved.
void join_sgp_worker(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                     restart_started started);

/// A node absent from the start joining (faults.join), join_sgp_worker's
/// other half: the schedule stays over every node id, a message whose peer
/// is not in the run stays with its sender (its column of P is e_i: still
/// column stochastic) and nobody waits for a message from a source not in
/// the run. At the join every live node stops beginning steps and reports
/// its steps; with S one past the highest, the joiner is in from step S on
/// everywhere, with half of a live node's (x, w) (mass conserved).
void join_sgp_node(caf::event_based_actor* sup, const context_ptr& ctx, const worker_restart& r,
                   restart_started started);

/// Refuses faults.join combined with crashes (spec checks of both blocks).
void pushsum_check_joins(spec_checker& c);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it.
void wire_sgp(caf::event_based_actor* sup, const context_ptr& ctx, std::vector<node_actors>& nodes,
              link_list& links);

/// Their spec blocks' checks (sgp_spec.cpp; algorithm_descriptor::check_block).
void sgp_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
void osgp_check_block(spec_checker& c, const proto::AlgorithmSpec& a);

/// Either block (PushSum), parsed once (sgp_spec.cpp; run_plan::config<push_sum_config>()).
struct push_sum_config : algorithm_config {
  static constexpr const char* name = "sgp/osgp";
  [[nodiscard]] const char* block() const noexcept override { return overlap ? "osgp" : "sgp"; }
  bool overlap = false;         // OSGP: bounded staleness instead of waiting
  std::uint32_t max_ahead = 0;  // OSGP: steps ahead of the messages received (>= 1); SGP 0
};

/// The blocks as a push_sum_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
sgp_parse_block(const proto::AlgorithmSpec& a);
[[nodiscard]] std::shared_ptr<const algorithm_config>
osgp_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
