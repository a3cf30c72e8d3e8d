//===- CpuBackend.h - Running an artifact's host code ----------*- C++ -*-===//
//
// The code section of a CPU artifact is an x86-64 ELF shared object that
// exports
//
//   extern "C" void lockstep_entry(void **args);
//
// args[i] points to a memref descriptor (see Runtime/MemRef.h) for each input
// in metadata order, then each weight in metadata order, then each output in
// metadata order. Inputs and weights are read only (weights live in a read-only
// mapping); outputs are allocated by the caller, 64-byte aligned, and the entry
// writes every element. Tensors may have zero elements.
//
// The object is loaded from memory (memfd_create, then dlopen of
// /proc/self/fd/N) so that nothing is written to disk and nothing is left
// behind.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_BACKEND_CPU_CPUBACKEND_H
#define LOCKSTEP_RUNTIME_BACKEND_CPU_CPUBACKEND_H

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"

#include <cstdint>
#include <optional>
#include <string>

namespace lockstep::rt {

using EntryFn = void (*)(void **args);

/// A loaded shared object and its entry point. Movable; unloads on
/// destruction, so it must outlive every call of entry().
class CpuModule {
public:
  CpuModule() = default;
  CpuModule(const CpuModule &) = delete;
  CpuModule &operator=(const CpuModule &) = delete;
  CpuModule(CpuModule &&o) noexcept;
  CpuModule &operator=(CpuModule &&o) noexcept;
  ~CpuModule();

  EntryFn entry() const { return entry_; }
  /// Makes the module's parallel loops run on `pool` (null: on the calling
  /// thread). The pool must outlive the calls. Code compiled without
  /// parallel loops ignores it. A module that exports the global
  /// `lockstep_thread_count` (the adaptive-threads negative control) gets the
  /// pool's thread count there (1 without a pool).
  void setThreadPool(ThreadPool *pool) const;
  explicit operator bool() const { return handle_ != nullptr; }
  /// The code loaded from an artifact: "base" (section 2) or kLevelV4
  /// (section 8); "base" for code loaded from bytes.
  const char *level() const { return level_; }

private:
  friend bool loadCpuModule(ByteView, CpuModule &, std::string &);
  friend bool loadCpuModule(const LoadedArtifact &, CpuModule &, std::string &);
  void reset();
  void *handle_ = nullptr;
  EntryFn entry_ = nullptr;
  // The module's exported hooks (see lockstep-dispatch-parallel), or null.
  void **poolSlot_ = nullptr;
  void **implSlot_ = nullptr;
  // The thread count global of the adaptive-threads control, or null.
  int64_t *countSlot_ = nullptr;
  const char *level_ = "base";
};

/// Loads a shared object from bytes and finds lockstep_entry. On failure
/// returns false and sets `error` (with dlerror's text when dlopen fails).
bool loadCpuModule(ByteView code, CpuModule &out, std::string &error);

/// Whether this CPU runs code built for the x86-64 micro-architecture level
/// `level` ("x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4"); nullopt for a
/// level this runtime does not know.
std::optional<bool> cpuSupportsLevel(const std::string &level);

/// The level of an artifact's optional second CPU code (section 8).
inline constexpr const char *kLevelV4 = "x86-64-v4";

/// Which of `artifact`'s CPU codes to run: "base" (section 2, at its
/// `cpu_level`) or kLevelV4 (section 8). The environment variable
/// LOCKSTEP_CPU_LEVEL decides: unset or "auto" takes kLevelV4 when the
/// artifact has it and this CPU runs it, else base; "base" or kLevelV4 ask
/// for one, and asking for kLevelV4 code that the artifact lacks or the CPU
/// cannot run is an error. Both codes give the same bits.
bool pickCpuLevel(const LoadedArtifact &artifact, std::string &level, std::string &error);

/// Loads the code of `artifact` (the level pickCpuLevel picks), refusing an
/// artifact whose target is not kCpuTarget, whose `cpu_level` property this
/// CPU does not support, or that has no code.
bool loadCpuModule(const LoadedArtifact &artifact, CpuModule &out,
                   std::string &error);

} // namespace lockstep::rt

#endif
