//===- Info.cpp - lockstep-run info: what an artifact holds ----------------===//
#include "Commands.h"

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Text/Tokenizer.h"

#include <cstdio>
#include <map>
#include <set>

using namespace lockstep::rt;

namespace {

std::string sizes(const std::array<int64_t, 3> &v) {
  std::string s;
  for (int64_t x : v)
    s += (s.empty() ? "" : "x") + (x == KernelLaunch::kDynamic ? "?" : std::to_string(x));
  return s;
}

} // namespace

int lockstep::run::runInfo(int argc, char **argv) {
  std::string model;
  bool plan = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--launch-plan")
      plan = true;
    else if (!a.empty() && a[0] != '-' && model.empty())
      model = a;
    else {
      std::fprintf(stderr, "lockstep-run info: unexpected argument '%s' (see lockstep-run "
                           "info --help)\n", a.c_str());
      return 2;
    }
  }
  if (model.empty()) {
    std::fprintf(stderr, "lockstep-run info: give MODEL.lsa (see lockstep-run info --help)\n");
    return 2;
  }
  LoadedArtifact a;
  std::string error;
  if (!loadArtifact(model, a, error)) {
    std::fprintf(stderr, "lockstep-run info: %s\n", error.c_str());
    return 1;
  }
  const ArtifactMeta &m = a.meta();
  std::printf("artifact  %s (format %u, checksums verified)\n", model.c_str(),
              kArtifactFormatVersion);
  std::printf("producer  %s\n", m.producer.c_str());
  for (const std::string &t : targetsOf(m)) {
    std::string cpuCode = std::to_string(a.code().size) + " bytes of code";
    if (a.codeV4().size)
      cpuCode += " (cpu_level), " + std::to_string(a.codeV4().size) + " bytes of " +
                 kLevelV4 + " code (the runtime runs it where the CPU has it: " +
                 (cpuSupportsLevel(kLevelV4).value_or(false) ? "here" : "not here") + ")";
    std::string what = t == kCpuTarget ? cpuCode
                                       : std::to_string(a.cudaCode().size) +
                                             " bytes of host code, " +
                                             std::to_string(a.kernels().size()) +
                                             " kernel modules, " +
                                             std::to_string(a.launchPlan().size()) +
                                             " launch sites";
    std::printf("target    %s: %s\n", t.c_str(), what.c_str());
  }
  for (const TensorSpec &t : m.inputs)
    std::printf("input     %s: %s %s\n", t.name.c_str(), t.dtype.c_str(), dimsText(t.dims).c_str());
  for (const TensorSpec &t : m.outputs)
    std::printf("output    %s: %s %s\n", t.name.c_str(), t.dtype.c_str(), dimsText(t.dims).c_str());
  uint64_t embedded = 0, external = 0;
  for (const WeightSpec &w : m.weights)
    (w.embedded ? embedded : external) += w.length;
  std::printf("weights   %zu tensors: %llu bytes embedded, %llu external\n", m.weights.size(),
              (unsigned long long)embedded, (unsigned long long)external);
  for (const auto &[k, v] : m.properties)
    std::printf("property  %s = %s\n", k.c_str(), v.c_str());
  if (!a.tokenizerJson().empty()) {
    std::string why;
    auto tok = lockstep::text::Tokenizer::fromJson(a.tokenizerJson(), why);
    if (tok)
      std::printf("tokenizer tokenizer.json, %zu bytes: vocab %zu, bos %s, eos %s\n",
                  a.tokenizerJson().size(), tok->vocabSize(),
                  tok->bosId() ? std::to_string(*tok->bosId()).c_str() : "none",
                  tok->eosId() ? std::to_string(*tok->eosId()).c_str() : "none");
    else
      std::printf("tokenizer tokenizer.json, %zu bytes: refused: %s\n",
                  a.tokenizerJson().size(), why.c_str());
  }
  if (!a.launchPlan().empty()) {
    std::set<std::pair<std::string, std::string>> kernels;
    size_t dynamic = 0;
    for (const KernelLaunch &l : a.launchPlan()) {
      kernels.insert({l.module, l.function});
      for (int i = 0; i < 3; ++i)
        dynamic += l.grid[i] == KernelLaunch::kDynamic;
    }
    std::printf("launches  %zu sites of %zu kernels; %zu grid sizes computed per step\n",
                a.launchPlan().size(), kernels.size(), dynamic);
  }
  if (plan)
    for (const KernelLaunch &l : a.launchPlan())
      std::printf("launch    %s::%s grid %s block %s node %s\n", l.module.c_str(),
                  l.function.c_str(), sizes(l.grid).c_str(), sizes(l.block).c_str(),
                  l.node.c_str());
  return 0;
}
