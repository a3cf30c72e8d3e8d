//===- Loaded.cpp - A served model, loaded and ready to step --------------===//
#include "Loaded.h"

using namespace lockstep::rt;
using namespace lockstep::run;

bool Loaded::load(const std::string &path, int64_t threads, std::string &error) {
  if (!loadArtifact(path, artifact, error) || !loadCpuModule(artifact, module, error))
    return false;
  model = createServingModel(artifact, module, error);
  if (!model) {
    error = quoted(path) + ": " + error;
    return false;
  }
  pool = std::make_unique<ThreadPool>((unsigned)threads);
  module.setThreadPool(pool.get());
  ServingModel *m = model.get();
  cache = [m](int64_t bs, int64_t blocks, int64_t host) {
    return m->cacheConfig(bs, blocks, host);
  };
  return true;
}

Loaded::~Loaded() {
  if (pool)
    module.setThreadPool(nullptr);
}
