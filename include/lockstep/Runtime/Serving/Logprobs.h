//===- Logprobs.h - Log-probabilities of a logits row -----------*- C++ -*-===//
//
// The log-softmax of one logits row, as an OpenAI-style `logprobs` answer
// reports it: the log-probability of the chosen token and the N most likely
// tokens with theirs. It must be as reproducible as the row: the same bits
// give the same numbers whatever else ran. So the order is fixed:
//
//   m   = max of the row (exact in any order; NaN if any logit is NaN)
//   s   = sum over i = 0, 1, ..., V-1 of exp(double(x_i) - m), in float64,
//         left to right
//   lse = m + log(s)
//   logprob(i) = double(x_i) - lse
//
// The top N are ordered by logit descending, index ascending on ties (NaN
// logits are never among them). exp and log are the C library's float64
// functions: deterministic within a build, like the sampler's softmax.
// Logprobs are of the raw logits (temperature 1), whatever the request's
// sampling temperature.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_LOGPROBS_H
#define LOCKSTEP_RUNTIME_SERVING_LOGPROBS_H

#include <cstdint>
#include <utility>
#include <vector>

namespace lockstep::rt {

struct TokenLogprobs {
  int32_t token = -1;
  double logprob = 0; ///< Of `token`.
  /// The `top` most likely tokens with their logprobs, most likely first.
  std::vector<std::pair<int32_t, double>> top;
};

/// The logprobs of `token` and of the `top` most likely tokens of a row of
/// `vocab` floats (top is clamped to [0, vocab]). An empty answer (token -1)
/// when vocab <= 0 or the row is null.
TokenLogprobs tokenLogprobs(const float *row, int64_t vocab, int32_t token, int64_t top);

} // namespace lockstep::rt

#endif
