//===- StepBuffers.h - Which of a bufferized step's buffers may overlap -*- C++ -*-===//
//
// For the GPU passes that move or merge a step's loops
// (lockstep-fuse-pool-writes, lockstep-fuse-siblings).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_GPU_STEPBUFFERS_H
#define LOCKSTEP_GPU_STEPBUFFERS_H

#include "mlir/IR/Value.h"

namespace lockstep {

/// Whether buffers with roots `a` and `b` (see rootOf in
/// lockstep/Reductions/Contraction.h) may overlap. Allocations and globals
/// are buffers of their own; the step's arguments are distinct buffers (the
/// runtime binds every input, weight, pool and output to memory of its own:
/// runtime/Exec.cpp), so two different arguments do not overlap. A root made
/// any other way may be any buffer.
bool stepBuffersMayOverlap(mlir::Value a, mlir::Value b);

} // namespace lockstep

#endif
