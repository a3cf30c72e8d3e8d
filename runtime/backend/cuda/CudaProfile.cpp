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

/// A kernel timed by events: the pair recorded around its launch.
struct Timed {
  std::string name;
  uint64_t threads = 0;
  CUevent start = nullptr, end = nullptr;
};

bool eventsRequested() {
  static const bool on = [] {
    const char *e = std::getenv("LOCKSTEP_CUDA_PROFILE");
    return e && std::string(e) == "events";
  }();
  return on;
}

struct Totals {
  std::mutex mu;
  std::map<std::string, Row> kernels;
  // Events mode: the launches whose events are not read yet, the events
  // free for reuse, the device's idle time between two timed kernels.
  std::vector<Timed> timed;
  std::vector<CUevent> freeEvents;
  CUevent lastEnd = nullptr;
  double gapSeconds = 0;
  uint64_t gaps = 0, eventFailures = 0;
  bool byEvents = false;
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
    if (byEvents) {
      std::fprintf(stderr, "cuda profile (LOCKSTEP_CUDA_PROFILE=events: each kernel's device time"
                           " between two CUDA events; launches do not wait, graphs off)\n");
      std::fprintf(stderr, "  wall %.3f s from the first kernel: kernels %.3f s of device time"
                           " in %llu launches of %zu kernels, the device idle between them"
                           " within calls %.3f s (%llu gaps, %.2f us each), module loads %.3f s (%llu),"
                           " copies %.3f s (%llu, %llu bytes), call waits %.3f s (%llu)%s\n",
                   wall, kernelSeconds, (unsigned long long)launches, rows.size(), gapSeconds,
                   (unsigned long long)gaps, gaps ? gapSeconds * 1e6 / double(gaps) : 0.0,
                   moduleSeconds, (unsigned long long)modules, copySeconds,
                   (unsigned long long)copies, (unsigned long long)copyBytes, finishSeconds,
                   (unsigned long long)finishes,
                   eventFailures ? ", SOME EVENTS COULD NOT BE READ" : "");
      if (finishes)
        std::fprintf(stderr, "  a call: %.3f ms of kernels, %.3f ms idle between them, %.1f"
                             " launches\n",
                     kernelSeconds * 1e3 / double(finishes), gapSeconds * 1e3 / double(finishes),
                     double(launches) / double(finishes));
    } else {
      std::fprintf(stderr, "cuda profile (LOCKSTEP_CUDA_PROFILE=1; launches wait)\n");
      std::fprintf(stderr, "  wall %.3f s from the first kernel: kernels %.3f s in %llu launches of %zu kernels,"
                           " module loads %.3f s (%llu), copies %.3f s (%llu, %llu bytes),"
                           " call waits %.3f s (%llu), the rest (host) %.3f s\n",
                   wall, kernelSeconds, (unsigned long long)launches, rows.size(),
                   moduleSeconds, (unsigned long long)modules, copySeconds,
                   (unsigned long long)copies, (unsigned long long)copyBytes, finishSeconds,
                   (unsigned long long)finishes,
                   wall - kernelSeconds - moduleSeconds - copySeconds - finishSeconds);
    }
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
    bool on = (e && std::string(e) == "1") || eventsRequested();
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

bool timesByEvents(const CudaDriver &d) {
  if (!eventsRequested() || !d.events.available())
    return false;
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  t.byEvents = true;
  return true;
}

namespace {
/// An event from the free list or a new one; null if none can be made.
CUevent takeEvent(const CudaDriver &d, Totals &t) {
  if (!t.freeEvents.empty()) {
    CUevent e = t.freeEvents.back();
    t.freeEvents.pop_back();
    return e;
  }
  CUevent e = nullptr;
  if (d.events.cuEventCreate(&e, 0) != 0)
    return nullptr;
  return e;
}
} // namespace

void beforeKernel(const CudaDriver &d) {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  Timed k;
  k.start = takeEvent(d, t);
  if (k.start && d.events.cuEventRecord(k.start, d.stream) != 0) {
    t.freeEvents.push_back(k.start);
    k.start = nullptr;
  }
  t.timed.push_back(std::move(k));
}

void afterKernel(const CudaDriver &d, const std::string &name, uint64_t threads) {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.timed.empty() || t.timed.back().end || !t.timed.back().name.empty())
    return; // no beforeKernel for this launch
  Timed &k = t.timed.back();
  k.name = name;
  k.threads = threads;
  k.end = takeEvent(d, t);
  if (k.end && d.events.cuEventRecord(k.end, d.stream) != 0) {
    t.freeEvents.push_back(k.end);
    k.end = nullptr;
  }
}

void readKernelEvents(const CudaDriver &d) {
  Totals &t = totals();
  std::lock_guard<std::mutex> lock(t.mu);
  for (Timed &k : t.timed) {
    float ms = 0, idle = 0;
    if (!k.start || !k.end || d.events.cuEventElapsedTime(&ms, k.start, k.end) != 0) {
      ++t.eventFailures;
    } else {
      Row &r = t.kernels[k.name];
      ++r.launches;
      r.threads += k.threads;
      r.seconds += double(ms) * 1e-3;
      if (t.lastEnd && d.events.cuEventElapsedTime(&idle, t.lastEnd, k.start) == 0) {
        t.gapSeconds += double(idle) * 1e-3;
        ++t.gaps;
      }
    }
    // The gap to the next kernel is measured from this one's end.
    if (t.lastEnd)
      t.freeEvents.push_back(t.lastEnd);
    t.lastEnd = k.end;
    if (k.start)
      t.freeEvents.push_back(k.start);
  }
  // Gaps are counted within a call's kernels, not across the host's work
  // between calls.
  if (t.lastEnd)
    t.freeEvents.push_back(t.lastEnd);
  t.lastEnd = nullptr;
  t.timed.clear();
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
