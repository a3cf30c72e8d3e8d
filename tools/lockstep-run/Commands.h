//===- Commands.h - The subcommands of lockstep-run -------------*- C++ -*-===//
#ifndef LOCKSTEP_TOOLS_LOCKSTEP_RUN_COMMANDS_H
#define LOCKSTEP_TOOLS_LOCKSTEP_RUN_COMMANDS_H

#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>

namespace lockstep::run {

/// Each returns the exit status: 0 on success, 1 when the model, an input or
/// the run fails, 2 for a bad command line.
int runGenerate(int argc, char **argv);
int runFuzz(int argc, char **argv);
int runReplay(int argc, char **argv);
int runBench(int argc, char **argv);
int runInfo(int argc, char **argv);
/// lockstep-serve's (ServeMain.cpp, Serve.cpp): `serve` in argv[1].
int runServe(int argc, char **argv);
/// lockstep-run's serve: runs lockstep-serve with argv[2...]
/// (ServeForward.cpp); returns only when it cannot, with status 1.
int forwardServe(int argc, char **argv);
int runTokenize(int argc, char **argv);

/// Whether a file can be written at `path` (its directory exists and is
/// writable, and it is not a directory); checked before long runs so that
/// their results are not lost at the end. `why` says why not.
bool canWriteFile(const std::string &path, std::string &why);

/// The exit status of a run that SIGINT stopped (128 + SIGINT, as shells
/// report it): what it had done is printed and written first.
constexpr int kInterruptedStatus = 130;

/// Set by SIGINT while catchSigint(true) is in effect: long runs check it,
/// stop cleanly and write what they have.
std::atomic<bool> &interrupted();
void catchSigint(bool on);

/// Reads `--flag VALUE` or `--flag=VALUE` at argv[i]; false when argv[i] is
/// not `flag`. Sets `missing` when the value is absent.
inline bool flagValue(int argc, char **argv, int &i, const char *flag,
                      std::string &value, bool &missing) {
  size_t n = std::strlen(flag);
  const char *arg = argv[i];
  if (std::strncmp(arg, flag, n) != 0)
    return false;
  if (arg[n] == '=') {
    value = arg + n + 1;
    return true;
  }
  if (arg[n] != '\0')
    return false;
  if (i + 1 >= argc) {
    missing = true;
    return true;
  }
  value = argv[++i];
  return true;
}

/// An argument that is not a known flag: the model, given once. Returns
/// what is wrong with it for usage(), or "" when it was taken.
inline std::string takeModel(const char *arg, std::string &model) {
  std::string a = arg;
  if (!a.empty() && a[0] == '-')
    return "unknown option '" + a + "'";
  if (!model.empty())
    return "more than one model: '" + model + "' and '" + a + "'";
  model = a;
  return "";
}

/// Parses a decimal integer in [lo, hi]; false when it is not one.
inline bool parseInt(const std::string &s, int64_t lo, int64_t hi, int64_t &out) {
  if (s.empty() || s.size() > 19)
    return false;
  size_t i = s[0] == '-' ? 1 : 0;
  if (i == s.size() || s.find_first_not_of("0123456789", i) != std::string::npos)
    return false;
  long long v = std::stoll(s);
  if (v < lo || v > hi)
    return false;
  out = v;
  return true;
}

} // namespace lockstep::run

#endif
