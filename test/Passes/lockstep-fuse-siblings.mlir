// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-fuse-siblings))' | FileCheck %s

// Three loops that read the same input and write their own buffers (RoPE
// of q, of k, v's transpose): one launch over all their points, each loop's
// range of thread ids running its points.
// CHECK-LABEL: func.func @three
// CHECK-NOT: scf.parallel
// CHECK: %[[T1:.*]] = arith.addi %c0{{[_0-9]*}}, %{{.*}} : index
// CHECK: gpu.launch
// CHECK: %[[ID:.*]] = arith.addi
// CHECK: arith.cmpi uge, %[[ID]], %c0
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg1[
// CHECK: arith.cmpi uge, %[[ID]], %[[T1]]
// CHECK: scf.if
// CHECK: arith.subi %[[ID]], %[[T1]]
// CHECK: memref.store %{{.*}}, %arg2[
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %arg3[
// CHECK: gpu.terminator
// CHECK-NOT: scf.parallel
func.func @three(%x: memref<?x8xf32>, %q: memref<?x8xf32>, %k: memref<?x4xf32>, %v: memref<4x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %t = memref.dim %x, %c0 : memref<?x8xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%t, %c8) step (%c1, %c1) {
    %e = memref.load %x[%i, %j] : memref<?x8xf32>
    %s = arith.addf %e, %e : f32
    memref.store %s, %q[%i, %j] : memref<?x8xf32>
    scf.reduce
  }
  scf.parallel (%i, %j) = (%c0, %c0) to (%t, %c4) step (%c1, %c1) {
    %e = memref.load %x[%i, %j] : memref<?x8xf32>
    memref.store %e, %k[%i, %j] : memref<?x4xf32>
    scf.reduce
  }
  scf.parallel (%j, %i) = (%c0, %c0) to (%c4, %t) step (%c1, %c1) {
    %j4 = arith.addi %j, %c4 : index
    %e = memref.load %x[%i, %j4] : memref<?x8xf32>
    memref.store %e, %v[%j, %i] : memref<4x?xf32>
    scf.reduce
  }
  return
}

// -----

// The second loop reads what the first writes: they stay two loops.
// CHECK-LABEL: func.func @dependent
// CHECK-NOT: gpu.launch
// CHECK: scf.parallel
// CHECK: scf.parallel
func.func @dependent(%x: memref<?xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = memref.dim %x, %c0 : memref<?xf32>
  %tmp = memref.alloc(%t) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %e = memref.load %x[%i] : memref<?xf32>
    memref.store %e, %tmp[%i] : memref<?xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%t) step (%c1) {
    %e = memref.load %tmp[%i] : memref<?xf32>
    memref.store %e, %y[%i] : memref<?xf32>
    scf.reduce
  }
  return
}

// -----

// A view of a buffer the other loop writes is the same buffer: no group.
// CHECK-LABEL: func.func @view
// CHECK-NOT: gpu.launch
func.func @view(%x: memref<?xf32>, %y: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %t = memref.dim %x, %c0 : memref<?xf32>
  %tmp = memref.alloc() : memref<8xf32>
  %half = memref.subview %tmp[4] [4] [1] : memref<8xf32> to memref<4xf32, strided<[1], offset: 4>>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %e = memref.load %x[%i] : memref<?xf32>
    memref.store %e, %tmp[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %e = memref.load %half[%i] : memref<4xf32, strided<[1], offset: 4>>
    memref.store %e, %y[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
