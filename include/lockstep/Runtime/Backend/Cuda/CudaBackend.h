//===- CudaBackend.h - Running a CUDA artifact ------------------*- C++ -*-===//
//
// A CUDA artifact's code section is x86-64 host code, like a CPU artifact's,
// with the kernels' PTX embedded. Its entry takes the same memref descriptors
// (Runtime/Exec.h), but every data pointer in them is device memory; the host
// code only computes sizes, allocates and launches, calling:
//   - the launch functions of MLIR's GPU lowering (`mgpuModuleLoadJIT`,
//     `mgpuModuleGetFunction`, `mgpuLaunchKernel`, `mgpuStream*`), which
//     this backend defines and lockstep-run exports: each module is loaded
//     once (lazily, at its first kernel, since the object's constructor
//     registers it while it is being dlopen'ed) and each kernel resolved
//     once; every launch goes to one stream;
//   - `lockstep_device_malloc`, `lockstep_device_aligned_alloc` and
//     `lockstep_device_free` (lockstep-device-alloc), served from device
//     memory by a caching allocator: a freed block is kept for the next
//     request of its size class (four per doubling), so that steps, whose
//     sizes change with their token count, rarely allocate.
// Launch functions return nothing, so a CUDA error is recorded, later
// launches are skipped, and the caller collects it (takeCudaError) after
// the entry returns.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_BACKEND_CUDA_CUDABACKEND_H
#define LOCKSTEP_RUNTIME_BACKEND_CUDA_CUDABACKEND_H

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Runtime/Backend/Backend.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"

#include <map>
#include <string>

namespace lockstep::rt {

/// Loads the host code of a CUDA artifact (target kCudaTarget), after
/// checking that a CUDA driver and GPU are there and that the GPU can run
/// the artifact's `cuda.chip`. The module's kernels are loaded at their
/// first launch.
bool loadCudaModule(const LoadedArtifact &artifact, CpuModule &out, std::string &error);

/// The first CUDA error since the last call (recorded by the launch and
/// allocation hooks), or false; clears it.
bool takeCudaError(std::string &error);
/// Records an error for takeCudaError (the first one since it was taken).
void recordCudaError(const std::string &error);

/// Device memory for runGraphViews: inputs and outputs per call, weights
/// uploaded once per artifact and kept; and for serving (CudaServing.cpp),
/// KV cache pools in device memory and the runtime's own row-scatter kernel
/// (runtime/backend/cuda/scatter_rows.ptx).
class CudaMemory : public DeviceServing {
public:
  ~CudaMemory() override;
  bool upload(const void *host, uint64_t bytes, void *&device, std::string &error) override;
  bool weight(size_t index, const void *host, uint64_t bytes, void *&device,
              std::string &error) override;
  bool allocate(uint64_t bytes, void *&device, std::string &error) override;
  bool download(void *host, const void *device, uint64_t bytes, std::string &error) override;
  bool finish(std::string &error) override;
  void endCall() override;

  float *allocateZeroed(uint64_t bytes, std::string &error) override;
  void release(float *pool) override;
  bool toHost(float *host, const float *pool, uint64_t bytes) override;
  bool fromHost(float *pool, const float *host, uint64_t bytes) override;
  bool scatterRows(const float *rows, float *pool, const int64_t *slots, int64_t tokens,
                   int64_t heads, int64_t dim, std::string &error) override;

private:
  std::vector<void *> perCall_;
  std::map<size_t, void *> weights_;
};

} // namespace lockstep::rt

#endif
