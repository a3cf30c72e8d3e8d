// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(lockstep-record-pool-writes)' | FileCheck %s

// Pool 0 written through a subview (the new rows' copy), pool 1 through a
// collapse_shape then a store; pool 2 only read: streams 0 and 1.
// CHECK: module attributes {lockstep.pool_writes = array<i64: 0, 1>}
module {
  func.func @main(%rows: memref<2x16xf32>,
                  %k: memref<?x?x2x16xf32> {lockstep.role = "pool.0"},
                  %v: memref<?x?x2x16xf32> {lockstep.role = "pool.1"},
                  %w: memref<?x?x2x16xf32> {lockstep.role = "pool.2"},
                  %b: index, %s: index, %x: f32) -> f32 {
    %c0 = arith.constant 0 : index
    %dst = memref.subview %k[%b, %s, 0, 0] [1, 1, 2, 16] [1, 1, 1, 1]
        : memref<?x?x2x16xf32> to memref<2x16xf32, strided<[16, 1], offset: ?>>
    memref.copy %rows, %dst : memref<2x16xf32> to memref<2x16xf32, strided<[16, 1], offset: ?>>
    %flat = memref.collapse_shape %v [[0, 1], [2], [3]]
        : memref<?x?x2x16xf32> into memref<?x2x16xf32>
    memref.store %x, %flat[%b, %c0, %c0] : memref<?x2x16xf32>
    %y = memref.load %w[%b, %s, %c0, %c0] : memref<?x?x2x16xf32>
    return %y : f32
  }
}

// -----

// A pool only read, and a non-pool argument written: nothing.
// CHECK: module attributes {lockstep.pool_writes = array<i64>}
module {
  func.func @main(%k: memref<?x?x2x16xf32> {lockstep.role = "pool.0"},
                  %out: memref<2x16xf32>, %x: f32) {
    %c0 = arith.constant 0 : index
    %y = memref.load %k[%c0, %c0, %c0, %c0] : memref<?x?x2x16xf32>
    memref.store %y, %out[%c0, %c0] : memref<2x16xf32>
    return
  }
}

// -----

// A pool written only after bufferization copied it (the insert into a fresh
// buffer, the argument itself untouched): not written.
// CHECK: module attributes {lockstep.pool_writes = array<i64>}
module {
  func.func @main(%k: memref<?x?x2x16xf32> {lockstep.role = "pool.0"}, %x: f32) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %n = memref.dim %k, %c0 : memref<?x?x2x16xf32>
    %m = memref.dim %k, %c1 : memref<?x?x2x16xf32>
    %copy = memref.alloc(%n, %m) : memref<?x?x2x16xf32>
    memref.copy %k, %copy : memref<?x?x2x16xf32> to memref<?x?x2x16xf32>
    memref.store %x, %copy[%c0, %c0, %c0, %c0] : memref<?x?x2x16xf32>
    memref.dealloc %copy : memref<?x?x2x16xf32>
    return
  }
}

// -----

// As one-shot-bufferize leaves the new rows' loop before canonicalization:
// the pool carried by an scf.for, a subview of the iter_arg written.
// CHECK: module attributes {lockstep.pool_writes = array<i64: 0>}
module {
  func.func @main(%rows: memref<2x16xf32>,
                  %k: memref<?x?x2x16xf32> {lockstep.role = "pool.0"}, %n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %r = scf.for %t = %c0 to %n step %c1 iter_args(%p = %k) -> (memref<?x?x2x16xf32>) {
      %dst = memref.subview %p[%t, 0, 0, 0] [1, 1, 2, 16] [1, 1, 1, 1]
          : memref<?x?x2x16xf32> to memref<2x16xf32, strided<[16, 1], offset: ?>>
      memref.copy %rows, %dst : memref<2x16xf32> to memref<2x16xf32, strided<[16, 1], offset: ?>>
      scf.yield %p : memref<?x?x2x16xf32>
    }
    return
  }
}
