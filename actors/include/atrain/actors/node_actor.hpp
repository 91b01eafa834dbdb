#pragma once
/// The typed interface every worker implements (docs/ARCHITECTURE.md
/// "Messages and interfaces"), and the compile-time composition of a
/// behaviour from shared handler parts.
///
/// CAF 0.17 builds a typed behaviour only from plain handlers matching its
/// interface exactly (no message_handler::or_else), so shared parts are
/// tuples of handlers, flattened into one behaviour by compose().
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <caf/all.hpp>

#include "atrain/actors/barrier_atoms.hpp"
#include "atrain/messages/wire.hpp"

namespace atrain {

/// What the runtime sends every node's worker: the evaluator's model
/// request and the checkpoint barrier's pause, go, drain poll (seconds it
/// stays busy, < 0: quiet) and state request (a serialized NodeState part).
using node_actor = caf::typed_actor<caf::replies_to<model_atom>::with<model_snapshot>,
                                    caf::reacts_to<ckpt_pause_atom>, caf::reacts_to<ckpt_go_atom>,
                                    caf::replies_to<ckpt_drain_atom>::with<double>,
                                    caf::replies_to<ckpt_state_atom>::with<std::string>>;

namespace detail {

template <class T>
struct is_tuple : std::false_type {};

template <class... Ts>
struct is_tuple<std::tuple<Ts...>> : std::true_type {};

template <class T>
[[nodiscard]] auto as_tuple(T&& x) {
  if constexpr (is_tuple<std::decay_t<T>>::value)
    return std::forward<T>(x);
  else
    return std::make_tuple(std::forward<T>(x));
}

/// Skips one signature's messages (they stay in the mailbox).
template <class... Is>
struct skip_handler {
  caf::skip_t operator()(const Is&...) const { return caf::skip; }
};

template <class Sig>
struct input_of;

template <class In, class Out>
struct input_of<caf::typed_mpi<In, Out>> {
  using type = In;
};

/// A skip for `Sig` unless `Keep` handles its messages.
template <class Keep, class Sig>
struct skip_unless_kept;

template <class Keep, class... Is, class Out>
struct skip_unless_kept<Keep, caf::typed_mpi<caf::detail::type_list<Is...>, Out>> {
  using type = std::conditional_t<std::is_same<typename input_of<caf::deduce_mpi_t<Keep>>::type,
                                               caf::detail::type_list<Is...>>::value,
                                  std::tuple<>, std::tuple<skip_handler<Is...>>>;
};

template <class Keep, class... Sigs>
[[nodiscard]] auto skip_all_but(caf::detail::type_list<Sigs...>) {
  return std::tuple_cat(typename skip_unless_kept<Keep, Sigs>::type{}...);
}

}  // namespace detail

/// Builds `Behavior` (caf::behavior, caf::message_handler or a typed
/// interface's behavior_type) from handlers and tuples of handlers, in
/// order (the first that matches a message handles it).
template <class Behavior, class... Parts>
[[nodiscard]] Behavior compose(Parts&&... parts) {
  return std::apply([](auto&&... fs) { return Behavior{std::move(fs)...}; },
                    std::tuple_cat(detail::as_tuple(std::forward<Parts>(parts))...));
}

/// A behaviour of `Interface` that handles `keep`'s messages only and skips
/// every other (they wait in the mailbox until the actor become()s its real
/// behaviour): a replacement waiting for its state.
template <class Interface, class Keep>
[[nodiscard]] typename Interface::behavior_type waiting_for(Keep keep) {
  return compose<typename Interface::behavior_type>(
    std::move(keep), detail::skip_all_but<Keep>(typename Interface::signatures{}));
}

}  // namespace atrain
