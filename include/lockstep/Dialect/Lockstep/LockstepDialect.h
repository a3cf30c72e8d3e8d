//===- LockstepDialect.h - The lockstep dialect -----------------*- C++ -*-===//
#ifndef LOCKSTEP_DIALECT_LOCKSTEP_LOCKSTEPDIALECT_H
#define LOCKSTEP_DIALECT_LOCKSTEP_LOCKSTEPDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "lockstep/Dialect/Lockstep/LockstepDialect.h.inc"

#define GET_OP_CLASSES
#include "lockstep/Dialect/Lockstep/LockstepOps.h.inc"

namespace lockstep {
/// On a lockstep.attention that keeps the graph's own mask: why
/// lockstep-prove-mask did not prove it a causal kind (a string). Passes
/// that need a proven kind quote it in their diagnostics.
inline constexpr char kMaskUnprovenAttr[] = "lockstep.mask_unproven";
} // namespace lockstep

#endif
