//===- ArtifactMeta.h - What an artifact says about its model --*- C++ -*-===//
//
// The metadata section of an artifact: the graph's inputs and outputs with
// symbolic dims, its weights (embedded in the artifact or referenced in an
// external file by path, byte range and checksum), and free-form properties.
// It is stored as line-based text (see MetadataText.cpp) so that it can be
// read with `strings`, and parsed without trusting it.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_ARTIFACT_ARTIFACTMETA_H
#define LOCKSTEP_ARTIFACT_ARTIFACTMETA_H

#include "lockstep/Artifact/DimExpr.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::rt {

/// An input or output of the graph.
struct TensorSpec {
  std::string name;
  /// "f32", "f16", "bf16", "f64", "i64", "i32", "i16", "i8", "u8", "u16", "u32", "u64", "bool".
  std::string dtype;
  /// Each a DimExpr as DimExpr::str() prints it: "batch", "past + seq",
  /// "2*batch*seq + 64". Parentheses are refused (see validateMeta).
  std::vector<std::string> dims;
};

struct WeightSpec {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  bool embedded = true;
  /// Embedded: offset within the weights section (filled by writeArtifact).
  /// External: offset within the file at `path`.
  uint64_t offset = 0;
  /// Bytes: the product of `shape` times the element size.
  uint64_t length = 0;
  std::string path; // external only: absolute path of the file
  /// checksumBytes() of the weight's bytes (filled by writeArtifact when
  /// embedded; the compiler fills it for external weights, see
  /// checksumFileRange()).
  uint64_t checksum = 0;
};

struct ArtifactMeta {
  std::string producer; // e.g. "lockstep-opt 0.1"
  /// "x86_64-cpu", "x86_64-cuda", or both separated by a comma (an artifact
  /// with the code of each): see targetsOf().
  std::string target;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<WeightSpec> weights;
  std::vector<std::pair<std::string, std::string>> properties;
};

/// The target name of code that CpuModule loads.
inline constexpr const char *kCpuTarget = "x86_64-cpu";
/// Host code for x86-64 that launches NVPTX kernels (embedded in it) through
/// the runtime's CUDA backend; the chip is the `cuda.chip` property.
inline constexpr const char *kCudaTarget = "x86_64-cuda";

/// The targets of `meta.target`, in order ("x86_64-cpu,x86_64-cuda" holds
/// two).
std::vector<std::string> targetsOf(const ArtifactMeta &meta);
/// Whether `target` is one of the artifact's targets.
bool hasTarget(const ArtifactMeta &meta, const std::string &target);

/// Bytes per element of an artifact dtype; 0 when the dtype is unknown.
size_t dtypeSize(const std::string &dtype);
/// The .npy dtype (NpyArray::dtype) that holds an artifact dtype: "f32" is
/// "f4", "bool" is "b1". NumPy has no bfloat16: "bf16" is held as "u2", the
/// raw bits. Empty when the dtype is unknown.
std::string dtypeToNpy(const std::string &dtype);

/// Parses a dim's text as DimExpr::str() prints it. Refuses (nullopt) text
/// over 1024 characters or with parentheses before parsing: the parser
/// recurses on parentheses, and a product of sums expands exponentially, so
/// a crafted artifact could otherwise exhaust the stack or the memory. The
/// only way the runtime parses dims.
std::optional<lockstep::DimExpr> parseDim(const std::string &text);

/// Checks what the writer and the reader both require: known dtypes; dims
/// that parse as DimExprs, at most 1024 characters and without parentheses
/// (so that a crafted file cannot make the parser recurse deeply or expand a
/// product of sums); every symbol used by a dim appears alone as some
/// input dim (so that the runtime can derive its value); non-empty, unique
/// names; weight lengths that match dtype and shape; external paths that are
/// absolute. Offsets are checked by the reader, which knows the sections.
bool validateMeta(const ArtifactMeta &meta, std::string &error);

/// `text` with backslash, tab, newline and other control bytes escaped as
/// \\, \t, \n, \r and \xHH: safe in a metadata field and in a one-line
/// message. unescapeText() inverts it; it returns false on a bad escape.
std::string escapeText(const std::string &text);
bool unescapeText(const std::string &text, std::string &out);
/// "'" + escapeText(name) + "'", for messages.
std::string quoted(const std::string &name);
/// A tensor's symbolic dims as messages print them: "[batch, seq + past]".
std::string dimsText(const std::vector<std::string> &dims);

/// The metadata section's text. serializeMeta(parseMeta(x)) == x.
std::string serializeMeta(const ArtifactMeta &meta);
/// Parses and validates metadata text. Never trusts it: every malformed line
/// gives a one-line error naming the line.
bool parseMeta(const std::string &text, ArtifactMeta &out, std::string &error);

} // namespace lockstep::rt

#endif
