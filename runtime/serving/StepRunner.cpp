//===- StepRunner.cpp - One planned step: batch, model, sampling ----------===//
#include "lockstep/Runtime/Serving/StepRunner.h"
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"
#include "lockstep/Runtime/Serving/StepTimes.h"

#include <limits>

using namespace lockstep::rt;

StepBatch lockstep::rt::buildStepBatch(const StepPlan &plan, const KVCache &kv) {
  StepBatch b;
  b.seqStarts.push_back(0);
  for (const StepEntry &e : plan.entries) {
    for (size_t i = 0; i < e.tokens.size(); ++i) {
      b.tokens.push_back(e.tokens[i]);
      b.positions.push_back(e.startPosition + int64_t(i));
    }
    b.seqStarts.push_back(int64_t(b.tokens.size()));
    b.contextLens.push_back(e.startPosition + int64_t(e.tokens.size()));
    b.blockTables.push_back(kv.blockTable(e.seq));
    b.logitRows.push_back(e.wantLogits ? int64_t(b.tokens.size()) - 1 : -1);
    b.seqIds.push_back(e.seq);
  }
  return b;
}

bool StepModel::stepRows(const StepBatch &batch, KVCache &kv, std::vector<float> &scratch,
                         std::vector<const float *> &rows, std::string &error) {
  size_t R = batch.logitRows.size();
  int64_t V = vocab();
  scratch.assign(R * size_t(V), std::numeric_limits<float>::quiet_NaN());
  if (!step(batch, kv, scratch.data(), error))
    return false;
  rows.assign(R, nullptr);
  for (size_t r = 0; r < R; ++r)
    if (batch.logitRows[r] >= 0)
      rows[r] = scratch.data() + r * size_t(V);
  return true;
}

bool lockstep::rt::runPlannedStep(StepModel &model, KVCache &kv, const Scheduler &sched,
                                  const StepPlan &plan, int64_t V,
                                  std::vector<float> &logits,
                                  std::vector<int32_t> &sampled,
                                  const SampledRowFn &onRow, std::string &error,
                                  const RowWorkFn &rowWork, ThreadPool *pool) {
  StepTimer batchTime(StepPart::Batch);
  sampled.assign(plan.entries.size(), -1);
  StepBatch batch = buildStepBatch(plan, kv);
  batchTime.stop();
  std::vector<const float *> rows;
  if (!model.stepRows(batch, kv, logits, rows, error)) {
    error = "step " + std::to_string(plan.step) + ": " + error;
    return false;
  }
  if (rows.size() != plan.entries.size()) {
    error = "step " + std::to_string(plan.step) + ": the model gave " +
            std::to_string(rows.size()) + " logits rows for " +
            std::to_string(plan.entries.size()) + " requests";
    return false;
  }
  std::vector<size_t> want; // the sampled entries
  for (size_t r = 0; r < plan.entries.size(); ++r) {
    const StepEntry &e = plan.entries[r];
    if (!e.wantLogits)
      continue;
    if (!rows[r]) {
      error = "step " + std::to_string(plan.step) + ": the model gave no logits for request " +
              std::to_string(e.seq);
      return false;
    }
    want.push_back(r);
  }
  auto positionOf = [&](size_t r) {
    const StepEntry &e = plan.entries[r];
    return e.startPosition + int64_t(e.tokens.size());
  };
  auto rowTask = [&](size_t i) {
    size_t r = want[i];
    const Request *req = sched.request(plan.entries[r].seq);
    sampled[r] = sample(rows[r], V, req->sampling, positionOf(r));
    if (rowWork)
      rowWork(r, rows[r]);
  };
  StepTimer sampleTime(StepPart::Sample);
  if (pool) { // runs the rows on this thread when it has no workers
    using Task = decltype(rowTask);
    pool->parallelFor(
        [](void *ctx, int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            (*static_cast<Task *>(ctx))(size_t(i));
        },
        &rowTask, 0, int64_t(want.size()));
  } else {
    for (size_t i = 0; i < want.size(); ++i)
      rowTask(i);
  }
  sampleTime.stop();
  StepTimer recordTime(StepPart::Record);
  if (onRow)
    for (size_t r : want)
      onRow(r, positionOf(r), sampled[r], rows[r]);
  return true;
}
