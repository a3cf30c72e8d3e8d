//===- Icu.h - ICU's C functions, through the loaded library ----*- C++ -*-===//
//
// Inside lockstep_text: the ICU functions that the tokenizer calls, as
// pointers into the libicuuc that IcuLibrary.cpp opened (lockstep/Text/
// IcuLibrary.h). ICU's own headers give their types and constants; they are
// compiled with U_DISABLE_RENAMING (set for lockstep_text by its
// CMakeLists.txt), so that they declare the plain names (u_charType) and a
// direct call would be an undefined symbol at link time, never a silent
// link-time dependency on one ICU version. Call through icu() only.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_TEXT_ICU_H
#define LOCKSTEP_RUNTIME_TEXT_ICU_H

#if !defined(U_DISABLE_RENAMING) || !U_DISABLE_RENAMING
#error "lockstep_text includes ICU's headers with U_DISABLE_RENAMING=1 (its CMakeLists.txt)"
#endif

#include "lockstep/Text/IcuLibrary.h"

#include <unicode/uchar.h>
#include <unicode/unorm2.h>
#include <unicode/uset.h>
#include <unicode/ustring.h>

#include <string>
#include <vector>

namespace lockstep::text::detail {

/// Every ICU function the tokenizer calls; each is looked up by this name
/// plus the library's suffix.
#define LOCKSTEP_ICU_FUNCTIONS(X)                                                                  \
  X(u_charType)                                                                                    \
  X(u_charAge)                                                                                     \
  X(u_hasBinaryProperty)                                                                           \
  X(u_isUWhiteSpace)                                                                               \
  X(u_strFromUTF8)                                                                                 \
  X(u_strToUTF8)                                                                                   \
  X(u_strToLower)                                                                                  \
  X(uset_openPattern)                                                                              \
  X(uset_freeze)                                                                                   \
  X(unorm2_getNFCInstance)                                                                         \
  X(unorm2_getNFDInstance)                                                                         \
  X(unorm2_getNFKCInstance)                                                                        \
  X(unorm2_getNFKDInstance)                                                                        \
  X(unorm2_openFiltered)                                                                           \
  X(unorm2_normalize)

struct IcuFunctions {
#define LOCKSTEP_ICU_POINTER(name) decltype(&::name) name = nullptr;
  LOCKSTEP_ICU_FUNCTIONS(LOCKSTEP_ICU_POINTER)
#undef LOCKSTEP_ICU_POINTER
};

/// Opens the first usable candidate into `out` (probeIcu, with the table).
bool openIcu(const std::vector<IcuCandidate> &candidates, IcuFunctions &out,
             std::string &loaded, std::string &why);

/// The process's ICU (icuAvailable); null when there is none. The parts
/// that call it check requireIcu (TextInternal.h) when they are loaded.
const IcuFunctions *icu();

/// U_GET_GC_MASK through the loaded library.
inline uint32_t generalCategoryMask(const IcuFunctions &f, UChar32 c) {
  return U_MASK(f.u_charType(c));
}

} // namespace lockstep::text::detail

#endif
