//===- Scheduler.cpp - Continuous batching over the paged cache -----------===//
#include "lockstep/Runtime/Serving/Scheduler.h"

#include <algorithm>

using namespace lockstep::rt;

//===----------------------------------------------------------------------===//
// Policy
//===----------------------------------------------------------------------===//

PolicyConfig PolicyConfig::deterministicDefault() { return PolicyConfig(); }

PolicyConfig PolicyConfig::fuzz(uint64_t seed) {
  PolicyConfig c;
  c.seed = seed;
  // The knobs come from a generator of their own, so that the schedule's
  // generator (keyed by the same seed) starts fresh.
  PolicyConfig k;
  k.seed = seed ^ 0x5f3759df9e3779b9ULL;
  Policy knobs(k);
  c.admission = knobs.chance(0.5) ? AdmissionOrder::Random : AdmissionOrder::Fifo;
  c.randomChunks = knobs.chance(0.75);
  c.randomBudgets = knobs.chance(0.75);
  c.shuffle = knobs.chance(0.5);
  static const double skips[] = {0, 0.1, 0.3};
  c.skipProbability = skips[knobs.uniform(0, 2)];
  c.preempt = PreemptMode(knobs.uniform(0, 2));
  c.victim = knobs.chance(0.5) ? VictimChoice::Random : VictimChoice::Newest;
  static const double evicts[] = {0, 0.05, 0.2};
  c.evictProbability = evicts[knobs.uniform(0, 2)];
  static const int64_t delays[] = {0, 4, 16};
  c.maxArrivalDelay = delays[knobs.uniform(0, 2)];
  return c;
}

uint64_t Policy::next() {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t Policy::uniform(int64_t lo, int64_t hi) {
  if (hi <= lo)
    return lo;
  // The modulo bias (span / 2^64) is irrelevant for schedules.
  uint64_t span = uint64_t(hi) - uint64_t(lo) + 1;
  return lo + int64_t(next() % span);
}

bool Policy::chance(double p) {
  if (!(p > 0))
    return false;
  return double(next() >> 11) * (1.0 / 9007199254740992.0) < p;
}

//===----------------------------------------------------------------------===//
// Plans
//===----------------------------------------------------------------------===//

const char *lockstep::rt::eventKindName(EventKind kind) {
  switch (kind) {
  case EventKind::Admit:
    return "admit";
  case EventKind::PreemptRecompute:
    return "preempt-recompute";
  case EventKind::PreemptSwap:
    return "preempt-swap";
  case EventKind::EvictRecompute:
    return "evict-recompute";
  case EventKind::EvictSwap:
    return "evict-swap";
  case EventKind::SwapIn:
    return "swap-in";
  case EventKind::Readmit:
    return "readmit";
  }
  return "?";
}

int64_t StepPlan::numTokens() const {
  int64_t n = 0;
  for (const StepEntry &e : entries)
    n += int64_t(e.tokens.size());
  return n;
}

//===----------------------------------------------------------------------===//
// Scheduler
//===----------------------------------------------------------------------===//

Scheduler::Scheduler(const SchedulerConfig &config, const PolicyConfig &pol,
                     KVCache &kv)
    : cfg(config), policy(pol), kv(kv) {}

bool Scheduler::validate(const SchedulerConfig &cfg, const KVCacheConfig &kvc,
                         const Request &r, std::string &reason) {
  auto reject = [&](std::string why) {
    reason = std::move(why);
    return false;
  };
  if (r.prompt.empty())
    return reject("empty prompt");
  if (r.maxNewTokens < 1)
    return reject("maxNewTokens must be at least 1");
  int64_t p = int64_t(r.prompt.size());
  if (r.maxNewTokens > cfg.maxContext - p)
    return reject("prompt of " + std::to_string(p) + " tokens + " +
                  std::to_string(r.maxNewTokens) +
                  " new tokens exceeds the context of " +
                  std::to_string(cfg.maxContext) +
                  (cfg.maxContextSource.empty() ? "" : " (" + cfg.maxContextSource + ")"));
  for (size_t i = 0; i < r.prompt.size(); ++i)
    if (r.prompt[i] < 0 || r.prompt[i] >= cfg.vocab)
      return reject("token id " + std::to_string(r.prompt[i]) +
                    " at prompt position " + std::to_string(i) +
                    " is outside the vocabulary [0, " +
                    std::to_string(cfg.vocab) + ")");
  std::string why;
  if (!validateSamplingParams(r.sampling, why))
    return reject("sampling: " + why);
  // At its longest the cache holds every token but the last one generated
  // (which is sampled, never fed).
  if (kvc.blockSize < 1)
    return reject("the KV cache's block size is not positive");
  int64_t blocks = (p + r.maxNewTokens - 1 + kvc.blockSize - 1) / kvc.blockSize;
  if (blocks > kvc.numBlocks)
    return reject("needs " + std::to_string(blocks) +
                  " KV blocks at its longest; the cache has " +
                  std::to_string(kvc.numBlocks));
  return true;
}

bool Scheduler::add(const Request &r, std::string &reason) {
  auto reject = [&](std::string why) {
    reason = std::move(why);
    ++st.rejected;
    return false;
  };
  if (seqs.count(r.id))
    return reject("duplicate request id " + std::to_string(r.id));
  if (!validate(cfg, kv.config(), r, reason))
    return reject(reason);

  Seq s;
  s.req = r;
  s.tokens = r.prompt;
  s.arrivalStep = step + policy.uniform(0, policy.config().maxArrivalDelay);
  seqs.emplace(r.id, std::move(s));
  order.push_back(r.id);
  pending.push_back(r.id);
  ++unfinished;
  return true;
}

bool Scheduler::waitingForArrivals() const {
  if (script) // the recorded idle steps are steps like the others
    return step < int64_t(script->size());
  for (uint64_t id : pending)
    if (seqs.at(id).arrivalStep > step)
      return true;
  return false;
}

const std::vector<int32_t> *Scheduler::tokens(uint64_t id) const {
  auto it = seqs.find(id);
  return it == seqs.end() ? nullptr : &it->second.tokens;
}

int64_t Scheduler::promptLength(uint64_t id) const {
  auto it = seqs.find(id);
  return it == seqs.end() ? 0 : int64_t(it->second.req.prompt.size());
}

const Request *Scheduler::request(uint64_t id) const {
  auto it = seqs.find(id);
  return it == seqs.end() ? nullptr : &it->second.req;
}

bool Scheduler::isFinished(uint64_t id) const {
  auto it = seqs.find(id);
  return it != seqs.end() && it->second.state == State::Finished;
}

bool Scheduler::cancel(uint64_t id) {
  auto it = seqs.find(id);
  if (it == seqs.end() || it->second.state == State::Finished ||
      (outstanding && it->second.inPlan))
    return false;
  Seq &s = it->second;
  if (s.state == State::Pending)
    pending.erase(std::find(pending.begin(), pending.end(), id));
  kv.release(id);
  s.state = State::Finished;
  --unfinished;
  ++st.cancelled;
  return true;
}

bool Scheduler::forget(uint64_t id) {
  auto it = seqs.find(id);
  if (it == seqs.end() || it->second.state != State::Finished)
    return false;
  seqs.erase(it);
  order.erase(std::find(order.begin(), order.end(), id));
  return true;
}

void Scheduler::releaseAll() {
  for (auto &[id, s] : seqs)
    if (s.state != State::Finished)
      kv.release(id);
}

void Scheduler::preempt(Seq &v, bool evict, StepPlan &plan) {
  PreemptMode mode = policy.config().preempt;
  if (mode == PreemptMode::Random)
    mode = policy.chance(0.5) ? PreemptMode::Swap : PreemptMode::Recompute;
  if (mode == PreemptMode::Swap && kv.swapOut(v.req.id)) {
    v.state = State::Swapped;
    plan.events.push_back(
        {evict ? EventKind::EvictSwap : EventKind::PreemptSwap, v.req.id});
    ++st.preemptSwap;
  } else {
    // By recompute (also when the host space is full).
    kv.release(v.req.id);
    v.computed = 0;
    v.state = State::Preempted;
    plan.events.push_back(
        {evict ? EventKind::EvictRecompute : EventKind::PreemptRecompute,
         v.req.id});
    ++st.preemptRecompute;
  }
  if (evict)
    ++st.evictions;
}

int64_t Scheduler::tryRun(Seq &s, int64_t budget, StepPlan &plan) {
  uint64_t id = s.req.id;
  int64_t remaining = int64_t(s.tokens.size()) - s.computed;
  int64_t chunk = std::min({remaining, budget, cfg.maxPrefillChunk});
  if (chunk < 1)
    return 0;
  if (policy.config().randomChunks && chunk > 1)
    chunk = policy.uniform(1, chunk);

  // Device blocks it holds now, and the victims it may take blocks from:
  // running requests of lower priority that are not in this step.
  int64_t onDevice =
      s.state == State::Running ? int64_t(kv.blockTable(id).size()) : 0;
  std::vector<Seq *> victims;
  int64_t victimBlocks = 0;
  if (s.state != State::Pending)
    for (auto &[vid, v] : seqs)
      if (v.state == State::Running && !v.inPlan && &v != &s &&
          v.priority > s.priority) {
        victims.push_back(&v);
        victimBlocks += int64_t(kv.blockTable(vid).size());
      }
  // Shrink the chunk to what could fit at best; give up (preempting nobody)
  // if not even one token (after swapping in) fits.
  int64_t bs = kv.config().blockSize;
  int64_t fits = (onDevice + kv.freeBlocks() + victimBlocks) * bs - s.computed;
  if (s.state == State::Swapped &&
      kv.blocksFor(kv.length(id)) > kv.freeBlocks() + victimBlocks)
    fits = 0;
  chunk = std::min(chunk, fits);
  if (chunk < 1)
    return 0;
  int64_t need = kv.blocksFor(s.computed + chunk) - onDevice;
  // Victims in policy order: newest admitted first, or a random one.
  std::sort(victims.begin(), victims.end(),
            [](const Seq *a, const Seq *b) { return a->priority > b->priority; });
  while (kv.freeBlocks() < need && !victims.empty()) {
    size_t pick = policy.config().victim == VictimChoice::Random
                      ? size_t(policy.uniform(0, int64_t(victims.size()) - 1))
                      : 0;
    Seq *v = victims[pick];
    victims.erase(victims.begin() + int64_t(pick));
    preempt(*v, /*evict=*/false, plan);
  }
  if (kv.freeBlocks() < need)
    return 0; // unreachable: the victims' blocks were counted

  switch (s.state) {
  case State::Swapped:
    if (!kv.swapIn(id))
      return 0; // unreachable: room was made for it
    plan.events.push_back({EventKind::SwapIn, id});
    ++st.swapIns;
    break;
  case State::Pending:
    s.priority = nextPriority++;
    pending.erase(std::find(pending.begin(), pending.end(), id));
    plan.events.push_back({EventKind::Admit, id});
    ++st.admitted;
    break;
  case State::Preempted:
    plan.events.push_back({EventKind::Readmit, id});
    break;
  default:
    break;
  }
  s.state = State::Running;
  if (!kv.reserve(id, s.computed + chunk))
    return 0; // unreachable: the blocks are free

  StepEntry e;
  e.seq = id;
  e.startPosition = s.computed;
  e.tokens.assign(s.tokens.begin() + s.computed,
                  s.tokens.begin() + s.computed + chunk);
  e.wantLogits = s.computed + chunk == int64_t(s.tokens.size());
  plan.entries.push_back(std::move(e));
  s.inPlan = true;
  st.recomputedTokens +=
      std::max<int64_t>(0, std::min(s.everComputed, s.computed + chunk) -
                               s.computed);
  return chunk;
}

bool Scheduler::schedule(StepPlan &plan, std::string &error) {
  if (outstanding) {
    error = "scheduler: step " + std::to_string(step) +
            " was planned but not completed";
    return false;
  }
  if (script)
    return scheduleScripted(plan, error);
  plan = StepPlan();
  plan.step = step;
  const PolicyConfig &pc = policy.config();
  int64_t budget = std::max<int64_t>(1, cfg.tokenBudget);
  int64_t cap = std::max<int64_t>(1, cfg.maxSeqs);
  if (pc.randomBudgets) {
    budget = policy.uniform(1, budget);
    cap = policy.uniform(1, cap);
  }
  plan.tokenBudget = budget;
  plan.maxSeqs = cap;

  // Admitted, unfinished requests by priority.
  std::vector<Seq *> admitted;
  for (auto &[id, s] : seqs)
    if (s.state == State::Running || s.state == State::Swapped ||
        s.state == State::Preempted)
      admitted.push_back(&s);
  std::sort(admitted.begin(), admitted.end(),
            [](const Seq *a, const Seq *b) { return a->priority < b->priority; });

  // Random eviction of a running request other than the first.
  if (policy.chance(pc.evictProbability)) {
    std::vector<Seq *> running;
    for (size_t i = 1; i < admitted.size(); ++i)
      if (admitted[i]->state == State::Running)
        running.push_back(admitted[i]);
    if (!running.empty())
      preempt(*running[size_t(policy.uniform(0, int64_t(running.size()) - 1))],
              /*evict=*/true, plan);
  }

  if (pc.shuffle)
    for (size_t i = admitted.size(); i > 2; --i)
      std::swap(admitted[i - 1], admitted[size_t(policy.uniform(1, int64_t(i) - 1))]);

  for (size_t i = 0; i < admitted.size(); ++i) {
    if (budget == 0 || int64_t(plan.entries.size()) == cap)
      break;
    if (i > 0 && policy.chance(pc.skipProbability))
      continue;
    budget -= tryRun(*admitted[i], budget, plan);
  }

  // Admission of arrived requests, until one does not fit.
  while (budget > 0 && int64_t(plan.entries.size()) < cap) {
    std::vector<uint64_t> arrived;
    for (uint64_t id : pending)
      if (seqs.at(id).arrivalStep <= step)
        arrived.push_back(id);
    if (arrived.empty())
      break;
    size_t pick = pc.admission == AdmissionOrder::Random
                      ? size_t(policy.uniform(0, int64_t(arrived.size()) - 1))
                      : 0;
    int64_t n = tryRun(seqs.at(arrived[pick]), budget, plan);
    if (n == 0)
      break;
    budget -= n;
  }

  account(plan);
  return true;
}

void Scheduler::account(const StepPlan &plan) {
  if (plan.entries.empty()) {
    ++st.idleSteps;
  } else {
    ++st.steps;
    st.tokens += plan.numTokens();
    st.largestBatchSeqs =
        std::max<int64_t>(st.largestBatchSeqs, int64_t(plan.entries.size()));
    st.largestBatchTokens = std::max(st.largestBatchTokens, plan.numTokens());
  }
  outstanding = true;
}

void Scheduler::setScript(std::vector<StepPlan> s) { script = std::move(s); }

bool Scheduler::scheduleScripted(StepPlan &plan, std::string &error) {
  auto fail = [&](const std::string &why) {
    error = "the trace's step " + std::to_string(step) + " cannot be taken: " + why;
    return false;
  };
  if (step >= int64_t(script->size()))
    return fail("the trace ends after " + std::to_string(script->size()) +
                " steps and requests are unfinished");
  const StepPlan &want = (*script)[size_t(step)];
  plan = StepPlan();
  plan.step = step;
  plan.tokenBudget = want.tokenBudget;
  plan.maxSeqs = want.maxSeqs;
  for (const StepEvent &e : want.events) {
    auto it = seqs.find(e.seq);
    if (it == seqs.end())
      return fail("request " + std::to_string(e.seq) + " is unknown");
    Seq &s = it->second;
    std::string who = std::string(eventKindName(e.kind)) + " of request " + std::to_string(e.seq);
    switch (e.kind) {
    case EventKind::Admit:
      if (s.state != State::Pending)
        return fail(who + ", which is not waiting");
      s.priority = nextPriority++;
      pending.erase(std::find(pending.begin(), pending.end(), e.seq));
      s.state = State::Running;
      ++st.admitted;
      break;
    case EventKind::Readmit:
      if (s.state != State::Preempted)
        return fail(who + ", which is not preempted");
      s.state = State::Running;
      break;
    case EventKind::SwapIn:
      if (s.state != State::Swapped || !kv.swapIn(e.seq))
        return fail(who + ": not swapped out, or too few free blocks");
      s.state = State::Running;
      ++st.swapIns;
      break;
    case EventKind::PreemptRecompute:
    case EventKind::EvictRecompute:
      if (s.state != State::Running)
        return fail(who + ", which is not running");
      kv.release(e.seq);
      s.computed = 0;
      s.state = State::Preempted;
      ++st.preemptRecompute;
      st.evictions += e.kind == EventKind::EvictRecompute;
      break;
    case EventKind::PreemptSwap:
    case EventKind::EvictSwap:
      if (s.state != State::Running || !kv.swapOut(e.seq))
        return fail(who + ": not running, or too little host space");
      s.state = State::Swapped;
      ++st.preemptSwap;
      st.evictions += e.kind == EventKind::EvictSwap;
      break;
    }
    plan.events.push_back(e);
  }
  for (const StepEntry &want_e : want.entries) {
    auto it = seqs.find(want_e.seq);
    if (it == seqs.end())
      return fail("request " + std::to_string(want_e.seq) + " is unknown");
    Seq &s = it->second;
    int64_t n = int64_t(want_e.tokens.size());
    std::string who = "running request " + std::to_string(want_e.seq);
    if (s.state != State::Running || s.inPlan)
      return fail(who + ", which is not running");
    if (want_e.startPosition != s.computed || n < 1 ||
        s.computed + n > int64_t(s.tokens.size()))
      return fail(who + " from position " + std::to_string(want_e.startPosition) + " for " +
                  std::to_string(n) + " tokens: it has " + std::to_string(s.computed) +
                  " in the cache and " + std::to_string(s.tokens.size()) + " known");
    bool wantLogits = s.computed + n == int64_t(s.tokens.size());
    if (wantLogits != want_e.wantLogits)
      return fail(who + ": the trace " + (want_e.wantLogits ? "samples" : "does not sample") +
                  " after it, the requests say otherwise");
    if (!kv.reserve(want_e.seq, s.computed + n))
      return fail(who + ": too few free KV blocks");
    StepEntry e;
    e.seq = want_e.seq;
    e.startPosition = s.computed;
    e.tokens.assign(s.tokens.begin() + s.computed, s.tokens.begin() + s.computed + n);
    e.wantLogits = wantLogits;
    st.recomputedTokens +=
        std::max<int64_t>(0, std::min(s.everComputed, s.computed + n) - s.computed);
    s.inPlan = true;
    plan.entries.push_back(std::move(e));
  }
  account(plan);
  return true;
}

bool Scheduler::complete(const StepPlan &plan,
                         const std::vector<int32_t> &sampled,
                         std::string &error) {
  if (!outstanding || plan.step != step) {
    error = "scheduler: step " + std::to_string(plan.step) +
            " is not the outstanding one";
    return false;
  }
  if (sampled.size() != plan.entries.size()) {
    error = "scheduler: " + std::to_string(sampled.size()) +
            " sampled tokens for " + std::to_string(plan.entries.size()) +
            " entries";
    return false;
  }
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const StepEntry &e = plan.entries[i];
    auto it = seqs.find(e.seq);
    if (it == seqs.end() || !it->second.inPlan ||
        it->second.computed != e.startPosition) {
      error = "scheduler: entry for request " + std::to_string(e.seq) +
              " does not match the plan";
      return false;
    }
    if (e.wantLogits && (sampled[i] < 0 || sampled[i] >= cfg.vocab)) {
      error = "scheduler: sampled token " + std::to_string(sampled[i]) +
              " for request " + std::to_string(e.seq) +
              " is outside the vocabulary";
      return false;
    }
  }
  for (size_t i = 0; i < plan.entries.size(); ++i) {
    const StepEntry &e = plan.entries[i];
    Seq &s = seqs.at(e.seq);
    s.inPlan = false;
    s.computed += int64_t(e.tokens.size());
    s.everComputed = std::max(s.everComputed, s.computed);
    if (!e.wantLogits)
      continue;
    int32_t tok = sampled[i];
    s.tokens.push_back(tok);
    ++s.generated;
    ++st.generated;
    if (s.generated >= s.req.maxNewTokens ||
        (cfg.eosToken >= 0 && tok == cfg.eosToken)) {
      s.state = State::Finished;
      kv.release(e.seq);
      --unfinished;
      ++st.finished;
    }
  }
  ++step;
  outstanding = false;
  return true;
}
