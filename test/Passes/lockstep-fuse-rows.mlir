// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-fuse-rows))' | FileCheck %s

// A residual add, a norm's chunk sums (8 chunks of 32) and its scaling, all
// over the rows of [1, T, 256]: one launch of a block a row (256 threads),
// the sums a warp each (shuffles), barriers between the phases.
// CHECK-LABEL: func.func @norm
// CHECK-NOT: scf.parallel
// CHECK: %[[ANY:.*]] = arith.cmpi ugt
// CHECK: scf.if %[[ANY]] {
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[ROWS:.*]], %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK: scf.for
// CHECK: arith.addf
// CHECK: memref.store %{{.*}}, %[[X:.*]][
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: arith.mulf
// CHECK: gpu.shuffle idx
// CHECK: memref.store
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: math.sqrt
// CHECK: memref.store
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel
func.func @norm(%res: memref<1x?x256xf32>, %o: memref<1x?x256xf32>, %w: memref<256xf32>,
                %y: memref<1x?x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %c256 = arith.constant 256 : index
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 256.0 : f32
  %t = memref.dim %res, %c1 : memref<1x?x256xf32>
  %x = memref.alloc(%t) : memref<1x?x256xf32>
  scf.parallel (%a, %i, %j) = (%c0, %c0, %c0) to (%c1, %t, %c256) step (%c1, %c1, %c1) {
    %u = memref.load %res[%a, %i, %j] : memref<1x?x256xf32>
    %v = memref.load %o[%a, %i, %j] : memref<1x?x256xf32>
    %s = arith.addf %u, %v : f32
    memref.store %s, %x[%a, %i, %j] : memref<1x?x256xf32>
    scf.reduce
  }
  %xe = memref.expand_shape %x [[0], [1], [2, 3]] output_shape [1, %t, 8, 32] : memref<1x?x256xf32> into memref<1x?x8x32xf32>
  %sums = memref.alloc(%t) : memref<1x?x8xf32>
  %t2 = memref.dim %xe, %c1 : memref<1x?x8x32xf32>
  scf.parallel (%a, %i, %c) = (%c0, %c0, %c0) to (%c1, %t2, %c8) step (%c1, %c1, %c1) {
    %r = scf.for %k = %c0 to %c32 step %c1 iter_args(%acc = %zero) -> (f32) {
      %e = memref.load %xe[%a, %i, %c, %k] : memref<1x?x8x32xf32>
      %q = arith.mulf %e, %e : f32
      %s = arith.addf %acc, %q : f32
      scf.yield %s : f32
    }
    memref.store %r, %sums[%a, %i, %c] : memref<1x?x8xf32>
    scf.reduce
  }
  scf.parallel (%a, %i, %j) = (%c0, %c0, %c0) to (%c1, %t, %c256) step (%c1, %c1, %c1) {
    %g = memref.load %w[%j] : memref<256xf32>
    %e = memref.load %x[%a, %i, %j] : memref<1x?x256xf32>
    %ss = scf.for %c = %c0 to %c8 step %c1 iter_args(%acc = %zero) -> (f32) {
      %p = memref.load %sums[%c0, %i, %c] : memref<1x?x8xf32>
      %s = arith.addf %acc, %p : f32
      scf.yield %s : f32
    }
    %m = arith.divf %ss, %n : f32
    %r = math.sqrt %m : f32
    %z = arith.divf %e, %r : f32
    %out = arith.mulf %g, %z : f32
    memref.store %out, %y[%a, %i, %j] : memref<1x?x256xf32>
    scf.reduce
  }
  return
}

// -----

// The second loop reads the first one's buffer at the next row, which
// another block writes: no launch, both loops stay.
// CHECK-LABEL: func.func @next_row
// CHECK-NOT: gpu.launch
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @next_row(%res: memref<1x?x256xf32>, %y: memref<1x?x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %t = memref.dim %res, %c1 : memref<1x?x256xf32>
  %x = memref.alloc(%t) : memref<1x?x256xf32>
  scf.parallel (%a, %i, %j) = (%c0, %c0, %c0) to (%c1, %t, %c256) step (%c1, %c1, %c1) {
    %u = memref.load %res[%a, %i, %j] : memref<1x?x256xf32>
    %s = arith.addf %u, %u : f32
    memref.store %s, %x[%a, %i, %j] : memref<1x?x256xf32>
    scf.reduce
  }
  %last = arith.subi %t, %c1 : index
  scf.parallel (%a, %i, %j) = (%c0, %c0, %c0) to (%c1, %t, %c256) step (%c1, %c1, %c1) {
    %next = arith.addi %i, %c1 : index
    %i1 = arith.minui %next, %last : index
    %e = memref.load %x[%a, %i1, %j] : memref<1x?x256xf32>
    memref.store %e, %y[%a, %i, %j] : memref<1x?x256xf32>
    scf.reduce
  }
  return
}

// -----

// Rows of different extents (T and the logit rows, say): not one grid.
// CHECK-LABEL: func.func @other_rows
// CHECK-NOT: gpu.launch
func.func @other_rows(%res: memref<1x?x256xf32>, %y: memref<1x?x256xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  %t = memref.dim %res, %c1 : memref<1x?x256xf32>
  %r = memref.dim %y, %c1 : memref<1x?x256xf32>
  %x = memref.alloc(%t) : memref<1x?x256xf32>
  scf.parallel (%a, %i, %j) = (%c0, %c0, %c0) to (%c1, %t, %c256) step (%c1, %c1, %c1) {
    %u = memref.load %res[%a, %i, %j] : memref<1x?x256xf32>
    memref.store %u, %x[%a, %i, %j] : memref<1x?x256xf32>
    scf.reduce
  }
  scf.parallel (%a, %i, %j) = (%c0, %c0, %c0) to (%c1, %r, %c256) step (%c1, %c1, %c1) {
    %e = memref.load %x[%a, %i, %j] : memref<1x?x256xf32>
    memref.store %e, %y[%a, %i, %j] : memref<1x?x256xf32>
    scf.reduce
  }
  return
}
