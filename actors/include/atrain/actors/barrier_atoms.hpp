#pragma once
/// The atoms of the checkpoint barrier (atrain/actors/checkpoint.hpp), in a
/// header of their own so the actors' typed interfaces can name them without
/// the checkpoint machinery.
#include <caf/atom.hpp>

namespace atrain {

using ckpt_pause_atom = caf::atom_constant<caf::atom("ckpause")>;
using ckpt_go_atom = caf::atom_constant<caf::atom("ckgo")>;
using ckpt_drain_atom = caf::atom_constant<caf::atom("ckdrain")>;
using ckpt_state_atom = caf::atom_constant<caf::atom("ckstate")>;
using ckpt_timer_atom = caf::atom_constant<caf::atom("cktimer")>;
using ckpt_poll_atom = caf::atom_constant<caf::atom("ckpoll")>;

}  // namespace atrain
