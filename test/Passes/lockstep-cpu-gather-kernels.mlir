// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-cpu-gather-kernels{vectors=2}))' | FileCheck %s

#q = affine_map<(b, h, g, i, k, d) -> (b, h, g, i, d)>
#r = affine_map<(b, h, g, i, k, d) -> (i, k)>
#o = affine_map<(b, h, g, i, k, d) -> (b, h, g, i, k)>

// The paged attention's scores with one query head a key head (g's extent
// 1, as in GPT-2: nothing to share): the key of position k read from the pool
// at row rows[i, k], scaled, fma'd with q over d. Lanes over k (the output's
// last index), 2 vectors of 8 keys a work item. The key load's last index is
// d, so each key's 8 steps d0 .. d0 + 7 are one vector load at its row (the
// rows of 8 keys are one vector load), and the 8 x 8 tile is transposed with
// shuffles into a vector of the 8 keys for each d; when the 8 keys' rows are
// the same at run time (keys past the token's position, all clamped to its
// row), that row's 8 values are loaded one at a time and broadcast instead
// (the same vectors, without shuffles). Then, for each d from d0
// in order: q[d] loaded and broadcast, the keys scaled by the broadcast
// scalar scale, and the body's fma, q first, into the accumulator; then the
// next 8 keys' tile and steps (one tile live at a time). A last
// block of fewer than 16 keys runs 8 keys at a time the same way, then one
// key at a time with the generic's scalar body.
// CHECK-LABEL: func.func @scores
// CHECK-NOT: linalg.generic
// CHECK: %[[L:.*]] = memref.dim %arg1, %c1
// CHECK: %[[NB:.*]] = arith.ceildivui %[[L]], %c16
// CHECK: scf.parallel (%[[P:.*]]) =
// CHECK: %[[BLK:.*]] = arith.remui %[[P]], %[[NB]]
// CHECK: %[[K0:.*]] = arith.muli %[[BLK]], %c16
// CHECK: scf.if
// CHECK: %[[K1:.*]] = arith.addi %[[K0]], %c8
// CHECK: %[[A0:.*]] = vector.load %arg4[{{.*}}, %[[K0]]] : memref<1x2x1x?x?xf32>, vector<8xf32>
// CHECK: %[[A1:.*]] = vector.load %arg4[{{.*}}, %[[K1]]] : memref<1x2x1x?x?xf32>, vector<8xf32>
// CHECK: %[[R:.*]]:2 = scf.for %[[D:.*]] = %c0{{.*}} to %c16 step %c8{{.*}} iter_args(%[[ACC0:.*]] = %[[A0]], %[[ACC1:.*]] = %[[A1]])
// CHECK: %[[D1:.*]] = arith.addi %[[D]], %c1
// CHECK: %[[D7:.*]] = arith.addi %[[D]], %c7
// CHECK: %[[Q:.*]] = memref.load %arg0[{{.*}}, %[[D]]] : memref<1x2x1x?x16xf32>
// CHECK: %[[ROWS:.*]] = vector.load %arg1[%{{.*}}, %[[K0]]] : memref<?x?xi64>, vector<8xi64>
// CHECK: %[[RI:.*]] = arith.index_cast %[[ROWS]] : vector<8xi64> to vector<8xindex>
// CHECK: %[[R0:.*]] = vector.extract %[[RI]][0]
// CHECK: %[[R7:.*]] = vector.extract %[[RI]][7]
// CHECK: %[[F:.*]] = vector.extract %[[RI]][0]
// CHECK: %[[FB:.*]] = vector.broadcast %[[F]] : index to vector<8xindex>
// CHECK: %[[EQ:.*]] = arith.cmpi eq, %[[RI]], %[[FB]] : vector<8xindex>
// CHECK: %[[SAME:.*]] = vector.reduction <and>, %[[EQ]] : vector<8xi1> into i1
// CHECK: %[[TILE:.*]]:8 = scf.if %[[SAME]]
// CHECK: %[[B0:.*]] = memref.load %arg2[%[[R0]], %{{.*}}, %[[D]]] : memref<?x2x16xf32>
// CHECK: vector.broadcast %[[B0]] : f32 to vector<8xf32>
// CHECK-COUNT-7: memref.load %arg2[%[[R0]],
// CHECK-NOT: vector.shuffle
// CHECK: } else {
// CHECK: %[[X0:.*]] = vector.load %arg2[%[[R0]], %{{.*}}, %[[D]]] : memref<?x2x16xf32>, vector<8xf32>
// CHECK: %[[X1:.*]] = vector.load %arg2[%{{.*}}, %{{.*}}, %[[D]]] : memref<?x2x16xf32>, vector<8xf32>
// CHECK: vector.load %arg2[%[[R7]], %{{.*}}, %[[D]]]
// CHECK: %[[LO:.*]] = vector.shuffle %[[X0]], %[[X1]] [0, 8, 1, 9, 4, 12, 5, 13]
// CHECK: %[[T0:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK: %[[T4:.*]] = vector.shuffle %{{.*}}, %{{.*}} [4, 5, 6, 7, 12, 13, 14, 15]
// CHECK: %[[T1:.*]] = vector.shuffle %{{.*}}, %{{.*}} [0, 1, 2, 3, 8, 9, 10, 11]
// CHECK: scf.yield %[[T0]], %[[T1]],
// CHECK: %[[S:.*]] = memref.load %arg3[] : memref<f32>
// CHECK: %[[SV:.*]] = vector.broadcast %[[S]] : f32 to vector<8xf32>
// CHECK: %[[KS:.*]] = arith.mulf %[[TILE]]#0, %[[SV]] : vector<8xf32>
// CHECK: %[[QV:.*]] = vector.broadcast %[[Q]] : f32 to vector<8xf32>
// CHECK: %[[F0:.*]] = math.fma %[[QV]], %[[KS]], %[[ACC0]] : vector<8xf32>
// CHECK: memref.load %arg0[{{.*}}, %[[D1]]] : memref<1x2x1x?x16xf32>
// CHECK: arith.mulf %[[TILE]]#1, %{{.*}} : vector<8xf32>
// CHECK: %[[F1:.*]] = math.fma %{{.*}}, %{{.*}}, %[[F0]] : vector<8xf32>
// CHECK: memref.load %arg0[{{.*}}, %[[D7]]] : memref<1x2x1x?x16xf32>
// CHECK: %[[F7:.*]] = math.fma
// CHECK: vector.load %arg1[%{{.*}}, %[[K1]]] : memref<?x?xi64>, vector<8xi64>
// CHECK-COUNT-24: vector.shuffle
// CHECK: %[[G0:.*]] = math.fma %{{.*}}, %{{.*}}, %[[ACC1]] : vector<8xf32>
// CHECK: math.fma %{{.*}}, %{{.*}}, %[[G0]] : vector<8xf32>
// CHECK-COUNT-5: math.fma
// CHECK: %[[G7:.*]] = math.fma
// CHECK: scf.yield %[[F7]], %[[G7]]
// CHECK: vector.store %[[R]]#0, %arg4[{{.*}}, %[[K0]]]
// CHECK: vector.store %[[R]]#1, %arg4[{{.*}}, %[[K1]]]
// CHECK: } else {
// CHECK: scf.for %[[V:.*]] = %[[K0]] to %{{.*}} step %c8
// CHECK: scf.for {{.*}} step %c8{{.*}} iter_args({{.*}}) -> (vector<8xf32>)
// CHECK: vector.shuffle
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %[[L]] step %c1
// CHECK: %[[INIT:.*]] = memref.load %arg4[{{.*}}, %[[K]]]
// CHECK: scf.for %[[DS:.*]] = {{.*}} step %c1{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: %[[RS:.*]] = memref.load %arg1[%{{.*}}, %[[K]]] : memref<?x?xi64>
// CHECK: %[[RSI:.*]] = arith.index_cast %[[RS]] : i64 to index
// CHECK: memref.load %arg2[%[[RSI]], %{{.*}}, %[[DS]]]
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: math.fma %{{.*}}, %{{.*}}, %[[ACC]] : f32
func.func @scores(%q: memref<1x2x1x?x16xf32>, %rows: memref<?x?xi64>, %pool: memref<?x2x16xf32>,
                  %scale: memref<f32>, %out: memref<1x2x1x?x?xf32>) {
  linalg.generic {indexing_maps = [#q, #r, #o],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %rows : memref<1x2x1x?x16xf32>, memref<?x?xi64>) outs(%out : memref<1x2x1x?x?xf32>) {
  ^bb0(%in: f32, %row: i64, %acc: f32):
    %d = linalg.index 5 : index
    %h = linalg.index 1 : index
    %ri = arith.index_cast %row : i64 to index
    %k = memref.load %pool[%ri, %h, %d] : memref<?x2x16xf32>
    %s = memref.load %scale[] : memref<f32>
    %ks = arith.mulf %k, %s : f32
    %f = math.fma %in, %ks, %acc : f32
    linalg.yield %f : f32
  }
  return
}

// -----

#q = affine_map<(b, h, g, i, k, d) -> (b, h, g, i, d)>
#r = affine_map<(b, h, g, i, k, d) -> (i, k)>
#o = affine_map<(b, h, g, i, k, d) -> (b, h, g, i, k)>

// Three query heads a key head (g's extent 3): the key rows depend on b, h,
// i, k and d but not on g, so a work item takes all 3 points of g and
// shares each tile (8 row loads, 24 shuffles) among them; vectors is capped
// to 8 / 3 = 2 accumulators a point (6 in all). The work items: g's extent
// divided by 3. One vector of lanes after another: its tile, then for each d
// in order the fma of each of the 3 points (q at g = 3g', 3g'+1, 3g'+2),
// then the next vector's tile. Each accumulator still takes d in order.
// CHECK-LABEL: func.func @shared_scores
// CHECK: %[[G3:.*]] = arith.divui %c3{{.*}}, %c3
// CHECK: scf.parallel
// CHECK: %[[GP:.*]] = arith.remui %{{.*}}, %[[G3]]
// CHECK: %[[G0:.*]] = arith.muli %[[GP]], %c3
// CHECK: %[[G1:.*]] = arith.addi %[[G0]], %c1
// CHECK: %[[G2:.*]] = arith.addi %[[G0]], %c2
// CHECK: scf.if
// CHECK-COUNT-6: vector.load %arg4
// CHECK: scf.for %[[D:.*]] = {{.*}} step %c8{{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}, %[[G0]], %{{.*}}, %[[D]]]
// CHECK-COUNT-8: vector.load %arg2
// CHECK-COUNT-24: vector.shuffle
// CHECK: math.fma
// CHECK-NOT: vector.load %arg2
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}, %[[G1]], %{{.*}}, %[[D]]]
// CHECK: math.fma
// CHECK-NOT: vector.load %arg2
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}, %[[G2]], %{{.*}}, %[[D]]]
// CHECK: math.fma
// CHECK-COUNT-21: math.fma
// CHECK-NOT: math.fma
// CHECK: memref.load %arg0[%{{.*}}, %{{.*}}, %[[G0]], %{{.*}}, %[[D]]]
// CHECK-COUNT-8: vector.load %arg2
// CHECK-COUNT-24: vector.shuffle
// CHECK-COUNT-24: math.fma
// CHECK-NOT: math.fma
// CHECK: scf.yield
// CHECK-SAME: : vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>
// CHECK-COUNT-6: vector.store
// The last keys: 8 at a time, the 3 points' accumulators together, then one
// key at a time, one point after another.
// CHECK: } else {
// CHECK: scf.for %{{.*}} step %c8
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: scf.for %[[K:.*]] = %{{.*}} to %{{.*}} step %c1
// CHECK: memref.load %arg4[%{{.*}}, %{{.*}}, %[[G0]], %{{.*}}, %[[K]]]
// CHECK: memref.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}, %[[G0]], %{{.*}}, %[[K]]]
// CHECK: memref.load %arg4[%{{.*}}, %{{.*}}, %[[G1]], %{{.*}}, %[[K]]]
// CHECK: memref.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}, %[[G1]], %{{.*}}, %[[K]]]
// CHECK: memref.load %arg4[%{{.*}}, %{{.*}}, %[[G2]], %{{.*}}, %[[K]]]
// CHECK: memref.store %{{.*}}, %arg4[%{{.*}}, %{{.*}}, %[[G2]], %{{.*}}, %[[K]]]
func.func @shared_scores(%q: memref<1x2x3x?x16xf32>, %rows: memref<?x?xi64>, %pool: memref<?x2x16xf32>,
                         %scale: memref<f32>, %out: memref<1x2x3x?x?xf32>) {
  linalg.generic {indexing_maps = [#q, #r, #o],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %rows : memref<1x2x3x?x16xf32>, memref<?x?xi64>) outs(%out : memref<1x2x3x?x?xf32>) {
  ^bb0(%in: f32, %row: i64, %acc: f32):
    %d = linalg.index 5 : index
    %h = linalg.index 1 : index
    %ri = arith.index_cast %row : i64 to index
    %k = memref.load %pool[%ri, %h, %d] : memref<?x2x16xf32>
    %s = memref.load %scale[] : memref<f32>
    %ks = arith.mulf %k, %s : f32
    %f = math.fma %in, %ks, %acc : f32
    linalg.yield %f : f32
  }
  return
}

// -----

#p = affine_map<(b, h, g, i, j, e, c) -> (b, h, g, i, j, c)>
#r = affine_map<(b, h, g, i, j, e, c) -> (i, j, c)>
#o = affine_map<(b, h, g, i, j, e, c) -> (b, h, g, i, j, e)>

// A chunk's value product: the value row of key c (of chunk j) read from
// the pool at rows[i, j, c], its columns e the lanes: one vector load of 8
// columns (contiguous), p broadcast. Dv = 16 is one block of 2 vectors
// (always whole).
// CHECK-LABEL: func.func @values
// CHECK-NOT: linalg.generic
// CHECK: arith.ceildivui %c16, %c16
// CHECK: scf.parallel
// CHECK: %[[E0:.*]] = arith.muli %{{.*}}, %c16
// CHECK: scf.if
// CHECK: %[[E1:.*]] = arith.addi %[[E0]], %c8
// CHECK: scf.for %[[C:.*]] = %c0{{.*}} to %c64 step %c1{{.*}} iter_args(%[[ACC0:.*]] = %{{.*}}, %[[ACC1:.*]] = %{{.*}})
// CHECK: %[[PV:.*]] = memref.load %arg0[{{.*}}, %[[C]]] : memref<1x2x2x?x?x64xf32>
// CHECK: %[[ROW:.*]] = memref.load %arg1[{{.*}}, %[[C]]] : memref<?x?x64xi64, strided<[?, 64, 1]>>
// CHECK: %[[RI:.*]] = arith.index_cast %[[ROW]] : i64 to index
// CHECK: %[[V0:.*]] = vector.load %arg2[%[[RI]], %{{.*}}, %[[E0]]] : memref<?x2x16xf32>, vector<8xf32>
// CHECK: %[[PB:.*]] = vector.broadcast %[[PV]] : f32 to vector<8xf32>
// CHECK: math.fma %[[PB]], %[[V0]], %[[ACC0]] : vector<8xf32>
// CHECK: vector.load %arg2[%{{.*}}, %{{.*}}, %[[E1]]] : memref<?x2x16xf32>, vector<8xf32>
// CHECK: math.fma %{{.*}}, %{{.*}}, %[[ACC1]] : vector<8xf32>
func.func @values(%p: memref<1x2x2x?x?x64xf32>, %rows: memref<?x?x64xi64, strided<[?, 64, 1]>>,
                  %pool: memref<?x2x16xf32>, %out: memref<1x2x2x?x?x16xf32>) {
  linalg.generic {indexing_maps = [#p, #r, #o],
                  iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %rows : memref<1x2x2x?x?x64xf32>, memref<?x?x64xi64, strided<[?, 64, 1]>>)
      outs(%out : memref<1x2x2x?x?x16xf32>) {
  ^bb0(%in: f32, %row: i64, %acc: f32):
    %e = linalg.index 5 : index
    %h = linalg.index 1 : index
    %ri = arith.index_cast %row : i64 to index
    %v = memref.load %pool[%ri, %h, %e] : memref<?x2x16xf32>
    %f = math.fma %in, %v, %acc : f32
    linalg.yield %f : f32
  }
  return
}

// -----

#p = affine_map<(i, e, c) -> (i, c)>
#r = affine_map<(i, e, c) -> (i, c)>
#o = affine_map<(i, e, c) -> (i, e)>

// 12 value columns: one vector a block (vectors capped at 12 / 8), the
// second block's 4 columns one at a time with the scalar body. The pool's
// head index is a constant defined outside the body.
// CHECK-LABEL: func.func @values_tail
// CHECK: arith.ceildivui %c12, %c8
// CHECK: scf.if
// CHECK: scf.for {{.*}} -> (vector<8xf32>)
// CHECK: vector.load %arg2[%{{.*}}, %c0, %{{.*}}] : memref<?x1x12xf32>, vector<8xf32>
// CHECK: } else {
// CHECK: scf.for {{.*}} step %c8
// CHECK: scf.for %[[E:.*]] = %{{.*}} to %c12 step %c1
// CHECK: scf.for {{.*}} -> (f32)
// CHECK: memref.load %arg2[%{{.*}}, %c0, %[[E]]] : memref<?x1x12xf32>
// CHECK: math.fma %{{.*}}, %{{.*}}, %{{.*}} : f32
func.func @values_tail(%p: memref<?x32xf32>, %rows: memref<?x32xi64>, %pool: memref<?x1x12xf32>,
                       %out: memref<?x12xf32>) {
  %c0 = arith.constant 0 : index
  linalg.generic {indexing_maps = [#p, #r, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p, %rows : memref<?x32xf32>, memref<?x32xi64>) outs(%out : memref<?x12xf32>) {
  ^bb0(%in: f32, %row: i64, %acc: f32):
    %e = linalg.index 1 : index
    %ri = arith.index_cast %row : i64 to index
    %v = memref.load %pool[%ri, %c0, %e] : memref<?x1x12xf32>
    %f = math.fma %in, %v, %acc : f32
    linalg.yield %f : f32
  }
  return
}

// -----

#x = affine_map<(t, n, k) -> (t, k)>
#w = affine_map<(t, n, k) -> (k, n)>
#y = affine_map<(t, n, k) -> (t, n)>

// A contraction that gathers nothing (lockstep-cpu-microkernels' kind) is
// left alone, and so is a gather that reads the output's own buffer (one
// output's stores could feed another's loads).
// CHECK-LABEL: func.func @not_gathers
// CHECK-NOT: scf.parallel
// CHECK: linalg.generic
// CHECK: linalg.generic
func.func @not_gathers(%x: memref<?x64xf32>, %w: memref<64x32xf32>, %rows: memref<?x64xi64>,
                       %y: memref<?x32xf32>) {
  linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x64xf32>, memref<64x32xf32>) outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %f = math.fma %a, %b, %acc : f32
    linalg.yield %f : f32
  }
  linalg.generic {indexing_maps = [#x, #x, #y], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %rows : memref<?x64xf32>, memref<?x64xi64>) outs(%y : memref<?x32xf32>) {
  ^bb0(%a: f32, %row: i64, %acc: f32):
    %n = linalg.index 1 : index
    %ri = arith.index_cast %row : i64 to index
    %v = memref.load %y[%ri, %n] : memref<?x32xf32>
    %f = math.fma %a, %v, %acc : f32
    linalg.yield %f : f32
  }
  return
}
