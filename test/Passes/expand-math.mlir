// RUN: lockstep-opt %s --split-input-file --lockstep-expand-math | FileCheck %s

// exp: round(x / ln2) by an fma against 1.5 * 2^23, Cody-Waite reduction by
// fma, a polynomial in Horner form with fma, and the result scaled by 2^k
// built from its bits ((k + 127) << 23), in two halves.
// CHECK-LABEL: func.func @exp
// CHECK-NOT: math.exp
// CHECK: arith.cmpf uno
// CHECK: math.fma %{{.*}}, %{{.*}}, %{{.*}} : f32
// CHECK: arith.subf
// CHECK: math.fma
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.shrsi
// CHECK: arith.shli
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: arith.mulf
// CHECK: arith.mulf
// CHECK: arith.select
// CHECK-NOT: math.exp
// CHECK: return
func.func @exp(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// -----

// log reads the exponent from the bits (a shift by 23) and evaluates a
// polynomial in the exact f = m - 1.
// CHECK-LABEL: func.func @log
// CHECK-NOT: math.log
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.shrsi
// CHECK: arith.sitofp
// CHECK: math.fma
// CHECK-NOT: math.log
// CHECK: return
func.func @log(%x: f32) -> f32 {
  %0 = math.log %x : f32
  return %0 : f32
}

// -----

// tanh and erf use the expanded exp for large arguments: no math op but fma
// (and sqrt nowhere) remains.
// CHECK-LABEL: func.func @tanh_erf
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK: arith.divf
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.exp
// CHECK: return
func.func @tanh_erf(%x: f32) -> (f32, f32) {
  %0 = math.tanh %x : f32
  %1 = math.erf %x : f32
  return %0, %1 : f32, f32
}

// -----

// sin and cos reduce large arguments by Payne-Hanek: 64-bit integer products
// of the mantissa with a window of the bits of 2/pi.
// CHECK-LABEL: func.func @sin_cos
// CHECK-NOT: math.sin
// CHECK-NOT: math.cos
// CHECK: arith.muli %{{.*}}, %{{.*}} : i64
// CHECK: arith.sitofp %{{.*}} : i64 to f32
// CHECK-NOT: math.sin
// CHECK-NOT: math.cos
// CHECK: return
func.func @sin_cos(%x: f32) -> (f32, f32) {
  %0 = math.sin %x : f32
  %1 = math.cos %x : f32
  return %0, %1 : f32, f32
}

// -----

// pow: the integer test of the exponent converts it to i32, and the result
// goes through the same exp core.
// CHECK-LABEL: func.func @pow
// CHECK-NOT: math.powf
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: arith.divf
// CHECK: math.fma
// CHECK-NOT: math.powf
// CHECK: return
func.func @pow(%x: f32, %y: f32) -> f32 {
  %0 = math.powf %x, %y : f32
  return %0 : f32
}

// -----

// rsqrt is a correctly rounded sqrt and a correctly rounded division.
// CHECK-LABEL: func.func @rsqrt
// CHECK-NOT: math.rsqrt
// CHECK: %[[S:.*]] = math.sqrt %arg0 : f32
// CHECK: arith.divf %{{.*}}, %[[S]] : f32
func.func @rsqrt(%x: f32) -> f32 {
  %0 = math.rsqrt %x : f32
  return %0 : f32
}

// -----

// f16 and bf16 are widened to f32 and the result rounded back; f64 stays a
// math op (outside the portable fp32 profile).
// CHECK-LABEL: func.func @widths
// CHECK: arith.extf %arg0 : f16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %arg1 : bf16 to f32
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: math.exp %arg2 : f64
// CHECK-NOT: math.exp
// CHECK: return
func.func @widths(%h: f16, %b: bf16, %d: f64) -> (f16, bf16, f64) {
  %0 = math.exp %h : f16
  %1 = math.tanh %b : bf16
  %2 = math.exp %d : f64
  return %0, %1, %2 : f16, bf16, f64
}

// -----

// Vectors are expanded elementwise with splat constants.
// CHECK-LABEL: func.func @vector
// CHECK-NOT: math.exp
// CHECK: arith.constant dense<{{.*}}> : vector<4xf32>
// CHECK: math.fma %{{.*}} : vector<4xf32>
// CHECK: arith.bitcast %{{.*}} : vector<4xi32> to vector<4xf32>
// CHECK-NOT: math.exp
// CHECK: return
func.func @vector(%x: vector<4xf32>) -> vector<4xf32> {
  %0 = math.exp %x : vector<4xf32>
  return %0 : vector<4xf32>
}

// -----

// The pass reaches into linalg.generic bodies over tensors (where
// convert-onnx-to-linalg puts elementwise math).
#map = affine_map<(d0) -> (d0)>
// CHECK-LABEL: func.func @generic
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN:.*]]: f32, %{{.*}}: f32):
// CHECK-NOT: math.erf
// CHECK: math.fma
// CHECK: linalg.yield
func.func @generic(%x: tensor<?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %0 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel"]}
      ins(%x : tensor<?xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %e = math.erf %in : f32
    linalg.yield %e : f32
  } -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
