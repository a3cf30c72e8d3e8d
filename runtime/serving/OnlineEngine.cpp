//===- OnlineEngine.cpp - Continuous batching of arriving requests --------===//
#include "lockstep/Runtime/Serving/OnlineEngine.h"
#include "lockstep/Runtime/Serving/StepRunner.h"

#include <algorithm>
#include <map>

using namespace lockstep::rt;

const char *lockstep::rt::finishReasonName(FinishReason reason) {
  switch (reason) {
  case FinishReason::Length:
    return "length";
  case FinishReason::Eos:
    return "eos";
  case FinishReason::Stopped:
    return "stopped";
  case FinishReason::Cancelled:
    return "cancelled";
  case FinishReason::Rejected:
    return "rejected";
  case FinishReason::Failed:
    return "failed";
  }
  return "?";
}

OnlineEngine::OnlineEngine(StepModel &model, std::unique_ptr<Engine> engine,
                           int64_t capacity)
    : model(model), engine(std::move(engine)), capacity(capacity) {}

std::unique_ptr<OnlineEngine> OnlineEngine::create(StepModel &model,
                                                   const OnlineEngineConfig &config,
                                                   std::string &error) {
  if (!config.engine.script.empty()) {
    error = "online engine: a recorded schedule cannot be served online";
    return nullptr;
  }
  if (config.queueCapacity < 1) {
    error = "online engine: the queue capacity must be positive";
    return nullptr;
  }
  std::unique_ptr<Engine> engine = Engine::create(model, config.engine, error);
  if (!engine)
    return nullptr;
  std::unique_ptr<OnlineEngine> e(
      new OnlineEngine(model, std::move(engine), config.queueCapacity));
  e->st.totalBlocks = e->st.freeBlocks = e->engine->cache().config().numBlocks;
  e->thread = std::thread([p = e.get()] { p->loop(); });
  return e;
}

OnlineEngine::~OnlineEngine() { shutdown(); }

SubmitStatus OnlineEngine::submit(const Request &request, OnlineCallbacks callbacks,
                                  uint64_t &id, std::string &reason) {
  // The checks read only the configs, fixed since create.
  const EngineConfig &cfg = engine->config();
  if (!Scheduler::validate(cfg.scheduler, cfg.kv, request, reason)) {
    std::lock_guard<std::mutex> lock(mu);
    ++st.invalid;
    return SubmitStatus::Invalid;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (draining || stopping) {
    ++st.refusedDraining;
    reason = "the server is draining: it accepts no new requests";
    return SubmitStatus::Draining;
  }
  if (int64_t(live.size()) >= capacity) {
    ++st.refusedFull;
    reason = "the queue is full: " + std::to_string(capacity) +
             " requests are in flight";
    return SubmitStatus::QueueFull;
  }
  id = nextId++;
  Incoming in{request, std::move(callbacks)};
  in.request.id = id;
  inbox.push_back(std::move(in));
  live.insert(id);
  ++st.submitted;
  wake.notify_one();
  return SubmitStatus::Accepted;
}

bool OnlineEngine::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mu);
  if (!live.count(id))
    return false;
  cancels.push_back(id);
  wake.notify_one();
  return true;
}

void OnlineEngine::beginDrain() {
  std::lock_guard<std::mutex> lock(mu);
  draining = true;
}

bool OnlineEngine::isDraining() const {
  std::lock_guard<std::mutex> lock(mu);
  return draining || stopping;
}

bool OnlineEngine::waitIdle(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu);
  return idle.wait_for(lock, timeout, [&] { return live.empty(); });
}

void OnlineEngine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(mu);
    stopping = true;
    wake.notify_one();
  }
  if (thread.joinable())
    thread.join();
}

OnlineStats OnlineEngine::stats() const {
  std::lock_guard<std::mutex> lock(mu);
  OnlineStats s = st;
  s.inFlight = int64_t(live.size());
  return s;
}

void OnlineEngine::loop() {
  const EngineConfig &cfg = engine->config();
  KVCache &kv = engine->cache();
  const int64_t V = engine->vocab();
  auto sched = std::make_unique<Scheduler>(cfg.scheduler, cfg.policy, kv);

  struct Active {
    OnlineCallbacks cb;
    RequestResult result;
  };
  std::map<uint64_t, Active> active; // this thread's only
  int64_t preemptionsBefore = 0;     // of the schedulers replaced after failures

  // Hands the result over and forgets the request everywhere.
  auto finish = [&](uint64_t id, FinishReason why, const std::string &message) {
    auto it = active.find(id);
    if (it == active.end())
      return;
    RequestResult &r = it->second.result;
    switch (why) {
    case FinishReason::Length:
    case FinishReason::Eos:
    case FinishReason::Stopped:
      r.status = RequestStatus::Ok;
      break;
    case FinishReason::Cancelled:
      r.status = RequestStatus::Cancelled;
      break;
    case FinishReason::Rejected:
      r.status = RequestStatus::Rejected;
      break;
    case FinishReason::Failed:
      r.status = RequestStatus::Failed;
      break;
    }
    r.reason = message;
    // The engine's books first, then the result: whoever gets it (a client
    // that asks /health next, say) sees the request gone and its blocks free.
    sched->forget(id);
    {
      std::lock_guard<std::mutex> lock(mu);
      st.freeBlocks = kv.freeBlocks();
      live.erase(id);
      ++st.finished;
      st.cancelled += why == FinishReason::Cancelled;
      st.failed += why == FinishReason::Failed;
      if (live.empty())
        idle.notify_all();
    }
    if (it->second.cb.onFinish)
      it->second.cb.onFinish(r, why);
    active.erase(it);
  };
  // A model or scheduler failure: every request in flight fails, the cache
  // is emptied and a fresh scheduler takes over.
  auto failAll = [&](const std::string &error) {
    {
      std::lock_guard<std::mutex> lock(mu);
      ++st.modelFailures;
      st.lastError = error;
    }
    sched->releaseAll();
    preemptionsBefore += sched->stats().preemptRecompute + sched->stats().preemptSwap;
    std::vector<uint64_t> ids;
    for (auto &[id, a] : active)
      ids.push_back(id);
    for (uint64_t id : ids)
      finish(id, FinishReason::Failed, error);
    sched = std::make_unique<Scheduler>(cfg.scheduler, cfg.policy, kv);
  };

  struct Row {
    uint64_t id;
    int64_t position;
    int32_t token;
    const float *row;
  };
  std::vector<float> logits;
  std::vector<int32_t> sampled;
  std::vector<Row> rows;
  std::string error;
  for (;;) {
    std::vector<Incoming> arrived;
    std::vector<uint64_t> cancelled;
    bool stop;
    {
      std::unique_lock<std::mutex> lock(mu);
      wake.wait(lock, [&] {
        return stopping || !inbox.empty() || !cancels.empty() || !sched->done();
      });
      arrived.swap(inbox);
      cancelled.swap(cancels);
      stop = stopping;
    }
    for (Incoming &in : arrived) {
      uint64_t id = in.request.id;
      Active &a = active[id];
      a.cb = std::move(in.callbacks);
      a.result.id = id;
      std::string reason;
      if (!sched->add(in.request, reason))
        finish(id, FinishReason::Rejected, reason);
    }
    for (uint64_t id : cancelled)
      if (sched->cancel(id))
        finish(id, FinishReason::Cancelled, "cancelled");
    if (stop) {
      std::vector<uint64_t> ids;
      for (auto &[id, a] : active)
        ids.push_back(id);
      for (uint64_t id : ids) {
        sched->cancel(id);
        finish(id, FinishReason::Cancelled, "the engine is shutting down");
      }
      return;
    }
    if (sched->done())
      continue;

    StepPlan plan;
    if (!sched->schedule(plan, error)) {
      failAll(error);
      continue;
    }
    rows.clear();
    if (plan.entries.empty()) {
      // Only requests that have not arrived yet (a policy with arrival
      // delays): an idle step.
      if (!sched->complete(plan, {}, error) || !sched->waitingForArrivals())
        failAll(error.empty() ? "online engine: the scheduler planned an empty step "
                                "with no request left to arrive"
                              : error);
      continue;
    }
    auto onRow = [&](size_t r, int64_t position, int32_t tok, const float *row) {
      uint64_t id = plan.entries[r].seq;
      RequestResult &res = active.at(id).result;
      res.generated.push_back(tok);
      res.fingerprint.update(row, V);
      if (cfg.keepLogits)
        res.logits.insert(res.logits.end(), row, row + V);
      rows.push_back({id, position, tok, row});
    };
    if (!runPlannedStep(model, kv, *sched, plan, V, logits, sampled, onRow, error) ||
        !sched->complete(plan, sampled, error)) {
      failAll(error);
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      ++st.steps;
      st.tokens += plan.numTokens();
      st.generated += int64_t(rows.size());
      st.largestBatchSeqs = std::max<int64_t>(st.largestBatchSeqs, int64_t(plan.entries.size()));
      st.largestBatchTokens = std::max(st.largestBatchTokens, plan.numTokens());
      st.freeBlocks = kv.freeBlocks();
      const SchedulerStats &ss = sched->stats();
      st.preemptions = preemptionsBefore + ss.preemptRecompute + ss.preemptSwap;
    }
    // The tokens are reported after the step is complete, so that a
    // request stopped by its callback can be cancelled at once.
    for (const Row &row : rows) {
      Active &a = active.at(row.id);
      TokenEvent ev;
      ev.id = row.id;
      ev.index = int64_t(a.result.generated.size()) - 1; // one per step
      ev.position = row.position;
      ev.token = row.token;
      ev.logits = row.row;
      ev.vocab = V;
      ev.fingerprint = a.result.fingerprint.value();
      bool go = a.cb.onToken ? a.cb.onToken(ev) : true;
      if (sched->isFinished(row.id))
        finish(row.id,
               cfg.scheduler.eosToken >= 0 && row.token == cfg.scheduler.eosToken
                   ? FinishReason::Eos
                   : FinishReason::Length,
               "");
      else if (!go && sched->cancel(row.id))
        finish(row.id, FinishReason::Stopped, "");
    }
  }
}
