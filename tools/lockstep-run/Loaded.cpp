//===- Loaded.cpp - A served model, loaded and ready to step --------------===//
#include "Loaded.h"
#include "lockstep/Artifact/ServingKeys.h"

#include <algorithm>
#include <thread>

using namespace lockstep::rt;
using namespace lockstep::run;
namespace K = lockstep::serving_keys;

bool Loaded::load(const std::string &path, int64_t threads, const std::string &on,
                  std::string &error) {
  device = on;
  bool cuda = device == "cuda";
  if (!loadArtifact(path, artifact, error) ||
      !(cuda ? loadCudaModule(artifact, module, error) : loadCpuModule(artifact, module, error)))
    return false;
  if (cuda)
    gpu = std::make_unique<CudaMemory>();
  model = createServingModel(artifact, module, error, gpu.get());
  if (!model) {
    error = quoted(path) + ": " + error;
    return false;
  }
  useThreads(threads);
  cache = cacheConfigOf(*model);
  return true;
}

void Loaded::useThreads(int64_t threads) {
  std::unique_ptr<ThreadPool> &p = pools[threads];
  if (!p)
    p = std::make_unique<ThreadPool>((unsigned)threads);
  current = p.get();
  if (module)
    module.setThreadPool(p.get());
}

ThreadPool *Loaded::rowPool() {
  if (device != "cuda")
    return current;
  if (!rows)
    rows = std::make_unique<ThreadPool>(std::clamp(std::thread::hardware_concurrency(), 1u, 8u));
  return rows.get();
}

Loaded::~Loaded() {
  if (module)
    module.setThreadPool(nullptr);
}

namespace {

bool sameSpecs(const std::vector<TensorSpec> &a, const std::vector<TensorSpec> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].name != b[i].name || a[i].dtype != b[i].dtype || a[i].dims != b[i].dims)
      return false;
  return true;
}

} // namespace

bool lockstep::run::sameModel(const ArtifactMeta &a, const ArtifactMeta &b,
                              std::string &why) {
  if (!sameSpecs(a.inputs, b.inputs) || !sameSpecs(a.outputs, b.outputs)) {
    why = "their inputs or outputs differ";
    return false;
  }
  auto servingProps = [](const ArtifactMeta &m) {
    std::vector<std::pair<std::string, std::string>> p;
    for (const auto &kv : m.properties)
      if (kv.first.rfind(K::kPrefix, 0) == 0)
        p.push_back(kv);
    return p;
  };
  if (servingProps(a) != servingProps(b)) {
    why = "their serving forms differ";
    return false;
  }
  if (a.weights.size() != b.weights.size()) {
    why = "they have different weights";
    return false;
  }
  for (size_t i = 0; i < a.weights.size(); ++i) {
    const WeightSpec &x = a.weights[i], &y = b.weights[i];
    if (x.name != y.name || x.dtype != y.dtype || x.shape != y.shape ||
        x.checksum != y.checksum) {
      why = "weight " + quoted(x.name) + " differs";
      return false;
    }
  }
  return true;
}
