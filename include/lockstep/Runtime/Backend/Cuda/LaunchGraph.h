//===- LaunchGraph.h - A call's kernels as one CUDA graph -------*- C++ -*-===//
//
// A decode step of a 1e9-parameter decoder is about 1,700 small launches,
// and launching them one by one costs the host more than the GPU spends on
// most of them. So the launches of a call are queued, their arguments copied
// by value, and run when the host next needs the device (a copy, the call's
// end, a free):
//   - a sequence of kernels seen before runs as its cached CUDA graph, after
//     the nodes whose grid or arguments changed are updated in place;
//   - a sequence seen once before becomes a graph (kept, at most
//     kMaxGraphs, the least recently used dropped);
//   - a sequence seen for the first time is launched kernel by kernel.
// Either way the GPU runs the kernels the host code asked for, in its order,
// with its grids and arguments, one after another on the one stream: the
// same work, so the same bits. Only when the host pays for the launches
// changes.
//
// Off (every launch at once, as before) when the driver lacks the graph API,
// with LOCKSTEP_CUDA_GRAPHS=0, and under LOCKSTEP_CUDA_SYNC=1 or the profile,
// which wait for each launch.
//
// A long call is cut into segments: once `segment` launches are queued they
// are flushed as a batch of their own (a graph of their own once seen twice),
// so that the GPU runs the first kernels of a step while the host code still
// makes the launches of the rest. Without it a step costs the host's time
// plus the GPU's; with it, nearer the larger of the two. The segment is
// LOCKSTEP_CUDA_GRAPH_SEGMENT (launches; 0: the whole call, one batch), 64
// by default. The cut changes only when the host hands work to the stream,
// never what runs or in what order.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_BACKEND_CUDA_LAUNCHGRAPH_H
#define LOCKSTEP_RUNTIME_BACKEND_CUDA_LAUNCHGRAPH_H

#include "lockstep/Runtime/Backend/Cuda/CudaDriver.h"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace lockstep::rt {

/// What the queue did, for `lockstep-run bench` and the tests.
struct LaunchGraphStats {
  uint64_t kernels = 0;  // launches asked for
  uint64_t flushes = 0;  // non-empty flushes
  uint64_t direct = 0;   // flushes launched kernel by kernel
  uint64_t built = 0;    // graphs made
  uint64_t replays = 0;  // flushes run as a cached graph
  uint64_t updates = 0;  // nodes updated in place before a replay
  uint64_t segments = 0; // flushes made because a segment was full
  uint64_t segment = 0;  // the segment's length (0: none)
  double queueSeconds = 0; // host time from a batch's first launch to its flush
  double flushSeconds = 0; // host time in flushes (updates, graph launches)
  double waitSeconds = 0;  // host time waiting for the device (copies back, a call's end)
  std::string disabled;  // why graphs are off, if they are
};

/// One launch: its kernel, grid, block, shared memory and arguments (by
/// value, in `LaunchBatch::bytes`).
struct QueuedLaunch {
  CUfunction function;
  unsigned dims[7]; // grid x y z, block x y z, shared memory bytes
  uint32_t firstParam, numParams;
};

/// A sequence of launches.
struct LaunchBatch {
  std::vector<QueuedLaunch> launches;
  std::vector<uint32_t> paramOffset; // into bytes, one per argument
  std::vector<uint32_t> paramSize;
  std::vector<uint8_t> bytes;

  void clear();
  /// Pointers to launch i's arguments, as cuLaunchKernel takes them.
  void pointers(size_t i, std::vector<void *> &out);
  /// Whether launch i here and launch j of `other` have the same grid and
  /// arguments (their kernels being the same).
  bool sameAs(size_t i, const LaunchBatch &other, size_t j) const;
};

class LaunchQueue {
public:
  static constexpr size_t kMaxGraphs = 64;
  static constexpr size_t kDefaultSegment = 64;

  LaunchQueue();
  /// Frees the host side only: at exit the driver may be gone.
  ~LaunchQueue();

  /// Graphs on or off for this process (see above); `why` says why off.
  /// `segment`: launches a batch holds at most (0: no limit).
  void configure(const CudaDriver &d, bool wanted, const std::string &why,
                 size_t segment = kDefaultSegment);
  /// Adds host time spent waiting for the device to the stats.
  void waited(double seconds) { stats_.waitSeconds += seconds; }
  /// Launches now (graphs off) or queues the launch. `params` are
  /// cuLaunchKernel's; their sizes come from cuFuncGetParamInfo.
  bool launch(const CudaDriver &d, CUfunction f, const unsigned dims[7], void **params,
              std::string &error);
  /// Runs what is queued, in order, on d's stream.
  bool flush(const CudaDriver &d, std::string &error);
  const LaunchGraphStats &stats() const { return stats_; }
  /// Destroys the cached graphs (before the driver goes away).
  void clear(const CudaDriver &d);

private:
  struct Graph;
  bool sizesOf(const CudaDriver &d, CUfunction f, const std::vector<uint32_t> *&sizes,
               std::string &error);
  bool launchDirect(const CudaDriver &d, LaunchBatch &batch, std::string &error);
  bool build(const CudaDriver &d, uint64_t key);
  bool replay(const CudaDriver &d, Graph &g, std::string &error);
  void drop(const CudaDriver &d, Graph &g);
  void off(const CudaDriver &d, const std::string &why);

  bool on_ = false;
  size_t segment_ = 0;
  std::chrono::steady_clock::time_point firstQueued_;
  LaunchBatch pending_;
  std::unordered_map<CUfunction, std::vector<uint32_t>> sizes_;
  std::unordered_map<uint64_t, std::unique_ptr<Graph>> graphs_;
  std::unordered_map<uint64_t, uint32_t> seen_;
  uint64_t clock_ = 0;
  LaunchGraphStats stats_;
};

} // namespace lockstep::rt

#endif
