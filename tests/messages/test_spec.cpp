// Experiment spec: parsing, line map, overrides, validation (table of bad specs), robustness.
// The algorithms' own spec blocks are the engine's to check: tests/actors/check_spec_test.cpp.
#include <boost/test/unit_test.hpp>

#include "atrain/messages/spec.hpp"
#include "bad_specs.hpp"
#include "spec_fixture.hpp"

#include <google/protobuf/util/message_differencer.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

using namespace spec_fixture;

namespace {

// Runs load + validate (no engine facts); returns the spec_error message ("" if none).
std::string failure(const std::string& text, const std::vector<std::string>& overrides = {}) {
  return refusal([](const atrain::loaded_spec& s) { atrain::validate(s); }, text, overrides);
}

}  // namespace

BOOST_AUTO_TEST_SUITE(spec)

BOOST_AUTO_TEST_CASE(base_spec_is_valid) {
  const auto s = parse(base_spec);
  BOOST_CHECK_NO_THROW(atrain::validate(s));
  BOOST_TEST(s.spec.nodes() == 4u);
  BOOST_TEST(s.spec.algorithm().rfast().step_size() == 0.05);
  BOOST_TEST(s.spec.topology().r_edges_size() == 3);
  BOOST_TEST(s.file == label);
  BOOST_TEST(s.base_dir == tmp().path.string());
}

BOOST_AUTO_TEST_CASE(bad_specs_are_refused_with_path_line_and_reason) {
  const auto cases = bad_spec_cases();
  BOOST_TEST(cases.size() >= 30u);
  for (const auto& c : cases)
    expect_refused(c, [](const atrain::loaded_spec& s) { atrain::validate(s); });
}

BOOST_AUTO_TEST_CASE(empty_spec_lists_the_required_choices) {
  const std::string msg = failure("");
  for (const char* expected :
       {"spec.textproto: nodes: must be >= 1", "spec.textproto: clock: must be VIRTUAL or REAL",
        "spec.textproto: dataset.format:", "spec.textproto: dataset.train_path: must be set",
        "spec.textproto: model: ", "spec.textproto: algorithm: ", "spec.textproto: stop: ",
        "spec.textproto: eval.period_seconds:", "spec.textproto: cost.tau_seconds:"}) {
    BOOST_TEST(msg.find(expected) != std::string::npos, expected << " in\n" << msg);
  }
}

BOOST_AUTO_TEST_CASE(multiple_bad_overrides_are_all_reported) {
  const std::string msg = failure(base_spec, {"nodes=x", "clock=SLOW", "link.loss=0.5"});
  BOOST_TEST(msg.find("--set nodes=x: not an unsigned integer") != std::string::npos, msg);
  BOOST_TEST(msg.find("--set clock=SLOW: no value 'SLOW'") != std::string::npos, msg);
  BOOST_TEST(split_lines(msg).size() == 2u, msg);
}

// The engine says centralized uses no topology (check_spec_test.cpp): its
// topology block, here incomplete, is then not checked.
BOOST_AUTO_TEST_CASE(centralized_ignores_topology) {
  const std::string text = edit(base_spec, {{rfast_block, "centralized {\n    step_size: 0.1\n  }"},
                                            {"  builder: EXPLICIT\n", ""}});
  atrain::spec_facts no_topology;
  no_topology.uses_topology = false;
  BOOST_CHECK_NO_THROW(atrain::validate(parse(text), no_topology));
  BOOST_CHECK_THROW(atrain::validate(parse(text)), spec_error);
}

BOOST_AUTO_TEST_CASE(other_valid_variants) {
  // Each edit set turns the base spec into another valid spec.
  const std::vector<std::vector<std::pair<std::string, std::string>>> variants = {
    {{"builder: EXPLICIT", "builder: TORUS\n  rows: 2\n  cols: 2"}},
    {{"builder: EXPLICIT", "builder: TREE_PAIR\n  arity: 3\n  root: 3"}},
    {{"builder: EXPLICIT", "builder: RANDOM_REGULAR\n  degree: 3"}},
    {{"builder: EXPLICIT", "builder: RING"}},
    {{"builder: EXPLICIT", "builder: STAR root: 0"}},
    {{"tau_seconds: 0.01", "tau_per_node: [0.01, 0.02, 0.03, 0.04]"}},
    {{"time_seconds: 10", "gradients: 1000"}},
    {{"policy: IID", "policy: LABEL_SKEW\n  dirichlet_alpha: 0.5"}},
    {{"policy: IID", "policy: LABEL_SKEW_UNEQUAL\n  dirichlet_alpha: 0.5"}},
    {{"policy: IID", "policy: PATHOLOGICAL\n  classes_per_node: 2"}},
    {{"policy: IID", "policy: FEATURE_SKEW\n  clusters: 3"}},
    {{"policy: IID", "policy: FEATURE_SKEW"}},
    {{"format: LIBSVM", "format: IDX"},
     {"train_path: \"tiny.libsvm\"",
      "train_path: \"images.idx\" train_labels_path: \"labels.idx\""},
     {"test_path: \"tiny.libsvm\"", "test_path: \"images.idx\" test_labels_path: \"labels.idx\""}},
    {{"logistic_regression {\n    l2: 0.0001\n  }",
      "mlp {\n    hidden: [16, 8]\n    l2: 0.001\n  }"}},
    {{"    variant: PHI\n", "    variant: PLAIN\n"}, {"    phi_min: 0.05\n", ""}},
    {{"nodes: 4", "nodes: 1"},
     {c_edges_lines, ""},
     {"  r_edges { from: 0 to: 1 }\n  r_edges { from: 1 to: 2 }\n  r_edges { from: 2 to: 3 }\n",
      ""},
     {"slowdown { node: 2 factor: 3 }", ""}},
    {{"link {", "link {\n  loss: 1\n"}, {"  loss: 0.01\n", ""}},
    // A multi-host run may checkpoint (it used to be refused).
    {{"clock: VIRTUAL", "clock: REAL"},
     {"out_dir: \"out\"",
      "out_dir: \"out\"\ndeploy { hosts: [\"127.0.0.1:7420\", "
      "\"127.0.0.1:7421\"] }\ncheckpoint { at_seconds: [1] file: \"run.ckpt\" }"}},
  };
  for (std::size_t i = 0; i < variants.size(); ++i) {
    BOOST_TEST_CONTEXT("variant " << i) {
      const std::string msg = failure(edit(base_spec, variants[i]));
      BOOST_TEST(msg.empty(), msg);
    }
  }
}

// The choices are the oneof's cases, every one of them.
BOOST_AUTO_TEST_CASE(unset_algorithm_lists_every_choice) {
  const std::string msg = failure(edit(base_spec, {{rfast_block, ""}}));
  const auto* kind = atrain::proto::AlgorithmSpec::descriptor()->FindOneofByName("kind");
  for (int i = 0; i < kind->field_count(); ++i)
    BOOST_TEST(msg.find(kind->field(i)->name()) != std::string::npos, kind->field(i)->name());
  BOOST_TEST(msg.find("choose an algorithm: rfast, centralized, ") != std::string::npos, msg);
}

// What depends on the algorithm comes as facts from the engine (check_spec,
// tests/actors/check_spec_test.cpp gives each algorithm's); given here.
BOOST_AUTO_TEST_CASE(facts_refuse_what_the_engine_says) {
  const auto s = parse(base_spec, {"link.loss=1", "checkpoint={at_seconds: [1] file: \"c\"}",
                                   "faults.crash=[{node: 2 whole_node: true "
                                   "restart_after_seconds: 1}]"});
  BOOST_CHECK_NO_THROW(atrain::validate(s));  // no fact refuses anything
  atrain::spec_facts f;
  f.lossless_links = true;
  f.whole_restart_refusal = [](std::uint32_t k) {
    return k == 2 ? std::string{"node 2 holds a hub"} : std::string{};
  };
  f.whole_restart_unsaved = "epochs are not saved";
  try {
    atrain::validate(s, f);
    BOOST_FAIL("the facts refused nothing");
  } catch (const spec_error& e) {
    const std::string msg = e.what();
    BOOST_TEST(msg.find("link.loss: must be < 1 for acknowledged links") != std::string::npos, msg);
    BOOST_TEST(msg.find("faults.crash[0].restart_after_seconds: a whole node cannot be "
                        "restarted: node 2 holds a hub") != std::string::npos,
               msg);
    BOOST_TEST(msg.find("faults.crash[0].whole_node: epochs are not saved") != std::string::npos,
               msg);
  }
  // Without a topology the topology block is not checked.
  const auto t = parse(base_spec, {"topology.builder=TREE_PAIR", "topology.arity=0"});
  BOOST_CHECK_THROW(atrain::validate(t), spec_error);
  atrain::spec_facts no_topology;
  no_topology.uses_topology = false;
  BOOST_CHECK_NO_THROW(atrain::validate(t, no_topology));
}

BOOST_AUTO_TEST_CASE(dasgd_restarts_with_batching_and_coalescing) {
  // Refused before the hand-over knew ranges; a restart is now allowed for
  // every DASGD variant, as for centralized SGD (from the last checkpoint).
  const std::string msg =
    failure(base_spec, {"algorithm.dasgd={step_size: 0.1 broadcast_every: 2 coalesce: true}",
                        "faults.crash=[{node: 1 restart_after_seconds: 1}]"});
  BOOST_TEST(msg.empty(), msg);
  const std::string central =
    failure(base_spec, {"algorithm.centralized={step_size: 0.1}",
                        "faults.crash=[{node: 0 restart_after_seconds: 1}]"});
  BOOST_TEST(central.empty(), central);
}

BOOST_AUTO_TEST_CASE(whole_node_restart_is_accepted_where_the_node_restarts) {
  // R-FAST respawns worker and buffer; elsewhere the worker is all a node
  // holds, but for the server's or the aggregator's node (refused above).
  const std::string whole = "faults.crash=[{node: 1 whole_node: true restart_after_seconds: 1}]";
  const std::vector<std::vector<std::string>> accepted = {
    {whole},
    {whole, "algorithm.dpsgd={step_size: 0.1}"},
    {whole, "algorithm.sgp={step_size: 0.1}"},
    {whole, "algorithm.async_ps={step_size: 1 server: 2}"},
    {whole, "algorithm.loscar={step_size: 0.3 round_seconds: 0.01 sparsity: 0.1 aggregator: 2}"},
  };
  for (const auto& o : accepted) {
    BOOST_TEST_CONTEXT(o.back()) {
      const std::string msg = failure(base_spec, o);
      BOOST_TEST(msg.empty(), msg);
    }
  }
}

BOOST_AUTO_TEST_CASE(model_size_is_checked_with_the_data_figures) {
  const auto s = parse(edit(
    base_spec, {{"  logistic_regression {\n    l2: 0.0001\n  }\n", "  mlp { hidden: [256] }\n"}}));
  atrain::validate(s);                   // dimension 3: small
  atrain::check_model_size(s, 123, 10);  // a9a-like: small
  std::string msg;
  try {
    atrain::check_model_size(s, 123, 1u << 20);  // a label of 1048576
  } catch (const spec_error& e) {
    msg = e.what();
  }
  BOOST_TEST(msg == label + ":" + std::to_string(line_of(base_spec, "model {")) +
                      ": model: the model has 269515776 parameters (layers 123 x 256 x 1048576); "
                      "the limit is 134217728 (512 MiB of floats)");
}

// Many separate occurrences of a repeated field (once quadratic: every token was
// rescanned per occurrence; bench: docs/PERFORMANCE.md): each element keeps its line.
BOOST_AUTO_TEST_CASE(many_separate_occurrences_keep_their_lines) {
  constexpr int n = 20000;
  std::string text = edit(base_spec, {{"  tau_seconds: 0.01\n", ""}, {"nodes: 4", "nodes: 4"}});
  const auto cost = text.find("cost {") + std::string("cost {").size();
  std::string lines = "\n  tau_per_node: [0.5, 0.25]";
  for (int i = 0; i < n; ++i)
    lines += "\n  tau_per_node: " + std::to_string(i + 1);
  text.insert(cost, lines);
  const auto s = parse(text);
  BOOST_REQUIRE_EQUAL(s.spec.cost().tau_per_node_size(), n + 2);
  const int first = line_of(text, "tau_per_node: [0.5");
  BOOST_TEST(s.lines.at("cost.tau_per_node[0]") == first);
  BOOST_TEST(s.lines.at("cost.tau_per_node[1]") == first);
  BOOST_TEST(s.lines.at("cost.tau_per_node[2]") == first + 1);
  BOOST_TEST(s.lines.at("cost.tau_per_node[" + std::to_string(n + 1) + "]") == first + n);
  BOOST_TEST(s.spec.cost().tau_per_node(n + 1) == n);
}

BOOST_AUTO_TEST_CASE(lines_map_has_expected_entries) {
  const std::string text = edit(base_spec, {{"logistic_regression {\n    l2: 0.0001\n  }",
                                             "mlp {\n    hidden: [16,\n      8]\n  }"}});
  const auto s = parse(text);
  auto expect = [&](const std::string& path, const std::string& snippet) {
    BOOST_TEST_CONTEXT(path) {
      BOOST_TEST_REQUIRE(s.lines.count(path) == 1u);
      BOOST_TEST(s.lines.at(path) == line_of(text, snippet));
    }
  };
  expect("name", "name: \"base\"");
  expect("nodes", "nodes: 4");
  expect("dataset", "dataset {");
  expect("dataset.train_path", "train_path");
  expect("algorithm", "algorithm {");
  expect("algorithm.rfast", "rfast {");
  expect("algorithm.rfast.step_size", "step_size: 0.05");
  expect("algorithm.rfast.decay", "decay: 0.001");
  expect("topology.r_edges", "r_edges { from: 0 to: 1 }");
  expect("topology.r_edges[0]", "r_edges { from: 0 to: 1 }");
  expect("topology.r_edges[2]", "r_edges { from: 2 to: 3 }");
  expect("topology.r_edges[2].from", "r_edges { from: 2 to: 3 }");
  expect("topology.c_edges[1].to", "c_edges { from: 2 to: 1 }");
  expect("cost.slowdown[0].factor", "factor: 3");
  expect("model.mlp.hidden[0]", "hidden: [16,");
  expect("model.mlp.hidden[1]", "      8]");
  expect("stop.stop_at_target", "stop_at_target: true");
  BOOST_TEST(s.lines.count("seedx") == 0u);
  BOOST_TEST(s.lines.count("dataset.train_labels_path") == 0u);

  // where(): the field's line, the nearest parent's, or no line at all.
  BOOST_TEST(s.where("algorithm.rfast.step_size") ==
             label + ":" + std::to_string(line_of(text, "step_size: 0.05")) +
               ": algorithm.rfast.step_size");
  BOOST_TEST(s.where("dataset.train_labels_path") == label + ":" +
                                                       std::to_string(line_of(text, "dataset {")) +
                                                       ": dataset.train_labels_path");
  BOOST_TEST(s.where("shard.dirichlet_alpha") ==
             label + ":" + std::to_string(line_of(text, "shard {")) + ": shard.dirichlet_alpha");
  BOOST_TEST(s.where("progress") == label + ": progress");
}

BOOST_AUTO_TEST_CASE(overrides_are_applied) {
  auto s = parse(base_spec, {"nodes=8", "clock=real", "seed=42", "name=\"renamed\"",
                             "algorithm.rfast.step_size=1e-3", "model.mlp.hidden=[64, 32]",
                             "topology.r_edges[1].to=3", "cost.tau_per_node=[]",
                             "stop.stop_at_target=false", "link={loss: 0.25 latency_seconds: 0.5}",
                             "progress=true", "dataset.max_train_samples=100"});
  const auto& sp = s.spec;
  BOOST_TEST(sp.nodes() == 8u);
  BOOST_TEST(sp.clock() == atrain::proto::REAL);
  BOOST_TEST(sp.seed() == 42u);
  BOOST_TEST(sp.name() == "renamed");
  BOOST_TEST(sp.algorithm().rfast().step_size() == 1e-3);
  BOOST_TEST(sp.algorithm().rfast().variant() == atrain::proto::RFast::PHI);  // other fields kept
  BOOST_TEST(sp.model().has_mlp());  // selecting the oneof case replaced logistic_regression
  BOOST_TEST(sp.model().mlp().hidden_size() == 2);
  BOOST_TEST(sp.model().mlp().hidden(1) == 32u);
  BOOST_TEST(sp.model().batch_size() == 8u);
  BOOST_TEST(sp.topology().r_edges(1).to() == 3u);
  BOOST_TEST(sp.topology().r_edges(1).from() == 1u);
  BOOST_TEST(!sp.stop().stop_at_target());
  BOOST_TEST(sp.link().loss() == 0.25);
  BOOST_TEST(sp.link().duplicate() == 0.0);  // a message override replaces the whole message
  BOOST_TEST(sp.has_progress());
  BOOST_TEST(sp.dataset().max_train_samples() == 100u);
  BOOST_TEST(s.overridden.count("topology.r_edges[1].to") == 1u);
  BOOST_TEST(s.overridden.count("model.mlp.hidden") == 1u);
  BOOST_TEST(s.where("nodes") == "--set nodes");
  BOOST_TEST(s.where("link.loss") == "--set link.loss");
  BOOST_TEST(s.where("model.mlp.hidden[1]") == "--set model.mlp.hidden[1]");
  BOOST_TEST(s.where("stop") == "--set stop");
  BOOST_TEST(s.where("seed").rfind("--set", 0) == 0u);
  BOOST_TEST(s.where("eval.period_seconds").rfind(label + ":", 0) == 0u);

  // nodes=8 breaks nothing in the explicit graph (endpoints < 8), but c_edges still hold.
  BOOST_CHECK_NO_THROW(atrain::validate(s));

  // Selecting the other algorithm case through one of its fields.
  atrain::apply_override(s, "algorithm.centralized.step_size=0.2");
  BOOST_TEST(s.spec.algorithm().has_centralized());
  BOOST_TEST(!s.spec.algorithm().has_rfast());
  BOOST_TEST(s.spec.algorithm().centralized().step_size() == 0.2);
  BOOST_CHECK_NO_THROW(atrain::validate(s));

  // Whole repeated message lists.
  atrain::apply_override(s, "topology.r_edges=[{from: 0 to: 1}, {from: 1 to: 0}]");
  BOOST_TEST(s.spec.topology().r_edges_size() == 2);
  atrain::apply_override(s, "topology.r_edges[1]={from: 5 to: 6}");
  BOOST_TEST(s.spec.topology().r_edges(1).to() == 6u);

  // A failed override leaves the spec untouched.
  const std::string before = s.spec.SerializeAsString();
  BOOST_CHECK_THROW(atrain::apply_override(s, "model.mlp.hidden=[1,2,x]"), spec_error);
  BOOST_TEST(s.spec.SerializeAsString() == before);

  // Special values parse and are then refused by validate().
  atrain::apply_override(s, "link.loss=nan");
  try {
    atrain::validate(s);
    BOOST_FAIL("nan loss accepted");
  } catch (const spec_error& e) {
    BOOST_TEST(std::string(e.what()).find("--set link.loss: must be a finite number (got nan)") !=
                 std::string::npos,
               e.what());
  }
}

BOOST_AUTO_TEST_CASE(load_spec_from_file_resolves_relative_paths) {
  const fs::path sub = tmp().path / "specs";
  fs::create_directories(sub);
  const std::string text = edit(base_spec, {{"\"tiny.libsvm\"", "\"../tiny.libsvm\""},
                                            {"\"tiny.libsvm\"", "\"../tiny.libsvm\""}});
  std::ofstream(sub / "run.textproto") << text;
  const std::string path = (sub / "run.textproto").string();
  const auto s = atrain::load_spec(path, {"nodes=4"});
  BOOST_TEST(s.file == path);
  BOOST_TEST(s.base_dir == sub.string());
  BOOST_TEST(atrain::resolve_path(s, "../tiny.libsvm") == (tmp().path / "tiny.libsvm").string());
  BOOST_TEST(atrain::resolve_path(s, "/abs/x") == "/abs/x");
  BOOST_TEST(atrain::resolve_path(s, "") == "");
  BOOST_CHECK_NO_THROW(atrain::validate(s));

  // Errors from a loaded file name that file.
  std::ofstream(sub / "bad.textproto") << edit(text, {{"loss: 0.01", "loss: 1.5"}});
  try {
    atrain::validate(atrain::load_spec((sub / "bad.textproto").string()));
    BOOST_FAIL("loss 1.5 accepted");
  } catch (const spec_error& e) {
    const std::string expected = (sub / "bad.textproto").string() + ":" +
                                 std::to_string(line_of(text, "loss: 0.01")) + ": link.loss: ";
    BOOST_TEST(std::string(e.what()).find(expected) != std::string::npos, e.what());
  }
}

BOOST_AUTO_TEST_CASE(unreadable_spec_files) {
  try {
    (void)atrain::load_spec((tmp().path / "does-not-exist.textproto").string());
    BOOST_FAIL("missing spec file accepted");
  } catch (const spec_error& e) {
    BOOST_TEST(std::string(e.what()).find("does-not-exist.textproto: cannot open spec file") !=
                 std::string::npos,
               e.what());
  }
  BOOST_CHECK_THROW((void)atrain::load_spec(tmp().path.string()), spec_error);  // a directory
}

BOOST_AUTO_TEST_CASE(to_text_round_trips) {
  const auto s = parse(base_spec);
  const std::string text = atrain::to_text(s.spec);
  const auto again = parse(text);
  BOOST_TEST(google::protobuf::util::MessageDifferencer::Equals(s.spec, again.spec), text);
  BOOST_CHECK_NO_THROW(atrain::validate(again));
}

BOOST_AUTO_TEST_CASE(never_crashes_on_mangled_input) {
  std::mt19937_64 rng(12345);
  const std::string alphabet = "{}[]:;,.\"'#-+eE0123456789 \n\tnaifxyz_\\\x01\xff\x80";
  int accepted = 0, rejected = 0;
  // A rejection must say why (a non-empty message); the mangler must produce
  // both outcomes, or it exercised only one path.
  auto refused = [&](const spec_error& e) {
    ++rejected;
    BOOST_TEST(std::string(e.what()).size() > 0u);
  };
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = base_spec;
    const int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits; ++k) {
      const std::size_t pos = rng() % (text.size() + 1);
      switch (rng() % 3) {
        case 0:
          if (pos < text.size())
            text.erase(pos, 1 + rng() % 8);
          break;
        case 1:
          text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
          break;
        default:
          if (pos < text.size())
            text[pos] = static_cast<char>(rng() % 256);
          break;
      }
    }
    try {
      const auto s = parse(text);
      atrain::validate(s);
      ++accepted;
    } catch (const spec_error& e) {
      refused(e);
    }
  }
  BOOST_TEST(accepted > 0);
  BOOST_TEST(rejected > 0);
  // Pure random bytes.
  for (int iter = 0; iter < 300; ++iter) {
    std::string text(rng() % 512, '\0');
    for (auto& ch : text)
      ch = static_cast<char>(rng() % 256);
    try {
      atrain::validate(parse(text));
    } catch (const spec_error& e) {
      refused(e);
    }
  }
  // Random overrides on real paths: each typed path refuses at least "[" and "{".
  const std::vector<std::string> paths = {"nodes",
                                          "clock",
                                          "seed",
                                          "algorithm.rfast.step_size",
                                          "model.mlp.hidden",
                                          "topology.r_edges[0].from",
                                          "topology",
                                          "cost.tau_per_node",
                                          "link",
                                          "stop.gradients",
                                          "name",
                                          "progress"};
  const std::vector<std::string> values = {"",     "-1",   "1e999", "nan",
                                           "-inf", "[",    "[]",    "[1,,2]",
                                           "{",    "{}",   "\"",    "18446744073709551616",
                                           "true", "REAL", "0x10"};
  for (const auto& p : paths) {
    int refused_here = 0;
    for (const auto& v : values) {
      try {
        atrain::validate(parse(base_spec, {p + "=" + v}));
      } catch (const spec_error& e) {
        refused(e);
        ++refused_here;
      }
    }
    if (p == "name")  // free text: every one of these values is a valid name
      BOOST_TEST(refused_here == 0, p << " refused " << refused_here);
    else
      BOOST_TEST(refused_here >= 2, p << " refused " << refused_here);
  }
}

BOOST_AUTO_TEST_SUITE_END()
