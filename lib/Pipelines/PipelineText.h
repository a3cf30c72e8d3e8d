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
/// unless the policy is the adaptive control); for `cuda`, with the ragged
/// step's attention made GPU kernels first (lockstep-gpu-paged-attention).
std::string linalgPassText(const CodegenOptions &options, bool cuda = false);

} // namespace lockstep

#endif
