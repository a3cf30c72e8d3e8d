//===- StepRunner.h - One planned step: batch, model, sampling --*- C++ -*-===//
//
// The part of a generation loop that both engines share: a step planned by
// the scheduler becomes the ragged `StepBatch` of the serving ABI, the model
// runs it against the paged KV cache, and every entry that wants logits gets
// its row sampled with (request seed, absolute position of the sampled
// token). `Engine::run` (a fixed list of requests run to completion) and
// `OnlineEngine` (requests that arrive while it runs) differ only in how
// requests come and go around this.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_STEPRUNNER_H
#define LOCKSTEP_RUNTIME_SERVING_STEPRUNNER_H

#include "lockstep/Runtime/Serving/Engine.h"

#include <functional>
#include <string>
#include <vector>

namespace lockstep::rt {

/// The ragged batch of a plan: the entries' tokens, positions and block
/// tables, in plan order.
StepBatch buildStepBatch(const StepPlan &plan, const KVCache &kv);

/// For each sampled entry, in plan order: its index in the plan, the
/// absolute position of the sampled token, the token, and its logits row
/// (`vocab` floats, valid until the next step).
using SampledRowFn =
    std::function<void(size_t entry, int64_t position, int32_t token, const float *row)>;

/// Work on one sampled entry's logits row that touches nothing another
/// entry's does (its request's fingerprint): it may run on any thread, at
/// the same time as other entries'.
using RowWorkFn = std::function<void(size_t entry, const float *row)>;

/// Runs the step of `plan` (which must not be empty) on `model` with
/// StepModel::stepRows (`logits` is its scratch); `sampled` gets one token
/// per entry (-1 for entries without logits), ready for Scheduler::complete.
/// Each sampled row is sampled and given to `rowWork`, a row a work item
/// on `pool`'s threads when there is one (a 64-request step of a
/// 32000-word vocabulary reads 8 MB twice); then `onRow` runs for each, in
/// plan order, on this thread. Every row's work is its own, so the threads
/// change no result. False with `error` ("step N: ...") when the model
/// fails.
bool runPlannedStep(StepModel &model, KVCache &kv, const Scheduler &sched,
                    const StepPlan &plan, int64_t vocab, std::vector<float> &logits,
                    std::vector<int32_t> &sampled, const SampledRowFn &onRow,
                    std::string &error, const RowWorkFn &rowWork = {},
                    ThreadPool *pool = nullptr);

} // namespace lockstep::rt

#endif
