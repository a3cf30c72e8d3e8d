// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-tile-contractions))' | FileCheck %s

#a = affine_map<(t, n, k) -> (t, k)>
#b = affine_map<(t, n, k) -> (k, n)>
#o = affine_map<(t, n, k) -> (t, n)>

// A projection Y[T, N] = X[T, K] W[K, N] with K static. With rows to
// compute, the host launches a tiled kernel chosen by the rows: one row,
// 1x64 tiles of 64 threads (an output each); up to 8, 8x64 tiles of 64x2
// threads; up to 64, 16x64 tiles of 64x4 threads (all three staging 64
// values of k a step); above, 64x64 tiles of 16x16 threads staging 16. Each
// thread's outputs start from the output's values, fold with the generic's
// own fma over k in increasing order (the outer loop in steps of BK, the
// inner one by 1), and are stored only where in range. The tiles are
// software-pipelined: the first step's shares are loaded before the loop;
// each step stores the carried shares into workgroup memory, waits, loads
// the next step's (k0 + BK, or its own again on the last step: min with
// 128 - BK) and then folds. Otherwise the generic stays, for
// lockstep-map-to-gpu.
// CHECK-LABEL: func.func @projection
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: arith.cmpi ugt, %[[T]], %c0
// CHECK: scf.if %{{.*}} {
// CHECK: %[[ONE:.*]] = arith.cmpi ule, %[[T]], %c1
// CHECK: scf.if %[[ONE]] {
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<64x2xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x65xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c64
// CHECK: arith.minui %{{.*}}, %c64
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1{{.*}} iter_args(%{{[^,]*}}) -> (f32)
// CHECK-COUNT-1: math.fma
// CHECK-NOT: math.fma
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[FEW:.*]] = arith.cmpi ule, %[[T]], %c8
// CHECK: scf.if %[[FEW]] {
// CHECK: arith.ceildivui %[[T]], %c8
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c2{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<64x9xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x65xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-4: math.fma
// CHECK-NOT: math.fma
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[NARROW:.*]] = arith.cmpi ule, %[[T]], %c64
// CHECK: scf.if %[[NARROW]] {
// CHECK: %[[NY:.*]] = arith.ceildivui %[[T]], %c16
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %{{.*}}, %{{.*}} = %[[NY]], %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c4{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<64x17xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x65xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c64
// CHECK-COUNT-4: math.fma
// CHECK-NOT: math.fma
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[GX:.*]] = arith.ceildivui %c96{{.*}}, %c64
// CHECK: %[[GY:.*]] = arith.ceildivui %[[T]], %c64
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GX]], %{{.*}} = %[[GY]], %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c16{{.*}}, %{{.*}} = %c16{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[AT:.*]] : memref<16x65xf32, #gpu.address_space<workgroup>>, %[[BT:.*]] : memref<16x65xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-4: memref.load %arg0
// CHECK-COUNT-4: memref.load %arg1
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c16{{.*}} iter_args
// CHECK-NOT: memref.load %arg
// CHECK: memref.store %{{.*}}, %[[AT]]
// CHECK: memref.store %{{.*}}, %[[BT]]
// CHECK: gpu.barrier
// CHECK: arith.minui %{{.*}}, %c112
// CHECK-COUNT-4: memref.load %arg0
// CHECK-COUNT-4: memref.load %arg1
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c1{{.*}} iter_args
// CHECK-COUNT-16: math.fma
// CHECK: scf.yield
// CHECK: gpu.barrier
// CHECK-COUNT-16: memref.store %{{.*}}, %arg2
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: linalg.generic
// CHECK: math.fma
func.func @projection(%x: memref<?x128xf32>, %w: memref<128x96xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<128x96xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %f = math.fma %p, %q, %acc : f32
    linalg.yield %f : f32
  }
  return
}

// -----

// A chunk's partial of a projection with bf16 weights, k of extent 8: the
// chunk dim j is read by both inputs, so it is a batch dim (grid z), the
// tiles stage 8 values of k, and the weights stay bf16 in workgroup memory,
// widened by the generic's body. The one-row tiles' A share (8 x 1 = 8
// elements for 64 threads) is copied by the first 8 threads only.
// CHECK-LABEL: func.func @partial
// CHECK: %[[Z:.*]] = arith.muli %c1{{.*}}, %c3
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, %{{.*}} = %[[Z]]) threads
// CHECK-SAME: workgroup(%{{.*}} : memref<8x2xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x65xbf16, #gpu.address_space<workgroup>>)
// CHECK: arith.cmpi ult, %{{.*}}, %c8
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c8
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %c8
// CHECK: scf.if %[[IN]] {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}} : memref<8x2xf32, #gpu.address_space<workgroup>>
// CHECK: arith.extf
// CHECK: math.fma
// CHECK: gpu.launch {{.*}} = %[[Z]]) threads({{.*}} = %c16{{[_0-9]*}}, %{{[a-z0-9]*}} = %c16{{[_0-9]*}}, {{.*}} workgroup(%{{.*}} : memref<8x65xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<8x65xbf16, #gpu.address_space<workgroup>>)
func.func @partial(%x: memref<?x3x8xf32>, %w: memref<3x8x64xbf16>, %p: memref<?x64x3xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, n, j, k) -> (t, j, k)>,
                                   affine_map<(t, n, j, k) -> (j, k, n)>,
                                   affine_map<(t, n, j, k) -> (t, n, j)>],
                  iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x3x8xf32>, memref<3x8x64xbf16>) outs(%p : memref<?x64x3xf32>) {
  ^bb0(%a: f32, %b: bf16, %acc: f32):
    %e = arith.extf %b : bf16 to f32
    %f = math.fma %a, %e, %acc : f32
    linalg.yield %f : f32
  }
  return
}

// -----

// Not tiled: a body that reads linalg.index, a reduction length that is not
// a multiple of 8, and an output that is also an input.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: gpu.launch
// CHECK-NOT: scf.if
func.func @kept(%x: memref<?x128xf32>, %w: memref<128x96xf32>, %y: memref<?x96xf32>,
                %x2: memref<?x12xf32>, %w2: memref<12x96xf32>, %s: memref<96x96xf32>,
                %w3: memref<96x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>, affine_map<(t, n, k) -> (k, n)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<128x96xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %i = linalg.index 2 : index
    %ii = arith.index_cast %i : index to i32
    %fi = arith.sitofp %ii : i32 to f32
    %m = arith.mulf %p, %fi : f32
    %f = math.fma %m, %q, %acc : f32
    linalg.yield %f : f32
  }
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>, affine_map<(t, n, k) -> (k, n)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x2, %w2 : memref<?x12xf32>, memref<12x96xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %f = math.fma %p, %q, %acc : f32
    linalg.yield %f : f32
  }
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>, affine_map<(t, n, k) -> (k, n)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s, %w3 : memref<96x96xf32>, memref<96x96xf32>) outs(%s : memref<96x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %f = math.fma %p, %q, %acc : f32
    linalg.yield %f : f32
  }
  return
}
