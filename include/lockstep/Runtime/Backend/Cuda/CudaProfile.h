//===- CudaProfile.h - Where a CUDA run's time goes -------------*- C++ -*-===//
//
// LOCKSTEP_CUDA_PROFILE=1 makes every kernel launch wait for its kernel and
// sums the wall time of each kernel (by name), of module loads (the PTX is
// compiled by the driver at the first launch of a module's kernel), of the
// per-call waits (finish), and counts the device allocations, those that
// went to cuMemAlloc, and the growths of the calls' arenas. The table goes
// to stderr when the process exits. Profiling serializes the stream, so the
// total is an upper bound on an unprofiled run's; the split between kernels
// and the host is what it is for.
//
// LOCKSTEP_CUDA_PROFILE=events times each kernel on the device instead: a
// CUDA event is recorded before and after each launch, launches do not wait,
// and the events are read when the call's kernels have been waited for. A
// kernel's time is then its own, without the launch's cost, and the table
// also says how long the device sat idle between kernels (the launch gaps).
// Graphs are off in both modes (a graph's kernels cannot be timed one by
// one).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_BACKEND_CUDA_CUDAPROFILE_H
#define LOCKSTEP_RUNTIME_BACKEND_CUDA_CUDAPROFILE_H

#include <chrono>
#include <cstdint>
#include <string>

#include "lockstep/Runtime/Backend/Cuda/CudaDriver.h"

namespace lockstep::rt::cuda_profile {

/// Whether LOCKSTEP_CUDA_PROFILE is 1 or events (read once).
bool enabled();
/// Whether LOCKSTEP_CUDA_PROFILE=events and driver D can record events:
/// kernels are timed by events, and launches do not wait.
bool timesByEvents(const CudaDriver &d);
/// Records the event that starts a kernel's time (timesByEvents).
void beforeKernel(const CudaDriver &d);
/// Records the event that ends it, for kernel NAME of THREADS threads.
void afterKernel(const CudaDriver &d, const std::string &name, uint64_t threads);
/// Reads the events recorded since the last call into the kernels' times.
/// Call it after the stream was waited for, when every event has happened.
void readKernelEvents(const CudaDriver &d);

using Clock = std::chrono::steady_clock;

/// Adds one launch of kernel NAME with GRID·BLOCK threads that took SECONDS.
void kernel(const std::string &name, uint64_t threads, double seconds);
/// Adds a module load (its PTX compiled by the driver).
void moduleLoad(double seconds);
/// Adds a wait for a call's kernels.
void finish(double seconds);
/// Adds a device allocation; MISS when it went to cuMemAlloc.
void allocation(bool miss);
/// Adds an allocation from a call's arena.
void arenaAllocation();
/// Adds a growth of a call's arena to CAPACITY bytes.
void arenaGrowth(uint64_t capacity);
/// Adds a host↔device copy of BYTES.
void copy(uint64_t bytes, double seconds);

inline double since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

} // namespace lockstep::rt::cuda_profile

#endif
