//===- ShapeInference.h - Symbolic shape rules of onnx ops ------*- C++ -*-===//
#ifndef LOCKSTEP_SHAPE_SHAPEINFERENCE_H
#define LOCKSTEP_SHAPE_SHAPEINFERENCE_H

#include "lockstep/Artifact/DimExpr.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace lockstep {

/// Integer tensors of at most this many elements have their values tracked.
constexpr int64_t kMaxTrackedElements = 64;

/// Slice indices at or beyond this are "to the end" (exporters use INT64_MAX,
/// INT32_MAX and similar).
constexpr int64_t kHugeSliceIndex = int64_t(1) << 30;

/// A Slice start (or end, with `isEnd`) on a dim of size `dim`, normalized as
/// ONNX says: negative indices count from the end, and against a constant dim
/// indices are clamped, to [0, d] stepping up and, stepping down, a start to
/// [0, d - 1] and an end to [-1, d - 1]. A symbolic index is taken to lie
/// within the dim (docs/shapes.md). Shape inference and the lowering both use
/// it, so that a slice's size and its offset agree.
DimExpr normalizeSliceIndex(const DimExpr &dim, const DimExpr &index,
                            int64_t step, bool isEnd);

/// What shape inference knows of a tensor.
struct SymTensor {
  mlir::Type elementType;
  llvm::SmallVector<DimExpr> dims;
  /// Row-major values of a small integer tensor; an entry is nullopt where
  /// unknown. Absent when values are not tracked.
  std::optional<llvm::SmallVector<std::optional<DimExpr>>> values;

  int64_t rank() const { return dims.size(); }
  /// The element count when all dims are constant.
  std::optional<int64_t> numElements() const;
  /// True when every value is known.
  bool hasAllValues() const;
  /// The values as a list, when all are known.
  std::optional<llvm::SmallVector<DimExpr>> allValues() const;
};

using SymLookup = llvm::function_ref<const SymTensor *(mlir::Value)>;

/// Computes what is known of the results of `op` from what is known of its
/// operands. On failure, `error` says why.
mlir::LogicalResult inferSymbolicShapes(mlir::Operation *op, SymLookup lookup,
                                        llvm::SmallVectorImpl<SymTensor> &results,
                                        std::string &error);

} // namespace lockstep

#endif
