//===- Bench.cpp - lockstep-run bench: serving throughput -----------------===//
//
// Serves N drawn requests two ways in one run and times both: each request
// alone, one after the other (the baseline of fuzz), and all of them through
// the continuous-batching scheduler with its default policy. Prints steps,
// wall time and token rates of each and their ratio, and compares every
// logit of the two runs bit for bit: a throughput number comes with an
// invariance check. `--only alone|batched` times one of the two (for a large
// model whose alone run would take long); nothing is compared then, and the
// output says so. `--warmup N` serves the requests N times more in each
// timed mode, untimed, just before its timed run, so that first touches
// (page faults of the weights, the thread pool's start) are not timed.
//
// After everything else, each timed mode's steps split into two phases, a
// line each, every step timed on its own inside the run:
//
//   MODE prefill    S steps  X s  F fed tokens  R fed tokens/s  M ms/step
//   MODE decode     S steps  X s  G generated tokens  R generated tokens/s  M ms/step
//
// MODE is alone or batched, the label padded to 19 columns like the lines
// above it; X has six decimals. A prefill step fed at least one prompt token
// (F: every token it fed, a decode token of another request in the same step
// too); a decode step fed only generated tokens (G: the tokens sampled in
// those steps). The two step counts add up to the table's steps. X is the
// sum of the steps' times (planning, the model's step, sampling), so the
// two phases' X add up to a little less than the table's wall time, which
// also counts the engine's creation. R and M are per second of X and per
// step.
//
//===----------------------------------------------------------------------===//
#include "Commands.h"
#include "Loaded.h"

#include "lockstep/Runtime/Backend/Cuda/CudaBackend.h"
#include "lockstep/Runtime/Serving/StepTimes.h"

#include <array>
#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

using namespace lockstep::rt;
using namespace lockstep::run;

namespace {

int usage(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run bench: %s (see lockstep-run bench --help)\n",
               msg.c_str());
  return 2;
}

int failure(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run bench: %s\n", msg.c_str());
  return 1;
}

/// The batched setup: what generate does by default, with room for every
/// request's whole context.
ScheduleSetup batchedSetup(const std::vector<Request> &requests, int64_t vocab,
                           int64_t tokenBudget) {
  ScheduleSetup s;
  s.policy = PolicyConfig::deterministicDefault();
  s.scheduler.tokenBudget = tokenBudget;
  s.scheduler.maxSeqs = 64;
  s.scheduler.maxPrefillChunk = tokenBudget;
  s.scheduler.vocab = vocab;
  s.blockSize = 16;
  int64_t longest = 1, blocks = 0;
  for (const Request &r : requests) {
    int64_t ctx = int64_t(r.prompt.size()) + r.maxNewTokens;
    longest = std::max(longest, ctx);
    blocks += (ctx + s.blockSize - 1) / s.blockSize;
  }
  s.scheduler.maxContext = longest;
  s.kvBlocks = std::max<int64_t>(blocks, 1);
  return s;
}

struct Timed {
  ScheduleRun run;
  double seconds = 0;
  std::array<double, lockstep::rt::kStepParts> parts{}; ///< LOCKSTEP_STEP_TIMES's sums
};

/// With LOCKSTEP_STEP_TIMES=1: where the host's time of each step went.
void printStepTimes(const char *name, const Timed &t) {
  using namespace lockstep::rt;
  int64_t steps = std::max<int64_t>(t.run.result.stats.steps, 1);
  double sum = 0;
  std::printf("step times %-7s ms a step:", name);
  for (int i = 0; i < kStepParts; ++i) {
    std::printf(" %s %.3f,", stepPartName(StepPart(i)), 1e3 * t.parts[i] / steps);
    sum += t.parts[i];
  }
  std::printf(" rest %.3f\n", 1e3 * (t.seconds - sum) / steps);
}

/// Steps of one phase of a run (the header says which steps are which).
struct Phase {
  int64_t steps = 0, fed = 0, generated = 0;
  double seconds = 0;
};

/// Splits the run's steps into prefill (index 0) and decode (index 1);
/// idle steps (none under bench's policy) are in neither.
std::pair<Phase, Phase> splitPhases(const ScheduleRun &run,
                                    const std::vector<Request> &requests) {
  std::vector<int64_t> promptLen(run.tokenSteps.size(), 0);
  for (const Request &r : requests)
    if (r.id < promptLen.size())
      promptLen[r.id] = int64_t(r.prompt.size());
  std::vector<int64_t> sampledAt(run.plans.size(), 0);
  for (const std::vector<int64_t> &steps : run.tokenSteps)
    for (int64_t s : steps)
      if (s >= 0 && size_t(s) < sampledAt.size())
        ++sampledAt[s];
  Phase prefill, decode;
  for (size_t i = 0; i < run.plans.size(); ++i) {
    const StepPlan &plan = run.plans[i];
    if (plan.entries.empty())
      continue;
    bool prompt = false;
    for (const StepEntry &e : plan.entries)
      prompt |= e.seq >= promptLen.size() || e.startPosition < promptLen[e.seq];
    Phase &p = prompt ? prefill : decode;
    ++p.steps;
    p.fed += plan.numTokens();
    p.generated += sampledAt[i];
    p.seconds += i < run.stepSeconds.size() ? run.stepSeconds[i] : 0.0;
  }
  return {prefill, decode};
}

/// The two phase lines of one timed mode (the format is the header's).
void printPhases(const char *mode, const ScheduleRun &run, const std::vector<Request> &requests) {
  auto [prefill, decode] = splitPhases(run, requests);
  auto line = [&](const char *phase, const Phase &p, const char *what, int64_t count) {
    std::string label = std::string(mode) + " " + phase;
    double secs = p.seconds;
    std::printf("%-18s %lld steps  %.6f s  %lld %s tokens  %.1f %s tokens/s  %.3f ms/step\n",
                label.c_str(), (long long)p.steps, secs, (long long)count, what,
                secs > 0 ? count / secs : 0.0, what, p.steps ? 1e3 * secs / p.steps : 0.0);
  };
  line("prefill", prefill, "fed", prefill.fed);
  line("decode", decode, "generated", decode.generated);
}

/// How the kernels were launched (LaunchGraph.h), both runs together.
void printLaunches() {
  lockstep::rt::LaunchGraphStats g = lockstep::rt::cudaLaunchStats();
  if (!g.disabled.empty()) {
    std::printf("cuda launches      %llu kernels, one by one (graphs off: %s)\n",
                (unsigned long long)g.kernels, g.disabled.c_str());
    return;
  }
  std::printf("cuda launches      %llu kernels in %llu batches: %llu as CUDA graphs (%llu made, "
              "%llu nodes updated), %llu kernel by kernel\n",
              (unsigned long long)g.kernels, (unsigned long long)g.flushes,
              (unsigned long long)g.replays, (unsigned long long)g.built,
              (unsigned long long)g.updates, (unsigned long long)g.direct);
  // Where the host's time went (both runs): making launches, handing them to
  // the stream, waiting for the device.
  std::printf("cuda host          %.1f ms queuing (%.2f us a kernel), %.1f ms flushing "
              "(%.1f us a batch), %.1f ms waiting; segments of %llu launches (%llu cut)\n",
              1e3 * g.queueSeconds, g.kernels ? 1e6 * g.queueSeconds / g.kernels : 0.0,
              1e3 * g.flushSeconds, g.flushes ? 1e6 * g.flushSeconds / g.flushes : 0.0,
              1e3 * g.waitSeconds, (unsigned long long)g.segment,
              (unsigned long long)g.segments);
}

} // namespace

int lockstep::run::runBench(int argc, char **argv) {
  std::string model, device = "cpu";
  std::string only;
  int64_t nRequests = 16, promptLen = 48, maxNew = 16, threads = 1, seed = 1, budget = 256;
  int64_t warmup = 0;
  for (int i = 2; i < argc; ++i) {
    std::string v;
    bool missing = false, matched = false;
    const char *flags[] = {"--requests", "--prompt-len", "--max-new-tokens", "--threads",
                           "--seed", "--token-budget", "--warmup"};
    int64_t *vals[] = {&nRequests, &promptLen, &maxNew, &threads, &seed, &budget, &warmup};
    const int64_t lows[] = {1, 1, 1, 1, 0, 1, 0};
    const int64_t hi[] = {4096, 1 << 20, 1 << 20, 1024, int64_t(1) << 62, 1 << 16, 1000};
    for (int f = 0; f < 7 && !matched; ++f) {
      if (!flagValue(argc, argv, i, flags[f], v, missing))
        continue;
      matched = true;
      if (missing)
        return usage(std::string(flags[f]) + " needs a value");
      int64_t lo = lows[f];
      if (!parseInt(v, lo, hi[f], *vals[f]))
        return usage(std::string(flags[f]) + " takes an integer in [" + std::to_string(lo) +
                     ", " + std::to_string(hi[f]) + "], not '" + v + "'");
    }
    if (matched)
      continue;
    if (flagValue(argc, argv, i, "--only", v, missing)) {
      if (missing || (v != "alone" && v != "batched"))
        return usage("--only takes alone or batched");
      only = v;
      continue;
    }
    if (flagValue(argc, argv, i, "--device", v, missing)) {
      if (missing || !isDeviceName(v))
        return usage("--device takes cpu or cuda");
      device = v;
      continue;
    }
    if (std::string bad = takeModel(argv[i], model); !bad.empty())
      return usage(bad);
  }
  if (model.empty())
    return usage("no model (MODEL.lsa)");

  std::string error;
  Loaded L;
  if (!L.load(model, threads, device, error))
    return failure(error);
  int64_t vocab = L.model->vocab();
  if (auto limit = L.model->maxContext(); limit && promptLen + maxNew > *limit)
    return usage("--prompt-len " + std::to_string(promptLen) + " + --max-new-tokens " +
                 std::to_string(maxNew) + " exceeds the model's context of " +
                 std::to_string(*limit) + " (" + L.model->maxContextSource() + ")");

  // The requests: greedy, prompts drawn from the seed.
  PolicyConfig pc;
  pc.seed = uint64_t(seed) ^ 0x62656e6368ULL;
  Policy draw(pc);
  std::vector<Request> requests;
  for (int64_t i = 0; i < nRequests; ++i) {
    Request r;
    r.id = uint64_t(i);
    for (int64_t t = 0; t < promptLen; ++t)
      r.prompt.push_back((int32_t)draw.uniform(0, vocab - 1));
    r.maxNewTokens = maxNew;
    requests.push_back(std::move(r));
  }

  catchSigint(true);
  auto timed = [&](const ScheduleSetup &setup, Timed &out) {
    for (int64_t w = 0; w < warmup; ++w) {
      ScheduleRun untimed;
      if (!runSchedule(*L.model, L.cache, setup, requests, untimed, error, &interrupted()))
        return false;
      if (interrupted().load())
        return true;
    }
    lockstep::rt::resetStepTimes();
    auto t0 = std::chrono::steady_clock::now();
    bool ok = runSchedule(*L.model, L.cache, setup, requests, out.run, error, &interrupted());
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.parts = lockstep::rt::stepTimes();
    return ok;
  };
  Timed alone, batched;
  // With --only, nothing is compared: the rows are not kept (64 requests of
  // a 32000-word vocabulary would copy 8 MB a step into memory that grows).
  ScheduleSetup as = baselineSetup(requests, vocab), bs = batchedSetup(requests, vocab, budget);
  as.keepLogits = bs.keepLogits = only.empty();
  as.rowPool = bs.rowPool = L.rowPool();
  bool ok = (only == "batched" || timed(as, alone)) && (only == "alone" || timed(bs, batched));
  catchSigint(false);
  if (interrupted().load()) {
    failure("interrupted");
    return kInterruptedStatus;
  }
  if (!ok)
    return failure(error);

  std::printf("model              %s\n", model.c_str());
  std::printf("requests           %lld x (%lld prompt + %lld new tokens), greedy\n",
              (long long)nRequests, (long long)promptLen, (long long)maxNew);
  std::printf("threads            %lld\n", (long long)threads);
  std::printf("device             %s\n", L.device.c_str());
  std::printf("token budget       %lld a step (batched)\n", (long long)budget);
  std::printf("step               %s\n", L.model->stepForm().c_str());
  if (warmup)
    std::printf("warm-up            %lld untimed run%s before each timed one\n", (long long)warmup,
                warmup == 1 ? "" : "s");
  std::printf("%-10s %8s %10s %14s %12s %12s\n", "mode", "steps", "wall s", "generated/s",
              "fed/s", "ms/step");
  for (const auto &[name, t] : {std::pair<const char *, const Timed *>{"alone", &alone},
                                {"batched", &batched}}) {
    if (!only.empty() && only != name)
      continue;
    const SchedulerStats &s = t->run.result.stats;
    double secs = std::max(t->seconds, 1e-9);
    std::printf("%-10s %8lld %10.3f %14.1f %12.1f %12.3f\n", name, (long long)s.steps,
                t->seconds, s.generated / secs, s.tokens / secs,
                s.steps ? 1e3 * t->seconds / s.steps : 0.0);
  }
  if (L.device == "cuda")
    printLaunches();
  // The phase lines come last, so that the lines above keep their order.
  auto phases = [&] {
    if (only != "batched")
      printPhases("alone", alone.run, requests);
    if (only != "alone")
      printPhases("batched", batched.run, requests);
    if (lockstep::rt::stepTimesOn()) {
      if (only != "batched")
        printStepTimes("alone", alone);
      if (only != "alone")
        printStepTimes("batched", batched);
    }
  };
  if (!only.empty()) {
    std::printf("logits compared    none (--only %s)\n", only.c_str());
    phases();
    return 0;
  }
  Comparison c = compareRuns(alone.run, batched.run, bs, requests, vocab);
  std::printf("batched / alone    %.2fx the generated tokens per second\n",
              alone.seconds / std::max(batched.seconds, 1e-9));
  std::printf("logits compared    %lld rows, %lld values: %s\n", (long long)c.tokens,
              (long long)c.logits,
              c.mismatches ? "DIFFERENT between the two runs" : "identical bit for bit");
  if (c.mismatches && c.first)
    std::printf("first difference   %s\n", describeMismatch(*c.first).c_str());
  phases();
  return c.mismatches ? 1 : 0;
}
