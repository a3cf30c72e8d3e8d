//===- Backend.h - What the runtime needs of a device -----------*- C++ -*-===//
//
// The one interface of the runtime's backends. Both run compiled host code
// (a CpuModule); they differ in where tensors live:
//   - the CPU backend (Backend/Cpu/CpuBackend.h) keeps everything in host
//     memory, which compiled code reads in place: it is what a null
//     DeviceMemory (runGraphViews) and a null PoolMemory (KVCache) mean;
//   - the CUDA backend implements this interface: CudaMemory
//     (Backend/Cuda/CudaBackend.h).
//
// A ragged step on a device (Serving/RaggedStepModel.h) keeps everything of a
// request on it: the KV cache pools live in the device's memory (PoolMemory),
// a call's inputs are uploaded and its logits downloaded (DeviceMemory), and
// the new K/V rows the call computes are written into the pools there, never
// read back to the host (DeviceServing: both, and the scatter of those rows).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_BACKEND_BACKEND_H
#define LOCKSTEP_RUNTIME_BACKEND_BACKEND_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace lockstep::rt {

/// Where a device backend keeps a call's tensors: the entry gets device
/// pointers, inputs are uploaded before it, outputs downloaded after it.
/// Null (the default) runs on the host's memory.
class DeviceMemory {
public:
  virtual ~DeviceMemory() = default;
  /// A copy of `bytes` of host memory on the device, for this call.
  virtual bool upload(const void *host, uint64_t bytes, void *&device,
                      std::string &error) = 0;
  /// Weight `index` on the device, uploaded at its first use and kept.
  virtual bool weight(size_t index, const void *host, uint64_t bytes, void *&device,
                      std::string &error) = 0;
  /// Uninitialized device memory for this call.
  virtual bool allocate(uint64_t bytes, void *&device, std::string &error) = 0;
  virtual bool download(void *host, const void *device, uint64_t bytes,
                        std::string &error) = 0;
  /// Waits for the call's work; reports any error it had.
  virtual bool finish(std::string &error) = 0;
  /// Releases this call's memory (not the weights).
  virtual void endCall() = 0;

  /// Host memory that downloads write at the link's full speed (page-locked),
  /// and the function that frees it; `data` null where the backend has none
  /// or it ran out, and then the caller uses ordinary memory. For the buffers
  /// a caller downloads into call after call (a step's logits): allocating
  /// it is slow, so such buffers are kept and reused.
  struct HostBlock {
    void *data = nullptr;
    void (*release)(void *) = nullptr;
  };
  virtual HostBlock hostBlock(uint64_t bytes) {
    (void)bytes;
    return {};
  }
};

/// The alignment of every pool's first float.
inline constexpr int64_t kPoolAlignment = 64;

/// Where the device pools live. Without one (the default) they are host
/// memory, which the CPU backend's compiled code reads in place; a GPU
/// backend supplies its own, and then the host never touches a pool's
/// floats: pools are zeroed, and blocks copied to and from swap space, by
/// the memory's own operations.
class PoolMemory {
public:
  virtual ~PoolMemory() = default;
  /// `bytes` of zeroed pool memory at a kPoolAlignment boundary, or null
  /// with `error` set.
  virtual float *allocateZeroed(uint64_t bytes, std::string &error) = 0;
  virtual void release(float *pool) = 0;
  /// Copies between pool memory and host memory (swap). False when the copy
  /// fails; the memory keeps the error for its next step to report.
  virtual bool toHost(float *host, const float *pool, uint64_t bytes) = 0;
  virtual bool fromHost(float *pool, const float *host, uint64_t bytes) = 0;
};

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
