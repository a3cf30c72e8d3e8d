// RUN: lockstep-opt %s --split-input-file --lockstep-outline-parallel | FileCheck %s

// A 2-D parallel loop: work items enumerate the first dim, and each runs the
// last dim whole. The loop becomes a call over all items; the memrefs it uses
// are passed and the constants cloned.
// CHECK-LABEL: func.func private @lockstep_par_0
// CHECK-SAME: (%[[BEGIN:.*]]: index, %[[END:.*]]: index, %[[N:.*]]: index, %[[M:.*]]: index, %[[A:.*]]: memref<?x?xf32>)
// CHECK: scf.for %[[IT:.*]] = %[[BEGIN]] to %[[END]]
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[M]]
// CHECK: memref.load %[[A]]
// CHECK: memref.store
// CHECK-LABEL: func.func @scale
// CHECK-NOT: scf.parallel
// CHECK: %[[ITEMS:.*]] = arith.ceildivsi
// CHECK: call @lockstep_par_0(%c0{{.*}}, %[[ITEMS]], %arg1, %arg2, %arg0)
func.func @scale(%a: memref<?x?xf32>, %n: index, %m: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m) step (%c1, %c1) {
    %x = memref.load %a[%i, %j] : memref<?x?xf32>
    %y = arith.mulf %x, %two : f32
    memref.store %y, %a[%i, %j] : memref<?x?xf32>
    scf.reduce
  }
  return
}

// -----

// A 3-D loop: items are the points of the first two dims, delinearized
// row-major.
// CHECK-LABEL: func.func private @lockstep_par_0
// CHECK: scf.for %[[IT:.*]] =
// CHECK: %[[T1:.*]] = arith.remsi %[[IT]]
// CHECK: %[[T0:.*]] = arith.divsi %[[IT]]
// CHECK: scf.for
// CHECK-LABEL: func.func @zero3
// CHECK: %[[C0:.*]] = arith.ceildivsi
// CHECK: %[[C1:.*]] = arith.ceildivsi
// CHECK: %[[ITEMS:.*]] = arith.muli %[[C0]], %[[C1]]
// CHECK: call @lockstep_par_0(%{{.*}}, %[[ITEMS]]
func.func @zero3(%a: memref<?x?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i, %j, %k) = (%c0, %c0, %c0) to (%n, %n, %n) step (%c1, %c1, %c1) {
    memref.store %z, %a[%i, %j, %k] : memref<?x?x?xf32>
    scf.reduce
  }
  return
}

// -----

// A nested parallel loop stays inside the outlined outer one.
// CHECK-LABEL: func.func private @lockstep_par_0
// CHECK: scf.parallel
// CHECK-NOT: lockstep_par_1
func.func @nested(%a: memref<?x?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%j) = (%c0) to (%n) step (%c1) {
      memref.store %z, %a[%i, %j] : memref<?x?xf32>
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// Two identical loops (the same op in two layers) share one work function.
// CHECK-LABEL: func.func private @lockstep_par_0
// CHECK-NOT: func.func private @lockstep_par_1
// CHECK-LABEL: func.func @two_layers
// CHECK: call @lockstep_par_0(%{{.*}}, %{{.*}}, %arg0)
// CHECK: call @lockstep_par_0(%{{.*}}, %{{.*}}, %arg1)
func.func @two_layers(%a: memref<8xf32>, %b: memref<8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %z = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %z, %a[%i] : memref<8xf32>
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%c8) step (%c1) {
    memref.store %z, %b[%i] : memref<8xf32>
    scf.reduce
  }
  return
}

// -----

// A body's stack scratch of static size moves to the work function's entry,
// before the loop over items: one buffer for all of a thread's items, not
// one an item. A dynamic one stays in the loop.
// CHECK-LABEL: func.func private @lockstep_par_0
// CHECK-NEXT: %[[S:.*]] = memref.alloca() : memref<16xf32>
// CHECK: scf.for
// CHECK: memref.alloca(%{{.*}}) : memref<?xf32>
// CHECK: memref.store %{{.*}}, %[[S]]
// CHECK-LABEL: func.func @scratch
func.func @scratch(%a: memref<?xf32>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %s = memref.alloca() : memref<16xf32>
    %d = memref.alloca(%i) : memref<?xf32>
    %x = memref.load %a[%i] : memref<?xf32>
    memref.store %x, %s[%c0] : memref<16xf32>
    memref.store %x, %d[%c0] : memref<?xf32>
    %y = memref.load %s[%c0] : memref<16xf32>
    memref.store %y, %a[%i] : memref<?xf32>
    scf.reduce
  }
  return
}
