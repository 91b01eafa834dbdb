#pragma once
/// The table of bad specs the validator must refuse, each with the place
/// and the reason it must name (bad_specs.cpp; test_spec.cpp runs it).
#include <vector>

#include "spec_fixture.hpp"

namespace spec_fixture {

[[nodiscard]] std::vector<bad_case> bad_spec_cases();

}  // namespace spec_fixture
