#pragma once
/// Supervision: one question to many workers, each answering once or not at
/// all (restarts and joins: freeze them, learn their rounds and models).
#include <cstddef>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

#include "atrain/actors/context.hpp"

namespace atrain {

/// Every worker of r.nodes but r.node's (its slot a null handle): whom a
/// restart or a join asks.
[[nodiscard]] inline std::vector<caf::actor> other_workers(const worker_restart& r) {
  auto out = workers_of(r.nodes);
  out.at(r.node) = caf::actor{};
  return out;
}

/// Asks each worker in `to` (msg...) and calls done(answers), aligned with
/// `to`, once every one answered or failed (a dead worker, or a null handle:
/// nullopt). Answer: the reply as a std::tuple; Handle: the workers' typed
/// interface (the request and its answer are checked against it).
template <class Answer, class Handle = caf::actor>
struct ask_nodes;

template <class... Ts, class Handle>
struct ask_nodes<std::tuple<Ts...>, Handle> {
  using answers = std::vector<std::optional<std::tuple<Ts...>>>;

  template <class Done, class... Xs>
  static void run(caf::event_based_actor* sup, const context_ptr& ctx,
                  const std::vector<caf::actor>& to, Done done, Xs... msg) {
    struct pending_answers {
      std::size_t pending = 0;
      answers got;
    };
    auto a = std::make_shared<pending_answers>();
    a->got.resize(to.size());
    for (const auto& w : to)
      a->pending += w ? 1 : 0;
    if (a->pending == 0)
      return done(a->got);
    auto one = [a, done]() mutable {
      if (--a->pending == 0)
        done(a->got);
    };
    for (std::size_t j = 0; j < to.size(); ++j)
      if (to[j])
        sup->request(caf::actor_cast<Handle>(to[j]), ctx->reply_timeout(), msg...)
          .then(
            [a, j, one](const Ts&... ys) mutable {
              a->got[j].emplace(ys...);
              one();
            },
            [one](const caf::error&) mutable { one(); });
  }
};

}  // namespace atrain
