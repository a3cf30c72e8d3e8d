//===- EngineTest.cpp - The generation loop, batch invariance end to end --===//
//
// A toy StepModel that really uses the paged cache: every token writes a
// vector determined by (token, position) into K and V at its block-table
// slot, and the logits of a request are a fixed-order float function of all
// of its K/V rows, read back through its block table in position order. So a
// wrong block table, a lost or misplaced swap, a recompute that feeds other
// tokens, or rows of another request all change the logits. The model is
// batch invariant by construction (each request's logits depend on its own
// rows only); what the tests check is that the engine, scheduler, KV cache and
// sampler keep it so: every request's tokens and logits are bit-identical
// alone and among 64 others, under a cache small enough to preempt, for many
// schedules. A negative control model, whose logits depend on the batch size
// the way a split-K reduction does, shows that the comparison catches it.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"
#include "lockstep/Runtime/Serving/Engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <map>

using namespace lockstep::rt;

namespace {

constexpr int64_t kVocab = 97;

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A value in [-1, 1) named by its arguments.
float value(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t h = mix(mix(mix(mix(a) ^ b) ^ c) ^ d);
  return float(int64_t(h >> 40) - (int64_t(1) << 23)) / float(1 << 23);
}

class ToyModel : public StepModel {
public:
  /// batchDependent: the negative control. With more than one request in a
  /// step, each logit's final sum runs in the reverse order.
  explicit ToyModel(bool batchDependent = false)
      : batchDependent(batchDependent) {}
  int64_t vocab() const override { return kVocab; }

  bool step(const StepBatch &b, KVCache &kv, float *logits,
            std::string &error) override {
    ++steps;
    if (failAtStep >= 0 && steps > failAtStep) {
      error = "toy model failure";
      return false;
    }
    size_t R = b.contextLens.size();
    if (b.seqStarts.size() != R + 1 || b.blockTables.size() != R ||
        b.logitRows.size() != R || b.positions.size() != b.tokens.size() ||
        b.seqStarts.back() != int64_t(b.tokens.size())) {
      error = "malformed batch";
      return false;
    }
    const int64_t L = kv.config().layers, S = kv.rowStride();
    // Write every token's K/V rows at its slot.
    for (size_t r = 0; r < R; ++r) {
      int64_t n = b.seqStarts[r + 1] - b.seqStarts[r];
      for (int64_t t = b.seqStarts[r]; t < b.seqStarts[r + 1]; ++t) {
        int64_t pos = b.positions[size_t(t)];
        if (pos != b.contextLens[r] - n + (t - b.seqStarts[r])) {
          error = "positions do not end at the context length";
          return false;
        }
        int64_t off = kv.rowOffset(b.blockTables[r], pos);
        if (off < 0) {
          error = "the block table does not cover position " +
                  std::to_string(pos);
          return false;
        }
        uint64_t tok = uint64_t(b.tokens[size_t(t)]);
        for (int64_t l = 0; l < L; ++l)
          for (int64_t i = 0; i < S; ++i) {
            kv.kPool(l)[off + i] = value(tok, uint64_t(pos), uint64_t(l), uint64_t(i));
            kv.vPool(l)[off + i] =
                value(tok + 1000003, uint64_t(pos), uint64_t(l), uint64_t(i));
          }
      }
    }
    // Logits from all rows of the request, in position order.
    for (size_t r = 0; r < R; ++r) {
      if (b.logitRows[r] < 0)
        continue;
      if (b.logitRows[r] != b.seqStarts[r + 1] - 1) {
        error = "logits asked for a token that is not the last";
        return false;
      }
      std::vector<float> state(size_t(S), 0.0f);
      for (int64_t pos = 0; pos < b.contextLens[r]; ++pos) {
        int64_t off = kv.rowOffset(b.blockTables[r], pos);
        if (off < 0) {
          error = "the block table does not cover the context";
          return false;
        }
        for (int64_t l = 0; l < L; ++l)
          for (int64_t i = 0; i < S; ++i) {
            float k = kv.kPool(l)[off + i];
            float v = kv.vPool(l)[off + (i + 1) % S];
            state[size_t(i)] = state[size_t(i)] * 0.875f + std::tanh(k * 2.0f) * v;
          }
      }
      float *out = logits + r * size_t(kVocab);
      for (int64_t v = 0; v < kVocab; ++v) {
        float acc = 0;
        if (batchDependent && R > 1)
          for (int64_t i = S - 1; i >= 0; --i)
            acc += state[size_t(i)] * value(uint64_t(v), uint64_t(i), 7, 7) * 3.0f;
        else
          for (int64_t i = 0; i < S; ++i)
            acc += state[size_t(i)] * value(uint64_t(v), uint64_t(i), 7, 7) * 3.0f;
        out[v] = acc;
      }
    }
    return true;
  }

  bool batchDependent;
  int64_t failAtStep = -1;
  int64_t steps = 0;
};

EngineConfig baseConfig(int64_t numBlocks, int64_t hostBlocks) {
  EngineConfig c;
  c.kv.layers = 2;
  c.kv.kvHeads = 2;
  c.kv.headDim = 4;
  c.kv.blockSize = 4;
  c.kv.numBlocks = numBlocks;
  c.kv.hostBlocks = hostBlocks;
  c.scheduler.tokenBudget = 64;
  c.scheduler.maxSeqs = 32;
  c.scheduler.maxPrefillChunk = 16;
  c.scheduler.maxContext = 64;
  return c;
}

// 64 requests: prompts of 1..40 tokens, 1..12 new tokens, half greedy and
// half seeded sampling (with top-k and top-p on some).
std::vector<Request> workload() {
  std::vector<Request> rs;
  for (uint64_t i = 0; i < 64; ++i) {
    Request r;
    r.id = 1000 + i * 17;
    int64_t len = 1 + int64_t(mix(i) % 40);
    for (int64_t t = 0; t < len; ++t)
      r.prompt.push_back(int32_t(mix(i * 131 + uint64_t(t)) % kVocab));
    r.maxNewTokens = 1 + int64_t(mix(i + 77) % 12);
    if (i % 2) {
      r.sampling.temperature = 0.8f;
      r.sampling.seed = mix(i + 5);
      if (i % 3 == 0)
        r.sampling.topK = 20;
      if (i % 5 == 0)
        r.sampling.topP = 0.9f;
    }
    rs.push_back(r);
  }
  return rs;
}

// Each request run alone: whole-prompt prefill, then one token per step.
std::map<uint64_t, RequestResult> baselines(const std::vector<Request> &rs) {
  std::map<uint64_t, RequestResult> out;
  ToyModel model;
  EngineConfig c = baseConfig(64, 0);
  c.scheduler.tokenBudget = 64;
  c.scheduler.maxPrefillChunk = 64;
  std::string error;
  auto engine = Engine::create(model, c, error);
  EXPECT_TRUE(engine) << error;
  for (const Request &r : rs) {
    RunResult res;
    EXPECT_TRUE(engine->run({r}, res, error)) << error;
    EXPECT_EQ(res.stats.preemptRecompute + res.stats.preemptSwap, 0);
    out[r.id] = res.requests[0];
  }
  return out;
}

// Bitwise comparison of one request with its baseline; "" when identical.
std::string compare(const RequestResult &got, const RequestResult &want) {
  if (got.status != RequestStatus::Ok)
    return std::string("status ") + requestStatusName(got.status) + ": " +
           got.reason;
  if (got.generated != want.generated)
    return "generated tokens differ";
  if (got.logits.size() != want.logits.size() ||
      std::memcmp(got.logits.data(), want.logits.data(),
                  got.logits.size() * sizeof(float)) != 0)
    return "logits differ";
  if (got.fingerprint.value() != want.fingerprint.value())
    return "fingerprints differ";
  return "";
}

struct Counted {
  int64_t recompute = 0, swap = 0, evict = 0, swapIn = 0, steps = 0;
};

Counted countEvents(Engine &engine, const std::vector<Request> &rs,
                    RunResult &res) {
  Counted c;
  EngineCallbacks cb;
  cb.onStep = [&](const StepPlan &plan) {
    c.steps += !plan.entries.empty();
    for (const StepEvent &e : plan.events) {
      c.recompute += e.kind == EventKind::PreemptRecompute ||
                     e.kind == EventKind::EvictRecompute;
      c.swap += e.kind == EventKind::PreemptSwap ||
                e.kind == EventKind::EvictSwap;
      c.evict += e.kind == EventKind::EvictRecompute ||
                 e.kind == EventKind::EvictSwap;
      c.swapIn += e.kind == EventKind::SwapIn;
    }
  };
  std::string error;
  EXPECT_TRUE(engine.run(rs, res, error, cb)) << error;
  return c;
}

} // namespace

TEST(ToyModel, LogitsDependOnEveryCachedRow) {
  ToyModel model;
  std::string error;
  KVCacheConfig kc = baseConfig(8, 0).kv;
  auto kv = KVCache::create(kc, error);
  ASSERT_TRUE(kv);
  ASSERT_TRUE(kv->reserve(1, 10));
  StepBatch b;
  for (int t = 0; t < 10; ++t) {
    b.tokens.push_back(int32_t(t * 3 % kVocab));
    b.positions.push_back(t);
  }
  b.seqStarts = {0, 10};
  b.contextLens = {10};
  b.blockTables = {kv->blockTable(1)};
  b.logitRows = {9};
  std::vector<float> ref(kVocab), got(kVocab);
  ASSERT_TRUE(model.step(b, *kv, ref.data(), error)) << error;
  // Re-reading with one element of any earlier row changed changes them.
  StepBatch none = b;
  none.tokens = {b.tokens[9]};
  none.positions = {9};
  none.seqStarts = {0, 1};
  none.logitRows = {0};
  for (int64_t pos = 0; pos < 9; ++pos) {
    float &k = kv->kPool(1)[kv->rowOffset(b.blockTables[0], pos) + 3];
    float saved = k;
    k += 0.5f;
    ASSERT_TRUE(model.step(none, *kv, got.data(), error));
    EXPECT_NE(std::memcmp(ref.data(), got.data(), sizeof(float) * kVocab), 0)
        << "position " << pos;
    k = saved;
  }
  ASSERT_TRUE(model.step(none, *kv, got.data(), error));
  EXPECT_EQ(std::memcmp(ref.data(), got.data(), sizeof(float) * kVocab), 0);
}

// (a), (b), (d): bit-identical alone and among 64 under preemption, for the
// default policy, recompute-only, swap-only and many fuzzed policies.
TEST(Engine, BatchInvariantUnderPreemptionAcrossPolicies) {
  std::vector<Request> rs = workload();
  std::map<uint64_t, RequestResult> base = baselines(rs);
  // The tokens must vary for the comparison to mean anything.
  std::map<int32_t, int> seen;
  for (auto &[id, r] : base)
    for (int32_t t : r.generated)
      ++seen[t];
  ASSERT_GT(seen.size(), 20u);

  std::vector<PolicyConfig> policies;
  policies.push_back(PolicyConfig::deterministicDefault());
  PolicyConfig swap;
  swap.preempt = PreemptMode::Swap;
  policies.push_back(swap);
  for (uint64_t seed = 1; seed <= 16; ++seed)
    policies.push_back(PolicyConfig::fuzz(seed));

  ToyModel model;
  // Every other policy samples its rows and extends their fingerprints on
  // three threads; the baselines on the engine's own.
  ThreadPool rowThreads(3);
  int64_t recompute = 0, swaps = 0, evictions = 0;
  for (size_t p = 0; p < policies.size(); ++p) {
    SCOPED_TRACE("policy " + std::to_string(p) + " seed " +
                 std::to_string(policies[p].seed));
    // 20 blocks of 4 tokens: the longest request needs 13, all 64 together
    // several hundred. Every other fuzzed policy gets 160 blocks instead,
    // for larger batches and less preemption.
    int64_t blocks = p >= 2 && p % 2 ? 160 : 20;
    EngineConfig c = baseConfig(blocks, 12);
    c.policy = policies[p];
    c.rowPool = p % 2 ? &rowThreads : nullptr;
    std::string error;
    auto engine = Engine::create(model, c, error);
    ASSERT_TRUE(engine) << error;
    RunResult res;
    Counted seenEvents = countEvents(*engine, rs, res);
    ASSERT_EQ(res.requests.size(), rs.size());
    for (size_t i = 0; i < rs.size(); ++i) {
      ASSERT_EQ(res.requests[i].id, rs[i].id);
      EXPECT_EQ(compare(res.requests[i], base[rs[i].id]), "")
          << "request " << rs[i].id;
      EXPECT_EQ(int64_t(res.requests[i].generated.size()), rs[i].maxNewTokens);
    }
    // The stats count what the plans did.
    EXPECT_EQ(res.stats.preemptRecompute, seenEvents.recompute);
    EXPECT_EQ(res.stats.preemptSwap, seenEvents.swap);
    EXPECT_EQ(res.stats.evictions, seenEvents.evict);
    EXPECT_EQ(res.stats.swapIns, seenEvents.swapIn);
    EXPECT_EQ(res.stats.steps, seenEvents.steps);
    EXPECT_EQ(res.stats.finished, 64);
    EXPECT_GT(res.stats.largestBatchSeqs, 1);
    EXPECT_EQ(engine->cache().numSequences(), 0);
    EXPECT_EQ(engine->cache().freeBlocks(), blocks);
    if (p == 0) { // memory pressure alone preempts, by recompute
      EXPECT_GT(res.stats.preemptRecompute, 0);
    }
    if (p == 1) {
      EXPECT_GT(res.stats.preemptSwap, 0);
    }
    recompute += res.stats.preemptRecompute;
    swaps += res.stats.preemptSwap;
    evictions += res.stats.evictions;
  }
  EXPECT_GT(recompute, 0);
  EXPECT_GT(swaps, 0);
  EXPECT_GT(evictions, 0);
}

// Each token is sampled from its own logits row with (request seed, the
// absolute position the token takes), and the callback sees the same.
TEST(Engine, SamplesWithTheTokensAbsolutePosition) {
  std::vector<Request> rs = workload();
  rs.resize(12);
  ToyModel model;
  std::string error;
  auto engine = Engine::create(model, baseConfig(20, 0), error);
  ASSERT_TRUE(engine);
  std::map<uint64_t, std::vector<int64_t>> positions;
  EngineCallbacks cb;
  cb.onToken = [&](uint64_t id, int64_t pos, int32_t tok, const float *row) {
    positions[id].push_back(pos);
    EXPECT_GE(tok, 0);
    EXPECT_LT(tok, kVocab);
    EXPECT_FALSE(std::isnan(row[0]));
  };
  RunResult res;
  ASSERT_TRUE(engine->run(rs, res, error, cb)) << error;
  int sampledNotGreedy = 0;
  for (size_t i = 0; i < rs.size(); ++i) {
    const RequestResult &r = res.requests[i];
    ASSERT_EQ(r.logits.size(), r.generated.size() * size_t(kVocab));
    Fingerprint f;
    for (size_t k = 0; k < r.generated.size(); ++k) {
      const float *row = r.logits.data() + k * size_t(kVocab);
      int64_t pos = int64_t(rs[i].prompt.size() + k);
      EXPECT_EQ(positions[r.id][k], pos);
      EXPECT_EQ(r.generated[k], sample(row, kVocab, rs[i].sampling, pos));
      sampledNotGreedy += r.generated[k] != argmax(row, kVocab);
      f.update(row, kVocab);
    }
    EXPECT_EQ(r.fingerprint.value(), f.value());
    EXPECT_EQ(r.fingerprint.rows(), int64_t(r.generated.size()));
  }
  // The seeded requests do not just take the argmax.
  EXPECT_GT(sampledNotGreedy, 0);
}

// The negative control: the same comparison catches a model whose reduction
// order depends on the number of requests in the step.
TEST(Engine, CatchesABatchDependentModel) {
  std::vector<Request> rs = workload();
  std::map<uint64_t, RequestResult> base = baselines(rs);
  ToyModel bad(/*batchDependent=*/true);
  EngineConfig c = baseConfig(20, 12);
  std::string error;
  auto engine = Engine::create(bad, c, error);
  ASSERT_TRUE(engine) << error;
  RunResult res;
  ASSERT_TRUE(engine->run(rs, res, error)) << error;
  int differ = 0;
  for (size_t i = 0; i < rs.size(); ++i)
    differ += compare(res.requests[i], base[rs[i].id]) != "";
  EXPECT_GT(differ, 0);
}

// (c): rejected requests get a reason; the others are unaffected.
TEST(Engine, RejectsBadRequestsAndCompletesTheRest) {
  std::vector<Request> rs = workload();
  rs.resize(16);
  std::map<uint64_t, RequestResult> base = baselines(rs);
  std::vector<Request> mixed;
  Request tooLong;
  tooLong.id = 1;
  tooLong.prompt.assign(60, 3);
  tooLong.maxNewTokens = 5;
  Request badId;
  badId.id = 2;
  badId.prompt = {1, 2, int32_t(kVocab) + 4};
  badId.maxNewTokens = 2;
  Request negative = badId;
  negative.id = 3;
  negative.prompt = {-7};
  for (size_t i = 0; i < rs.size(); ++i) {
    mixed.push_back(rs[i]);
    if (i == 3)
      mixed.push_back(tooLong);
    if (i == 7)
      mixed.push_back(badId);
    if (i == 11) {
      mixed.push_back(negative);
      mixed.push_back(rs[0]); // a duplicate id
    }
  }
  ToyModel model;
  EngineConfig c = baseConfig(20, 12);
  c.policy = PolicyConfig::fuzz(99);
  std::string error;
  auto engine = Engine::create(model, c, error);
  ASSERT_TRUE(engine);
  RunResult res;
  ASSERT_TRUE(engine->run(mixed, res, error)) << error;
  ASSERT_EQ(res.requests.size(), mixed.size());
  int rejected = 0;
  for (size_t i = 0; i < mixed.size(); ++i) {
    const RequestResult &r = res.requests[i];
    if (r.status == RequestStatus::Rejected) {
      ++rejected;
      EXPECT_FALSE(r.reason.empty());
      EXPECT_TRUE(r.generated.empty());
      continue;
    }
    EXPECT_EQ(compare(r, base[r.id]), "") << "request " << r.id;
  }
  EXPECT_EQ(rejected, 4);
  EXPECT_NE(res.requests[4].reason.find("exceeds the context"),
            std::string::npos)
      << res.requests[4].reason;
  EXPECT_NE(res.requests[9].reason.find("outside the vocabulary"),
            std::string::npos)
      << res.requests[9].reason;
  EXPECT_NE(res.requests[14].reason.find("outside the vocabulary"),
            std::string::npos);
  EXPECT_NE(res.requests[15].reason.find("duplicate"), std::string::npos);
  EXPECT_EQ(res.stats.rejected, 4);
  EXPECT_EQ(res.stats.finished, 16);
}

TEST(Engine, CancelStopsCleanly) {
  std::vector<Request> rs = workload();
  rs.resize(24);
  std::map<uint64_t, RequestResult> base = baselines(rs);
  ToyModel model;
  EngineConfig c = baseConfig(20, 12);
  std::string error;
  auto engine = Engine::create(model, c, error);
  ASSERT_TRUE(engine);
  std::atomic<bool> cancel{false};
  EngineCallbacks cb;
  int steps = 0;
  cb.onStep = [&](const StepPlan &) {
    if (++steps == 10)
      cancel = true;
  };
  cb.cancel = &cancel;
  RunResult res;
  ASSERT_TRUE(engine->run(rs, res, error, cb)) << error;
  EXPECT_TRUE(res.cancelled);
  EXPECT_EQ(steps, 10);
  int cancelled = 0;
  for (const RequestResult &r : res.requests) {
    const RequestResult &b = base[r.id];
    // What was done is a prefix of the baseline, bit for bit.
    ASSERT_LE(r.generated.size(), b.generated.size());
    EXPECT_TRUE(std::equal(r.generated.begin(), r.generated.end(),
                           b.generated.begin()));
    // (memcmp of zero bytes still needs valid pointers: a request cancelled
    // before its first token has no logits, and data() is null.)
    EXPECT_TRUE(r.logits.empty() ||
                std::memcmp(r.logits.data(), b.logits.data(),
                            r.logits.size() * sizeof(float)) == 0);
    if (r.status == RequestStatus::Cancelled)
      ++cancelled;
    else
      EXPECT_EQ(r.status, RequestStatus::Ok);
  }
  EXPECT_GT(cancelled, 0);
  EXPECT_EQ(engine->cache().numSequences(), 0);
  EXPECT_EQ(engine->cache().freeBlocks(), 20);
  // The engine is reusable after a cancelled run.
  ASSERT_TRUE(engine->run(rs, res, error)) << error;
  for (size_t i = 0; i < rs.size(); ++i)
    EXPECT_EQ(compare(res.requests[i], base[rs[i].id]), "");
}

TEST(Engine, ModelFailureIsReported) {
  std::vector<Request> rs = workload();
  rs.resize(8);
  ToyModel model;
  model.failAtStep = 2;
  std::string error;
  auto engine = Engine::create(model, baseConfig(20, 0), error);
  ASSERT_TRUE(engine);
  RunResult res;
  EXPECT_FALSE(engine->run(rs, res, error));
  EXPECT_NE(error.find("toy model failure"), std::string::npos) << error;
  EXPECT_NE(error.find("step 2"), std::string::npos) << error;
  for (const RequestResult &r : res.requests) {
    if (r.status != RequestStatus::Ok) {
      EXPECT_EQ(r.status, RequestStatus::Failed);
    }
  }
  EXPECT_EQ(engine->cache().numSequences(), 0);
}

TEST(Engine, CreateChecksTheConfig) {
  ToyModel model;
  std::string error;
  EngineConfig c = baseConfig(20, 0);
  c.scheduler.vocab = kVocab + 1;
  EXPECT_FALSE(Engine::create(model, c, error));
  EXPECT_NE(error.find("differs"), std::string::npos);
  c = baseConfig(0, 0);
  EXPECT_FALSE(Engine::create(model, c, error));
  c = baseConfig(20, 0);
  c.scheduler.tokenBudget = 0;
  EXPECT_FALSE(Engine::create(model, c, error));
}
