/// link.codec: the outbox's coders and the receivers' decoders (link_codec.hpp).
#include "atrain/actors/link_codec.hpp"

#include <cmath>
#include <stdexcept>

#include "atrain.pb.h"
#include "atrain/actors/algorithm.hpp"
#include "atrain/actors/checkpoint.hpp"
#include "atrain/actors/network.hpp"
#include "atrain/actors/run_plan.hpp"
#include "atrain/actors/settings.hpp"

namespace atrain {

namespace {

template <class T, class R>
[[nodiscard]] std::vector<T> vec_of(const R& field) {
  return {field.begin(), field.end()};
}

}  // namespace

codec_settings codec_of(const link_settings& l) {
  return {l.codec, l.resync_every};
}

std::shared_ptr<link_coder> coder_for(const run_plan& plan, bool (*mine)(std::uint32_t kind)) {
  const auto settings = codec_of(plan.link);
  if (!settings.active())
    return nullptr;
  return std::make_shared<link_coder>(settings, plan.algorithm().links.coding, mine);
}

link_coder::link_coder(codec_settings settings, stream_coding (*coding)(std::uint32_t kind),
                       bool (*mine)(std::uint32_t kind))
  : settings_(settings), coding_(coding), mine_(mine) {
  if (coding_ == nullptr)
    throw std::logic_error("link_coder: the algorithm codes no stream");
}

void link_coder::encode(packet& p) {
  const key k{p.to, p.kind};
  auto coding = coding_(p.kind);
  if (coding == stream_coding::model)
    coding = models_as_replicas(settings_.config) ? stream_coding::replica : stream_coding::values;
  switch (coding) {
    case stream_coding::raw:
      return;
    case stream_coding::values: {
      if (p.f.empty())
        return;
      auto it = values_.find(k);
      if (it == values_.end() || it->second.residual().size() != p.f.size())
        it =
          values_.insert_or_assign(k, codec::error_feedback_encoder(settings_.config, p.f.size()))
            .first;
      p.coded = blob<std::uint8_t>{it->second.encode(p.f.ptr(), p.f.size())};
      p.f = {};
      return;
    }
    case stream_coding::running_sum:
      if (p.d.empty())
        return;
      p.coded = blob<std::uint8_t>{encode_sum(k, p.d.ptr(), p.d.size())};
      p.d = {};
      return;
    case stream_coding::replica:
    case stream_coding::model:  // (resolved above)
      if (p.f.empty())
        return;
      widened_.assign(p.f.ptr(), p.f.ptr() + p.f.size());  // exact
      p.coded = blob<std::uint8_t>{encode_sum(k, widened_.data(), widened_.size())};
      p.f = {};
      return;
  }
}

void link_coder::reset(std::uint32_t receiver) {
  auto drop = [receiver](auto& coders) {
    for (auto it = coders.begin(); it != coders.end();)
      it = it->first.first == receiver ? coders.erase(it) : std::next(it);
  };
  drop(values_);
  drop(sums_);
}

std::vector<std::uint8_t> link_coder::encode_sum(const key& k, const double* v, std::size_t n) {
  auto it = sums_.find(k);
  if (it == sums_.end())
    it = sums_.emplace(k, codec::running_sum_sender(settings_.config, n, settings_.resync_every))
           .first;
  if (it->second.sent().size() != n)
    throw std::logic_error("link_coder: a running sum changed its length");
  // A stream's first message is exact: a receiver that switched epochs
  // late (and dropped the first increments) is whole again at once.
  const bool first = it->second.seq() == 0;
  return it->second.encode(v, first);
}

void link_coder::save(proto::CodecState& s) const {
  for (const auto& [k, enc] : values_) {
    if (!settings_.config.error_feedback)
      break;  // no residual: a values coder holds nothing between messages
    auto* x = s.add_sender();
    x->set_to(k.first);
    x->set_kind(k.second);
    x->mutable_residual()->Assign(enc.residual().begin(), enc.residual().end());
  }
  for (const auto& [k, sum] : sums_) {
    auto* x = s.add_sender();
    x->set_to(k.first);
    x->set_kind(k.second);
    x->set_seq(sum.seq());
    x->mutable_sent()->Assign(sum.sent().begin(), sum.sent().end());
    x->mutable_last()->Assign(sum.last().begin(), sum.last().end());
  }
}

void link_coder::restore(const proto::CodecState& s) {
  values_.clear();
  sums_.clear();
  for (const auto& x : s.sender()) {
    if (mine_ != nullptr && !mine_(x.kind()))
      continue;
    const key k{x.to(), x.kind()};
    if (x.seq() > 0 || x.sent_size() > 0) {
      codec::running_sum_sender sum(settings_.config, static_cast<std::size_t>(x.sent_size()),
                                    settings_.resync_every);
      if (!sum.restore(x.seq(), vec_of<double>(x.sent()), vec_of<double>(x.last())))
        throw std::invalid_argument("checkpoint: a running-sum coder's state is inconsistent");
      sums_.emplace(k, std::move(sum));
    } else {
      codec::error_feedback_encoder enc(settings_.config,
                                        static_cast<std::size_t>(x.residual_size()));
      if (!enc.restore(vec_of<float>(x.residual())))
        throw std::invalid_argument("checkpoint: a coder's residual is not finite");
      values_.emplace(k, std::move(enc));
    }
  }
}

codec::receive_result sum_decoder::receive(const packet& p) {
  const std::pair<std::uint32_t, std::uint32_t> k{p.from, p.kind};
  auto it = sums_.find(k);
  if (it == sums_.end())
    it = sums_.emplace(k, codec::running_sum_receiver(dim_)).first;
  return it->second.receive(p.coded.ptr(), p.coded.size(), p.seq);
}

const std::vector<double>& sum_decoder::sum(std::uint32_t from, std::uint32_t kind) const {
  return sums_.at({from, kind}).sum();
}

void sum_decoder::save(proto::CodecState& s) const {
  for (const auto& [k, sum] : sums_) {
    auto* x = s.add_receiver();
    x->set_from(k.first);
    x->set_kind(k.second);
    x->set_applied_seq(sum.applied_seq());
    x->mutable_sum()->Assign(sum.sum().begin(), sum.sum().end());
  }
}

void sum_decoder::restore(const proto::CodecState& s) {
  sums_.clear();
  for (const auto& x : s.receiver()) {
    codec::running_sum_receiver sum(dim_);
    if (!sum.restore(x.applied_seq(), vec_of<double>(x.sum())))
      throw std::invalid_argument("checkpoint: a running-sum decoder's state is inconsistent");
    sums_.emplace(std::make_pair(x.from(), x.kind()), std::move(sum));
  }
}

void save_coder(const outbox& out, proto::NodeState& s) {
  if (out.coder)
    out.coder->save(*s.mutable_codec());
}

void restore_coder(outbox& out, const proto::NodeState& s) {
  if (out.coder)
    out.coder->restore(s.codec());
}

std::optional<packet> open_values(const packet& p, std::size_t dim, std::string* why) {
  if (p.coded.empty())
    return p;
  packet out = p;
  out.coded = {};
  std::vector<float> values(dim);
  if (!p.f.empty()) {
    if (why)
      *why = "a coded packet that also carries raw values";
    return std::nullopt;
  }
  if (auto err = codec::decode_into(p.coded.ptr(), p.coded.size(), values.data(), dim)) {
    if (why)
      *why = *err;
    return std::nullopt;
  }
  out.f = float_blob{std::move(values)};
  return out;
}

std::string check_codec_state(const proto::CodecState& s, std::size_t dim) {
  const auto n = static_cast<int>(dim);
  for (int i = 0; i < s.sender_size(); ++i) {
    const auto& x = s.sender(i);
    // A running sum or replica has the model's length; a values stream's
    // residual that of its vectors (at most the model's: LOSCAR sends part).
    const bool sum = x.seq() > 0 || x.sent_size() > 0;
    if (sum ? (x.sent_size() != n || x.last_size() != n || x.residual_size() != 0)
            : (x.residual_size() < 1 || x.residual_size() > n || x.last_size() != 0))
      return "codec.sender[" + std::to_string(i) + "] (to node " + std::to_string(x.to()) +
             ") does not hold vectors of the model's " + std::to_string(dim) + " values";
  }
  for (int i = 0; i < s.receiver_size(); ++i)
    if (s.receiver(i).sum_size() != n)
      return "codec.receiver[" + std::to_string(i) + "] (from node " +
             std::to_string(s.receiver(i).from()) + ") holds " +
             std::to_string(s.receiver(i).sum_size()) + " values, not the model's " +
             std::to_string(dim);
  return {};
}

}  // namespace atrain
