//===- ONNXToLinalg.h - Lowering onnx ops to linalg on tensors --*- C++ -*-===//
//
// The lowering walks a function's onnx ops in order and builds, for each, its
// equivalent in linalg, tensor, arith and math on tensors. Dynamic sizes come
// from the ops' symbolic dims (#onnx.dims): every symbol is read once from a
// function argument's dim at the function's entry, and each dim expression is
// computed once from them. So shape subgraphs are never executed: their
// consumers size their results from types.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_CONVERSION_ONNXTOLINALG_H
#define LOCKSTEP_CONVERSION_ONNXTOLINALG_H

#include "lockstep/Artifact/DimExpr.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

namespace lockstep {

class LoweringState {
public:
  explicit LoweringState(mlir::func::FuncOp func);

  /// Records the symbols that each argument dim defines; fails when a symbol
  /// of the function's types appears in no argument dim on its own.
  mlir::LogicalResult init();

  mlir::OpBuilder &builder() { return b; }
  mlir::MLIRContext *getContext() { return b.getContext(); }

  /// The lowered value of an onnx value (null when not lowered).
  mlir::Value get(mlir::Value old) const { return mapping.lookup(old); }
  void set(mlir::Value old, mlir::Value lowered) { mapping[old] = lowered; }

  /// The symbolic dims of an onnx value.
  llvm::SmallVector<DimExpr> dims(mlir::Value old) const;
  /// The dims as static sizes or index values (computed at the entry).
  llvm::SmallVector<mlir::OpFoldResult> mixedDims(mlir::Value old);
  /// The index value of a dim expression, computed at the entry.
  mlir::Value materialize(const DimExpr &e);
  /// The type of the lowered value: the onnx type without its encoding.
  mlir::RankedTensorType plainType(mlir::Value old) const;
  /// A tensor.empty shaped like `old` (an onnx result), of element type
  /// `elementType` when given.
  mlir::Value empty(mlir::Value old, mlir::Type elementType = {});
  /// A tensor.empty of the given dims and element type.
  mlir::Value empty(mlir::Location loc, llvm::ArrayRef<DimExpr> dims,
                    mlir::Type elementType);
  /// The dims as static sizes or index values.
  llvm::SmallVector<mlir::OpFoldResult> mixed(llvm::ArrayRef<DimExpr> dims);
  /// The values of a small integer tensor whose `onnx.sym` values are known.
  std::optional<llvm::SmallVector<DimExpr>> symValues(mlir::Value old) const;

private:
  mlir::func::FuncOp func;
  mlir::OpBuilder b;
  mlir::OpBuilder entry; // inserts at the entry, before the lowered ops
  llvm::DenseMap<mlir::Value, mlir::Value> mapping;
  llvm::DenseMap<mlir::Value, llvm::SmallVector<DimExpr>> argDims;
  llvm::StringMap<std::pair<unsigned, unsigned>> symbolSource;
  llvm::StringMap<mlir::Value> materialized;
};

/// Each lowers the ops of one family; nullopt when `op` is not of the family.
/// On failure they have emitted an error at the op.
std::optional<mlir::LogicalResult> lowerElementwise(mlir::Operation *op,
                                                    LoweringState &s);
std::optional<mlir::LogicalResult> lowerContraction(mlir::Operation *op,
                                                    LoweringState &s);
std::optional<mlir::LogicalResult> lowerReduction(mlir::Operation *op,
                                                  LoweringState &s);
std::optional<mlir::LogicalResult> lowerMovement(mlir::Operation *op,
                                                 LoweringState &s);
std::optional<mlir::LogicalResult> lowerShapeOp(mlir::Operation *op,
                                                LoweringState &s);

/// A Concat whose inputs are all Slices of one tensor along its axis, some
/// under a Neg (RoPE's rotate-half), as one gather generic; null for any
/// other op or Concat (ConcatSlices.cpp).
mlir::Value concatOfSlices(mlir::Operation *concat, LoweringState &s);

/// Builds a linalg.generic that computes `body` elementwise over `operands`
/// (lowered values, with the symbolic dims `operandDims`), broadcast
/// numpy-style to a result of dims `outDims` and element type `elt`.
mlir::Value buildElementwise(
    LoweringState &s, mlir::Location loc, llvm::ArrayRef<DimExpr> outDims,
    mlir::Type elt,
    llvm::ArrayRef<mlir::Value> operands,
    llvm::ArrayRef<llvm::SmallVector<DimExpr>> operandDims,
    llvm::function_ref<mlir::Value(mlir::OpBuilder &, mlir::Location,
                                   mlir::ValueRange)>
        body);

/// Converts a scalar to element type `to` with ONNX Cast semantics (any
/// integer, unsigned, bool or float types; f32 to bf16 rounds to nearest
/// even without a runtime call).
mlir::Value castScalar(mlir::OpBuilder &b, mlir::Location loc, mlir::Value v,
                       mlir::Type to);

} // namespace lockstep

#endif
