//===- IcuLibrary.cpp - ICU's common library, loaded at run time ----------===//
//
// Probes libicuuc.so.N with dlopen and looks its functions up with dlsym
// (lockstep/Text/IcuLibrary.h), as CudaDriver.cpp does for libcuda.so.1.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Text/IcuLibrary.h"

#include "Icu.h"
#include "TextInternal.h"

#include <dlfcn.h>
#include <type_traits>

using namespace lockstep::text;
using namespace lockstep::text::detail;

namespace {

/// Looks every function up with `suffix`; false with the first missing name.
bool resolve(void *lib, const std::string &suffix, IcuFunctions &f, std::string &missing) {
  auto get = [&](const char *name, auto &fn) {
    std::string full = name + suffix;
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(lib, full.c_str()));
    if (!fn)
      missing = full;
    return fn != nullptr;
  };
#define LOCKSTEP_ICU_RESOLVE(name) get(#name, f.name) &&
  return LOCKSTEP_ICU_FUNCTIONS(LOCKSTEP_ICU_RESOLVE) true;
#undef LOCKSTEP_ICU_RESOLVE
}

/// Whether dlopen's error says only that `file` is not there (rather than
/// that it is there and fails to load, e.g. without its libicudata).
bool notFound(const std::string &file, const char *error) {
  std::string e = error ? error : "";
  return e.rfind(file + ": cannot open shared object file", 0) == 0;
}

struct Process {
  IcuFunctions functions;
  std::string loaded, why;
  bool ok = false;
};

const Process &process() {
  static const Process p = [] {
    Process q;
    q.ok = openIcu(icuCandidates(), q.functions, q.loaded, q.why);
    return q;
  }();
  return p;
}

} // namespace

std::vector<IcuCandidate> lockstep::text::icuCandidates() {
  std::vector<IcuCandidate> out;
  IcuCandidate unversioned{"libicuuc.so", {""}};
  for (int n = kIcuNewest; n >= kIcuOldest; --n) {
    std::string suffix = "_" + std::to_string(n);
    out.push_back({"libicuuc.so." + std::to_string(n), {suffix, ""}});
    unversioned.suffixes.push_back(suffix);
  }
  out.push_back(std::move(unversioned));
  return out;
}

bool lockstep::text::detail::openIcu(const std::vector<IcuCandidate> &candidates,
                                     IcuFunctions &out, std::string &loaded, std::string &why) {
  std::string unusable; // the first library found that could not be used
  for (const IcuCandidate &c : candidates) {
    void *lib = dlopen(c.file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char *e = dlerror();
      if (unusable.empty() && !notFound(c.file, e))
        unusable = e ? e : c.file + " does not load";
      continue;
    }
    std::string missing;
    for (const std::string &suffix : c.suffixes) {
      IcuFunctions f;
      if (resolve(lib, suffix, f, missing)) {
        out = f;
        loaded = c.file;
        return true;
      }
    }
    if (unusable.empty())
      unusable = c.file + " has no '" + missing + "'";
    dlclose(lib);
  }
  if (!unusable.empty()) {
    why = "not usable: " + unusable;
  } else if (candidates.empty()) {
    why = "not installed (no library to try)";
  } else {
    size_t n = candidates.size();
    why = "not installed (tried " + candidates.front().file;
    if (n > 2)
      why += " down to " + candidates[n - 2].file + ",";
    if (n > 1)
      why += " and " + candidates.back().file;
    why += ")";
  }
  return false;
}

bool lockstep::text::probeIcu(const std::vector<IcuCandidate> &candidates, std::string &loaded,
                              std::string &why) {
  IcuFunctions f;
  return openIcu(candidates, f, loaded, why);
}

bool lockstep::text::icuAvailable(std::string &why) {
  if (!process().ok)
    why = process().why;
  return process().ok;
}

std::string lockstep::text::icuLibraryName() { return process().loaded; }

const IcuFunctions *lockstep::text::detail::icu() {
  return process().ok ? &process().functions : nullptr;
}

bool lockstep::text::detail::requireIcu(const std::string &part, std::string &error) {
  std::string why;
  if (icuAvailable(why))
    return true;
  error = jsonError(part + " needs ICU (libicuuc.so.N), which is " + why);
  return false;
}
