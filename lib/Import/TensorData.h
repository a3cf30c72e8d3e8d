//===- TensorData.h - Initializer values as MLIR attributes -----*- C++ -*-===//
#ifndef LOCKSTEP_LIB_IMPORT_TENSORDATA_H
#define LOCKSTEP_LIB_IMPORT_TENSORDATA_H

#include "ModelReader.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <string>

namespace lockstep {

/// Tensors of more elements than this are refused (2^40: 4 TiB of fp32).
constexpr int64_t kMaxTensorElements = int64_t(1) << 40;

/// True when every dim is in [0, kMaxTensorElements] and so is their
/// product: the shape of a tensor that can be imported (whose element count
/// does not overflow).
bool isImportableShape(llvm::ArrayRef<int64_t> dims);

/// Reads the values of a (small) TensorProto into a dense attribute of type
/// `type`: from its raw bytes at `loc` when given, else from its raw_data or
/// typed fields. Returns an error message on failure.
std::optional<std::string>
readTensorValues(const onnx::TensorProto &tensor,
                 const std::optional<WeightLocation> &loc,
                 mlir::RankedTensorType type, mlir::DenseElementsAttr &out);

} // namespace lockstep

#endif
