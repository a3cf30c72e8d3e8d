// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-forward-fills))' | FileCheck %s

// A combine over 3 chunks whose output was just filled with zero, a partial
// buffer in between that is not the output: the fill goes, and the body
// starts each output from the zero at the first chunk.
#p = affine_map<(t, j, n) -> (t, j, n)>
#o = affine_map<(t, j, n) -> (t, n)>
// CHECK-LABEL: func.func @combine
// CHECK-NOT: linalg.fill ins(%{{.*}} : f32) outs(%arg1
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg2
// CHECK: linalg.generic
// CHECK: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[J]], %c0
// CHECK: %[[START:.*]] = arith.select %[[FIRST]], %[[ZERO:.*]], %[[ACC]]
// CHECK: arith.addf %[[START]], %[[IN]]
func.func @combine(%parts: memref<?x3x32xf32>, %out: memref<?x32xf32>, %other: memref<4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<?x32xf32>)
  linalg.fill ins(%zero : f32) outs(%other : memref<4xf32>)
  linalg.generic {indexing_maps = [#p, #o], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%parts : memref<?x3x32xf32>) outs(%out : memref<?x32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// A norm's combine writes [t, 0] of a [T, 1] buffer (the constant 0 on a
// dim of size 1 names each element once): forwarded. The same map on a dim
// of size 2 writes only half of it: kept.
#pc = affine_map<(t, j) -> (t, j)>
#oc = affine_map<(t, j) -> (t, 0)>
// CHECK-LABEL: func.func @keepdim
// CHECK-NOT: linalg.fill ins(%{{.*}} : f32) outs(%arg1
// CHECK: linalg.generic
// CHECK: arith.select
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg2
// CHECK: linalg.generic
// CHECK-NOT: arith.select
func.func @keepdim(%parts: memref<?x8xf32>, %out: memref<?x1xf32>, %half: memref<?x2xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<?x1xf32>)
  linalg.generic {indexing_maps = [#pc, #oc], iterator_types = ["parallel", "reduction"]}
      ins(%parts : memref<?x8xf32>) outs(%out : memref<?x1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%half : memref<?x2xf32>)
  linalg.generic {indexing_maps = [#pc, #oc], iterator_types = ["parallel", "reduction"]}
      ins(%parts : memref<?x8xf32>) outs(%half : memref<?x2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}

// -----

// Kept: a reduction over a dynamic number of chunks (none would leave the
// output unfilled), a fill read in between (by a copy), and a fill of a
// view that the generic does not write whole.
#p2 = affine_map<(t, j, n) -> (t, j, n)>
#o2 = affine_map<(t, j, n) -> (t, n)>
#s = affine_map<(t, k) -> (t, k)>
#r = affine_map<(t, k) -> (t)>
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: linalg.fill
// CHECK-NOT: arith.select
func.func @kept(%parts: memref<?x?x32xf32>, %out: memref<?x32xf32>, %x: memref<8x16xf32>,
                %sums: memref<8xf32>, %copy: memref<8xf32>, %m: memref<8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#p2, #o2], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%parts : memref<?x?x32xf32>) outs(%out : memref<?x32xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  linalg.fill ins(%zero : f32) outs(%sums : memref<8xf32>)
  linalg.copy ins(%sums : memref<8xf32>) outs(%copy : memref<8xf32>)
  linalg.generic {indexing_maps = [#s, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x16xf32>) outs(%sums : memref<8xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  %col = memref.subview %m[0, 0] [8, 1] [1, 1] : memref<8x4xf32> to memref<8xf32, strided<[4]>>
  linalg.fill ins(%zero : f32) outs(%m : memref<8x4xf32>)
  linalg.generic {indexing_maps = [#s, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<8x16xf32>) outs(%col : memref<8xf32, strided<[4]>>) {
  ^bb0(%in: f32, %acc: f32):
    %s = arith.addf %acc, %in : f32
    linalg.yield %s : f32
  }
  return
}
