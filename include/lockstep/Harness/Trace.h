//===- Trace.h - Schedules as text: plans and traces ------------*- C++ -*-===//
//
// A trace records one schedule of a fuzz campaign (Fuzz.h): its setup, its
// requests and the plan of every step, so that `lockstep-run replay` runs
// the same requests and checks that it took the same steps. Text, versioned:
// "lockstep-trace 1", then `key value...` lines, the plans as planLine()
// prints them, then "end".
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_HARNESS_TRACE_H
#define LOCKSTEP_HARNESS_TRACE_H

#include "lockstep/Harness/Fuzz.h"

#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::rt {

/// Writes and reads a trace (text, versioned).
bool writeTrace(const std::string &path, const std::string &model, uint64_t campaignSeed,
                const ScheduleSetup &setup, const std::vector<Request> &requests,
                const std::vector<StepPlan> &plans, std::string &error);
struct Trace {
  uint64_t campaignSeed = 0;
  ScheduleSetup setup;
  std::vector<Request> requests;
  std::vector<std::string> planLines; ///< As planLine() prints them.
  std::vector<StepPlan> plans;        ///< The same, parsed (entries without tokens).
};
bool readTrace(const std::string &path, Trace &out, std::string &error);

/// A plan as one line of text (the trace's `step` lines): the step, its
/// limits, its events (`admit:ID`, `preempt-swap:ID`, ...) and its entries
/// (`run:ID@START+COUNT`, with `L` when the entry wants logits).
std::string planLine(const StepPlan &plan);
/// Parses a planLine(); the entries' tokens are COUNT zeros. False with
/// `error` on a malformed line.
bool parsePlanLine(const std::string &line, StepPlan &plan, std::string &error);

} // namespace lockstep::rt

#endif
