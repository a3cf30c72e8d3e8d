//===- OnlineEngine.h - Continuous batching of arriving requests -*- C++ -*-===//
//
// `Engine::run` serves a fixed list of requests to completion. A server gets
// requests one at a time, from many threads, while others are running: the
// online engine runs the same loop (the scheduler plans a step, the step
// runs and samples: StepRunner.h) on a thread of its own, forever, and takes
// requests as they come. Every request that is in flight shares the steps;
// its logits, tokens and fingerprint are still the ones it gets alone.
//
// - `submit` is thread-safe and never blocks on the engine: it checks the
//   request (Scheduler::validate: context, vocabulary, sampling params, KV
//   footprint) and queues it, or refuses it at once: invalid, the queue is
//   full (`queueCapacity` requests accepted and not finished), or draining.
// - Per-request callbacks run on the engine thread, between steps: `onToken`
//   for each sampled token (with its logits row and the fingerprint chain up
//   to it; returning false finishes the request there, as a stop sequence
//   does), then `onFinish` exactly once. They must not block: hand the event
//   to a queue that another thread drains (a slow client must not stall the
//   engine).
// - `cancel` (any thread) finishes a request before the next step and frees
//   its KV blocks; so does returning false from onToken.
// - `beginDrain` refuses new requests; `waitIdle` waits until every request
//   in flight has finished. `shutdown` (and the destructor) cancels what is
//   left and joins the thread.
// - A model failure fails every request in flight (onFinish says why), frees
//   the whole cache and starts a fresh scheduler: the engine keeps serving.
//
// Finished requests are forgotten by the scheduler, so memory does not grow
// with the number of requests served.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_ONLINEENGINE_H
#define LOCKSTEP_RUNTIME_SERVING_ONLINEENGINE_H

#include "lockstep/Runtime/Serving/Engine.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace lockstep::rt {

struct OnlineEngineConfig {
  /// The cache, scheduler limits and policy (checked as Engine::create does).
  /// `engine.script` must be empty. `engine.keepLogits` keeps each request's
  /// rows in the RequestResult handed to onFinish.
  EngineConfig engine;
  /// Requests accepted and not finished, at most; submit refuses more.
  int64_t queueCapacity = 256;
};

/// One sampled token, as onToken sees it.
struct TokenEvent {
  uint64_t id = 0;
  int64_t index = 0;    ///< Among the request's generated tokens, from 0.
  int64_t position = 0; ///< Absolute position of the token in its sequence.
  int32_t token = -1;
  const float *logits = nullptr; ///< The row it was sampled from (valid
  int64_t vocab = 0;             ///< during the call only).
  /// The request's fingerprint chain value after this row.
  uint64_t fingerprint = 0;
};

enum class FinishReason {
  Length,    ///< maxNewTokens generated.
  Eos,       ///< The scheduler's eosToken was generated.
  Stopped,   ///< onToken returned false.
  Cancelled, ///< cancel(), or shutdown.
  Rejected,  ///< Refused by the scheduler after it was queued.
  Failed,    ///< The model failed.
};
const char *finishReasonName(FinishReason reason);

struct OnlineCallbacks {
  /// Engine thread. False: the request finishes now (FinishReason::Stopped).
  std::function<bool(const TokenEvent &)> onToken;
  /// Engine thread (the caller's, for a request refused inside submit is
  /// never called: submit's status says so). Exactly once per accepted
  /// request. result.status is Ok for Length, Eos and Stopped.
  std::function<void(const RequestResult &, FinishReason)> onFinish;
};

enum class SubmitStatus { Accepted, Invalid, QueueFull, Draining };

struct OnlineStats {
  int64_t submitted = 0, refusedFull = 0, refusedDraining = 0, invalid = 0;
  int64_t finished = 0, cancelled = 0, failed = 0;
  int64_t inFlight = 0;
  int64_t steps = 0, tokens = 0, generated = 0;
  int64_t largestBatchSeqs = 0, largestBatchTokens = 0;
  int64_t preemptions = 0; ///< By recompute or swap, evictions included.
  int64_t modelFailures = 0;
  int64_t freeBlocks = 0, totalBlocks = 0; ///< Device KV blocks, between steps.
  std::string lastError; ///< The last model failure, if any.
};

class OnlineEngine {
public:
  /// Checks the config against the model (Engine::create), allocates the KV
  /// cache and starts the engine thread. Null with `error` on failure.
  static std::unique_ptr<OnlineEngine> create(StepModel &model,
                                              const OnlineEngineConfig &config,
                                              std::string &error);
  ~OnlineEngine();
  OnlineEngine(const OnlineEngine &) = delete;
  OnlineEngine &operator=(const OnlineEngine &) = delete;

  /// Queues `request` (its id is ignored: the engine assigns `id`). Anything
  /// but Accepted leaves `reason` set and calls no callback.
  SubmitStatus submit(const Request &request, OnlineCallbacks callbacks, uint64_t &id,
                      std::string &reason);
  /// Finishes request `id` before the next step (FinishReason::Cancelled);
  /// false when it is not in flight.
  bool cancel(uint64_t id);

  /// From now on submit answers Draining.
  void beginDrain();
  bool isDraining() const;
  /// Waits until no request is in flight; false when `timeout` passed first.
  bool waitIdle(std::chrono::milliseconds timeout);
  /// Cancels every request in flight, stops and joins the engine thread.
  /// Idempotent; submit answers Draining afterwards.
  void shutdown();

  OnlineStats stats() const;
  int64_t vocab() const { return engine->vocab(); }
  /// The scheduler's limits after the model's (its context limit included).
  const EngineConfig &config() const { return engine->config(); }

private:
  OnlineEngine(StepModel &model, std::unique_ptr<Engine> engine, int64_t capacity);
  void loop();

  struct Incoming {
    Request request;
    OnlineCallbacks callbacks;
  };

  StepModel &model;
  std::unique_ptr<Engine> engine; // the checked config and the KV cache
  int64_t capacity;

  mutable std::mutex mu;
  std::condition_variable wake;  // the engine thread: work or stop
  std::condition_variable idle;  // waitIdle: a request finished
  std::vector<Incoming> inbox;
  std::vector<uint64_t> cancels;
  std::set<uint64_t> live; // accepted, not finished
  uint64_t nextId = 1;
  bool draining = false, stopping = false;
  OnlineStats st;
  std::thread thread;
};

} // namespace lockstep::rt

#endif
