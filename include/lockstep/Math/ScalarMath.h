//===- ScalarMath.h - Lockstep's own fp32 math sequences --------*- C++ -*-===//
//
// Builders of the portable profile's elementary functions as sequences of
// correctly rounded arith ops (addf, subf, mulf, divf), explicit math.fma,
// math.sqrt, integer and bit ops, comparisons and selects. No libm call, no
// intrinsic, no fast-math flag: the same sequence gives the same bits on
// every IEEE-754 target. The algorithms are described in the files of
// lib/Math and in docs/math.md.
//
// Every builder takes and returns values of type f32 or a statically shaped
// vector or tensor of f32 (computed elementwise); the caller widens narrower
// floats first.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_MATH_SCALARMATH_H
#define LOCKSTEP_MATH_SCALARMATH_H

#include "mlir/IR/Builders.h"

namespace lockstep::math {

/// True when `t` is f32 or a statically shaped vector or tensor of f32, the
/// types the builders accept.
bool isSupportedF32Type(mlir::Type t);

mlir::Value buildExp(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildLog(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildTanh(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildErf(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildSin(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
mlir::Value buildCos(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);
/// x^y with the special cases of C's powf (pow(x, +-0) = 1, pow(1, y) = 1,
/// negative x with an integer y, zeros and infinities).
mlir::Value buildPow(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x,
                     mlir::Value y);
/// 1 / sqrt(x): two correctly rounded operations.
mlir::Value buildRsqrt(mlir::OpBuilder &b, mlir::Location loc, mlir::Value x);

} // namespace lockstep::math

#endif
