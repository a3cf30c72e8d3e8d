//===- StepTimes.h - Where a serving step's host time goes ------*- C++ -*-===//
//
// With LOCKSTEP_STEP_TIMES=1 in the environment, the engines sum the host's
// wall time of each part of a step over the steps they run (steady clock);
// `lockstep-run bench` prints the sums of its timed run. Unset, nothing is
// timed (one branch a part). A diagnostic: it changes no result.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_STEPTIMES_H
#define LOCKSTEP_RUNTIME_SERVING_STEPTIMES_H

#include <array>
#include <chrono>

namespace lockstep::rt {

enum class StepPart {
  Schedule,  ///< the scheduler's plan
  Batch,     ///< the plan as a ragged batch, the logits' rows prefilled with NaN
  Inputs,    ///< the step model's inputs (block tables, logit rows)
  Call,      ///< the compiled step: uploads, launches, the wait, downloads
  KVRows,    ///< the step's new K/V rows into the pools (where the call did not)
  LogitRows, ///< the logits' rows found in the call's output (read in place)
  Sample,    ///< a token drawn from each row, and its fingerprint (row pool)
  Record,    ///< each row's tokens, kept logits, callbacks
  Complete,  ///< the scheduler's bookkeeping of the sampled tokens
  Count
};

constexpr int kStepParts = int(StepPart::Count);

/// Whether LOCKSTEP_STEP_TIMES=1 (read once).
bool stepTimesOn();
/// The seconds summed for each part since the last reset.
std::array<double, kStepParts> stepTimes();
void resetStepTimes();
const char *stepPartName(StepPart p);
void addStepTime(StepPart p, double seconds);

/// Adds the time from its construction to stop() (or its end) to `part`.
class StepTimer {
public:
  explicit StepTimer(StepPart part) : part(part), on(stepTimesOn()) {
    if (on)
      start = std::chrono::steady_clock::now();
  }
  ~StepTimer() { stop(); }
  void stop() {
    if (!on)
      return;
    on = false;
    addStepTime(part, std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                          .count());
  }

private:
  StepPart part;
  bool on;
  std::chrono::steady_clock::time_point start;
};

} // namespace lockstep::rt

#endif
