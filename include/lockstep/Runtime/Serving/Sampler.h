//===- Sampler.h - Greedy and seeded sampling of the next token -*- C++ -*-===//
//
// A sampled token must be as invariant as the logits it comes from: the same
// logits row, request seed and position give the same token, whatever else ran
// in the step and whatever the schedule was. So:
//
// - Greedy (temperature <= 0): argmax, the lowest index wins a tie. NaN never
//   wins: NaN ranks below every number, -inf included (only when every logit
//   is NaN does index 0 come out, by the tie-break).
// - Seeded sampling: the one uniform draw comes from Philox-4x32-10 (Salmon et
//   al., "Parallel random numbers: as easy as 1, 2, 3", SC'11), a counter-based
//   generator: key = the 64-bit request seed (low word first), counter =
//   (position low word, position high word, 0, 0). The first two output words
//   make a 53-bit uniform in [0, 1). No state is carried between calls, so the
//   draw for a position does not depend on what was sampled before or when.
// - The candidates are ordered by logit descending, index ascending on ties
//   (a strict total order, so the order is unique); NaN logits are dropped.
//   top-k keeps the first k; probabilities are softmax(logit / temperature)
//   computed in float64 in that order; top-p keeps the shortest prefix whose
//   mass reaches topP of the total (at least one token); inverse CDF: the
//   first kept candidate whose running mass exceeds u * (kept mass).
//
// The softmax uses the C library's float64 exp. That is exact enough that a
// different libm could change a token only when the draw falls within an ulp
// of a boundary of the cumulative mass; within one build it is deterministic.
//
// `position` is the absolute position (0-based) that the sampled token will
// take in its sequence: prompt length + number of tokens generated before it.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_SAMPLER_H
#define LOCKSTEP_RUNTIME_SERVING_SAMPLER_H

#include <array>
#include <cstdint>
#include <string>

namespace lockstep::rt {

struct SamplingParams {
  float temperature = 0; ///< <= 0: greedy.
  int topK = 0;          ///< <= 0: off.
  float topP = 1;        ///< In (0, 1]; 1: off.
  uint64_t seed = 0;
};

/// False with a reason when the params are not usable (a NaN or infinite
/// temperature, topP not in (0, 1], a negative topK).
bool validateSamplingParams(const SamplingParams &params, std::string &error);

/// Philox-4x32-10 of one counter block under one key.
std::array<uint32_t, 4> philox4x32_10(std::array<uint32_t, 4> counter,
                                      std::array<uint32_t, 2> key);

/// The uniform draw in [0, 1) for (seed, position).
double sampleUniform(uint64_t seed, int64_t position);

/// Greedy argmax under the tie-break and NaN rule above; -1 when vocab <= 0.
int32_t argmax(const float *logits, int64_t vocab);

/// The token for a logits row of `vocab` floats; -1 when vocab <= 0 or
/// logits is null. Params outside their range are treated as the nearest
/// valid ones (validate them first to reject instead).
int32_t sample(const float *logits, int64_t vocab, const SamplingParams &params,
               int64_t position);

} // namespace lockstep::rt

#endif
