//===- CpuBackend.cpp - Loading host code from memory ---------------------===//
#include "lockstep/Runtime/Backend/Cpu/CpuBackend.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <sys/mman.h>
#include <unistd.h>
#include <utility>

using namespace lockstep::rt;

CpuModule::CpuModule(CpuModule &&o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)),
      entry_(std::exchange(o.entry_, nullptr)),
      poolSlot_(std::exchange(o.poolSlot_, nullptr)),
      implSlot_(std::exchange(o.implSlot_, nullptr)),
      countSlot_(std::exchange(o.countSlot_, nullptr)),
      level_(std::exchange(o.level_, "base")) {}

CpuModule &CpuModule::operator=(CpuModule &&o) noexcept {
  if (this != &o) {
    reset();
    handle_ = std::exchange(o.handle_, nullptr);
    entry_ = std::exchange(o.entry_, nullptr);
    poolSlot_ = std::exchange(o.poolSlot_, nullptr);
    implSlot_ = std::exchange(o.implSlot_, nullptr);
    countSlot_ = std::exchange(o.countSlot_, nullptr);
    level_ = std::exchange(o.level_, "base");
  }
  return *this;
}

CpuModule::~CpuModule() { reset(); }

void CpuModule::reset() {
  if (handle_)
    dlclose(handle_);
  handle_ = nullptr;
  entry_ = nullptr;
  poolSlot_ = implSlot_ = nullptr;
  countSlot_ = nullptr;
}

namespace {

bool writeAll(int fd, const uint8_t *p, uint64_t size) {
  while (size) {
    ssize_t n = ::write(fd, p, size < (1u << 30) ? size : (1u << 30));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= uint64_t(n);
  }
  return true;
}

std::string dlError() {
  const char *e = dlerror();
  std::string s = e ? e : "unknown error";
  for (char &c : s) // keep the message on one line
    if (c == '\n')
      c = ' ';
  return s;
}

} // namespace

bool lockstep::rt::loadCpuModule(ByteView code, CpuModule &out,
                                 std::string &error) {
  if (!code.size) {
    error = "the artifact has no code";
    return false;
  }
  // Kernels since 6.3 may make a memfd non-executable unless MFD_EXEC is
  // asked for (vm.memfd_noexec); older kernels refuse the flag (EINVAL).
  constexpr unsigned kMfdExec = 0x10; // MFD_EXEC, absent from older headers
  int fd = memfd_create("lockstep-code", MFD_CLOEXEC | kMfdExec);
  if (fd < 0 && errno == EINVAL)
    fd = memfd_create("lockstep-code", MFD_CLOEXEC);
  if (fd < 0) {
    error = std::string("memfd_create failed: ") + std::strerror(errno);
    return false;
  }
  if (!writeAll(fd, code.data, code.size)) {
    error = std::string("cannot write code to memory: ") + std::strerror(errno);
    close(fd);
    return false;
  }
  // glibc identifies an already loaded object by the name given to dlopen
  // before it looks at the file. Once our memfd is closed, its number (and
  // so its /proc/self/fd/N name) is reused by the next load, which would get
  // the previous module back if that one is still loaded. So: ask for the
  // name with RTLD_NOLOAD first, and while it is taken, move the memfd to a
  // higher number. The mutex keeps two of our own loads from racing on it.
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  std::string name;
  for (int attempt = 0;; ++attempt) {
    name = "/proc/self/fd/" + std::to_string(fd);
    void *taken = dlopen(name.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (!taken)
      break;
    dlclose(taken);
    int higher = attempt < 1024 ? fcntl(fd, F_DUPFD_CLOEXEC, fd + 1) : -1;
    close(fd);
    if (higher < 0) {
      error = "cannot find a free name to load the code from memory";
      return false;
    }
    fd = higher;
  }
  dlerror(); // clear a stale error
  void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  close(fd); // the loaded object keeps its own mapping
  if (!handle) {
    error = "cannot load the artifact's code: " + dlError();
    return false;
  }
  void *sym = dlsym(handle, "lockstep_entry");
  if (!sym) {
    error = "the artifact's code has no 'lockstep_entry': " + dlError();
    dlclose(handle);
    return false;
  }
  out.reset();
  out.handle_ = handle;
  out.entry_ = reinterpret_cast<EntryFn>(sym);
  out.poolSlot_ = static_cast<void **>(dlsym(handle, "lockstep_thread_pool"));
  out.implSlot_ = static_cast<void **>(dlsym(handle, "lockstep_parallel_for_impl"));
  out.countSlot_ = static_cast<int64_t *>(dlsym(handle, "lockstep_thread_count"));
  return true;
}

void lockstep::rt::CpuModule::setThreadPool(ThreadPool *pool) const {
  if (countSlot_)
    *countSlot_ = pool ? int64_t(pool->size()) : 1;
  if (!poolSlot_ || !implSlot_)
    return;
  *poolSlot_ = pool;
  *implSlot_ = pool ? reinterpret_cast<void *>(&ThreadPool::dispatch) : nullptr;
}

std::optional<bool> lockstep::rt::cpuSupportsLevel(const std::string &level) {
  __builtin_cpu_init();
  if (level == "x86-64")
    return true;
  if (level == "x86-64-v2")
    return __builtin_cpu_supports("x86-64-v2") != 0;
  if (level == "x86-64-v3")
    return __builtin_cpu_supports("x86-64-v3") != 0;
  if (level == "x86-64-v4")
    return __builtin_cpu_supports("x86-64-v4") != 0;
  return std::nullopt;
}

bool lockstep::rt::loadCpuModule(const LoadedArtifact &artifact, CpuModule &out,
                                 std::string &error) {
  if (!hasTarget(artifact.meta(), kCpuTarget)) {
    error = quoted(artifact.path()) + " is compiled for target " +
            quoted(artifact.meta().target) + ", not " + quoted(kCpuTarget) +
            (hasTarget(artifact.meta(), kCudaTarget) ? " (run it with --device cuda)" : "");
    return false;
  }
  // The code uses the instructions of its x86-64 level (FMA, AVX2): running
  // it on a CPU without them would die of SIGILL, so refuse it here.
  for (const auto &[key, value] : artifact.meta().properties) {
    if (key != "cpu_level")
      continue;
    std::optional<bool> ok = cpuSupportsLevel(value);
    if (!ok) {
      error = quoted(artifact.path()) + " is compiled for the unknown CPU level " +
              quoted(value) + " (this runtime knows x86-64, x86-64-v2, " +
              "x86-64-v3 and x86-64-v4)";
      return false;
    }
    if (!*ok) {
      error = quoted(artifact.path()) + " is compiled for " + quoted(value) +
              ", which this CPU does not support";
      return false;
    }
  }
  std::string level;
  if (!pickCpuLevel(artifact, level, error)) {
    error = quoted(artifact.path()) + ": " + error;
    return false;
  }
  if (!loadCpuModule(level == kLevelV4 ? artifact.codeV4() : artifact.code(), out, error)) {
    error = quoted(artifact.path()) + ": " + error;
    return false;
  }
  out.level_ = level == kLevelV4 ? kLevelV4 : "base";
  return true;
}

bool lockstep::rt::pickCpuLevel(const LoadedArtifact &artifact, std::string &level,
                                std::string &error) {
  const bool hasV4 = artifact.codeV4().size > 0;
  const char *env = std::getenv("LOCKSTEP_CPU_LEVEL");
  std::string want = env ? env : "";
  if (want.empty() || want == "auto") {
    level = hasV4 && cpuSupportsLevel(kLevelV4).value_or(false) ? kLevelV4 : "base";
    return true;
  }
  if (want == "base") {
    level = want;
    return true;
  }
  if (want != kLevelV4) {
    error = "LOCKSTEP_CPU_LEVEL is " + quoted(want) + ": give auto, base or " + kLevelV4;
    return false;
  }
  if (!hasV4) {
    error = "LOCKSTEP_CPU_LEVEL asks for " + std::string(kLevelV4) +
            " code, which the artifact does not have (compiled with --cpu-levels=x86-64-v3)";
    return false;
  }
  if (!cpuSupportsLevel(kLevelV4).value_or(false)) {
    error = "LOCKSTEP_CPU_LEVEL asks for " + std::string(kLevelV4) +
            " code, which this CPU does not run";
    return false;
  }
  level = want;
  return true;
}
