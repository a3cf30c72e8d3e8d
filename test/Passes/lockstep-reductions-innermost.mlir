// RUN: lockstep-opt %s --split-input-file --lockstep-reductions-innermost | FileCheck %s

// A chunked projection [1, T, K, N] with its reduction third: N moves before
// K, and the maps follow; the body (the fold) is unchanged.
#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#w = affine_map<(d0, d1, d2, d3) -> (d2, d3)>
#y = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3) -> (d3, d2)>
// CHECK-DAG: #[[Y:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-LABEL: func.func @projection
// CHECK: linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[Y]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[W2:.*]]: f32, %[[OUT:.*]]: f32):
// CHECK-NEXT: math.fma %[[IN]], %[[W2]], %[[OUT]]
func.func @projection(%x: memref<1x?x64xf32>, %w: memref<64x32xf32>, %y: memref<1x?x32xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y],
                  iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : memref<1x?x64xf32>, memref<64x32xf32>) outs(%y : memref<1x?x32xf32>) {
  ^bb0(%in: f32, %wt: f32, %out: f32):
    %0 = math.fma %in, %wt, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Two reductions keep their relative order (the chunk index before the
// position in the chunk), and linalg.index follows its dim.
#a = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#o = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d1, d0, d2)>
// CHECK-DAG: #[[O:.*]] = affine_map<(d0, d1, d2) -> (d0)>
// CHECK-LABEL: func.func @two_reductions
// CHECK: iterator_types = ["parallel", "reduction", "reduction"]
// CHECK: linalg.index 1
func.func @two_reductions(%a: memref<4x?x16xf32>, %o: memref<?xf32>) {
  linalg.generic {indexing_maps = [#a, #o],
                  iterator_types = ["reduction", "parallel", "reduction"]}
      ins(%a : memref<4x?x16xf32>) outs(%o : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %c = linalg.index 0 : index
    %ci = arith.index_cast %c : index to i32
    %cf = arith.sitofp %ci : i32 to f32
    %p = arith.mulf %in, %cf : f32
    %0 = arith.addf %p, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Already in order: untouched.
// CHECK-LABEL: func.func @in_order
// CHECK: iterator_types = ["parallel", "reduction"]
#m = affine_map<(d0, d1) -> (d0, d1)>
#r = affine_map<(d0, d1) -> (d0)>
func.func @in_order(%a: memref<?x8xf32>, %o: memref<?xf32>) {
  linalg.generic {indexing_maps = [#m, #r], iterator_types = ["parallel", "reduction"]}
      ins(%a : memref<?x8xf32>) outs(%o : memref<?xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.addf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}
