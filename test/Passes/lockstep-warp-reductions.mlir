// RUN: lockstep-opt %s --split-input-file --lockstep-warp-reductions | FileCheck %s

// A norm's partial sums (T x 8 outputs of 256 values): a warp an output, 8
// a block of 256 threads. In each slab of 32 values lane l loads and squares
// value k0 + l (none past the end); every lane then folds the slab's 32
// squares in order, each shuffled from its lane, with the fold's own ops
// (the forwarded fill's select on k == 0 included, k recomputed as k0 + j);
// lane 0 stores the result.
// CHECK-LABEL: func.func @norm_partials
// CHECK: %[[LANES:.*]] = arith.muli %[[POINTS:.*]], %c32
// CHECK: %[[GRID:.*]] = arith.ceildivui %[[LANES]], %c256
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[GRID]], {{.*}}) threads({{.*}}) in
// CHECK: %[[TID:.*]] = arith.addi
// CHECK: %[[POINT:.*]] = arith.divui %[[TID]], %c32
// CHECK: %[[LANE:.*]] = arith.remui %[[TID]], %c32
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[POINT]], %[[POINTS]]
// CHECK: scf.if %[[IN]] {
// CHECK: %[[INIT:.*]] = memref.load %arg1
// CHECK: %[[SUM:.*]] = scf.for %[[K0:.*]] = %c0 to %c256 step %c32{{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32) {
// CHECK: %[[K:.*]] = arith.addi %[[K0]], %[[LANE]]
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[K]], %c256
// CHECK: %[[MINE:.*]] = scf.if %[[VALID]] -> (f32) {
// CHECK: %[[X:.*]] = memref.load %arg0
// CHECK: %[[SQ:.*]] = arith.mulf %[[X]], %[[X]]
// CHECK: scf.yield %[[SQ]]
// CHECK: } else {
// CHECK: scf.yield %cst
// CHECK: %[[LEFT:.*]] = arith.subi %c256, %[[K0]]
// CHECK: %[[N:.*]] = arith.minui %[[LEFT]], %c32
// CHECK: %[[SLAB:.*]] = scf.for %[[J:.*]] = %{{.*}} to %[[N]] step %{{.*}} iter_args(%[[A:.*]] = %[[ACC]]) -> (f32) {
// CHECK: %[[KJ:.*]] = arith.addi %[[K0]], %[[J]]
// CHECK: %[[FROM:.*]] = arith.index_castui %[[J]] : index to i32
// CHECK: %[[GOT:.*]], %{{.*}} = gpu.shuffle idx %[[MINE]], %[[FROM]], %c32_i32 : f32
// CHECK: %[[FIRST:.*]] = arith.cmpi eq, %[[KJ]], %c0
// CHECK: %[[START:.*]] = arith.select %[[FIRST]], %{{.*}}, %[[A]]
// CHECK: %[[NEXT:.*]] = arith.addf %[[START]], %[[GOT]]
// CHECK: scf.yield %[[NEXT]]
// CHECK: scf.yield %[[SLAB]]
// CHECK: %[[LANE0:.*]] = arith.cmpi eq, %[[LANE]], %c0
// CHECK: scf.if %[[LANE0]] {
// CHECK-NEXT: memref.store %[[SUM]], %arg1
// CHECK-NOT: scf.parallel
func.func @norm_partials(%x: memref<?x2048xf32>, %out: memref<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %t = memref.dim %x, %c0 : memref<?x2048xf32>
  scf.parallel (%i, %c) = (%c0, %c0) to (%t, %c8) step (%c1, %c1) {
    %init = memref.load %out[%i, %c] : memref<?x8xf32>
    %s = scf.for %k = %c0 to %c256 step %c1 iter_args(%a = %init) -> (f32) {
      %base = arith.muli %c, %c256 : index
      %col = arith.addi %base, %k : index
      %v = memref.load %x[%i, %col] : memref<?x2048xf32>
      %first = arith.cmpi eq, %k, %c0 : index
      %from = arith.select %first, %zero, %a : f32
      %q = arith.mulf %v, %v : f32
      %n = arith.addf %from, %q : f32
      scf.yield %n : f32
    }
    memref.store %s, %out[%i, %c] : memref<?x8xf32>
    scf.reduce
  }
  return
}

// -----

// Left to lockstep-map-to-gpu: a reduction of fewer than 32 values (a
// combine of 8 chunks), a loop with a value the fold needs that is not 32
// bits wide (f64), and an accumulator updated through memory (no iter_args).
// CHECK-LABEL: func.func @kept
// CHECK-NOT: gpu.launch
// CHECK-COUNT-3: scf.parallel
func.func @kept(%x: memref<?x8xf32>, %d: memref<?x64xf64>, %out: memref<?xf32>, %o64: memref<?xf64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %t = memref.dim %x, %c0 : memref<?x8xf32>
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %init = memref.load %out[%i] : memref<?xf32>
    %s = scf.for %k = %c0 to %c8 step %c1 iter_args(%a = %init) -> (f32) {
      %v = memref.load %x[%i, %k] : memref<?x8xf32>
      %n = arith.addf %a, %v : f32
      scf.yield %n : f32
    }
    memref.store %s, %out[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %init = memref.load %o64[%i] : memref<?xf64>
    %s = scf.for %k = %c0 to %c64 step %c1 iter_args(%a = %init) -> (f64) {
      %v = memref.load %d[%i, %k] : memref<?x64xf64>
      %n = arith.addf %a, %v : f64
      scf.yield %n : f64
    }
    memref.store %s, %o64[%i] : memref<?xf64>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    scf.for %k = %c0 to %c64 step %c1 {
      %v = memref.load %d[%i, %k] : memref<?x64xf64>
      %a = memref.load %o64[%i] : memref<?xf64>
      %n = arith.addf %a, %v : f64
      memref.store %n, %o64[%i] : memref<?xf64>
    }
    scf.reduce
  }
  return
}

// -----

// A dynamic reduction length (a softmax over the context) from a nonzero
// lower bound: the slabs start there, and a lane past the end sends zero.
// CHECK-LABEL: func.func @dynamic
// CHECK: gpu.launch
// CHECK: scf.for %[[K0:.*]] = %c4 to %[[UB:.*]] step %c32
// CHECK: arith.cmpi ult, %{{.*}}, %[[UB]]
// CHECK: arith.subi %[[UB]], %[[K0]]
// CHECK: gpu.shuffle idx
// CHECK: arith.maximumf
func.func @dynamic(%x: memref<?x?xf32>, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = memref.dim %x, %c0 : memref<?x?xf32>
  %n = memref.dim %x, %c1 : memref<?x?xf32>
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %init = memref.load %out[%i] : memref<?xf32>
    %s = scf.for %k = %c4 to %n step %c1 iter_args(%a = %init) -> (f32) {
      %v = memref.load %x[%i, %k] : memref<?x?xf32>
      %m = arith.maximumf %a, %v : f32
      scf.yield %m : f32
    }
    memref.store %s, %out[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
