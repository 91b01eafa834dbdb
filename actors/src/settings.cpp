/// settings_of: the spec's common settings, read once (settings.hpp).
#include "atrain/actors/settings.hpp"

#include "atrain/messages/spec.hpp"

#include "atrain.pb.h"

namespace atrain {

namespace {

topology_builder builder_of(proto::TopologySpec::Builder b) {
  switch (b) {
    case proto::TopologySpec::RING:
      return topology_builder::ring;
    case proto::TopologySpec::DIRECTED_RING:
      return topology_builder::directed_ring;
    case proto::TopologySpec::EXPONENTIAL:
      return topology_builder::exponential;
    case proto::TopologySpec::TREE_PAIR:
      return topology_builder::tree_pair;
    case proto::TopologySpec::STAR:
      return topology_builder::star;
    case proto::TopologySpec::TORUS:
      return topology_builder::torus;
    case proto::TopologySpec::COMPLETE:
      return topology_builder::complete;
    case proto::TopologySpec::RANDOM_REGULAR:
      return topology_builder::random_regular;
    case proto::TopologySpec::EXPLICIT:
      return topology_builder::explicit_edges;
    case proto::TopologySpec::DIRECTED_EXPONENTIAL:
      return topology_builder::directed_exponential;
    case proto::TopologySpec::BIPARTITE_EXPONENTIAL:
      return topology_builder::bipartite_exponential;
    default:
      return topology_builder::unspecified;
  }
}

link_settings link_of(const proto::LinkModel& m) {
  link_settings l;
  l.latency_seconds = m.latency_seconds();
  l.bandwidth_bytes_per_second = m.bandwidth_bytes_per_second();
  l.loss = m.loss();
  l.duplicate = m.duplicate();
  l.reorder = m.reorder();
  l.reorder_delay_seconds = m.reorder_delay_seconds();
  if (m.has_retransmit_seconds())
    l.retransmit_seconds = m.retransmit_seconds();
  l.window = m.window();
  const auto& c = m.codec();
  l.codec.kind = static_cast<codec::codec_kind>(c.kind());  // NONE..TOPK in the same order
  if (c.has_block())
    l.codec.block = c.block();
  if (c.has_topk_fraction())
    l.codec.topk_fraction = c.topk_fraction();
  l.codec.error_feedback = c.error_feedback();
  if (c.has_resync_every())
    l.resync_every = c.resync_every();
  return l;
}

deploy_settings deploy_of(const proto::Deployment& d) {
  deploy_settings out;
  out.hosts.assign(d.hosts().begin(), d.hosts().end());
  out.placement.assign(d.placement().begin(), d.placement().end());
  out.secret_file = d.secret_file();
  out.tls_certificate = d.tls().certificate();
  out.tls_key = d.tls().key();
  out.tls_ca = d.tls().ca();
  return out;
}

}  // namespace

run_settings settings_of(const proto::ExperimentSpec& spec) {
  run_settings s;
  s.name = spec.name();
  s.seed = spec.seed();
  s.clock = spec.clock() == proto::VIRTUAL ? clock_kind::virtual_time : clock_kind::real_time;
  if (spec.has_progress())
    s.progress = spec.progress();
  s.batch_size = spec.model().batch_size();
  const auto& stop = spec.stop();
  s.stop = {stop.time_seconds(),
            stop.gradients(),
            stop.target_accuracy(),
            stop.stop_at_target(),
            stop.target_basis() == proto::WORST_NODE,
            stop.has_sustained_evaluations() ? stop.sustained_evaluations()
                                             : limits::default_sustained_evaluations};
  s.eval.period_seconds = spec.eval().period_seconds();
  s.eval.node_models =
    spec.eval().has_node_models() ? spec.eval().node_models() : limits::default_node_models;
  const auto& cost = spec.cost();
  s.cost.tau_seconds = cost.tau_seconds();
  s.cost.tau_per_node.assign(cost.tau_per_node().begin(), cost.tau_per_node().end());
  s.cost.jitter = cost.jitter();
  s.cost.real_min_seconds = cost.real_min_seconds();
  s.cost.start_seconds = cost.start_seconds();
  s.cost.message_seconds = cost.message_seconds();
  s.link = link_of(spec.link());
  for (const auto& c : spec.faults().crash()) {
    crash_settings x{c.node(), c.at_seconds(), c.whole_node(), std::nullopt};
    if (c.has_restart_after_seconds())
      x.restart_after_seconds = c.restart_after_seconds();
    s.crashes.push_back(x);
  }
  for (const auto& j : spec.faults().join())
    s.joins.push_back({j.node(), j.at_seconds()});
  const auto& ck = spec.checkpoint();
  s.checkpoint.at_seconds.assign(ck.at_seconds().begin(), ck.at_seconds().end());
  s.checkpoint.every_seconds = ck.every_seconds();
  s.checkpoint.file = ck.file();
  s.deploy = deploy_of(spec.deploy());
  s.topology.builder = builder_of(spec.topology().builder());
  s.topology.tree_arity = spec.topology().arity() == 0 ? 2 : spec.topology().arity();
  return s;
}

}  // namespace atrain
