//===- math_exhaustive.cpp - Every fp32 input through a compiled function -===//
//
// lockstep-math-exhaustive MODEL.lsa FUNC [--stride N] [--threads N]
//
// Runs the one-input artifact MODEL.lsa (a single elementwise op over a 1-D
// dynamic tensor "x" -> "z", as bench/math_ulp.py builds them) on every
// N-th fp32 bit pattern (N = 1: all 2^32), in chunks, through the runtime's
// runGraph (the code of `lockstep-run exec`), and compares each result with
// FUNC computed in double precision by C's libm:
//
//   ulp error = |y - ref| / ulp(ref rounded to fp32), ulp(0 or subnormal) =
//   2^-149; where ref is NaN, +-inf or +-0 the result must be the same (NaN,
//   or the same value and sign); where ref rounds to +-inf, that infinity.
//
// Prints one line: points, max ulp against the double and against the
// fp32-rounded reference with the input where it occurs, and the count of
// special-value mismatches. FUNC: exp log tanh sigmoid erf sin cos rsqrt.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"
#include "lockstep/Runtime/Exec.h"
#include "lockstep/Runtime/Npy.h"

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

using namespace lockstep::rt;

namespace {

double reference(const std::string &f, double x) {
  if (f == "exp") return std::exp(x);
  if (f == "log") return std::log(x);
  if (f == "tanh") return std::tanh(x);
  if (f == "sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (f == "erf") return std::erf(x);
  if (f == "sin") return std::sin(x);
  if (f == "cos") return std::cos(x);
  return 1.0 / std::sqrt(x); // rsqrt
}

struct Stats {
  double e64 = 0, e32 = 0;
  float at = 0;
  uint64_t bad = 0;
  float firstBad = 0;
};

void compare(const std::string &f, const float *x, const float *y, size_t n, Stats &s) {
  for (size_t i = 0; i < n; ++i) {
    double ref = reference(f, x[i]), yv = y[i];
    bool ok = true;
    double e64 = 0, e32 = 0;
    if (std::isnan(ref)) {
      ok = std::isnan(yv);
    } else if (std::isinf(ref) || ref == 0) {
      ok = yv == ref && std::signbit(yv) == std::signbit(ref);
    } else {
      float r32 = float(ref);
      if (std::isinf(r32)) {
        ok = yv == double(r32);
      } else if (std::isnan(yv) || std::isinf(yv)) {
        e64 = e32 = INFINITY;
      } else {
        float a = std::fabs(r32);
        double ulp = a < FLT_MIN ? std::ldexp(1.0, -149)
                     : a == FLT_MAX ? std::ldexp(1.0, 104)
                                    : double(std::nextafter(a, INFINITY)) - a;
        e64 = std::fabs(yv - ref) / ulp;
        e32 = std::fabs(yv - double(r32)) / ulp;
      }
    }
    if (!ok) {
      if (s.bad++ == 0)
        s.firstBad = x[i];
    }
    if (e64 > s.e64) {
      s.e64 = e64;
      s.at = x[i];
    }
    if (e32 > s.e32)
      s.e32 = e32;
  }
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.lsa FUNC [--stride N] [--threads N]\n", argv[0]);
    return 2;
  }
  std::string path = argv[1], func = argv[2];
  uint64_t stride = 1;
  unsigned threads = 2;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--stride"))
      stride = std::strtoull(argv[i + 1], nullptr, 10);
    else if (!std::strcmp(argv[i], "--threads"))
      threads = unsigned(std::strtoul(argv[i + 1], nullptr, 10));
  }
  if (stride == 0 || threads == 0) {
    std::fprintf(stderr, "--stride and --threads must be positive\n");
    return 2;
  }
  std::string error;
  LoadedArtifact artifact;
  CpuModule module;
  if (!loadArtifact(path, artifact, error) || !loadCpuModule(artifact, module, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  ThreadPool pool(threads);
  module.setThreadPool(&pool);

  const uint64_t total = (uint64_t(1) << 32) / stride + ((uint64_t(1) << 32) % stride != 0);
  const uint64_t chunk = uint64_t(1) << 24;
  std::vector<Stats> stats(threads);
  for (uint64_t start = 0; start < total; start += chunk) {
    uint64_t n = std::min(chunk, total - start);
    std::map<std::string, NpyArray> inputs;
    NpyArray &in = inputs["x"];
    in.dtype = "f4";
    in.shape = {int64_t(n)};
    in.data.resize(n * 4);
    auto *xs = reinterpret_cast<float *>(in.data.data());
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t bits = uint32_t((start + i) * stride);
      std::memcpy(&xs[i], &bits, 4);
    }
    NamedArrays outputs;
    if (!runGraph(artifact, module, inputs, outputs, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    const auto *ys = reinterpret_cast<const float *>(outputs.front().second.data.data());
    std::vector<std::thread> workers;
    uint64_t per = (n + threads - 1) / threads;
    for (unsigned t = 0; t < threads; ++t) {
      uint64_t b = std::min(n, t * per), e = std::min(n, b + per);
      workers.emplace_back([&, b, e, t] { compare(func, xs + b, ys + b, e - b, stats[t]); });
    }
    for (auto &w : workers)
      w.join();
  }
  module.setThreadPool(nullptr);
  Stats all;
  for (const Stats &s : stats) {
    if (s.e64 > all.e64) {
      all.e64 = s.e64;
      all.at = s.at;
    }
    all.e32 = std::max(all.e32, s.e32);
    if (s.bad && !all.bad)
      all.firstBad = s.firstBad;
    all.bad += s.bad;
  }
  std::printf("%s points %llu max-ulp %.3f max-ulp-fp32 %.0f at %.9g special-mismatches %llu",
              func.c_str(), (unsigned long long)total, all.e64, all.e32, double(all.at),
              (unsigned long long)all.bad);
  if (all.bad)
    std::printf(" first-mismatch-at %.9g", double(all.firstBad));
  std::printf("\n");
  return 0;
}
