//===- ServeMain.cpp - lockstep-serve, the HTTP server's program ----------===//
//
// `lockstep-serve MODEL.lsa [options]` is `lockstep-run serve MODEL.lsa
// [options]` (ServeUsage.h; Serve.cpp): lockstep-run runs this program
// (ServeForward.cpp), so that only it links cpp-httplib. Its messages say
// "lockstep-run serve", the command that users type.
//
//===----------------------------------------------------------------------===//
#include "Commands.h"
#include "ServeUsage.h"

#include "lockstep/Runtime/HostMemory.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

int main(int argc, char **argv) {
  // A step's freed temporaries stay with the process for the next step
  // (HostMemory.h), instead of fresh pages from the kernel at every step.
  std::string memoryWhy;
  if (!lockstep::rt::keepFreedHostMemory(memoryWhy))
    std::fprintf(stderr, "warning: %s: every step's temporaries are fresh pages\n",
                 memoryWhy.c_str());
  using namespace lockstep::run;
  for (int i = 1; i < argc; ++i)
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::string usage = kServeUsage;
      std::printf("Usage: lockstep-run %s\n   or: lockstep-serve %s\n\n%s\n\n%s\n", usage.c_str(),
                  usage.substr(usage.find(' ') + 1).c_str(), kServeHelp, kServeDetails);
      return 0;
    }
  // runServe reads its options from argv[2] on, as lockstep-run's
  // subcommands do.
  std::vector<char *> args{argv[0], const_cast<char *>("serve")};
  args.insert(args.end(), argv + 1, argv + argc);
  args.push_back(nullptr);
  return runServe(argc + 1, args.data());
}
