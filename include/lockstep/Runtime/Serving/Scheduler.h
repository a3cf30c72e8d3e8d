//===- Scheduler.h - Continuous batching over the paged cache ---*- C++ -*-===//
//
// The scheduler decides, step by step, which requests feed which tokens to
// the model. A request contributes to a step either a chunk of its prefill
// (its prompt, or after a preemption by recompute its prompt and the tokens
// it generated so far) or one decode token. An entry of a step asks for
// logits when it ends at the request's last known token, so that the next
// token can be sampled; the caller samples it and reports it in `complete`.
//
// Every decision goes through a seeded `Policy`, so that the fuzz harness can
// vary all of them and replay any one schedule from its seed:
//
// - admission order: FIFO, or a random pick among the arrived requests;
//   arrival: optionally, each request becomes visible at a random step;
// - per step: the token budget and the sequence cap (random within the
//   configured maxima), which requests sit the step out, in what order the
//   rest are considered, and the size of each prefill chunk;
// - preemption: when the KV cache cannot hold a chunk, a victim (the newest
//   admitted, or a random one) is preempted by recompute (its blocks are
//   freed and all its tokens are prefilled again later) or by swap (its
//   blocks go to host memory and come back before it runs again);
// - eviction: at random steps, a random running request is preempted even
//   though memory suffices.
//
// Progress. Each admitted request has a priority: the order of its first
// admission. A request may preempt only requests of lower priority (one not
// admitted yet preempts nobody: it is admitted when it fits), and the
// highest-priority unfinished request is considered first in every step, is
// never skipped and never evicted. Requests whose longest KV footprint exceeds
// the whole cache are rejected at `add`, so that request always fits once the
// others are preempted: it advances every step and finishes, and then the next
// one does. A request never fails for lack of memory; it waits.
//
// Rejections (at `add`, with a reason; other requests are not affected): a
// duplicate id, an empty prompt, maxNewTokens < 1, prompt + maxNewTokens >
// maxContext, a token id outside [0, vocab), invalid sampling params, or a
// footprint larger than the whole KV cache.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_SCHEDULER_H
#define LOCKSTEP_RUNTIME_SERVING_SCHEDULER_H

#include "lockstep/Runtime/Serving/KVCache.h"
#include "lockstep/Runtime/Serving/Sampler.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::rt {

struct Request {
  uint64_t id = 0;
  std::vector<int32_t> prompt;
  int64_t maxNewTokens = 1;
  SamplingParams sampling;
};

struct SchedulerConfig {
  int64_t tokenBudget = 256;     ///< Max tokens fed per step.
  int64_t maxSeqs = 64;          ///< Max requests per step.
  int64_t maxPrefillChunk = 256; ///< Max tokens of one request per step.
  int64_t maxContext = 2048;     ///< Max prompt + maxNewTokens.
  std::string maxContextSource;  ///< What sets maxContext, for messages.
  int64_t vocab = 0;             ///< Token ids must be in [0, vocab).
  int32_t eosToken = -1;         ///< A generated eosToken finishes (-1: none).
};

enum class AdmissionOrder { Fifo, Random };
enum class PreemptMode { Recompute, Swap, Random };
enum class VictimChoice { Newest, Random };

struct PolicyConfig {
  uint64_t seed = 0;
  AdmissionOrder admission = AdmissionOrder::Fifo;
  /// Prefill chunks of a random size in [1, largest allowed].
  bool randomChunks = false;
  /// Per step, a token budget in [1, tokenBudget] and a cap in [1, maxSeqs].
  bool randomBudgets = false;
  /// Requests after the first are considered in a random order.
  bool shuffle = false;
  /// Each request but the highest-priority one sits a step out with this
  /// probability.
  double skipProbability = 0;
  PreemptMode preempt = PreemptMode::Recompute;
  VictimChoice victim = VictimChoice::Newest;
  /// Per step, the probability of evicting one random running request.
  double evictProbability = 0;
  /// A request added at step s arrives at a random step in
  /// [s, s + maxArrivalDelay].
  int64_t maxArrivalDelay = 0;

  /// FIFO, largest chunks, full budgets, no skipping, newest victim,
  /// recompute, no eviction, arrival at once: what `generate` uses.
  static PolicyConfig deterministicDefault();
  /// Everything random, drawn from `seed` (preemption mode, victim choice,
  /// probabilities and delay included).
  static PolicyConfig fuzz(uint64_t seed);
};

/// The policy's generator: SplitMix64 (Steele, Lea, Flood 2014) from the seed.
class Policy {
public:
  explicit Policy(const PolicyConfig &config)
      : cfg(config), state(config.seed) {}
  const PolicyConfig &config() const { return cfg; }
  uint64_t next();
  /// Uniform in [lo, hi] (lo when hi <= lo).
  int64_t uniform(int64_t lo, int64_t hi);
  /// True with probability p (never for p <= 0; no draw is taken then).
  bool chance(double p);

private:
  PolicyConfig cfg;
  uint64_t state;
};

struct StepEntry {
  uint64_t seq = 0;          ///< The request id.
  int64_t startPosition = 0; ///< Absolute position of tokens[0].
  std::vector<int32_t> tokens;
  bool wantLogits = false;   ///< Ends at the last known token.
};

enum class EventKind {
  Admit,            ///< First admission.
  PreemptRecompute, ///< Preempted for memory; will be prefilled again.
  PreemptSwap,      ///< Preempted for memory; swapped out to host.
  EvictRecompute,   ///< Evicted at random; will be prefilled again.
  EvictSwap,        ///< Evicted at random; swapped out to host.
  SwapIn,           ///< Swapped back in.
  Readmit,          ///< Readmitted after a preemption by recompute.
};
const char *eventKindName(EventKind kind);

struct StepEvent {
  EventKind kind;
  uint64_t seq;
};

struct StepPlan {
  int64_t step = 0;
  int64_t tokenBudget = 0; ///< The limits drawn for this step.
  int64_t maxSeqs = 0;
  std::vector<StepEntry> entries;
  std::vector<StepEvent> events; ///< In the order they happened.
  int64_t numTokens() const;
};

struct SchedulerStats {
  int64_t steps = 0;        ///< Steps that fed at least one token.
  int64_t idleSteps = 0;    ///< Steps with nothing to run (waiting arrivals).
  int64_t tokens = 0;       ///< Tokens fed, prefill and decode.
  int64_t recomputedTokens = 0; ///< Of those, fed again after a recompute.
  int64_t generated = 0;    ///< Tokens sampled and appended.
  int64_t preemptRecompute = 0; ///< Preemptions by recompute (evictions too).
  int64_t preemptSwap = 0;      ///< Preemptions by swap (evictions too).
  int64_t evictions = 0;    ///< Of the preemptions, those made at random.
  int64_t swapIns = 0;
  int64_t admitted = 0;
  int64_t finished = 0;
  int64_t rejected = 0;
  int64_t cancelled = 0;    ///< Finished early by cancel().
  int64_t largestBatchSeqs = 0;
  int64_t largestBatchTokens = 0;
};

class Scheduler {
public:
  /// `kv` must outlive the scheduler; the scheduler reserves, releases and
  /// swaps its sequences (keyed by request id) and nothing else should.
  Scheduler(const SchedulerConfig &config, const PolicyConfig &policy,
            KVCache &kv);

  /// Queues a request; false with `reason` when it is rejected.
  bool add(const Request &request, std::string &reason);

  /// The checks of add() but the duplicate-id one, from the configs alone
  /// (no scheduler state): a server calls it on its own thread to refuse a
  /// request before queueing it. `config.vocab` must be set.
  static bool validate(const SchedulerConfig &config, const KVCacheConfig &kv,
                       const Request &request, std::string &reason);

  /// Finishes an unfinished request now (a client went away, a stop
  /// sequence matched): frees its blocks, device and host, and it is never
  /// scheduled again. False when the id is unknown or finished, or while a
  /// plan holding it is outstanding (cancel between complete and schedule).
  bool cancel(uint64_t id);

  /// Drops a finished request's state, so that a long-running server does
  /// not keep every request it served; false when it is unknown or
  /// unfinished. Its id may then be added again.
  bool forget(uint64_t id);

  /// The next step. False (with `error`) when the previous plan has not been
  /// completed. The plan may have no entries when only requests that have not
  /// arrived yet are left; `complete` it all the same.
  bool schedule(StepPlan &plan, std::string &error);

  /// Reports a step as run: `sampled[i]` is the token sampled for
  /// plan.entries[i] when it wants logits (ignored otherwise). Appends the
  /// tokens, finishes requests (maxNewTokens or eosToken) and frees their
  /// blocks. False with `error` on a plan that is not the outstanding one or a
  /// sampled token outside the vocabulary.
  bool complete(const StepPlan &plan, const std::vector<int32_t> &sampled,
                std::string &error);

  /// Makes the scheduler follow `script` (plans as a trace records them:
  /// limits, events and entries, without tokens) instead of its policy:
  /// each step applies the recorded admissions, preemptions, evictions and
  /// swaps to the KV cache and runs the recorded entries, taking their
  /// tokens from the requests. schedule() fails, saying where, when a
  /// recorded step cannot be taken (the trace does not fit the requests,
  /// the cache or what the model generated). Call before the first step.
  void setScript(std::vector<StepPlan> script);

  /// No request is unfinished.
  bool done() const { return unfinished == 0; }
  /// Some unfinished request has not arrived yet (an empty plan is expected).
  bool waitingForArrivals() const;

  /// Prompt plus generated tokens of a known request (null when unknown).
  const std::vector<int32_t> *tokens(uint64_t id) const;
  int64_t promptLength(uint64_t id) const;
  const Request *request(uint64_t id) const;
  bool isFinished(uint64_t id) const;
  /// The ids of the requests added and not rejected, in the order added.
  const std::vector<uint64_t> &accepted() const { return order; }

  /// Frees every block held for unfinished requests (cancellation).
  void releaseAll();

  const SchedulerStats &stats() const { return st; }
  const SchedulerConfig &config() const { return cfg; }

private:
  enum class State { Pending, Running, Swapped, Preempted, Finished };
  struct Seq {
    Request req;
    std::vector<int32_t> tokens; // prompt then generated
    int64_t computed = 0;        // tokens whose K/V are in the cache
    int64_t everComputed = 0;    // high-water mark of computed
    int64_t generated = 0;
    int64_t arrivalStep = 0;
    int64_t priority = -1;       // order of first admission
    State state = State::Pending;
    bool inPlan = false;
  };

  /// Frees memory for `cand` until `blocks` are free by preempting lower
  /// priority running requests not in the plan; false if it cannot.
  bool makeRoom(const Seq &cand, int64_t blocks, StepPlan &plan);
  void preempt(Seq &victim, bool evict, StepPlan &plan);
  /// Tries to schedule `s` with at most `budget` tokens; returns the tokens
  /// scheduled (0 when it could not be).
  int64_t tryRun(Seq &s, int64_t budget, StepPlan &plan);
  /// schedule() under a script: the recorded step `step`.
  bool scheduleScripted(StepPlan &plan, std::string &error);
  /// Counts a planned step in the stats and makes it outstanding.
  void account(const StepPlan &plan);

  SchedulerConfig cfg;
  Policy policy;
  KVCache &kv;
  std::map<uint64_t, Seq> seqs;
  std::vector<uint64_t> order;   // accepted ids in order added
  std::vector<uint64_t> pending; // not admitted yet, in order added
  int64_t step = 0;
  int64_t nextPriority = 0;
  int64_t unfinished = 0;
  bool outstanding = false;
  SchedulerStats st;
  std::optional<std::vector<StepPlan>> script;
};

} // namespace lockstep::rt

#endif
