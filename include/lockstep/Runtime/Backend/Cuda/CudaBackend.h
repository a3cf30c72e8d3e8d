//===- CudaBackend.h - Running a CUDA artifact ------------------*- C++ -*-===//
//
// A CUDA artifact's host code (its CUDA code section) is x86-64 code, like a
// CPU artifact's; the kernels' PTX is in the kernels section, and every
// launch site in the launch plan (lockstep/Artifact/Kernels.h). Its entry
// takes the same memref descriptors (Runtime/Exec.h), but every data pointer
// in them is device memory; the host code only computes sizes, allocates and
// launches, calling:
//   - the launch functions of MLIR's GPU lowering (`mgpuModuleLoadJIT`,
//     `mgpuModuleGetFunction`, `mgpuLaunchKernel`, `mgpuStream*`), which
//     this backend defines and lockstep-run exports: the object's
//     constructors register its modules while it is dlopen'ed, and
//     loadCudaModule then loads each module and resolves each kernel of the
//     launch plan, once; a launch of a kernel the plan does not name is an
//     error; every launch goes to one stream;
//   - `lockstep_device_malloc`, `lockstep_device_aligned_alloc` and
//     `lockstep_device_free` (lockstep-device-alloc), served from the call's
//     arena (DeviceArena.h), and past it from a caching allocator (a freed
//     block is kept for the next request of its size class, four per
//     doubling).
// Launches are queued and run as CUDA graphs when the host next needs the
// device (LaunchGraph.h).
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
#include "lockstep/Runtime/Backend/Cuda/DeviceArena.h"
#include "lockstep/Runtime/Backend/Cuda/LaunchGraph.h"

#include <map>
#include <string>

namespace lockstep::rt {

/// Loads the host code of a CUDA artifact (target kCudaTarget), after
/// checking that a CUDA driver and GPU are there and that the GPU can run
/// the artifact's `cuda.chip`, and loads the kernel modules and resolves the
/// kernels of its launch plan.
bool loadCudaModule(const LoadedArtifact &artifact, CpuModule &out, std::string &error);

/// The first CUDA error since the last call (recorded by the launch and
/// allocation hooks), or false; clears it.
bool takeCudaError(std::string &error);
/// Records an error for takeCudaError (the first one since it was taken).
void recordCudaError(const std::string &error);

/// Launches a kernel on the backend's stream after every launch before it,
/// the host code's included: queued as theirs are (LaunchGraph.h).
bool cudaLaunch(CUfunction f, const unsigned dims[7], void **params, std::string &error);
/// Runs the queued launches. Whatever the host does to device memory
/// (copies, frees) comes after this.
bool flushCudaLaunches(std::string &error);
/// What the launch queue did so far in this process.
LaunchGraphStats cudaLaunchStats();

/// A call's arena (DeviceArena.h): one device block and its layout. Its
/// methods are called with the backend's lock held.
class CudaArena {
public:
  CudaArena() = default;
  CudaArena(const CudaArena &) = delete;
  CudaArena &operator=(const CudaArena &) = delete;
  ~CudaArena();
  /// Device memory for the call, or null when the arena cannot fit it.
  void *allocate(size_t bytes);
  /// False when `ptr` is not the arena's.
  bool release(void *ptr);
  /// A block the call took from the device allocator instead, and its free.
  void overflowed(uint64_t bytes);
  void overflowFreed(uint64_t bytes);
  /// Frees everything the call took; when the call did not fit, the arena
  /// grows to its peak (a quarter more) for the next call.
  void endCall();
  uint64_t capacity() const { return layout_.capacity(); }
  int growths() const { return growths_; }

private:
  uint64_t base_ = 0; // the device block (a CUdeviceptr)
  ArenaLayout layout_;
  uint64_t demand_ = 0, overflowLive_ = 0;
  int growths_ = 0;
};

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
  /// cuMemHostAlloc'd memory (page-locked), freed by cuMemFreeHost.
  HostBlock hostBlock(uint64_t bytes) override;

  float *allocateZeroed(uint64_t bytes, std::string &error) override;
  void release(float *pool) override;
  bool toHost(float *host, const float *pool, uint64_t bytes) override;
  bool fromHost(float *pool, const float *host, uint64_t bytes) override;
  bool scatterRows(const float *rows, float *pool, const int64_t *slots, int64_t tokens,
                   int64_t heads, int64_t dim, std::string &error) override;

private:
  bool copyIn(const void *host, uint64_t bytes, void *device, std::string &error);

  std::vector<void *> perCall_;
  std::map<size_t, void *> weights_;
  /// Inputs, outputs and intermediates of each call (weights and pools are
  /// blocks of their own).
  CudaArena arena_;
};

} // namespace lockstep::rt

#endif
