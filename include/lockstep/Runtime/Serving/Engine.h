//===- Engine.h - The generation loop over a step model ---------*- C++ -*-===//
//
// The engine runs requests to completion: each step the scheduler plans which
// tokens of which requests to feed, the engine turns the plan into a ragged
// `StepBatch` (the serving ABI of DESIGN.md), the model runs it against the
// paged KV cache and writes one logits row per request that wants one, and the
// engine samples each such row with (request seed, absolute position of the
// sampled token), extends the request's fingerprint, and reports the tokens
// back to the scheduler.
//
// The model is an interface (`StepModel`), so the loop is tested without the
// compiler; the compiled artifact's `step` is one implementation.
//
// The engine owns the KV cache; each `run` has its own scheduler (and so its
// own policy generator, restarted from the policy's seed) and leaves the
// cache empty when it returns. Cancellation: the caller sets an atomic flag
// (from a SIGINT handler, say); the engine stops before the next step and
// returns what is done, the unfinished requests marked cancelled.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_ENGINE_H
#define LOCKSTEP_RUNTIME_SERVING_ENGINE_H

#include "lockstep/Runtime/Serving/Fingerprint.h"
#include "lockstep/Runtime/Serving/KVCache.h"
#include "lockstep/Runtime/Serving/Sampler.h"
#include "lockstep/Runtime/Serving/Scheduler.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::rt {

class ThreadPool;

/// One step of the ragged batch: the T tokens of R requests, request r owning
/// tokens [seqStarts[r], seqStarts[r+1]).
struct StepBatch {
  std::vector<int32_t> tokens;    ///< [T]
  std::vector<int64_t> positions; ///< [T] absolute positions
  std::vector<int64_t> seqStarts; ///< [R+1]
  std::vector<int64_t> contextLens; ///< [R] tokens in the cache after the step
  std::vector<std::vector<int32_t>> blockTables; ///< [R] covering contextLens
  std::vector<int64_t> logitRows; ///< [R] token index to take logits at, or -1
  /// The request id of each of the R requests (for diagnostics only: a model
  /// must not let it change what it computes).
  std::vector<uint64_t> seqIds;
};

class StepModel {
public:
  virtual ~StepModel();
  virtual int64_t vocab() const = 0;
  /// Runs one step: writes K/V of every token into `kv` at its request's
  /// block-table slots and, for each request r with logitRows[r] >= 0, its
  /// logits into logitsOut[r * vocab .. (r+1) * vocab). Rows of requests that
  /// want no logits are left alone. False with `error` on failure.
  virtual bool step(const StepBatch &batch, KVCache &kv, float *logitsOut,
                    std::string &error) = 0;
  /// Runs one step as `step` does, but leaves each logits row where the model
  /// has it: rows[r] is request r's `vocab` floats (null for a request that
  /// wants none), valid until the model's next step. The default runs `step`
  /// into `scratch`, prefilled with NaN so that a row the model did not write
  /// cannot pass for logits; a model that holds its logits in memory of its
  /// own (a compiled call's output) overrides it and copies nothing.
  virtual bool stepRows(const StepBatch &batch, KVCache &kv, std::vector<float> &scratch,
                        std::vector<const float *> &rows, std::string &error);
  /// The longest context (prompt + generated tokens) the model can take, and
  /// what sets it; nullopt when it has no limit. The engine refuses longer
  /// requests.
  virtual std::optional<int64_t> maxContext() const { return std::nullopt; }
  virtual std::string maxContextSource() const { return {}; }
  /// Where the KV cache pools must live for this model (a GPU's memory), or
  /// null for host memory.
  virtual PoolMemory *poolMemory() const { return nullptr; }
};

struct EngineConfig {
  KVCacheConfig kv;
  /// `scheduler.vocab` 0 takes the model's vocab; otherwise they must agree.
  SchedulerConfig scheduler;
  PolicyConfig policy = PolicyConfig::deterministicDefault();
  /// Keep each generated token's logits row in the results.
  bool keepLogits = true;
  /// When not empty, the plans the scheduler follows instead of its policy
  /// (Scheduler::setScript): a recorded schedule, replayed.
  std::vector<StepPlan> script;
  /// Threads that sample a step's rows and extend their fingerprints, a row
  /// each (runPlannedStep); null: the engine's own thread. Not owned. No
  /// result depends on it.
  ThreadPool *rowPool = nullptr;
};

enum class RequestStatus { Ok, Rejected, Cancelled, Failed };
const char *requestStatusName(RequestStatus status);

struct RequestResult {
  uint64_t id = 0;
  RequestStatus status = RequestStatus::Ok;
  std::string reason; ///< Why it was rejected or failed.
  std::vector<int32_t> generated;
  /// The row that produced generated[i] is logits[i * vocab ..] (float32
  /// [generated.size(), vocab]); empty unless keepLogits.
  std::vector<float> logits;
  Fingerprint fingerprint; ///< Over the rows of `logits`, in order.
};

struct RunResult {
  std::vector<RequestResult> requests; ///< In the order given to run.
  SchedulerStats stats;
  bool cancelled = false;
};

struct EngineCallbacks {
  /// After each step, with its plan (idle steps, with no entries, too).
  std::function<void(const StepPlan &)> onStep;
  /// After each sampled token: request, its position, the token, its row.
  std::function<void(uint64_t id, int64_t position, int32_t token,
                     const float *logits)>
      onToken;
  /// Checked before every step; when true the run stops cleanly.
  const std::atomic<bool> *cancel = nullptr;
};

class Engine {
public:
  /// Checks the config against the model and allocates the KV cache.
  static std::unique_ptr<Engine> create(StepModel &model,
                                        const EngineConfig &config,
                                        std::string &error);

  /// Runs the requests until every accepted one finishes (or the flag
  /// cancels). Rejected requests get their reason and do not affect the
  /// others. Returns false with `error` when the model fails (unfinished
  /// requests are then marked failed) or the scheduler stops making progress.
  bool run(const std::vector<Request> &requests, RunResult &out,
           std::string &error, const EngineCallbacks &callbacks = {});

  int64_t vocab() const { return vocabSize; }
  KVCache &cache() { return *kv; }
  const EngineConfig &config() const { return cfg; }

private:
  Engine(StepModel &model, const EngineConfig &config,
         std::unique_ptr<KVCache> kv);

  StepModel &model;
  EngineConfig cfg;
  std::unique_ptr<KVCache> kv;
  int64_t vocabSize;
};

} // namespace lockstep::rt

#endif
