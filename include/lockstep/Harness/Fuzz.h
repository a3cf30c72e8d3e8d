//===- Fuzz.h - The schedule-fuzzing campaign -------------------*- C++ -*-===//
//
// The harness of DESIGN.md ("Proving it"). The baseline runs every request
// alone: its whole prompt in one prefill, then one decode token per step.
// Each schedule then runs all requests together under a seeded policy
// (PolicyConfig::fuzz: arrival order and delays, which requests share a step,
// random token budgets and sequence caps, chunked-prefill split points,
// preemption by recompute or swap, random eviction and readmission) and a KV
// budget, token budget, sequence cap and swap space drawn from the schedule's
// seed. Every logits row of every request at every generated position is
// compared bit for bit with the baseline.
//
// A schedule is reproduced from its setup alone (the policy is deterministic
// given its seed); a trace (Trace.h) records the setup, the requests and the
// plan of every step, so that a replay can also check that it took the same
// steps.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_HARNESS_FUZZ_H
#define LOCKSTEP_HARNESS_FUZZ_H

#include "lockstep/Runtime/Serving/Engine.h"
#include "lockstep/Runtime/Serving/ServingModel.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::rt {

/// The KV cache config of a model for (block size, device blocks, host blocks).
using CacheConfigFn = std::function<KVCacheConfig(int64_t, int64_t, int64_t)>;
/// A served model's own config (ServingModel::cacheConfig); `model` must
/// outlive the function.
inline CacheConfigFn cacheConfigOf(const ServingModel &model) {
  return [&model](int64_t blockSize, int64_t blocks, int64_t hostBlocks) {
    return model.cacheConfig(blockSize, blocks, hostBlocks);
  };
}

/// Everything that determines one schedule.
struct ScheduleSetup {
  int64_t index = -1;   ///< Its number in the campaign (-1: the baseline).
  uint64_t seed = 0;    ///< The schedule seed (printed, replayable).
  PolicyConfig policy;
  SchedulerConfig scheduler;
  int64_t blockSize = 16, kvBlocks = 0, hostBlocks = 0;
  /// Threads of the compiled code (the caller gives its thread pool this
  /// many): compiled code must give the same bits for every count.
  int64_t threads = 1;
  /// Keep every generated token's logits row in the results (what
  /// compareRuns reads); a run that is only timed (bench --only) keeps the
  /// fingerprints alone, as a server does, and copies no row.
  bool keepLogits = true;
  /// EngineConfig::rowPool: threads for the rows' sampling and fingerprints
  /// (no result depends on it).
  ThreadPool *rowPool = nullptr;
};

/// Draws schedule `index` of the campaign with seed `campaignSeed`: a policy
/// from PolicyConfig::fuzz, limits that still let every request run (a KV
/// budget of at least the largest request's whole context), and a thread
/// count from 1 to `maxThreads`.
ScheduleSetup drawSchedule(uint64_t campaignSeed, int64_t index,
                           const std::vector<Request> &requests, int64_t vocab,
                           int64_t maxThreads = 1);

/// The baseline's setup: one request at a time, whole-prompt prefill.
ScheduleSetup baselineSetup(const std::vector<Request> &requests, int64_t vocab);

/// A run of one schedule: the results, the plans, the step at which each
/// generated token's logits were produced, and the wall time of each step.
struct ScheduleRun {
  RunResult result;
  std::vector<StepPlan> plans;
  std::vector<std::vector<int64_t>> tokenSteps; ///< [request][generated i]
  /// [step] seconds from the end of the step before (or the start of the
  /// engine's run) to the end of plans[step]: planning, the model's step,
  /// sampling and the scheduler's bookkeeping (and the copy of the plan
  /// before it). Their sum is the engine's run up to its last step.
  std::vector<double> stepSeconds;
};

/// Runs `requests` under `setup`; with a `script` (a trace's plans), the
/// scheduler takes the recorded steps instead of drawing them.
bool runSchedule(StepModel &model, const CacheConfigFn &cache,
                 const ScheduleSetup &setup, const std::vector<Request> &requests,
                 ScheduleRun &out, std::string &error,
                 const std::atomic<bool> *cancel = nullptr,
                 const std::vector<StepPlan> *script = nullptr);

struct Mismatch {
  uint64_t request = 0;
  int64_t position = 0; ///< Absolute position of the generated token.
  int64_t generatedIndex = 0;
  int64_t step = 0;
  int64_t schedule = 0;
  uint64_t scheduleSeed = 0;
  int64_t differing = 0; ///< Logits of the row that differ.
  uint64_t maxUlps = 0;  ///< Largest difference in ulps (ordered bits).
  std::string what;      ///< Set when the rows cannot be compared.
};

struct Comparison {
  int64_t tokens = 0, logits = 0, mismatches = 0;
  std::optional<Mismatch> first; ///< The earliest by step, then request.
};

/// Compares every logits row of `run` with `baseline`, bit for bit.
Comparison compareRuns(const ScheduleRun &baseline, const ScheduleRun &run,
                       const ScheduleSetup &setup, const std::vector<Request> &requests,
                       int64_t vocab);

/// One line: request, position, step, schedule and seed, differing logits,
/// largest difference in ulps.
std::string describeMismatch(const Mismatch &m);

} // namespace lockstep::rt

#endif
