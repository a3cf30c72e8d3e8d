//===- lockstep-rowcheck.cpp - Row r alone against row r among M rows -----===//
//
// The batch-invariance check of one compiled graph: every output row must
// not depend on the rows computed with it.
//
//   lockstep-rowcheck MODEL.lsa --rows SYM [--max-rows N] [--bind SYM=V]...
//                     [--seed S] [--threads T]
//
// Inputs whose first dim is the symbol SYM are row inputs: a pool of N rows
// of random values in [-1, 1) is drawn (seeded), and the other inputs are
// drawn once. Row r is first computed alone (M = 1). Then for every M in
// 1..N the first M rows are computed together, and each output row r < M
// is compared with its M = 1 bytes (memcmp). Prints the rows compared and
// the rows that differ, with the first difference. Exit status 0 when the
// comparisons ran (whatever they found), 1 on an error.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Artifact/ArtifactMeta.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"
#include "lockstep/Runtime/Exec.h"

#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace lockstep;
using namespace lockstep::rt;

namespace {

int fail(const std::string &msg) {
  std::fprintf(stderr, "lockstep-rowcheck: %s\n", msg.c_str());
  return 1;
}

struct Input {
  const TensorSpec *spec;
  bool perRow = false;
  std::vector<int64_t> shape; // with the rows dim at its pool size
  std::vector<float> values;
  int64_t rowElements = 0;
};

} // namespace

int main(int argc, char **argv) {
  std::string model, rowsSym;
  int64_t maxRows = 257, threads = 1;
  uint64_t seed = 1;
  std::map<std::string, int64_t> binds;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "lockstep-rowcheck: %s needs a value\n", a.c_str());
        std::exit(1);
      }
      return argv[++i];
    };
    if (a == "--rows")
      rowsSym = next();
    else if (a == "--max-rows")
      maxRows = std::stoll(next());
    else if (a == "--seed")
      seed = std::stoull(next());
    else if (a == "--threads")
      threads = std::stoll(next());
    else if (a == "--bind") {
      std::string b = next();
      size_t eq = b.find('=');
      if (eq == std::string::npos)
        return fail("--bind takes SYM=VALUE, not '" + b + "'");
      binds[b.substr(0, eq)] = std::stoll(b.substr(eq + 1));
    } else if (a == "--help" || a == "-h") {
      std::printf("usage: lockstep-rowcheck MODEL.lsa --rows SYM [--max-rows N] "
                  "[--bind SYM=V]... [--seed S] [--threads T]\n");
      return 0;
    } else if (!a.empty() && a[0] == '-')
      return fail("unknown option '" + a + "'");
    else
      model = a;
  }
  if (model.empty() || rowsSym.empty() || maxRows < 1 || threads < 1)
    return fail("usage: lockstep-rowcheck MODEL.lsa --rows SYM [--max-rows N] ...");

  LoadedArtifact artifact;
  CpuModule module;
  std::string error;
  if (!loadArtifact(model, artifact, error) || !loadCpuModule(artifact, module, error))
    return fail(error);
  ThreadPool pool((unsigned)threads);
  module.setThreadPool(&pool);

  // Draw the inputs: row inputs for maxRows rows.
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<Input> inputs;
  std::map<std::string, int64_t> values = binds;
  values[rowsSym] = maxRows;
  for (const TensorSpec &t : artifact.meta().inputs) {
    if (t.dtype != "f32")
      return fail("input '" + t.name + "' is " + t.dtype + "; only f32 inputs are drawn");
    Input in{&t};
    int64_t n = 1;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      auto e = parseDim(t.dims[d]);
      auto v = e ? e->evaluate(values) : std::nullopt;
      if (!v)
        return fail("input '" + t.name + "' dim '" + t.dims[d] + "' is not bound (use --bind)");
      if (d == 0 && e->asSymbol() == rowsSym)
        in.perRow = true;
      in.shape.push_back(*v);
      n *= *v;
    }
    in.rowElements = in.perRow ? n / maxRows : n;
    in.values.resize(n);
    for (float &x : in.values)
      x = dist(rng);
    inputs.push_back(std::move(in));
  }
  for (const TensorSpec &t : artifact.meta().outputs) {
    auto e = t.dims.empty() ? std::nullopt : parseDim(t.dims[0]);
    if (!e || e->asSymbol() != rowsSym)
      return fail("output '" + t.name + "' does not have the rows '" + rowsSym + "' as its first dim");
  }

  // Runs rows [first, first + m) and returns each output's bytes.
  auto run = [&](int64_t first, int64_t m, NamedArrays &outs) -> bool {
    std::map<std::string, NpyArray> feed;
    for (const Input &in : inputs) {
      NpyArray a;
      a.dtype = "f4";
      a.shape = in.shape;
      const float *src = in.values.data();
      size_t count = in.values.size();
      if (in.perRow) {
        a.shape[0] = m;
        src += first * in.rowElements;
        count = m * in.rowElements;
      }
      a.data.resize(count * 4);
      std::memcpy(a.data.data(), src, count * 4);
      feed[in.spec->name] = std::move(a);
    }
    outs.clear();
    return runGraph(artifact, module, feed, outs, error);
  };

  std::vector<NamedArrays> alone(maxRows);
  for (int64_t r = 0; r < maxRows; ++r)
    if (!run(r, 1, alone[r]))
      return fail(error);
  int64_t compared = 0, differ = 0, runs = maxRows;
  std::string first;
  for (int64_t m = 1; m <= maxRows; ++m) {
    NamedArrays outs;
    if (!run(0, m, outs))
      return fail(error);
    ++runs;
    for (int64_t r = 0; r < m; ++r) {
      bool same = true;
      for (size_t o = 0; o < outs.size(); ++o) {
        const std::vector<uint8_t> &ref = alone[r][o].second.data;
        size_t rowBytes = ref.size();
        const uint8_t *got = outs[o].second.data.data() + r * rowBytes;
        if (std::memcmp(got, ref.data(), rowBytes) != 0) {
          same = false;
          if (first.empty()) {
            size_t k = 0;
            while (got[k] == ref[k])
              ++k;
            first = "output '" + outs[o].first + "' row " + std::to_string(r) +
                    " of M = " + std::to_string(m) + " differs from M = 1 at byte " +
                    std::to_string(k % rowBytes);
          }
        }
      }
      ++compared;
      differ += !same;
    }
  }
  std::printf("%lld runs, %lld rows compared, %lld rows differ\n", (long long)runs,
              (long long)compared, (long long)differ);
  if (!first.empty())
    std::printf("first difference: %s\n", first.c_str());
  module.setThreadPool(nullptr);
  return 0;
}
