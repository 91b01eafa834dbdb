/// fault_schedule: lookups over the spec's fault windows.
#include "atrain/actors/faults.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

namespace atrain {

namespace {

[[nodiscard]] bool active(double from, double to, double t) {
  return t >= from && (to == 0 || t < to);
}

template <class Edges>
[[nodiscard]] bool listed(const Edges& links, std::uint32_t from, std::uint32_t to) {
  if (links.empty())
    return true;
  return std::any_of(links.begin(), links.end(),
                     [&](const proto::Edge& e) { return e.from() == from && e.to() == to; });
}

template <class Nodes>
[[nodiscard]] bool contains(const Nodes& nodes, std::uint32_t i) {
  return std::find(nodes.begin(), nodes.end(), i) != nodes.end();
}

/// Whether the partition separates i from j.
[[nodiscard]] bool separates(const proto::Partition& p, std::uint32_t i, std::uint32_t j) {
  auto on_b = [&](std::uint32_t k) {
    return p.side_b().empty() ? !contains(p.side_a(), k) : contains(p.side_b(), k);
  };
  const bool ia = contains(p.side_a(), i), ja = contains(p.side_a(), j);
  return (ia && on_b(j)) || (ja && on_b(i));
}

template <class Nodes>
[[nodiscard]] std::string set_text(const Nodes& nodes) {
  std::ostringstream os;
  os << '{';
  bool first = true;
  for (auto n : nodes) {
    os << (first ? "" : ",") << n;
    first = false;
  }
  os << '}';
  return os.str();
}

template <class Edges>
[[nodiscard]] std::string links_text(const Edges& links) {
  if (links.empty())
    return "every link";
  std::ostringstream os;
  bool first = true;
  for (const auto& e : links) {
    os << (first ? "" : ", ") << e.from() << "->" << e.to();
    first = false;
  }
  return os.str();
}

void hit(fault_schedule::hits* h, std::size_t index, std::size_t size) {
  if (h == nullptr)
    return;
  if (h->size() < size)
    h->resize(size, 0);
  ++(*h)[index];
}

}  // namespace

fault_schedule::fault_schedule(const proto::FaultSchedule& spec) : spec_(spec) {}

std::size_t fault_schedule::size() const {
  return static_cast<std::size_t>(
    spec_.straggle_size() + spec_.partition_size() + spec_.loss_burst_size() +
    spec_.delay_spike_size() + spec_.bad_gradients_size() + spec_.crash_size() + spec_.join_size());
}

std::size_t fault_schedule::crash_index(int i) const {
  return size() - static_cast<std::size_t>(spec_.crash_size() + spec_.join_size()) +
         static_cast<std::size_t>(i);
}

std::size_t fault_schedule::join_index(int i) const {
  return size() - static_cast<std::size_t>(spec_.join_size()) + static_cast<std::size_t>(i);
}

// Index bases of each kind in describe() order.
namespace {
struct bases {
  std::size_t partition, loss, delay, bad;
  explicit bases(const proto::FaultSchedule& f)
    : partition(static_cast<std::size_t>(f.straggle_size())),
      loss(partition + static_cast<std::size_t>(f.partition_size())),
      delay(loss + static_cast<std::size_t>(f.loss_burst_size())),
      bad(delay + static_cast<std::size_t>(f.delay_spike_size())) {}
};
}  // namespace

double fault_schedule::compute_factor(std::uint32_t node, double t, hits* h) const {
  double f = 1;
  for (int i = 0; i < spec_.straggle_size(); ++i) {
    const auto& s = spec_.straggle(i);
    if (s.node() == node && active(s.from_seconds(), s.to_seconds(), t)) {
      f *= s.factor();
      hit(h, static_cast<std::size_t>(i), size());
    }
  }
  return f;
}

fault_schedule::slowdown fault_schedule::compute_slowdown(std::uint32_t node, double t,
                                                          hits* h) const {
  slowdown out;
  for (int i = 0; i < spec_.straggle_size(); ++i) {
    const auto& s = spec_.straggle(i);
    if (s.node() != node || !active(s.from_seconds(), s.to_seconds(), t))
      continue;
    if (s.basis() == proto::NOMINAL_TAU) {
      out.nominal *= s.factor();
      out.nominal_active = true;
    } else {
      out.measured *= s.factor();
    }
    out.add_seconds += s.add_seconds();
    hit(h, static_cast<std::size_t>(i), size());
  }
  return out;
}

fault_schedule::link_effect fault_schedule::link(std::uint32_t from, std::uint32_t to, double t,
                                                 hits* h) const {
  const bases b{spec_};
  link_effect e;
  for (int i = 0; i < spec_.partition_size(); ++i) {
    const auto& p = spec_.partition(i);
    if (active(p.from_seconds(), p.to_seconds(), t) && separates(p, from, to)) {
      e.cut = true;
      hit(h, b.partition + static_cast<std::size_t>(i), size());
    }
  }
  double survive = 1;
  for (int i = 0; i < spec_.loss_burst_size(); ++i) {
    const auto& l = spec_.loss_burst(i);
    if (active(l.from_seconds(), l.to_seconds(), t) && listed(l.links(), from, to)) {
      survive *= 1 - l.loss();
      hit(h, b.loss + static_cast<std::size_t>(i), size());
    }
  }
  e.loss = 1 - survive;
  for (int i = 0; i < spec_.delay_spike_size(); ++i) {
    const auto& d = spec_.delay_spike(i);
    if (active(d.from_seconds(), d.to_seconds(), t) && listed(d.links(), from, to)) {
      e.extra_latency += d.extra_latency_seconds();
      hit(h, b.delay + static_cast<std::size_t>(i), size());
    }
  }
  return e;
}

bool fault_schedule::corrupt(std::uint32_t node, double t, float* g, std::size_t n, hits* h) const {
  const bases base{spec_};
  bool did = false;
  for (int i = 0; i < spec_.bad_gradients_size(); ++i) {
    const auto& b = spec_.bad_gradients(i);
    if (b.node() != node || !active(b.from_seconds(), b.to_seconds(), t))
      continue;
    hit(h, base.bad + static_cast<std::size_t>(i), size());
    if (b.kind() == proto::BadGradients::NOT_FINITE)
      std::fill(g, g + n, std::numeric_limits<float>::quiet_NaN());
    else
      for (std::size_t i = 0; i < n; ++i)
        g[i] *= static_cast<float>(b.factor());
    did = true;
  }
  return did;
}

bool fault_schedule::touches_links() const {
  return spec_.partition_size() > 0 || spec_.loss_burst_size() > 0 || spec_.delay_spike_size() > 0;
}

bool fault_schedule::empty() const {
  return !touches_links() && spec_.straggle_size() == 0 && spec_.bad_gradients_size() == 0 &&
         spec_.crash_size() == 0 && spec_.join_size() == 0;
}

std::vector<fault_schedule::description> fault_schedule::describe() const {
  std::vector<description> out;
  auto num = [](double x) {
    std::ostringstream os;
    os << x;
    return os.str();
  };
  for (const auto& s : spec_.straggle()) {
    std::string what = "node " + std::to_string(s.node()) + " computes x" + num(s.factor());
    if (s.basis() == proto::NOMINAL_TAU)
      what += " of its nominal tau";
    if (s.add_seconds() > 0)
      what += " + " + num(s.add_seconds()) + " s per gradient";
    out.push_back({"straggle", what, s.from_seconds(), s.to_seconds()});
  }
  for (const auto& p : spec_.partition())
    out.push_back({"partition",
                   set_text(p.side_a()) + " | " +
                     (p.side_b().empty() ? std::string{"every other node"} : set_text(p.side_b())),
                   p.from_seconds(), p.to_seconds()});
  for (const auto& b : spec_.loss_burst())
    out.push_back({"loss_burst", "loss " + num(b.loss()) + " on " + links_text(b.links()),
                   b.from_seconds(), b.to_seconds()});
  for (const auto& d : spec_.delay_spike())
    out.push_back({"delay_spike",
                   "+" + num(d.extra_latency_seconds()) + " s latency on " + links_text(d.links()),
                   d.from_seconds(), d.to_seconds()});
  for (const auto& b : spec_.bad_gradients())
    out.push_back(
      {"bad_gradients",
       "node " + std::to_string(b.node()) +
         (b.kind() == proto::BadGradients::NOT_FINITE ? " sends NaN gradients"
                                                      : " gradients x" + num(b.factor())),
       b.from_seconds(), b.to_seconds()});
  for (const auto& c : spec_.crash())
    out.push_back(
      {"crash",
       "node " + std::to_string(c.node()) +
         (c.whole_node() ? " (worker and gradient buffer)" : " worker") +
         (c.has_restart_after_seconds() ? ", restart after " + num(c.restart_after_seconds()) + " s"
                                        : ", no restart"),
       c.at_seconds(),
       c.has_restart_after_seconds() ? c.at_seconds() + c.restart_after_seconds() : 0.0});
  for (const auto& j : spec_.join())
    out.push_back({"join",
                   "node " + std::to_string(j.node()) + " absent from the start, joins " +
                     (j.at_seconds() > 0 ? "at " + num(j.at_seconds()) + " s" : "when asked"),
                   0.0, j.at_seconds()});
  return out;
}

}  // namespace atrain
