//===- ONNXDialect.h - The onnx dialect -------------------------*- C++ -*-===//
#ifndef LOCKSTEP_DIALECT_ONNX_ONNXDIALECT_H
#define LOCKSTEP_DIALECT_ONNX_ONNXDIALECT_H

#include "lockstep/Artifact/DimExpr.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Value.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "lockstep/Dialect/ONNX/ONNXAttrs.h.inc"

#include "lockstep/Dialect/ONNX/ONNXInterfaces.h.inc"

#define GET_OP_CLASSES
#include "lockstep/Dialect/ONNX/ONNXOps.h.inc"

namespace lockstep::onnxir {

/// The symbolic dims of a ranked tensor type: from its #onnx.dims encoding,
/// else from its static dims. Nullopt for an unranked type, or a dynamic dim
/// without an encoding.
std::optional<llvm::SmallVector<DimExpr>> getSymbolicDims(mlir::Type type);

/// The symbolic dims of a value's type, or an empty list when they are not
/// known (see getSymbolicDims).
inline llvm::SmallVector<DimExpr> symbolicDimsOrEmpty(mlir::Value v) {
  return getSymbolicDims(v.getType()).value_or(llvm::SmallVector<DimExpr>());
}

/// A ranked tensor type with the given symbolic dims: constant dims are
/// static, others dynamic, and the encoding is added when any is symbolic.
mlir::RankedTensorType getSymbolicTensorType(mlir::Type elementType,
                                             llvm::ArrayRef<DimExpr> dims);

} // namespace lockstep::onnxir

#endif
