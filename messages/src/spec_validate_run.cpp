// Semantic validation of an experiment spec, continued: costs, links,
// faults, stop and evaluation rules, checkpoints (spec_validate.hpp).
#include <cmath>
#include <set>
#include <vector>

#include "spec_validate.hpp"

namespace atrain::validation {

void checker::cost(bool nodes_ok) {
  const auto& c = s_.spec.cost();
  if (c.tau_per_node_size() > 0) {
    if (nodes_ok && static_cast<std::uint64_t>(c.tau_per_node_size()) != s_.spec.nodes())
      bad("cost.tau_per_node", "must have exactly nodes = " + std::to_string(s_.spec.nodes()) +
                                 " entries (got " + std::to_string(c.tau_per_node_size()) + ")");
    for (int i = 0; i < c.tau_per_node_size(); ++i)
      period(idx("cost.tau_per_node", i), c.tau_per_node(i), "s per gradient");
    if (c.tau_seconds() != 0)
      period("cost.tau_seconds", c.tau_seconds(), "s per gradient");
  } else {
    if (std::isfinite(c.tau_seconds()) && !(c.tau_seconds() > 0))
      bad("cost.tau_seconds", "must be > 0 (got " + num(c.tau_seconds()) +
                                "), or give tau_per_node with one entry per node");
    else
      period("cost.tau_seconds", c.tau_seconds(), "s per gradient");
  }
  non_negative("cost.real_min_seconds", c.real_min_seconds());
  non_negative("cost.start_seconds", c.start_seconds());
  if (c.start_seconds() > limits::max_straggle_add_seconds)  // a delay, like a straggle's
    bad("cost.start_seconds", "must be <= " + num(limits::max_straggle_add_seconds) + " (got " +
                                num(c.start_seconds()) + ")");
  non_negative("cost.message_seconds", c.message_seconds());
  constexpr double max_message_seconds = 1.0;  // CPU per packet: beyond any real one
  if (c.message_seconds() > max_message_seconds)
    bad("cost.message_seconds", "must be <= " + num(max_message_seconds) + " s per packet (got " +
                                  num(c.message_seconds()) + ")");
  if (std::isfinite(c.jitter()) && !(c.jitter() >= 0 && c.jitter() < 1))
    bad("cost.jitter", "must be in [0, 1) (got " + num(c.jitter()) + ")");
  for (int i = 0; i < c.slowdown_size(); ++i) {
    const auto& sd = c.slowdown(i);
    const std::string p = idx("cost.slowdown", i);
    if (nodes_ok && sd.node() >= s_.spec.nodes())
      bad(p + ".node", "node " + std::to_string(sd.node()) +
                         " out of range (nodes = " + std::to_string(s_.spec.nodes()) + ")");
    if (std::isfinite(sd.factor()) && !(sd.factor() >= 1))
      bad(p + ".factor", "must be >= 1 (got " + num(sd.factor()) + ")");
  }
}

void checker::link() {
  const auto& l = s_.spec.link();
  non_negative("link.latency_seconds", l.latency_seconds());
  non_negative("link.bandwidth_bytes_per_second", l.bandwidth_bytes_per_second());
  unit_closed("link.loss", l.loss());
  unit_closed("link.duplicate", l.duplicate());
  unit_closed("link.reorder", l.reorder());
  non_negative("link.reorder_delay_seconds", l.reorder_delay_seconds());
  if (l.has_retransmit_seconds())
    period("link.retransmit_seconds", l.retransmit_seconds());
  if (l.window() > 0 && s_.spec.clock() == proto::REAL)
    bad("link.window", "is for the VIRTUAL clock (between processes the outbox's window is 4; "
                       "in one REAL process there is none)");
  if (l.window() > limits::max_link_window)
    bad("link.window", "must be <= " + std::to_string(limits::max_link_window) + " (got " +
                         std::to_string(l.window()) + ")");
  if (l.window() > 0 && !(l.latency_seconds() > 0 || l.bandwidth_bytes_per_second() > 0))
    bad("link.window", "needs link.latency_seconds or bandwidth_bytes_per_second > 0 (the "
                       "answers' round trip)");
  codec();
  // Acknowledged links retransmit until a copy gets through: a link that
  // loses everything never delivers.
  if (facts_.lossless_links && l.loss() == 1)
    bad("link.loss", "must be < 1 for acknowledged links (this algorithm's): a link that "
                     "drops every packet never delivers");
}

void checker::codec() {
  const auto& c = s_.spec.link().codec();
  if (!proto::Codec::Kind_IsValid(c.kind()))
    return bad("link.codec.kind", "unknown kind " + std::to_string(c.kind()));
  if (c.kind() == proto::Codec::NONE) {
    if (c.has_block() || c.has_topk_fraction() || c.error_feedback() || c.has_resync_every())
      bad("link.codec", "sets options but no kind (FP16, BF16, INT8 or TOPK)");
    return;
  }
  if (!facts_.coded_links)
    bad("link.codec", "this algorithm does not code its packets (link.codec is supported by "
                      "rfast, adpsgd, dpsgd, dasgd, loscar, async_ps and the rings allreduce, "
                      "local_sgd and diloco)");
  if (c.has_block() && c.kind() != proto::Codec::INT8)
    bad("link.codec.block", "is for kind INT8");
  if (c.has_block() && (c.block() < 1 || c.block() > limits::max_codec_block))
    bad("link.codec.block", "must be in [1, " + std::to_string(limits::max_codec_block) +
                              "] (got " + std::to_string(c.block()) + ")");
  if (c.has_topk_fraction() && c.kind() != proto::Codec::TOPK)
    bad("link.codec.topk_fraction", "is for kind TOPK");
  if (c.has_topk_fraction() && !(c.topk_fraction() > 0 && c.topk_fraction() <= 1))
    bad("link.codec.topk_fraction", "must be in (0, 1] (got " + num(c.topk_fraction()) + ")");
  if (c.has_resync_every() && (c.resync_every() < 1 || c.resync_every() > limits::max_codec_resync))
    bad("link.codec.resync_every", "must be in [1, " + std::to_string(limits::max_codec_resync) +
                                     "] (got " + std::to_string(c.resync_every()) + ")");
}

void checker::node_in_range(const std::string& path, std::uint32_t node, bool nodes_ok) {
  if (nodes_ok && node >= s_.spec.nodes())
    bad(path, "node " + std::to_string(node) +
                " out of range (nodes = " + std::to_string(s_.spec.nodes()) + ")");
}

void checker::window(const std::string& path, double from, double to) {
  non_negative(path + ".from_seconds", from);
  if (std::isfinite(to) && std::isfinite(from) && to != 0 && !(to > from))
    bad(path + ".to_seconds", "must be after from_seconds (" + num(from) +
                                "), or 0 for "
                                "the rest of the run (got " +
                                num(to) + ")");
}

void checker::faults(bool nodes_ok) {
  const auto& f = s_.spec.faults();
  const std::string base = "faults";
  for (int i = 0; i < f.straggle_size(); ++i) {
    const auto& x = f.straggle(i);
    const std::string p = idx(base + ".straggle", i);
    node_in_range(p + ".node", x.node(), nodes_ok);
    if (std::isfinite(x.factor()) && !(x.factor() >= 1))
      bad(p + ".factor", "must be >= 1 (got " + num(x.factor()) + ")");
    if (x.factor() > limits::max_straggle_factor)
      bad(p + ".factor",
          "must be <= " + num(limits::max_straggle_factor) + " (got " + num(x.factor()) + ")");
    non_negative(p + ".add_seconds", x.add_seconds());
    if (x.add_seconds() > limits::max_straggle_add_seconds)
      bad(p + ".add_seconds", "must be <= " + num(limits::max_straggle_add_seconds) + " (got " +
                                num(x.add_seconds()) + ")");
    if (!proto::StraggleBasis_IsValid(x.basis()))
      bad(p + ".basis", "unknown basis " + std::to_string(x.basis()));
    window(p, x.from_seconds(), x.to_seconds());
  }
  for (int i = 0; i < f.partition_size(); ++i) {
    const auto& x = f.partition(i);
    const std::string p = idx(base + ".partition", i);
    if (x.side_a().empty())
      bad(p + ".side_a", "must list at least one node");
    std::set<std::uint32_t> a;
    for (int k = 0; k < x.side_a_size(); ++k) {
      node_in_range(idx(p + ".side_a", k), x.side_a(k), nodes_ok);
      a.insert(x.side_a(k));
    }
    for (int k = 0; k < x.side_b_size(); ++k) {
      node_in_range(idx(p + ".side_b", k), x.side_b(k), nodes_ok);
      if (a.count(x.side_b(k)) > 0)
        bad(idx(p + ".side_b", k), "node " + std::to_string(x.side_b(k)) + " is on both sides");
    }
    if (nodes_ok && x.side_b().empty() && a.size() >= s_.spec.nodes())
      bad(p + ".side_a", "holds every node: nothing left on the other side");
    window(p, x.from_seconds(), x.to_seconds());
  }
  auto links = [&](const std::string& p,
                   const google::protobuf::RepeatedPtrField<proto::Edge>& es) {
    for (int k = 0; k < es.size(); ++k) {
      node_in_range(idx(p + ".links", k) + ".from", es[k].from(), nodes_ok);
      node_in_range(idx(p + ".links", k) + ".to", es[k].to(), nodes_ok);
    }
  };
  for (int i = 0; i < f.loss_burst_size(); ++i) {
    const auto& x = f.loss_burst(i);
    const std::string p = idx(base + ".loss_burst", i);
    links(p, x.links());
    unit_closed(p + ".loss", x.loss());
    window(p, x.from_seconds(), x.to_seconds());
  }
  for (int i = 0; i < f.delay_spike_size(); ++i) {
    const auto& x = f.delay_spike(i);
    const std::string p = idx(base + ".delay_spike", i);
    links(p, x.links());
    positive(p + ".extra_latency_seconds", x.extra_latency_seconds());
    window(p, x.from_seconds(), x.to_seconds());
  }
  for (int i = 0; i < f.crash_size(); ++i) {
    const auto& x = f.crash(i);
    const std::string p = idx(base + ".crash", i);
    node_in_range(p + ".node", x.node(), nodes_ok);
    non_negative(p + ".at_seconds", x.at_seconds());
    if (x.has_restart_after_seconds()) {
      positive(p + ".restart_after_seconds", x.restart_after_seconds());
      if (x.whole_node()) {
        if (const auto why =
              facts_.whole_restart_refusal ? facts_.whole_restart_refusal(x.node()) : std::string{};
            !why.empty())
          bad(p + ".restart_after_seconds", "a whole node cannot be restarted: " + why);
      }
    }
  }
  for (int i = 0; i < f.bad_gradients_size(); ++i) {
    const auto& x = f.bad_gradients(i);
    const std::string p = idx(base + ".bad_gradients", i);
    node_in_range(p + ".node", x.node(), nodes_ok);
    using B = proto::BadGradients;
    if (x.kind() != B::NOT_FINITE && x.kind() != B::SCALED)
      bad(p + ".kind", "must be NOT_FINITE or SCALED");
    if (x.kind() == B::SCALED && x.factor() == 0)
      bad(p + ".factor", "must be non-zero for SCALED");
    window(p, x.from_seconds(), x.to_seconds());
  }
  joins(nodes_ok);
}

/// faults.join: nodes absent from the start that join the running job.
void checker::joins(bool nodes_ok) {
  const auto& f = s_.spec.faults();
  const std::string base = "faults.join";
  std::set<std::uint32_t> joining;
  for (int i = 0; i < f.join_size(); ++i) {
    const auto& x = f.join(i);
    const std::string p = idx(base, i);
    node_in_range(p + ".node", x.node(), nodes_ok);
    non_negative(p + ".at_seconds", x.at_seconds());
    if (!facts_.joins_refused.empty())
      bad(p, facts_.joins_refused);
    else if (const auto why = facts_.whole_restart_refusal ? facts_.whole_restart_refusal(x.node())
                                                           : std::string{};
             !why.empty())
      bad(p + ".node", "cannot join later: " + why);
    if (!joining.insert(x.node()).second)
      bad(p + ".node", "node " + std::to_string(x.node()) +
                         " joins twice (a node joins once; a "
                         "crash with restart_after_seconds "
                         "brings a lost node back)");
    for (int c = 0; c < f.crash_size(); ++c)
      if (f.crash(c).node() == x.node() && f.crash(c).at_seconds() <= x.at_seconds())
        bad(idx("faults.crash", c) + ".at_seconds",
            "node " + std::to_string(x.node()) + " is absent until its join at " +
              num(x.at_seconds()) + " s (" + p + "): it cannot crash before");
  }
  if (nodes_ok && f.join_size() > 0 && joining.size() >= s_.spec.nodes())
    bad(base, "every node joins later: at least one must run from the start");
  const auto& c = s_.spec.checkpoint();
  if (f.join_size() > 0 && (c.at_seconds_size() > 0 || c.every_seconds() != 0))
    bad(base, "joins cannot be combined with checkpoints yet: a checkpoint does not save which "
              "nodes have joined");
}

void checker::stop_and_eval() {
  const auto& st = s_.spec.stop();
  non_negative("stop.time_seconds", st.time_seconds());
  const bool has_time = std::isfinite(st.time_seconds()) && st.time_seconds() > 0;
  if (!has_time && st.gradients() == 0 && std::isfinite(st.time_seconds()) &&
      st.time_seconds() >= 0)
    bad("stop", "needs a budget: time_seconds > 0 or gradients > 0");
  unit_closed("stop.target_accuracy", st.target_accuracy());
  if (st.stop_at_target() && st.target_accuracy() == 0)
    bad("stop.stop_at_target", "requires stop.target_accuracy > 0");
  const double every = s_.spec.eval().period_seconds();
  period("eval.period_seconds", every);
  if (has_time && std::isfinite(every) && every >= limits::min_period_seconds &&
      st.time_seconds() / every > limits::max_evaluations)
    bad("eval.period_seconds",
        "stop.time_seconds / eval.period_seconds = " + num(st.time_seconds()) + " / " + num(every) +
          " = " + num(st.time_seconds() / every) + " evaluations; the limit is " +
          num(limits::max_evaluations));
  const auto& ev = s_.spec.eval();
  if (ev.has_node_models() && ev.node_models() > limits::max_node_models)
    bad("eval.node_models", "= " + std::to_string(ev.node_models()) + "; the limit is " +
                              std::to_string(limits::max_node_models) +
                              " (each is one more pass over the test set per evaluation)");
  if (st.has_sustained_evaluations() &&
      (st.sustained_evaluations() == 0 ||
       st.sustained_evaluations() > limits::max_sustained_evaluations))
    bad("stop.sustained_evaluations", "= " + std::to_string(st.sustained_evaluations()) +
                                        "; must be in 1.." +
                                        std::to_string(limits::max_sustained_evaluations));
  if (st.target_basis() == proto::WORST_NODE && ev.has_node_models() && ev.node_models() == 0)
    bad("stop.target_basis",
        "WORST_NODE needs the nodes' own models scored (eval.node_models > 0)");
}

void checker::checkpoint() {
  const auto& c = s_.spec.checkpoint();
  const bool times = c.at_seconds_size() > 0 || c.every_seconds() != 0;
  if (!times && c.file().empty())
    return;
  for (int i = 0; i < c.at_seconds_size(); ++i) {
    const auto p = idx("checkpoint.at_seconds", i);
    positive(p, c.at_seconds(i));
    if (i > 0 && std::isfinite(c.at_seconds(i)) && !(c.at_seconds(i) > c.at_seconds(i - 1)))
      bad(p, "must be after checkpoint.at_seconds[" + std::to_string(i - 1) + "] (" +
               num(c.at_seconds(i - 1)) + "); list the times in increasing order");
    const double stop = s_.spec.stop().time_seconds();
    if (stop > 0 && std::isfinite(c.at_seconds(i)) && c.at_seconds(i) >= stop)
      bad(p, "must be before stop.time_seconds (" + num(stop) + ")");
  }
  non_negative("checkpoint.every_seconds", c.every_seconds());
  if (c.every_seconds() > 0)
    period("checkpoint.every_seconds", c.every_seconds());
  if (c.file().empty())
    bad("checkpoint.file", "must name the file to write");
  if (!times)
    bad("checkpoint", "needs at_seconds or every_seconds (when to checkpoint)");
  for (int i = 0; i < s_.spec.faults().crash_size(); ++i)
    if (!s_.spec.faults().crash(i).has_restart_after_seconds())
      bad(idx("faults.crash", i),
          "a run with checkpoints restarts its crashed workers: give restart_after_seconds (a "
          "node lost for good leaves the run's topology changed, which a checkpoint does not "
          "save yet)");
    else if (!facts_.whole_restart_unsaved.empty() && s_.spec.faults().crash(i).whole_node())
      bad(idx("faults.crash", i) + ".whole_node", facts_.whole_restart_unsaved);
}

}  // namespace atrain::validation
