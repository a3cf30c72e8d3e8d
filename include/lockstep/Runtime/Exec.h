//===- Exec.h - Running an artifact's graph once ----------------*- C++ -*-===//
//
// The engine of `lockstep-run exec`: no serving, no KV cache, one call of the
// entry point with the graph's own inputs and outputs.
//
// Two forms: runGraph takes named .npy arrays (copied to aligned buffers) and
// returns .npy arrays; runGraphViews, which runGraph is built on, takes
// borrowed pointers in metadata order and copies nothing, so that a step
// model can hand compiled code its KV cache pools directly.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_EXEC_H
#define LOCKSTEP_RUNTIME_EXEC_H

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Runtime/Backend/Backend.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Npy.h"

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::rt {

/// Outputs in metadata order.
using NamedArrays = std::vector<std::pair<std::string, NpyArray>>;

/// Checks `inputs` against the artifact (every input given and no other, each
/// with the .npy dtype of dtypeToNpy() and the right rank), derives the
/// symbol values from the input shapes and checks every input dim against
/// its expression, allocates the outputs at the sizes their dims evaluate
/// to, and calls the entry of `module` (the artifact's code) once. On failure
/// returns false and sets `error` to one line.
bool runGraph(const LoadedArtifact &artifact, const CpuModule &module,
              const std::map<std::string, NpyArray> &inputs,
              NamedArrays &outputs, std::string &error,
              class DeviceMemory *device = nullptr);

/// Compiled code may assume this alignment of every pointer it gets.
inline constexpr uintptr_t kMinTensorAlignment = 16;

/// A borrowed input tensor: contiguous row-major elements of artifact dtype
/// `dtype` ("f32", "i64", ...) with `shape`, at an address aligned to
/// kMinTensorAlignment. `data` may be null only when the tensor is empty.
/// Compiled code only reads it. With a DeviceMemory, `onDevice` says that
/// `data` is already device memory (a KV cache pool): it is handed over as
/// it is instead of uploaded.
struct TensorView {
  const void *data = nullptr;
  std::string dtype;
  std::vector<int64_t> shape;
  bool onDevice = false;
};

/// An output tensor in a runtime-owned, zero-initialized, 64-byte aligned
/// buffer. runGraphViews reuses a buffer that is large enough, so a caller
/// that keeps its outputs from call to call does not allocate every call.
class OutputBuffer {
public:
  const std::vector<int64_t> &shape() const { return shape_; }
  uint64_t bytes() const { return bytes_; }
  const void *data() const { return ptr_.get(); }
  template <typename T> const T *as() const {
    return static_cast<const T *>(ptr_.get());
  }

private:
  friend struct ExecAccess; // Exec.cpp sets the buffers
  struct Free {
    void (*release)(void *); // null (as value-initialized): std::free
    void operator()(void *p) const { release ? release(p) : std::free(p); }
  };
  std::unique_ptr<void, Free> ptr_;
  uint64_t capacity_ = 0, bytes_ = 0;
  std::vector<int64_t> shape_;
};

/// With a DeviceMemory: the outputs whose `keep` is set stay on the device
/// (their OutputBuffer has the shape and no bytes) and `at` gets their
/// device pointers; they, and the call's other memory, live until the
/// caller's `device->endCall()`, which runGraphViews then leaves to it.
struct KeptOutputs {
  std::vector<bool> keep; ///< Per output, in metadata order.
  std::vector<void *> at; ///< Set per output kept.
  /// The other outputs are downloaded into page-locked host memory
  /// (DeviceMemory::hostBlock), slow to allocate but fast to fill: for a
  /// caller that keeps its OutputBuffers from call to call.
  bool pinned = false;
};

/// Runs the graph once on `inputs`, one per artifact input in metadata
/// order, without copying them: checks each view's dtype (the artifact's),
/// rank, alignment and data pointer, derives the symbol values from the
/// shapes and checks every input dim (the messages of runGraph), and leaves
/// the outputs, in metadata order, in `outputs` (resized to the artifact's
/// output count), every NaN of a float output canonical (docs/numerics.md).
/// On failure returns false and sets `error` to one line.
bool runGraphViews(const LoadedArtifact &artifact, const CpuModule &module,
                   const std::vector<TensorView> &inputs,
                   std::vector<OutputBuffer> &outputs, std::string &error,
                   DeviceMemory *device = nullptr, KeptOutputs *kept = nullptr);

} // namespace lockstep::rt

#endif
