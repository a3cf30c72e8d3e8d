//===- StepTimes.cpp - Where a serving step's host time goes --------------===//
#include "lockstep/Runtime/Serving/StepTimes.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

using namespace lockstep::rt;

namespace {
// Microseconds, so that engines on other threads may add too.
std::array<std::atomic<long long>, kStepParts> sums{};
} // namespace

bool lockstep::rt::stepTimesOn() {
  static const bool on = [] {
    const char *e = std::getenv("LOCKSTEP_STEP_TIMES");
    return e && std::strcmp(e, "1") == 0;
  }();
  return on;
}

void lockstep::rt::addStepTime(StepPart p, double seconds) {
  sums[int(p)].fetch_add((long long)(seconds * 1e6), std::memory_order_relaxed);
}

std::array<double, kStepParts> lockstep::rt::stepTimes() {
  std::array<double, kStepParts> out{};
  for (int i = 0; i < kStepParts; ++i)
    out[i] = sums[i].load(std::memory_order_relaxed) * 1e-6;
  return out;
}

void lockstep::rt::resetStepTimes() {
  for (auto &s : sums)
    s.store(0, std::memory_order_relaxed);
}

const char *lockstep::rt::stepPartName(StepPart p) {
  static const char *names[kStepParts] = {"schedule", "batch",  "inputs", "call",    "kv rows",
                                          "logit rows", "sample", "record", "complete"};
  return names[int(p)];
}
