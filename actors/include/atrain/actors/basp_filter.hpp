/// What an authenticated peer may send into a host (issue 16). The BASP
/// guard reads every client-to-host frame's header and payload prefix
/// (basp_stream_checker) and asks this filter before CAF sees the message:
///   - the first client handshake names the peer's node; a repeat (CAF sends
///     one to select the connection) must name the same node;
///   - direct and routed messages carry only types atrain sends (registered
///     names, the CAF built-ins its messages use), no forwarding stack, and
///     a routed one ends at this host;
///   - a message goes to the spawner (a spawn request or a stats query
///     only), to an actor of a run this peer's node asked for (run_owners,
///     kept by the spawner: an exit message to any other actor of the host,
///     another driver's run included, is refused), to CAF's SpawnServ (its
///     "info" query, which every new connection sends), or is a response
///     (CAF delivers those only to a request waiting for them). A message to
///     an id CAF does not know passes: CAF drops it (a stale one in flight);
///   - monitor messages may not name another peer's run actors.
/// Down messages and heartbeats pass (see RELIABILITY.md, "Security").
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <caf/all.hpp>

#include "atrain/actors/basp_guard.hpp"

namespace atrain {

/// Which of this host's actors belong to the runs of which peer node. The
/// spawner writes, the guard reads: two actors of one process, so a mutex
/// around a map lookup (held for that lookup only, never across a wait).
class run_owners {
public:
  void add(const caf::node_id& owner, const std::vector<caf::actor_id>& ids);
  void remove(const std::vector<caf::actor_id>& ids);
  /// The node whose run `id` belongs to; none when it belongs to no run.
  [[nodiscard]] std::optional<caf::node_id> owner(caf::actor_id id) const;

private:
  mutable std::mutex mutex_;
  std::map<caf::actor_id, caf::node_id> owner_of_;
};

/// The element type names (CAF's portable names) atrain's remote messages
/// are made of: every type register_message_types adds and the built-ins
/// they use.
[[nodiscard]] std::set<std::string> atrain_remote_types(const caf::actor_system& sys);

class basp_message_filter {
public:
  basp_message_filter(caf::actor_system& sys, caf::actor_id spawner,
                      std::shared_ptr<const run_owners> owners,
                      std::shared_ptr<const std::set<std::string>> types);

  /// Why frame `f` of this connection is refused; "" lets it through.
  /// Stateful: the client handshake names the peer's node.
  [[nodiscard]] std::string judge(const basp_frame& f);

private:
  [[nodiscard]] std::string judge_message(const basp_frame& f);
  [[nodiscard]] std::string judge_handshake(const basp_frame& f);
  [[nodiscard]] std::string judge_destination(const basp_frame& f, const std::string& types);

  caf::actor_system* sys_;
  caf::actor_id spawner_;
  std::shared_ptr<const run_owners> owners_;
  std::shared_ptr<const std::set<std::string>> types_;
  caf::node_id peer_;  // from the first client handshake
};

}  // namespace atrain
