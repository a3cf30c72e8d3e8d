//===- ArtifactEmitter.h - Compiling a model into an artifact ---*- C++ -*-===//
#ifndef LOCKSTEP_TARGET_ARTIFACTEMITTER_H
#define LOCKSTEP_TARGET_ARTIFACTEMITTER_H

#include "lockstep/Target/CPUCodegen.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace lockstep {

enum class WeightPolicy {
  Auto,      // embed weights stored in the model file, reference external data
  Embed,     // copy every weight into the artifact
  Reference, // reference every weight by path, offset, length and checksum
};

struct ArtifactOptions {
  WeightPolicy weights = WeightPolicy::Auto;
  std::string producer = "lockstep-opt";
  CodegenOptions codegen;
  /// A tokenizer.json stored as the artifact's section 7; none when empty.
  std::string tokenizerJson;
};

/// Compiles `module` (the onnx form, shapes inferred) for the CPU and writes
/// the artifact to `path`: its metadata (inputs and outputs with symbolic
/// dims, weights), the shared object, and the embedded weights. The module is
/// lowered in place. Errors are emitted as diagnostics, or returned in
/// `error` when they concern files.
mlir::LogicalResult emitArtifact(mlir::ModuleOp module,
                                    const std::string &path,
                                    const ArtifactOptions &options);

} // namespace lockstep

#endif
