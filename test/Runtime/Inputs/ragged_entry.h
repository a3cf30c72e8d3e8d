/*===- ragged_entry.h - The toy model of ragged_entry.c -------------------===//
 *
 * Shared by the fixture (C) and its reference in RaggedStepTest.cpp (C++),
 * so that both compute the same floats in the same order.
 *===----------------------------------------------------------------------===*/
#ifndef LOCKSTEP_TEST_RAGGED_ENTRY_H
#define LOCKSTEP_TEST_RAGGED_ENTRY_H

#include <stdint.h>

enum { RAGGED_H = 2, RAGGED_D = 3, RAGGED_V = 5 };

static inline float ragged_key(int64_t id, int32_t pid, int64_t h, int64_t d) {
  return (float)(id % 7 - 3) * 0.25f + (float)(h - d) * 0.125f +
         (float)(pid % 5) * 0.0625f;
}

static inline float ragged_value(int64_t id, int64_t h, int64_t d) {
  return (float)(id % 11) * 0.5f - (float)(d + h);
}

static inline float ragged_dot(const float *a, const float *b) {
  float s = 0;
  for (int64_t d = 0; d < RAGGED_D; ++d)
    s += a[d] * b[d];
  return s;
}

#endif
