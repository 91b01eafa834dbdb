// The algorithm registry against the spec's oneof: every algorithm the spec
// can name has exactly one descriptor, under the oneof field's name, with the
// entry points the runtime calls.
#include <boost/test/unit_test.hpp>

#include <set>
#include <stdexcept>
#include <string>

#include "algorithms/dpsgd/dpsgd.hpp"
#include "algorithms/rfast/rfast.hpp"
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
    BOOST_REQUIRE_MESSAGE(d->parse != nullptr, field->name() << " has no parse");
    proto::AlgorithmSpec a;  // the block set, all defaults
    a.GetReflection()->MutableMessage(&a, field);
    BOOST_TEST(d->parse(a)->block() == field->name());
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

// The typed config keeps the block's values and resolves its defaults as
// the proto documents them; another algorithm's config type is refused.
BOOST_AUTO_TEST_CASE(a_block_parses_into_its_config) {
  proto::AlgorithmSpec a;
  auto* r = a.mutable_rfast();
  r->set_step_size(0.25);
  r->set_decay(0.5);
  r->set_variant(proto::RFast::PHI);
  const auto& d = *find_algorithm(proto::AlgorithmSpec::kRfast);
  const auto defaults = d.parse(a);
  const auto& c = config_as<rfast_config>(*defaults);
  BOOST_TEST(c.step_size == 0.25);
  BOOST_TEST(c.decay == 0.5);
  BOOST_TEST(c.phi_scaled);
  BOOST_TEST(c.phi_min == 0.05);
  BOOST_TEST(c.stale_model_wakes == 50U);
  BOOST_TEST(c.reroot);
  r->set_variant(proto::RFast::PLAIN);
  r->set_phi_min(0.2);
  r->set_stale_model_wakes(0);
  r->set_reroot(false);
  const auto set = d.parse(a);
  const auto& s = config_as<rfast_config>(*set);
  BOOST_TEST(!s.phi_scaled);
  BOOST_TEST(s.phi_min == 0.2);
  BOOST_TEST(s.stale_model_wakes == 0U);
  BOOST_TEST(!s.reroot);
  try {
    (void)config_as<dpsgd_config>(*set);
    BOOST_FAIL("an rfast config read as dpsgd's");
  } catch (const std::logic_error& e) {
    BOOST_TEST(std::string{e.what()}.find("'rfast' block, not 'dpsgd'") != std::string::npos);
  }
}

BOOST_AUTO_TEST_SUITE_END()
