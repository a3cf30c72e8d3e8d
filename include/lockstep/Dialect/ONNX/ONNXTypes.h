//===- ONNXTypes.h - ONNX data types and MLIR element types -----*- C++ -*-===//
#ifndef LOCKSTEP_DIALECT_ONNX_ONNXTYPES_H
#define LOCKSTEP_DIALECT_ONNX_ONNXTYPES_H

#include "mlir/IR/Types.h"

namespace lockstep::onnxir {

/// The MLIR element type of an ONNX TensorProto.DataType, or null when
/// Lockstep does not support it.
mlir::Type getElementType(int64_t onnxDataType, mlir::MLIRContext *ctx);

/// The ONNX TensorProto.DataType of an element type, or 0 (UNDEFINED).
int64_t getOnnxDataType(mlir::Type type);

/// The ONNX name of a data type ("float", "int64", ...), for diagnostics.
const char *getOnnxDataTypeName(int64_t onnxDataType);

} // namespace lockstep::onnxir

#endif
