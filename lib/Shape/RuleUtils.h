//===- RuleUtils.h - Shared pieces of the shape rules -----------*- C++ -*-===//
#ifndef LOCKSTEP_LIB_SHAPE_RULEUTILS_H
#define LOCKSTEP_LIB_SHAPE_RULEUTILS_H

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "lockstep/Shape/ShapeInference.h"
#include "mlir/IR/Builders.h"

namespace lockstep::shape {

using Dims = llvm::SmallVector<DimExpr>;
using Vals = llvm::SmallVector<std::optional<DimExpr>>;

struct RuleCtx {
  mlir::Operation *op;
  SymLookup lookup;
  llvm::SmallVectorImpl<SymTensor> &results;
  std::string &error;

  const SymTensor &in(mlir::Value v) { return *lookup(v); }
  mlir::LogicalResult fail(const llvm::Twine &msg) {
    error = msg.str();
    return mlir::failure();
  }
  /// Sets result `i`; values are kept only for small integer tensors.
  void set(unsigned i, mlir::Type elt, Dims dims,
           std::optional<Vals> vals = std::nullopt);
  /// A constant of the values of `v`, when all are known constants.
  std::optional<llvm::SmallVector<int64_t>> constInts(mlir::Value v);
  mlir::Type i1() { return mlir::IntegerType::get(op->getContext(), 1); }
  mlir::Type i64() { return mlir::IntegerType::get(op->getContext(), 64); }
};

/// Normalizes a possibly negative axis; nullopt when out of range.
std::optional<int64_t> normAxis(int64_t axis, int64_t rank);
/// Multidirectional broadcast of shapes; a symbolic dim against a constant
/// other than 1 takes the constant.
mlir::FailureOr<Dims> broadcast(RuleCtx &c, llvm::ArrayRef<Dims> shapes);
/// The product of dims.
DimExpr product(llvm::ArrayRef<DimExpr> dims);
/// Broadcasts values of equal size, or of one element, to `n` entries.
std::optional<Vals> broadcastValues(const std::optional<Vals> &v, size_t n);

mlir::LogicalResult inferElementwise(RuleCtx &c);
mlir::LogicalResult inferContraction(RuleCtx &c);
mlir::LogicalResult inferReduction(RuleCtx &c);
mlir::LogicalResult inferShapeOp(RuleCtx &c);
mlir::LogicalResult inferMovement(RuleCtx &c);

} // namespace lockstep::shape

#endif
