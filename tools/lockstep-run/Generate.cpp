//===- Generate.cpp - lockstep-run generate -------------------------------===//
//
// Serves the prompts of a JSON-lines file through the batching runtime: the
// continuous-batching scheduler over a paged KV cache, the compiled model as
// the step (createServingModel: one ragged call per step, or one call per
// request), and the sampler. Prints one JSON line per request, in input
// order: its status, generated ids and logits fingerprint; a summary, with
// the step form, goes to stderr. With --logits-out DIR, DIR/req<i>.npy holds
// the float32 [N, vocab] logits rows that produced request i's N tokens.
//
//===----------------------------------------------------------------------===//
#include "Commands.h"
#include "Loaded.h"

#include "lockstep/Text/Tokenizer.h"

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Harness/Prompts.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"
#include "lockstep/Runtime/Npy.h"
#include "lockstep/Runtime/Serving/Engine.h"
#include "lockstep/Runtime/Serving/ServingModel.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <cstring>
#include <system_error>

using namespace lockstep::rt;
using namespace lockstep::run;

namespace {

int usage(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run generate: %s (see lockstep-run generate --help)\n",
               msg.c_str());
  return 2;
}

int failure(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run generate: %s\n", msg.c_str());
  return 1;
}

struct Args {
  std::string model, prompts, logitsOut, preempt = "recompute", device = "cpu";
  int64_t maxNewTokens = 16, threads = 1, blockSize = 16, kvBlocks = -1,
          swapBlocks = -1, tokenBudget = 256, maxSeqs = 64, maxContext = 2048,
          eos = -1, topK = 0, seed = 0;
  double temperature = 0, topP = 1;
};

int parseArgs(int argc, char **argv, Args &a) {
  for (int i = 2; i < argc; ++i) {
    std::string v;
    bool missing = false;
    auto intFlag = [&](const char *flag, int64_t lo, int64_t hi, int64_t &out) -> int {
      if (!flagValue(argc, argv, i, flag, v, missing))
        return -1;
      if (missing)
        return usage(std::string(flag) + " needs a value");
      if (!parseInt(v, lo, hi, out))
        return usage(std::string(flag) + " takes an integer in [" + std::to_string(lo) +
                     ", " + std::to_string(hi) + "], not '" + v + "'");
      return 0;
    };
    const int64_t big = int64_t(1) << 40;
    int r;
    if ((r = intFlag("--max-new-tokens", 0, big, a.maxNewTokens)) >= 0 ||
        (r = intFlag("--threads", 1, 1024, a.threads)) >= 0 ||
        (r = intFlag("--block-size", 1, 1 << 16, a.blockSize)) >= 0 ||
        (r = intFlag("--kv-blocks", 1, big, a.kvBlocks)) >= 0 ||
        (r = intFlag("--swap-blocks", 0, big, a.swapBlocks)) >= 0 ||
        (r = intFlag("--token-budget", 1, big, a.tokenBudget)) >= 0 ||
        (r = intFlag("--max-seqs", 1, big, a.maxSeqs)) >= 0 ||
        (r = intFlag("--max-context", 1, big, a.maxContext)) >= 0 ||
        (r = intFlag("--eos", -1, (int64_t(1) << 31) - 1, a.eos)) >= 0 ||
        (r = intFlag("--top-k", 0, big, a.topK)) >= 0 ||
        (r = intFlag("--seed", 0, (int64_t(1) << 62), a.seed)) >= 0) {
      if (r)
        return r;
      continue;
    }
    const int at = i; // flagValue moves i past a separate value
    if (flagValue(argc, argv, i, "--prompts", v, missing) ||
        flagValue(argc, argv, i, "--logits-out", v, missing) ||
        flagValue(argc, argv, i, "--preempt", v, missing) ||
        flagValue(argc, argv, i, "--device", v, missing) ||
        flagValue(argc, argv, i, "--temperature", v, missing) ||
        flagValue(argc, argv, i, "--top-p", v, missing)) {
      std::string flag = argv[at];
      flag = flag.substr(0, flag.find('='));
      if (missing)
        return usage(flag + " needs a value");
      if (flag == "--prompts")
        a.prompts = v;
      else if (flag == "--logits-out")
        a.logitsOut = v;
      else if (flag == "--preempt") {
        if (v != "recompute" && v != "swap")
          return usage("--preempt takes recompute or swap, not '" + v + "'");
        a.preempt = v;
      } else if (flag == "--device") {
        if (!isDeviceName(v))
          return usage("--device takes cpu or cuda, not '" + v + "'");
        a.device = v;
      } else {
        char *end = nullptr;
        double d = std::strtod(v.c_str(), &end);
        if (v.empty() || *end || !(d >= 0) || d > 1e6)
          return usage(flag + " takes a non-negative number, not '" + v + "'");
        (flag == "--temperature" ? a.temperature : a.topP) = d;
      }
      continue;
    }
    if (std::string bad = takeModel(argv[i], a.model); !bad.empty())
      return usage(bad);
  }
  if (a.model.empty())
    return usage("no model (MODEL.lsa)");
  if (a.prompts.empty())
    return usage("no --prompts FILE.jsonl");
  return 0;
}

std::string idsJson(const std::vector<int32_t> &ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i)
    s += (i ? ", " : "") + std::to_string(ids[i]);
  return s + "]";
}

std::string jsonString(const std::string &s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      o += '\\', o += c;
    else if ((unsigned char)c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else
      o += c;
  }
  return o + "\"";
}

} // namespace

int lockstep::run::runGenerate(int argc, char **argv) {
  Args a;
  if (int r = parseArgs(argc, argv, a))
    return r;
  std::vector<PromptSpec> specs;
  std::string error;
  if (!readPrompts(a.prompts, specs, error))
    return failure(error);
  // The logits are written after the run: the directory is made first.
  if (!a.logitsOut.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.logitsOut, ec);
    std::string why;
    if (ec || !canWriteFile(a.logitsOut + "/req0.npy", why))
      return failure("cannot write logits to '" + a.logitsOut +
                     "': " + (ec ? ec.message() : why));
  }
  Loaded L;
  if (!L.load(a.model, a.threads, a.device, error))
    return failure(error);
  ServingModel *model = L.model.get();
  // Text prompts through the artifact's tokenizer (lockstep-opt --tokenizer),
  // which also decodes what is generated.
  std::unique_ptr<lockstep::text::Tokenizer> tokenizer;
  if (!L.artifact.tokenizerJson().empty()) {
    tokenizer = lockstep::text::Tokenizer::fromJson(L.artifact.tokenizerJson(), error);
    if (!tokenizer)
      return failure("the artifact's tokenizer: " + error);
  }
  for (size_t i = 0; i < specs.size(); ++i) {
    if (!specs[i].text)
      continue;
    if (!tokenizer)
      return failure("prompt " + std::to_string(i) +
                     " is text, but the artifact has no tokenizer (lockstep-opt --tokenizer)");
    for (int32_t id : tokenizer->encode(*specs[i].text, /*addSpecial=*/true))
      specs[i].ids.push_back(id);
  }

  EngineConfig cfg;
  // By default the cache holds every request's whole context at once.
  int64_t blocks = a.kvBlocks;
  if (blocks < 0) {
    blocks = 0;
    for (const PromptSpec &p : specs)
      blocks += (int64_t(p.ids.size()) + p.maxNewTokens.value_or(a.maxNewTokens) +
                 a.blockSize - 1) / a.blockSize;
    blocks = std::max<int64_t>(blocks, 1);
  }
  cfg.kv = model->cacheConfig(a.blockSize, blocks, a.swapBlocks < 0 ? blocks : a.swapBlocks);
  cfg.scheduler.tokenBudget = a.tokenBudget;
  cfg.scheduler.maxSeqs = a.maxSeqs;
  cfg.scheduler.maxPrefillChunk = a.tokenBudget;
  cfg.scheduler.maxContext = a.maxContext;
  cfg.scheduler.eosToken = (int32_t)a.eos;
  cfg.keepLogits = !a.logitsOut.empty();
  cfg.rowPool = L.rowPool();
  cfg.policy.preempt = a.preempt == "swap" ? PreemptMode::Swap : PreemptMode::Recompute;
  auto engine = Engine::create(*model, cfg, error);
  if (!engine)
    return failure(error);

  std::vector<Request> requests;
  for (size_t i = 0; i < specs.size(); ++i) {
    const PromptSpec &p = specs[i];
    Request r;
    r.id = i;
    // Out-of-range ids are kept as -1 so that the scheduler rejects the
    // request with a reason (the others still run).
    for (int64_t id : p.ids)
      r.prompt.push_back(id < 0 || id > INT32_MAX ? -1 : (int32_t)id);
    r.maxNewTokens = p.maxNewTokens.value_or(a.maxNewTokens);
    r.sampling.temperature = (float)p.temperature.value_or(a.temperature);
    r.sampling.topK = (int)p.topK.value_or(a.topK);
    r.sampling.topP = (float)p.topP.value_or(a.topP);
    r.sampling.seed = p.seed.value_or((uint64_t)a.seed + i);
    requests.push_back(std::move(r));
  }

  catchSigint(true);
  EngineCallbacks cb;
  cb.cancel = &interrupted();
  RunResult res;
  auto t0 = std::chrono::steady_clock::now();
  bool ok = engine->run(requests, res, error, cb);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  catchSigint(false);

  // What is done is written, even after a failure or an interrupt (the
  // directory was made and checked before the run).
  int64_t okCount = 0, generated = 0;
  for (size_t i = 0; i < res.requests.size(); ++i) {
    const RequestResult &r = res.requests[i];
    okCount += r.status == RequestStatus::Ok;
    generated += (int64_t)r.generated.size();
    std::string line = "{\"request\": " + std::to_string(i) + ", \"status\": \"" +
                       requestStatusName(r.status) + "\"";
    if (!r.reason.empty())
      line += ", \"reason\": " + jsonString(r.reason);
    line += ", \"generated\": " + idsJson(r.generated);
    if (tokenizer)
      line += ", \"text\": " + jsonString(tokenizer->decode(r.generated, false));
    line += ", \"fingerprint\": \"" + r.fingerprint.hex() + "\"}";
    std::printf("%s\n", line.c_str());
    if (!a.logitsOut.empty() && r.status != RequestStatus::Rejected) {
      NpyArray arr;
      arr.dtype = "f4";
      arr.shape = {(int64_t)r.generated.size(), engine->vocab()};
      arr.data.resize(r.logits.size() * 4);
      std::memcpy(arr.data.data(), r.logits.data(), arr.data.size());
      std::string file = a.logitsOut + "/req" + std::to_string(i) + ".npy";
      std::string werr;
      if (!writeNpy(file, arr, werr))
        return failure(werr);
    }
  }
  std::fflush(stdout);
  const SchedulerStats &s = res.stats;
  std::fprintf(stderr,
               "%zu requests (%lld ok, %lld rejected), %lld steps, %lld tokens fed, "
               "%lld generated, preemptions %lld (recompute %lld, swap %lld), largest "
               "batch %lld requests / %lld tokens, %.2f s, %.1f generated tokens/s, "
               "step: %s on %s\n",
               res.requests.size(), (long long)okCount, (long long)s.rejected,
               (long long)s.steps, (long long)s.tokens, (long long)generated,
               (long long)(s.preemptRecompute + s.preemptSwap),
               (long long)s.preemptRecompute, (long long)s.preemptSwap,
               (long long)s.largestBatchSeqs, (long long)s.largestBatchTokens, secs,
               secs > 0 ? generated / secs : 0.0, model->stepForm().c_str(), L.device.c_str());
  if (res.cancelled) {
    failure("interrupted: the requests above marked cancelled did not finish");
    return kInterruptedStatus;
  }
  if (!ok)
    return failure(error);
  return 0;
}
