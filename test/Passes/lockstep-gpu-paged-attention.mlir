// RUN: lockstep-opt %s --split-input-file --lockstep-gpu-paged-attention | FileCheck %s
// RUN: lockstep-opt %s --split-input-file --lockstep-gpu-paged-attention=max-chunk=4 | FileCheck %s --check-prefix=LEFT
// RUN: lockstep-opt %s --split-input-file --lockstep-gpu-paged-attention | FileCheck %s --check-prefix=FOLD
// RUN: lockstep-opt %s --split-input-file --lockstep-gpu-paged-attention --lockstep-canonical-reductions \
// RUN:   --lockstep-verify-invariance --lockstep-expand-math \
// RUN:   --one-shot-bufferize="bufferize-function-boundaries function-boundary-type-conversion=identity-layout-map" \
// RUN:   --buffer-deallocation-pipeline | FileCheck %s --check-prefix=BUF

// The ragged step's attention (4 query heads over 2 key heads, head size 8,
// a window of 5 keys, a soft cap, a scale): the expansion's request count
// and pool writes, then the kernels, none for an empty step. A step of at
// most 65536 (token, head, chunk) items takes the split form: a warp a
// chunk of a (token, head), 128 threads a block, ceil(T * 4 * chunks / 4)
// blocks, writing the chunk's statistics (m_j, s_j, o_j: 2 + 8 floats) to
// a scratch buffer; then a warp a (token, head) merging them in chunk
// order. Larger steps take one kernel, a warp a (token, head) looping over
// its chunks. Per chunk of 64 keys (from the chunk of key pos - 4 to the
// chunk of pos) each lane scores keys lane and lane + 32: the dot over d
// in order from +0.0 (4 values of the row-major key pool read at a time)
// at the row of min(k, L - 1, pos), scaled, capped, masked to k <= pos and
// k + 5 > pos. Then the chunk's max (each lane's two keys, then xor
// shuffles across the warp: a max is exact in any order), exp(x - m_j) of
// each lane's keys, and one pass over the chunk's keys in order, 8 at a
// time: each key's weight and value row (block * bs + slot) shuffled from
// its lane and its value column loaded from the value pool seen as
// [blocks * bs, 2, 8], then for each key its weight added to the sum and
// fma(p, v, o); then the expansion's merge (selects that skip a chunk of
// -inf).
// CHECK-LABEL: func.func @paged
// CHECK-NOT: lockstep.paged_attention
// CHECK: %[[REQ:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: %[[KP:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %arg3)
// CHECK: tensor.insert_slice
// CHECK: } {lockstep.disjoint_iterations}
// CHECK: %[[VP:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %arg4)
// CHECK: } {lockstep.disjoint_iterations}
// CHECK: %[[CHUNKS:.*]] = arith.ceildivui %{{.*}}, %c64
// CHECK-DAG: %[[Q:.*]] = bufferization.to_buffer %arg0 read_only
// CHECK-DAG: %[[K:.*]] = bufferization.to_buffer %[[KP]] read_only
// CHECK-DAG: %[[VB:.*]] = bufferization.to_buffer %[[VP]] read_only : tensor<?x?x2x8xf32> to memref<?x?x2x8xf32>
// CHECK-DAG: %[[V:.*]] = memref.collapse_shape %[[VB]] {{\[\[}}0, 1], [2], [3]]
// CHECK-DAG: %[[R:.*]] = bufferization.to_buffer %[[REQ]] read_only
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<1x4x?x8xf32>
// CHECK: scf.if
// CHECK: %[[ITEMS:.*]] = arith.muli %{{.*}}, %[[CHUNKS]]
// CHECK: %[[SPLIT:.*]] = arith.cmpi ule, %[[ITEMS]], %c65536
// CHECK: scf.if %[[SPLIT]]
// CHECK: %[[N:.*]] = arith.muli %[[ITEMS]], %c10
// CHECK: %[[SCR:.*]] = memref.alloc(%[[N]]) : memref<?xf32>
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads({{.*}}) in (%{{.*}} = %c128,
// CHECK: scf.if
// CHECK: arith.divui %{{.*}}, %c64
// CHECK: arith.minui %{{.*}}, %[[CHUNKS]]
// CHECK: scf.if
// CHECK: scf.for %{{.*}} = %{{.*}} to %c8
// CHECK: vector.load %[[K]]{{.*}} {alignment = 16 : i64} : memref<?x?x2x8xf32>, vector<4xf32>
// CHECK: math.fma
// CHECK: arith.mulf
// CHECK: arith.divf
// CHECK: math.tanh
// CHECK: arith.cmpi ule
// CHECK: arith.cmpi ugt
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst
// CHECK: arith.maximumf
// CHECK: gpu.shuffle  xor %{{.*}}, %c16_i32, %c32_i32
// CHECK: arith.maximumf
// CHECK: gpu.shuffle  xor %{{.*}}, %c1_i32, %c32_i32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.exp
// CHECK: gpu.shuffle  idx {{.*}} : f32
// CHECK: %[[ROW:[^,]*]], %{{.*}} = gpu.shuffle  idx {{.*}} : i32
// CHECK: %[[RI:.*]] = arith.index_cast %[[ROW]]
// CHECK: memref.load %[[V]][%[[RI]], %{{.*}}, %{{.*}}] : memref<?x2x8xf32>
// CHECK: gpu.shuffle  idx
// CHECK: arith.addf
// CHECK: arith.select
// CHECK: math.fma
// CHECK: arith.select
// CHECK: math.fma
// CHECK: arith.select
// CHECK: memref.store %{{.*}}, %[[SCR]]
// CHECK: memref.store %{{.*}}, %[[SCR]]
// CHECK: memref.store %{{.*}}, %[[SCR]]
// CHECK: gpu.terminator
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %cst{{.*}}, %{{.*}} = %cst{{.*}}, %{{.*}} = %cst{{.*}}) -> (f32, f32, f32)
// CHECK: memref.load %[[SCR]]
// CHECK: memref.load %[[SCR]]
// CHECK: memref.load %[[SCR]]
// CHECK: arith.maximumf
// CHECK: arith.select
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK: } else {
// CHECK: gpu.launch
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %cst{{.*}}, %{{.*}} = %cst{{.*}}, %{{.*}} = %cst{{.*}}) -> (f32, f32, f32)
// CHECK: vector.load %[[K]]
// CHECK: gpu.shuffle  xor
// CHECK: memref.load %[[V]]
// CHECK: math.fma
// CHECK: arith.maximumf
// CHECK: arith.select
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
//
// Inside a warp of the split form's first kernel the loops are the dot's
// steps over d and, for each of a lane's two keys, the pass over the
// chunk's keys in groups of 8 (each group's shuffles and value loads built
// before its folds); the max has no loop. The merge kernel's one loop is
// the chunks'; the one-kernel form loops over the chunks around the same.
// FOLD-LABEL: func.func @paged
// FOLD: gpu.launch
// FOLD: scf.for
// FOLD-NOT: scf.for
// FOLD: gpu.shuffle  xor
// FOLD: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c8
// FOLD: gpu.shuffle  idx
// FOLD: memref.load
// FOLD: arith.addf
// FOLD: math.fma
// FOLD: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c8
// FOLD-NOT: scf.for
// FOLD: gpu.terminator
// FOLD: gpu.launch
// FOLD: scf.for
// FOLD-NOT: scf.for
// FOLD: gpu.terminator
// FOLD: gpu.launch
// FOLD: scf.for
// FOLD: scf.for
// FOLD-NOT: scf.for
// FOLD: gpu.shuffle  xor
// FOLD: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c8
// FOLD: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c8
// FOLD-NOT: scf.for
// FOLD: gpu.terminator
//
// The bufferized step: the kernel reads the pool arguments the writes
// went into, and buffer deallocation accepts it (no barrier in it) and
// frees the split form's scratch after its two kernels.
// BUF-LABEL: func.func @paged
// BUF: %[[S:.*]] = memref.alloc(%{{.*}}) : memref<?xf32>
// BUF: gpu.launch
// BUF: gpu.shuffle
// BUF: gpu.launch
// BUF: memref.dealloc %[[S]]
// BUF: } else {
// BUF: gpu.launch
// BUF: memref.dealloc
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

// Two layers of one step (the same positions and seq_starts): the second
// kernel uses the first layer's token -> request map, so one count over
// seq_starts is built, and both kernels read it. A third attention over
// other positions builds its own.
// CHECK-LABEL: func.func @layers
// CHECK: %[[REQ:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: bufferization.to_buffer %[[REQ]] read_only
// CHECK: gpu.launch
// CHECK-NOT: iterator_types = ["parallel", "reduction"]
// CHECK: bufferization.to_buffer %[[REQ]] read_only
// CHECK: gpu.launch
// CHECK: %[[OTHER:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: bufferization.to_buffer %[[OTHER]] read_only
// CHECK: gpu.launch
func.func @layers(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                  %v: tensor<1x2x?x8xf32>, %kp: tensor<?x?x2x8xf32>,
                  %vp: tensor<?x?x2x8xf32>, %kp2: tensor<?x?x2x8xf32>,
                  %vp2: tensor<?x?x2x8xf32>, %pos: tensor<?xi64>, %pos2: tensor<?xi64>,
                  %starts: tensor<?xi64>, %tables: tensor<?x?xi32>)
    -> (tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>) {
  %o = lockstep.paged_attention %q, %k, %v, %kp, %vp, %pos, %starts, %tables
      : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>) -> tensor<1x4x?x8xf32>
  %o2 = lockstep.paged_attention %o, %k, %v, %kp2, %vp2, %pos, %starts, %tables
      : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>) -> tensor<1x4x?x8xf32>
  %o3 = lockstep.paged_attention %o2, %k, %v, %kp2, %vp2, %pos2, %starts, %tables
      : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>) -> tensor<1x4x?x8xf32>
  return %o, %o2, %o3 : tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>, tensor<1x4x?x8xf32>
}

// -----

// The exporters' layout: the result's only use is a transpose to
// [1, T, 4, 8]. The kernels store y at [0, t, h, e] of a [1, T, 4, 8]
// buffer that replaces the transpose: no copy is left.
// CHECK-LABEL: func.func @transposed
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<1x?x4x8xf32>
// CHECK: gpu.launch
// CHECK: gpu.launch
// CHECK: %[[T:.*]] = arith.divui %{{.*}}, %c4
// CHECK: %[[H:.*]] = arith.remui %{{.*}}, %c4
// CHECK: memref.store %{{.*}}, %[[OUT]][%{{.*}}, %[[T]], %[[H]], %{{.*}}] : memref<1x?x4x8xf32>
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
