// RUN: lockstep-opt %s --split-input-file --lockstep-cpu-paged-attention | FileCheck %s
// RUN: lockstep-opt %s --split-input-file --lockstep-cpu-paged-attention=max-chunk=4 | FileCheck %s --check-prefix=LEFT
// RUN: lockstep-opt %s --split-input-file --lockstep-cpu-paged-attention=lanes=16 | FileCheck %s --check-prefix=WIDE
// RUN: lockstep-opt %s --split-input-file --lockstep-cpu-paged-attention --lockstep-canonical-reductions \
// RUN:   --lockstep-verify-invariance --lockstep-expand-math \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-deallocation-pipeline | FileCheck %s --check-prefix=BUF

// The ragged step's attention (4 query heads over 2 key heads, head size 8,
// a window of 5 keys, a soft cap, a scale): the expansion's request count
// and pool writes, then one scf.parallel over (block of 8 tokens, key
// head), its scratch for the 2 query heads of the key head on the stack
// of one iteration (queries [2][8][8], scores [2][64][8], o [2][8][8],
// statistics [2][4][8]). Each run of one request's tokens: a single token
// (decode) has its keys as lanes: 8 keys' rows read from the flat key pool
// 8 values of d at a time and transposed (24 shuffles) into a vector of the
// keys for each d, one fma a head (the dot over d in order from +0.0),
// scaled, capped and masked, then per head the chunk's max and exp(x - m_j)
// with their sum over the keys in order (scalars), the expansion's merge
// (selects that skip a chunk of -inf) and, for a lane whose chunk is not
// all masked, o_j over the keys in order (fma of the weight and a value
// row). More tokens are the lanes: their queries transposed, each key's
// value broadcast into 2 heads x 4 keys of accumulators, then the same
// statistics on vectors of tokens.
// CHECK-LABEL: func.func @paged
// CHECK-NOT: lockstep.paged_attention
// CHECK: %[[KP:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %arg3)
// CHECK: } {lockstep.disjoint_iterations}
// CHECK: %[[VP:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %arg4)
// CHECK: } {lockstep.disjoint_iterations}
// CHECK: arith.ceildivui %{{.*}}, %c64
// CHECK: %[[KB:.*]] = bufferization.to_buffer %[[KP]] read_only : tensor<?x?x2x8xf32> to memref<?x?x2x8xf32>
// CHECK: %[[VB:.*]] = bufferization.to_buffer %[[VP]] read_only : tensor<?x?x2x8xf32> to memref<?x?x2x8xf32>
// CHECK: %[[V:.*]] = memref.collapse_shape %[[VB]] {{\[\[}}0, 1], [2], [3]]
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<1x4x?x8xf32>
// CHECK: %[[KF:.*]] = memref.collapse_shape %[[KB]] {{\[\[}}0, 1, 2, 3]] : memref<?x?x2x8xf32> into memref<?xf32>
// CHECK: %[[BLOCKS:.*]] = arith.ceildivui %{{.*}}, %c8
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = ({{.*}}) to (%[[BLOCKS]], %c2{{.*}})
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<128xf32>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<1024xf32>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<128xf32>
// CHECK: memref.alloca() {alignment = 64 : i64} : memref<64xf32>
// CHECK: scf.while
// CHECK: scf.if
// CHECK: scf.for {{.*}} -> (f32, f32, f32, f32)
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>)
// CHECK-COUNT-8: vector.load %[[KF]]
// CHECK-NOT: vector.gather
// CHECK-COUNT-24: vector.shuffle
// CHECK-NOT: vector.shuffle
// CHECK: math.fma
// CHECK: math.fma
// CHECK: arith.mulf
// CHECK: arith.divf
// CHECK: math.tanh
// CHECK: arith.select
// CHECK: arith.maximumf {{.*}} : f32
// CHECK: math.exp {{.*}} : f32
// CHECK: arith.addf {{.*}} : f32
// CHECK: scf.if
// CHECK: vector.load %[[V]]
// CHECK: math.fma {{.*}} : vector<8xf32>
// CHECK: } else {
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c4
// CHECK: scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: math.fma
// CHECK: math.tanh {{.*}} : vector<8xf32>
// CHECK: arith.maximumf {{.*}} : vector<8xf32>
// CHECK: math.exp {{.*}} : vector<8xf32>
// CHECK: arith.divf
// CHECK: vector.store %{{.*}}, %[[OUT]]
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
//
// 16 lanes (AVX-512): blocks of 16 tokens; 16 keys gathered at each d, as
// the head size (8) is not a multiple of the lanes; the value columns (8)
// stay one vector of 8.
// WIDE-LABEL: func.func @paged
// WIDE: arith.ceildivui %{{.*}}, %c16
// WIDE: memref.alloca() {alignment = 64 : i64} : memref<256xf32>
// WIDE: memref.alloca() {alignment = 64 : i64} : memref<2048xf32>
// WIDE: vector.gather {{.*}} : memref<?xf32>, vector<16xindex>, vector<16xi1>, vector<16xf32>
// WIDE: math.fma {{.*}} : vector<8xf32>
//
// Bufferized: the loop reads the pool arguments the writes went into.
// BUF-LABEL: func.func @paged
// BUF: memref.collapse_shape %arg4 {{\[\[}}0, 1], [2], [3]]
// BUF: memref.collapse_shape %arg3 {{\[\[}}0, 1, 2, 3]]
// BUF: scf.parallel
// BUF: vector.shuffle
// BUF-NOT: bufferization.to_tensor
// BUF: return
func.func @paged(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                 %v: tensor<1x2x?x8xf32>, %kp: tensor<?x?x2x8xf32>,
                 %vp: tensor<?x?x2x8xf32>, %pos: tensor<?xi64>,
                 %starts: tensor<?xi64>, %tables: tensor<?x?xi32>, %sc: tensor<f32>)
    -> tensor<1x4x?x8xf32> {
  %o = lockstep.paged_attention %q, %k, %v, %kp, %vp, %pos, %starts, %tables scale %sc
      {window = 5 : i64, softcap = 30.0 : f64}
      : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>, tensor<f32>)
      -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}


// -----

// Keys that are one static chunk (2 blocks of 16 positions) are folded
// whole by the expansion, without a merge: left to it. So is a head size
// over max-chunk (LEFT).
// CHECK-LABEL: func.func @one_chunk
// CHECK: lockstep.paged_attention
// LEFT-LABEL: func.func @paged
// LEFT: lockstep.paged_attention
// LEFT-LABEL: func.func @one_chunk
// LEFT: lockstep.paged_attention
func.func @one_chunk(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                     %v: tensor<1x2x?x8xf32>, %kp: tensor<?x16x2x8xf32>,
                     %vp: tensor<?x16x2x8xf32>, %pos: tensor<?xi64>,
                     %starts: tensor<?xi64>, %tables: tensor<?x2xi32>)
    -> tensor<1x4x?x8xf32> {
  %o = lockstep.paged_attention %q, %k, %v, %kp, %vp, %pos, %starts, %tables
      : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x16x2x8xf32>,
         tensor<?x16x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x2xi32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}


// -----

// The exporters' layout: the result's only use is a transpose to
// [1, T, 4, 8]. y is stored at [0, t, h, e] of a [1, T, 4, 8] buffer that
// replaces the transpose: no copy is left.
// CHECK-LABEL: func.func @transposed
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<1x?x4x8xf32>
// CHECK: scf.parallel
// CHECK: vector.store %{{.*}}, %[[OUT]][%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] : memref<1x?x4x8xf32>, vector<8xf32>
// CHECK: %[[Y:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<1x?x4x8xf32>
// CHECK-NOT: linalg.transpose
// CHECK: return %[[Y]]
func.func @transposed(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                      %v: tensor<1x2x?x8xf32>, %kp: tensor<?x?x2x8xf32>,
                      %vp: tensor<?x?x2x8xf32>, %pos: tensor<?xi64>,
                      %starts: tensor<?xi64>, %tables: tensor<?x?xi32>)
    -> tensor<1x?x4x8xf32> {
  %c2 = arith.constant 2 : index
  %t = tensor.dim %q, %c2 : tensor<1x4x?x8xf32>
  %o = lockstep.paged_attention %q, %k, %v, %kp, %vp, %pos, %starts, %tables
      : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>) -> tensor<1x4x?x8xf32>
  %ye = tensor.empty(%t) : tensor<1x?x4x8xf32>
  %y = linalg.transpose ins(%o : tensor<1x4x?x8xf32>) outs(%ye : tensor<1x?x4x8xf32>)
      permutation = [0, 2, 1, 3]
  return %y : tensor<1x?x4x8xf32>
}
