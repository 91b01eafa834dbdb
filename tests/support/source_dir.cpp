#include "source_dir.hpp"

namespace atrain::test {

std::string source_dir() {
  return ATRAIN_SOURCE_DIR;
}

}  // namespace atrain::test
