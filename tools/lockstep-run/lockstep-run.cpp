//===- lockstep-run.cpp - The Lockstep serving command line ---------------===//
//
// Subcommands over a compiled artifact (.lsa). This binary links only the
// runtime library: no MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//
#include <cstdio>
#include <cstring>
#include <string>

namespace {

struct Subcommand {
  const char *name;
  const char *usage;
  const char *help;
  const char *status; // null when implemented
};

const Subcommand kSubcommands[] = {
    {"exec", "exec MODEL.lsa --input NAME=FILE.npy ... --output-dir DIR",
     "Run the graph as it is (no serving transformation) on .npy inputs and "
     "write one .npy per output.",
     "not implemented yet: it needs CPU code generation and the artifact"},
    {"generate",
     "generate MODEL.lsa --prompts FILE.jsonl [--max-new-tokens N] "
     "[--logits-out DIR] [--threads N]",
     "Serve prompts through the batching runtime and print generated ids and "
     "per-request logits fingerprints.",
     "not implemented yet: it needs the serving form and the runtime"},
    {"fuzz", "fuzz MODEL.lsa [--prompts FILE.jsonl] --schedules K --seed S "
             "[--report FILE.json]",
     "Run each prompt alone (the baseline), then K random schedules, and "
     "compare every logit bit for bit with the baseline.",
     "not implemented yet: it needs the batching runtime"},
    {"replay", "replay MODEL.lsa TRACE",
     "Re-run a schedule recorded by fuzz exactly.",
     "not implemented yet: it needs the batching runtime"},
    {"bench", "bench MODEL.lsa [options]", "Measure serving throughput.",
     "not implemented yet: it needs the batching runtime"},
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

} // namespace

int main(int argc, char **argv) {
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
        if (s.status)
          std::printf("Status: %s\n", s.status);
        return 0;
      }
    std::fprintf(stderr, "lockstep-run %s: %s\n", s.name, s.status);
    return 2;
  }
  std::fprintf(stderr,
               "lockstep-run: unknown subcommand '%s' (see lockstep-run --help)\n",
               cmd.c_str());
  return 2;
}
