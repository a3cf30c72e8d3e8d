//===- Loaded.h - A served model, loaded and ready to step ------*- C++ -*-===//
#ifndef LOCKSTEP_TOOLS_LOCKSTEP_RUN_LOADED_H
#define LOCKSTEP_TOOLS_LOCKSTEP_RUN_LOADED_H

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Harness/Fuzz.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"
#include "lockstep/Runtime/Backend/Cuda/CudaBackend.h"
#include "lockstep/Runtime/Serving/ServingModel.h"

#include <map>
#include <memory>
#include <string>

namespace lockstep::run {

/// The values of --device.
inline bool isDeviceName(const std::string &d) { return d == "cpu" || d == "cuda"; }

/// An artifact loaded for serving: its step model (createServingModel: ragged
/// or per request), a thread pool for its code, and the KV cache shape it
/// needs (for fuzz, replay, bench). On `cuda` the model's weights and KV
/// cache live in the GPU's memory (`gpu`).
struct Loaded {
  rt::LoadedArtifact artifact;
  rt::CpuModule module;
  std::unique_ptr<rt::CudaMemory> gpu;
  std::unique_ptr<rt::ServingModel> model;
  rt::CacheConfigFn cache;
  std::string device = "cpu";
  /// False with `error` (naming `path`) when it cannot be loaded or served
  /// on `device` ("cpu" or "cuda").
  bool load(const std::string &path, int64_t threads, const std::string &device,
            std::string &error);
  /// Runs the model's code on `threads` threads from now on (a pool of that
  /// size, made once and kept).
  void useThreads(int64_t threads);
  /// Threads for the host's work on each step's rows (sampling and
  /// fingerprints: EngineConfig::rowPool). On cuda, where the model's code
  /// runs on the GPU, a pool of up to 8 threads (fewer on a smaller
  /// machine), made at the first call; on cpu, the pool of the model's code
  /// (useThreads), idle between its calls.
  rt::ThreadPool *rowPool();
  ~Loaded();

private:
  std::map<int64_t, std::unique_ptr<rt::ThreadPool>> pools;
  std::unique_ptr<rt::ThreadPool> rows;
  rt::ThreadPool *current = nullptr; // useThreads'

};

/// Whether two artifacts compute the same model (for a baseline taken from
/// one and schedules from the other): the same inputs, outputs and serving
/// form, and the same weights by name, shape and checksum. `why` says what
/// differs.
bool sameModel(const rt::ArtifactMeta &a, const rt::ArtifactMeta &b, std::string &why);

} // namespace lockstep::run

#endif
