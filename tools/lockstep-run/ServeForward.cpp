//===- ServeForward.cpp - lockstep-run serve runs lockstep-serve ----------===//
//
// The HTTP server is its own program, lockstep-serve (ServeMain.cpp), so
// that lockstep-run links no HTTP library (Debian's cpp-httplib is a shared
// library, with OpenSSL, zlib and brotli behind it) and starts on any Linux
// with a C++ runtime (test/Tools/run-portable.test). `lockstep-run serve
// ARGS` replaces itself, with execv, by the lockstep-serve next to its own
// executable, with the same ARGS: the process id stays, so a signal sent to
// it (SIGINT, SIGTERM: drain) reaches the server.
//
//===----------------------------------------------------------------------===//
#include "Commands.h"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

int lockstep::run::forwardServe(int argc, char **argv) {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self);
  if (n <= 0 || n == static_cast<ssize_t>(sizeof self)) {
    std::fprintf(stderr,
                 "lockstep-run serve: cannot find the HTTP server, lockstep-serve: "
                 "/proc/self/exe does not name this program (%s)\n",
                 n < 0 ? std::strerror(errno) : "too long");
    return 1;
  }
  std::string exe(self, static_cast<size_t>(n));
  std::string server = exe.substr(0, exe.rfind('/') + 1) + "lockstep-serve";
  std::vector<char *> args{server.data()};
  args.insert(args.end(), argv + 2, argv + argc);
  args.push_back(nullptr);
  std::fflush(nullptr);
  execv(server.c_str(), args.data());
  std::fprintf(stderr,
               "lockstep-run serve: cannot run the HTTP server '%s': %s (lockstep-serve is "
               "built and installed next to lockstep-run)\n",
               server.c_str(), std::strerror(errno));
  return 1;
}
