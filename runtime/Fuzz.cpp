//===- Fuzz.cpp - The schedule-fuzzing campaign ---------------------------===//
#include "Fuzz.h"

#include <algorithm>
#include <cinttypes>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

using namespace lockstep::rt;

namespace {

uint64_t mix(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9e3779b97f4a7c15ULL + b + 0x632be59bd9b4e019ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

int64_t blocksFor(int64_t tokens, int64_t blockSize) {
  return (tokens + blockSize - 1) / blockSize;
}

/// Float bits as an ordered integer, so that ulp distances are differences.
int64_t ordered(float f) {
  int32_t i;
  std::memcpy(&i, &f, 4);
  return i < 0 ? int64_t(INT32_MIN) - i : i;
}

} // namespace

ScheduleSetup lockstep::rt::baselineSetup(const std::vector<Request> &requests,
                                          int64_t vocab) {
  ScheduleSetup s;
  int64_t longestPrompt = 1, longest = 1;
  for (const Request &r : requests) {
    longestPrompt = std::max<int64_t>(longestPrompt, r.prompt.size());
    longest = std::max<int64_t>(longest, r.prompt.size() + r.maxNewTokens);
  }
  s.policy = PolicyConfig::deterministicDefault();
  s.scheduler.tokenBudget = longestPrompt;
  s.scheduler.maxPrefillChunk = longestPrompt;
  s.scheduler.maxSeqs = 1;
  s.scheduler.maxContext = longest;
  s.scheduler.vocab = vocab;
  s.blockSize = 16;
  s.kvBlocks = blocksFor(longest, s.blockSize);
  s.hostBlocks = 0;
  return s;
}

ScheduleSetup lockstep::rt::drawSchedule(uint64_t campaignSeed, int64_t index,
                                         const std::vector<Request> &requests,
                                         int64_t vocab, int64_t maxThreads) {
  ScheduleSetup s;
  s.index = index;
  s.seed = mix(campaignSeed, uint64_t(index));
  PolicyConfig knobsCfg;
  knobsCfg.seed = mix(s.seed, 0x6c6f636b);
  Policy knobs(knobsCfg);
  s.policy = PolicyConfig::fuzz(s.seed);
  static const int64_t blockSizes[] = {1, 2, 4, 16, 64};
  s.blockSize = blockSizes[knobs.uniform(0, 4)];
  int64_t longest = 1, total = 0, prompts = 0, longestPrompt = 1;
  for (const Request &r : requests) {
    int64_t ctx = int64_t(r.prompt.size()) + r.maxNewTokens;
    longest = std::max(longest, ctx);
    prompts += int64_t(r.prompt.size());
    longestPrompt = std::max<int64_t>(longestPrompt, r.prompt.size());
    total += blocksFor(ctx, s.blockSize);
  }
  int64_t least = blocksFor(longest, s.blockSize);
  // Tight budgets half of the time, so that preemption is common.
  s.kvBlocks = knobs.chance(0.5) ? knobs.uniform(least, std::max(least, 2 * least))
                                 : knobs.uniform(least, std::max(least, total));
  s.hostBlocks = knobs.chance(0.3) ? 0 : knobs.uniform(least, std::max(least, total));
  s.scheduler.tokenBudget = knobs.uniform(1, 160);
  s.scheduler.maxSeqs = knobs.uniform(1, 48);
  s.scheduler.maxPrefillChunk = knobs.uniform(1, s.scheduler.tokenBudget);
  s.scheduler.maxContext = longest;
  s.scheduler.vocab = vocab;
  // A quarter of the schedules are wide: every request resident and in
  // every step at once until the first one ends (all arrive together, no
  // skips, evictions or budget cuts, a KV budget that holds them all and a
  // token budget that feeds all of them a chunk), so that steps hold all of
  // the campaign's requests, however many: the widest batches, where a
  // backend would be tempted to split differently. Chunk sizes stay random.
  if (knobs.chance(0.25)) {
    int64_t n = std::max<int64_t>(int64_t(requests.size()), 1);
    s.kvBlocks = std::max(total, least);
    s.scheduler.maxSeqs = n;
    s.scheduler.tokenBudget = prompts + n;
    s.scheduler.maxPrefillChunk = knobs.uniform(1, longestPrompt);
    s.policy.maxArrivalDelay = 0;
    s.policy.skipProbability = 0;
    s.policy.evictProbability = 0;
    s.policy.randomBudgets = false;
  }
  // From a generator of its own, so that the other draws do not depend on
  // the machine's core count.
  PolicyConfig threadsCfg;
  threadsCfg.seed = mix(s.seed, 0x74687264);
  s.threads = Policy(threadsCfg).uniform(1, std::max<int64_t>(maxThreads, 1));
  return s;
}

bool lockstep::rt::runSchedule(StepModel &model, const CacheConfigFn &cache,
                               const ScheduleSetup &setup,
                               const std::vector<Request> &requests, ScheduleRun &out,
                               std::string &error, const std::atomic<bool> *cancel,
                               const std::vector<StepPlan> *script) {
  EngineConfig cfg;
  if (script)
    cfg.script = *script;
  cfg.kv = cache(setup.blockSize, setup.kvBlocks, setup.hostBlocks);
  cfg.scheduler = setup.scheduler;
  cfg.policy = setup.policy;
  cfg.keepLogits = true;
  auto engine = Engine::create(model, cfg, error);
  if (!engine)
    return false;
  out = ScheduleRun();
  uint64_t maxId = 0;
  for (const Request &r : requests)
    maxId = std::max(maxId, r.id);
  out.tokenSteps.assign(maxId + 1, {});
  int64_t steps = 0;
  EngineCallbacks cb;
  cb.cancel = cancel;
  cb.onToken = [&](uint64_t id, int64_t, int32_t, const float *) {
    if (id < out.tokenSteps.size())
      out.tokenSteps[id].push_back(steps);
  };
  cb.onStep = [&](const StepPlan &plan) {
    out.plans.push_back(plan);
    ++steps;
  };
  return engine->run(requests, out.result, error, cb);
}

Comparison lockstep::rt::compareRuns(const ScheduleRun &baseline, const ScheduleRun &run,
                                     const ScheduleSetup &setup,
                                     const std::vector<Request> &requests, int64_t vocab) {
  Comparison c;
  auto earlier = [](const Mismatch &a, const Mismatch &b) {
    return a.step != b.step ? a.step < b.step : a.request < b.request;
  };
  auto note = [&](Mismatch m) {
    ++c.mismatches;
    m.schedule = setup.index;
    m.scheduleSeed = setup.seed;
    if (!c.first || earlier(m, *c.first))
      c.first = m;
  };
  for (size_t i = 0; i < baseline.result.requests.size(); ++i) {
    const RequestResult &b = baseline.result.requests[i];
    const RequestResult *r =
        i < run.result.requests.size() ? &run.result.requests[i] : nullptr;
    if (b.status != RequestStatus::Ok)
      continue; // rejected alone: nothing to compare
    const std::vector<int64_t> &steps =
        b.id < run.tokenSteps.size() ? run.tokenSteps[b.id] : std::vector<int64_t>();
    if (!r || r->status != RequestStatus::Ok || r->generated.size() != b.generated.size()) {
      Mismatch m;
      m.request = b.id;
      m.step = steps.empty() ? 0 : steps.back();
      m.what = !r ? "missing from the schedule's results"
               : r->status != RequestStatus::Ok
                   ? std::string("ended ") + requestStatusName(r->status) +
                         (r->reason.empty() ? "" : ": " + r->reason)
                   : "generated " + std::to_string(r->generated.size()) +
                         " tokens instead of " + std::to_string(b.generated.size());
      note(m);
      continue;
    }
    for (size_t g = 0; g < b.generated.size(); ++g) {
      const float *x = b.logits.data() + g * vocab, *y = r->logits.data() + g * vocab;
      ++c.tokens;
      c.logits += vocab;
      if (std::memcmp(x, y, size_t(vocab) * 4) == 0)
        continue;
      Mismatch m;
      m.request = b.id;
      m.generatedIndex = int64_t(g);
      m.position = int64_t(i < requests.size() ? requests[i].prompt.size() : 0) + int64_t(g);
      m.step = g < steps.size() ? steps[g] : -1;
      for (int64_t v = 0; v < vocab; ++v) {
        uint32_t bx, by;
        std::memcpy(&bx, x + v, 4);
        std::memcpy(&by, y + v, 4);
        if (bx == by)
          continue;
        ++m.differing;
        int64_t d = ordered(x[v]) - ordered(y[v]);
        m.maxUlps = std::max<uint64_t>(m.maxUlps, uint64_t(d < 0 ? -d : d));
      }
      note(m);
    }
  }
  return c;
}

std::string lockstep::rt::describeMismatch(const Mismatch &m) {
  std::string s = "request " + std::to_string(m.request);
  if (!m.what.empty())
    return s + " " + m.what + " (schedule " + std::to_string(m.schedule) + ", seed " +
           std::to_string(m.scheduleSeed) + ")";
  return s + ", generated token " + std::to_string(m.generatedIndex) + " (position " +
         std::to_string(m.position) + "), step " + std::to_string(m.step) +
         ", schedule " + std::to_string(m.schedule) + " (seed " +
         std::to_string(m.scheduleSeed) + "): " + std::to_string(m.differing) +
         " logits differ, by up to " + std::to_string(m.maxUlps) + " ulps";
}

std::string lockstep::rt::planLine(const StepPlan &p) {
  std::string s = "step " + std::to_string(p.step) + " budget " +
                  std::to_string(p.tokenBudget) + " seqs " + std::to_string(p.maxSeqs);
  for (const StepEvent &e : p.events)
    s += std::string(" ") + eventKindName(e.kind) + ":" + std::to_string(e.seq);
  for (const StepEntry &e : p.entries)
    s += " run:" + std::to_string(e.seq) + "@" + std::to_string(e.startPosition) + "+" +
         std::to_string(e.tokens.size()) + (e.wantLogits ? "L" : "");
  return s;
}

bool lockstep::rt::parsePlanLine(const std::string &line, StepPlan &p, std::string &error) {
  std::istringstream in(line);
  std::string word;
  p = StepPlan();
  if (!(in >> word) || word != "step" || !(in >> p.step) || !(in >> word) ||
      word != "budget" || !(in >> p.tokenBudget) || !(in >> word) || word != "seqs" ||
      !(in >> p.maxSeqs)) {
    error = "not a step line";
    return false;
  }
  static const EventKind kinds[] = {EventKind::Admit,          EventKind::PreemptRecompute,
                                    EventKind::PreemptSwap,    EventKind::EvictRecompute,
                                    EventKind::EvictSwap,      EventKind::SwapIn,
                                    EventKind::Readmit};
  while (in >> word) {
    size_t colon = word.find(':');
    std::string name = word.substr(0, colon == std::string::npos ? 0 : colon);
    std::string rest = colon == std::string::npos ? "" : word.substr(colon + 1);
    if (name == "run") {
      StepEntry e;
      unsigned long long seq = 0;
      long long start = 0, count = 0;
      char mark = 0;
      int got = std::sscanf(rest.c_str(), "%llu@%lld+%lld%c", &seq, &start, &count, &mark);
      if (got < 3 || (got == 4 && mark != 'L') || start < 0 || count < 1 || count > (1 << 30)) {
        error = "bad entry '" + word + "'";
        return false;
      }
      e.seq = seq;
      e.startPosition = start;
      e.tokens.assign(size_t(count), 0);
      e.wantLogits = got == 4;
      p.entries.push_back(std::move(e));
      continue;
    }
    bool known = false;
    for (EventKind k : kinds)
      if (name == eventKindName(k)) {
        char *end = nullptr;
        unsigned long long seq = std::strtoull(rest.c_str(), &end, 10);
        if (rest.empty() || *end) {
          error = "bad event '" + word + "'";
          return false;
        }
        p.events.push_back({k, seq});
        known = true;
      }
    if (!known) {
      error = "unknown item '" + word + "'";
      return false;
    }
  }
  return true;
}

// The trace: "lockstep-trace 1", then `key value...` lines.
bool lockstep::rt::writeTrace(const std::string &path, const std::string &model,
                              uint64_t campaignSeed, const ScheduleSetup &s,
                              const std::vector<Request> &requests,
                              const std::vector<StepPlan> &plans, std::string &error) {
  std::ofstream f(path);
  if (!f) {
    error = "cannot write the trace '" + path + "'";
    return false;
  }
  char buf[512];
  f << "lockstep-trace 1\n";
  f << "model " << model << "\n";
  f << "campaign_seed " << campaignSeed << "\n";
  f << "schedule " << s.index << " " << s.seed << "\n";
  const PolicyConfig &p = s.policy;
  std::snprintf(buf, sizeof buf,
                "policy %" PRIu64 " %d %d %d %d %.17g %d %d %.17g %" PRId64 "\n", p.seed,
                int(p.admission), int(p.randomChunks), int(p.randomBudgets),
                int(p.shuffle), p.skipProbability, int(p.preempt), int(p.victim),
                p.evictProbability, p.maxArrivalDelay);
  f << buf;
  const SchedulerConfig &c = s.scheduler;
  f << "limits " << c.tokenBudget << " " << c.maxSeqs << " " << c.maxPrefillChunk << " "
    << c.maxContext << " " << c.vocab << " " << c.eosToken << "\n";
  f << "cache " << s.blockSize << " " << s.kvBlocks << " " << s.hostBlocks << "\n";
  f << "threads " << s.threads << "\n";
  for (const Request &r : requests) {
    std::snprintf(buf, sizeof buf, "request %" PRIu64 " %" PRId64 " %.9g %d %.9g %" PRIu64,
                  r.id, r.maxNewTokens, double(r.sampling.temperature), r.sampling.topK,
                  double(r.sampling.topP), r.sampling.seed);
    f << buf;
    for (int32_t t : r.prompt)
      f << " " << t;
    f << "\n";
  }
  for (const StepPlan &plan : plans)
    f << planLine(plan) << "\n";
  f << "end\n";
  if (!f) {
    error = "cannot write the trace '" + path + "'";
    return false;
  }
  return true;
}

bool lockstep::rt::readTrace(const std::string &path, Trace &t, std::string &error) {
  std::ifstream f(path);
  if (!f) {
    error = "cannot read the trace '" + path + "'";
    return false;
  }
  std::string line;
  size_t n = 0;
  bool ended = false, haveHeader = false;
  auto bad = [&](const std::string &what) {
    error = path + ":" + std::to_string(n) + ": " + what;
    return false;
  };
  while (std::getline(f, line)) {
    ++n;
    std::istringstream in(line);
    std::string key;
    in >> key;
    if (n == 1) {
      std::string v;
      in >> v;
      if (key != "lockstep-trace" || v != "1")
        return bad("not a lockstep trace (version 1)");
      haveHeader = true;
      continue;
    }
    if (key == "model" || key.empty())
      continue;
    if (key == "end") {
      ended = true;
      break;
    }
    bool ok = true;
    if (key == "campaign_seed") {
      ok = bool(in >> t.campaignSeed);
    } else if (key == "schedule") {
      ok = bool(in >> t.setup.index >> t.setup.seed);
    } else if (key == "policy") {
      PolicyConfig &p = t.setup.policy;
      int adm, rc, rb, sh, pre, vic;
      ok = bool(in >> p.seed >> adm >> rc >> rb >> sh >> p.skipProbability >> pre >> vic >>
                p.evictProbability >> p.maxArrivalDelay) &&
           adm >= 0 && adm <= 1 && pre >= 0 && pre <= 2 && vic >= 0 && vic <= 1;
      p.admission = AdmissionOrder(adm);
      p.randomChunks = rc;
      p.randomBudgets = rb;
      p.shuffle = sh;
      p.preempt = PreemptMode(pre);
      p.victim = VictimChoice(vic);
    } else if (key == "limits") {
      SchedulerConfig &c = t.setup.scheduler;
      ok = bool(in >> c.tokenBudget >> c.maxSeqs >> c.maxPrefillChunk >> c.maxContext >>
                c.vocab >> c.eosToken);
    } else if (key == "cache") {
      ok = bool(in >> t.setup.blockSize >> t.setup.kvBlocks >> t.setup.hostBlocks);
    } else if (key == "threads") { // absent in older traces: 1
      ok = bool(in >> t.setup.threads) && t.setup.threads >= 1 && t.setup.threads <= 1024;
    } else if (key == "request") {
      Request r;
      ok = bool(in >> r.id >> r.maxNewTokens >> r.sampling.temperature >> r.sampling.topK >>
                r.sampling.topP >> r.sampling.seed);
      int32_t tok;
      while (ok && in >> tok)
        r.prompt.push_back(tok);
      ok = ok && in.eof();
      t.requests.push_back(std::move(r));
    } else if (key == "step") {
      StepPlan plan;
      std::string why;
      if (!parsePlanLine(line, plan, why))
        return bad(why);
      t.planLines.push_back(line);
      t.plans.push_back(std::move(plan));
    } else {
      return bad("unknown line '" + key + "'");
    }
    if (!ok)
      return bad("malformed '" + key + "' line");
  }
  if (!haveHeader)
    return bad("empty trace");
  if (!ended)
    return bad("the trace is truncated (no 'end' line)");
  return true;
}
