// Experiment spec: loading (protobuf text format), command-line overrides, validation,
// and text / JSON output of specs and run reports.
//
// Flow used by every caller (atrain run / check, tests, embedding code):
//
//   atrain::loaded_spec s = atrain::load_spec(path, overrides);  // parse + apply --set
//   atrain::validate(s);                                         // semantic checks
//
// load_spec / parse_spec only parse and apply overrides; they do NOT validate, so a
// caller must call validate() before starting any actor. The engine's check_spec
// (atrain/actors/run_plan.hpp) is validate() with the algorithm's facts, its own
// spec block's checks among them; validate() alone does not check that block.
//
// Errors: every function here reports a bad spec by throwing atrain::spec_error whose
// what() is the full, human-readable message, one problem per line:
//   parse errors       "FILE:LINE:COL: reason"            (protobuf's own message text)
//   validation errors  "FILE:LINE: field.path: reason"    (LINE of the field, or of its
//                      nearest parent present in the file; "FILE: field.path: reason"
//                      when neither is present; "--set field.path: reason" when the
//                      value came from an override)
//   override errors    "--set field.path: reason" / "--set field.path=value: reason"
// Line and column numbers are 1-based.
//
// Exit-code convention: command-line callers print what() to stderr and exit with
// status 2 when a spec_error escapes (bad spec or bad --set); status 1 is reserved for
// run-time failures after the spec was accepted.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "atrain.pb.h"

namespace atrain {

class spec_error : public std::runtime_error {
public:
  using runtime_error::runtime_error;
};

struct loaded_spec {
  proto::ExperimentSpec spec;
  std::string file;      // path as given (or the label passed to parse_spec)
  std::string base_dir;  // directory of the spec file; relative dataset paths resolve here
  // Field path -> 1-based line where the field appears in the file. Paths use proto field
  // names joined by '.', repeated elements as "[i]": "algorithm.rfast.step_size",
  // "topology.r_edges[2].from". A repeated field's own path maps to its first element.
  std::map<std::string, int> lines;
  // Field paths assigned by --set overrides, as normalised by apply_override
  // ("model.mlp.hidden", "topology.r_edges[1].to").
  std::set<std::string> overridden;

  // "FILE:LINE: field_path" with the line of the field or of its nearest parent present
  // in the file; "FILE: field_path" when none is present; "--set field_path" when the
  // field, one of its parents or one of its children was assigned by an override.
  [[nodiscard]] std::string where(const std::string& field_path) const;
};

// Reads and parses the spec file at `path`, then applies `overrides` in order
// ("field.path=value" each, as for apply_override). base_dir = directory of `path`.
// Throws spec_error (unreadable file, syntax error, unknown field, bad override...).
[[nodiscard]] loaded_spec load_spec(const std::string& path,
                                    const std::vector<std::string>& overrides = {});

// Same as load_spec on text already in memory; file_label is used in messages.
[[nodiscard]] loaded_spec parse_spec(const std::string& text, const std::string& file_label,
                                     const std::string& base_dir,
                                     const std::vector<std::string>& overrides = {});

// Applies one override "field.path=value" to s.spec and records the path in s.overridden.
//  - path: proto field names separated by '.', repeated elements addressed as name[i]
//    (i < current size); a field inside a oneof selects that case
//    ("algorithm.rfast.step_size=0.1" switches the algorithm to rfast);
//  - scalar values: double/float (also nan, inf), signed / unsigned integers, bool
//    (true/false/1/0/yes/no/on/off), string (optionally quoted), enum by name
//    (case-insensitive);
//  - repeated fields take the whole list, which replaces the current one:
//    "model.mlp.hidden=[64,32]", "cost.tau_per_node=[]";
//  - message fields take protobuf text format in braces:
//    "link={loss: 0.1}", "topology.r_edges=[{from: 0 to: 1}, {from: 1 to: 0}]".
// Throws spec_error: "--set a.b.stepsize: no field 'stepsize' in atrain.proto.B",
// "--set nodes=-3: not an unsigned integer", "--set nodes: expected field.path=value".
void apply_override(loaded_spec& s, const std::string& assignment);

class spec_checker;  // atrain/messages/spec_checker.hpp

// What the validator cannot read from a spec: facts about its algorithm that
// only the engine holds (each algorithm's descriptor). The engine's check_spec
// (atrain/actors/run_plan.hpp) fills them in; the defaults refuse nothing that
// depends on the algorithm and check the topology block.
struct spec_facts {
  // Checks the algorithm's own block (algorithm.NAME.*), reporting through the
  // checker; empty: the block is not checked (only that an algorithm is chosen).
  std::function<void(spec_checker&)> check_block;
  bool uses_topology = true;    // the topology block is checked
  bool lossless_links = false;  // acknowledged links: link.loss = 1 never delivers
  bool coded_links = false;     // its streams may be coded (link.codec)
  // Why node k cannot be restarted whole (a hub of the run lives on it); empty: it can.
  std::function<std::string(std::uint32_t k)> whole_restart_refusal;
  // Why the algorithm takes no nodes joining a running job (faults.join); empty: it does.
  std::string joins_refused;
  // Why a whole-node restart cannot be combined with checkpoints; empty: it can.
  std::string whole_restart_unsaved;
};

// Semantic checks (ranges, required choices, dataset files exist, topology parameters
// consistent with `nodes`). Collects every problem and throws one spec_error listing them
// all, one per line. Whether a topology has a common root is checked later by the engine.
void validate(const loaded_spec& s, const spec_facts& facts = {});

// What a spec may ask of the machine (docs/RELIABILITY.md, "Bounds"). validate()
// refuses a spec beyond any of them with the figure and the limit; every product is
// computed with overflow checks. The datasets' own bounds (file sizes, classes, dense
// features) are in atrain/kernels/dataset.hpp.
namespace limits {
inline constexpr std::uint32_t max_nodes = 100000;
inline constexpr std::uint32_t max_dimension = 10000000;  // dataset.dimension
// Algorithms on a topology keep R and C as dense nodes x nodes matrices of doubles.
inline constexpr std::uint32_t max_topology_nodes = 4096;           // 2 x 128 MiB
inline constexpr std::uint64_t max_edges = std::uint64_t{1} << 22;  // per graph: nodes x neighbours
inline constexpr std::uint64_t max_layer_width = std::uint64_t{1} << 16;  // model.mlp.hidden[i]
inline constexpr std::uint64_t max_params = std::uint64_t{1} << 27;       // one model copy
inline constexpr std::uint32_t max_cnn_layers = 256;                      // model.cnn.layer
inline constexpr std::uint32_t max_kernel_side = 1024;     // conv and pool kernel, stride, pad
inline constexpr std::uint32_t max_image_side = 1U << 16;  // model.cnn channels, height, width
// shard.clusters of FEATURE_SKEW (k-means: clusters x dimension centers, k-means++ passes).
inline constexpr std::uint32_t max_clusters = 4096;
// batch_size x (dimension + every layer's width): one node's batch and activations.
inline constexpr std::uint64_t max_batch_values = std::uint64_t{1} << 27;
// nodes x (parameters + batch values): every node's model and batch together.
inline constexpr std::uint64_t max_run_values = std::uint64_t{1} << 29;
// Periods and per-gradient times (events per second of the run's clock).
inline constexpr double min_period_seconds = 1e-6;
// stop.time_seconds / eval.period_seconds: rows of metrics.csv.
inline constexpr double max_evaluations = 1e6;
// eval.node_models: each is one more pass over the test set per evaluation.
inline constexpr std::uint32_t max_node_models = 64;
inline constexpr std::uint32_t default_node_models = 8;
// stop.sustained_evaluations: the window of the sustained time to target.
inline constexpr std::uint32_t max_sustained_evaluations = 10000;
inline constexpr std::uint32_t default_sustained_evaluations = 20;
// faults.straggle: factor and add_seconds (a wait is held in int64 nanoseconds).
inline constexpr double max_straggle_factor = 1e6;
inline constexpr double max_straggle_add_seconds = 1e6;
inline constexpr std::uint32_t max_link_window = 1U << 16;  // link.window (packets per route)
inline constexpr std::uint32_t max_codec_block = 1U << 16;  // link.codec.block (values per scale)
inline constexpr std::uint32_t max_codec_resync = 1000000;  // link.codec.resync_every
}  // namespace limits

// The model's share of the bounds above once the data's dimension and class count are
// known (the validator checks what the spec states; the engine calls this after loading
// the data, before building the model). Throws spec_error naming the field, the figure
// and the limit.
void check_model_size(const loaded_spec& s, std::uint64_t dim, std::uint64_t classes);

// The same bounds for a model whose figures the engine computed (a CNN: its parameters
// and activations per row); `shape` describes it in the message ("cnn: LENET5 on 1x28x28").
void check_model_figures(const loaded_spec& s, std::uint64_t params, std::uint64_t values_per_row,
                         const std::string& shape);

// `p` resolved against s.base_dir (absolute paths and "" are returned unchanged).
[[nodiscard]] std::string resolve_path(const loaded_spec& s, const std::string& p);

// "HOST:PORT" ("[::1]:7000" for IPv6) split into host and port (0..65535);
// nullopt with `why` set when malformed.
[[nodiscard]] std::optional<std::pair<std::string, std::uint16_t>>
parse_host_port(const std::string& s, std::string& why);

// Protobuf text format of a spec (parses back to the same message).
[[nodiscard]] std::string to_text(const proto::ExperimentSpec& spec);

// JSON of a run report with proto field names (json.hpp's mapping): zero-valued scalars
// are printed, unset optional fields (time_to_target) are absent, every integer (64-bit
// ones too) is a JSON number. Pretty-printed, ends with a newline.
[[nodiscard]] std::string report_to_json(const proto::RunReport& report);

}  // namespace atrain
