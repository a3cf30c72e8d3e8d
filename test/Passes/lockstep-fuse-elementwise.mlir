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

// -----

// RoPE as lowered: x is a transpose of [1, T, 2, 4]; its rotate-half is a
// gather (tensor.extract at a shifted index) and its product with cos an
// elementwise op. The gather reads the transpose's input at the permuted
// index, the transpose (then used once) becomes a generic, and the chain
// x * cos + rot(x) * sin is one op reading x's input through the permuted
// map: no transpose is left, and the scalar ops are the same.
// CHECK-LABEL: func.func @rope
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[PERM:.*]], #{{.*}}, #{{.*}}, #{{.*}}]
// CHECK-SAME: ins(%arg0, %arg1, %arg2 :
// CHECK: %[[H:.*]] = linalg.index 1
// CHECK: %[[T:.*]] = linalg.index 2
// CHECK: %[[V:.*]] = tensor.extract %arg0[%c0, %[[T]], %[[H]], %{{.*}}] : tensor<1x?x2x4xf32>
// CHECK: %[[N:.*]] = arith.negf %[[V]]
// CHECK: %[[R:.*]] = arith.select %{{.*}}, %[[N]], %[[V]]
// CHECK: %[[RS:.*]] = arith.mulf %[[R]], %{{.*}}
// CHECK: %[[XC:.*]] = arith.mulf %{{.*}}, %{{.*}}
// CHECK: %[[S:.*]] = arith.addf %[[XC]], %[[RS]]
// CHECK: linalg.yield %[[S]]
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.transpose
// CHECK: return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bc = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
func.func @rope(%y: tensor<1x?x2x4xf32>, %cos: tensor<1x1x?x4xf32>, %sin: tensor<1x1x?x4xf32>) -> tensor<1x2x?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = tensor.dim %y, %c1 : tensor<1x?x2x4xf32>
  %e = tensor.empty(%t) : tensor<1x2x?x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x?x2x4xf32>) outs(%e : tensor<1x2x?x4xf32>) permutation = [0, 2, 1, 3]
  %xc = linalg.generic {indexing_maps = [#id4, #bc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %cos : tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>) outs(%e : tensor<1x2x?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x2x?x4xf32>
  %rot = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%e : tensor<1x2x?x4xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %c2 = arith.constant 2 : index
    %cm2 = arith.constant -2 : index
    %hi = arith.addi %i3, %c2 : index
    %lo = arith.addi %i3, %cm2 : index
    %second = arith.cmpi uge, %i3, %c2 : index
    %at = arith.select %second, %lo, %hi : index
    %true = arith.constant true
    %false = arith.constant false
    %neg = arith.select %second, %false, %true : i1
    %v = tensor.extract %x[%i0, %i1, %i2, %at] : tensor<1x2x?x4xf32>
    %n = arith.negf %v : f32
    %r = arith.select %neg, %n, %v : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x4xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #bc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%rot, %sin : tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>) outs(%e : tensor<1x2x?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x2x?x4xf32>
  %s = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%xc, %rs : tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) outs(%e : tensor<1x2x?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.addf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x2x?x4xf32>
  return %s : tensor<1x2x?x4xf32>
}
