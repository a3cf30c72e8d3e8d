//===- CudaProfile.cpp - Where a CUDA run's time goes ---------------------===//
#include "lockstep/Runtime/Backend/Cuda/CudaProfile.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <vector>

namespace lockstep::rt::cuda_profile {
namespace {

/// How many kernels the profile lists, most time first:
/// LOCKSTEP_CUDA_PROFILE_ROWS (0: all; unset or not a number: 40).
size_t rowLimit() {
  static const size_t limit = [] {
    const char *e = std::getenv("LOCKSTEP_CUDA_PROFILE_ROWS");
    if (!e || !*e)
      return size_t(40);
    char *end = nullptr;
    unsigned long long n = std::strtoull(e, &end, 10);
    if (*end)
      return size_t(40);
    return n == 0 ? SIZE_MAX : size_t(n);
  }();
  return limit;
}

struct Row {
  uint64_t launches = 0, threads = 0;
  double seconds = 0;
};

struct Totals {
  std::mutex mu;
  std::map<std::string, Row> kernels;
  uint64_t modules = 0, finishes = 0, allocations = 0, misses = 0, copies = 0,
           copyBytes = 0, arenaGrowths = 0, arenaBytes = 0, arenaAllocations = 0;
  double moduleSeconds = 0, finishSeconds = 0, copySeconds = 0;
  Clock::time_point start = Clock::now();

  ~Totals() {
    if (!enabled())
      return;
    std::vector<std::pair<std::string, Row>> rows(kernels.begin(), kernels.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
    uint64_t launches = 0;
    double kernelSeconds = 0;
    for (const auto &[name, r] : rows) {
      launches += r.launches;
      kernelSeconds += r.seconds;
    }
    double wall = since(start);
    std::fprintf(stderr, "cuda profile (LOCKSTEP_CUDA_PROFILE=1; launches wait)\n");
    std::fprintf(stderr, "  wall %.3f s from the first kernel: kernels %.3f s in %llu launches of %zu kernels,"
                         " module loads %.3f s (%llu), copies %.3f s (%llu, %llu bytes),"
                         " call waits %.3f s (%llu), the rest (host) %.3f s\n",
                 wall, kernelSeconds, (unsigned long long)launches, rows.size(),
                 moduleSeconds, (unsigned long long)modules, copySeconds,
                 (unsigned long long)copies, (unsigned long long)copyBytes, finishSeconds,
                 (unsigned long long)finishes,
                 wall - kernelSeconds - moduleSeconds - copySeconds - finishSeconds);
    std::fprintf(stderr, "  device allocations: %llu from call arenas, %llu from the block cache"
                         " of which cuMemAlloc %llu; arenas grown %llu times, to %llu bytes"
                         " at most\n",
                 (unsigned long long)arenaAllocations, (unsigned long long)allocations,
                 (unsigned long long)misses, (unsigned long long)arenaGrowths,
                 (unsigned long long)arenaBytes);
    std::fprintf(stderr, "  %10s %12s %12s %14s  %s\n", "launches", "total ms", "us/launch",
                 "threads/launch", "kernel (its ONNX node)");
    for (size_t i = 0; i < rows.size() && i < rowLimit(); ++i) {
      const Row &r = rows[i].second;
      std::fprintf(stderr, "  %10llu %12.3f %12.2f %14llu  %s\n", (unsigned long long)r.launches,
                   r.seconds * 1e3, r.seconds * 1e6 / double(r.launches),
                   (unsigned long long)(r.threads / r.launches), rows[i].first.c_str());
    }
    printByOp(rows);
  }

  /// The kernels summed by their ONNX node's op type (the name's last
  /// "(Type)"; "?" for the runtime's own kernels), most time first.
  static void printByOp(const std::vector<std::pair<std::string, Row>> &rows) {
    std::map<std::string, Row> ops;
    for (const auto &[name, r] : rows) {
      size_t open = name.rfind('('), close = name.rfind(')');
      std::string op = open != std::string::npos && close == name.size() - 1
                           ? name.substr(open + 1, close - open - 1)
                           : "?";
      Row &o = ops[op];
      o.launches += r.launches;
      o.seconds += r.seconds;
      o.threads += r.threads;
    }
    std::vector<std::pair<std::string, Row>> sorted(ops.begin(), ops.end());
    std::sort(sorted.begin(), sorted.end(),
              [](const auto &a, const auto &b) { return a.second.seconds > b.second.seconds; });
    std::fprintf(stderr, "  %10s %12s %12s %14s  %s\n", "launches", "total ms", "us/launch",
                 "threads/launch", "ONNX op type");
    for (const auto &[op, r] : sorted)
      std::fprintf(stderr, "  %10llu %12.3f %12.2f %14llu  %s\n", (unsigned long long)r.launches,
                   r.seconds * 1e3, r.seconds * 1e6 / double(r.launches),
                   (unsigned long long)(r.threads / r.launches), op.c_str());
  }
};

Totals &totals() {
  static Totals t;
  return t;
}

} // namespace

bool enabled() {
  static const bool on = [] {
    const char *e = std::getenv("LOCKSTEP_CUDA_PROFILE");
    bool on = e && *e == '1';
    if (on)
      totals(); // the wall time counts from here
    return on;
  }();
  return on;
}

void kernel(const std::string &name, uint64_t threads, double seconds) {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  Row &r = t.kernels[name];
  ++r.launches;
  r.threads += threads;
  r.seconds += seconds;
}

/// Adds one event of a timed kind: its count and its seconds.
static void addTimed(uint64_t Totals::*count, double Totals::*sum, double seconds) {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  ++(t.*count);
  t.*sum += seconds;
}

void moduleLoad(double seconds) { addTimed(&Totals::modules, &Totals::moduleSeconds, seconds); }

void finish(double seconds) { addTimed(&Totals::finishes, &Totals::finishSeconds, seconds); }

void allocation(bool miss) {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  ++t.allocations;
  t.misses += miss;
}

void arenaAllocation() {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  ++t.arenaAllocations;
}

void arenaGrowth(uint64_t capacity) {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  ++t.arenaGrowths;
  t.arenaBytes = std::max(t.arenaBytes, capacity);
}

void copy(uint64_t bytes, double seconds) {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  ++t.copies;
  t.copyBytes += bytes;
  t.copySeconds += seconds;
}

} // namespace lockstep::rt::cuda_profile
