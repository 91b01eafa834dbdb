#include "atrain/actors/exceptions.hpp"

#include <new>

#include <caf/sec.hpp>

namespace atrain {

caf::error exception_reason(const std::exception_ptr& x, const std::string& actor) {
  std::string text;
  try {
    std::rethrow_exception(x);
  } catch (const std::bad_alloc& e) {
    text = std::string{"out of memory ("} + e.what() + ") in " + actor;
  } catch (const std::exception& e) {
    text = "exception in " + actor + ": " + e.what();
  } catch (...) {
    text = "unknown exception in " + actor;
  }
  return caf::make_error(caf::sec::runtime_error, std::move(text));
}

}  // namespace atrain
