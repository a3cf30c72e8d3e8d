//===- DeviceServing.h - What serving needs of a device ---------*- C++ -*-===//
//
// A ragged step on a device (RaggedStep.h) keeps everything of a request on
// it: the KV cache pools live in the device's memory (PoolMemory), a call's
// inputs are uploaded and its logits downloaded (DeviceMemory), and the new
// K/V rows the call computes are written into the pools there, never read
// back to the host. One implementation: CudaMemory (CudaBackend.h).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_DEVICESERVING_H
#define LOCKSTEP_RUNTIME_DEVICESERVING_H

#include "Exec.h"
#include "KVCache.h"

#include <cstdint>
#include <string>

namespace lockstep::rt {

class DeviceServing : public DeviceMemory, public PoolMemory {
public:
  /// Copies, on the device, element (h, t, d) of `rows` (f32 [heads, tokens,
  /// dim], device memory) to pool[(slots[t] * heads + h) * dim + d]; `slots`
  /// is device memory holding `tokens` i64 pool rows. Queued behind the
  /// call's kernels; finish() waits for it.
  virtual bool scatterRows(const float *rows, float *pool, const int64_t *slots,
                           int64_t tokens, int64_t heads, int64_t dim,
                           std::string &error) = 0;
};

} // namespace lockstep::rt

#endif
