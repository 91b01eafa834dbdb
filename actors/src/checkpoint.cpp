/// Checkpoints: the supervisor's barrier, the file format, loading and
/// checking a checkpoint, and the compute unit's part (see checkpoint.hpp).
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/run_log.hpp"
#include "atrain/messages/json.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include <google/protobuf/util/message_differencer.h>

#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/compute.hpp"
#include "atrain/actors/deploy.hpp"

namespace atrain {

// ---------------------------------------------------------------- small parts

double barrier_hold::busy_for(caf::local_actor* self, bool idle) const {
  if (held && idle)
    return -1;
  const auto left = std::chrono::duration<double>(wake_due - self->clock().now()).count();
  return std::max(0.0, left);
}

void save_rng(const rng& gen, google::protobuf::RepeatedField<std::uint64_t>* out) {
  out->Clear();
  for (auto w : gen.state())
    out->Add(w);
}

rng load_rng(const google::protobuf::RepeatedField<std::uint64_t>& in) {
  std::array<std::uint64_t, 4> s{};
  for (int k = 0; k < 4 && k < in.size(); ++k)
    s[static_cast<std::size_t>(k)] = in.Get(k);
  rng gen;
  gen.set_state(s);
  return gen;
}

void save_staleness(const staleness_stats& s, proto::NodeState& out) {
  out.set_staleness_sum(s.sum);
  out.set_staleness_max(s.max);
  out.set_staleness_count(s.count);
}

void restore_staleness(staleness_stats& s, const proto::NodeState& in) {
  s.sum = in.staleness_sum();
  s.max = in.staleness_max();
  s.count = in.staleness_count();
}

caf::timespan delay_until(const run_context& ctx, caf::local_actor* self, double at_seconds) {
  return caf::timespan{std::max<std::int64_t>(0, to_timespan(at_seconds).count() - ctx.ns(self))};
}

void compute_unit::save(proto::ComputeState& out) const {
  out.set_gradients(gradients_);
  out.set_last_loss(last_loss_);
  out.set_refused(refused_);
  out.set_refused_since(refused_since_);
  out.set_busy_seconds(busy_seconds_);
  *out.mutable_fault_hits() = {fault_hits_.begin(), fault_hits_.end()};
  // Rows of the whole training set: a host holds only its shards (run_plan::sampler_rows).
  const auto order = ctx_->plan->whole_rows(node_, sampler_.indices());
  *out.mutable_sampler_order() = {order.begin(), order.end()};
  out.set_sampler_cursor(sampler_.cursor());
  save_rng(sampler_.generator(), out.mutable_sampler_rng());
  save_rng(gen_, out.mutable_jitter_rng());
}

void compute_unit::restore(const proto::ComputeState& in) {
  gradients_ = in.gradients();
  last_loss_ = in.last_loss();
  refused_ = in.refused();
  refused_since_ = in.refused_since();
  busy_seconds_ = in.busy_seconds();
  fault_hits_.assign(in.fault_hits().begin(), in.fault_hits().end());
  restore_sampling(in);
}

void compute_unit::restore_sampling(const proto::ComputeState& in) {
  sampler_.restore(
    ctx_->plan->train_rows_of(node_, {in.sampler_order().begin(), in.sampler_order().end()}),
    static_cast<std::size_t>(in.sampler_cursor()), load_rng(in.sampler_rng()));
  gen_ = load_rng(in.jitter_rng());
}

// ---------------------------------------------------------------- file format

namespace {

/// On disk: magic, payload length (8 bytes LE), payload, checksum (8 bytes LE).
/// Format 2: each node's state holds its algorithm's own part (NodeState).
constexpr char magic[8] = {'A', 'T', 'R', 'C', 'K', 'P', 'T', '2'};
constexpr char magic_v1[8] = {'A', 'T', 'R', 'C', 'K', 'P', 'T', '1'};

std::uint64_t checksum(const std::string& bytes) {
  std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a 64
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

void put_u64(std::string& out, std::uint64_t v) {
  for (int k = 0; k < 8; ++k)
    out.push_back(static_cast<char>((v >> (8 * k)) & 0xff));
}

std::uint64_t get_u64(const char* p) {
  std::uint64_t v = 0;
  for (int k = 7; k >= 0; --k)
    v = (v << 8) | static_cast<unsigned char>(p[k]);
  return v;
}

caf::error file_error(const std::string& file, const std::string& why) {
  return caf::make_error(caf::sec::invalid_argument, file + ": " + why);
}

/// The spec without the fields a resumed run may change. The deploy block
/// (hosts' addresses, credentials) may change too; the host count and the
/// placement are checked where the run connects (check_resume_deploy).
proto::ExperimentSpec comparable(proto::ExperimentSpec s) {
  s.clear_stop();
  s.clear_checkpoint();
  s.clear_out_dir();
  s.clear_progress();
  s.clear_deploy();
  return s;
}

bool is_permutation_of(const google::protobuf::RepeatedField<std::uint32_t>& order,
                       std::vector<std::uint32_t> shard) {
  std::vector<std::uint32_t> a(order.begin(), order.end());
  std::sort(a.begin(), a.end());
  std::sort(shard.begin(), shard.end());
  return a == shard;
}

/// Sizes of node i's saved state against the plan; empty when fine.
std::string check_node(const proto::NodeState& s, std::uint32_t i, const run_plan& plan) {
  const auto dim = plan.dim();
  const std::string at = "node " + std::to_string(i) + ": ";
  if (s.node() != i)
    return at + "entry " + std::to_string(i) + " holds node " + std::to_string(s.node());
  if (static_cast<std::size_t>(s.params_size()) != dim)
    return at + "the model has " + std::to_string(s.params_size()) +
           " parameters, the spec's model " + std::to_string(dim);
  const auto& c = s.compute();
  if (c.sampler_rng_size() != 4 || c.jitter_rng_size() != 4)
    return at + "generator state is not 4 words";
  if (!is_permutation_of(c.sampler_order(), plan.shard.at(i)))
    return at + "the sampler's order is not a permutation of the node's shard";
  if (c.sampler_cursor() > static_cast<std::uint64_t>(c.sampler_order_size()))
    return at + "the sampler's cursor is past its shard";
  const auto& algo = plan.algorithm();  // its own part of the state
  if (s.part_case() != proto::NodeState::PART_NOT_SET && s.part_case() != algo.node_part)
    return at + "holds another algorithm's state (part " + std::to_string(s.part_case()) +
           "), not " + plan.algorithm_name() + "'s";
  if (algo.check_node)
    if (auto why = algo.check_node(s, i, plan); !why.empty())
      return at + why;
  if (auto why = check_codec_state(s.codec(), dim); !why.empty())
    return at + why;
  if ((s.codec().sender_size() > 0 || s.codec().receiver_size() > 0) &&
      plan.link.codec.kind == codec::codec_kind::none)
    return at + "holds coded links' state, but the spec's link.codec is none";
  return {};
}

}  // namespace

std::string error_text(const caf::error& e) {
  const auto& m = e.context();
  if (m.size() == 1 && m.match_element<std::string>(0))
    return m.get_as<std::string>(0);
  // CAF's own errors: the code's name ("cannot_open_file" -> "cannot open
  // file"), then the context's parts, without CAF's system_error(...) wrapping.
  std::string name;
  if (e.category() == caf::atom("system"))
    name = caf::to_string(static_cast<caf::sec>(e.code()));
  else if (e.category() == caf::atom("parser"))
    name = caf::to_string(static_cast<caf::pec>(e.code()));
  else if (e.category() == caf::atom("exit"))
    name = caf::to_string(static_cast<caf::exit_reason>(e.code()));
  else
    name = "error code " + std::to_string(e.code());
  std::replace(name.begin(), name.end(), '_', ' ');
  for (std::size_t i = 0; i < m.size(); ++i)
    name += (i == 0 ? ": " : ", ") +
            (m.match_element<std::string>(i) ? m.get_as<std::string>(i) : m.stringify(i));
  return name;
}

caf::expected<std::uint64_t> write_checkpoint(const proto::Checkpoint& ck,
                                              const std::string& file) {
  std::string payload;
  if (!ck.SerializeToString(&payload))
    return file_error(file, "cannot serialize the checkpoint");
  std::string bytes(magic, sizeof magic);
  put_u64(bytes, payload.size());
  bytes += payload;
  put_u64(bytes, checksum(payload));
  const std::string tmp = file + ".tmp";
  std::error_code ec;
  const auto dir = std::filesystem::path{file}.parent_path();
  if (!dir.empty())
    std::filesystem::create_directories(dir, ec);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0)
    return file_error(tmp, std::string{"cannot write: "} + std::strerror(errno));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const auto w = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      const std::string why = std::strerror(errno);
      ::close(fd);
      return file_error(tmp, "cannot write: " + why);
    }
    done += static_cast<std::size_t>(w);
  }
  // Durable before it replaces the previous checkpoint.
  if (::fsync(fd) != 0 || ::close(fd) != 0)
    return file_error(tmp, std::string{"cannot write: "} + std::strerror(errno));
  if (std::rename(tmp.c_str(), file.c_str()) != 0)
    return file_error(file, std::string{"cannot rename "} + tmp + ": " + std::strerror(errno));
  return static_cast<std::uint64_t>(bytes.size());
}

std::string check_checkpoint_nodes(const proto::Checkpoint& ck, const run_plan& plan,
                                   const std::vector<std::uint32_t>& ids) {
  const auto n = plan.nodes();
  if (static_cast<std::size_t>(ck.nodes_size()) != n)
    return "holds " + std::to_string(ck.nodes_size()) + " nodes; the spec runs " +
           std::to_string(n);
  if (ck.dimension() != plan.dim())
    return "was taken with " + std::to_string(ck.dimension()) +
           " model parameters; the spec's model has " + std::to_string(plan.dim());
  namespace pb = google::protobuf;
  pb::util::MessageDifferencer diff;
  std::string what;
  diff.ReportDifferencesToString(&what);
  if (!diff.Compare(comparable(ck.spec()), comparable(plan.spec))) {
    while (!what.empty() && what.back() == '\n')
      what.pop_back();
    return "was taken by a different spec (only stop, checkpoint, out_dir, progress and the "
           "deploy block may change; checkpoint -> this spec): " +
           what;
  }
  for (auto i : ids) {
    if (i >= n)
      return "node " + std::to_string(i) + " is not in the run";
    if (auto why = check_node(ck.nodes(static_cast<int>(i)), i, plan); !why.empty())
      return why;
  }
  if (plan.stop.time_seconds > 0 && ck.time_seconds() >= plan.stop.time_seconds)
    return "was taken at t=" + std::to_string(ck.time_seconds()) +
           " s, not before the spec's stop.time_seconds (" +
           std::to_string(plan.stop.time_seconds) + " s)";
  return {};
}

caf::expected<std::shared_ptr<const proto::Checkpoint>> load_checkpoint(const std::string& file,
                                                                        const run_plan& plan) {
  std::ifstream in{file, std::ios::binary};
  if (!in)
    return file_error(file, "cannot open the checkpoint");
  const std::string bytes{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  constexpr std::size_t header = sizeof magic + 8;
  if (bytes.size() >= sizeof magic && std::memcmp(bytes.data(), magic_v1, sizeof magic) == 0)
    return file_error(file, "written by an older atrain (checkpoint format 1, whose node states "
                            "have another layout): this atrain reads format 2; resume it with "
                            "the atrain that wrote it, or start the run again");
  if (bytes.size() < header || std::memcmp(bytes.data(), magic, sizeof magic) != 0)
    return file_error(file, "not an atrain checkpoint (no ATRCKPT2 header)");
  const auto length = get_u64(bytes.data() + sizeof magic);
  if (length > bytes.size() || bytes.size() - header < length + 8)
    return file_error(file, "truncated: the header announces " + std::to_string(length) +
                              " bytes of state, the file holds " +
                              std::to_string(bytes.size() - header));
  if (bytes.size() != header + length + 8)
    return file_error(file, "has " + std::to_string(bytes.size() - header - length - 8) +
                              " stray bytes after the checkpoint");
  const std::string payload = bytes.substr(header, length);
  if (checksum(payload) != get_u64(bytes.data() + header + length))
    return file_error(file, "corrupted: the checksum does not match its contents");
  auto ck = std::make_shared<proto::Checkpoint>();
  if (!ck->ParseFromString(payload))
    return file_error(file, "corrupted: the state cannot be parsed");
  std::vector<std::uint32_t> all(plan.nodes());
  for (std::uint32_t i = 0; i < all.size(); ++i)
    all[i] = i;
  if (auto why = check_checkpoint_nodes(*ck, plan, all); !why.empty())
    return file_error(file, why);
  const auto& algo = plan.algorithm();
  if (algo.check_checkpoint)
    if (auto why = algo.check_checkpoint(*ck, plan); !why.empty())
      return file_error(file, why);
  return std::shared_ptr<const proto::Checkpoint>{std::move(ck)};
}

// ---------------------------------------------------------------- the barrier

checkpointer::checkpointer(context_ptr ctx, reason_fn stop, reason_fn fail)
  : ctx_(std::move(ctx)), stop_(std::move(stop)), fail_(std::move(fail)) {
  if (ctx_->resume) {
    last_ = ctx_->resume;
    number_ = ctx_->resume->number();
    records_.assign(ctx_->resume->taken().begin(), ctx_->resume->taken().end());
    std::error_code ec;  // the file's own size was not known when it was written
    const auto size = std::filesystem::file_size(ctx_->resume_file, ec);
    if (!records_.empty() && records_.back().bytes() == 0 && !ec)
      records_.back().set_bytes(size);
  }
}

void checkpointer::watch(const std::vector<node_actors>& nodes, const link_list& links,
                         evaluator_actor evaluator) {
  nodes_ = nodes;
  links_ = links;
  evaluator_ = std::move(evaluator);
}

void checkpointer::arm(caf::event_based_actor* self) {
  const auto& c = ctx_->plan->checkpoint;
  const double after = ctx_->resume ? ctx_->resume->requested_seconds() : 0.0;
  const double until = ctx_->plan->stop.time_seconds;
  std::vector<double> times;
  for (double t : c.at_seconds)
    if (t > after)
      times.push_back(t);
  if (c.every_seconds > 0) {
    // Every multiple within the time budget (armed up front, so a resumed
    // run arms them in the same order); without one, the next 10000.
    auto k = static_cast<std::uint64_t>(std::floor(after / c.every_seconds)) + 1;
    for (std::size_t count = 0; count < 10000; ++count, ++k) {
      const double t = static_cast<double>(k) * c.every_seconds;
      if (until > 0 && t >= until)
        break;
      times.push_back(t);
    }
  }
  std::sort(times.begin(), times.end());
  times.erase(std::unique(times.begin(), times.end()), times.end());
  for (double t : times)
    self->delayed_send(self, delay_until(*ctx_, self, t), ckpt_timer_atom::value, t);
}

void checkpointer::start_resumed(caf::event_based_actor* self) {
  active_ = true;
  restoring_ = true;
  poll(self, ++round_);
}

bool checkpointer::defer_stop(const std::string& reason) {
  if (!active_)
    return false;
  if (!deferred_stop_)
    deferred_stop_ = reason;
  return true;
}

void checkpointer::begin(caf::event_based_actor* self, double at) {
  if (active_ || (sup_.quiet && !sup_.quiet())) {
    // Waits for the barrier in progress or for a crash to close; in time order.
    queued_.insert(std::upper_bound(queued_.begin(), queued_.end(), at), at);
    return;
  }
  active_ = true;
  requested_ = at;
  for (const auto& n : nodes_)  // node_actors hold caf::actor: any algorithm's worker
    self->send(caf::actor_cast<node_actor>(n.worker), ckpt_pause_atom::value);
  poll(self, ++round_);
}

void checkpointer::poll(caf::event_based_actor* self, std::uint64_t round) {
  if (!active_ || round != round_)
    return;
  struct tally {
    std::size_t pending = 0;
    double busy = -1;  // the longest wait; < 0: everyone quiet
    bool failed = false;
  };
  auto t = std::make_shared<tally>();
  auto me = shared_from_this();
  auto done = [self, me, t, round] {
    if (--t->pending > 0 || t->failed || me->round_ != round)
      return;
    if (t->busy < 0) {
      if (me->restoring_) {
        me->restoring_ = false;
        if (me->deferred_stop_) {
          me->active_ = false;
          return me->stop_(*me->deferred_stop_);
        }
        return me->go(self);
      }
      return me->gather(self);
    }
    // Ask again when the slowest should be done (at least 1 us virtual,
    // 1 ms real: a REAL poll costs a round of messages).
    const double floor = me->ctx_->plan->virtual_clock() ? 1e-6 : 1e-3;
    self->delayed_send(self, to_timespan(std::max(t->busy, floor)), ckpt_poll_atom::value,
                       ++me->round_);
  };
  auto ask = [&](const auto& a, std::string who) {  // untyped nodes, typed links
    ++t->pending;
    self->request(a, ctx_->reply_timeout(), ckpt_drain_atom::value)
      .then(
        [t, done](double busy) {
          t->busy = std::max(t->busy, busy);
          done();
        },
        [me, t, who](const caf::error& e) {
          if (std::exchange(t->failed, true))
            return;
          me->active_ = false;
          me->fail_("checkpoint: " + who + " did not answer the drain poll: " + error_text(e));
        });
  };
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    ask(caf::actor_cast<node_actor>(nodes_[i].worker), node_part(i, "worker"));
  for (const auto& l : links_)
    ask(l, "a link");
  for (std::size_t h = 0; h < keepers_.size(); ++h)
    if (keepers_[h])
      ask(keepers_[h], "host " + ctx_->deploy->names.at(h));
}

std::string checkpointer::node_part(std::size_t i, const char* part) const {
  std::string s = "node " + std::to_string(i) + " " + part;
  if (ctx_->deploy)
    s += " (on host " + ctx_->deploy->names.at(ctx_->deploy->host_of.at(i)) + ")";
  return s;
}

void checkpointer::gather(caf::event_based_actor* self) {
  const auto n = nodes_.size();
  auto ck = std::make_shared<proto::Checkpoint>();
  for (std::size_t i = 0; i < n; ++i)
    ck->add_nodes()->set_node(static_cast<std::uint32_t>(i));
  for (std::size_t k = 0; k < links_.size(); ++k)
    ck->add_links();
  auto pending = std::make_shared<std::size_t>(0);
  auto failed = std::make_shared<bool>(false);
  auto me = shared_from_this();
  auto ask = [&](const auto& a, std::string who, std::function<bool(const std::string&)> take) {
    ++*pending;
    self->request(a, ctx_->reply_timeout(), ckpt_state_atom::value)
      .then(
        [self, me, ck, pending, failed, who, take](const std::string& bytes) {
          if (*failed)
            return;
          if (!take(bytes)) {
            *failed = true;
            me->active_ = false;
            return me->fail_("checkpoint: the state of " + who + " cannot be parsed");
          }
          if (--*pending == 0)
            me->finish(self, ck);
        },
        [me, failed, who](const caf::error& e) {
          if (std::exchange(*failed, true))
            return;
          me->active_ = false;
          me->fail_("checkpoint: " + who + " did not give its state: " + error_text(e));
        });
  };
  for (std::size_t i = 0; i < n; ++i) {
    auto* node = ck->mutable_nodes(static_cast<int>(i));
    auto merge = [node](const std::string& b) { return node->MergeFromString(b); };
    ask(caf::actor_cast<node_actor>(nodes_[i].worker), node_part(i, "worker"), merge);
    if (nodes_[i].buffer && nodes_[i].buffer != nodes_[i].worker)
      ask(nodes_[i].buffer, node_part(i, "gradient buffer"), merge);
    if (nodes_[i].hub && nodes_[i].hub != nodes_[i].worker && nodes_[i].hub != nodes_[i].buffer)
      ask(nodes_[i].hub, node_part(i, "hub"), merge);
  }
  for (std::size_t k = 0; k < links_.size(); ++k) {
    auto* link = ck->mutable_links(static_cast<int>(k));
    ask(links_[k], "a link", [link](const std::string& b) { return link->ParseFromString(b); });
  }
  auto* eval = ck->mutable_evaluator();
  ask(evaluator_, "the evaluator",
      [eval](const std::string& b) { return eval->ParseFromString(b); });
}

std::string checkpointer::file_for(std::uint32_t number) const {
  std::string f = ctx_->plan->checkpoint.file;
  const auto at = f.find("{k}");
  if (at != std::string::npos)
    f.replace(at, 3, std::to_string(number));
  const std::filesystem::path p{f};
  if (p.is_relative() && !ctx_->plan->base_dir.empty())
    return (std::filesystem::path{ctx_->plan->base_dir} / p).string();
  return f;
}

void checkpointer::finish(caf::event_based_actor* self, std::shared_ptr<proto::Checkpoint> ck) {
  if (!active_)
    return;
  const auto& plan = *ctx_->plan;
  const auto number = ++number_;
  const double now = ctx_->seconds(self);
  ctx_->events.record(ctx_->ns(self), 0, event_kind::checkpoint, number);
  *ck->mutable_spec() = plan.spec;  // output: the spec as loaded (run_plan::spec)
  if (ctx_->deploy)                 // the deploy as run (hosts may come from the command line)
    record_deploy(*ctx_->deploy, *ck->mutable_spec()->mutable_deploy());
  ck->set_time_ns(ctx_->ns(self));
  ck->set_time_seconds(now);
  ck->set_requested_seconds(requested_);
  ck->set_number(number);
  ck->set_trace_hash(ctx_->events.hash());
  ck->set_trace_events(ctx_->events.events());
  ck->set_dimension(static_cast<std::uint32_t>(plan.dim()));
  ck->set_algorithm(plan.algorithm_name());
  if (sup_.save)
    sup_.save(*ck->mutable_supervisor());
  const auto file = file_for(number);
  proto::CheckpointRecord rec;
  rec.set_number(number);
  rec.set_requested_seconds(requested_);
  rec.set_taken_seconds(now);
  rec.set_drain_seconds(now - requested_);
  rec.set_file(file);
  for (const auto& r : records_)
    *ck->add_taken() = r;
  *ck->add_taken() = rec;
  auto written = write_checkpoint(*ck, file);
  if (!written) {
    active_ = false;
    return fail_("checkpoint " + std::to_string(number) + ": " + error_text(written.error()));
  }
  rec.set_bytes(*written);
  records_.push_back(rec);
  log_event(self, *ctx_, "checkpoint",
            "\"number\": " + std::to_string(number) + ", \"requested_seconds\": " +
              json::number(requested_) + ", \"file\": " + json::quote(file) +
              ", \"bytes\": " + json::integer(static_cast<std::uint64_t>(*written)));
  last_ = ck;
  if (deferred_stop_) {
    active_ = false;
    return stop_(*deferred_stop_);  // the workers stay held: the run ends at T_c
  }
  go(self);
}

void checkpointer::go(caf::event_based_actor* self) {
  active_ = false;
  for (const auto& n : nodes_)
    self->send(caf::actor_cast<node_actor>(n.worker), ckpt_go_atom::value);
  if (sup_.after_go)
    sup_.after_go();
  quiet_again(self);
}

void checkpointer::quiet_again(caf::event_based_actor* self) {
  if (active_ || queued_.empty())
    return;
  const double next = queued_.front();
  queued_.erase(queued_.begin());
  begin(self, next);
}

void checkpointer::add_to(proto::RunReport& r) const {
  for (const auto& rec : records_)
    *r.add_checkpoints() = rec;
  if (ctx_->resume) {
    r.set_resumed_from(ctx_->resume_file);
    r.set_resumed_at_seconds(ctx_->resume->time_seconds());
  }
}

}  // namespace atrain
