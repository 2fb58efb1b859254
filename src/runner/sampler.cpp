#include "runner/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/error.h"

namespace hfstatic {

SamplingRange sampling_range(SamplingParameter p) {
  switch (p) {
    case SamplingParameter::temperature: return {0.0, 2.0};
    case SamplingParameter::top_k: return {0.0, double(int64_t(1) << 31)};
    case SamplingParameter::top_p: return {0.0, 1.0};
    case SamplingParameter::min_p: return {0.0, 1.0};
    case SamplingParameter::repetition_penalty: return {0.01, 100.0};
  }
  return {0.0, 0.0};
}

std::string sampling_value_problem(SamplingParameter p, double value) {
  const SamplingRange r = sampling_range(p);
  if (value >= r.lo && value <= r.hi) return "";
  auto text = [](double x) { return x == std::trunc(x) && std::fabs(x) < 1e15 ? cat(int64_t(x)) : cat(x); };
  return cat(text(value), " is outside [", text(r.lo), ", ", text(r.hi), "]");
}

Sampler::Sampler(const SamplingConfig& config) : config_(config), state_(config.seed ^ 0x5851f42d4c957f2dull) {}

double Sampler::uniform() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return double(z >> 11) * 0x1.0p-53;
}

void Sampler::distribution(std::span<const float> logits, std::span<const int64_t> recent) {
  const int64_t n = int64_t(logits.size());
  scratch_.assign(logits.begin(), logits.end());
  if (config_.repetition_penalty != 1.0f) {
    const size_t window = size_t(std::max<int64_t>(0, config_.repetition_window));
    const size_t from = recent.size() > window ? recent.size() - window : 0;
    std::vector<int64_t> seen(recent.begin() + from, recent.end());
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int64_t t : seen) {
      if (t < 0 || t >= n) continue;
      float& l = scratch_[size_t(t)];
      l = l > 0 ? l / config_.repetition_penalty : l * config_.repetition_penalty;
    }
  }
  // NaN logits never win.
  for (float& l : scratch_)
    if (std::isnan(l)) l = -INFINITY;
  if (config_.temperature <= 0.0f) return;

  order_.resize(size_t(n));
  std::iota(order_.begin(), order_.end(), 0);
  int64_t keep = n;
  if (config_.top_k > 0 && config_.top_k < n) keep = config_.top_k;
  std::partial_sort(order_.begin(), order_.begin() + keep, order_.end(),
                    [&](int64_t a, int64_t b) { return scratch_[size_t(a)] > scratch_[size_t(b)]; });
  order_.resize(size_t(keep));

  const float top = scratch_[size_t(order_[0])];
  probs_.resize(order_.size());
  double total = 0;
  for (size_t i = 0; i < order_.size(); ++i) {
    probs_[i] = std::exp(double(scratch_[size_t(order_[i])] - top) / config_.temperature);
    total += probs_[i];
  }
  for (double& p : probs_) p /= total;
  size_t cut = probs_.size();
  if (config_.min_p > 0) {
    const double threshold = config_.min_p * probs_[0];
    while (cut > 1 && probs_[cut - 1] < threshold) --cut;
  }
  if (config_.top_p < 1.0f) {
    double cumulative = 0;
    for (size_t i = 0; i < cut; ++i) {
      cumulative += probs_[i];
      if (cumulative >= config_.top_p) {
        cut = i + 1;
        break;
      }
    }
  }
  order_.resize(cut);
  probs_.resize(cut);
  mass_ = 0;
  for (double p : probs_) mass_ += p;
}

int64_t Sampler::sample(std::span<const float> logits, std::span<const int64_t> recent) {
  distribution(logits, recent);
  if (config_.temperature <= 0.0f) return std::max_element(scratch_.begin(), scratch_.end()) - scratch_.begin();
  double r = uniform() * mass_;
  for (size_t i = 0; i < order_.size(); ++i) {
    r -= probs_[i];
    if (r < 0) return order_[i];
  }
  return order_.back();
}

int64_t Sampler::sample_draft(std::span<const float> logits, std::span<const int64_t> recent, int64_t draft,
                              bool* accepted) {
  distribution(logits, recent);
  if (config_.temperature <= 0.0f) {
    const int64_t best = std::max_element(scratch_.begin(), scratch_.end()) - scratch_.begin();
    *accepted = best == draft;
    return best;
  }
  const auto at = std::find(order_.begin(), order_.end(), draft);
  const double p = at == order_.end() ? 0.0 : probs_[size_t(at - order_.begin())];
  *accepted = uniform() * mass_ < p;
  if (*accepted) return draft;
  // The rest of the distribution: the draft's share taken out.
  double r = uniform() * (mass_ - p);
  for (size_t i = 0; i < order_.size(); ++i) {
    if (order_[i] == draft) continue;
    r -= probs_[i];
    if (r < 0) return order_[i];
  }
  for (size_t i = order_.size(); i-- > 0;)
    if (order_[i] != draft) return order_[i];
  return draft;  // the draft was the only token kept (and p = mass, so accepted: not reached)
}

}  // namespace hfstatic
