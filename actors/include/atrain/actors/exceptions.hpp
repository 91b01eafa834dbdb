#pragma once
/// What an exception escaping an actor's handler becomes. CAF 0.17's default
/// ends the actor with a bare "runtime error" (and prints to the console); every
/// atrain actor installs this instead, so the run fails with the reason named:
/// "node 3 worker failed: out of memory (std::bad_alloc) in atrain_rfast_worker".
#include <exception>
#include <string>

#include <caf/error.hpp>
#include <caf/scheduled_actor.hpp>

namespace atrain {

/// The exit reason for exception `x` thrown inside the actor named `actor`:
/// sec::runtime_error with one string, "out of memory (std::bad_alloc) in
/// NAME" for an allocation failure, "exception in NAME: what()" otherwise.
[[nodiscard]] caf::error exception_reason(const std::exception_ptr& x, const std::string& actor);

/// Installs exception_reason as `self`'s exception handler; call it first in
/// the actor's behaviour function, so a throw while building the state is
/// covered too.
inline void name_exceptions(caf::scheduled_actor* self) {
  self->set_exception_handler([](caf::scheduled_actor* me, std::exception_ptr& x) {
    return exception_reason(x, me->name());
  });
}

}  // namespace atrain
