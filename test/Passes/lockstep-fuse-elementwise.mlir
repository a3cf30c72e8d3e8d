// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-fuse-elementwise))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// A chain of elementwise ops, each result used once by the next, becomes
// one op computing the same scalar ops in the same order.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: %[[M:.*]] = arith.mulf
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[M]]
// CHECK-NEXT: linalg.yield %[[A]]
// CHECK-NOT: linalg.generic
func.func @chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %z : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.addf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// Not fused: an elementwise producer used twice (it would be computed
// twice), and an elementwise producer of a reduction (its chunked stages
// stay as the canonical form made them).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @kept(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.negf %a : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%sq : tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.addf %o, %a : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %m, %n, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}

// -----

// Not fused: a producer of two results (a merge step's weights over rows),
// each used once by the same consumer over rows and columns, which would
// get the producer's body once per result and compute it at every column.
// CHECK-LABEL: func.func @two_results
// CHECK: %[[W:.*]]:2 = linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[W]]#0, %[[W]]#1, %{{.*}} :
// CHECK-NOT: math.exp
// CHECK: return
#row = affine_map<(d0) -> (d0)>
#r = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @two_results(%m: tensor<4xf32>, %o: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %w:2 = linalg.generic {indexing_maps = [#row, #row, #row], iterator_types = ["parallel"]}
      ins(%m : tensor<4xf32>) outs(%e, %e : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %x: f32, %y: f32):
    %p = math.exp %a : f32
    %q = arith.negf %p : f32
    linalg.yield %p, %q : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %e2 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#r, #r, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w#0, %w#1, %o : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %out: f32):
    %p = arith.mulf %c, %a : f32
    %q = arith.addf %p, %b : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}
