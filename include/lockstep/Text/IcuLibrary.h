//===- IcuLibrary.h - ICU's common library, loaded at run time --*- C++ -*-===//
//
// lockstep_text has no link-time ICU dependency, so that the binaries that
// hold it start on a machine whose ICU has another soname, or that has none:
// ICU's common library (libicuuc) is opened with dlopen the first time a
// tokenizer part that needs it is loaded, as the CUDA driver is
// (Runtime/Backend/Cuda/CudaDriver.h). The parts that need it: the NFC, NFD,
// NFKC, NFKD and Lowercase normalizers, and the Digits, Punctuation,
// Whitespace, WhitespaceSplit and BertPreTokenizer pre-tokenizers.
// Byte-level tokenizers without them (GPT-2, Llama 3) never open it.
//
// ICU's soname and its C functions carry its major version
// (libicuuc.so.72, u_charType_72). icuCandidates() lists what is tried, in
// order: libicuuc.so.N for N from kIcuNewest down to kIcuOldest (functions
// suffixed _N, or unsuffixed for an ICU built without renaming), then the
// unversioned libicuuc.so. The first that loads and has every function
// wins. Without one, loading a tokenizer that needs ICU fails with an error
// that names the library and the part, e.g.
//   tokenizer.json: normalizer NFC needs ICU (libicuuc.so.N), which is not
//   installed (tried libicuuc.so.99 down to libicuuc.so.60, and libicuuc.so)
//
// The ICU found decides the Unicode version of the character classes
// (Tokenizer.h, "Unicode versions").
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_TEXT_ICULIBRARY_H
#define LOCKSTEP_TEXT_ICULIBRARY_H

#include <string>
#include <vector>

namespace lockstep::text {

constexpr int kIcuNewest = 99;
constexpr int kIcuOldest = 60;

/// One place to look for ICU: a file name for dlopen, and the suffixes that
/// its C functions may carry ("_72", or "" for no renaming), tried in order.
struct IcuCandidate {
  std::string file;
  std::vector<std::string> suffixes;
};

/// What icuAvailable tries, in order (see above).
std::vector<IcuCandidate> icuCandidates();

/// Opens the first of `candidates` that loads and has every function the
/// tokenizer uses: true with `loaded` naming it ("libicuuc.so.72"), else
/// false with `why` saying what was tried (worded as icuAvailable's).
/// Independent of the process's ICU (icuAvailable); a library that was
/// opened stays open.
bool probeIcu(const std::vector<IcuCandidate> &candidates, std::string &loaded,
              std::string &why);

/// Whether this process can use ICU: the first call probes icuCandidates()
/// (thread-safe, once). When none is usable, false with `why` worded to
/// follow "ICU (libicuuc.so.N), which is ": "not installed (tried ...)" or
/// "not usable: libicuuc.so.72 has no 'u_charType_72'".
bool icuAvailable(std::string &why);

/// The file name of the ICU in use ("libicuuc.so.72"); empty when none.
std::string icuLibraryName();

} // namespace lockstep::text

#endif
