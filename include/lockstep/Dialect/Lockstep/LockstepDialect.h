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

#endif
