/// R-FAST's tracker (rfast.hpp: the buffer's gradient-tracking arithmetic) and
/// the mass residual: plain computation with no actor, apart from the actors
/// (rfast.cpp: the worker; rfast_buffer.cpp: the gradient buffer).
#include "algorithms/rfast/rfast.hpp"

#include <algorithm>
#include <cmath>

#include "atrain/actors/checkpoint.hpp"
#include "atrain/kernels/vector_ops.hpp"

namespace atrain {

rfast_tracker::rfast_tracker(std::uint32_t node, std::size_t dim, double c_self,
                             std::vector<in_neighbour> in_c, bool phi_variant, double phi_min)
  : node_(node), dim_(dim), c_self_(c_self), phi_variant_(phi_variant), phi_min_(phi_min),
    z_(dim, 0.0), g_prev_(dim, 0.0f) {
  reset_epoch(0, c_self, std::move(in_c));
}

void rfast_tracker::reset_epoch(std::uint32_t epoch, double c_self,
                                std::vector<in_neighbour> in_c) {
  epoch_ = epoch;
  c_self_ = c_self;
  z_.assign(g_prev_.begin(), g_prev_.end());
  rho_ = double_blob{std::vector<double>(dim_, 0.0)};
  phi_ = 1;
  sigma_ = 0;
  sigma_sent_ = 0;
  in_c_ = std::move(in_c);
  for (auto& nb : in_c_) {
    nb.seq = 0;
    nb.rho_hat = rho_;  // nothing received yet: rho^ = rho~ = 0
    nb.rho_tilde = rho_;
    nb.sigma_hat = 0;
    nb.sigma_tilde = 0;
  }
}

void rfast_tracker::init(const float* g0) {
  g_prev_.assign(g0, g0 + dim_);
  z_.assign(g_prev_.begin(), g_prev_.end());
}

void rfast_tracker::correct(const float* g) {
  for (std::size_t k = 0; k < dim_; ++k) {
    z_[k] += static_cast<double>(g[k]) - static_cast<double>(g_prev_[k]);
    g_prev_[k] = g[k];
  }
}

double_blob rfast_tracker::push() {
  // One pass: the new running sum goes into another buffer (the old one may
  // still be in flight or held by a receiver), z is scaled in place.
  auto next = rho_pool_.take(dim_);
  const double* old = rho_.ptr();
  double* out = next->data();
  for (std::size_t k = 0; k < dim_; ++k) {
    out[k] = old[k] + z_[k];
    z_[k] *= c_self_;
  }
  return finish_push(std::move(next), finiteness::unknown);
}

double_blob rfast_tracker::finish_push(blob_pool<double>::buffer next, finiteness known) {
  rho_ = rho_pool_.publish(std::move(next), known);
  sigma_ += phi_;
  phi_ *= c_self_;
  ++pushes_;
  sigma_sent_ = sigma_;
  return rho_;
}

double rfast_tracker::direction_scale(double phi) const {
  return phi_variant_ ? 1.0 / std::max(phi, phi_min_) : 1.0;
}

std::vector<float> rfast_tracker::direction() const {
  std::vector<float> d(dim_);
  const double scale = direction_scale(phi_);
  for (std::size_t k = 0; k < dim_; ++k)
    d[k] = static_cast<float>(z_[k] * scale);
  return d;
}

double_blob rfast_tracker::correct_push_direction(const float* g, float* d) {
  news_.clear();
  return push_pass(g, d);
}

double_blob rfast_tracker::wake(const float* g, float* d) {
  collect_news();
  auto rho = push_pass(g, d);
  settle_news();  // after the push's phi, as absorb() after push()
  return rho;
}

double_blob rfast_tracker::push_pass(const float* g, float* d) {
  auto next = rho_pool_.take(dim_);
  const double scale = direction_scale(phi_ * c_self_);  // phi after the push
  const bool finite = vec::track_wake(
    {g, z_.data(), g_prev_.data(), rho_.ptr(), next->data(), d, c_self_, scale}, news_, dim_);
  return finish_push(std::move(next), finite ? finiteness::finite : finiteness::not_finite);
}

void rfast_tracker::absorb() {
  collect_news();
  vec::absorb_news(z_.data(), news_, dim_);
  settle_news();
}

void rfast_tracker::collect_news() {
  // Per element the terms are added in neighbour order, as one pass per
  // neighbour would.
  news_.clear();
  for (const auto& nb : in_c_)
    if (nb.rho_hat.ptr() != nb.rho_tilde.ptr())  // else nothing new since the last absorb
      news_.push_back({nb.rho_hat.ptr(), nb.rho_tilde.ptr(), nb.c});
}

void rfast_tracker::settle_news() {
  for (auto& nb : in_c_) {
    if (nb.rho_hat.ptr() == nb.rho_tilde.ptr())
      continue;
    phi_ += nb.c * (nb.sigma_hat - nb.sigma_tilde);
    nb.sigma_tilde = nb.sigma_hat;
    nb.rho_tilde = nb.rho_hat;  // after the pass: it read the old rho~
  }
}

bool rfast_tracker::receive(std::uint32_t from, std::uint64_t seq, const double_blob& rho,
                            double sigma) {
  for (auto& nb : in_c_) {
    if (nb.node != from)
      continue;
    if (seq <= nb.seq)
      return false;  // duplicate or reordered: the newer sum already covers it
    nb.seq = seq;
    nb.rho_hat = rho;
    nb.sigma_hat = sigma;
    return true;
  }
  return false;
}

mass_account rfast_tracker::account() const {
  mass_account acc;
  acc.node = node_;
  acc.z = double_blob{z_};
  acc.g_prev = double_blob{{g_prev_.begin(), g_prev_.end()}};
  acc.rho_sent = rho_;
  acc.phi = phi_;
  acc.sigma_sent = sigma_sent_;
  for (const auto& nb : in_c_) {
    acc.in_c.push_back(nb.node);
    acc.c_in.push_back(nb.c);
    acc.rho_consumed.push_back(nb.rho_tilde);
    acc.sigma_consumed.push_back(nb.sigma_tilde);
  }
  return acc;
}

void rfast_tracker::save(proto::RfastNodeState& s) const {
  *s.mutable_tracker() = {z_.begin(), z_.end()};
  *s.mutable_g_prev() = {g_prev_.begin(), g_prev_.end()};
  *s.mutable_rho() = {rho_.vec().begin(), rho_.vec().end()};
  s.set_phi(phi_);
  s.set_sigma(sigma_);
  s.set_sigma_sent(sigma_sent_);
  s.set_pushes(pushes_);
  for (const auto& nb : in_c_) {
    auto* m = s.add_mass_in();
    m->set_node(nb.node);
    m->set_seq(nb.seq);
    *m->mutable_rho_hat() = {nb.rho_hat.vec().begin(), nb.rho_hat.vec().end()};
    m->set_sigma_hat(nb.sigma_hat);
    m->set_sigma_tilde(nb.sigma_tilde);
    // absorb() skips a neighbour whose rho~ IS rho^ (the same buffer): keep that.
    m->set_consumed_all(nb.rho_hat.ptr() == nb.rho_tilde.ptr());
    if (!m->consumed_all())
      *m->mutable_rho_tilde() = {nb.rho_tilde.vec().begin(), nb.rho_tilde.vec().end()};
  }
}

void rfast_tracker::restore(const proto::RfastNodeState& s) {
  z_.assign(s.tracker().begin(), s.tracker().end());
  g_prev_.assign(s.g_prev().begin(), s.g_prev().end());
  rho_ = double_blob{{s.rho().begin(), s.rho().end()}};
  phi_ = s.phi();
  sigma_ = s.sigma();
  sigma_sent_ = s.sigma_sent();
  pushes_ = s.pushes();
  for (std::size_t k = 0; k < in_c_.size(); ++k) {
    const auto& m = s.mass_in(static_cast<int>(k));
    auto& nb = in_c_[k];
    nb.seq = m.seq();
    nb.rho_hat = double_blob{{m.rho_hat().begin(), m.rho_hat().end()}};
    nb.sigma_hat = m.sigma_hat();
    nb.rho_tilde =
      m.consumed_all() ? nb.rho_hat : double_blob{{m.rho_tilde().begin(), m.rho_tilde().end()}};
    nb.sigma_tilde = m.sigma_tilde();
  }
}

double mass_residual(const std::vector<mass_account>& accounts, double* phi_residual) {
  if (accounts.empty())
    return 0;
  const std::size_t dim = accounts.front().z.size();
  std::vector<double> lhs(dim, 0.0), rhs(dim, 0.0);
  // Indexed by node id: after a loss the accounts cover the survivors only.
  std::uint32_t top = 0;
  for (const auto& a : accounts)
    top = std::max(top, a.node);
  std::vector<const mass_account*> by_node(std::size_t{top} + 1, nullptr);
  for (const auto& a : accounts)
    by_node[a.node] = &a;
  double phi_total = 0;
  for (const auto& a : accounts) {
    vec::axpy(1.0, a.z.ptr(), lhs.data(), dim);
    vec::axpy(1.0, a.g_prev.ptr(), rhs.data(), dim);
    phi_total += a.phi;
    for (std::size_t e = 0; e < a.in_c.size(); ++e) {
      const auto* sender = a.in_c[e] < by_node.size() ? by_node[a.in_c[e]] : nullptr;
      if (sender == nullptr)
        continue;
      const double c = a.c_in[e];
      const double* sent = sender->rho_sent.ptr();
      const double* used = a.rho_consumed[e].ptr();
      for (std::size_t k = 0; k < dim; ++k)
        lhs[k] += c * (sent[k] - used[k]);
      phi_total += c * (sender->sigma_sent - a.sigma_consumed[e]);
    }
  }
  double err = 0, scale = 1;
  for (std::size_t k = 0; k < dim; ++k) {
    err = std::max(err, std::abs(lhs[k] - rhs[k]));
    scale = std::max(scale, std::abs(rhs[k]));
  }
  if (phi_residual != nullptr)
    *phi_residual = std::abs(phi_total - static_cast<double>(accounts.size()));
  return err / scale;
}

double mass_residual(const std::vector<const rfast_tracker*>& trackers, double* phi_residual) {
  std::vector<mass_account> accounts;
  for (const auto* t : trackers)
    if (t != nullptr)
      accounts.push_back(t->account());
  return mass_residual(accounts, phi_residual);
}

}  // namespace atrain
