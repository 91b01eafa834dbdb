#include "atrain/messages/wire.hpp"

namespace atrain {

void register_message_types(caf::actor_system_config& cfg) {
  cfg.add_message_type<float_blob>("atrain_float_blob");
  cfg.add_message_type<double_blob>("atrain_double_blob");
  cfg.add_message_type<packet>("atrain_packet");
  cfg.add_message_type<model_snapshot>("atrain_model_snapshot");
  cfg.add_message_type<mass_account>("atrain_mass_account");
  cfg.add_message_type<link_stats>("atrain_link_stats");
  cfg.add_message_type<route_traffic>("atrain_route_traffic");
  cfg.add_message_type<std::vector<route_traffic>>("atrain_route_traffic_vector");
  cfg.add_message_type<metric_sample>("atrain_metric_sample");
  cfg.add_message_type<report_bytes>("atrain_report_bytes");
  cfg.add_message_type<std::vector<double_blob>>("atrain_double_blob_vector");
  cfg.add_message_type<spawn_request>("atrain_spawn_request");
  cfg.add_message_type<node_handles>("atrain_node_handles");
  cfg.add_message_type<std::vector<node_handles>>("atrain_node_handles_vector");
  cfg.add_message_type<spawn_reply>("atrain_spawn_reply");
  cfg.add_message_type<std::vector<std::uint32_t>>("atrain_u32_vector");
  cfg.add_message_type<rfast_epoch>("atrain_rfast_epoch");
}

}  // namespace atrain
