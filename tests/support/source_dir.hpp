#pragma once
/// Where the tests find config/ and data/: the source tree this build came
/// from. Kept in one translation unit so that the other test files compile
/// identically in every checkout (ccache hits across worktrees).
#include <string>

namespace atrain::test {

[[nodiscard]] std::string source_dir();

}  // namespace atrain::test
