// The run summary (apps/src/summary.cpp): faults, hosts lost, human bytes,
// and a run that lost nodes saying so in its last line.
#include <boost/test/unit_test.hpp>

#include <sstream>

#include "summary.hpp"

BOOST_AUTO_TEST_SUITE(summary)

namespace {

atrain::proto::RunReport lost_run() {
  atrain::proto::RunReport r;
  r.set_algorithm("rfast");
  r.set_nodes(8);
  r.set_stop_reason("time budget spent");
  r.set_bytes_sent(12'345'678);
  for (int k : {2, 5}) {
    auto* f = r.add_faults();
    f->set_kind("host_lost");
    f->set_what("node " + std::to_string(k));
    f->set_host("127.0.0.1:7001");
    f->set_from_seconds(4.2);
    f->set_effect("host 127.0.0.1:7001 lost at 4.2 s; the others go on");
  }
  auto* c = r.add_faults();
  c->set_kind("crash");
  c->set_what("node 6");
  c->set_from_seconds(6);
  c->set_effect("killed at 6.000000 s; worker lost for good, the others go on");
  auto* s = r.add_stragglers();
  s->set_node(3);
  s->set_detected_seconds(1.5);
  s->set_slowest_factor(3.2);
  r.add_warnings("something odd");
  return r;
}

std::string last_line(const std::string& text) {
  const auto end = text.find_last_not_of('\n');
  const auto start = text.rfind('\n', end);
  return text.substr(start == std::string::npos ? 0 : start + 1, end - start);
}

}  // namespace

BOOST_AUTO_TEST_CASE(a_run_that_lost_nodes_says_so_last) {
  const auto r = lost_run();
  BOOST_TEST(atrain::cli::lost_nodes_line(r) ==
             "lost 3 of 8 nodes (host 127.0.0.1:7001 at 4.2 s, node 6 at 6 s)");
  std::ostringstream out;
  atrain::cli::print_summary(r, out);
  const auto text = out.str();
  BOOST_TEST(last_line(text) == atrain::cli::lost_nodes_line(r), text);
  BOOST_TEST(
    text.find("host lost       127.0.0.1:7001 at 4.2 s (2 nodes: 2 5)") != std::string::npos, text);
  BOOST_TEST(text.find("straggler       node 3 detected at 1.5 s, up to 3.2x") != std::string::npos,
             text);
  BOOST_TEST(text.find("fault           crash node 6") != std::string::npos, text);
  BOOST_TEST(text.find("warning: something odd") != std::string::npos, text);
  BOOST_TEST(text.find("(12.3 MB, 0 dropped)") != std::string::npos, text);
}

BOOST_AUTO_TEST_CASE(a_run_that_lost_nothing_has_no_lost_line) {
  atrain::proto::RunReport r;
  r.set_nodes(8);
  auto* c = r.add_faults();
  c->set_kind("crash");
  c->set_what("node 1");
  c->set_effect("killed at 0.3 s, restarted at 0.5 s with node 0's model");
  BOOST_TEST(atrain::cli::lost_nodes_line(r).empty());
  std::ostringstream out;
  atrain::cli::print_summary(r, out);
  BOOST_TEST(out.str().find("lost ") == std::string::npos, out.str());
}

BOOST_AUTO_TEST_CASE(bytes_in_human_units) {
  BOOST_TEST(atrain::cli::human_bytes(812) == "812 B");
  BOOST_TEST(atrain::cli::human_bytes(3400) == "3.4 kB");
  BOOST_TEST(atrain::cli::human_bytes(9'256'280) == "9.3 MB");
  BOOST_TEST(atrain::cli::human_bytes(4.56e9) == "4.56 GB");
}

BOOST_AUTO_TEST_SUITE_END()
