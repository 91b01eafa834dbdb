// settings_of: the spec's common settings as the actors read them, each
// against the value written in the spec text (defaults as the proto says).
#include <boost/test/unit_test.hpp>

#include <string>

#include "atrain/actors/settings.hpp"
#include "atrain/messages/spec.hpp"

namespace {

atrain::run_settings settings_from(const std::string& text) {
  return atrain::settings_of(atrain::parse_spec(text, "settings_test", "").spec);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(settings)

BOOST_AUTO_TEST_CASE(every_field_is_copied) {
  const auto s = settings_from(R"(
    name: "s" seed: 7 clock: REAL progress: false
    model { batch_size: 16 }
    topology { builder: TREE_PAIR arity: 3 }
    cost { tau_seconds: 0.5 tau_per_node: [0.25, 0.75] jitter: 0.1 real_min_seconds: 0.002
           start_seconds: 1.5 }
    link { latency_seconds: 0.01 bandwidth_bytes_per_second: 1e6 loss: 0.2 duplicate: 0.3
           reorder: 0.4 reorder_delay_seconds: 0.05 retransmit_seconds: 0.2 }
    stop { time_seconds: 9 gradients: 100 target_accuracy: 0.8 stop_at_target: true }
    eval { period_seconds: 0.25 }
    faults { crash { node: 1 at_seconds: 2 whole_node: true restart_after_seconds: 1.5 }
             crash { node: 2 at_seconds: 3 } }
    checkpoint { at_seconds: [1, 2] every_seconds: 4 file: "ck{k}.pb" }
    deploy { hosts: ["a:1", "b:2"] placement: [1, 0] secret_file: "sec"
             tls { certificate: "c.pem" key: "k.pem" ca: "ca.pem" } }
  )");
  BOOST_TEST(s.name == "s");
  BOOST_TEST(s.seed == 7U);
  BOOST_TEST((s.clock == atrain::clock_kind::real_time));
  BOOST_TEST((s.progress && !*s.progress));
  BOOST_TEST(s.batch_size == 16U);
  BOOST_TEST((s.topology.builder == atrain::topology_builder::tree_pair));
  BOOST_TEST(s.topology.tree_arity == 3U);
  BOOST_TEST(s.cost.tau_seconds == 0.5);
  BOOST_TEST(s.cost.tau_per_node.size() == 2U);
  BOOST_TEST(s.cost.tau_per_node.at(1) == 0.75);
  BOOST_TEST(s.cost.jitter == 0.1);
  BOOST_TEST(s.cost.real_min_seconds == 0.002);
  BOOST_TEST(s.cost.start_seconds == 1.5);
  BOOST_TEST(s.link.latency_seconds == 0.01);
  BOOST_TEST(s.link.bandwidth_bytes_per_second == 1e6);
  BOOST_TEST(s.link.loss == 0.2);
  BOOST_TEST(s.link.duplicate == 0.3);
  BOOST_TEST(s.link.reorder == 0.4);
  BOOST_TEST(s.link.reorder_delay_seconds == 0.05);
  BOOST_TEST((s.link.retransmit_seconds && *s.link.retransmit_seconds == 0.2));
  BOOST_TEST(s.link.active());
  BOOST_TEST(s.stop.time_seconds == 9.0);
  BOOST_TEST(s.stop.gradients == 100U);
  BOOST_TEST(s.stop.target_accuracy == 0.8);
  BOOST_TEST(s.stop.stop_at_target);
  BOOST_TEST(s.eval.period_seconds == 0.25);
  BOOST_REQUIRE(s.crashes.size() == 2U);
  BOOST_TEST(s.crashes[0].node == 1U);
  BOOST_TEST(s.crashes[0].at_seconds == 2.0);
  BOOST_TEST(s.crashes[0].whole_node);
  BOOST_TEST((s.crashes[0].restart_after_seconds && *s.crashes[0].restart_after_seconds == 1.5));
  BOOST_TEST(s.crashes[1].node == 2U);
  BOOST_TEST(!s.crashes[1].whole_node);
  BOOST_TEST(!s.crashes[1].restart_after_seconds);
  BOOST_TEST(s.checkpoint.at_seconds.size() == 2U);
  BOOST_TEST(s.checkpoint.every_seconds == 4.0);
  BOOST_TEST(s.checkpoint.file == "ck{k}.pb");
  BOOST_TEST(s.checkpoint.enabled());
  BOOST_TEST(s.deploy.hosts.size() == 2U);
  BOOST_TEST(s.deploy.hosts.at(1) == "b:2");
  BOOST_TEST(s.deploy.placement.at(0) == 1U);
  BOOST_TEST(s.deploy.secret_file == "sec");
  BOOST_TEST(s.deploy.tls_certificate == "c.pem");
  BOOST_TEST(s.deploy.tls_key == "k.pem");
  BOOST_TEST(s.deploy.tls_ca == "ca.pem");
}

BOOST_AUTO_TEST_CASE(absent_fields_keep_the_protos_defaults) {
  const auto s = settings_from(R"(clock: VIRTUAL topology { builder: TREE_PAIR arity: 0 })");
  BOOST_TEST((s.clock == atrain::clock_kind::virtual_time));
  BOOST_TEST(!s.progress);
  BOOST_TEST(s.topology.tree_arity == 2U);  // the spec's 0 means 2
  BOOST_TEST(!s.link.retransmit_seconds);
  BOOST_TEST(!s.link.active());  // a perfect link
  BOOST_TEST(s.crashes.empty());
  BOOST_TEST(!s.checkpoint.enabled());
  BOOST_TEST(s.deploy.hosts.empty());
}

BOOST_AUTO_TEST_SUITE_END()
