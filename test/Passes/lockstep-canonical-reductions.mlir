// RUN: lockstep-opt %s --split-input-file --lockstep-canonical-reductions | FileCheck %s
// RUN: lockstep-opt %s --split-input-file --lockstep-canonical-reductions=policy=adaptive | FileCheck %s --check-prefix=ADAPT
// RUN: lockstep-opt %s --split-input-file --lockstep-canonical-reductions=policy=adaptive-kv | FileCheck %s --check-prefix=KV
// RUN: lockstep-opt %s --split-input-file --lockstep-canonical-reductions=policy=adaptive-softmax | FileCheck %s --check-prefix=SOFTMAX
// RUN: not lockstep-opt %s --split-input-file --lockstep-canonical-reductions=policy=adaptive-threads 2>&1 | FileCheck %s --check-prefix=THREADS
// Without the global (every case but the last), the pass says what it needs.
// THREADS: error: policy=adaptive-threads needs the module to declare memref.global @lockstep_thread_count

// The other negative controls touch only their own kind of reduction:
// adaptive-kv leaves a matmul and a softmax in the contract's form and
// splits attention's key chunks by the query's rows (16 keys a chunk when
// they are fewer than 4, the contract's width otherwise); adaptive-softmax
// splits only softmax.
// KV-LABEL: func.func @matmul_dynamic_k
// KV-NOT: scf.if
// KV-LABEL: func.func @softmax_dynamic
// KV-NOT: scf.if
// KV-LABEL: func.func @adaptive_sum
// KV-LABEL: func.func @attention_causal
// KV: %[[ROWS:.*]] = tensor.dim %arg0, %c2
// KV: %[[FEW:.*]] = arith.cmpi ult, %[[ROWS]], %c4
// KV: scf.if %[[FEW]] -> (tensor<1x2x?x8xf32>)
// KV: tensor.expand_shape {{.*}} output_shape [{{.*}}, 16]
// KV: } else {
// KV: tensor.expand_shape {{.*}} output_shape [{{.*}}, 64]
// SOFTMAX-LABEL: func.func @matmul_dynamic_k
// SOFTMAX-NOT: scf.if
// SOFTMAX-LABEL: func.func @softmax_dynamic
// SOFTMAX: scf.if
// SOFTMAX-LABEL: func.func @attention_causal
// SOFTMAX-NOT: scf.if

#mk = affine_map<(m, k, n) -> (m, k)>
#kn = affine_map<(m, k, n) -> (k, n)>
#mn = affine_map<(m, k, n) -> (m, n)>

// A matmul over a dynamic k: 64-wide partials over k = 64j + k' (the
// operands sliced to the whole chunks and expanded, A's k at dim 1 and B's
// at dim 0), a combine folding the partials over j into the zero init, and
// a tail over the last L mod 64 elements added after it. The chunk count
// is the reduced dim's own length over 64.
// CHECK-LABEL: func @matmul_dynamic_k
// CHECK: %[[L:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[N:.*]] = arith.divui %[[L]], %c64
// CHECK: %[[FULL:.*]] = arith.muli %[[N]], %c64
// CHECK: %[[AS:.*]] = tensor.extract_slice %arg0[0, 0] [%{{.*}}, %[[FULL]]] [1, 1]
// CHECK: %[[AE:.*]] = tensor.expand_shape %[[AS]] {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, %[[N]], 64]
// CHECK: %[[BS:.*]] = tensor.extract_slice %arg1[0, 0] [%[[FULL]], 32] [1, 1]
// CHECK: %[[BE:.*]] = tensor.expand_shape %[[BS]] {{\[\[}}0, 1], [2]] output_shape [%[[N]], 64, 32]
// CHECK: %[[P:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "parallel"]} ins(%[[AE]], %[[BE]] : tensor<?x?x64xf32>, tensor<?x64x32xf32>) outs(%{{.*}} : tensor<?x?x32xf32>) attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64}
// CHECK: math.fma
// CHECK: %[[C:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[P]] : tensor<?x?x32xf32>) outs(%arg2 : tensor<?x32xf32>) attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64}
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: arith.addf %[[ACC]], %[[IN]]
// CHECK: %[[TL:.*]] = arith.subi %[[L]], %[[FULL]]
// CHECK: tensor.extract_slice %arg0[0, %[[FULL]]] [%{{.*}}, %[[TL]]] [1, 1]
// CHECK: tensor.extract_slice %arg1[%[[FULL]], 0] [%[[TL]], 32] [1, 1]
// CHECK: %[[T:.*]] = linalg.generic {{.*}} attrs = {lockstep.chunk_role = "tail", lockstep.chunk_width = 64 : i64}
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[T]] : tensor<?x32xf32>) outs(%[[C]] : tensor<?x32xf32>)
// CHECK: return %[[R]]
func.func @matmul_dynamic_k(%a: tensor<?x?xf32>, %b: tensor<?x32xf32>, %init: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %r = linalg.generic {indexing_maps = [#mk, #kn, #mn], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%a, %b : tensor<?x?xf32>, tensor<?x32xf32>) outs(%init : tensor<?x32xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %f = math.fma %x, %y, %acc : f32
    linalg.yield %f : f32
  } -> tensor<?x32xf32>
  return %r : tensor<?x32xf32>
}

// -----

// A product with transposed weights, loops (m, n, k) with k last: no output
// dim follows k, and A is broadcast along the output's last dim n, so the
// chunk index j goes before n: partials [m, j, n], the output's columns
// still contiguous. A row sum (one input, reading every output dim) keeps j
// last: partials [m, j] of its [m] output.
#tmk = affine_map<(m, n, k) -> (m, k)>
#tnk = affine_map<(m, n, k) -> (n, k)>
#tmn = affine_map<(m, n, k) -> (m, n)>
#rmk = affine_map<(m, k) -> (m, k)>
#rm = affine_map<(m, k) -> (m)>
// CHECK-LABEL: func @matmul_transposed
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x3x256xf32>, tensor<40x3x256xf32>) outs(%{{.*}} : tensor<?x3x40xf32>) attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 256 : i64}
// CHECK: linalg.generic {{.*}} ins(%{{.*}} : tensor<?x3x256xf32>) outs(%{{.*}} : tensor<?x3xf32>) attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 256 : i64}
func.func @matmul_transposed(%a: tensor<?x768xf32>, %b: tensor<40x768xf32>, %init: tensor<?x40xf32>,
                             %rinit: tensor<?xf32>) -> (tensor<?x40xf32>, tensor<?xf32>) {
  %r = linalg.generic {indexing_maps = [#tmk, #tnk, #tmn], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<?x768xf32>, tensor<40x768xf32>) outs(%init : tensor<?x40xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %f = math.fma %x, %y, %acc : f32
    linalg.yield %f : f32
  } -> tensor<?x40xf32>
  %s = linalg.generic {indexing_maps = [#rmk, #rm], iterator_types = ["parallel", "reduction"]}
      ins(%a : tensor<?x768xf32>) outs(%rinit : tensor<?xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %f = arith.addf %acc, %x : f32
    linalg.yield %f : f32
  } -> tensor<?xf32>
  return %r, %s : tensor<?x40xf32>, tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A static length of at most 256 is one chunk: the op is only marked.
// CHECK-LABEL: func @sum_short
// CHECK: linalg.generic {{.*}} attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 200 : i64}
// CHECK-NOT: linalg.generic
func.func @sum_short(%x: tensor<?x200xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x200xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A static length over 256 takes its largest divisor in [64, 256] (768 =
// 3 x 256): whole chunks only, no slice and no tail.
// CHECK-LABEL: func @sum_static_divisible
// CHECK-NOT: tensor.extract_slice
// CHECK: tensor.expand_shape %arg0 {{\[\[}}0], [1, 2]] output_shape [%{{.*}}, 3, 256] : tensor<?x768xf32> into tensor<?x3x256xf32>
// CHECK: attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 256 : i64}
// CHECK: attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 256 : i64}
// CHECK-NOT: "tail"
func.func @sum_static_divisible(%x: tensor<?x768xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x768xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A prime static length (257) has no divisor in range: one chunk of 256
// and a tail of 1.
// CHECK-LABEL: func @sum_static_prime
// CHECK: tensor.extract_slice %arg0[0, 0] [%{{.*}}, 256] [1, 1]
// CHECK: "partial", lockstep.chunk_width = 256
// CHECK: "combine", lockstep.chunk_width = 256
// CHECK: tensor.extract_slice %arg0[0, 256] [%{{.*}}, 1] [1, 1]
// CHECK: "tail", lockstep.chunk_width = 256
func.func @sum_static_prime(%x: tensor<?x257xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x257xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

#in = affine_map<(i, k) -> (k)>
#out = affine_map<(i, k) -> (i)>

// A body that reads the index of the reduced dim (a masked prefix sum, as
// CumSum lowers) reads 64j + k' in the partials and k + the chunked length
// in the tail.
// CHECK-LABEL: func @indexed_body
// CHECK: "partial"
// CHECK: %[[J:.*]] = linalg.index 1 : index
// CHECK: %[[K:.*]] = linalg.index 2 : index
// CHECK: %[[JC:.*]] = arith.muli %[[J]], %c64
// CHECK: arith.addi %[[JC]], %[[K]]
// CHECK: "tail"
// CHECK: %[[T:.*]] = linalg.index 1 : index
// CHECK: arith.addi %[[T]], %{{.*}}
func.func @indexed_body(%x: tensor<?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %i = linalg.index 0 : index
    %k = linalg.index 1 : index
    %in = arith.cmpi ule, %k, %i : index
    %z = arith.constant 0.0 : f32
    %m = arith.select %in, %v, %z : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// Max is exact in any order: left as it is, unmarked.
// CHECK-LABEL: func @max_untouched
// CHECK: linalg.generic
// CHECK-NOT: lockstep.chunk_role
// CHECK: arith.maximumf
func.func @max_untouched(%x: tensor<?x?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.maximumf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// Softmax over a dynamic axis: per-chunk max (unmarked, exact) and shifted
// exp sums (partial), merged left to right (combine, two results: max and
// sum), the tail's statistics merged after, and exp(x - m) / l.
// CHECK-LABEL: func @softmax_dynamic
// CHECK: tensor.expand_shape {{.*}} into tensor<?x?x64xf32>
// CHECK: arith.maximumf
// CHECK: "partial", lockstep.chunk_width = 64
// CHECK: math.exp
// CHECK: %[[M:.*]]:2 = linalg.generic {{.*}} attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64}
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: math.exp
// CHECK: %[[LA:.*]] = arith.mulf
// CHECK: %[[SB:.*]] = arith.mulf
// CHECK: arith.addf %[[LA]], %[[SB]]
// CHECK: "tail", lockstep.chunk_width = 64
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: linalg.softmax
func.func @softmax_dynamic(%x: tensor<?x?xf32>, %out: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %r = linalg.softmax dimension(1) ins(%x : tensor<?x?xf32>) outs(%out : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// The negative control: with fewer than 4 rows (a run-time test of the
// dynamic row count), chunks of 16; otherwise the whole fold.
// ADAPT-LABEL: func @adaptive_sum
// ADAPT: %[[ROWS:.*]] = tensor.dim %arg0, %c0
// ADAPT: %[[FEW:.*]] = arith.cmpi ult, %[[ROWS]], %c4
// ADAPT: scf.if %[[FEW]]
// ADAPT: "partial", lockstep.chunk_width = 16
// ADAPT: } else {
// ADAPT: linalg.generic
// ADAPT-NOT: lockstep.chunk_role
// ADAPT: scf.yield
func.func @adaptive_sum(%x: tensor<?x64xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %r = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x64xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %acc, %v : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// lockstep.attention over a dynamic number of keys, 4 query heads over 2 key
// heads. Query heads are split as [2, 2] (expand_shape, no copy). The score
// contraction over the head size (8) is whole. The key axis of the masked
// scores and of the values is cut into 64-wide chunks counted from key 0,
// both counted from the scores' own key length: per chunk a max, the terms
// p = exp(x - m_j) once each, a partial sum of p and a partial fma fold of p
// with the values. Two combines merge the chunks left to right: one over the
// rows folds (m, l) and writes each chunk's weights (its two exps), one over
// the value columns folds o with those weights and takes no exp. A tail
// covers the remaining keys, its merge split the same way (weights per row,
// then o per column); the result is collapsed back to 4 heads.
// CHECK-LABEL: func @attention_dynamic
// CHECK: %[[Q5:.*]] = tensor.expand_shape %arg0 {{\[\[}}0], [1, 2], [3], [4]] output_shape [1, 2, 2, %{{.*}}, 8]
// CHECK: linalg.generic {{.*}} ins(%[[Q5]], %arg1 : {{.*}}) outs({{.*}}) attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 8 : i64}
// CHECK: math.fma
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %arg3, %arg4 : tensor<1x2x2x?x?xf32>, tensor<1x1x?x?xi1>, tensor<f32>)
// CHECK: arith.select
// CHECK: %[[L:.*]] = tensor.dim %[[X]], %c4
// CHECK: %[[N:.*]] = arith.divui %[[L]], %c64
// CHECK: %[[XC:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2], [3], [4, 5]] output_shape [1, 2, 2, %{{.*}}, %[[N]], 64]
// CHECK: %[[VC:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0], [1], [2, 3], [4]] output_shape [1, 2, %[[N]], 64, 8]
// CHECK: %[[M:.*]] = linalg.generic {{.*}} ins(%[[XC]] : tensor<1x2x2x?x?x64xf32>)
// CHECK: arith.maximumf
// CHECK: %[[P:.*]] = linalg.generic {{.*}} ins(%[[XC]], %[[M]] : {{.*}}) outs(%{{.*}} : tensor<1x2x2x?x?x64xf32>)
// CHECK: math.exp
// CHECK: %[[S:.*]] = linalg.generic {{.*}} ins(%[[P]] : {{.*}} attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64}
// CHECK: %[[O:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[VC]] : {{.*}} attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64}
// CHECK: math.fma
// CHECK: %[[R:.*]]:4 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[M]], %[[S]] : {{.*}} outs({{.*}} : tensor<1x2x2x?xf32>, tensor<1x2x2x?xf32>, tensor<1x2x2x?x?xf32>, tensor<1x2x2x?x?xf32>) attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64}
// CHECK-COUNT-2: math.exp
// CHECK: linalg.yield
// CHECK: %[[OC:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "parallel", "reduction"]} ins(%[[R]]#2, %[[R]]#3, %[[M]], %[[O]] : {{.*}} attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64}
// CHECK-NOT: math.exp
// CHECK: linalg.yield
// CHECK: %[[TM:.*]] = linalg.generic {{.*}} ins(%[[XT:.*]] : tensor<1x2x2x?x?xf32>)
// CHECK: arith.maximumf
// CHECK: %[[TS:.*]] = linalg.generic {{.*}} attrs = {lockstep.chunk_role = "tail", lockstep.chunk_width = 64 : i64}
// CHECK: %[[TO:.*]] = linalg.generic {{.*}} attrs = {lockstep.chunk_role = "tail", lockstep.chunk_width = 64 : i64}
// CHECK: %[[TR:.*]]:3 = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[TM]], %[[TS]], %[[R]]#0 : {{.*}}) outs(%[[R]]#1, {{.*}})
// CHECK-COUNT-2: math.exp
// CHECK: linalg.yield
// CHECK: %[[OT:.*]] = linalg.generic {{.*}} ins(%[[TR]]#1, %[[TR]]#2, %[[TM]], %[[TO]] : {{.*}}) outs(%[[OC]] : tensor<1x2x2x?x8xf32>)
// CHECK-NOT: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[OT]], %[[TR]]#0 : tensor<1x2x2x?x8xf32>, tensor<1x2x2x?xf32>)
// CHECK: arith.divf
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3], [4]] : tensor<1x2x2x?x8xf32> into tensor<1x4x?x8xf32>
func.func @attention_dynamic(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                             %v: tensor<1x2x?x8xf32>, %m: tensor<1x1x?x?xi1>,
                             %fill: tensor<f32>) -> tensor<1x4x?x8xf32> {
  %o = lockstep.attention %q, %k, %v mask %m fill %fill
      : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x1x?x?xi1>, tensor<f32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// Attention over 16 static keys: the statistics are taken whole (width 16),
// with no combine; an additive mask and a divided scale, and the guard that
// gives 0 for a row with no key kept.
// CHECK-LABEL: func @attention_static
// CHECK-NOT: "combine"
// CHECK: arith.divf
// CHECK: arith.addf
// CHECK: attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 16 : i64}
// CHECK: attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 16 : i64}
// CHECK: arith.cmpf oeq
// CHECK: arith.select
func.func @attention_static(%q: tensor<2x2x4x8xf32>, %k: tensor<2x2x16x8xf32>,
                            %v: tensor<2x2x16x8xf32>, %m: tensor<4x16xf32>,
                            %c: tensor<1xf32>) -> tensor<2x2x4x8xf32> {
  %o = lockstep.attention %q, %k, %v mask %m scale %c {scale_divides, zero_empty_rows}
      : (tensor<2x2x4x8xf32>, tensor<2x2x16x8xf32>, tensor<2x2x16x8xf32>, tensor<4x16xf32>, tensor<1xf32>) -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// A causal attention (what lockstep-introduce-kv-cache makes): query i keeps
// keys k <= i + (Sk - Sq), read from the loop indices; the others are -inf.
// CHECK-LABEL: func @attention_causal
// CHECK: %[[SQ:.*]] = tensor.dim %arg0, %c2
// CHECK: %[[SK:.*]] = tensor.dim %arg1, %c2
// CHECK: %[[SHIFT:.*]] = arith.subi %[[SK]], %[[SQ]]
// CHECK: %[[I:.*]] = linalg.index 3
// CHECK: %[[K:.*]] = linalg.index 4
// CHECK: %[[LAST:.*]] = arith.addi %[[I]], %[[SHIFT]]
// CHECK: %[[KEEP:.*]] = arith.cmpi ule, %[[K]], %[[LAST]]
// CHECK: arith.select %[[KEEP]], %{{.*}}, %cst
func.func @attention_causal(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                            %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %o = lockstep.attention %q, %k, %v {causal}
      : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// A sliding window W (proven by lockstep-prove-mask) also drops keys at or
// before position last - W, written k + W > last so that nothing wraps; a
// softcap c comes between the scale and the mask, in the graph's order:
// s / c, tanh, * c. The merge of chunk statistics leaves the accumulators
// as they are when a chunk's max is -inf (all its keys masked): a select in
// each combine, of m and l in the rows' and of o in the columns', so that
// masked chunks (before the window, or past the query) are an exact no-op.
// CHECK-LABEL: func @attention_window_softcap
// CHECK: %[[SHIFT:.*]] = arith.subi
// CHECK: arith.divf %{{.*}}, %{{.*}}
// CHECK: %[[T:.*]] = math.tanh
// CHECK: arith.mulf %[[T]]
// CHECK: %[[I:.*]] = linalg.index 3
// CHECK: %[[K:.*]] = linalg.index 4
// CHECK: %[[LAST:.*]] = arith.addi %[[I]], %[[SHIFT]]
// CHECK: %[[KEEP:.*]] = arith.cmpi ule, %[[K]], %[[LAST]]
// CHECK: %[[W:.*]] = arith.constant 6 : index
// CHECK: %[[KW:.*]] = arith.addi %[[K]], %[[W]]
// CHECK: %[[IN:.*]] = arith.cmpi ugt, %[[KW]], %[[LAST]]
// CHECK: %[[BOTH:.*]] = arith.andi %[[KEEP]], %[[IN]]
// CHECK: arith.select %[[BOTH]]
// CHECK: "combine"
// CHECK: ^bb0(%[[MJ:[^:]*]]: f32, %[[SJ:[^:]*]]: f32, %[[M:[^:]*]]: f32, %[[L:[^:]*]]: f32, %{{[^:]*}}: f32, %{{[^:]*}}: f32)
// CHECK: %[[M2:.*]] = arith.select %[[SKIP:[^,]*]], %[[M]], %{{.*}} : f32
// CHECK: %[[L2:.*]] = arith.select %[[SKIP]], %[[L]], %{{.*}} : f32
// CHECK: linalg.yield %[[M2]], %[[L2]], %{{.*}}, %{{.*}} : f32, f32, f32, f32
// CHECK: "combine"
// CHECK: ^bb0(%{{[^:]*}}: f32, %{{[^:]*}}: f32, %[[MJ2:[^:]*]]: f32, %{{[^:]*}}: f32, %[[O:[^:]*]]: f32)
// CHECK: %[[SKIP2:.*]] = arith.cmpf oeq, %[[MJ2]], %cst
// CHECK: %[[O2:.*]] = arith.select %[[SKIP2]], %[[O]], %{{.*}} : f32
// CHECK: linalg.yield %[[O2]]
func.func @attention_window_softcap(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                                    %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  %o = lockstep.attention %q, %k, %v {causal, window = 6 : i64, softcap = 5.0e+01 : f64}
      : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

// lockstep.paged_attention (the ragged step): each token's request is an
// exact integer count over seq_starts; the new key and value rows are
// written into the pools first (a loop of insert_slice at each token's
// block-table slot); then rows[t, k], the pool row of position
// min(k, positions[t]) of t's request, is an operand of the score and value
// generics, which read the flattened pools at that row. The key axis is the
// block tables' reach (max_blocks * block_size), chunked from position 0
// like lockstep.attention's, with keys past the token's position masked.
// CHECK-LABEL: func @paged_attention
// CHECK: %[[REQ:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%arg6 : tensor<?xi64>)
// CHECK: arith.cmpi sle
// CHECK: %[[KP:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %arg3)
// CHECK: tensor.extract %arg7
// CHECK: tensor.insert_slice
// CHECK: %[[VP:.*]] = scf.for {{.*}} iter_args(%{{.*}} = %arg4)
// CHECK: %[[ROWS:.*]] = linalg.generic {{.*}} ins(%[[REQ]], %arg5 : tensor<?xi64>, tensor<?xi64>) outs(%{{.*}} : tensor<?x?xi64>)
// CHECK: arith.minui
// CHECK: tensor.extract %arg7
// CHECK: %[[KF:.*]] = tensor.collapse_shape %[[KP]] {{\[\[}}0, 1], [2], [3]]
// CHECK: %[[VF:.*]] = tensor.collapse_shape %[[VP]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[ROWS]] : tensor<1x2x2x?x8xf32>, tensor<?x?xi64>)
// CHECK: tensor.extract %[[KF]]
// CHECK: math.fma
// CHECK: ins(%{{.*}}, %arg5 : tensor<1x2x2x?x?xf32>, tensor<?xi64>)
// CHECK: arith.cmpi ule
// CHECK: attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64}
// CHECK: attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64}
// CHECK: tensor.extract %[[VF]]
// CHECK: "combine"
// CHECK: "tail"
func.func @paged_attention(%q: tensor<1x4x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                           %v: tensor<1x2x?x8xf32>, %kp: tensor<?x?x2x8xf32>,
                           %vp: tensor<?x?x2x8xf32>, %pos: tensor<?xi64>,
                           %starts: tensor<?xi64>, %tables: tensor<?x?xi32>)
    -> tensor<1x4x?x8xf32> {
  %o = lockstep.paged_attention %q, %k, %v, %kp, %vp, %pos, %starts, %tables
      : (tensor<1x4x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<?x?x2x8xf32>,
         tensor<?x?x2x8xf32>, tensor<?xi64>, tensor<?xi64>, tensor<?x?xi32>) -> tensor<1x4x?x8xf32>
  return %o : tensor<1x4x?x8xf32>
}

// -----

// adaptive-threads, the thread-count control: every such reduction is split
// when the count the runtime writes into @lockstep_thread_count is 2 or
// more, folded whole otherwise.
// THREADS-LABEL: func.func @threads
// THREADS: %[[G:.*]] = memref.get_global @lockstep_thread_count : memref<i64>
// THREADS: %[[N:.*]] = memref.load %[[G]][] : memref<i64>
// THREADS: %[[MANY:.*]] = arith.cmpi sge, %[[N]], %c2_i64 : i64
// THREADS: scf.if %[[MANY]] -> (tensor<?xf32>)
// THREADS: lockstep.chunk_role = "partial", lockstep.chunk_width = 16
memref.global "public" @lockstep_thread_count : memref<i64> = dense<1>
#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>
func.func @threads(%x: tensor<?x?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %s = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %s : tensor<?xf32>
}
