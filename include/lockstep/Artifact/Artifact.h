//===- Artifact.h - Compiled artifacts (.lsa) -------------------*- C++ -*-===//
//
// An artifact is one file: a fixed header, a section table, and the sections.
// All integers are little-endian.
//
//   offset  size  field
//   0       8     magic: 89 'L' 'S' 'A' 0d 0a 1a 0a (a text-mode transfer or
//                 a truncation to 7 bits breaks it visibly, as in PNG)
//   8       4     format version (kArtifactFormatVersion)
//   12      4     section count N (1 to kMaxArtifactSections)
//   16      8     file size in bytes
//   24      8     checksum: checksumBytes() of the whole file except these 8
//                 bytes, i.e. of bytes [0, 24) followed by [32, file size)
//   32      32    reserved, zero
//   64      24*N  section table, one entry per section:
//                 u32 kind, u32 reserved (zero), u64 offset, u64 size
//   ...           sections, each at a 64-byte aligned offset, inside the file,
//                 not overlapping the header, the table or each other
//
// Section kinds (each at most once; metadata is required):
//   1  metadata: the text of serializeMeta()
//   2  CPU code (target x86_64-cpu): the bytes of an x86-64 ELF shared object
//      exporting lockstep_entry (see lockstep/Runtime/Backend/Cpu/CpuBackend.h)
//   3  weights: the embedded weights, each at a 64-byte aligned offset within
//      the section (so that each is 64-byte aligned in memory once mapped)
//   4  kernels (a CUDA artifact's): u32 count, then per kernel module u32 name
//      length, the name, u64 PTX length and the PTX (NUL-terminated); see
//      Kernels.h
//   5  CUDA host code (target x86_64-cuda): an x86-64 ELF shared object
//      exporting lockstep_entry, which launches the kernels of section 4
//      through the runtime's CUDA backend; its modules are named
//      "lockstep-kernel:NAME"
//   6  launch plan (a CUDA artifact's): the text of serializeLaunchPlan()
//   7  tokenizer (optional; lockstep-opt --tokenizer): a Hugging Face
//      tokenizer.json, byte for byte as given (lockstep/Text/Tokenizer.h
//      reads it). An artifact without one has no section 7 and is the same
//      file as before the section existed.
//   8  CPU code for x86-64-v4 (optional; lockstep-opt writes it unless
//      --cpu-levels=x86-64-v3): section 2's functions compiled with 16-lane
//      tiles and panels, every fold in the same order, so the same bits;
//      the runtime runs it where the host has AVX-512 (LOCKSTEP_CPU_LEVEL
//      picks one).
//
// An artifact holds the code of each target that its metadata names
// (`target x86_64-cpu,x86_64-cuda` for both: lockstep-opt --target=cpu,cuda),
// and the one weights section that all of them read.
//
// The checksum covers everything, so a flipped bit anywhere is caught at load
// time. External weights are referenced by absolute path, byte range and
// checksum of that range, so a multi-gigabyte weight file is neither copied
// into the artifact nor trusted blindly.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_ARTIFACT_ARTIFACT_H
#define LOCKSTEP_ARTIFACT_ARTIFACT_H

#include "lockstep/Artifact/ArtifactMeta.h"
#include "lockstep/Artifact/Kernels.h"
#include "lockstep/Artifact/MappedFile.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::rt {

/// 2: the kernels section (format 1 embedded the PTX in the code section).
/// 3: a code section per target (a CUDA artifact's host code moved from
/// section 2 to 5) and the launch plan.
/// 4: an optional second CPU code section (8), the same functions compiled
/// for x86-64-v4.
inline constexpr uint32_t kArtifactFormatVersion = 4;
inline constexpr uint32_t kMaxArtifactSections = 64;
inline constexpr uint64_t kArtifactHeaderSize = 64;
inline constexpr uint64_t kArtifactSectionEntrySize = 24;
inline constexpr uint64_t kArtifactAlignment = 64;
inline constexpr uint8_t kArtifactMagic[8] = {0x89, 'L',  'S',  'A',
                                              0x0d, 0x0a, 0x1a, 0x0a};
enum class SectionKind : uint32_t {
  Metadata = 1,
  Code = 2,
  Weights = 3,
  Kernels = 4,
  CudaCode = 5,
  LaunchPlan = 6,
  Tokenizer = 7,
  /// The CPU code of section 2 compiled for x86-64-v4 (AVX-512), optional:
  /// the same entry points and the same bits, for hosts that have it.
  CodeV4 = 8,
};

/// A borrowed byte range.
struct ByteView {
  const uint8_t *data = nullptr;
  uint64_t size = 0;
};

/// The bytes of an embedded weight, given to writeArtifact by pointer so that
/// they may come straight from a mapping of the model file: the writer reads
/// them (twice: checksum, then write) but never copies them.
struct EmbeddedWeight {
  size_t index; // into ArtifactMeta::weights; that spec must be embedded
  const void *data;
  uint64_t size;
};

/// The code sections of an artifact (each empty when its target is not one
/// of the artifact's).
struct ArtifactCode {
  ByteView cpu;        // section 2
  ByteView cuda;       // section 5
  ByteView kernels;    // section 4: serializeKernels()
  ByteView launchPlan; // section 6: serializeLaunchPlan()
  ByteView tokenizer;  // section 7 when not empty: a tokenizer.json
  ByteView cpuV4;      // section 8 when not empty: `cpu` for x86-64-v4
};

/// Writes an artifact to `path`. For each embedded weight it fills the spec's
/// offset (within the weights section), length and checksum; `meta` must
/// otherwise pass validateMeta(), and every embedded spec must be given
/// exactly once in `embedded`. The file is written to a temporary file in the
/// same directory and renamed over `path` only when complete, so a failure
/// leaves no partial artifact. On failure returns false and sets `error`.
bool writeArtifact(const std::string &path, ArtifactMeta &meta, const ArtifactCode &code,
                   const std::vector<EmbeddedWeight> &embedded, std::string &error);

/// A loaded artifact: the file mapped read-only, its metadata parsed, and
/// every weight resolved to bytes in memory. Movable; pointers from code()
/// and weight() stay valid while it lives (moves included).
class LoadedArtifact {
public:
  const std::string &path() const { return path_; }
  const ArtifactMeta &meta() const { return meta_; }
  /// The CPU code section; empty when the artifact has none.
  ByteView code() const { return code_; }
  /// The CPU code for x86-64-v4 (section 8); empty when the artifact has
  /// none.
  ByteView codeV4() const { return codeV4_; }
  /// The CUDA host code section; empty when the artifact has none.
  ByteView cudaCode() const { return cudaCode_; }
  /// The bytes of weight `i` (in meta().weights order): embedded weights
  /// point into the artifact's mapping, external ones into their file's. Read
  /// only: the mappings are not writable.
  ByteView weight(size_t i) const { return weights_[i]; }
  /// The kernel modules of the kernels section (empty for a CPU artifact).
  const std::vector<KernelText> &kernels() const { return kernels_; }
  /// The launch plan (empty for a CPU artifact).
  const std::vector<KernelLaunch> &launchPlan() const { return launchPlan_; }
  /// The tokenizer.json of section 7; empty when the artifact has none.
  std::string_view tokenizerJson() const {
    return {reinterpret_cast<const char *>(tokenizer_.data), tokenizer_.size};
  }

private:
  friend bool loadArtifact(const std::string &, LoadedArtifact &, std::string &);
  std::string path_;
  MappedFile file_;
  std::vector<MappedFile> externalFiles_; // one per distinct external path
  ArtifactMeta meta_;
  ByteView code_, codeV4_, cudaCode_, tokenizer_;
  std::vector<ByteView> weights_;
  std::vector<KernelText> kernels_;
  std::vector<KernelLaunch> launchPlan_;
};

/// Maps and verifies the artifact at `path`: magic, format version, size,
/// checksum, section table, metadata; maps each external weight file and
/// verifies its size and the checksum of the referenced range. On failure
/// returns false and sets `error` to one line; never crashes on bad content.
/// The file must not be truncated while loaded (that is SIGBUS with any
/// mapping).
bool loadArtifact(const std::string &path, LoadedArtifact &out,
                  std::string &error);

} // namespace lockstep::rt

#endif
