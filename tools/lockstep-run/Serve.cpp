//===- Serve.cpp - lockstep-run serve -------------------------------------===//
//
// Serves a compiled artifact over HTTP with an OpenAI-compatible API
// (ServeHttp.h): loads the model as generate does (Loaded), starts one
// OnlineEngine that every request joins, binds the listener and prints
//
//   lockstep-run serve: listening on http://HOST:PORT (...)
//
// on stdout (with --port 0 the port is a free one: read it from this line).
// SIGINT or SIGTERM: stop accepting (new requests get 503), let the requests
// in flight finish and their responses be written, then exit 0 (1 when
// --drain-timeout passed first and requests were cut).
//
//===----------------------------------------------------------------------===//
#include "Commands.h"
#include "Loaded.h"
#include "ServeHttp.h"

#include "lockstep/Runtime/Serving/OnlineEngine.h"
#include "lockstep/Runtime/Serving/ServingModel.h"

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <thread>

using namespace lockstep::rt;
using namespace lockstep::run;

namespace {

int usage(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run serve: %s (see lockstep-run serve --help)\n", msg.c_str());
  return 2;
}

int failure(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run serve: %s\n", msg.c_str());
  return 1;
}

/// --eos not given: the tokenizer's end-of-sequence id, if any.
constexpr int64_t kEosUnset = -2;

struct Args {
  std::string model, host = "127.0.0.1", device = "cpu", modelName, preempt = "recompute",
              tokenizer;
  int64_t port = 8000, threads = 1, httpThreads = 64, maxQueue = 256,
          maxBodyBytes = int64_t(8) << 20, blockSize = 16, kvBlocks = -1, swapBlocks = -1,
          tokenBudget = 256, maxSeqs = 64, maxContext = 2048, eos = kEosUnset, drainTimeout = 60;
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
        return usage(std::string(flag) + " takes an integer in [" + std::to_string(lo) + ", " +
                     std::to_string(hi) + "], not '" + v + "'");
      return 0;
    };
    const int64_t big = int64_t(1) << 40;
    int r;
    if ((r = intFlag("--port", 0, 65535, a.port)) >= 0 ||
        (r = intFlag("--threads", 1, 1024, a.threads)) >= 0 ||
        (r = intFlag("--http-threads", 1, 4096, a.httpThreads)) >= 0 ||
        (r = intFlag("--max-queue", 1, big, a.maxQueue)) >= 0 ||
        (r = intFlag("--max-body-bytes", 1024, big, a.maxBodyBytes)) >= 0 ||
        (r = intFlag("--block-size", 1, 1 << 16, a.blockSize)) >= 0 ||
        (r = intFlag("--kv-blocks", 1, big, a.kvBlocks)) >= 0 ||
        (r = intFlag("--swap-blocks", 0, big, a.swapBlocks)) >= 0 ||
        (r = intFlag("--token-budget", 1, big, a.tokenBudget)) >= 0 ||
        (r = intFlag("--max-seqs", 1, big, a.maxSeqs)) >= 0 ||
        (r = intFlag("--max-context", 2, big, a.maxContext)) >= 0 ||
        (r = intFlag("--eos", -1, (int64_t(1) << 31) - 1, a.eos)) >= 0 ||
        (r = intFlag("--drain-timeout", 0, 86400, a.drainTimeout)) >= 0) {
      if (r)
        return r;
      continue;
    }
    const int at = i;
    if (flagValue(argc, argv, i, "--host", v, missing) ||
        flagValue(argc, argv, i, "--device", v, missing) ||
        flagValue(argc, argv, i, "--model-name", v, missing) ||
        flagValue(argc, argv, i, "--preempt", v, missing) ||
        flagValue(argc, argv, i, "--tokenizer", v, missing)) {
      std::string flag = argv[at];
      flag = flag.substr(0, flag.find('='));
      if (missing || v.empty())
        return usage(flag + " needs a value");
      if (flag == "--host")
        a.host = v;
      else if (flag == "--model-name")
        a.modelName = v;
      else if (flag == "--tokenizer")
        a.tokenizer = v;
      else if (flag == "--device") {
        if (!isDeviceName(v))
          return usage("--device takes cpu or cuda, not '" + v + "'");
        a.device = v;
      } else {
        if (v != "recompute" && v != "swap")
          return usage("--preempt takes recompute or swap, not '" + v + "'");
        a.preempt = v;
      }
      continue;
    }
    if (std::string bad = takeModel(argv[i], a.model); !bad.empty())
      return usage(bad);
  }
  if (a.model.empty())
    return usage("no model (MODEL.lsa)");
  return 0;
}

/// The artifact's checksum, as its header holds it (bytes 24..32, little
/// endian): 16 hex digits, or "unknown".
std::string artifactChecksum(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char h[32];
  if (!f.read(reinterpret_cast<char *>(h), sizeof h))
    return "unknown";
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | h[24 + i];
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)v);
  return buf;
}

std::atomic<int> stopSignal{0};
extern "C" void onStopSignal(int sig) { stopSignal.store(sig); }

} // namespace

int lockstep::run::runServe(int argc, char **argv) {
  Args a;
  if (int r = parseArgs(argc, argv, a))
    return r;
  std::string error;
  Loaded L;
  if (!L.load(a.model, a.threads, a.device, error))
    return failure(error);
  ServingModel *model = L.model.get();

  // The numerics profile: every artifact so far is the portable profile;
  // a reduction policy other than the canonical one (the negative control)
  // is named, since it gives up batch invariance.
  std::string policy = "canonical";
  for (const auto &[k, v] : L.artifact.meta().properties)
    if (k == "reduction_policy")
      policy = v;
  ServeInfo info;
  info.modelName = a.modelName.empty() ? std::filesystem::path(a.model).stem().string()
                                       : a.modelName;
  info.systemFingerprint = "lsa-" + artifactChecksum(a.model) + "-portable" +
                           (policy == "canonical" ? "" : "-" + policy);
  // Text: --tokenizer, else the artifact's own tokenizer, else token ids only.
  std::unique_ptr<TextCodec> codec;
  std::string textSource = "token ids only";
  int32_t tokenizerEos = -1;
  if (!a.tokenizer.empty()) {
    std::ifstream f(a.tokenizer, std::ios::binary);
    if (!f)
      return failure("--tokenizer: cannot read '" + a.tokenizer + "'");
    std::string json((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    if (!(codec = tokenizerCodec(json, model->vocab(), tokenizerEos, error)))
      return failure("--tokenizer '" + a.tokenizer + "': " + error);
    textSource = "tokenizer " + a.tokenizer;
  } else if (!L.artifact.tokenizerJson().empty()) {
    if (!(codec = tokenizerCodec(L.artifact.tokenizerJson(), model->vocab(), tokenizerEos,
                                 error)))
      return failure("the artifact's tokenizer: " + error);
    textSource = "the artifact's tokenizer";
  }
  if (codec && a.eos == kEosUnset)
    a.eos = tokenizerEos;
  if (a.eos >= 0)
    info.stopIds.push_back(int32_t(a.eos));

  int64_t context = a.maxContext;
  if (std::optional<int64_t> limit = model->maxContext(); limit && *limit < context)
    context = std::max<int64_t>(*limit, 2);
  OnlineEngineConfig oc;
  int64_t blocks = a.kvBlocks > 0 ? a.kvBlocks
                                  : 16 * ((context + a.blockSize - 1) / a.blockSize);
  int64_t swap = a.swapBlocks >= 0 ? a.swapBlocks : (a.preempt == "swap" ? blocks : 0);
  oc.engine.kv = model->cacheConfig(a.blockSize, blocks, swap);
  oc.engine.scheduler.tokenBudget = a.tokenBudget;
  oc.engine.scheduler.maxSeqs = a.maxSeqs;
  oc.engine.scheduler.maxPrefillChunk = a.tokenBudget;
  oc.engine.scheduler.maxContext = a.maxContext;
  oc.engine.keepLogits = false;
  oc.engine.policy.preempt = a.preempt == "swap" ? PreemptMode::Swap : PreemptMode::Recompute;
  oc.queueCapacity = a.maxQueue;
  std::unique_ptr<OnlineEngine> engine = OnlineEngine::create(*model, oc, error);
  if (!engine)
    return failure(error);

  CompletionServer server(*engine, info, codec.get());
  HttpOptions ho;
  ho.host = a.host;
  ho.port = int(a.port);
  ho.threads = int(a.httpThreads);
  ho.maxBodyBytes = size_t(a.maxBodyBytes);
  int port = 0;
  if (!server.bind(ho, port, error))
    return failure(error);

  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGINT, onStopSignal);
  std::signal(SIGTERM, onStopSignal);
  std::atomic<bool> served{false}, drained{true};
  std::thread watcher([&] {
    while (!served.load()) {
      if (int sig = stopSignal.load()) {
        std::fprintf(stderr, "lockstep-run serve: %s: draining %lld request(s) in flight\n",
                     sig == SIGINT ? "SIGINT" : "SIGTERM",
                     (long long)engine->stats().inFlight);
        drained = server.drainAndStop(std::chrono::seconds(a.drainTimeout));
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::printf("lockstep-run serve: listening on http://%s:%d (model %s, %s, context %lld, "
              "KV %lld blocks of %lld tokens, %s, step: %s on %s)\n",
              a.host.c_str(), port, info.modelName.c_str(), info.systemFingerprint.c_str(),
              (long long)engine->config().scheduler.maxContext, (long long)blocks,
              (long long)a.blockSize,
              textSource.c_str(),
              model->stepForm().c_str(), L.device.c_str());
  std::fflush(stdout);
  bool ok = server.run();
  served = true;
  watcher.join();
  engine->shutdown();
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  OnlineStats s = engine->stats();
  std::fprintf(stderr,
               "lockstep-run serve: stopped: %lld requests finished (%lld cancelled), %lld "
               "steps, %lld tokens generated, largest batch %lld requests\n",
               (long long)s.finished, (long long)s.cancelled, (long long)s.steps,
               (long long)s.generated, (long long)s.largestBatchSeqs);
  if (!ok && stopSignal.load() == 0)
    return failure("the listener failed");
  if (!drained)
    return failure("--drain-timeout passed before every request finished; the rest "
                   "were cancelled");
  return 0;
}
