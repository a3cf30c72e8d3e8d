// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-promote-accumulators))' | FileCheck %s

// A fold into an allocation over two reduction loops (chunks, then k): the
// element is loaded once before both loops, carried through them, stored
// once after them; the adds keep their order and operands.
// CHECK-LABEL: func.func @nested
// CHECK: %[[OUT:.*]] = memref.alloc
// CHECK: scf.parallel (%[[I:.*]]) =
// CHECK-NEXT: %[[A0:.*]] = memref.load %[[OUT]][%[[I]]]
// CHECK-NEXT: %[[R:.*]] = scf.for %[[J:.*]] = {{.*}} iter_args(%[[AJ:.*]] = %[[A0]]) -> (f32) {
// CHECK-NEXT: %[[RK:.*]] = scf.for %[[K:.*]] = {{.*}} iter_args(%[[A:.*]] = %[[AJ]]) -> (f32) {
// CHECK-NEXT: %[[X:.*]] = memref.load %arg0[%[[I]], %[[J]], %[[K]]]
// CHECK-NEXT: %[[S:.*]] = arith.addf %[[A]], %[[X]]
// CHECK-NEXT: scf.yield %[[S]]
// CHECK: scf.yield %[[RK]]
// CHECK: memref.store %[[R]], %[[OUT]][%[[I]]]
// CHECK-NOT: memref.store
// CHECK: return
func.func @nested(%in: memref<?x4x8xf32>, %n: index) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %out = memref.alloc(%n) : memref<?xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %j = %c0 to %c4 step %c1 {
      scf.for %k = %c0 to %c8 step %c1 {
        %a = memref.load %out[%i] : memref<?xf32>
        %x = memref.load %in[%i, %j, %k] : memref<?x4x8xf32>
        %s = arith.addf %a, %x : f32
        memref.store %s, %out[%i] : memref<?xf32>
      }
    }
    scf.reduce
  }
  return %out : memref<?xf32>
}

// -----

// An output argument (the step's own buffer) read with allocations and a
// global only: none of them can be it, so it is promoted.
// CHECK-LABEL: func.func @argument
// CHECK: memref.load %arg1[%{{.*}}]
// CHECK-NEXT: scf.for {{.*}} iter_args
// CHECK-NOT: memref.store
// CHECK: scf.yield
// CHECK: memref.store {{.*}}, %arg1
memref.global "private" constant @w : memref<8xf32> = dense<1.0>
func.func @argument(%n: index, %out: memref<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %tmp = memref.alloc(%n) : memref<?x8xf32>
  %w = memref.get_global @w : memref<8xf32>
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %a = memref.load %out[%i] : memref<?xf32>
      %x = memref.load %tmp[%i, %k] : memref<?x8xf32>
      %y = memref.load %w[%k] : memref<8xf32>
      %p = math.fma %x, %y, %a : f32
      memref.store %p, %out[%i] : memref<?xf32>
    }
    scf.reduce
  }
  memref.dealloc %tmp : memref<?x8xf32>
  return
}

// -----

// Kept: the output is an argument and the loop reads another argument
// (the caller's buffers might be one); the element read through a view of
// the same allocation at another index; indices that change in the loop.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: iter_args
// CHECK: return
func.func @kept(%in: memref<?x8xf32>, %out: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %a = memref.load %out[%i] : memref<?xf32>
      %x = memref.load %in[%i, %k] : memref<?x8xf32>
      %s = arith.addf %a, %x : f32
      memref.store %s, %out[%i] : memref<?xf32>
    }
    scf.reduce
  }
  %buf = memref.alloc() : memref<16xf32>
  %view = memref.subview %buf[8] [8] [1] : memref<16xf32> to memref<8xf32, strided<[1], offset: 8>>
  scf.for %k = %c0 to %c8 step %c1 {
    %a = memref.load %buf[%c0] : memref<16xf32>
    %x = memref.load %view[%k] : memref<8xf32, strided<[1], offset: 8>>
    %s = arith.addf %a, %x : f32
    memref.store %s, %buf[%c0] : memref<16xf32>
  }
  %buf2 = memref.alloc() : memref<8xf32>
  scf.for %k = %c0 to %c8 step %c1 {
    %a = memref.load %buf2[%k] : memref<8xf32>
    %s = arith.addf %a, %a : f32
    memref.store %s, %buf2[%k] : memref<8xf32>
  }
  return
}

// -----

// Kept: the output is an allocation but the loop reads a buffer chosen by
// a branch, which may be that allocation.
// CHECK-LABEL: func.func @chosen
// CHECK-NOT: iter_args
// CHECK: return
func.func @chosen(%in: memref<8xf32>, %c: i1) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %out = memref.alloc() : memref<8xf32>
  %src = scf.if %c -> (memref<8xf32>) {
    scf.yield %out : memref<8xf32>
  } else {
    scf.yield %in : memref<8xf32>
  }
  scf.for %k = %c0 to %c8 step %c1 {
    %a = memref.load %out[%c0] : memref<8xf32>
    %x = memref.load %src[%k] : memref<8xf32>
    %s = arith.addf %a, %x : f32
    memref.store %s, %out[%c0] : memref<8xf32>
  }
  return
}
