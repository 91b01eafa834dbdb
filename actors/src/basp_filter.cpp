/// The BASP message filter of a host's guard (see basp_filter.hpp).
#include "atrain/actors/basp_filter.hpp"

#include <caf/io/basp/header.hpp>
#include <caf/io/basp/message_type.hpp>

namespace atrain {

void run_owners::add(const caf::node_id& owner, const std::vector<caf::actor_id>& ids) {
  std::lock_guard<std::mutex> lock{mutex_};
  for (auto id : ids)
    owner_of_[id] = owner;
}

void run_owners::remove(const std::vector<caf::actor_id>& ids) {
  std::lock_guard<std::mutex> lock{mutex_};
  for (auto id : ids)
    owner_of_.erase(id);
}

std::optional<caf::node_id> run_owners::owner(caf::actor_id id) const {
  std::lock_guard<std::mutex> lock{mutex_};
  auto i = owner_of_.find(id);
  if (i == owner_of_.end())
    return std::nullopt;
  return i->second;
}

std::set<std::string> atrain_remote_types(const caf::actor_system& sys) {
  // The built-ins atrain's remote messages use: atoms and numbers, actor
  // handles (spawn replies, links), the node and error/exit/down system
  // messages CAF sends for monitors, links and responses.
  std::set<std::string> out = {"@atom", "@u8",     "@u32",     "@u64",
                               "@i32",  "@i64",    "double",   "bool",
                               "@str",  "@actor",  "@addr",    "@strong_actor_ptr",
                               "@node", "@error",  "@exit",    "@down",
                               "@unit", "@strvec", "@actorvec"};
  for (const auto& [name, factory] : sys.config().value_factories_by_name)
    if (name.rfind("atrain_", 0) == 0)
      out.insert(name);
  return out;
}

basp_message_filter::basp_message_filter(caf::actor_system& sys, caf::actor_id spawner,
                                         std::shared_ptr<const run_owners> owners,
                                         std::shared_ptr<const std::set<std::string>> types)
  : sys_{&sys}, spawner_{spawner}, owners_{std::move(owners)}, types_{std::move(types)} {}

namespace {

// CAF's own operation numbers (caf/io/basp/message_type.hpp).
using op = caf::io::basp::message_type;
constexpr auto server_handshake = static_cast<std::uint8_t>(op::server_handshake);
constexpr auto client_handshake = static_cast<std::uint8_t>(op::client_handshake);
constexpr auto direct_message = static_cast<std::uint8_t>(op::direct_message);
constexpr auto routed_message = static_cast<std::uint8_t>(op::routed_message);
constexpr auto monitor_message = static_cast<std::uint8_t>(op::monitor_message);

}  // namespace

std::string basp_message_filter::judge(const basp_frame& f) {
  std::string why;
  if (f.operation == client_handshake) {
    why = judge_handshake(f);
  } else if (f.operation == server_handshake) {
    why = "a server handshake from a client";
  } else if (f.operation == direct_message || f.operation == routed_message) {
    why = judge_message(f);
  } else if (f.operation == monitor_message) {
    const auto owner = owners_->owner(f.dest_actor);
    if (owner && *owner != peer_)
      why = "a monitor message for actor " + std::to_string(f.dest_actor) +
            ", an actor of another peer's run";
  }
  return why;
}

std::string basp_message_filter::judge_handshake(const basp_frame& f) {
  caf::binary_deserializer source{*sys_, f.prefix};
  caf::node_id node;
  if (auto err = source(node); err || !node)
    return "a client handshake without a readable node id";
  if (!peer_) {
    peer_ = node;
    return "";
  }
  return node == peer_ ? "" : "a second client handshake naming another node";
}

std::string basp_message_filter::judge_message(const basp_frame& f) {
  caf::binary_deserializer source{*sys_, f.prefix};
  if (f.operation == routed_message) {
    caf::node_id from;
    caf::node_id to;
    if (auto err = source(from, to))
      return "a routed message without readable node ids";
    if (to != sys_->node())
      return "a routed message for another node (" + caf::to_string(to) + ")";
  }
  std::size_t stages = 0;
  if (auto err = source.begin_sequence(stages); err || stages != 0)
    return "a message with a forwarding stack (atrain sends none)";
  std::uint16_t nr = 0;
  std::string types;
  if (auto err = source.begin_object(nr, types); err || nr != 0)
    return "a message whose type names do not fit in its first " +
           std::to_string(basp_prefix_limit) + " bytes";
  return judge_destination(f, types);
}

std::string basp_message_filter::judge_destination(const basp_frame& f, const std::string& types) {
  if (types.rfind("@<>", 0) != 0)
    return "a message with malformed type names";
  for (std::size_t i = 3; i < types.size();) {
    const auto end = std::min(types.find('+', i + 1), types.size());
    const auto name = types.substr(i + 1, end - i - 1);
    if (types[i] != '+' || !types_->count(name))
      return "a message of type '" + name + "', which atrain does not send";
    i = end;
  }
  if (f.flags & caf::io::basp::header::named_receiver_flag) {
    if (f.dest_actor == static_cast<std::uint64_t>(caf::atom("SpawnServ")) &&
        types == "@<>+@atom+@atom+@str")
      return "";  // (sys, get, "info"): CAF's greeting on every new connection
    return "a message (" + types + ") to a named actor of CAF's";
  }
  if (caf::message_id{f.operation_data}.is_response())
    return "";
  if (f.dest_actor == spawner_) {
    if (types == "@<>+@atom+atrain_spawn_request" || types == "@<>+@atom")
      return "";
    return "a message (" + types + ") to the spawner, which takes spawn requests only";
  }
  const auto owner = owners_->owner(f.dest_actor);
  if (owner)
    return *owner == peer_ ? ""
                           : "a message (" + types + ") to actor " + std::to_string(f.dest_actor) +
                               " of another peer's run";
  if (!sys_->registry().get(f.dest_actor))
    return "";  // CAF drops it: no such actor (any more)
  if (types == "@<>+@atom+@str+@strong_actor_ptr+@str")
    return "";  // (ok, "info", config server, name): the answer to CAF's greeting
  return "a message (" + types + ") to actor " + std::to_string(f.dest_actor) +
         ", which belongs to no run of this peer";
}

}  // namespace atrain
