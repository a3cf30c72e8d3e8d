//===- Trace.cpp - Schedules as text: plans and traces --------------------===//
#include "lockstep/Harness/Trace.h"

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

using namespace lockstep::rt;

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
