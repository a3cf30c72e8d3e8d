// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-tile-contractions))' | FileCheck %s

#a = affine_map<(t, n, k) -> (t, k)>
#b = affine_map<(t, n, k) -> (k, n)>
#o = affine_map<(t, n, k) -> (t, n)>

// A projection Y[T, N] = X[T, K] W[K, N] with K static. With rows to
// compute, the host launches a tiled kernel chosen by the rows: one row,
// 1x64 tiles of 64 threads (an output each, 64 values of k a step); up to
// 8, 8x64 tiles of 64 threads (8 rows of a column each, 32 values of k a
// step), both direct: only X is staged, and each thread loads its own
// column of W for the step's k into registers (the column clamped to the
// last, so no load branches), 64 (32) loads, and folds them with the loop
// over the step's k unrolled whole; up to 16, 16x64 tiles of 64x4 threads
// staging both inputs, 64 values of k a step, element by element, in one
// workgroup buffer padded by 1; up to 32, 32x64 register-blocked tiles of
// 16x8 threads with 4x4 outputs each, 32 values of k a step; up to 256,
// 64x128 ones of 16x16 threads with 4x8 outputs, 16 values of k; above,
// 128x128 ones with 8x8, 8 values of k.
// Each thread's outputs start from the output's values, fold with the
// generic's own fma over k in increasing order (the outer loop in steps of
// BK, the inner one by 1, or by 2 unrolled twice), and are stored only
// where in range. The plain tiles are software-pipelined: the first step's
// shares are loaded before the loop; each step stores the carried shares
// into workgroup memory, waits, loads the next step's (k0 + BK, or its own
// again on the last step: min with 128 - BK) and then folds. Otherwise the
// generic stays, for lockstep-map-to-gpu.
//
// The register-blocked tiles: X (k last) and W (n last), of 32-bit
// elements with static last sizes that 4 divides, travel as aligned
// vector<4xf32>s, X's stored element by element into the k-major tile (4 k
// of one row), W's as one vector. Both tiles are double-buffered
// (2 x 8 x (extent + 4)): the first step is stored into buffer 0 before the
// loop; each step loads the next step's vectors, folds from buffer
// (k0 / 8) % 2 reading each group of 4 rows or columns as one vector,
// stores the next step into the other buffer, and waits once. The outputs
// (n last, 96 divisible by 4) are read and written as guarded vector<4>s.
// CHECK-LABEL: func.func @projection
// CHECK: %[[T:.*]] = memref.dim %arg0, %c0
// CHECK: arith.cmpi ugt, %[[T]], %c0
// CHECK: scf.if %{{.*}} {
// CHECK: %[[ONE:.*]] = arith.cmpi ule, %[[T]], %c1
// CHECK: scf.if %[[ONE]] {
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<64x2xf32, #gpu.address_space<workgroup>>) {
// CHECK: %[[COL:.*]] = arith.minui
// CHECK-COUNT-64: memref.load %arg1[%{{.*}}, %[[COL]]] : memref<128x96xf32>
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c64
// CHECK-NOT: scf.for
// CHECK: gpu.barrier
// CHECK: arith.minui %{{.*}}, %c64
// CHECK-COUNT-64: memref.load %arg1[
// CHECK-NOT: scf.for
// CHECK-COUNT-64: math.fma
// CHECK-NOT: math.fma
// CHECK: gpu.barrier
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[FEW:.*]] = arith.cmpi ule, %[[T]], %c8
// CHECK: scf.if %[[FEW]] {
// CHECK: arith.ceildivui %[[T]], %c8
// CHECK: gpu.launch {{.*}} threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c1{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<32x9xf32, #gpu.address_space<workgroup>>) {
// CHECK-COUNT-32: memref.load %arg1[
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c32
// CHECK-COUNT-32: memref.load %arg1[
// CHECK-NOT: scf.for
// CHECK-COUNT-256: math.fma
// CHECK-NOT: math.fma
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[NARROW:.*]] = arith.cmpi ule, %[[T]], %c16
// CHECK: scf.if %[[NARROW]] {
// CHECK: %[[NY:.*]] = arith.ceildivui %[[T]], %c16
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %{{.*}}, %{{.*}} = %[[NY]], %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c4{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<64x17xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x65xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c64
// CHECK-COUNT-4: math.fma
// CHECK-NOT: math.fma
// CHECK-NOT: vector.
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[SMALL:.*]] = arith.cmpi ule, %[[T]], %c32
// CHECK: scf.if %[[SMALL]] {
// CHECK: %[[SY:.*]] = arith.ceildivui %[[T]], %c32
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %{{.*}}, %{{.*}} = %[[SY]], %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c16{{.*}}, %{{.*}} = %c8{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<2x32x36xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<2x32x68xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-4: vector.load %arg2
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c2{{.*}} iter_args
// CHECK-COUNT-2: vector.load %arg{{[0-9]+}}[
// CHECK-COUNT-16: math.fma
// CHECK-COUNT-2: vector.load %arg{{[0-9]+}}[
// CHECK-COUNT-16: math.fma
// CHECK-NOT: math.fma
// CHECK-COUNT-4: vector.store %{{.*}}, %arg2
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[MID:.*]] = arith.cmpi ule, %[[T]], %c256
// CHECK: scf.if %[[MID]] {
// CHECK: %[[MY:.*]] = arith.ceildivui %[[T]], %c64
// CHECK: gpu.launch {{.*}} in (%{{.*}} = %{{.*}}, %{{.*}} = %[[MY]], %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c16{{.*}}, %{{.*}} = %c16{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%{{.*}} : memref<2x16x68xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<2x16x132xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-8: vector.load %arg2
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c16{{.*}} step %c2{{.*}} iter_args
// CHECK-COUNT-3: vector.load %arg{{[0-9]+}}[
// CHECK-COUNT-32: math.fma
// CHECK-COUNT-3: vector.load %arg{{[0-9]+}}[
// CHECK-COUNT-32: math.fma
// CHECK-NOT: math.fma
// CHECK-COUNT-8: vector.store %{{.*}}, %arg2
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: %[[GX:.*]] = arith.ceildivui %c96{{.*}}, %c128
// CHECK: %[[GY:.*]] = arith.ceildivui %[[T]], %c128
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GX]], %{{.*}} = %[[GY]], %{{.*}} = %c1{{.*}}) threads(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c16{{.*}}, %{{.*}} = %c16{{.*}}, %{{.*}} = %c1{{.*}}) workgroup(%[[AT:[a-z0-9_]+]] : memref<2x8x132xf32, #gpu.address_space<workgroup>>, %[[BT:[a-z0-9_]+]] : memref<2x8x132xf32, #gpu.address_space<workgroup>>)
// The outputs' own values: 8 rows by 2 groups of 4 columns, guarded.
// CHECK: %[[IN:.*]] = arith.andi
// CHECK: scf.if %[[IN]] -> (vector<4xf32>) {
// CHECK-NEXT: vector.load %arg2[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x96xf32>, vector<4xf32>
// CHECK: } else {
// CHECK: scf.yield %cst{{.*}} : vector<4xf32>
// CHECK-COUNT-15: vector.load %arg2[
// The first step: a vector of X along k and one of W along n a thread.
// CHECK: vector.load %arg0[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x128xf32>, vector<4xf32>
// CHECK: vector.load %arg1[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<128x96xf32>, vector<4xf32>
// CHECK-NOT: memref.load %arg
// CHECK-COUNT-4: memref.store %{{.*}}, %[[AT]][%c0{{[_0-9]*}}, %{{.*}}, %{{.*}}] : memref<2x8x132xf32
// CHECK: vector.store %{{.*}}, %[[BT]][%c0{{[_0-9]*}}, %{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c128{{.*}} step %c8{{.*}} iter_args
// CHECK-NOT: gpu.barrier
// CHECK: %[[BUF:.*]] = arith.remui %{{.*}}, %c2
// CHECK: %[[OTHER:.*]] = arith.subi %c1{{.*}}, %[[BUF]]
// CHECK: arith.minui %{{.*}}, %c120
// CHECK: vector.load %arg0
// CHECK: vector.load %arg1
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c2{{.*}} iter_args
// CHECK-COUNT-2: vector.load %[[AT]][%[[BUF]], %{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<2x8x132xf32, #gpu.address_space<workgroup>>, vector<4xf32>
// CHECK-COUNT-2: vector.load %[[BT]][%[[BUF]], %{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-64: math.fma
// CHECK-COUNT-2: vector.load %[[AT]][%[[BUF]]
// CHECK-COUNT-2: vector.load %[[BT]][%[[BUF]]
// CHECK-COUNT-64: math.fma
// CHECK-NOT: math.fma
// CHECK: scf.yield
// CHECK-NOT: gpu.barrier
// CHECK-COUNT-4: memref.store %{{.*}}, %[[AT]][%[[OTHER]], %{{.*}}, %{{.*}}]
// CHECK: vector.store %{{.*}}, %[[BT]][%[[OTHER]], %{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: vector.from_elements
// CHECK-NEXT: vector.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] {alignment = 16 : i64} : memref<?x96xf32>, vector<4xf32>
// CHECK-COUNT-15: vector.store %{{.*}}, %arg2[
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
// tiles stage 8 values of k, and the weights stay bf16 (in workgroup memory,
// or in the direct tiles' registers), widened by the generic's body. The
// one-row tiles' A share (8 x 1 = 8 elements for 64 threads) is copied by
// the first 8 threads only. In the
// register-blocked tiles X still travels as vector<4xf32>s, but the 16-bit
// weights element by element (4 a thread), read back from their tile as
// vector<4xbf16>s; the partials (n not last: [t, n, j]) element by element.
// CHECK-LABEL: func.func @partial
// CHECK: %[[Z:.*]] = arith.muli %c1{{.*}}, %c3
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}, {{.*}}, %{{.*}} = %[[Z]]) threads
// CHECK-SAME: workgroup(%{{.*}} : memref<8x2xf32, #gpu.address_space<workgroup>>) {
// CHECK: arith.cmpi ult, %{{.*}}, %c8
// CHECK-COUNT-8: memref.load %arg1[{{.*}}] : memref<3x8x64xbf16>
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c8{{.*}} step %c8
// CHECK: %[[IN:.*]] = arith.cmpi ult, %{{.*}}, %c8
// CHECK: scf.if %[[IN]] {
// CHECK-NEXT: memref.store %{{.*}}, %{{.*}} : memref<8x2xf32, #gpu.address_space<workgroup>>
// CHECK: arith.extf
// CHECK: math.fma
// CHECK: gpu.launch {{.*}} = %[[Z]]) threads({{.*}} = %c16{{[_0-9]*}}, %{{[a-z0-9]*}} = %c16{{[_0-9]*}}, {{.*}} workgroup(%{{.*}} : memref<2x8x132xf32, #gpu.address_space<workgroup>>, %[[WT:[a-z0-9_]+]] : memref<2x8x132xbf16, #gpu.address_space<workgroup>>)
// CHECK-NOT: vector.load %arg2
// CHECK: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x3x8xf32>, vector<4xf32>
// CHECK-COUNT-4: memref.load %arg1[{{.*}}] : memref<3x8x64xbf16>
// CHECK-NOT: vector.load %arg1
// CHECK: scf.for
// CHECK: vector.load %[[WT]][{{.*}}] {alignment = 8 : i64} : memref<2x8x132xbf16, #gpu.address_space<workgroup>>, vector<4xbf16>
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

// Transposed weights (`x @ W^T`, W[n, k] read through a swapped map): W's
// last index is k, so the one-row and 8-row shapes are staged, not direct
// (both inputs in workgroup memory, W copied along k), and in the
// register-blocked tiles it travels like X, as vector<4xf32>s of 4 k of one
// column, stored element by element into the k-major tile.
// CHECK-LABEL: func.func @transposed
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<64x2xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<64x65xf32, #gpu.address_space<workgroup>>)
// CHECK: gpu.launch {{.*}} workgroup(%{{.*}} : memref<32x9xf32, #gpu.address_space<workgroup>>, %{{.*}} : memref<32x65xf32, #gpu.address_space<workgroup>>)
// CHECK: gpu.launch {{.*}} workgroup(%[[AT:[a-z0-9_]+]] : memref<2x8x132xf32, #gpu.address_space<workgroup>>, %[[BT:[a-z0-9_]+]] : memref<2x8x132xf32, #gpu.address_space<workgroup>>)
// CHECK: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x128xf32>, vector<4xf32>
// CHECK: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<96x128xf32>, vector<4xf32>
// CHECK-COUNT-4: memref.store %{{.*}}, %[[AT]]
// CHECK-COUNT-4: memref.store %{{.*}}, %[[BT]]
// CHECK-NOT: vector.store
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: vector.load %arg1[{{.*}}] {alignment = 16 : i64} : memref<96x128xf32>, vector<4xf32>
// CHECK: vector.load %[[BT]]
func.func @transposed(%x: memref<?x128xf32>, %w: memref<96x128xf32>, %y: memref<?x96xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>, affine_map<(t, n, k) -> (n, k)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<96x128xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %f = math.fma %p, %q, %acc : f32
    linalg.yield %f : f32
  }
  return
}

// -----

// Operands that cannot travel as vectors: 90 columns, which 4 does not
// divide (a group of 4 could cross the end), so the weights are loaded
// element by element (4 a thread, each guarded by its column, zero past
// the end) and stored so into their tile, and the outputs are read and
// written element by element, each guarded by its row and column. X still
// travels as vector<4xf32>s. The fold reads both tiles as vectors all the
// same (their layout is the kernel's own).
// CHECK-LABEL: func.func @scalar
// CHECK: gpu.launch {{.*}} workgroup(%[[AT:[a-z0-9_]+]] : memref<2x8x132xf32, #gpu.address_space<workgroup>>, %[[BT:[a-z0-9_]+]] : memref<2x8x132xf32, #gpu.address_space<workgroup>>)
// CHECK-NOT: vector.load %arg2
// CHECK: %[[IN:.*]] = arith.andi
// CHECK: scf.if %[[IN]] -> (f32) {
// CHECK-NEXT: memref.load %arg2[%{{.*}}, %{{.*}}] : memref<?x90xf32>
// CHECK-COUNT-63: memref.load %arg2[
// CHECK: vector.load %arg0[{{.*}}] {alignment = 16 : i64} : memref<?x128xf32>, vector<4xf32>
// CHECK: %[[COL:.*]] = arith.cmpi ult, %{{.*}}, %c90
// CHECK: scf.if %[[COL]] -> (f32) {
// CHECK-NEXT: memref.load %arg1[%{{.*}}, %{{.*}}] : memref<128x90xf32>
// CHECK-COUNT-3: memref.load %arg1[
// CHECK-NOT: vector.load %arg1
// CHECK-COUNT-4: memref.store %{{.*}}, %[[AT]]
// CHECK-COUNT-4: memref.store %{{.*}}, %[[BT]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: vector.load %[[AT]]
// CHECK: vector.load %[[BT]]
// CHECK: gpu.barrier
// CHECK: scf.if %{{.*}} {
// CHECK-NEXT: memref.store %{{.*}}, %arg2[%{{.*}}, %{{.*}}] : memref<?x90xf32>
// CHECK-COUNT-63: memref.store %{{.*}}, %arg2[
// CHECK-NOT: vector.store
// CHECK: gpu.terminator
func.func @scalar(%x: memref<?x128xf32>, %w: memref<128x90xf32>, %y: memref<?x90xf32>) {
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>, affine_map<(t, n, k) -> (k, n)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<128x90xf32>) outs(%y : memref<?x90xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %f = math.fma %p, %q, %acc : f32
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

// -----

// A fill of the output just before: every tile starts its outputs from the
// fill's value (no load of the output, no fill kernel); the fill moves into
// the branch that keeps the plain generic.
// CHECK-LABEL: func.func @forwarded
// CHECK-SAME: %[[Y:[a-z0-9]+]]: memref<?x96xf32>, %[[C:[a-z0-9]+]]: f32
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch
// CHECK-NOT: memref.load %[[Y]]
// CHECK-NOT: vector.load %[[Y]]
// CHECK: linalg.fill ins(%[[C]] : f32) outs(%[[Y]]
// CHECK-NEXT: linalg.generic
func.func @forwarded(%x: memref<?x128xf32>, %w: memref<128x96xf32>, %y: memref<?x96xf32>, %c: f32) {
  linalg.fill ins(%c : f32) outs(%y : memref<?x96xf32>)
  linalg.generic {indexing_maps = [affine_map<(t, n, k) -> (t, k)>, affine_map<(t, n, k) -> (k, n)>,
                                   affine_map<(t, n, k) -> (t, n)>],
                  iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : memref<?x128xf32>, memref<128x96xf32>) outs(%y : memref<?x96xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %f = math.fma %p, %q, %acc : f32
    linalg.yield %f : f32
  }
  return
}

// -----

#a = affine_map<(t, n, k) -> (t, k)>
#b = affine_map<(t, n, k) -> (k, n)>
#o = affine_map<(t, n, k) -> (t, n)>

// Two projections of one input (q and k of a hidden state), with k's fill
// between them: one launch a tile shape for both, at the second's place.
// Block x runs over q's column tiles (ceil(96/64)), then k's (ceil(32/64));
// a block computes q's tile x, or k's tile x - ceil(96/64), exactly as its
// own launch would (the unsigned difference wraps past the count before a
// member's first block). The workgroup tiles are shared. Both fills are
// forwarded; without rows, each generic runs after its own fill.
// CHECK-LABEL: func.func @group
// CHECK: scf.if
// CHECK: scf.if
// CHECK: %[[NQ:.*]] = arith.ceildivui %c96, %c64
// CHECK: %[[NK:.*]] = arith.ceildivui %c32, %{{.*}}
// CHECK: %[[GX:.*]] = arith.addi %[[NQ]], %[[NK]]
// CHECK: gpu.launch blocks(%[[BX:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[GX]], {{.*}} workgroup(%{{.*}} : memref<64x2xf32, #gpu.address_space<workgroup>>) {
// CHECK: %[[XQ:.*]] = arith.subi %[[BX]], %c0
// CHECK: %[[INQ:.*]] = arith.cmpi ult, %[[XQ]], %[[NQ]]
// CHECK: scf.if %[[INQ]] {
// CHECK: memref.load %arg1[
// CHECK: memref.store %{{.*}}, %arg3[
// CHECK: %[[XK:.*]] = arith.subi %[[BX]], %[[NQ]]
// CHECK: %[[INK:.*]] = arith.cmpi ult, %[[XK]], %[[NK]]
// CHECK: scf.if %[[INK]] {
// CHECK: memref.load %arg2[
// CHECK: memref.store %{{.*}}, %arg4[
// CHECK: gpu.terminator
// CHECK-COUNT-5: gpu.launch
// CHECK-NOT: gpu.launch
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg3
// CHECK-NEXT: linalg.generic {{.*}} ins(%arg0, %arg1
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%arg4
// CHECK-NEXT: linalg.generic {{.*}} ins(%arg0, %arg2
// CHECK-NOT: gpu.launch
// CHECK: return
func.func @group(%x: memref<?x128xf32>, %wq: memref<128x96xf32>, %wk: memref<128x32xf32>,
                 %q: memref<?x96xf32>, %k: memref<?x32xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%q : memref<?x96xf32>)
  linalg.generic {indexing_maps = [#a, #b, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wq : memref<?x128xf32>, memref<128x96xf32>) outs(%q : memref<?x96xf32>) {
  ^bb0(%p: f32, %w: f32, %acc: f32):
    %r = math.fma %p, %w, %acc : f32
    linalg.yield %r : f32
  }
  linalg.fill ins(%zero : f32) outs(%k : memref<?x32xf32>)
  linalg.generic {indexing_maps = [#a, #b, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wk : memref<?x128xf32>, memref<128x32xf32>) outs(%k : memref<?x32xf32>) {
  ^bb0(%p: f32, %w: f32, %acc: f32):
    %r = math.fma %p, %w, %acc : f32
    linalg.yield %r : f32
  }
  return
}
