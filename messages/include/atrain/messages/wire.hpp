#pragma once
/// The CAF message types every actor exchanges, in one process or across
/// machines. Each is a plain struct with `inspect`; register_message_types()
/// adds them all to an actor_system_config (required before they cross a
/// process boundary; harmless locally).
///
/// Parameter vectors travel as immutable shared blobs: zero-copy between
/// actors of one process, and serialized as one raw memcpy-able block across
/// machines (CAF 0.17's per-float path runs at ~80 MB/s, the blob at ~1 GB/s;
/// notes/caf-0.17-oneDNN.md §3-4). Host byte order: homogeneous x86 clusters.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include <caf/all.hpp>

namespace atrain {

// ---- atoms (<= 10 characters each)
using wake_atom = caf::atom_constant<caf::atom("wake")>;
using deliver_atom = caf::atom_constant<caf::atom("deliver")>;
using track_atom = caf::atom_constant<caf::atom("track")>;
using init_atom = caf::atom_constant<caf::atom("init")>;
using model_atom = caf::atom_constant<caf::atom("model")>;
using mass_atom = caf::atom_constant<caf::atom("mass")>;
using stats_atom = caf::atom_constant<caf::atom("stats")>;
using wire_atom = caf::atom_constant<caf::atom("wire")>;
using eval_atom = caf::atom_constant<caf::atom("eval")>;
using stop_atom = caf::atom_constant<caf::atom("stop")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using metric_atom = caf::atom_constant<caf::atom("metric")>;
using done_atom = caf::atom_constant<caf::atom("done")>;
using release_atom = caf::atom_constant<caf::atom("release")>;
using final_atom = caf::atom_constant<caf::atom("final")>;
using ack_atom = caf::atom_constant<caf::atom("ack")>;
using answer_atom = caf::atom_constant<caf::atom("answer")>;
/// cost.message_seconds: a link's packet leaves its sender's queue.
using depart_atom = caf::atom_constant<caf::atom("depart")>;
using resend_atom = caf::atom_constant<caf::atom("resend")>;
using crash_atom = caf::atom_constant<caf::atom("crash")>;
using restart_atom = caf::atom_constant<caf::atom("restart")>;
/// A node absent from the start joins the running job (faults.join).
using join_atom = caf::atom_constant<caf::atom("join")>;
using resume_atom = caf::atom_constant<caf::atom("resume")>;
using retire_atom = caf::atom_constant<caf::atom("retire")>;
using relay_atom = caf::atom_constant<caf::atom("relay")>;
using spawn_atom = caf::atom_constant<caf::atom("spawn")>;
using epoch_atom = caf::atom_constant<caf::atom("epoch")>;

/// What is known of whether a blob's values are all finite.
enum class finiteness : std::int8_t { unknown, finite, not_finite };

/// Immutable shared vector that serializes as one raw block.
template <class T>
struct blob {
  static_assert(std::is_arithmetic<T>::value, "blob holds plain numbers");
  std::shared_ptr<const std::vector<T>> data;
  /// Shared by the blob's copies, so that a blob sent to several receivers in
  /// one process is checked once (see all_finite); none: checked every time.
  std::shared_ptr<std::atomic<finiteness>> known;

  blob() = default;
  explicit blob(std::vector<T> v)
    : data(std::make_shared<const std::vector<T>>(std::move(v))),
      known(std::make_shared<std::atomic<finiteness>>(finiteness::unknown)) {}

  /// check(ptr(), size()) the first time any copy asks, the remembered answer
  /// after that. The values never change, so racing checkers agree.
  template <class Check>
  [[nodiscard]] bool all_finite(Check&& check) const {
    if (!known)
      return check(ptr(), size());
    const auto k = known->load(std::memory_order_relaxed);
    if (k != finiteness::unknown)
      return k == finiteness::finite;
    const bool ok = check(ptr(), size());
    known->store(ok ? finiteness::finite : finiteness::not_finite, std::memory_order_relaxed);
    return ok;
  }

  [[nodiscard]] std::size_t size() const noexcept { return data ? data->size() : 0; }
  [[nodiscard]] bool empty() const noexcept { return size() == 0; }
  [[nodiscard]] const T* ptr() const noexcept { return data ? data->data() : nullptr; }
  [[nodiscard]] const std::vector<T>& vec() const {
    static const std::vector<T> none;
    return data ? *data : none;
  }
  [[nodiscard]] std::size_t bytes() const noexcept { return size() * sizeof(T); }
};

using float_blob = blob<float>;
using double_blob = blob<double>;

/// Largest blob accepted from the wire (elements): a hostile length prefix must
/// not make us allocate the machine away.
inline constexpr std::size_t max_blob_elements = std::size_t{1} << 30;

template <class Inspector, class T>
typename Inspector::result_type inspect(Inspector& f, blob<T>& x) {
  if constexpr (std::is_base_of<caf::serializer, Inspector>::value) {
    auto n = x.size();
    if (auto err = f.begin_sequence(n))
      return err;
    if (n > 0)
      if (auto err = f.apply_raw(n * sizeof(T), const_cast<T*>(x.ptr())))
        return err;
    return f.end_sequence();
  } else if constexpr (std::is_base_of<caf::deserializer, Inspector>::value) {
    std::size_t n = 0;
    if (auto err = f.begin_sequence(n))
      return err;
    if (n > max_blob_elements)
      return caf::make_error(caf::sec::invalid_argument, "blob too large");
    std::vector<T> v(n);
    if (n > 0)
      if (auto err = f.apply_raw(n * sizeof(T), v.data()))
        return err;
    x = blob<T>{std::move(v)};
    return f.end_sequence();
  } else {
    auto n = x.size();
    return f(caf::meta::type_name("blob"), n);
  }
}

/// Every message between nodes: one envelope, so links, counters and the
/// trace treat all algorithms alike. `kind` is the algorithm's stream
/// (e.g. R-FAST: model or mass); `seq` the sender's sequence number on it.
struct packet {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  std::uint32_t kind = 0;
  std::uint64_t seq = 0;
  float_blob f;                 // float payload (models, gradients)
  double_blob d;                // double payload (tracker running sums)
  std::vector<double> scalars;  // small extras (push-sum weights ...)
  /// link.codec: f (values) or d (a running sum) coded by the sender's
  /// outbox, which then leaves that payload empty (actors/link_codec.hpp).
  blob<std::uint8_t> coded;
  /// R-FAST tracking epoch of the sender (0 until a re-rooting); receivers
  /// drop packets of another epoch.
  std::uint32_t epoch = 0;

  /// Header (from, to, kind, seq, epoch: 24 bytes) + payloads.
  [[nodiscard]] std::size_t bytes() const noexcept {
    return 24 + f.bytes() + d.bytes() + coded.bytes() + scalars.size() * sizeof(double);
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, packet& x) {
  return f(caf::meta::type_name("atrain_packet"), x.from, x.to, x.kind, x.seq, x.f, x.d, x.scalars,
           x.epoch, x.coded);
}

/// What a worker tells the evaluator about itself.
/// What one sender's outbox put on one route to another process (multi-host
/// runs): logical sends, packets that went on the wire and their bytes,
/// packets merged into a waiting one, those dropped unsent (R-FAST's routes
/// changed under a new tracking epoch) and those still waiting. Always
/// sends = packets + merged + dropped + waiting.
struct route_traffic {
  std::uint32_t to = 0;  // the receiving node
  std::uint64_t sends = 0;
  std::uint64_t packets = 0;
  std::uint64_t bytes = 0;
  std::uint64_t merged = 0;
  std::uint64_t dropped = 0;
  std::uint64_t waiting = 0;
  double round_trip_seconds = 0;  // smoothed, over the answers (0: none yet)
  double code_seconds = 0;        // REAL clock: coding its packets before they left
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, route_traffic& x) {
  return f(caf::meta::type_name("atrain_route_traffic"), x.to, x.sends, x.packets, x.bytes,
           x.merged, x.dropped, x.waiting, x.round_trip_seconds, x.code_seconds);
}

struct model_snapshot {
  std::uint32_t node = 0;
  std::uint64_t gradients = 0;
  std::uint64_t messages_sent = 0;
  std::uint64_t bytes_sent = 0;
  double staleness_sum = 0;
  double staleness_max = 0;
  std::uint64_t staleness_count = 0;
  std::uint64_t rejected = 0;  // packets this node's worker refused (malformed, unknown sender)
  float_blob params;
  std::vector<std::uint64_t> fault_hits;  // per injected fault: gradients slowed / corrupted
  std::uint64_t refused = 0;              // non-finite gradients refused at the source
  double refused_since = -1;              // run time of the first (< 0: none)
  double busy_seconds = 0;                // run-clock seconds spent computing gradients
  /// REAL clock: CPU seconds of the worker's process since the worker
  /// started, of its thread in gradients, and those gradients' measured
  /// wall seconds (NodeReport, atrain calibrate).
  double process_cpu_seconds = 0;
  double gradient_cpu_seconds = 0;
  double gradient_wall_seconds = 0;
  /// Push-sum weight w_i (SGP/OSGP: params is the numerator x_i and the
  /// evaluated model is sum x_i / sum w_i); 1 for every other algorithm.
  double weight = 1;
  /// Gradients that joined a later step than the one they were computed for
  /// (straggler_policy SKIP of the synchronous baselines).
  std::uint64_t late = 0;
  /// The sender's routes to other processes (empty in one process).
  std::vector<route_traffic> wire;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, model_snapshot& x) {
  return f(caf::meta::type_name("atrain_model_snapshot"), x.node, x.gradients, x.messages_sent,
           x.bytes_sent, x.staleness_sum, x.staleness_max, x.staleness_count, x.rejected, x.params,
           x.fault_hits, x.weight, x.refused, x.refused_since, x.busy_seconds, x.late, x.wire,
           x.process_cpu_seconds, x.gradient_cpu_seconds, x.gradient_wall_seconds);
}

/// One tracker-mass account of an R-FAST gradient buffer (for the invariant):
/// z, g_prev, the latest rho sent, and rho~ consumed per in-neighbour.
struct mass_account {
  std::uint32_t node = 0;
  double_blob z;
  double_blob g_prev;
  double_blob rho_sent;
  std::vector<std::uint32_t> in_c;        // in-neighbours j in G_C
  std::vector<double> c_in;               // c_ij, aligned with in_c
  std::vector<double_blob> rho_consumed;  // rho~_ij, aligned with in_c
  double phi = 1;
  double sigma_sent = 0;
  std::vector<double> sigma_consumed;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, mass_account& x) {
  return f(caf::meta::type_name("atrain_mass_account"), x.node, x.z, x.g_prev, x.rho_sent, x.in_c,
           x.c_in, x.rho_consumed, x.phi, x.sigma_sent, x.sigma_consumed);
}

/// One node's part of an R-FAST tracking epoch (a re-rooting, see
/// docs/RELIABILITY.md): its neighbours and weights in the new graph pair and
/// the handles that reach its out-neighbours. The gradient buffer gets its
/// G_C out-neighbours in `out`, the worker its G_R out-neighbours.
struct rfast_epoch {
  std::uint32_t epoch = 0;
  std::vector<std::uint32_t> in_r;  // G_R in-neighbours (models pulled from)
  std::vector<double> r_in;         // r_ij, aligned with in_r
  double r_self = 1;                // r_ii
  std::vector<std::uint32_t> in_c;  // G_C in-neighbours (mass received from)
  std::vector<double> c_in;         // c_ij, aligned with in_c
  double c_self = 1;                // c_ii
  std::vector<std::uint32_t> out;   // out-neighbours of the receiving actor's graph
  std::vector<caf::actor> routes;   // aligned with out
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, rfast_epoch& x) {
  return f(caf::meta::type_name("atrain_rfast_epoch"), x.epoch, x.in_r, x.r_in, x.r_self, x.in_c,
           x.c_in, x.c_self, x.out, x.routes);
}

/// Counters of one link actor.
struct link_stats {
  std::uint32_t from = 0;
  std::uint32_t to = 0;
  std::uint64_t forwarded = 0;
  std::uint64_t dropped = 0;
  std::uint64_t duplicated = 0;
  std::uint64_t replaced = 0;             // overwritten while waiting (newest wins)
  std::uint64_t retransmitted = 0;        // acknowledged links: sent again after a timeout
  std::uint64_t coalesced = 0;            // merged into a packet waiting for the wire
  std::vector<std::uint64_t> fault_hits;  // per injected fault: packets cut / exposed / delayed
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, link_stats& x) {
  return f(caf::meta::type_name("atrain_link_stats"), x.from, x.to, x.forwarded, x.dropped,
           x.duplicated, x.replaced, x.retransmitted, x.coalesced, x.fault_hits);
}

/// One evaluation, as sent to observers of a run (embedding API).
struct metric_sample {
  double time_seconds = 0;
  std::uint64_t gradients = 0;
  double train_loss = 0;
  double test_accuracy = 0;
  double consensus_error = 0;
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
  std::uint64_t dropped = 0;
  // Over the nodes' own models (proto MetricRow): 0 nodes = not measured.
  std::uint32_t nodes_evaluated = 0;
  double node_test_accuracy_mean = 0;
  double node_test_accuracy_min = 0;
  double node_train_loss_max = 0;
  std::uint32_t worst_node = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, metric_sample& x) {
  return f(caf::meta::type_name("atrain_metric_sample"), x.time_seconds, x.gradients, x.train_loss,
           x.test_accuracy, x.consensus_error, x.messages, x.bytes, x.dropped, x.nodes_evaluated,
           x.node_test_accuracy_mean, x.node_test_accuracy_min, x.node_train_loss_max,
           x.worst_node);
}

/// A finished run's report, carried as serialized atrain.proto.RunReport bytes
/// (a stable, versioned wire schema).
struct report_bytes {
  std::string bytes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, report_bytes& x) {
  return f(caf::meta::type_name("atrain_report_bytes"), x.bytes);
}

/// A driver's request to a host of a multi-host run (docs/ARCHITECTURE.md "Across
/// machines"): spawn these nodes of this run. The host prepares the run from
/// `spec` with its own copy of the data (checksums verified) — no data
/// crosses the wire.
struct spawn_request {
  std::string secret;      // the shared secret, checked before anything else
  std::string spec;        // binary atrain.proto.ExperimentSpec, overrides applied
  std::string spec_label;  // the driver's spec file, for messages
  std::string base_dir;    // the driver's spec directory (relative dataset paths)
  std::vector<std::uint32_t> nodes;
  double run_seconds = 0;  // the driver's run clock when it sent the request
  caf::actor supervisor;   // the host ends the run's actors when it goes down
  /// A resumed run: binary atrain.proto.Checkpoint holding the states of
  /// `nodes` (the other nodes' entries empty but for their id); empty for a
  /// fresh run. Bounded by the host's --max-message-mb (README "Checkpoint
  /// and resume").
  std::string checkpoint;
  std::string checkpoint_label;  // the driver's checkpoint file, for messages
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, spawn_request& x) {
  return f(caf::meta::type_name("atrain_spawn_request"), x.secret, x.spec, x.spec_label, x.base_dir,
           x.nodes, x.run_seconds, x.supervisor, x.checkpoint, x.checkpoint_label);
}

/// One node's actors as its host spawned them (invalid handles: none).
struct node_handles {
  std::uint32_t node = 0;
  caf::actor worker;
  caf::actor buffer;
  caf::actor hub;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, node_handles& x) {
  return f(caf::meta::type_name("atrain_node_handles"), x.node, x.worker, x.buffer, x.hub);
}

/// A host's answer to a spawn_request: its nodes' actors, and the run's
/// keeper there (it ends them with the run, and joins a checkpoint's drain:
/// it knows whether every packet its nodes sent to another process arrived).
struct spawn_reply {
  std::vector<node_handles> nodes;
  caf::actor keeper;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, spawn_reply& x) {
  return f(caf::meta::type_name("atrain_spawn_reply"), x.nodes, x.keeper);
}

/// Adds every type above to the config. Call before constructing the system.
void register_message_types(caf::actor_system_config& cfg);

}  // namespace atrain
