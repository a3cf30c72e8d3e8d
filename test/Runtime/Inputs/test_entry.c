/*===- test_entry.c - A hand-written lockstep_entry for runtime tests -----===//
 *
 * Stands in for compiled code, so that the artifact, the loader and exec are
 * tested without the compiler. The graph (metadata built by the tests):
 *
 *   inputs:  x    f32 [batch, 4]
 *            past f32 [batch, past, 4]
 *            mask i64 [batch, past + 1]
 *   weights: w    f32 [4]
 *            b    f32 [4]
 *   outputs: y       f32 [batch, 4]            = (x + w) + b
 *            present f32 [batch, past + 1, 4]  = concat(past, y) on dim 1
 *            count   i64 [batch]               = sum of mask over dim 1
 *
 * Every access goes through the descriptors' sizes and strides, as compiled
 * code does. Built three ways: the default; LOCKSTEP_TEST_VARIANT (y = 42, to
 * tell two loaded modules apart); LOCKSTEP_TEST_NO_ENTRY (no entry symbol).
 *===----------------------------------------------------------------------===*/
#include <stdint.h>

typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizesAndStrides[]; /* sizes[rank], then strides[rank] */
} Desc;

static int64_t dimOf(const Desc *d, int i) { return d->sizesAndStrides[i]; }
static int64_t strideOf(const Desc *d, int rank, int i) {
  return d->sizesAndStrides[rank + i];
}
static float *f32(const Desc *d) { return (float *)d->aligned + d->offset; }
static int64_t *i64(const Desc *d) { return (int64_t *)d->aligned + d->offset; }

#ifdef LOCKSTEP_TEST_NO_ENTRY
void not_the_entry(void **args) { (void)args; }
#else
void lockstep_entry(void **args) {
  const Desc *x = args[0], *past = args[1], *mask = args[2];
  const Desc *w = args[3], *b = args[4];
  const Desc *y = args[5], *present = args[6], *count = args[7];
  int64_t batch = dimOf(x, 0), n = dimOf(x, 1), pastLen = dimOf(past, 1);
  for (int64_t i = 0; i < batch; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float v = f32(x)[i * strideOf(x, 2, 0) + j * strideOf(x, 2, 1)];
      v = v + f32(w)[j * strideOf(w, 1, 0)];
      v = v + f32(b)[j * strideOf(b, 1, 0)];
#ifdef LOCKSTEP_TEST_VARIANT
      v = 42.0f;
#endif
      f32(y)[i * strideOf(y, 2, 0) + j * strideOf(y, 2, 1)] = v;
      for (int64_t t = 0; t <= pastLen; ++t)
        f32(present)[i * strideOf(present, 3, 0) + t * strideOf(present, 3, 1) +
                     j * strideOf(present, 3, 2)] =
            t < pastLen ? f32(past)[i * strideOf(past, 3, 0) +
                                    t * strideOf(past, 3, 1) +
                                    j * strideOf(past, 3, 2)]
                        : v;
    }
    int64_t sum = 0;
    for (int64_t t = 0; t < dimOf(mask, 1); ++t)
      sum += i64(mask)[i * strideOf(mask, 2, 0) + t * strideOf(mask, 2, 1)];
    i64(count)[i * strideOf(count, 1, 0)] = sum;
  }
}
#endif
