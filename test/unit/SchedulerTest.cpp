//===- SchedulerTest.cpp - Continuous batching ----------------------------===//
//
// The scheduler is driven here without a model: a "sampled" token is a fixed
// function of (request, position). A shadow of what each request has in the
// cache checks every plan: each entry continues exactly where the request's
// cached tokens end (from 0 after a preemption by recompute), feeds the
// request's own known tokens, asks for logits exactly at the last known
// token, fits the step's limits, and owns blocks no other entry owns.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Runtime/Serving/Scheduler.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

using namespace lockstep::rt;

namespace {

constexpr int64_t kVocab = 50;

KVCacheConfig cacheConfig(int64_t numBlocks, int64_t hostBlocks) {
  KVCacheConfig c;
  c.layers = 1;
  c.kvHeads = 1;
  c.headDim = 2;
  c.blockSize = 4;
  c.numBlocks = numBlocks;
  c.hostBlocks = hostBlocks;
  return c;
}

SchedulerConfig schedConfig(int64_t budget, int64_t maxSeqs, int64_t chunk) {
  SchedulerConfig c;
  c.tokenBudget = budget;
  c.maxSeqs = maxSeqs;
  c.maxPrefillChunk = chunk;
  c.maxContext = 64;
  c.vocab = kVocab;
  return c;
}

int32_t fakeSample(uint64_t seq, int64_t position) {
  return int32_t((seq * 31 + uint64_t(position) * 7) % kVocab);
}

Request makeRequest(uint64_t id, int64_t promptLen, int64_t maxNew) {
  Request r;
  r.id = id;
  for (int64_t i = 0; i < promptLen; ++i)
    r.prompt.push_back(int32_t((id * 13 + uint64_t(i) * 5) % kVocab));
  r.maxNewTokens = maxNew;
  return r;
}

struct Driven {
  std::string trace; // every plan, for determinism checks
  std::map<uint64_t, std::vector<int32_t>> tokens;
  SchedulerStats stats;
  std::vector<StepPlan> plans;
};

// Runs `requests` to completion, checking every plan against the shadow.
Driven drive(const SchedulerConfig &sc, const PolicyConfig &pc,
             const KVCacheConfig &kc, const std::vector<Request> &requests) {
  Driven out;
  std::string error;
  auto kv = KVCache::create(kc, error);
  EXPECT_TRUE(kv) << error;
  Scheduler s(sc, pc, *kv);
  std::map<uint64_t, std::vector<int32_t>> known;
  std::map<uint64_t, int64_t> cached;
  std::map<uint64_t, int64_t> left;
  for (const Request &r : requests) {
    std::string reason;
    EXPECT_TRUE(s.add(r, reason)) << reason;
    known[r.id] = r.prompt;
    cached[r.id] = 0;
    left[r.id] = r.maxNewTokens;
  }
  std::ostringstream trace;
  for (int guard = 0; !s.done(); ++guard) {
    if (guard > 100000) {
      ADD_FAILURE() << "no progress";
      break;
    }
    StepPlan plan;
    EXPECT_TRUE(s.schedule(plan, error)) << error;
    trace << "step " << plan.step << " budget " << plan.tokenBudget << " cap "
          << plan.maxSeqs << ":";
    for (const StepEvent &e : plan.events) {
      trace << " " << eventKindName(e.kind) << "(" << e.seq << ")";
      if (e.kind == EventKind::PreemptRecompute ||
          e.kind == EventKind::EvictRecompute)
        cached[e.seq] = 0;
    }
    EXPECT_LE(plan.tokenBudget, sc.tokenBudget);
    EXPECT_LE(plan.maxSeqs, sc.maxSeqs);
    EXPECT_LE(plan.numTokens(), plan.tokenBudget);
    EXPECT_LE(int64_t(plan.entries.size()), plan.maxSeqs);
    std::set<int32_t> blocksInStep;
    std::set<uint64_t> seqsInStep;
    std::vector<int32_t> sampled;
    for (const StepEntry &e : plan.entries) {
      trace << " [" << e.seq << "@" << e.startPosition << "+"
            << e.tokens.size() << (e.wantLogits ? "*" : "") << "]";
      EXPECT_TRUE(seqsInStep.insert(e.seq).second);
      const std::vector<int32_t> &k = known[e.seq];
      EXPECT_EQ(e.startPosition, cached[e.seq]) << "request " << e.seq;
      EXPECT_GE(e.tokens.size(), 1u);
      EXPECT_LE(int64_t(e.tokens.size()), sc.maxPrefillChunk);
      int64_t end = e.startPosition + int64_t(e.tokens.size());
      EXPECT_LE(end, int64_t(k.size()));
      EXPECT_TRUE(std::equal(e.tokens.begin(), e.tokens.end(),
                             k.begin() + e.startPosition));
      EXPECT_EQ(e.wantLogits, end == int64_t(k.size()));
      EXPECT_EQ(kv->length(e.seq), end);
      const std::vector<int32_t> &bt = kv->blockTable(e.seq);
      EXPECT_EQ(int64_t(bt.size()), kv->blocksFor(end));
      for (int32_t b : bt)
        EXPECT_TRUE(blocksInStep.insert(b).second) << "block " << b;
      cached[e.seq] = end;
      int32_t tok = e.wantLogits ? fakeSample(e.seq, end) : -1;
      sampled.push_back(tok);
      if (e.wantLogits) {
        known[e.seq].push_back(tok);
        --left[e.seq];
      }
    }
    trace << "\n";
    out.plans.push_back(plan);
    EXPECT_TRUE(s.complete(plan, sampled, error)) << error;
  }
  for (auto &[id, n] : left) {
    EXPECT_EQ(n, 0) << "request " << id;
    EXPECT_TRUE(s.isFinished(id));
    EXPECT_EQ(*s.tokens(id), known[id]);
  }
  EXPECT_EQ(kv->numSequences(), 0);
  EXPECT_EQ(kv->freeBlocks(), kc.numBlocks);
  EXPECT_EQ(kv->freeHostBlocks(), kc.hostBlocks);
  out.trace = trace.str();
  out.tokens = known;
  out.stats = s.stats();
  return out;
}

std::vector<Request> mixedRequests(int n) {
  std::vector<Request> rs;
  for (int i = 0; i < n; ++i)
    rs.push_back(makeRequest(uint64_t(100 + i), 1 + (i * 7) % 19, 1 + (i * 5) % 9));
  return rs;
}

} // namespace

TEST(Scheduler, RejectsWithReasons) {
  std::string error;
  auto kv = KVCache::create(cacheConfig(4, 0), error);
  ASSERT_TRUE(kv);
  SchedulerConfig sc = schedConfig(16, 4, 16);
  sc.maxContext = 20;
  Scheduler s(sc, PolicyConfig(), *kv);
  std::string reason;
  EXPECT_TRUE(s.add(makeRequest(1, 5, 3), reason));
  EXPECT_FALSE(s.add(makeRequest(1, 5, 3), reason));
  EXPECT_NE(reason.find("duplicate"), std::string::npos) << reason;
  EXPECT_FALSE(s.add(makeRequest(2, 0, 3), reason));
  EXPECT_NE(reason.find("empty prompt"), std::string::npos) << reason;
  EXPECT_FALSE(s.add(makeRequest(3, 5, 0), reason));
  EXPECT_NE(reason.find("maxNewTokens"), std::string::npos) << reason;
  EXPECT_FALSE(s.add(makeRequest(4, 15, 6), reason));
  EXPECT_NE(reason.find("exceeds the context of 20"), std::string::npos)
      << reason;
  Request bad = makeRequest(5, 5, 3);
  bad.prompt[2] = int32_t(kVocab);
  EXPECT_FALSE(s.add(bad, reason));
  EXPECT_NE(reason.find("outside the vocabulary"), std::string::npos) << reason;
  bad.prompt[2] = -1;
  EXPECT_FALSE(s.add(bad, reason));
  Request nan = makeRequest(6, 5, 3);
  nan.sampling.topP = 0;
  EXPECT_FALSE(s.add(nan, reason));
  EXPECT_NE(reason.find("topP"), std::string::npos) << reason;
  // 4 blocks of 4 tokens hold 16 tokens; 12 + 6 - 1 = 17 would not fit.
  EXPECT_FALSE(s.add(makeRequest(7, 12, 6), reason));
  EXPECT_NE(reason.find("KV blocks"), std::string::npos) << reason;
  EXPECT_TRUE(s.add(makeRequest(8, 12, 5), reason)) << reason;
  EXPECT_EQ(s.stats().rejected, 8);
  EXPECT_EQ(s.accepted(), (std::vector<uint64_t>{1, 8}));
}

TEST(Scheduler, DefaultPolicyPrefillsWholeThenDecodes) {
  std::vector<Request> rs = {makeRequest(1, 6, 3), makeRequest(2, 3, 2)};
  Driven d = drive(schedConfig(64, 8, 64), PolicyConfig::deterministicDefault(),
                   cacheConfig(32, 0), rs);
  EXPECT_EQ(d.trace, "step 0 budget 64 cap 8: admit(1) admit(2) [1@0+6*] [2@0+3*]\n"
                     "step 1 budget 64 cap 8: [1@6+1*] [2@3+1*]\n"
                     "step 2 budget 64 cap 8: [1@7+1*]\n");
  EXPECT_EQ(d.stats.steps, 3);
  EXPECT_EQ(d.stats.tokens, 6 + 3 + 2 + 1);
  EXPECT_EQ(d.stats.generated, 5);
  EXPECT_EQ(d.stats.largestBatchSeqs, 2);
  EXPECT_EQ(d.stats.largestBatchTokens, 9);
  EXPECT_EQ(d.tokens[1].size(), 9u);
  EXPECT_EQ(d.tokens[1][6], fakeSample(1, 6));
}

TEST(Scheduler, ChunkedPrefillUnderBudgetAndChunkLimit) {
  // Chunks of at most 4; a budget of 6 tokens per step shared in FIFO order.
  std::vector<Request> rs = {makeRequest(1, 10, 2), makeRequest(2, 3, 1)};
  Driven d = drive(schedConfig(6, 8, 4), PolicyConfig::deterministicDefault(),
                   cacheConfig(32, 0), rs);
  EXPECT_EQ(d.trace, "step 0 budget 6 cap 8: admit(1) admit(2) [1@0+4] [2@0+2]\n"
                     "step 1 budget 6 cap 8: [1@4+4] [2@2+1*]\n"
                     "step 2 budget 6 cap 8: [1@8+2*]\n"
                     "step 3 budget 6 cap 8: [1@10+1*]\n");
}

TEST(Scheduler, SequenceCap) {
  std::vector<Request> rs = mixedRequests(5);
  Driven d = drive(schedConfig(64, 2, 64), PolicyConfig::deterministicDefault(),
                   cacheConfig(64, 0), rs);
  EXPECT_EQ(d.stats.largestBatchSeqs, 2);
}

TEST(Scheduler, EosFinishesEarly) {
  std::string error;
  auto kv = KVCache::create(cacheConfig(8, 0), error);
  SchedulerConfig sc = schedConfig(64, 8, 64);
  sc.eosToken = 3;
  Scheduler s(sc, PolicyConfig(), *kv);
  std::string reason;
  ASSERT_TRUE(s.add(makeRequest(1, 4, 10), reason));
  StepPlan plan;
  ASSERT_TRUE(s.schedule(plan, error));
  ASSERT_TRUE(s.complete(plan, {7}, error));
  ASSERT_TRUE(s.schedule(plan, error));
  // Completing twice, or a token outside the vocabulary, is refused.
  ASSERT_FALSE(s.schedule(plan, error));
  EXPECT_FALSE(s.complete(plan, {int32_t(kVocab)}, error));
  EXPECT_NE(error.find("outside the vocabulary"), std::string::npos);
  ASSERT_TRUE(s.complete(plan, {3}, error));
  EXPECT_FALSE(s.complete(plan, {3}, error));
  EXPECT_TRUE(s.done());
  EXPECT_EQ(*s.tokens(1), (std::vector<int32_t>{13, 18, 23, 28, 7, 3}));
  EXPECT_EQ(kv->numSequences(), 0);
}

TEST(Scheduler, PreemptsNewestByRecomputeWhenMemoryRunsOut) {
  // 6 blocks of 4 tokens; three requests of 8 + up to 8 tokens cannot all
  // stay resident.
  std::vector<Request> rs = {makeRequest(1, 8, 8), makeRequest(2, 8, 8),
                             makeRequest(3, 8, 8)};
  Driven d = drive(schedConfig(64, 8, 64), PolicyConfig::deterministicDefault(),
                   cacheConfig(6, 0), rs);
  EXPECT_GT(d.stats.preemptRecompute, 0);
  EXPECT_EQ(d.stats.preemptSwap, 0);
  EXPECT_GT(d.stats.recomputedTokens, 0);
  // The oldest request is never the victim.
  EXPECT_EQ(d.trace.find("preempt-recompute(1)"), std::string::npos);
  EXPECT_NE(d.trace.find("preempt-recompute(3)"), std::string::npos);
  EXPECT_NE(d.trace.find("readmit(3)"), std::string::npos);
}

TEST(Scheduler, PreemptsBySwap) {
  std::vector<Request> rs = {makeRequest(1, 8, 8), makeRequest(2, 8, 8),
                             makeRequest(3, 8, 8)};
  PolicyConfig pc;
  pc.preempt = PreemptMode::Swap;
  Driven d = drive(schedConfig(64, 8, 64), pc, cacheConfig(6, 16), rs);
  EXPECT_GT(d.stats.preemptSwap, 0);
  EXPECT_GT(d.stats.swapIns, 0);
  EXPECT_EQ(d.stats.preemptRecompute, 0);
  EXPECT_EQ(d.stats.recomputedTokens, 0);
  // Without host space, swap falls back to recompute.
  Driven r = drive(schedConfig(64, 8, 64), pc, cacheConfig(6, 0), rs);
  EXPECT_EQ(r.stats.preemptSwap, 0);
  EXPECT_GT(r.stats.preemptRecompute, 0);
  // Whatever the preemption, the tokens are the same (the fake sampler
  // depends only on request and position).
  EXPECT_EQ(d.tokens, r.tokens);
}

TEST(Scheduler, FuzzPoliciesFinishEverythingAndReplay) {
  std::vector<Request> rs = mixedRequests(24);
  SchedulerConfig sc = schedConfig(24, 10, 9);
  Driven baseline = drive(sc, PolicyConfig::deterministicDefault(),
                          cacheConfig(64, 0), rs);
  std::set<std::string> traces;
  SchedulerStats total;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    PolicyConfig pc = PolicyConfig::fuzz(seed);
    SCOPED_TRACE("policy seed " + std::to_string(seed));
    Driven d = drive(sc, pc, cacheConfig(12, 6), rs);
    if (::testing::Test::HasFailure())
      break;
    EXPECT_EQ(d.tokens, baseline.tokens);
    // Replaying the seed gives the same schedule.
    Driven again = drive(sc, pc, cacheConfig(12, 6), rs);
    EXPECT_EQ(d.trace, again.trace);
    traces.insert(d.trace);
    total.preemptRecompute += d.stats.preemptRecompute;
    total.preemptSwap += d.stats.preemptSwap;
    total.evictions += d.stats.evictions;
    total.idleSteps += d.stats.idleSteps;
  }
  EXPECT_EQ(traces.size(), 40u);
  EXPECT_GT(total.preemptRecompute, 0);
  EXPECT_GT(total.preemptSwap, 0);
  EXPECT_GT(total.evictions, 0);
  EXPECT_GT(total.idleSteps, 0);
}

TEST(Scheduler, RandomEvictionNeverTakesTheOldest) {
  std::vector<Request> rs = mixedRequests(12);
  PolicyConfig pc;
  pc.seed = 7;
  pc.evictProbability = 1.0;
  pc.preempt = PreemptMode::Random;
  Driven d = drive(schedConfig(32, 12, 32), pc, cacheConfig(128, 128), rs);
  EXPECT_GT(d.stats.evictions, 0);
  // FIFO admission: request 100 has the highest priority from the start.
  EXPECT_EQ(d.trace.find("evict-recompute(100)"), std::string::npos);
  EXPECT_EQ(d.trace.find("evict-swap(100)"), std::string::npos);
  EXPECT_EQ(d.stats.evictions, d.stats.preemptRecompute + d.stats.preemptSwap);
}
