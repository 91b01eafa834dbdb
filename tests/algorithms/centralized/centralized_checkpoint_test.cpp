/// centralized's checkpoint tests (split from tests/actors/checkpoint_test.cpp: same cases, same
/// checks).
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>

#include "atrain/actors/checkpoint.hpp"
#include "checkpoint_fixtures.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using proto_params = google::protobuf::RepeatedField<float>;
using atrain::proto::Checkpoint;
using atrain::proto::RunReport;

using namespace atrain::test::ckpt;

BOOST_FIXTURE_TEST_SUITE(centralized_checkpoint, remove_scratch)

// One worker, no links: it holds after a step.
BOOST_AUTO_TEST_CASE(centralized_resumed_run_ends_exactly_like_the_uninterrupted_one) {
  const std::vector<std::string> base{"dataset.max_train_samples=8000"};
  expect_resume_equals_uninterrupted("algorithms/centralized.textproto", base, 0.5, 1.0, 1.3,
                                     "centralized");
  const auto plan = t::config("algorithms/centralized.textproto", base);
  const auto ck = load(scratch("centralized_B_1.ckpt"), *plan);
  BOOST_REQUIRE(ck->nodes_size() == 1);
  BOOST_TEST(ck->nodes(0).compute().gradients() == ck->nodes(0).wakes());
  BOOST_TEST(ck->nodes(0).wakes() > 0u);
}
BOOST_AUTO_TEST_SUITE_END()
