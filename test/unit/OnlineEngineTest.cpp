//===- OnlineEngineTest.cpp - Continuous batching of arriving requests ----===//
//
// The online engine against Engine::run, with a stand-in StepModel whose
// logits are a fixed-order function of every K/V row of the request, read
// through its block table (so a misplaced row, a row of another request or a
// wrong recompute changes them). Requests submitted from many threads at
// random times must get exactly what Engine::run gives them: tokens, logits
// rows and fingerprints, bit for bit. Cancellation, stopping from the token
// callback, the bounded queue, draining, model failures and shutdown are
// checked too, and that every KV block is free again afterwards.
//
// Also: Scheduler::cancel and forget, and the logprobs of a row.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Runtime/Serving/Engine.h"
#include "lockstep/Runtime/Serving/Logprobs.h"
#include "lockstep/Runtime/Serving/OnlineEngine.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

using namespace lockstep::rt;

namespace {

constexpr int64_t kVocab = 53;

uint64_t mix(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

float unit(uint64_t h) { return float(int64_t(h >> 41) - (int64_t(1) << 22)) / float(1 << 22); }

// K/V rows from (token, position); logits from all of the request's rows in
// position order. A gate, when closed, holds every step until it opens; a
// failure step makes that step fail.
class StandIn : public StepModel {
public:
  int64_t vocab() const override { return kVocab; }
  bool step(const StepBatch &b, KVCache &kv, float *logits, std::string &error) override {
    {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return open; });
    }
    if (failNext.exchange(false)) {
      error = "stand-in failure";
      return false;
    }
    const int64_t S = kv.rowStride();
    for (size_t r = 0; r < b.contextLens.size(); ++r)
      for (int64_t t = b.seqStarts[r]; t < b.seqStarts[r + 1]; ++t) {
        int64_t off = kv.rowOffset(b.blockTables[r], b.positions[size_t(t)]);
        if (off < 0) {
          error = "no slot";
          return false;
        }
        for (int64_t i = 0; i < S; ++i)
          kv.kPool(0)[off + i] =
              unit(mix(uint64_t(b.tokens[size_t(t)]) * 7919 + uint64_t(b.positions[size_t(t)]) * 31 + uint64_t(i)));
      }
    for (size_t r = 0; r < b.contextLens.size(); ++r) {
      if (b.logitRows[r] < 0)
        continue;
      std::vector<float> state(size_t(S), 0.0f);
      for (int64_t p = 0; p < b.contextLens[r]; ++p) {
        int64_t off = kv.rowOffset(b.blockTables[r], p);
        for (int64_t i = 0; i < S; ++i)
          state[size_t(i)] = state[size_t(i)] * 0.75f + std::tanh(kv.kPool(0)[off + i] * 3.0f);
      }
      for (int64_t v = 0; v < kVocab; ++v) {
        float acc = 0;
        for (int64_t i = 0; i < S; ++i)
          acc += state[size_t(i)] * unit(mix(uint64_t(v) * 131 + uint64_t(i))) * 4.0f;
        logits[r * size_t(kVocab) + size_t(v)] = acc;
      }
    }
    return true;
  }
  void setOpen(bool o) {
    std::lock_guard<std::mutex> lock(m);
    open = o;
    cv.notify_all();
  }
  std::atomic<bool> failNext{false};

private:
  std::mutex m;
  std::condition_variable cv;
  bool open = true;
};

EngineConfig config(int64_t blocks) {
  EngineConfig c;
  c.kv.layers = 1;
  c.kv.kvHeads = 1;
  c.kv.headDim = 4;
  c.kv.blockSize = 4;
  c.kv.numBlocks = blocks;
  c.kv.hostBlocks = 0;
  c.scheduler.tokenBudget = 48;
  c.scheduler.maxSeqs = 16;
  c.scheduler.maxPrefillChunk = 16;
  c.scheduler.maxContext = 64;
  c.keepLogits = true;
  return c;
}

std::vector<Request> workload(int n) {
  std::vector<Request> rs;
  for (int i = 0; i < n; ++i) {
    Request r;
    r.id = uint64_t(i);
    int64_t len = 1 + int64_t(mix(uint64_t(i)) % 30);
    for (int64_t t = 0; t < len; ++t)
      r.prompt.push_back(int32_t(mix(uint64_t(i) * 977 + uint64_t(t)) % kVocab));
    r.maxNewTokens = 1 + int64_t(mix(uint64_t(i) + 3) % 14);
    if (i % 2) {
      r.sampling.temperature = 0.9f;
      r.sampling.seed = mix(uint64_t(i) + 11);
      r.sampling.topP = i % 3 ? 1.0f : 0.9f;
    }
    rs.push_back(r);
  }
  return rs;
}

struct Collected {
  std::mutex m;
  std::condition_variable cv;
  std::map<uint64_t, RequestResult> results;  // by engine id
  std::map<uint64_t, FinishReason> reasons;
  std::map<uint64_t, std::vector<uint64_t>> chains; // fingerprint after each token
  std::map<uint64_t, std::vector<int32_t>> tokens;  // as onToken saw them

  OnlineCallbacks callbacks(std::function<bool(const TokenEvent &)> extra = nullptr) {
    OnlineCallbacks cb;
    cb.onToken = [this, extra](const TokenEvent &e) {
      {
        std::lock_guard<std::mutex> lock(m);
        chains[e.id].push_back(e.fingerprint);
        tokens[e.id].push_back(e.token);
        EXPECT_EQ(e.index + 1, int64_t(tokens[e.id].size()));
      }
      return extra ? extra(e) : true;
    };
    cb.onFinish = [this](const RequestResult &r, FinishReason why) {
      std::lock_guard<std::mutex> lock(m);
      EXPECT_EQ(results.count(r.id), 0u) << "finished twice";
      results[r.id] = r;
      reasons[r.id] = why;
      cv.notify_all();
    };
    return cb;
  }
  bool waitFor(size_t n) {
    std::unique_lock<std::mutex> lock(m);
    return cv.wait_for(lock, std::chrono::seconds(30), [&] { return results.size() >= n; });
  }
};

// Engine::run of `rs`, all at once, then the same requests submitted from 8
// threads at random times: every result identical, bit for bit.
void matchesEngineRun(const std::vector<Request> &rs, const EngineConfig &cfg) {
  StandIn model;
  std::string error;
  auto engine = Engine::create(model, cfg, error);
  ASSERT_TRUE(engine) << error;
  RunResult want;
  ASSERT_TRUE(engine->run(rs, want, error)) << error;

  OnlineEngineConfig oc;
  oc.engine = cfg;
  auto online = OnlineEngine::create(model, oc, error);
  ASSERT_TRUE(online) << error;
  Collected got;
  std::map<uint64_t, size_t> which; // engine id -> index in rs
  std::mutex whichMutex;
  std::vector<std::thread> clients;
  // The model waits until half the requests are in, so that they compete
  // for the cache; the rest arrive while it runs.
  model.setOpen(false);
  for (int c = 0; c < 8; ++c)
    clients.emplace_back([&, c] {
      for (size_t i = size_t(c); i < rs.size(); i += 8) {
        std::this_thread::sleep_for(std::chrono::microseconds(mix(i) % 500));
        uint64_t id = 0;
        std::string reason;
        std::lock_guard<std::mutex> lock(whichMutex);
        ASSERT_EQ(online->submit(rs[i], got.callbacks(), id, reason), SubmitStatus::Accepted)
            << reason;
        which[id] = i;
        if (which.size() == rs.size() / 2)
          model.setOpen(true);
      }
    });
  for (std::thread &t : clients)
    t.join();
  ASSERT_TRUE(got.waitFor(rs.size()));
  ASSERT_TRUE(online->waitIdle(std::chrono::seconds(10)));
  for (auto &[id, i] : which) {
    const RequestResult &g = got.results.at(id);
    const RequestResult &w = want.requests[i];
    ASSERT_EQ(w.status, RequestStatus::Ok);
    EXPECT_EQ(g.status, RequestStatus::Ok) << g.reason;
    EXPECT_EQ(got.reasons.at(id), FinishReason::Length);
    EXPECT_EQ(g.generated, w.generated) << "request " << i;
    EXPECT_EQ(got.tokens.at(id), w.generated);
    ASSERT_EQ(g.logits.size(), w.logits.size());
    EXPECT_EQ(std::memcmp(g.logits.data(), w.logits.data(), g.logits.size() * 4), 0)
        << "request " << i;
    EXPECT_EQ(g.fingerprint.value(), w.fingerprint.value());
    EXPECT_EQ(got.chains.at(id).back(), w.fingerprint.value());
  }
  OnlineStats s = online->stats();
  EXPECT_EQ(s.finished, int64_t(rs.size()));
  EXPECT_EQ(s.inFlight, 0);
  EXPECT_EQ(s.freeBlocks, s.totalBlocks);
  EXPECT_GT(s.largestBatchSeqs, 1) << "the clients never shared a step";
  EXPECT_GT(s.preemptions, 0) << "the cache was meant to be too small";
}

TEST(OnlineEngine, MatchesEngineRunBitForBit) {
  // A cache small enough to preempt by recompute.
  matchesEngineRun(workload(40), config(14));
}

TEST(OnlineEngine, MatchesEngineRunUnderSwap) {
  EngineConfig c = config(12);
  c.kv.hostBlocks = 64;
  c.policy.preempt = PreemptMode::Swap;
  matchesEngineRun(workload(40), c);
}

/// A stand-in model and an online engine over it with a cache of 64
/// blocks: what most tests below start from.
class OnlineEngineTest : public ::testing::Test {
protected:
  StandIn model;
  std::string error;
  std::unique_ptr<OnlineEngine> online;
  /// Starts the engine; false (with `error`) when it could not be made.
  bool start(int64_t queueCapacity = OnlineEngineConfig().queueCapacity) {
    OnlineEngineConfig oc;
    oc.engine = config(64);
    oc.queueCapacity = queueCapacity;
    online = OnlineEngine::create(model, oc, error);
    return online != nullptr;
  }
};

TEST_F(OnlineEngineTest, CancelAndStopFreeTheirBlocks) {
  ASSERT_TRUE(start()) << error;
  Request r = workload(1)[0];
  r.prompt.assign(20, 5);
  r.maxNewTokens = 40;
  Collected got;
  // Stopped by its callback after the third token.
  uint64_t stopped = 0, cancelled = 0;
  ASSERT_EQ(online->submit(r, got.callbacks([](const TokenEvent &e) { return e.index < 2; }),
                           stopped, error),
            SubmitStatus::Accepted);
  // Cancelled from this thread after its first token.
  std::mutex m;
  std::condition_variable cv;
  bool first = false, sent = false;
  ASSERT_EQ(online->submit(r, got.callbacks([&](const TokenEvent &e) {
              // The first token waits until the cancel is queued: it then
              // lands before the next step.
              if (e.index == 0) {
                std::unique_lock<std::mutex> lock(m);
                first = true;
                cv.notify_all();
                cv.wait(lock, [&] { return sent; });
              }
              return true;
            }),
                           cancelled, error),
            SubmitStatus::Accepted);
  {
    std::unique_lock<std::mutex> lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return first; }));
  }
  EXPECT_TRUE(online->cancel(cancelled));
  {
    std::lock_guard<std::mutex> lock(m);
    sent = true;
    cv.notify_all();
  }
  ASSERT_TRUE(got.waitFor(2));
  ASSERT_TRUE(online->waitIdle(std::chrono::seconds(10)));
  EXPECT_EQ(got.reasons.at(stopped), FinishReason::Stopped);
  EXPECT_EQ(got.results.at(stopped).status, RequestStatus::Ok);
  EXPECT_EQ(got.results.at(stopped).generated.size(), 3u);
  EXPECT_EQ(got.reasons.at(cancelled), FinishReason::Cancelled);
  EXPECT_EQ(got.results.at(cancelled).status, RequestStatus::Cancelled);
  EXPECT_EQ(got.results.at(cancelled).generated.size(), 1u);
  OnlineStats s = online->stats();
  EXPECT_EQ(s.freeBlocks, s.totalBlocks);
  EXPECT_EQ(s.inFlight, 0);
  EXPECT_FALSE(online->cancel(cancelled)) << "a finished request is not in flight";
}

// Whoever receives a result may ask for the stats at once (an HTTP client
// reads /health after its completion): by then the request is out of the
// books and its blocks are free. onFinish reads stats() itself, so this
// does not depend on timing.
TEST_F(OnlineEngineTest, StatsAreSettledWhenTheResultIsHandedOver) {
  ASSERT_TRUE(start()) << error;
  Request r = workload(1)[0];
  r.prompt = {1, 2, 3, 4, 5, 6};
  r.maxNewTokens = 3;
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  OnlineStats seen;
  OnlineCallbacks cb;
  cb.onFinish = [&](const RequestResult &, FinishReason) {
    OnlineStats s = online->stats();
    std::lock_guard<std::mutex> lock(m);
    seen = s;
    done = true;
    cv.notify_all();
  };
  uint64_t id = 0;
  ASSERT_EQ(online->submit(r, cb, id, error), SubmitStatus::Accepted) << error;
  std::unique_lock<std::mutex> lock(m);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done; }));
  EXPECT_EQ(seen.inFlight, 0);
  EXPECT_EQ(seen.finished, 1);
  EXPECT_EQ(seen.freeBlocks, seen.totalBlocks);
}

TEST_F(OnlineEngineTest, QueueIsBoundedAndDrains) {
  ASSERT_TRUE(start(2)) << error;
  model.setOpen(false); // every step waits
  Request r = workload(1)[0];
  Collected got;
  uint64_t a = 0, b = 0, c = 0;
  ASSERT_EQ(online->submit(r, got.callbacks(), a, error), SubmitStatus::Accepted);
  ASSERT_EQ(online->submit(r, got.callbacks(), b, error), SubmitStatus::Accepted);
  EXPECT_EQ(online->submit(r, got.callbacks(), c, error), SubmitStatus::QueueFull);
  EXPECT_NE(error.find("queue is full"), std::string::npos) << error;
  online->beginDrain();
  EXPECT_EQ(online->submit(r, got.callbacks(), c, error), SubmitStatus::Draining);
  EXPECT_FALSE(online->waitIdle(std::chrono::milliseconds(50)));
  model.setOpen(true);
  ASSERT_TRUE(online->waitIdle(std::chrono::seconds(10)));
  ASSERT_TRUE(got.waitFor(2));
  EXPECT_EQ(got.reasons.at(a), FinishReason::Length);
  EXPECT_EQ(got.reasons.at(b), FinishReason::Length);
  EXPECT_EQ(got.results.at(a).generated, got.results.at(b).generated);
  OnlineStats s = online->stats();
  EXPECT_EQ(s.refusedFull, 1);
  EXPECT_EQ(s.refusedDraining, 1);
}

TEST_F(OnlineEngineTest, RefusesInvalidRequestsAtSubmit) {
  ASSERT_TRUE(start()) << error;
  Collected got;
  uint64_t id = 0;
  Request r = workload(1)[0];
  r.prompt.assign(60, 1);
  r.maxNewTokens = 5;
  std::string reason;
  EXPECT_EQ(online->submit(r, got.callbacks(), id, reason), SubmitStatus::Invalid);
  EXPECT_NE(reason.find("exceeds the context of 64"), std::string::npos) << reason;
  r.prompt = {1, int32_t(kVocab)};
  EXPECT_EQ(online->submit(r, got.callbacks(), id, reason), SubmitStatus::Invalid);
  EXPECT_NE(reason.find("outside the vocabulary"), std::string::npos) << reason;
  r.prompt = {};
  EXPECT_EQ(online->submit(r, got.callbacks(), id, reason), SubmitStatus::Invalid);
  EXPECT_EQ(online->stats().invalid, 3);
  EXPECT_TRUE(got.results.empty());
}

TEST_F(OnlineEngineTest, ModelFailureFailsInFlightAndKeepsServing) {
  ASSERT_TRUE(start()) << error;
  Collected got;
  Request r = workload(1)[0];
  model.setOpen(false);
  model.failNext = true;
  uint64_t a = 0, b = 0;
  ASSERT_EQ(online->submit(r, got.callbacks(), a, error), SubmitStatus::Accepted);
  model.setOpen(true);
  ASSERT_TRUE(got.waitFor(1));
  EXPECT_EQ(got.reasons.at(a), FinishReason::Failed);
  EXPECT_NE(got.results.at(a).reason.find("stand-in failure"), std::string::npos);
  ASSERT_EQ(online->submit(r, got.callbacks(), b, error), SubmitStatus::Accepted);
  ASSERT_TRUE(got.waitFor(2));
  EXPECT_EQ(got.reasons.at(b), FinishReason::Length);
  OnlineStats s = online->stats();
  EXPECT_EQ(s.modelFailures, 1);
  EXPECT_EQ(s.freeBlocks, s.totalBlocks);
}

TEST_F(OnlineEngineTest, ShutdownCancelsWhatIsLeft) {
  ASSERT_TRUE(start()) << error;
  Collected got;
  Request r = workload(1)[0];
  r.prompt = {1, 2, 3};
  r.maxNewTokens = 40;
  uint64_t a = 0;
  std::atomic<int> seen{0};
  ASSERT_EQ(online->submit(r, got.callbacks([&](const TokenEvent &) {
              ++seen;
              std::this_thread::sleep_for(std::chrono::milliseconds(5));
              return true;
            }),
                           a, error),
            SubmitStatus::Accepted);
  while (seen == 0)
    std::this_thread::yield();
  online->shutdown();
  ASSERT_EQ(got.results.size(), 1u);
  EXPECT_EQ(got.reasons.at(a), FinishReason::Cancelled);
  EXPECT_EQ(online->submit(r, got.callbacks(), a, error), SubmitStatus::Draining);
}

TEST(Scheduler, CancelAndForget) {
  EngineConfig c = config(16);
  c.scheduler.vocab = kVocab;
  std::string error;
  auto kv = KVCache::create(c.kv, error);
  ASSERT_TRUE(kv) << error;
  Scheduler s(c.scheduler, c.policy, *kv);
  Request a = workload(2)[0], b = workload(2)[1];
  a.id = 1;
  b.id = 2;
  ASSERT_TRUE(s.add(a, error)) << error;
  ASSERT_TRUE(s.add(b, error)) << error;
  StepPlan plan;
  ASSERT_TRUE(s.schedule(plan, error)) << error;
  EXPECT_FALSE(s.cancel(1)) << "request 1 is in the outstanding plan";
  std::vector<int32_t> sampled(plan.entries.size(), 0);
  ASSERT_TRUE(s.complete(plan, sampled, error)) << error;
  EXPECT_FALSE(s.forget(1)) << "unfinished";
  EXPECT_TRUE(s.cancel(1));
  EXPECT_TRUE(s.cancel(2));
  EXPECT_FALSE(s.cancel(2));
  EXPECT_TRUE(s.done());
  EXPECT_EQ(kv->freeBlocks(), 16);
  EXPECT_EQ(s.stats().cancelled, 2);
  EXPECT_TRUE(s.forget(1));
  EXPECT_EQ(s.request(1), nullptr);
  EXPECT_EQ(s.accepted(), std::vector<uint64_t>{2});
  ASSERT_TRUE(s.add(a, error)) << "a forgotten id may come back: " << error;
  // Validate, the static form of add's checks.
  Request longOne = a;
  longOne.prompt.assign(70, 1);
  EXPECT_FALSE(Scheduler::validate(s.config(), kv->config(), longOne, error));
  EXPECT_NE(error.find("exceeds the context"), std::string::npos);
}

TEST(Logprobs, LogSoftmaxInAFixedOrder) {
  std::vector<float> row = {1.0f, 3.0f, 3.0f, -2.0f, NAN, 0.5f};
  TokenLogprobs lp = tokenLogprobs(row.data(), 4, 2, 3);
  double lse = 3.0 + std::log(std::exp(1.0 - 3) + 1 + 1 + std::exp(-5.0));
  EXPECT_EQ(lp.token, 2);
  EXPECT_EQ(lp.logprob, 3.0 - lse);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 1); // the tie goes to the lower index
  EXPECT_EQ(lp.top[1].first, 2);
  EXPECT_EQ(lp.top[2].first, 0);
  EXPECT_EQ(lp.top[2].second, 1.0 - lse);
  double total = 0;
  for (int i = 0; i < 4; ++i)
    total += std::exp(tokenLogprobs(row.data(), 4, i, 0).logprob);
  EXPECT_NEAR(total, 1.0, 1e-12);
  // A NaN logit makes every logprob NaN and is never among the top.
  TokenLogprobs withNan = tokenLogprobs(row.data(), 6, 0, 6);
  EXPECT_TRUE(std::isnan(withNan.logprob));
  EXPECT_EQ(withNan.top.size(), 5u);
  EXPECT_EQ(tokenLogprobs(nullptr, 4, 0, 1).token, -1);
}

} // namespace
