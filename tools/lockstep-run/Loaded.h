//===- Loaded.h - A served model, loaded and ready to step ------*- C++ -*-===//
#ifndef LOCKSTEP_TOOLS_LOCKSTEP_RUN_LOADED_H
#define LOCKSTEP_TOOLS_LOCKSTEP_RUN_LOADED_H

#include "Artifact.h"
#include "CpuBackend.h"
#include "Fuzz.h"
#include "ServingModel.h"
#include "ThreadPool.h"

#include <memory>
#include <string>

namespace lockstep::run {

/// An artifact loaded for serving: its step model (createServingModel: ragged
/// or per request), a thread pool for its code, and the KV cache shape it
/// needs (for fuzz, replay, bench).
struct Loaded {
  rt::LoadedArtifact artifact;
  rt::CpuModule module;
  std::unique_ptr<rt::ServingModel> model;
  std::unique_ptr<rt::ThreadPool> pool;
  rt::CacheConfigFn cache;
  /// False with `error` (naming `path`) when it cannot be loaded or served.
  bool load(const std::string &path, int64_t threads, std::string &error);
  ~Loaded();
};

} // namespace lockstep::run

#endif
