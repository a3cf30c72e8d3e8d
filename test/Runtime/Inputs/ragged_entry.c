/*===- ragged_entry.c - A hand-written ragged step for runtime tests ------===//
 *
 * Stands in for a model compiled to the serving ABI (RaggedStepModel.h), so
 * that RaggedStepModel is tested without the compiler: a toy attention over
 * each request's KV cache, read in place from the pools through its block
 * table.
 * The graph (metadata built by test/unit/RaggedStepTest.cpp):
 *
 *   inputs:  ids     i64 [batch, seq]                  serving.token_ids
 *            pid     i32 [batch, seq]                  serving.positions
 *            pos     i64 [seq]                         serving.ragged.positions
 *            starts  i64 [requests + 1]                serving.ragged.seq_starts
 *            tables  i32 [requests, max_blocks]        serving.ragged.block_tables
 *            k_pool  f32 [blocks, block_size, 2, 3]    serving.cache.0 (K of layer 0)
 *            v_pool  f32 [blocks, block_size, 2, 3]    serving.cache.1 (V of layer 0)
 *   outputs: logits  f32 [batch, seq, 5]               serving.logits
 *            k_new   f32 [batch, 2, seq, 3]
 *            v_new   f32 [batch, 2, seq, 3]
 *
 * Token t's key and value rows are functions of its id and position id
 * (ragged_key, ragged_value); its logit j sums, over heads h and positions
 * q = 0 .. its position, dot(key of q, key of t) * value of q at j % 3, plus
 * j. Positions before the request's first token of the step come from the
 * pools, the others from this step's new rows. Tensors are contiguous and
 * row-major (the runtime's ABI), so sizes are read from the descriptors and
 * strides are not. Built with RAGGED_WRITES_POOLS, the step also writes each
 * new row into its slot of the pools, as compiled steps do (the artifact then
 * says serving.ragged.pool_writes = step).
 *===----------------------------------------------------------------------===*/
#include <stdint.h>

#include "ragged_entry.h"

typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[]; /* sizes[rank], then strides[rank] */
} Desc;

static int64_t dimOf(const Desc *d, int i) { return d->sizesAndStrides[i]; }
static void *dataOf(const Desc *d, int64_t elem) {
  return (char *)d->aligned + d->offset * elem;
}

void lockstep_entry(void **args) {
  const Desc *ids = args[0], *pid = args[1], *pos = args[2], *starts = args[3],
             *tables = args[4], *kp = args[5], *vp = args[6], *logits = args[7],
             *kn = args[8], *vn = args[9];
  int64_t T = dimOf(ids, 1), R = dimOf(starts, 0) - 1, MB = dimOf(tables, 1),
          BS = dimOf(kp, 1);
  const int64_t *idv = dataOf(ids, 8), *posv = dataOf(pos, 8), *st = dataOf(starts, 8);
  const int32_t *pidv = dataOf(pid, 4), *tab = dataOf(tables, 4);
  const float *kpool = dataOf(kp, 4), *vpool = dataOf(vp, 4);
  float *out = dataOf(logits, 4), *knew = dataOf(kn, 4), *vnew = dataOf(vn, 4);
  for (int64_t t = 0; t < T; ++t)
    for (int64_t h = 0; h < RAGGED_H; ++h)
      for (int64_t d = 0; d < RAGGED_D; ++d) {
        knew[(h * T + t) * RAGGED_D + d] = ragged_key(idv[t], pidv[t], h, d);
        vnew[(h * T + t) * RAGGED_D + d] = ragged_value(idv[t], h, d);
      }
  for (int64_t r = 0; r < R; ++r) {
    int64_t p0 = posv[st[r]];
    for (int64_t t = st[r]; t < st[r + 1]; ++t)
      for (int64_t j = 0; j < RAGGED_V; ++j) {
        float acc = 0;
        for (int64_t h = 0; h < RAGGED_H; ++h)
          for (int64_t q = 0; q <= posv[t]; ++q) {
            const float *k, *v;
            if (q < p0) {
              int64_t row = (int64_t)tab[r * MB + q / BS] * BS + q % BS;
              k = kpool + (row * RAGGED_H + h) * RAGGED_D;
              v = vpool + (row * RAGGED_H + h) * RAGGED_D;
            } else {
              int64_t tt = st[r] + (q - p0);
              k = knew + (h * T + tt) * RAGGED_D;
              v = vnew + (h * T + tt) * RAGGED_D;
            }
            acc += ragged_dot(k, knew + (h * T + t) * RAGGED_D) * v[j % RAGGED_D];
          }
        out[t * RAGGED_V + j] = acc + (float)j;
      }
  }
#ifdef RAGGED_WRITES_POOLS
  float *kslots = dataOf(kp, 4), *vslots = dataOf(vp, 4);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t t = st[r]; t < st[r + 1]; ++t) {
      int64_t q = posv[t], row = (int64_t)tab[r * MB + q / BS] * BS + q % BS;
      for (int64_t h = 0; h < RAGGED_H; ++h)
        for (int64_t d = 0; d < RAGGED_D; ++d) {
          kslots[(row * RAGGED_H + h) * RAGGED_D + d] = knew[(h * T + t) * RAGGED_D + d];
          vslots[(row * RAGGED_H + h) * RAGGED_D + d] = vnew[(h * T + t) * RAGGED_D + d];
        }
    }
#endif
}
