// The algorithm registry against the spec's oneof: every algorithm the spec
// can name has exactly one descriptor, under the oneof field's name, with the
// entry points the runtime calls.
#include <boost/test/unit_test.hpp>

#include <set>
#include <string>

#include "atrain/actors/algorithm.hpp"
#include "atrain/messages/spec.hpp"

using namespace atrain;

BOOST_AUTO_TEST_SUITE(registry)

BOOST_AUTO_TEST_CASE(one_descriptor_per_spec_algorithm) {
  const auto* oneof = proto::AlgorithmSpec::descriptor()->FindOneofByName("kind");
  BOOST_REQUIRE(oneof != nullptr);
  std::set<std::string> names;
  for (int f = 0; f < oneof->field_count(); ++f) {
    const auto* field = oneof->field(f);
    const auto kind = static_cast<proto::AlgorithmSpec::KindCase>(field->number());
    const auto* d = find_algorithm(kind);
    BOOST_REQUIRE_MESSAGE(d != nullptr, field->name() << " has no descriptor");
    BOOST_TEST(d->name == field->name());
    BOOST_TEST(d->kind == kind);
    BOOST_TEST((d->spawn_node != nullptr && d->wire != nullptr), field->name());
    BOOST_TEST(d->check_block != nullptr, field->name());  // every block has a step size
    BOOST_TEST(((d->spawn_replacement == nullptr) == (d->join == nullptr)), field->name());
    names.insert(d->name);
  }
  BOOST_TEST(names.size() == algorithm_registry().size());
  BOOST_TEST(static_cast<int>(algorithm_registry().size()) == oneof->field_count());
  BOOST_TEST(find_algorithm(proto::AlgorithmSpec::KIND_NOT_SET) == nullptr);
}

BOOST_AUTO_TEST_CASE(labels_and_unknown_algorithms) {
  proto::ExperimentSpec spec;
  spec.mutable_algorithm()->mutable_loscar()->set_merge(proto::Loscar::NAIVE);
  BOOST_TEST(algorithm_name_of(spec) == "loscar_naive");
  spec.mutable_algorithm()->mutable_loscar()->set_merge(proto::Loscar::DELAY_CORRECTED);
  BOOST_TEST(algorithm_name_of(spec) == "loscar");
  spec.mutable_algorithm()->mutable_rfast();
  BOOST_TEST(algorithm_name_of(spec) == "rfast");
  spec.clear_algorithm();
  BOOST_TEST(algorithm_name_of(spec) == "unknown");
  BOOST_CHECK_THROW((void)algorithm_of(spec), std::invalid_argument);
}

BOOST_AUTO_TEST_SUITE_END()
