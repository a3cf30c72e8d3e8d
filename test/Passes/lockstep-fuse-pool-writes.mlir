// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-fuse-pool-writes))' | FileCheck %s

// The rows (RoPE of k, say) computed by a parallel loop, then a request map
// that the copy reads, then the copy of each token's row into its slot: the
// producer moves down past the map and stores each value in the pool too,
// guarded by the copy's bound; the copy loop goes.
// CHECK-LABEL: func.func @fused
// CHECK: scf.parallel (%{{.*}}) = (%c0) to (%[[T:.*]]) step
// CHECK: memref.store %{{.*}}, %[[MAP:.*]][
// CHECK: scf.parallel (%[[A:.*]], %[[H:.*]], %[[TOK:.*]], %[[D:.*]]) =
// CHECK: %[[V:.*]] = arith.mulf
// CHECK: memref.store %[[V]], %arg2[%[[A]], %[[H]], %[[TOK]], %[[D]]]
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[TOK]], %[[T]]
// CHECK: scf.if %[[IN]] {
// CHECK: memref.load %[[MAP]][%[[TOK]]]
// CHECK: %[[DST:.*]] = memref.subview %arg3
// CHECK: memref.store %[[V]], %[[DST]][%[[H]], %[[D]]]
// CHECK-NOT: lockstep.disjoint_iterations
func.func @fused(%x: memref<1x2x?x4xf32>, %y: memref<1x2x?x4xf32>, %k: memref<1x2x?x4xf32>,
                 %pool: memref<?x?x2x4xf32>, %pos: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %t = memref.dim %x, %c2 : memref<1x2x?x4xf32>
  scf.parallel (%a, %h, %i, %d) = (%c0, %c0, %c0, %c0) to (%c1, %c2, %t, %c4) step (%c1, %c1, %c1, %c1) {
    %u = memref.load %x[%a, %h, %i, %d] : memref<1x2x?x4xf32>
    %w = memref.load %y[%a, %h, %i, %d] : memref<1x2x?x4xf32>
    %v = arith.mulf %u, %w : f32
    memref.store %v, %k[%a, %h, %i, %d] : memref<1x2x?x4xf32>
    scf.reduce
  }
  %map = memref.alloc(%t) : memref<?xi64>
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %p = memref.load %pos[%i] : memref<?xi64>
    memref.store %p, %map[%i] : memref<?xi64>
    scf.reduce
  }
  %bs = memref.dim %pool, %c1 : memref<?x?x2x4xf32>
  scf.for %i = %c0 to %t step %c1 {
    %p = memref.load %map[%i] : memref<?xi64>
    %pi = arith.index_cast %p : i64 to index
    %blk = arith.divui %pi, %bs : index
    %slot = arith.remui %pi, %bs : index
    %row = memref.subview %k[0, 0, %i, 0] [1, 2, 1, 4] [1, 1, 1, 1] : memref<1x2x?x4xf32> to memref<2x4xf32, strided<[?, 1], offset: ?>>
    %dst = memref.subview %pool[%blk, %slot, 0, 0] [1, 1, 2, 4] [1, 1, 1, 1] : memref<?x?x2x4xf32> to memref<2x4xf32, strided<[4, 1], offset: ?>>
    scf.parallel (%h, %d) = (%c0, %c0) to (%c2, %c4) step (%c1, %c1) {
      %e = memref.load %row[%h, %d] : memref<2x4xf32, strided<[?, 1], offset: ?>>
      memref.store %e, %dst[%h, %d] : memref<2x4xf32, strided<[4, 1], offset: ?>>
      scf.reduce
    }
  } {lockstep.disjoint_iterations}
  return
}

// -----

// An op between them writes what the producer reads: moving the producer
// down would read the new value. Nothing changes.
// CHECK-LABEL: func.func @clobbered
// CHECK: memref.store %{{.*}}, %arg2[
// CHECK: memref.store %{{.*}}, %arg0[
// CHECK: scf.for
// CHECK: } {lockstep.disjoint_iterations}
func.func @clobbered(%x: memref<1x2x?x4xf32>, %y: memref<1x2x?x4xf32>, %k: memref<1x2x?x4xf32>,
                     %pool: memref<?x?x2x4xf32>, %pos: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.dim %x, %c2 : memref<1x2x?x4xf32>
  scf.parallel (%a, %h, %i, %d) = (%c0, %c0, %c0, %c0) to (%c1, %c2, %t, %c4) step (%c1, %c1, %c1, %c1) {
    %u = memref.load %x[%a, %h, %i, %d] : memref<1x2x?x4xf32>
    memref.store %u, %k[%a, %h, %i, %d] : memref<1x2x?x4xf32>
    scf.reduce
  }
  memref.store %zero, %x[%c0, %c0, %c0, %c0] : memref<1x2x?x4xf32>
  %bs = memref.dim %pool, %c1 : memref<?x?x2x4xf32>
  scf.for %i = %c0 to %t step %c1 {
    %p = memref.load %pos[%i] : memref<?xi64>
    %pi = arith.index_cast %p : i64 to index
    %blk = arith.divui %pi, %bs : index
    %slot = arith.remui %pi, %bs : index
    %row = memref.subview %k[0, 0, %i, 0] [1, 2, 1, 4] [1, 1, 1, 1] : memref<1x2x?x4xf32> to memref<2x4xf32, strided<[?, 1], offset: ?>>
    %dst = memref.subview %pool[%blk, %slot, 0, 0] [1, 1, 2, 4] [1, 1, 1, 1] : memref<?x?x2x4xf32> to memref<2x4xf32, strided<[4, 1], offset: ?>>
    scf.parallel (%h, %d) = (%c0, %c0) to (%c2, %c4) step (%c1, %c1) {
      %e = memref.load %row[%h, %d] : memref<2x4xf32, strided<[?, 1], offset: ?>>
      memref.store %e, %dst[%h, %d] : memref<2x4xf32, strided<[4, 1], offset: ?>>
      scf.reduce
    }
  } {lockstep.disjoint_iterations}
  return
}

// -----

// The producer writes the rows transposed (its store's indices are not its
// induction variables in order): its threads do not hold the copy's
// elements. Nothing changes.
// CHECK-LABEL: func.func @transposed
// CHECK: scf.for
// CHECK: } {lockstep.disjoint_iterations}
func.func @transposed(%x: memref<1x4x?x4xf32>, %k: memref<1x4x?x4xf32>,
                      %pool: memref<?x?x4x4xf32>, %pos: memref<?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %t = memref.dim %x, %c2 : memref<1x4x?x4xf32>
  scf.parallel (%a, %h, %i, %d) = (%c0, %c0, %c0, %c0) to (%c1, %c4, %t, %c4) step (%c1, %c1, %c1, %c1) {
    %u = memref.load %x[%a, %h, %i, %d] : memref<1x4x?x4xf32>
    memref.store %u, %k[%a, %d, %i, %h] : memref<1x4x?x4xf32>
    scf.reduce
  }
  %bs = memref.dim %pool, %c1 : memref<?x?x4x4xf32>
  scf.for %i = %c0 to %t step %c1 {
    %p = memref.load %pos[%i] : memref<?xi64>
    %pi = arith.index_cast %p : i64 to index
    %blk = arith.divui %pi, %bs : index
    %slot = arith.remui %pi, %bs : index
    %row = memref.subview %k[0, 0, %i, 0] [1, 4, 1, 4] [1, 1, 1, 1] : memref<1x4x?x4xf32> to memref<4x4xf32, strided<[?, 1], offset: ?>>
    %dst = memref.subview %pool[%blk, %slot, 0, 0] [1, 1, 4, 4] [1, 1, 1, 1] : memref<?x?x4x4xf32> to memref<4x4xf32, strided<[4, 1], offset: ?>>
    scf.parallel (%h, %d) = (%c0, %c0) to (%c4, %c4) step (%c1, %c1) {
      %e = memref.load %row[%h, %d] : memref<4x4xf32, strided<[?, 1], offset: ?>>
      memref.store %e, %dst[%h, %d] : memref<4x4xf32, strided<[4, 1], offset: ?>>
      scf.reduce
    }
  } {lockstep.disjoint_iterations}
  return
}
