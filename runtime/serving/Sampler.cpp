//===- Sampler.cpp - Greedy and seeded sampling of the next token ---------===//
#include "lockstep/Runtime/Serving/Sampler.h"

#include <algorithm>
#include <cmath>
#include <vector>

using namespace lockstep::rt;

std::array<uint32_t, 4> lockstep::rt::philox4x32_10(
    std::array<uint32_t, 4> c, std::array<uint32_t, 2> k) {
  constexpr uint32_t M0 = 0xD2511F53u, M1 = 0xCD9E8D57u;
  constexpr uint32_t W0 = 0x9E3779B9u, W1 = 0xBB67AE85u;
  for (int round = 0; round < 10; ++round) {
    if (round > 0) {
      k[0] += W0;
      k[1] += W1;
    }
    uint64_t p0 = uint64_t(M0) * c[0], p1 = uint64_t(M1) * c[2];
    uint32_t hi0 = uint32_t(p0 >> 32), lo0 = uint32_t(p0);
    uint32_t hi1 = uint32_t(p1 >> 32), lo1 = uint32_t(p1);
    c = {hi1 ^ c[1] ^ k[0], lo1, hi0 ^ c[3] ^ k[1], lo0};
  }
  return c;
}

double lockstep::rt::sampleUniform(uint64_t seed, int64_t position) {
  uint64_t pos = uint64_t(position);
  std::array<uint32_t, 4> r =
      philox4x32_10({uint32_t(pos), uint32_t(pos >> 32), 0, 0},
                    {uint32_t(seed), uint32_t(seed >> 32)});
  uint64_t bits = ((uint64_t(r[0]) << 32) | r[1]) >> 11; // 53 bits
  return double(bits) * (1.0 / 9007199254740992.0);     // 2^-53
}

bool lockstep::rt::validateSamplingParams(const SamplingParams &p,
                                          std::string &error) {
  if (std::isnan(p.temperature) || std::isinf(p.temperature)) {
    error = "temperature must be a finite number";
    return false;
  }
  if (!(p.topP > 0 && p.topP <= 1)) {
    error = "topP must be in (0, 1]";
    return false;
  }
  if (p.topK < 0) {
    error = "topK must be non-negative";
    return false;
  }
  return true;
}

namespace {

/// The strict total order of candidates: logit descending, index ascending;
/// NaN after everything.
struct Before {
  const float *logits;
  bool operator()(int32_t a, int32_t b) const {
    float x = logits[a], y = logits[b];
    bool xn = std::isnan(x), yn = std::isnan(y);
    if (xn != yn)
      return yn;
    if (!xn && x != y)
      return x > y;
    return a < b;
  }
};

} // namespace

int32_t lockstep::rt::argmax(const float *logits, int64_t vocab) {
  if (!logits || vocab <= 0)
    return -1;
  // The same answer as the order `Before` (the greatest non-NaN logit, the
  // lowest index of a tie, -0 tying +0; 0 when every logit is NaN), in two
  // passes that vectorize: the greatest value, in 16 lanes (a max is exact
  // in any order, and NaN never passes `>`), then its first index.
  constexpr int kLanes = 16;
  float lane[kLanes];
  for (float &m : lane)
    m = -INFINITY;
  int64_t i = 0;
  for (; i + kLanes <= vocab; i += kLanes)
    for (int j = 0; j < kLanes; ++j)
      lane[j] = logits[i + j] > lane[j] ? logits[i + j] : lane[j];
  float best = -INFINITY;
  for (float m : lane)
    best = m > best ? m : best;
  for (; i < vocab; ++i)
    best = logits[i] > best ? logits[i] : best;
  for (int64_t k = 0; k < vocab; ++k)
    if (logits[k] == best)
      return int32_t(k);
  return 0; // every logit NaN
}

int32_t lockstep::rt::sample(const float *logits, int64_t vocab,
                             const SamplingParams &params, int64_t position) {
  if (!logits || vocab <= 0)
    return -1;
  if (!(params.temperature > 0) || std::isinf(params.temperature))
    return argmax(logits, vocab);

  std::vector<int32_t> order;
  order.reserve(size_t(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    if (!std::isnan(logits[i]))
      order.push_back(int32_t(i));
  if (order.empty())
    return 0; // every logit NaN: the tie-break, as argmax does
  size_t keep = order.size();
  if (params.topK > 0 && size_t(params.topK) < keep)
    keep = size_t(params.topK);
  // The order is strict and total, so partial_sort's result is unique.
  std::partial_sort(order.begin(), order.begin() + keep, order.end(),
                    Before{logits});
  order.resize(keep);

  // Softmax weights in float64, relative to the largest logit (order[0]).
  // A +inf logit takes all the mass (shared evenly among the +inf ones); if
  // the largest is -inf, every candidate is -inf and they share it evenly.
  std::vector<double> w(keep);
  double invT = 1.0 / double(params.temperature);
  double top = double(logits[order[0]]);
  for (size_t i = 0; i < keep; ++i) {
    double x = double(logits[order[i]]);
    if (std::isinf(top))
      w[i] = (x == top) ? 1.0 : 0.0;
    else
      w[i] = std::exp((x - top) * invT);
  }
  double total = 0;
  for (double v : w)
    total += v;

  // top-p: the shortest prefix whose mass reaches topP of the total.
  double topP = std::isnan(params.topP) ? 1.0 : double(params.topP);
  if (topP < 1) {
    double target = topP * total, run = 0;
    size_t n = 0;
    while (n < keep) {
      run += w[n++];
      if (run >= target)
        break;
    }
    keep = n;
    total = run;
  }

  double target = sampleUniform(params.seed, position) * total, run = 0;
  int32_t last = order[0];
  for (size_t i = 0; i < keep; ++i) {
    if (w[i] <= 0)
      continue;
    run += w[i];
    last = order[i];
    if (run > target)
      return order[i];
  }
  return last; // rounding left target at the very end of the mass
}
