//===- PipelineText.h - Pieces shared by the textual pipelines --*- C++ -*-===//
//
// Internal to lib/Pipelines: the CPU and CUDA codegen pipelines are written
// as pipeline text and share its first part.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_LIB_PIPELINES_PIPELINETEXT_H
#define LOCKSTEP_LIB_PIPELINES_PIPELINETEXT_H

#include "lockstep/Target/CPUCodegen.h"

#include <string>

namespace lockstep {

/// Registers every pass the pipeline text names (once).
void registerPipelinePasses();

/// The function passes from onnx to linalg in the canonical form (verified
/// unless the policy is the adaptive control).
std::string linalgPassText(const CodegenOptions &options);

} // namespace lockstep

#endif
