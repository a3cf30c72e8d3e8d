// RUN: lockstep-opt %s --pass-pipeline='builtin.module(func.func(lockstep-tile-contractions{shapes="4:64x1/4x1/16/direct;*:16x16/4x4/32/v4"}))' | FileCheck %s
// RUN: not lockstep-opt %s --pass-pipeline='builtin.module(func.func(lockstep-tile-contractions{shapes="4:64x1/4x1/16/direct"}))' 2>&1 | FileCheck %s --check-prefix=LAST
// RUN: not lockstep-opt %s --pass-pipeline='builtin.module(func.func(lockstep-tile-contractions{shapes="*:16x16/4x3/8/v4"}))' 2>&1 | FileCheck %s --check-prefix=V4
// RUN: not lockstep-opt %s --pass-pipeline='builtin.module(func.func(lockstep-tile-contractions{shapes="*:16x16/8x8/64/v4"}))' 2>&1 | FileCheck %s --check-prefix=SMEM

// A table of tile shapes given as text (the `shapes` option, lockstep-opt
// --gpu-tiles) replaces the compiler's: here two entries, so the host
// chooses once, on rows <= 4: 4x64 direct tiles of 64 threads staging 16
// values of k a step (X's tile 16 x 5), else 64x64 register-blocked tiles
// of 16x16 threads with 4x4 outputs each, 32 values of k a step
// double-buffered (2 x 32 x 68 for both inputs). The fold is the
// generic's fma over k in increasing order in both.
#a = affine_map<(t, n, k) -> (t, k)>
#b = affine_map<(t, n, k) -> (k, n)>
#o = affine_map<(t, n, k) -> (t, n)>
// CHECK-LABEL: func.func @projection
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: %[[FEW:.*]] = arith.cmpi ule, %[[T]], %c4
// CHECK: scf.if %[[FEW]] {
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<16x5xf32, #gpu.address_space<workgroup>>) {
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c16
// CHECK-COUNT-64: math.fma
// CHECK-NOT: math.fma
// CHECK: } else {
// CHECK-NOT: arith.cmpi ule, %[[T]]
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c16{{.*}}, %{{.*}} = %c16{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<2x32x68xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<2x32x68xf32, #gpu.address_space<workgroup>>) {
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c32
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c2
// CHECK-COUNT-32: math.fma
// CHECK-NOT: math.fma
// CHECK: scf.yield
// LAST: the last entry's ROWS must be '*'
// V4: v4 needs TM and TN multiples of 4
// SMEM: its workgroup tiles take 135168 bytes, more than 48 KiB
func.func @projection(%x: memref<?x128xf32>, %w: memref<128x96xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [#a, #b, #o],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<128x96xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%xv: f32, %wv: f32, %acc: f32):
    %r = math.fma %xv, %wv, %acc : f32
    linalg.yield %r : f32
  }
  return
}
