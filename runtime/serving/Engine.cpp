//===- Engine.cpp - The generation loop over a step model -----------------===//
#include "lockstep/Runtime/Serving/Engine.h"
#include "lockstep/Runtime/Serving/StepRunner.h"
#include "lockstep/Runtime/Serving/StepTimes.h"

#include <limits>
#include <map>

using namespace lockstep::rt;

StepModel::~StepModel() = default;

const char *lockstep::rt::requestStatusName(RequestStatus status) {
  switch (status) {
  case RequestStatus::Ok:
    return "ok";
  case RequestStatus::Rejected:
    return "rejected";
  case RequestStatus::Cancelled:
    return "cancelled";
  case RequestStatus::Failed:
    return "failed";
  }
  return "?";
}

Engine::Engine(StepModel &model, const EngineConfig &config,
               std::unique_ptr<KVCache> kv)
    : model(model), cfg(config), kv(std::move(kv)),
      vocabSize(model.vocab()) {
  cfg.scheduler.vocab = vocabSize;
}

std::unique_ptr<Engine> Engine::create(StepModel &model,
                                       const EngineConfig &config,
                                       std::string &error) {
  int64_t v = model.vocab();
  if (v <= 0 || v > std::numeric_limits<int32_t>::max()) {
    error = "engine: the model's vocab " + std::to_string(v) +
            " is not a positive int32";
    return nullptr;
  }
  if (config.scheduler.vocab != 0 && config.scheduler.vocab != v) {
    error = "engine: scheduler vocab " +
            std::to_string(config.scheduler.vocab) +
            " differs from the model's " + std::to_string(v);
    return nullptr;
  }
  const SchedulerConfig &s = config.scheduler;
  if (s.tokenBudget < 1 || s.maxSeqs < 1 || s.maxPrefillChunk < 1 ||
      s.maxContext < 2) {
    error = "engine: tokenBudget, maxSeqs and maxPrefillChunk must be "
            "positive and maxContext at least 2";
    return nullptr;
  }
  std::unique_ptr<KVCache> kv = KVCache::create(config.kv, error, model.poolMemory());
  if (!kv)
    return nullptr;
  // A model whose tables end before the configured context caps it.
  EngineConfig c = config;
  if (std::optional<int64_t> limit = model.maxContext();
      limit && *limit < c.scheduler.maxContext) {
    c.scheduler.maxContext = std::max<int64_t>(*limit, 2);
    c.scheduler.maxContextSource = "the model's limit: " + model.maxContextSource();
  }
  return std::unique_ptr<Engine>(new Engine(model, c, std::move(kv)));
}

bool Engine::run(const std::vector<Request> &requests, RunResult &out,
                 std::string &error, const EngineCallbacks &cb) {
  out = RunResult();
  out.requests.resize(requests.size());
  Scheduler sched(cfg.scheduler, cfg.policy, *kv);
  if (!cfg.script.empty())
    sched.setScript(cfg.script);
  std::map<uint64_t, size_t> index; // accepted id -> its result
  // The scheduler advances its highest-priority request every step, so a
  // run takes at most this many steps; more means a scheduler bug.
  int64_t stepLimit = int64_t(requests.size() + 1) *
                      (cfg.policy.maxArrivalDelay + 1);
  for (size_t i = 0; i < requests.size(); ++i) {
    RequestResult &r = out.requests[i];
    r.id = requests[i].id;
    std::string reason;
    if (!sched.add(requests[i], reason)) {
      r.status = RequestStatus::Rejected;
      r.reason = reason;
      continue;
    }
    index[r.id] = i;
    stepLimit += int64_t(requests[i].prompt.size()) + requests[i].maxNewTokens;
  }

  auto finishRun = [&](RequestStatus status, const std::string &why) {
    for (auto &[id, i] : index)
      if (!sched.isFinished(id)) {
        out.requests[i].status = status;
        out.requests[i].reason = why;
      }
    sched.releaseAll();
    out.stats = sched.stats();
  };

  int64_t V = vocabSize;
  std::vector<float> logits;
  std::vector<int32_t> sampled;
  for (int64_t steps = 0; !sched.done(); ++steps) {
    if (cb.cancel && cb.cancel->load()) {
      out.cancelled = true;
      finishRun(RequestStatus::Cancelled, "cancelled");
      return true;
    }
    if (steps >= stepLimit) {
      error = "engine: the scheduler made no progress in " +
              std::to_string(stepLimit) + " steps";
      finishRun(RequestStatus::Failed, error);
      return false;
    }
    StepPlan plan;
    StepTimer scheduleTime(StepPart::Schedule);
    if (!sched.schedule(plan, error)) {
      finishRun(RequestStatus::Failed, error);
      return false;
    }
    scheduleTime.stop();
    if (plan.entries.empty() && !sched.waitingForArrivals()) {
      error = "engine: the scheduler planned an empty step with no request "
              "left to arrive";
      finishRun(RequestStatus::Failed, error);
      return false;
    }
    sampled.assign(plan.entries.size(), -1);
    if (!plan.entries.empty()) {
      // Each entry is its own request: the rows' fingerprints may be
      // extended at once, on the row pool's threads.
      auto fingerprint = [&](size_t r, const float *row) {
        out.requests[index.at(plan.entries[r].seq)].fingerprint.update(row, V);
      };
      auto onRow = [&](size_t r, int64_t position, int32_t tok, const float *row) {
        const StepEntry &e = plan.entries[r];
        RequestResult &res = out.requests[index.at(e.seq)];
        res.generated.push_back(tok);
        if (cfg.keepLogits)
          res.logits.insert(res.logits.end(), row, row + V);
        if (cb.onToken)
          cb.onToken(e.seq, position, tok, row);
      };
      if (!runPlannedStep(model, *kv, sched, plan, V, logits, sampled, onRow, error,
                          fingerprint, cfg.rowPool)) {
        finishRun(RequestStatus::Failed, error);
        return false;
      }
    }
    StepTimer completeTime(StepPart::Complete);
    if (!sched.complete(plan, sampled, error)) {
      finishRun(RequestStatus::Failed, error);
      return false;
    }
    completeTime.stop();
    if (cb.onStep)
      cb.onStep(plan);
  }
  finishRun(RequestStatus::Ok, "");
  return true;
}
