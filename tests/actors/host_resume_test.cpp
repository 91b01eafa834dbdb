/// A host of a multi-host run resuming from a checkpoint, in one process
/// (README "Checkpoint and resume"): each host gets its nodes' part of the
/// checkpoint (checkpoint_parts); its spawner restores those nodes exactly
/// (their states read back equal the file's), refuses a part that does not
/// fit naming the node and the reason, and its run keeper joins the drain;
/// the new wire fields cross CAF's serializer; a checkpoint is resumed only
/// with the deploy it was taken with.
#include <boost/test/unit_test.hpp>

#include <unistd.h>

#include <filesystem>
#include <mutex>

#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <google/protobuf/util/message_differencer.h>

#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/deploy.hpp"
#include "atrain/actors/host.hpp"
#include "fixtures.hpp"

namespace t = atrain::test;
namespace fs = std::filesystem;
using atrain::proto::Checkpoint;
using atrain::proto::NodeState;

namespace {

const std::string secret = "a-secret-of-24-characters";

struct host_config : caf::actor_system_config {
  host_config() {
    atrain::register_message_types(*this);
    atrain::configure_real_clock(*this, 2);
    set("logger.console-verbosity", caf::atom("quiet"));
  }
};

/// The quickstart (R-FAST, 8 nodes) checkpointed at 0.3 s (virtual clock),
/// the plan it was taken with and the file.
struct taken {
  std::shared_ptr<const atrain::run_plan> plan;
  std::shared_ptr<const Checkpoint> ck;
  std::string file;
};

/// Its scratch directory goes with the test program.
struct scratch_dir {
  fs::path path = fs::temp_directory_path() / ("atrain_host_resume_" + std::to_string(::getpid()));
  scratch_dir() { fs::create_directories(path); }
  scratch_dir(const scratch_dir&) = delete;
  scratch_dir& operator=(const scratch_dir&) = delete;
  ~scratch_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

taken take_once() {
  static const scratch_dir dir;
  const auto file = (dir.path / "q.ckpt").string();
  const std::vector<std::string> task = {"dataset.max_train_samples=4000", "progress=false",
                                         "stop.stop_at_target=false"};
  auto stopped = task;  // right after its barrier at 0.3 s
  stopped.insert(stopped.end(), {"stop.time_seconds=0.3001", "checkpoint.at_seconds=[0.3]",
                                 "checkpoint.file=" + file});
  auto to_barrier = t::quickstart(stopped);
  atrain::run_options opts;
  opts.progress = false;
  auto report = atrain::run_experiment(to_barrier, opts);
  BOOST_REQUIRE(report);
  BOOST_REQUIRE(report->error().empty());
  // The plan a resumed run has (the quickstart's 30 s budget).
  auto plan = t::quickstart(task);
  auto ck = atrain::load_checkpoint(file, *plan);
  if (!ck)
    BOOST_FAIL("cannot load " << file << ": " << atrain::error_text(ck.error()));
  return {plan, *ck, file};
}

/// Taken once for every test here.
const taken& take_quickstart_checkpoint() {
  static const taken x = take_once();
  return x;
}

/// A host spawner in this process, its log kept.
struct host_fixture {
  /// The log outlives the actor system: its actors log until they are done
  /// (members are destroyed in reverse order, the system first).
  std::mutex mtx;
  std::vector<std::string> log;
  host_config cfg;
  caf::actor_system sys{cfg};
  caf::actor host;

  host_fixture() {
    atrain::host_options opts;
    opts.secret = secret;
    opts.log = [this](const std::string& line) {
      std::lock_guard<std::mutex> guard{mtx};
      log.push_back(line);
    };
    host = atrain::spawn_host(sys, std::move(opts));
  }
  ~host_fixture() { caf::anon_send_exit(host, caf::exit_reason::kill); }

  atrain::spawn_request request(const taken& x, std::vector<std::uint32_t> nodes,
                                const Checkpoint* part, const caf::actor& sup) {
    atrain::spawn_request r;
    r.secret = secret;
    x.plan->spec.SerializeToString(&r.spec);
    r.spec_label = "quickstart";
    r.base_dir = fs::absolute(x.plan->base_dir).string();
    r.nodes = std::move(nodes);
    r.run_seconds = x.ck->time_seconds();
    r.supervisor = sup;
    if (part) {
      part->SerializeToString(&r.checkpoint);
      r.checkpoint_label = x.file;
    }
    return r;
  }
};

/// Asks `a` for its checkpoint state.
std::string state_of(caf::scoped_actor& self, const caf::actor& a) {
  std::string out;
  self->request(a, std::chrono::seconds{10}, atrain::ckpt_state_atom::value)
    .receive([&](std::string& s) { out = std::move(s); },
             [&](caf::error& e) { BOOST_FAIL("ckpt_state: " << caf::to_string(e)); });
  return out;
}

double drain_of(caf::scoped_actor& self, const caf::actor& a) {
  double out = 0;
  self->request(a, std::chrono::seconds{10}, atrain::ckpt_drain_atom::value)
    .receive([&](double busy) { out = busy; },
             [&](caf::error& e) { BOOST_FAIL("ckpt_drain: " << caf::to_string(e)); });
  return out;
}

/// Through a type-erased message and CAF's binary serializer, as BASP sends it.
template <class T>
T over_the_wire(caf::actor_system& sys, T x) {
  auto msg = caf::make_message(std::move(x));
  std::vector<char> buf;
  caf::binary_serializer sink{sys, buf};
  BOOST_REQUIRE(!sink(msg));
  caf::message back;
  caf::binary_deserializer source{sys, buf};
  BOOST_REQUIRE(!source(back));
  BOOST_REQUIRE(back.match_elements<T>());
  return back.get_as<T>(0);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(host_resume)

BOOST_AUTO_TEST_CASE(each_host_gets_only_its_nodes_states) {
  const auto& x = take_quickstart_checkpoint();
  const std::vector<std::uint32_t> host_of = {0, 1, 0, 1, 0, 1, 0, 1};
  const auto parts = atrain::checkpoint_parts(*x.ck, host_of, 2);
  BOOST_REQUIRE(parts.size() == 2u);
  std::size_t whole = 0;
  for (std::uint32_t h = 0; h < 2; ++h) {
    const auto& p = parts[h];
    BOOST_TEST(p.links_size() == 0);
    BOOST_TEST(!p.has_evaluator());
    BOOST_TEST(p.time_ns() == x.ck->time_ns());
    BOOST_TEST(google::protobuf::util::MessageDifferencer::Equals(p.spec(), x.ck->spec()));
    BOOST_REQUIRE(p.nodes_size() == x.ck->nodes_size());
    for (int k = 0; k < p.nodes_size(); ++k) {
      BOOST_TEST(p.nodes(k).node() == static_cast<std::uint32_t>(k));
      const bool mine = host_of[static_cast<std::size_t>(k)] == h;
      const bool same =
        google::protobuf::util::MessageDifferencer::Equals(p.nodes(k), x.ck->nodes(k));
      BOOST_TEST(same == mine, "host " << h << ", node " << k);
      whole += mine && same;
      if (!mine)
        BOOST_TEST(p.nodes(k).params_size() == 0);
    }
    BOOST_TEST(p.ByteSizeLong() < x.ck->ByteSizeLong());
  }
  BOOST_TEST(whole == 8u);
}

// Host 0 of two spawns nodes 0, 2, 4, 6 from its part: each node's actors
// give back exactly the state the file holds for it (worker and gradient
// buffer merged, as the supervisor's barrier does), before any go.
BOOST_AUTO_TEST_CASE(a_host_restores_its_nodes_from_its_part) {
  const auto& x = take_quickstart_checkpoint();
  host_fixture f;
  const auto parts = atrain::checkpoint_parts(*x.ck, {0, 1, 0, 1, 0, 1, 0, 1}, 2);
  // The request as it crosses to the host.
  caf::scoped_actor self{f.sys};
  auto r = over_the_wire(f.sys, f.request(x, {0, 2, 4, 6}, &parts[0], self));
  BOOST_TEST(r.checkpoint_label == x.file);
  atrain::spawn_reply reply;
  self->request(f.host, std::chrono::seconds{60}, atrain::spawn_atom::value, std::move(r))
    .receive([&](atrain::spawn_reply& got) { reply = std::move(got); },
             [&](caf::error& e) { BOOST_FAIL("refused: " << atrain::error_text(e)); });
  reply = over_the_wire(f.sys, reply);
  BOOST_REQUIRE(reply.nodes.size() == 4u);
  BOOST_REQUIRE(reply.keeper);
  for (const auto& n : reply.nodes) {
    BOOST_REQUIRE(n.worker);
    BOOST_REQUIRE(n.buffer);
    NodeState got;
    got.set_node(n.node);
    BOOST_REQUIRE(got.MergeFromString(state_of(self, n.worker)));
    BOOST_REQUIRE(got.MergeFromString(state_of(self, n.buffer)));
    const auto& saved = x.ck->nodes(static_cast<int>(n.node));
    std::string diff;
    google::protobuf::util::MessageDifferencer d;
    d.ReportDifferencesToString(&diff);
    BOOST_TEST(d.Compare(saved, got), "node " << n.node << ": " << diff);
    BOOST_TEST(saved.compute().gradients() > 0u);
  }
  // The keeper: quiet only at the second poll in a row with every packet
  // answered (none was sent here).
  BOOST_TEST(drain_of(self, reply.keeper) == 0.0);
  BOOST_TEST(drain_of(self, reply.keeper) == -1.0);
  std::lock_guard<std::mutex> guard{f.mtx};
  BOOST_REQUIRE(!f.log.empty());
  BOOST_TEST(f.log.back().find("resumed from " + x.file) != std::string::npos, f.log.back());
  // The host holds its 4 nodes' rows only (prepare_host_run), and says so.
  std::size_t held = 0;
  for (std::uint32_t k : {0U, 2U, 4U, 6U})
    held += x.plan->shard.at(k).size();
  const auto holding = "holding " + std::to_string(held) + " of " +
                       std::to_string(x.plan->train->size()) + " training rows";
  BOOST_TEST(held < x.plan->train->size());
  BOOST_TEST(f.log.back().find(holding) != std::string::npos, f.log.back());
}

// A part that does not fit is refused before anything is spawned, naming
// the file, the node and the reason; the host serves on.
BOOST_AUTO_TEST_CASE(a_host_refuses_a_part_that_does_not_fit) {
  const auto& x = take_quickstart_checkpoint();
  host_fixture f;
  const auto parts = atrain::checkpoint_parts(*x.ck, {0, 1, 0, 1, 0, 1, 0, 1}, 2);
  caf::scoped_actor self{f.sys};
  auto refusal = [&](atrain::spawn_request r) {
    std::string why;
    self->request(f.host, std::chrono::seconds{60}, atrain::spawn_atom::value, std::move(r))
      .receive([&](atrain::spawn_reply&) { why = "(spawned)"; },
               [&](caf::error& e) { why = atrain::error_text(e); });
    return why;
  };
  // Host 1's part sent for host 0's nodes: node 0 has no state in it.
  auto why = refusal(f.request(x, {0, 2}, &parts[1], self));
  BOOST_TEST(why.find("cannot resume: " + x.file + ": node 0: the model has 0 parameters") !=
               std::string::npos,
             why);
  auto r = f.request(x, {1}, &parts[1], self);
  r.checkpoint = "\x01\x02 not a checkpoint";
  why = refusal(r);
  BOOST_TEST(why.find("this host's part cannot be parsed") != std::string::npos, why);
  auto other = parts[1];
  other.mutable_nodes(3)->mutable_params()->RemoveLast();
  why = refusal(f.request(x, {1, 3}, &other, self));
  const auto dim = x.plan->dim();
  BOOST_TEST(why.find("node 3: the model has " + std::to_string(dim - 1) +
                      " parameters, the spec's model " + std::to_string(dim)) != std::string::npos,
             why);
  // The host still serves a good part.
  why = refusal(f.request(x, {1, 3}, &parts[1], self));
  BOOST_TEST(why == "(spawned)");
}

BOOST_AUTO_TEST_CASE(a_checkpoint_resumes_only_with_its_deploy) {
  const auto& x = take_quickstart_checkpoint();
  atrain::deploy_options two;
  two.hosts = {"127.0.0.1:7001", "127.0.0.1:7002"};
  // Taken in one process: resumed in one process only.
  BOOST_TEST(static_cast<bool>(atrain::check_resume_deploy(*x.ck, x.file, {}, 8)));
  auto e = atrain::check_resume_deploy(*x.ck, x.file, two, 8);
  BOOST_REQUIRE(!e);
  BOOST_TEST(atrain::error_text(e.error()).find("was taken in one process; this run would run "
                                                "across 2 hosts") != std::string::npos,
             atrain::error_text(e.error()));
  // Taken across two hosts (round-robin): other addresses are fine; a third
  // host or another placement is not.
  atrain::deployment d;
  d.names = {"10.0.0.1:7420", "10.0.0.2:7420"};
  d.host_of = atrain::placement_of(two, 8);
  auto multi = *x.ck;
  atrain::record_deploy(d, *multi.mutable_spec()->mutable_deploy());
  BOOST_TEST(static_cast<bool>(atrain::check_resume_deploy(multi, x.file, two, 8)));
  auto three = two;
  three.hosts.push_back("127.0.0.1:7003");
  e = atrain::check_resume_deploy(multi, x.file, three, 8);
  BOOST_REQUIRE(!e);
  BOOST_TEST(atrain::error_text(e.error()).find("was taken across 2 hosts; this run would run "
                                                "across 3 hosts") != std::string::npos,
             atrain::error_text(e.error()));
  auto moved = two;
  moved.placement = {0, 1, 0, 1, 0, 1, 1, 1};
  e = atrain::check_resume_deploy(multi, x.file, moved, 8);
  BOOST_REQUIRE(!e);
  BOOST_TEST(atrain::error_text(e.error()).find("node 6 ran on host 0 when it was taken; this run "
                                                "places it on host 1") != std::string::npos,
             atrain::error_text(e.error()));
  // load_checkpoint ignores the deploy block (addresses may change).
  BOOST_TEST(atrain::check_checkpoint_nodes(multi, *x.plan, {0, 1}).empty());
}

BOOST_AUTO_TEST_SUITE_END()
