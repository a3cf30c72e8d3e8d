//===- StepRunner.cpp - One planned step: batch, model, sampling ----------===//
#include "lockstep/Runtime/Serving/StepRunner.h"
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

bool lockstep::rt::runPlannedStep(StepModel &model, KVCache &kv, const Scheduler &sched,
                                  const StepPlan &plan, int64_t V,
                                  std::vector<float> &logits,
                                  std::vector<int32_t> &sampled,
                                  const SampledRowFn &onRow, std::string &error) {
  StepTimer batchTime(StepPart::Batch);
  sampled.assign(plan.entries.size(), -1);
  StepBatch batch = buildStepBatch(plan, kv);
  logits.assign(plan.entries.size() * size_t(V), std::numeric_limits<float>::quiet_NaN());
  batchTime.stop();
  if (!model.step(batch, kv, logits.data(), error)) {
    error = "step " + std::to_string(plan.step) + ": " + error;
    return false;
  }
  for (size_t r = 0; r < plan.entries.size(); ++r) {
    const StepEntry &e = plan.entries[r];
    if (!e.wantLogits)
      continue;
    const float *row = logits.data() + r * size_t(V);
    int64_t position = e.startPosition + int64_t(e.tokens.size());
    const Request *req = sched.request(e.seq);
    StepTimer sampleTime(StepPart::Sample);
    int32_t tok = sample(row, V, req->sampling, position);
    sampleTime.stop();
    sampled[r] = tok;
    StepTimer recordTime(StepPart::Record);
    if (onRow)
      onRow(r, position, tok, row);
  }
  return true;
}
