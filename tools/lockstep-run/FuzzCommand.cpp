//===- FuzzCommand.cpp - lockstep-run fuzz and replay ---------------------===//
//
// fuzz: the baseline (every request alone), then K seeded schedules, every
// logits row compared bit for bit (Harness/Fuzz.h). Exit 0 only when all are
// identical. The first mismatching schedule is written as a trace that
// `replay` re-runs, checking that it takes the same steps and finds the same
// mismatch.
//
//===----------------------------------------------------------------------===//
#include "Commands.h"
#include "Loaded.h"

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Harness/Fuzz.h"
#include "lockstep/Harness/Prompts.h"
#include "lockstep/Harness/Trace.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <set>
#include <thread>
#include <unistd.h>

using namespace lockstep::rt;
using namespace lockstep::run;

namespace {

int usage(const char *cmd, const std::string &msg) {
  std::fprintf(stderr, "lockstep-run %s: %s (see lockstep-run %s --help)\n", cmd,
               msg.c_str(), cmd);
  return 2;
}

int failure(const char *cmd, const std::string &msg) {
  std::fprintf(stderr, "lockstep-run %s: %s\n", cmd, msg.c_str());
  return 1;
}

std::string jsonMismatch(const Mismatch &m) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "{\"request\": %llu, \"position\": %lld, \"generated_index\": %lld, "
                "\"step\": %lld, \"schedule\": %lld, \"schedule_seed\": %llu, "
                "\"differing_logits\": %lld, \"max_ulps\": %llu}",
                (unsigned long long)m.request, (long long)m.position,
                (long long)m.generatedIndex, (long long)m.step, (long long)m.schedule,
                (unsigned long long)m.scheduleSeed, (long long)m.differing,
                (unsigned long long)m.maxUlps);
  return buf;
}

struct Totals {
  int64_t steps = 0, recompute = 0, swap = 0, evictions = 0, largestSeqs = 0, largestTokens = 0,
          tokens = 0;
  int64_t preemptions() const { return recompute + swap; }
  void add(const SchedulerStats &s) {
    steps += s.steps;
    recompute += s.preemptRecompute;
    swap += s.preemptSwap;
    evictions += s.evictions;
    largestSeqs = std::max(largestSeqs, s.largestBatchSeqs);
    largestTokens = std::max(largestTokens, s.largestBatchTokens);
    tokens += s.tokens;
  }
};

} // namespace

int lockstep::run::runFuzz(int argc, char **argv) {
  const char *cmd = "fuzz";
  std::string model, promptsFile, report, trace, device = "cpu", baselineDevice,
      baselineModel;
  // --threads 0 (the default): drawn per schedule, from 1 to the cores (2 at least).
  int64_t schedules = -1, seed = -1, threads = 0, maxNew = 8, nRequests = 8;
  for (int i = 2; i < argc; ++i) {
    std::string v;
    bool missing = false;
    const char *intFlags[] = {"--schedules", "--seed", "--threads", "--max-new-tokens",
                              "--requests"};
    int64_t *intVals[] = {&schedules, &seed, &threads, &maxNew, &nRequests};
    bool matched = false;
    for (int f = 0; f < 5 && !matched; ++f) {
      if (!flagValue(argc, argv, i, intFlags[f], v, missing))
        continue;
      matched = true;
      if (missing)
        return usage(cmd, std::string(intFlags[f]) + " needs a value");
      // --threads is capped like generate's: each is an OS thread.
      int64_t lo = f == 2 ? 1 : 0,
              hi = f == 1 ? (int64_t(1) << 62) : f == 2 ? 1024 : (int64_t(1) << 30);
      if (!parseInt(v, lo, hi, *intVals[f]))
        return usage(cmd, std::string(intFlags[f]) + " takes an integer in [" +
                              std::to_string(lo) + ", " + std::to_string(hi) + "], not '" +
                              v + "'");
    }
    if (matched)
      continue;
    const char *strFlags[] = {"--prompts", "--report", "--trace", "--device",
                              "--baseline-device", "--baseline-model"};
    std::string *strVals[] = {&promptsFile, &report, &trace, &device, &baselineDevice,
                              &baselineModel};
    for (int f = 0; f < 6 && !matched; ++f) {
      if (!flagValue(argc, argv, i, strFlags[f], v, missing))
        continue;
      matched = true;
      if (missing)
        return usage(cmd, std::string(strFlags[f]) + " needs a value");
      *strVals[f] = v;
    }
    if (matched)
      continue;
    if (std::string bad = takeModel(argv[i], model); !bad.empty())
      return usage(cmd, bad);
  }
  if (model.empty())
    return usage(cmd, "no model (MODEL.lsa)");
  if (!isDeviceName(device) || (!baselineDevice.empty() && !isDeviceName(baselineDevice)))
    return usage(cmd, "--device and --baseline-device take cpu or cuda");
  if (baselineDevice.empty())
    baselineDevice = device;
  if (schedules < 0)
    return usage(cmd, "no --schedules K");
  if (seed < 0)
    return usage(cmd, "no --seed S");
  if (trace.empty())
    trace = "lockstep-fuzz-" + std::to_string(seed) + ".trace";
  // The report and the trace are written at the end: refuse paths that
  // cannot be written before the campaign, not after it.
  std::string why;
  if (!report.empty() && !canWriteFile(report, why))
    return failure(cmd, "cannot write the report '" + report + "': " + why);
  if (!canWriteFile(trace, why))
    return failure(cmd, "cannot write the trace '" + trace + "': " + why);

  // Each schedule runs on its own thread count unless --threads fixes it:
  // compiled code must give the same bits for every count.
  // At least two, so that the count varies even on one core.
  int64_t maxThreads = threads ? threads
                               : std::max<int64_t>(2, std::min<int64_t>(
                                                          std::thread::hardware_concurrency(), 64));
  std::string error;
  Loaded L, baselineLoaded;
  if (!L.load(model, 1, device, error))
    return failure(cmd, error);
  int64_t vocab = L.model->vocab();
  Loaded *B = &L;
  // A baseline on another device comes from the same artifact when it holds
  // that device's code too (--target=cpu,cuda), else from --baseline-model.
  if (baselineDevice != device && baselineModel.empty()) {
    if (!hasTarget(L.artifact.meta(), baselineDevice == "cuda" ? kCudaTarget : kCpuTarget))
      return usage(cmd, "--baseline-device " + baselineDevice + " needs an artifact with " +
                            baselineDevice + " code: compile the model with --target=cpu,cuda, "
                            "or give --baseline-model, the model compiled for " +
                            baselineDevice);
    baselineModel = model;
  }
  if (!baselineModel.empty()) {
    if (!baselineLoaded.load(baselineModel, 1, baselineDevice, error))
      return failure(cmd, "baseline: " + error);
    std::string why;
    if (!sameModel(L.artifact.meta(), baselineLoaded.artifact.meta(), why))
      return failure(cmd, "'" + baselineModel + "' is not the model of '" + model + "': " + why);
    B = &baselineLoaded;
  }

  // The requests: from the file, or drawn from the seed.
  std::vector<Request> requests;
  if (!promptsFile.empty()) {
    std::vector<PromptSpec> specs;
    if (!readPrompts(promptsFile, specs, error))
      return failure(cmd, error);
    for (size_t i = 0; i < specs.size(); ++i) {
      Request r;
      r.id = i;
      for (int64_t id : specs[i].ids)
        r.prompt.push_back(id < 0 || id > INT32_MAX ? -1 : (int32_t)id);
      r.maxNewTokens = specs[i].maxNewTokens.value_or(maxNew);
      r.sampling.temperature = (float)specs[i].temperature.value_or(0);
      r.sampling.topK = (int)specs[i].topK.value_or(0);
      r.sampling.topP = (float)specs[i].topP.value_or(1);
      r.sampling.seed = specs[i].seed.value_or(uint64_t(seed) + i);
      requests.push_back(std::move(r));
    }
  } else {
    PolicyConfig pc;
    pc.seed = uint64_t(seed) ^ 0x70726f6d707473ULL;
    Policy draw(pc);
    for (int64_t i = 0; i < nRequests; ++i) {
      Request r;
      r.id = uint64_t(i);
      int64_t len = draw.uniform(1, 72);
      for (int64_t t = 0; t < len; ++t)
        r.prompt.push_back((int32_t)draw.uniform(0, vocab - 1));
      r.maxNewTokens = maxNew;
      // Every other request samples (seeded, keyed by position).
      if (i % 2) {
        r.sampling.temperature = 0.8f;
        r.sampling.topK = 20;
        r.sampling.topP = 0.95f;
      }
      r.sampling.seed = uint64_t(seed) + uint64_t(i);
      requests.push_back(std::move(r));
    }
  }
  if (requests.empty())
    return failure(cmd, "no prompts");

  catchSigint(true);
  auto t0 = std::chrono::steady_clock::now();
  ScheduleRun baseline;
  ScheduleSetup bs = baselineSetup(requests, vocab);
  bs.threads = threads ? threads : 1;
  B->useThreads(bs.threads);
  if (!runSchedule(*B->model, B->cache, bs, requests, baseline, error, &interrupted()))
    return failure(cmd, "baseline: " + error);
  int64_t okAlone = 0;
  for (const RequestResult &r : baseline.result.requests)
    okAlone += r.status == RequestStatus::Ok;
  std::fprintf(stderr, "baseline: %zu requests alone (%lld ok), %lld steps on %s; schedules "
               "on %s\n",
               requests.size(), (long long)okAlone, (long long)baseline.result.stats.steps,
               B->device.c_str(), L.device.c_str());

  bool tty = isatty(2);
  Totals totals;
  std::set<int64_t> threadsUsed;
  int64_t tokensCompared = 0, logitsCompared = 0, mismatches = 0, done = 0;
  std::optional<Mismatch> first;
  for (int64_t k = 0; k < schedules && !interrupted().load(); ++k) {
    ScheduleSetup setup = drawSchedule(uint64_t(seed), k, requests, vocab, maxThreads);
    if (threads)
      setup.threads = threads;
    L.useThreads(setup.threads);
    // The schedules sample on the row pool (on cpu, the schedule's threads),
    // the baseline on its own thread: the rows' threads are checked too.
    setup.rowPool = L.rowPool();
    threadsUsed.insert(setup.threads);
    ScheduleRun run;
    if (!runSchedule(*L.model, L.cache, setup, requests, run, error, &interrupted())) {
      if (interrupted().load())
        break;
      return failure(cmd, "schedule " + std::to_string(k) + " (seed " +
                              std::to_string(setup.seed) + "): " + error);
    }
    if (run.result.cancelled)
      break;
    ++done;
    totals.add(run.result.stats);
    Comparison c = compareRuns(baseline, run, setup, requests, vocab);
    tokensCompared += c.tokens;
    logitsCompared += c.logits;
    mismatches += c.mismatches;
    if (c.first && !first) {
      first = c.first;
      if (tty)
        std::fprintf(stderr, "\n");
      std::fprintf(stderr, "MISMATCH: %s\n", describeMismatch(*first).c_str());
      std::string terr;
      if (writeTrace(trace, model, uint64_t(seed), setup, requests, run.plans, terr))
        std::fprintf(stderr, "trace: %s (lockstep-run replay %s %s)\n", trace.c_str(),
                     model.c_str(), trace.c_str());
      else
        std::fprintf(stderr, "%s\n", terr.c_str());
    }
    if (tty) {
      double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "\rschedule %lld/%lld  mismatches %lld  steps %lld  %.0f s",
                   (long long)(k + 1), (long long)schedules, (long long)mismatches,
                   (long long)totals.steps, s);
    }
  }
  catchSigint(false);
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (tty)
    std::fprintf(stderr, "\n");
  std::printf("%-22s %lld%s\n", "schedules", (long long)done,
              interrupted().load() ? " (interrupted)" : "");
  std::printf("%-22s %s (baseline on %s)\n", "device", L.device.c_str(), B->device.c_str());
  std::string threadList;
  for (int64_t t : threadsUsed)
    threadList += (threadList.empty() ? "" : ", ") + std::to_string(t);
  std::printf("%-22s %s%s\n", "threads", threadList.empty() ? "-" : threadList.c_str(),
              threads ? " (--threads)" : " (drawn per schedule)");
  std::printf("%-22s %zu\n", "requests", requests.size());
  // Requests refused when run alone (too long for the model, a bad token)
  // have no baseline: nothing of theirs is compared.
  int64_t skipped = int64_t(requests.size()) - okAlone;
  std::printf("%-22s %lld%s\n", "requests skipped", (long long)skipped,
              skipped ? " (refused when run alone: nothing to compare)" : "");
  std::printf("%-22s %lld\n", "steps", (long long)totals.steps);
  std::printf("%-22s %lld (recompute %lld, swap %lld)\n", "preemptions",
              (long long)totals.preemptions(), (long long)totals.recompute,
              (long long)totals.swap);
  std::printf("%-22s %lld\n", "evictions", (long long)totals.evictions);
  std::printf("%-22s %lld requests / %lld tokens\n", "largest batch",
              (long long)totals.largestSeqs, (long long)totals.largestTokens);
  std::printf("%-22s %lld\n", "tokens compared", (long long)tokensCompared);
  std::printf("%-22s %lld\n", "logits compared", (long long)logitsCompared);
  std::printf("%-22s %lld\n", "mismatches", (long long)mismatches);
  std::printf("%-22s %.1f\n", "tokens/s", elapsed > 0 ? totals.tokens / elapsed : 0.0);
  std::printf("%-22s %.2f\n", "elapsed s", elapsed);
  // A campaign that compared nothing proves nothing: it fails.
  bool nothing = tokensCompared == 0 && !interrupted().load();
  std::printf("verdict: %s\n", mismatches ? "MISMATCH (logits depend on the schedule)"
                                : nothing  ? "NOTHING COMPARED (no request produced a token "
                                             "to compare: this campaign proves nothing)"
                                           : "every logit identical to the baseline");
  std::fflush(stdout);
  if (!report.empty()) {
    std::ofstream f(report);
    f << "{\"schedules\": " << done << ", \"requests\": " << requests.size()
      << ", \"requests_skipped\": " << skipped << ", \"tokens_compared\": " << tokensCompared
      << ", \"logits_compared\": " << logitsCompared << ", \"mismatches\": " << mismatches
      << ", \"first_mismatch\": " << (first ? jsonMismatch(*first) : "null")
      << ", \"seed\": " << seed << ", \"elapsed_s\": " << elapsed
      << ", \"steps\": " << totals.steps << ", \"preemptions\": " << totals.preemptions()
      << ", \"preemptions_recompute\": " << totals.recompute
      << ", \"preemptions_swap\": " << totals.swap
      << ", \"evictions\": " << totals.evictions
      << ", \"largest_batch\": " << totals.largestSeqs << ", \"threads\": [" << threadList
      << "], \"device\": \"" << L.device
      << "\", \"baseline_device\": \"" << B->device << "\"}\n";
    if (!f)
      return failure(cmd, "cannot write the report '" + report + "'");
  }
  if (interrupted().load()) {
    failure(cmd, "interrupted");
    return kInterruptedStatus;
  }
  if (nothing)
    return failure(cmd, "no token was compared (" + std::to_string(skipped) + " of " +
                            std::to_string(requests.size()) + " requests refused alone)");
  return mismatches ? 1 : 0;
}

int lockstep::run::runReplay(int argc, char **argv) {
  const char *cmd = "replay";
  std::string model, tracePath, device = "cpu";
  int64_t threads = 0; // 0: the trace's
  for (int i = 2; i < argc; ++i) {
    std::string v;
    bool missing = false;
    if (flagValue(argc, argv, i, "--threads", v, missing)) {
      if (missing || !parseInt(v, 1, 1024, threads))
        return usage(cmd, "--threads takes an integer in [1, 1024]");
      continue;
    }
    if (flagValue(argc, argv, i, "--device", v, missing)) {
      if (missing || !isDeviceName(v))
        return usage(cmd, "--device takes cpu or cuda");
      device = v;
      continue;
    }
    std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-')
      return usage(cmd, "unknown option '" + arg + "'");
    if (model.empty())
      model = arg;
    else if (tracePath.empty())
      tracePath = arg;
    else
      return usage(cmd, "unexpected argument '" + arg + "'");
  }
  if (model.empty() || tracePath.empty())
    return usage(cmd, "needs MODEL.lsa and TRACE");
  std::string error;
  Trace t;
  if (!readTrace(tracePath, t, error))
    return failure(cmd, error);
  Loaded L;
  if (!L.load(model, 1, device, error))
    return failure(cmd, error);
  int64_t vocab = L.model->vocab();
  ScheduleRun baseline, run;
  if (!runSchedule(*L.model, L.cache, baselineSetup(t.requests, vocab), t.requests, baseline,
                   error))
    return failure(cmd, "baseline: " + error);
  if (threads)
    t.setup.threads = threads;
  L.useThreads(t.setup.threads);
  // The recorded plan is executed, not re-derived from the seeds: a trace
  // replays whatever the scheduler's policy would now decide.
  if (!runSchedule(*L.model, L.cache, t.setup, t.requests, run, error, nullptr, &t.plans))
    return failure(cmd, "schedule: " + error);
  // The same steps as recorded (the model generated the same tokens, so
  // every recorded step could be taken and none is left).
  for (size_t s = 0; s < std::max(run.plans.size(), t.planLines.size()); ++s) {
    std::string got = s < run.plans.size() ? planLine(run.plans[s]) : "(none)";
    std::string want = s < t.planLines.size() ? t.planLines[s] : "(none)";
    if (got != want)
      return failure(cmd, "the schedule diverged from the trace at step " +
                              std::to_string(s) + ":\n  trace:  " + want + "\n  replay: " + got);
  }
  Comparison c = compareRuns(baseline, run, t.setup, t.requests, vocab);
  std::printf("replayed schedule %lld (seed %llu, %lld threads): %zu steps as recorded, "
              "%lld tokens compared, %lld mismatches\n",
              (long long)t.setup.index, (unsigned long long)t.setup.seed,
              (long long)t.setup.threads, run.plans.size(),
              (long long)c.tokens, (long long)c.mismatches);
  if (c.first)
    std::printf("first mismatch: %s\n", describeMismatch(*c.first).c_str());
  return c.mismatches ? 1 : 0;
}
