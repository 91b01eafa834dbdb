// Epoch-wise shuffled minibatches gathered into contiguous buffers.
#include <cstring>
#include <stdexcept>
#include <string>

#include "atrain/kernels/dataset.hpp"

namespace atrain {

minibatch_sampler::minibatch_sampler(const dataset& data, std::vector<std::uint32_t> indices,
                                     std::size_t batch, std::uint64_t seed)
  : data_(&data), indices_(std::move(indices)), batch_(batch),
    gen_(derive_seed(seed, 0x53414d504c4552ULL)) {
  if (batch_ == 0)
    throw std::invalid_argument("minibatch_sampler: batch must be > 0");
  if (indices_.empty())
    throw std::invalid_argument("minibatch_sampler: empty shard");
  for (const std::uint32_t i : indices_) {
    if (i >= data.size()) {
      throw std::invalid_argument("minibatch_sampler: index " + std::to_string(i) +
                                  " >= dataset size " + std::to_string(data.size()));
    }
  }
  gen_.shuffle(indices_.begin(), indices_.end());
  x_.resize(batch_ * data.dim);
  y_.resize(batch_);
}

batch_view minibatch_sampler::next() {
  const std::size_t dim = data_->dim;
  for (std::size_t r = 0; r < batch_; ++r) {
    if (cursor_ == indices_.size()) {
      gen_.shuffle(indices_.begin(), indices_.end());
      cursor_ = 0;
    }
    const std::uint32_t i = indices_[cursor_++];
    if (dim != 0)
      std::memcpy(x_.data() + r * dim, data_->row(i), dim * sizeof(float));
    y_[r] = data_->labels[i];
  }
  return {x_.data(), y_.data(), batch_, dim};
}

}  // namespace atrain
