/// An exception escaping an atrain actor's handler (or its behaviour
/// function) ends the actor with the reason named, never an abort and never
/// CAF's bare "runtime error": what the supervisor prints as "<who> failed:".
#include <boost/test/unit_test.hpp>

#include <new>
#include <stdexcept>
#include <string>

#include <caf/all.hpp>

#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/exceptions.hpp"

namespace {

using throw_atom = caf::atom_constant<caf::atom("throw")>;

struct thrower_state {
  static inline const char* name = "test_thrower";
};

caf::behavior thrower(caf::stateful_actor<thrower_state>* self, bool in_init) {
  atrain::name_exceptions(self);
  if (in_init)
    throw std::bad_alloc{};
  return {
    [](throw_atom, int what) {
      if (what == 0)
        throw std::bad_alloc{};
      throw std::runtime_error{"shard 3 is empty"};
    },
  };
}

/// The exit reason of a thrower spawned with `in_init`, sent (throw, what).
std::string reason_of(bool in_init, int what) {
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor self{sys};
  auto a = self->spawn<caf::monitored>(thrower, in_init);
  self->send(a, throw_atom::value, what);
  std::string out;
  self->receive([&](const caf::down_msg& dm) { out = atrain::error_text(dm.reason); });
  return out;
}

}  // namespace

BOOST_AUTO_TEST_SUITE(exceptions)

BOOST_AUTO_TEST_CASE(bad_alloc_in_a_handler_is_named_out_of_memory) {
  BOOST_TEST(reason_of(false, 0) == "out of memory (std::bad_alloc) in test_thrower");
}

BOOST_AUTO_TEST_CASE(bad_alloc_while_building_the_state_is_named_too) {
  BOOST_TEST(reason_of(true, 0) == "out of memory (std::bad_alloc) in test_thrower");
}

BOOST_AUTO_TEST_CASE(other_exceptions_keep_their_message) {
  BOOST_TEST(reason_of(false, 1) == "exception in test_thrower: shard 3 is empty");
}

BOOST_AUTO_TEST_SUITE_END()
