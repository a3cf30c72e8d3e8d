// RUN: lockstep-opt %s --split-input-file --lockstep-map-to-gpu --verify-diagnostics | FileCheck %s

// A parallel loop nest (a linalg op's parallel dims, with its reduction loop
// inside) becomes one launch over the flattened iteration space: 256
// threads a block, one point a thread, guarded by id < N, the indices
// recovered last dim fastest. The reduction loop stays whole, in order, in
// the thread. No launch for an empty space.
// CHECK-LABEL: func.func @parallel
// CHECK: %[[ANY:.*]] = arith.cmpi ugt, %[[N:[0-9]+]], %{{.*}} : index
// CHECK: scf.if %[[ANY]] {
// CHECK: %[[GRID:.*]] = arith.ceildivui %[[N]], %c256
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GRID]]
// CHECK: %[[ID:.*]] = arith.addi %{{.*}}, %{{.*}}
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[ID]], %[[N]]
// CHECK: scf.if %[[IN]] {
// CHECK: arith.remui %[[ID]]
// CHECK: arith.divui %[[ID]]
// CHECK: scf.for
// CHECK: math.fma
// CHECK: gpu.terminator
func.func @parallel(%a: memref<?x8xf32>, %b: memref<8x4xf32>, %c: memref<?x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %c8 = arith.constant 8 : index
  %m = memref.dim %a, %c0 : memref<?x8xf32>
  scf.parallel (%i, %j) = (%c0, %c0) to (%m, %c4) step (%c1, %c1) {
    scf.for %k = %c0 to %c8 step %c1 {
      %x = memref.load %a[%i, %k] : memref<?x8xf32>
      %y = memref.load %b[%k, %j] : memref<8x4xf32>
      %z = memref.load %c[%i, %j] : memref<?x4xf32>
      %f = math.fma %x, %y, %z : f32
      memref.store %f, %c[%i, %j] : memref<?x4xf32>
    }
    scf.reduce
  }
  return
}

// -----

// A loop that is not parallel but reads and writes data (the ragged step's
// writing of new rows into the pools) runs as one GPU thread: the host never
// touches device memory. A shape buffer (stored, loaded and read by
// memref.reshape on the host) becomes a stack allocation, host memory.
// CHECK-LABEL: func.func @serial
// CHECK: %[[ONE:c1_[0-9]+]] = arith.constant 1 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads({{.*}}) in ({{.*}} = %[[ONE]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]])
// CHECK-NEXT: scf.for
// CHECK: memref.load %arg1
// CHECK: gpu.terminator
// CHECK: %[[SHAPE:.*]] = memref.alloca() : memref<2xindex>
// CHECK: memref.reshape %arg0(%[[SHAPE]])
// CHECK-NOT: memref.dealloc
func.func @serial(%src: memref<8xf32>, %idx: memref<4xindex>, %dst: memref<16xf32>) -> memref<2x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  scf.for %t = %c0 to %c4 step %c1 {
    %p = memref.load %idx[%t] : memref<4xindex>
    %v = memref.load %src[%t] : memref<8xf32>
    memref.store %v, %dst[%p] : memref<16xf32>
  }
  %shape = memref.alloc() : memref<2xindex>
  memref.store %c2, %shape[%c0] : memref<2xindex>
  memref.store %c4, %shape[%c1] : memref<2xindex>
  %r = memref.reshape %src(%shape) : (memref<8xf32>, memref<2xindex>) -> memref<2x4xf32>
  memref.dealloc %shape : memref<2xindex>
  return %r : memref<2x4xf32>
}

// -----

// A small buffer that a loop reads is not a host shape buffer, even though
// the host stores into it: it stays device memory (here, an allocation the
// kernel reads). Host stack memory that a kernel would read is refused.
// CHECK-LABEL: func.func @read_in_kernel
// CHECK: memref.alloc() : memref<1xi64>
func.func @read_in_kernel(%out: memref<4xi64>, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %v = arith.index_cast %n : index to i64
  %past = memref.alloc() : memref<1xi64>
  memref.store %v, %past[%c0] : memref<1xi64>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    %p = memref.load %past[%c0] : memref<1xi64>
    memref.store %p, %out[%i] : memref<4xi64>
    scf.reduce
  }
  memref.dealloc %past : memref<1xi64>
  return
}

// -----

func.func @stack_in_kernel(%out: memref<4xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %s = memref.alloca() : memref<1xi64>
  scf.parallel (%i) = (%c0) to (%c4) step (%c1) {
    // expected-error @+1 {{a GPU kernel would read host memory (memref.alloca)}}
    %p = memref.load %s[%c0] : memref<1xi64>
    memref.store %p, %out[%i] : memref<4xi64>
    scf.reduce
  }
  return
}

// -----

// A branch on sizes (the adaptive control's choice of split) is taken on
// the host: each branch is mapped in place, its allocation a host call
// (device memory), its loops launches; the branch itself is no kernel.
// CHECK-LABEL: func.func @branch
// CHECK: %[[SMALL:.*]] = arith.cmpi ult
// CHECK-NEXT: %[[BUF:.*]] = scf.if %[[SMALL]] -> (memref<?xf32>) {
// CHECK-NEXT: %[[A:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// CHECK: gpu.launch
// CHECK: scf.yield %[[A]]
// CHECK: } else {
// CHECK: gpu.launch
// CHECK: scf.yield %arg1
func.func @branch(%a: memref<?xf32>, %out: memref<?xf32>) -> memref<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %a, %c0 : memref<?xf32>
  %small = arith.cmpi ult, %n, %c4 : index
  %r = scf.if %small -> (memref<?xf32>) {
    %tmp = memref.alloc(%n) : memref<?xf32>
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %x = memref.load %a[%i] : memref<?xf32>
      memref.store %x, %tmp[%i] : memref<?xf32>
      scf.reduce
    }
    scf.yield %tmp : memref<?xf32>
  } else {
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      %x = memref.load %a[%i] : memref<?xf32>
      memref.store %x, %out[%i] : memref<?xf32>
      scf.reduce
    }
    scf.yield %out : memref<?xf32>
  }
  return %r : memref<?xf32>
}

// -----

// A loop marked lockstep.disjoint_iterations (the ragged step's writing of
// each token's row into its own pool slot) is parallel: with only reads
// before the row's copy, and the copy's bounds from outside, it becomes one
// launch over (token, copy points), each thread reading its token's slot
// and copying one element.
// CHECK-LABEL: func.func @disjoint
// CHECK: arith.cmpi ugt, %[[N:[0-9]+]], %c0
// CHECK: gpu.launch
// CHECK: arith.cmpi ult, %{{.*}}, %[[N]]
// CHECK: memref.load %arg1
// CHECK: memref.load %arg0
// CHECK-NEXT: memref.store
// CHECK-NOT: scf.for
// CHECK: gpu.terminator
func.func @disjoint(%rows: memref<?x4xf32>, %slots: memref<?xindex>, %pool: memref<16x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %rows, %c0 : memref<?x4xf32>
  scf.for %t = %c0 to %n step %c1 {
    %s = memref.load %slots[%t] : memref<?xindex>
    scf.parallel (%d) = (%c0) to (%c4) step (%c1) {
      %x = memref.load %rows[%t, %d] : memref<?x4xf32>
      memref.store %x, %pool[%s, %d] : memref<16x4xf32>
      scf.reduce
    }
  } {lockstep.disjoint_iterations}
  return
}

// -----

// Without the mark, the same loop runs in one GPU thread, in order.
// CHECK-LABEL: func.func @ordered
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[ONE:c1[_0-9]*]], {{.*}} = %[[ONE]], {{.*}} = %[[ONE]]) threads
// CHECK-NEXT: scf.for
func.func @ordered(%rows: memref<?x4xf32>, %slots: memref<?xindex>, %pool: memref<16x4xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %n = memref.dim %rows, %c0 : memref<?x4xf32>
  scf.for %t = %c0 to %n step %c1 {
    %s = memref.load %slots[%t] : memref<?xindex>
    scf.parallel (%d) = (%c0) to (%c4) step (%c1) {
      %x = memref.load %rows[%t, %d] : memref<?x4xf32>
      memref.store %x, %pool[%s, %d] : memref<16x4xf32>
      scf.reduce
    }
  }
  return
}
