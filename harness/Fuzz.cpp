//===- Fuzz.cpp - The schedule-fuzzing campaign ---------------------------===//
#include "lockstep/Harness/Fuzz.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>

using namespace lockstep::rt;

namespace {

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9e3779b97f4a7c15ULL + b + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t blocksFor(int64_t tokens, int64_t blockSize) {
  return (tokens + blockSize - 1) / blockSize;
}

/// Float bits as an ordered integer, so that ulp distances are differences.
int64_t ordered(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? int64_t(INT32_MIN) - i : i;
}

} // namespace

ScheduleSetup lockstep::rt::baselineSetup(const std::vector<Request> &requests,
                                          int64_t vocab) {
  ScheduleSetup s;
  int64_t longestPrompt = 1, longest = 1;
  for (const Request &r : requests) {
    longestPrompt = std::max<int64_t>(longestPrompt, r.prompt.size());
    longest = std::max<int64_t>(longest, r.prompt.size() + r.maxNewTokens);
  }
  s.policy = PolicyConfig::deterministicDefault();
  s.scheduler.tokenBudget = longestPrompt;
  s.scheduler.maxPrefillChunk = longestPrompt;
  s.scheduler.maxSeqs = 1;
  s.scheduler.maxContext = longest;
  s.scheduler.vocab = vocab;
  s.blockSize = 16;
  s.kvBlocks = blocksFor(longest, s.blockSize);
  s.hostBlocks = 0;
  return s;
}

ScheduleSetup lockstep::rt::drawSchedule(uint64_t campaignSeed, int64_t index,
                                         const std::vector<Request> &requests,
                                         int64_t vocab, int64_t maxThreads) {
  ScheduleSetup s;
  s.index = index;
  s.seed = mix(campaignSeed, uint64_t(index));
  PolicyConfig knobsCfg;
  knobsCfg.seed = mix(s.seed, 0x6c6f636b);
  Policy knobs(knobsCfg);
  s.policy = PolicyConfig::fuzz(s.seed);
  static const int64_t blockSizes[] = {1, 2, 4, 16, 64};
  s.blockSize = blockSizes[knobs.uniform(0, 4)];
  int64_t longest = 1, total = 0, prompts = 0, longestPrompt = 1;
  for (const Request &r : requests) {
    int64_t ctx = int64_t(r.prompt.size()) + r.maxNewTokens;
    longest = std::max(longest, ctx);
    prompts += int64_t(r.prompt.size());
    longestPrompt = std::max<int64_t>(longestPrompt, r.prompt.size());
    total += blocksFor(ctx, s.blockSize);
  }
  int64_t least = blocksFor(longest, s.blockSize);
  // Tight budgets half of the time, so that preemption is common.
  s.kvBlocks = knobs.chance(0.5) ? knobs.uniform(least, std::max(least, 2 * least))
                                 : knobs.uniform(least, std::max(least, total));
  s.hostBlocks = knobs.chance(0.3) ? 0 : knobs.uniform(least, std::max(least, total));
  s.scheduler.tokenBudget = knobs.uniform(1, 160);
  s.scheduler.maxSeqs = knobs.uniform(1, 48);
  s.scheduler.maxPrefillChunk = knobs.uniform(1, s.scheduler.tokenBudget);
  s.scheduler.maxContext = longest;
  s.scheduler.vocab = vocab;
  // A quarter of the schedules are wide: every request resident and in
  // every step at once until the first one ends (all arrive together, no
  // skips, evictions or budget cuts, a KV budget that holds them all and a
  // token budget that feeds all of them a chunk), so that steps hold all of
  // the campaign's requests, however many: the widest batches, where a
  // backend would be tempted to split differently. Chunk sizes stay random.
  // Every fourth schedule is wide whatever the draw, so that a campaign of
  // four schedules or more always has one.
  bool wide = knobs.chance(0.25);
  if (wide || index % 4 == 3) {
    int64_t n = std::max<int64_t>(int64_t(requests.size()), 1);
    s.kvBlocks = std::max(total, least);
    s.scheduler.maxSeqs = n;
    s.scheduler.tokenBudget = prompts + n;
    s.scheduler.maxPrefillChunk = knobs.uniform(1, longestPrompt);
    s.policy.maxArrivalDelay = 0;
    s.policy.skipProbability = 0;
    s.policy.evictProbability = 0;
    s.policy.randomBudgets = false;
  }
  // From a generator of its own, so that the other draws do not depend on
  // the machine's core count.
  PolicyConfig threadsCfg;
  threadsCfg.seed = mix(s.seed, 0x74687264);
  s.threads = Policy(threadsCfg).uniform(1, std::max<int64_t>(maxThreads, 1));
  return s;
}

bool lockstep::rt::runSchedule(StepModel &model, const CacheConfigFn &cache,
                               const ScheduleSetup &setup,
                               const std::vector<Request> &requests, ScheduleRun &out,
                               std::string &error, const std::atomic<bool> *cancel,
                               const std::vector<StepPlan> *script) {
  EngineConfig cfg;
  if (script)
    cfg.script = *script;
  cfg.kv = cache(setup.blockSize, setup.kvBlocks, setup.hostBlocks);
  cfg.scheduler = setup.scheduler;
  cfg.policy = setup.policy;
  cfg.keepLogits = setup.keepLogits;
  cfg.rowPool = setup.rowPool;
  auto engine = Engine::create(model, cfg, error);
  if (!engine)
    return false;
  out = ScheduleRun();
  uint64_t maxId = 0;
  for (const Request &r : requests)
    maxId = std::max(maxId, r.id);
  out.tokenSteps.assign(maxId + 1, {});
  int64_t steps = 0;
  EngineCallbacks cb;
  cb.cancel = cancel;
  cb.onToken = [&](uint64_t id, int64_t, int32_t, const float *) {
    if (id < out.tokenSteps.size())
      out.tokenSteps[id].push_back(steps);
  };
  auto last = std::chrono::steady_clock::now();
  cb.onStep = [&](const StepPlan &plan) {
    auto now = std::chrono::steady_clock::now();
    out.stepSeconds.push_back(std::chrono::duration<double>(now - last).count());
    last = now;
    out.plans.push_back(plan);
    ++steps;
  };
  last = std::chrono::steady_clock::now();
  return engine->run(requests, out.result, error, cb);
}

Comparison lockstep::rt::compareRuns(const ScheduleRun &baseline, const ScheduleRun &run,
                                     const ScheduleSetup &setup,
                                     const std::vector<Request> &requests, int64_t vocab) {
  Comparison c;
  auto earlier = [](const Mismatch &a, const Mismatch &b) {
    return a.step != b.step ? a.step < b.step : a.request < b.request;
  };
  auto note = [&](Mismatch m) {
    ++c.mismatches;
    m.schedule = setup.index;
    m.scheduleSeed = setup.seed;
    if (!c.first || earlier(m, *c.first))
      c.first = m;
  };
  for (size_t i = 0; i < baseline.result.requests.size(); ++i) {
    const RequestResult &b = baseline.result.requests[i];
    const RequestResult *r =
        i < run.result.requests.size() ? &run.result.requests[i] : nullptr;
    if (b.status != RequestStatus::Ok)
      continue; // rejected alone: nothing to compare
    const std::vector<int64_t> &steps =
        b.id < run.tokenSteps.size() ? run.tokenSteps[b.id] : std::vector<int64_t>();
    if (!r || r->status != RequestStatus::Ok || r->generated.size() != b.generated.size()) {
      Mismatch m;
      m.request = b.id;
      m.step = steps.empty() ? 0 : steps.back();
      m.what = !r ? "missing from the schedule's results"
               : r->status != RequestStatus::Ok
                   ? std::string("ended ") + requestStatusName(r->status) +
                         (r->reason.empty() ? "" : ": " + r->reason)
                   : "generated " + std::to_string(r->generated.size()) +
                         " tokens instead of " + std::to_string(b.generated.size());
      note(m);
      continue;
    }
    for (size_t g = 0; g < b.generated.size(); ++g) {
      const float *x = b.logits.data() + g * vocab, *y = r->logits.data() + g * vocab;
      ++c.tokens;
      c.logits += vocab;
      if (std::memcmp(x, y, size_t(vocab) * 4) == 0)
        continue;
      Mismatch m;
      m.request = b.id;
      m.generatedIndex = int64_t(g);
      m.position = int64_t(i < requests.size() ? requests[i].prompt.size() : 0) + int64_t(g);
      m.step = g < steps.size() ? steps[g] : -1;
      for (int64_t v = 0; v < vocab; ++v) {
        uint32_t bx, by;
        std::memcpy(&bx, x + v, 4);
        std::memcpy(&by, y + v, 4);
        if (bx == by)
          continue;
        ++m.differing;
        int64_t d = ordered(x[v]) - ordered(y[v]);
        m.maxUlps = std::max<uint64_t>(m.maxUlps, uint64_t(d < 0 ? -d : d));
      }
      note(m);
    }
  }
  return c;
}

std::string lockstep::rt::describeMismatch(const Mismatch &m) {
  std::string s = "request " + std::to_string(m.request);
  if (!m.what.empty())
    return s + " " + m.what + " (schedule " + std::to_string(m.schedule) + ", seed " +
           std::to_string(m.scheduleSeed) + ")";
  return s + ", generated token " + std::to_string(m.generatedIndex) + " (position " +
         std::to_string(m.position) + "), step " + std::to_string(m.step) +
         ", schedule " + std::to_string(m.schedule) + " (seed " +
         std::to_string(m.scheduleSeed) + "): " + std::to_string(m.differing) +
         " logits differ, by up to " + std::to_string(m.maxUlps) + " ulps";
}
