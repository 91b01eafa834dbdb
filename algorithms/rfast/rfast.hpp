#pragma once
/// R-FAST (ALGORITHMS.md §1): the tracker arithmetic of one node, kept in its
/// gradient buffer, and the spawn function for a whole R-FAST network.
#include <cstdint>
#include <memory>
#include <vector>

#include "atrain/actors/context.hpp"
#include "atrain/actors/node_actor.hpp"
#include "atrain/kernels/fused_ops.hpp"
#include "atrain/messages/blob_pool.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// Packet streams of R-FAST.
enum rfast_stream : std::uint32_t { rfast_model = 1, rfast_mass = 2 };

/// A node's gradient buffer, holding its tracker. No worker (the barrier
/// asks it only for its state), so not node_actor. Handles to it stay
/// caf::actor in node_actors and routes (they cross processes).
using rfast_buffer_actor = caf::typed_actor<
  // The supervisor's wiring: routes to its G_C out-neighbours.
  caf::reacts_to<start_atom, std::vector<caf::actor>>,
  // Its worker: the first gradient; each wake's gradient and the worker's
  // route_gate (as its integer) -> (descent direction, newest model per G_R
  // in-neighbour, their ages, pull weights), an empty direction when the
  // gradient was folded into the next step's; where a restarted worker goes
  // on -> (wakes served, tracking epoch).
  caf::reacts_to<init_atom, float_blob>,
  caf::replies_to<track_atom, float_blob, std::uint8_t>::with<
    float_blob, std::vector<float_blob>, std::vector<std::uint64_t>, std::vector<double>>,
  caf::replies_to<resume_atom>::with<std::uint64_t, std::uint32_t>,
  // Links (or, over perfect links, the senders): models and tracker mass.
  caf::reacts_to<deliver_atom, packet>,
  // The supervisor (rfast_epoch.cpp, rfast_supervision.cpp): a new tracking
  // epoch's view; its worker lost for good; then its own relay timer.
  caf::reacts_to<epoch_atom, rfast_epoch>, caf::reacts_to<retire_atom>, caf::reacts_to<relay_atom>,
  // The evaluator: its mass account; (messages, bytes, rejected, dropped for another epoch).
  caf::replies_to<mass_atom>::with<mass_account>,
  caf::replies_to<wire_atom>::with<std::vector<route_traffic>>,  // multi-host: its routes
  caf::replies_to<stats_atom, epoch_atom>::with<std::uint64_t, std::uint64_t, std::uint64_t,
                                                std::uint64_t>,
  // The checkpoint barrier: its part of the node's state.
  caf::replies_to<ckpt_state_atom>::with<std::string>>;

/// A node's worker: node_actor's messages and the groups below.
using rfast_worker_actor = node_actor::extend<
  // The supervisor (wiring, a restart, an epoch's start): its G_R out-routes
  // (none: an epoch view follows) and the start; a tracking epoch's view.
  caf::reacts_to<start_atom, std::vector<caf::actor>>, caf::reacts_to<epoch_atom, rfast_epoch>,
  // Its own gradient's wake.
  caf::reacts_to<wake_atom, float_blob>>;

/// The durable state of node i: z, rho, rho~ per in-neighbour (float64), g_prev
/// (the last gradient, a float), the optional push-sum weight phi with sigma and sigma~.
class rfast_tracker {
public:
  struct in_neighbour {
    std::uint32_t node = 0;
    double c = 0;           // c_ij
    std::uint64_t seq = 0;  // seq of the newest rho^_j (0 = none yet)
    double_blob rho_hat;    // newest received rho_j
    double sigma_hat = 0;
    /// The consumed part of rho_j. Blobs are immutable, so "rho~ = rho^"
    /// shares the received buffer instead of copying it.
    double_blob rho_tilde;
    double sigma_tilde = 0;
  };

  rfast_tracker(std::uint32_t node, std::size_t dim, double c_self, std::vector<in_neighbour> in_c,
                bool phi_variant, double phi_min);

  /// Initialise with the first gradient: z = g_prev = g0.
  void init(const float* g0);
  /// Starts tracking epoch `epoch` over new neighbours (a re-rooting): z =
  /// g_prev, rho = 0, rho~ = 0 for every new in-neighbour, phi = 1, sigma =
  /// 0. Sequence numbers go on (pushes() is not reset).
  void reset_epoch(std::uint32_t epoch, double c_self, std::vector<in_neighbour> in_c);
  /// Step 4: z += g - g_prev; g_prev = g.
  void correct(const float* g);
  /// Step 5: rho += z; z = c_ii z (sigma += phi; phi = c_ii phi). Returns the
  /// snapshot of rho to send (also kept as the latest sent).
  double_blob push();
  /// Descent direction of step 1: z / max(phi, phi_min), or z (plain).
  [[nodiscard]] std::vector<float> direction() const;
  /// Steps 4 and 5 and then the direction into d[0, dim), in one pass over
  /// the vectors: each element's arithmetic is correct(), push() and
  /// direction()'s, in that order (the same bits). Returns push()'s rho.
  double_blob correct_push_direction(const float* g, float* d);
  /// Step 3: z += c_ij (rho^_j - rho~_ij); rho~_ij = rho^_j (phi likewise).
  void absorb();
  /// The buffer's wake: correct_push_direction(g, d) then absorb(), in one
  /// pass over the vectors (the same bits). Returns push()'s rho.
  double_blob wake(const float* g, float* d);
  /// Keeps rho^_j when seq is newer than what we hold. Returns false for a
  /// stale or duplicate packet (ignored).
  bool receive(std::uint32_t from, std::uint64_t seq, const double_blob& rho, double sigma);

  [[nodiscard]] std::uint32_t node() const noexcept { return node_; }
  [[nodiscard]] const std::vector<double>& z() const noexcept { return z_; }
  [[nodiscard]] const std::vector<float>& g_prev() const noexcept { return g_prev_; }
  [[nodiscard]] const double_blob& rho_sent() const noexcept { return rho_; }
  [[nodiscard]] double phi() const noexcept { return phi_; }
  [[nodiscard]] double sigma_sent() const noexcept { return sigma_sent_; }
  [[nodiscard]] const std::vector<in_neighbour>& in_c() const noexcept { return in_c_; }
  [[nodiscard]] bool phi_variant() const noexcept { return phi_variant_; }
  [[nodiscard]] std::uint64_t pushes() const noexcept { return pushes_; }
  [[nodiscard]] std::uint32_t epoch() const noexcept { return epoch_; }
  [[nodiscard]] mass_account account() const;

  /// Checkpoints: z, g_prev, rho, phi, sigma and every in-neighbour's
  /// rho^/rho~ into (from) `s`; restore() expects sizes checked by
  /// load_checkpoint.
  void save(proto::RfastNodeState& s) const;
  void restore(const proto::RfastNodeState& s);

private:
  /// correct_push_direction() and, with news_, absorb()'s pass over z.
  double_blob push_pass(const float* g, float* d);
  /// push()'s bookkeeping once `next` holds the new rho.
  double_blob finish_push(blob_pool<double>::buffer next, finiteness known);
  [[nodiscard]] double direction_scale(double phi) const;
  /// absorb()'s in-neighbours with news, into news_ (z untouched); then,
  /// once z has them, their phi and rho~ bookkeeping.
  void collect_news();
  void settle_news();

  std::uint32_t node_;
  std::size_t dim_;
  double c_self_;
  bool phi_variant_;
  double phi_min_;
  std::vector<double> z_;
  std::vector<float> g_prev_;   // only ever a gradient: float holds it exactly
  double_blob rho_;             // running sum; each push makes a new immutable blob (= latest sent)
  blob_pool<double> rho_pool_;  // earlier sums no receiver holds any more
  double phi_ = 1;
  double sigma_ = 0;
  double sigma_sent_ = 0;
  std::uint64_t pushes_ = 0;
  std::uint32_t epoch_ = 0;
  std::vector<in_neighbour> in_c_;
  std::vector<vec::tracking_news> news_;  // collect_news()'s, kept: no allocation per wake
};

/// Mass conservation (ALGORITHMS.md §1) over all nodes' accounts:
/// | sum z + sum_{j->i in G_C} c_ij (rho_j(latest sent) - rho~_ij) - sum g_prev |
/// relative to max(1, |sum g_prev|) (infinity norm over coordinates).
/// `phi_residual` gets |sum phi + pending sigma - n| for the phi variant.
[[nodiscard]] double mass_residual(const std::vector<mass_account>& accounts,
                                   double* phi_residual = nullptr);

/// Same, straight from trackers (test probe).
[[nodiscard]] double mass_residual(const std::vector<const rfast_tracker*>& trackers,
                                   double* phi_residual = nullptr);

/// Spawns node `i`'s actors as children of `parent` (the supervisor, or the
/// node's host in a multi-host run: same code).
/// Its gradient buffer first, then its worker.
[[nodiscard]] node_actors spawn_rfast_node(caf::event_based_actor* parent, const context_ptr& ctx,
                                           std::uint32_t i);

/// Builds the links between the spawned `nodes` (appended to `links`), gives
/// every node its routes and starts it. The routes are kept in the run's
/// route table (rfast_route_table) for a later tracking epoch.
void wire_rfast(caf::event_based_actor* sup, const context_ptr& ctx,
                std::vector<node_actors>& nodes, link_list& links);

/// Respawns node `id`'s crashed worker as a child of `sup` (supervision): the
/// tracker state (z, g_prev, rho, rho~) never left the gradient buffer, so
/// only the model is new: `x` (a neighbour's). The new worker continues the
/// sequence numbers from the buffer's count of served wakes and does not
/// re-initialise the tracker, so the tracker mass stays conserved.
[[nodiscard]] caf::actor respawn_rfast_worker(caf::event_based_actor* sup, const context_ptr& ctx,
                                              std::uint32_t id, const node_actors& node,
                                              std::vector<float> x);

/// Respawns node `id` whole (supervision: a whole-node crash with a restart)
/// as children of `sup`: a fresh gradient buffer (tracker at zero: z = g_prev
/// = 0, never restored from a checkpoint) and a worker on it starting from
/// `x` (a neighbour's model; empty: x^0) that continues the buffer's counts
/// (zero). Nothing is sent to them: the caller starts a tracking epoch that
/// includes `id` (its view reaches the buffer, and the worker, before the
/// worker asks the buffer where to resume), then start_respawned_rfast_node.
[[nodiscard]] node_actors respawn_rfast_node(caf::event_based_actor* sup, const context_ptr& ctx,
                                             std::uint32_t id, std::vector<float> x);

/// Lets a node from respawn_rfast_node go, once its epoch view was sent.
void start_respawned_rfast_node(caf::event_based_actor* sup, const node_actors& node);

/// Its spec block, parsed once (rfast_spec.cpp; run_plan::config<rfast_config>()).
struct rfast_config : algorithm_config {
  static constexpr const char* name = "rfast";
  [[nodiscard]] const char* block() const noexcept override { return name; }
  bool phi_scaled = false;               // variant PHI: z / max(phi, phi_min); PLAIN: z
  double phi_min = 0.05;                 // the PHI floor
  std::uint32_t stale_model_wakes = 50;  // 0 = never leave a stale in-neighbour out
  bool reroot = true;                    // rebuild a pair over the survivors of a lost root
};

/// Its spec block's checks (rfast_spec.cpp; algorithm_descriptor::check_block).
void rfast_check_block(spec_checker& c, const proto::AlgorithmSpec& a);
/// Its block as an rfast_config (algorithm_descriptor::parse).
[[nodiscard]] std::shared_ptr<const algorithm_config>
rfast_parse_block(const proto::AlgorithmSpec& a);

}  // namespace atrain
