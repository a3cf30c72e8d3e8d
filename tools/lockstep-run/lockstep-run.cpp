//===- lockstep-run.cpp - The Lockstep serving command line ---------------===//
//
// Subcommands over a compiled artifact (.lsa). This binary links only the
// runtime library: no MLIR, no LLVM.
//
// Exit status: 0 on success, 1 when the model, an input or the run fails,
// 2 for a bad command line, 130 when SIGINT stopped generate or fuzz.
//
//===----------------------------------------------------------------------===//
#include "Commands.h"
#include "ServeUsage.h"

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Artifact/ServingKeys.h"
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"
#include "lockstep/Runtime/Backend/Cuda/CudaBackend.h"
#include "lockstep/Runtime/Exec.h"
#include "lockstep/Runtime/HostMemory.h"
#include "lockstep/Runtime/Npy.h"

#include <algorithm>
#include <cctype>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <system_error>
#include <unistd.h>

using namespace lockstep::rt;
namespace K = lockstep::serving_keys;
using lockstep::run::flagValue;

namespace {

struct Subcommand {
  const char *name;
  const char *usage;
  const char *help;
  const char *status;  // null when implemented
  const char *details; // shown by `SUBCOMMAND --help`; may be null
};

const Subcommand kSubcommands[] = {
    {"exec",
     "exec MODEL.lsa --input NAME=FILE.npy ... --output-dir DIR [--threads N] "
     "[--device cpu|cuda]",
     "Run the graph as it is (no serving transformation) on .npy inputs and "
     "write one .npy per output.",
     nullptr,
     "Options:\n"
     "  --input NAME=FILE.npy  the value of graph input NAME (split at the "
     "first '='); one per input\n"
     "  --output-dir DIR       where to write NAME.npy per output (created "
     "if missing); characters of\n"
     "                         NAME other than letters, digits, '.', '_' and "
     "'-' become '_'\n"
     "  --threads N            threads that run the parallel dims of the "
     "model's loops (default 1);\n"
     "                         the outputs do not depend on it, bit for bit\n"
     "  --repeat N             run N times and print the min and median run "
     "time on stderr\n"
     "  --device cpu|cuda      where to run (default cpu): cuda needs an "
     "artifact compiled with\n"
     "                         --target=cuda (or cpu,cuda), a CUDA driver and a GPU (its "
     "absence is a one-line error)\n\n"
     "Each input must have the model's dtype and rank; symbolic dims (batch, "
     "past, ...) are read off\n"
     "the inputs and must agree. bf16 tensors are .npy uint16 holding the raw "
     "bits. Prints one line\n"
     "per output: NAME: DTYPE [SHAPE] -> FILE.\n"
     "Exit status: 0 on success, 1 when the model, an input or the run fails, "
     "2 for a bad command line."},
    {"generate",
     "generate MODEL.lsa --prompts FILE.jsonl [--max-new-tokens N] "
     "[--logits-out DIR] [--threads N] [--device cpu|cuda]",
     "Serve prompts through the batching runtime and print generated ids and "
     "per-request logits fingerprints.",
     nullptr,
     "Prompts: one per line, a JSON array of token ids or an object\n"
     "  {\"ids\": [...], \"max_new_tokens\": N, \"temperature\": T, \"top_k\": K,\n"
     "   \"top_p\": P, \"seed\": S} (every key but ids optional). Instead of ids, an\n"
     "  object may give \"text\": a string that the artifact's tokenizer encodes (with\n"
     "  special tokens); each output line then also has the generated ids' \"text\".\n\n"
     "Options:\n"
     "  --max-new-tokens N  tokens to generate per prompt without its own (default 16)\n"
     "  --logits-out DIR    write DIR/req<i>.npy: float32 [N, vocab], the logits that\n"
     "                      produced request i's N tokens (i in input order)\n"
     "  --threads N         threads of the compiled code (default 1; no effect on bits)\n"
     "  --device cpu|cuda   where the model runs (default cpu); cuda needs an artifact\n"
     "                      compiled with --target=cuda in the ragged serving form, a\n"
     "                      CUDA driver and a GPU: weights and KV cache live on the GPU\n"
     "  --temperature T, --top-k K, --top-p P, --seed S\n"
     "                      sampling for prompts without their own (default greedy;\n"
     "                      request i's seed defaults to S + i)\n"
     "  --eos ID            a generated ID ends its request\n"
     "  --kv-blocks N       device KV blocks (default: every context at once); fewer\n"
     "                      blocks make the scheduler preempt and readmit requests\n"
     "  --block-size N      tokens per KV block (default 16)\n"
     "  --preempt MODE      recompute (default: drop the victim's cache, prefill it\n"
     "                      again later) or swap (copy it to host blocks and back)\n"
     "  --swap-blocks N     host blocks for preemption by swap (default = kv-blocks)\n"
     "  --token-budget N    tokens fed per step (default 256)\n"
     "  --max-seqs N        requests per step (default 64)\n"
     "  --max-context N     longest prompt + generation accepted (default 2048; a\n"
     "                      model whose position tables are shorter caps it)\n\n"
     "Prints one JSON line per request, in input order: {\"request\", \"status\"\n"
     "(ok, rejected with a \"reason\", cancelled, failed), \"generated\", \"fingerprint\"};\n"
     "the fingerprint is a hash chain over the request's logits rows. A summary goes to\n"
     "stderr. SIGINT stops after the current step, writes what is done and exits 130.\n"
     "Each request runs through the compiled graph with its own KV cache: its logits do\n"
     "not depend on the other requests, the step it shares, or preemption. The summary\n"
     "ends with how a step runs: ragged (one call for every request of the step, for a\n"
     "model compiled to the serving form) or per request (one call each)."},
    {"fuzz", "fuzz MODEL.lsa [--prompts FILE.jsonl] --schedules K --seed S "
             "[--report FILE.json] [--device cpu|cuda]",
     "Run each prompt alone (the baseline), then K random schedules, and "
     "compare every logit bit for bit with the baseline.",
     nullptr,
     "The baseline runs every request alone: its whole prompt in one prefill,\n"
     "then one decode token per step. Each schedule runs them all together under\n"
     "a policy drawn from the schedule's seed: arrival order and delays, which\n"
     "requests share a step, token budgets and sequence caps, chunked-prefill\n"
     "split points, preemption by recompute or swap, random eviction and\n"
     "readmission, mixed prefill and decode, and a KV budget that is often tight.\n"
     "Every logit of every request at every generated position is compared bit for\n"
     "bit with the baseline.\n\n"
     "Options:\n"
     "  --schedules K       schedules to run after the baseline\n"
     "  --seed S            the campaign seed (each schedule's seed is printed)\n"
     "  --prompts FILE      JSON-lines prompts (see generate); without it, draws\n"
     "                      --requests N prompts (default 8) of 1 to 72 tokens from S,\n"
     "                      every other one sampled (temperature 0.8, top-k 20, top-p 0.95)\n"
     "  --max-new-tokens N  per request without its own (default 8)\n"
     "  --report FILE.json  schedules, requests, tokens_compared, logits_compared,\n"
     "                      mismatches, first_mismatch, seed, elapsed_s, and totals\n"
     "  --trace FILE        where the first mismatching schedule is recorded\n"
     "                      (default lockstep-fuzz-S.trace)\n"
     "  --threads N         threads of the compiled code in every schedule (default:\n"
     "                      drawn per schedule from 1 to the cores, 2 at least; the\n"
     "                      baseline runs on 1): the bits must not depend on it\n"
     "  --device cpu|cuda   where the schedules run (default cpu; see generate)\n"
     "  --baseline-device D where the baseline runs (default: --device); another\n"
     "                      device needs its code: an artifact compiled with\n"
     "                      --target=cpu,cuda, or --baseline-model\n"
     "  --baseline-model M  the same model compiled for the baseline's device (its\n"
     "                      inputs, outputs, serving form and weights must match)\n\n"
     "Prints a progress line on a terminal, each first mismatch (request, position,\n"
     "step, schedule seed, differing logits, largest difference in ulps), and a\n"
     "summary table. Requests refused when run alone are counted as skipped.\n"
     "Exit status 0 only when logits were compared and every one is identical; 1\n"
     "on a mismatch, a failure, or a campaign that compared no token; 2 for a bad\n"
     "command line; 130 when SIGINT stopped it (the summary and report cover the\n"
     "schedules run)."},
    {"replay", "replay MODEL.lsa TRACE [--threads N] [--device cpu|cuda]",
     "Re-run a schedule recorded by fuzz exactly.",
     nullptr,
     "Runs the trace's requests alone (the baseline), then executes its recorded\n"
     "plan step by step (admissions, prefill chunks, preemptions, evictions and\n"
     "swaps as recorded, not re-derived from the seeds, so that a trace outlives\n"
     "changes to the scheduler's policy), and compares every logit bit for bit.\n"
     "Exit status 1 when the mismatch is reproduced (or the steps diverge), 0 when\n"
     "every logit is identical.\n\n"
     "Options:\n"
     "  --threads N         threads of the compiled code (default: the trace's)\n"
     "  --device cpu|cuda   where it runs (default cpu; see generate)"},
    {"bench", "bench MODEL.lsa [--requests N] [--prompt-len L] [--max-new-tokens M] "
              "[--device cpu|cuda] [--token-budget N] [--only alone|batched] [--warmup N]",
     "Measure serving throughput, batched against one request at a time.",
     nullptr,
     "Draws N greedy requests of L prompt tokens (from --seed S) and serves them\n"
     "twice in one run: each alone, one after the other, then all together\n"
     "through the continuous-batching scheduler (token budget 256 unless\n"
     "--token-budget says otherwise, 64 requests per step). Prints steps, wall\n"
     "time, generated and fed tokens per second, milliseconds per step, and the\n"
     "ratio, then compares every logit of the two\n"
     "runs bit for bit. The `step` line says how a step runs: ragged (one call per\n"
     "step) or per request.\n\n"
     "Last, every step of each timed run, timed on its own, goes to one of two\n"
     "phases, a line each:\n"
     "  MODE prefill    S steps  X s  F fed tokens  R fed tokens/s  M ms/step\n"
     "  MODE decode     S steps  X s  G generated tokens  R generated tokens/s  M ms/step\n"
     "MODE is alone or batched. A prefill step fed at least one prompt token (F\n"
     "counts every token it fed); a decode step fed only generated tokens (G counts\n"
     "the tokens sampled in them). The steps add up to the table's; X (six\n"
     "decimals) is the sum of the steps' times, the table's wall time less the\n"
     "engine's creation.\n\n"
     "Options:\n"
     "  --requests N        requests (default 16)\n"
     "  --prompt-len L      prompt tokens each (default 48)\n"
     "  --max-new-tokens M  generated tokens each (default 16)\n"
     "  --threads N         threads of the compiled code (default 1)\n"
     "  --seed S            seed of the drawn prompts (default 1)\n"
     "  --device cpu|cuda   where the model runs (default cpu; see generate)\n"
     "  --token-budget N    tokens a batched step may feed, and the longest prefill\n"
     "                      chunk (default 256)\n"
     "  --only alone|batched  time one of the two runs; nothing is compared then\n"
     "  --warmup N          serve the requests N times, untimed, before each timed\n"
     "                      run, in its mode (default 0); a `warm-up` line says so,\n"
     "                      and the cuda launches line counts them too\n\n"
     "Exit status 0 when the logits are identical, 1 when they differ or the run\n"
     "fails, 2 for a bad command line, 130 when SIGINT stopped it."},
    {"serve", lockstep::run::kServeUsage, lockstep::run::kServeHelp, nullptr,
     lockstep::run::kServeDetails},
    {"info", "info MODEL.lsa [--launch-plan]",
     "Verify an artifact and print what it holds: targets, inputs, outputs, "
     "weights, properties, kernels.",
     nullptr,
     "Loads the artifact as every command does (format, checksums, external\n"
     "weights), without running it or needing a GPU, and prints its producer, each\n"
     "target with the size of its code (for cuda: host code, kernel modules and\n"
     "launch sites), the inputs and outputs with their symbolic dims, the weights,\n"
     "the properties (serving roles, reduction policy, chip), and a summary of the\n"
     "launch plan.\n\n"
     "Options:\n"
     "  --launch-plan  also print every launch site: kernel, grid and block sizes\n"
     "                 (? where computed from the step's dims) and its ONNX node\n\n"
     "Exit status 0 when the artifact loads, 1 when it is refused, 2 for a bad\n"
     "command line."},
    {"tokenize",
     "tokenize --tokenizer tokenizer.json [--json-lines] [--no-special] [--decode] [--info]",
     "Encode stdin's lines with a Hugging Face tokenizer.json (or decode lists of "
     "ids) and print one JSON line each.",
     nullptr,
     "Each stdin line is one text (without its newline); with --json-lines, a JSON\n"
     "string or {\"text\": ...}, so that a text may hold newlines. Prints\n"
     "{\"ids\": [...], \"decoded\": TEXT, \"decoded_skip\": TEXT} per line: the ids as\n"
     "tokenizers' encode(text, add_special_tokens=True) gives them (--no-special: False),\n"
     "and their decoding with skip_special_tokens False and True. Text that is not\n"
     "valid UTF-8 is first repaired (each invalid sequence becomes U+FFFD).\n\n"
     "Options:\n"
     "  --decode      each line is a JSON array of ids; prints {\"text\", \"text_skip\"}\n"
     "  --info        print {\"vocab_size\", \"bos\", \"eos\"} and exit\n\n"
     "Supported: BPE models (byte-level as GPT-2, Llama 3, Qwen2; SentencePiece-style\n"
     "with byte fallback as Llama 2, Mistral). Anything else is refused with an error\n"
     "naming the part. Exit status 0 on success, 1 when the tokenizer is refused or\n"
     "an input line is malformed, 2 for a bad command line."},
};

void printHelp(FILE *f) {
  std::fprintf(f,
               "lockstep-run: serve a model compiled by lockstep-opt, with "
               "logits that do not depend on batching.\n\n"
               "Usage: lockstep-run SUBCOMMAND [options]\n\n"
               "Subcommands:\n");
  for (const Subcommand &s : kSubcommands)
    std::fprintf(f, "  %s\n      %s%s%s\n", s.usage, s.help,
                 s.status ? "\n      Status: " : "", s.status ? s.status : "");
  std::fprintf(f, "\n  lockstep-run SUBCOMMAND --help   shows one subcommand.\n");
}

//===--------------------------------------------------------------------===//
// exec
//===--------------------------------------------------------------------===//

int usageError(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run exec: %s (see lockstep-run exec --help)\n",
               msg.c_str());
  return 2;
}

int runError(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run exec: %s\n", msg.c_str());
  return 1;
}

struct ExecArgs {
  std::string model;
  std::map<std::string, std::string> inputs; // name -> .npy path
  std::string outputDir;
  unsigned threads = 1;
  unsigned repeat = 1; // runs, for timing; the last one's outputs are written
  std::string device = "cpu";
};

// Returns 0 when the command line is well formed, else the exit status.
int parseExecArgs(int argc, char **argv, ExecArgs &out) {
  bool haveThreads = false;
  for (int i = 2; i < argc; ++i) {
    std::string value;
    bool missing = false;
    std::string arg = argv[i];
    if (flagValue(argc, argv, i, "--input", value, missing)) {
      if (missing)
        return usageError("--input needs NAME=FILE.npy");
      size_t eq = value.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == value.size())
        return usageError("--input '" + value + "' is not NAME=FILE.npy");
      std::string name = value.substr(0, eq);
      if (!out.inputs.emplace(name, value.substr(eq + 1)).second)
        return usageError("input '" + name + "' is given twice");
    } else if (flagValue(argc, argv, i, "--output-dir", value, missing)) {
      if (missing || value.empty())
        return usageError("--output-dir needs a directory");
      if (!out.outputDir.empty())
        return usageError("--output-dir is given twice");
      out.outputDir = value;
    } else if (flagValue(argc, argv, i, "--threads", value, missing)) {
      char *end = nullptr;
      long n = missing ? 0 : std::strtol(value.c_str(), &end, 10);
      if (missing || value.empty() || *end || n < 1 || n > 4096)
        return usageError("--threads needs a number from 1 to 4096");
      if (haveThreads)
        return usageError("--threads is given twice");
      haveThreads = true;
      out.threads = unsigned(n);
    } else if (flagValue(argc, argv, i, "--device", value, missing)) {
      if (missing || (value != "cpu" && value != "cuda"))
        return usageError("--device takes cpu or cuda");
      out.device = value;
    } else if (flagValue(argc, argv, i, "--repeat", value, missing)) {
      char *end = nullptr;
      long n = missing ? 0 : std::strtol(value.c_str(), &end, 10);
      if (missing || value.empty() || *end || n < 1 || n > 1000000)
        return usageError("--repeat needs a number from 1 to 1000000");
      out.repeat = unsigned(n);
    } else if (arg.size() > 1 && arg[0] == '-') {
      return usageError("unknown option '" + arg + "'");
    } else if (!out.model.empty()) {
      return usageError("unexpected argument '" + arg +
                        "' (one model only)");
    } else {
      out.model = arg;
    }
  }
  if (out.model.empty())
    return usageError("no model given");
  if (out.outputDir.empty())
    return usageError("--output-dir is required");
  return 0;
}

// A file name for an output: names come from the ONNX graph and may hold
// '/' or anything else. Unique among the outputs.
std::string outputFileName(const std::string &name, std::set<std::string> &used) {
  std::string base;
  for (char c : name)
    base += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
             c == '_' || c == '-')
                ? c
                : '_';
  if (base.empty() || base == "." || base == "..")
    base = "_" + base;
  std::string file = base;
  for (int k = 1; !used.insert(file).second; ++k)
    file = base + "_" + std::to_string(k);
  return file + ".npy";
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

int runExec(int argc, char **argv) {
  ExecArgs args;
  if (int status = parseExecArgs(argc, argv, args))
    return status;
  std::string error;
  LoadedArtifact artifact;
  CpuModule module;
  bool cuda = args.device == "cuda";
  if (!loadArtifact(args.model, artifact, error) ||
      !(cuda ? loadCudaModule(artifact, module, error) : loadCpuModule(artifact, module, error)))
    return runError(error);
  std::unique_ptr<CudaMemory> deviceMemory;
  if (cuda)
    deviceMemory = std::make_unique<CudaMemory>();
  std::map<std::string, NpyArray> inputs;
  for (const auto &[name, path] : args.inputs)
    if (!readNpy(path, inputs[name], error))
      return runError("input " + quoted(name) + ": " + error);
  std::error_code ec;
  std::filesystem::create_directories(args.outputDir, ec);
  if (ec || !std::filesystem::is_directory(args.outputDir))
    return runError("cannot create output directory '" + args.outputDir +
                    "'" + (ec ? ": " + ec.message() : ""));
  NamedArrays outputs;
  ThreadPool pool(args.threads);
  module.setThreadPool(&pool);
  std::vector<double> times;
  bool ran = true;
  for (unsigned r = 0; ran && r < args.repeat; ++r) {
    outputs.clear();
    auto t0 = std::chrono::steady_clock::now();
    ran = runGraph(artifact, module, inputs, outputs, error, deviceMemory.get());
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  module.setThreadPool(nullptr);
  if (!ran) {
    // A decoder compiled as the ragged step has the step's inputs, not the
    // exported graph's: say how to get the graph.
    for (const auto &[k, v] : artifact.meta().properties)
      if (k == K::kStep && v == K::kRagged && error.rfind("missing input", 0) == 0)
        error += "; this artifact is the ragged serving step (lockstep-opt --step=graph "
                 "compiles the exported graph, with its own inputs)";
    return runError(error);
  }
  if (args.repeat > 1) {
    std::sort(times.begin(), times.end());
    std::fprintf(stderr, "exec: %u runs on %u thread(s): min %.6f s, median %.6f s\n",
                 args.repeat, args.threads, times.front(), times[times.size() / 2]);
  }
  std::set<std::string> used;
  const std::vector<TensorSpec> &specs = artifact.meta().outputs;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto &[name, array] = outputs[i];
    std::string file = args.outputDir + "/" + outputFileName(name, used);
    if (!writeNpy(file, array, error))
      return runError(error);
    std::printf("%s: %s %s -> %s\n", escapeText(name).c_str(),
                specs[i].dtype.c_str(), shapeText(array.shape).c_str(),
                file.c_str());
  }
  return 0;
}

} // namespace

namespace {
std::atomic<bool> sigintSeen{false};
extern "C" void onSigint(int) { sigintSeen.store(true); }
} // namespace

std::atomic<bool> &lockstep::run::interrupted() { return sigintSeen; }

bool lockstep::run::canWriteFile(const std::string &path, std::string &why) {
  std::filesystem::path p(path);
  std::filesystem::path dir = p.has_parent_path() ? p.parent_path() : ".";
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) {
    why = "'" + dir.string() + "' is not a directory";
    return false;
  }
  if (access(dir.c_str(), W_OK) != 0) {
    why = "'" + dir.string() + "' is not writable";
    return false;
  }
  if (std::filesystem::is_directory(p, ec)) {
    why = "'" + path + "' is a directory";
    return false;
  }
  return true;
}

void lockstep::run::catchSigint(bool on) {
  std::signal(SIGINT, on ? onSigint : SIG_DFL);
}

int main(int argc, char **argv) {
  // A step's freed temporaries stay with the process for the next step
  // (HostMemory.h), instead of fresh pages from the kernel at every step.
  std::string memoryWhy;
  if (!lockstep::rt::keepFreedHostMemory(memoryWhy))
    std::fprintf(stderr, "warning: %s: every step's temporaries are fresh pages\n",
                 memoryWhy.c_str());
  if (argc < 2) {
    printHelp(stderr);
    return 2;
  }
  std::string cmd = argv[1];
  if (cmd == "--help" || cmd == "-h" || cmd == "help") {
    printHelp(stdout);
    return 0;
  }
  for (const Subcommand &s : kSubcommands) {
    if (cmd != s.name)
      continue;
    for (int i = 2; i < argc; ++i)
      if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
        std::printf("Usage: lockstep-run %s\n\n%s\n", s.usage, s.help);
        if (s.details)
          std::printf("\n%s\n", s.details);
        if (s.status)
          std::printf("Status: %s\n", s.status);
        return 0;
      }
    if (cmd == "exec")
      return runExec(argc, argv);
    if (cmd == "generate")
      return lockstep::run::runGenerate(argc, argv);
    if (cmd == "fuzz")
      return lockstep::run::runFuzz(argc, argv);
    if (cmd == "replay")
      return lockstep::run::runReplay(argc, argv);
    if (cmd == "bench")
      return lockstep::run::runBench(argc, argv);
    if (cmd == "info")
      return lockstep::run::runInfo(argc, argv);
    if (cmd == "serve")
      return lockstep::run::forwardServe(argc, argv);
    if (cmd == "tokenize")
      return lockstep::run::runTokenize(argc, argv);
    std::fprintf(stderr, "lockstep-run %s: %s\n", s.name, s.status);
    return 2;
  }
  std::fprintf(stderr,
               "lockstep-run: unknown subcommand '%s' (see lockstep-run --help)\n",
               cmd.c_str());
  return 2;
}
