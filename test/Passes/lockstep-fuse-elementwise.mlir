// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-fuse-elementwise))' | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>

// A chain of elementwise ops, each result used once by the next, becomes
// one op computing the same scalar ops in the same order.
// CHECK-LABEL: func.func @chain
// CHECK: linalg.generic
// CHECK: %[[M:.*]] = arith.mulf
// CHECK-NEXT: %[[A:.*]] = arith.addf %[[M]]
// CHECK-NEXT: linalg.yield %[[A]]
// CHECK-NOT: linalg.generic
func.func @chain(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %z: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m, %z : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.addf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// Not fused: an elementwise producer used twice (it would be computed
// twice), and an elementwise producer of a contraction (two inputs: its
// tiled kernels read stored operands).
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: linalg.generic
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @kept(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>) {
  %e = tensor.empty() : tensor<4x8xf32>
  %m = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %n = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%m : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.negf %a : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<4x8xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    linalg.yield %p : f32
  } -> tensor<4x8xf32>
  %zero = arith.constant 0.0 : f32
  %e1 = tensor.empty() : tensor<4xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%sq, %y : tensor<4x8xf32>, tensor<4x8xf32>) outs(%init : tensor<4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = math.fma %a, %b, %o : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  return %m, %n, %r : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4xf32>
}

// -----

// Not fused: a producer of two results (a merge step's weights over rows),
// each used once by the same consumer over rows and columns, which would
// get the producer's body once per result and compute it at every column.
// CHECK-LABEL: func.func @two_results
// CHECK: %[[W:.*]]:2 = linalg.generic
// CHECK: math.exp
// CHECK: linalg.generic {{.*}} ins(%[[W]]#0, %[[W]]#1, %{{.*}} :
// CHECK-NOT: math.exp
// CHECK: return
#row = affine_map<(d0) -> (d0)>
#r = affine_map<(d0, d1) -> (d0)>
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @two_results(%m: tensor<4xf32>, %o: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %w:2 = linalg.generic {indexing_maps = [#row, #row, #row], iterator_types = ["parallel"]}
      ins(%m : tensor<4xf32>) outs(%e, %e : tensor<4xf32>, tensor<4xf32>) {
  ^bb0(%a: f32, %x: f32, %y: f32):
    %p = math.exp %a : f32
    %q = arith.negf %p : f32
    linalg.yield %p, %q : f32, f32
  } -> (tensor<4xf32>, tensor<4xf32>)
  %e2 = tensor.empty() : tensor<4x8xf32>
  %s = linalg.generic {indexing_maps = [#r, #r, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w#0, %w#1, %o : tensor<4xf32>, tensor<4xf32>, tensor<4x8xf32>) outs(%e2 : tensor<4x8xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32, %out: f32):
    %p = arith.mulf %c, %a : f32
    %q = arith.addf %p, %b : f32
    linalg.yield %q : f32
  } -> tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// -----

// RoPE as lowered: x is a transpose of [1, T, 2, 4]; its rotate-half is a
// gather (tensor.extract at a shifted index) and its product with cos an
// elementwise op. The gather reads the transpose's input at the permuted
// index, the transpose (then used once) becomes a generic, and the chain
// x * cos + rot(x) * sin is one op reading x's input through the permuted
// map: no transpose is left, and the scalar ops are the same.
// CHECK-LABEL: func.func @rope
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[PERM:.*]], #{{.*}}, #{{.*}}, #{{.*}}]
// CHECK-SAME: ins(%arg0, %arg1, %arg2 :
// CHECK: %[[H:.*]] = linalg.index 1
// CHECK: %[[T:.*]] = linalg.index 2
// CHECK: %[[V:.*]] = tensor.extract %arg0[%c0, %[[T]], %[[H]], %{{.*}}] : tensor<1x?x2x4xf32>
// CHECK: %[[N:.*]] = arith.negf %[[V]]
// CHECK: %[[R:.*]] = arith.select %{{.*}}, %[[N]], %[[V]]
// CHECK: %[[RS:.*]] = arith.mulf %[[R]], %{{.*}}
// CHECK: %[[XC:.*]] = arith.mulf %{{.*}}, %{{.*}}
// CHECK: %[[S:.*]] = arith.addf %[[XC]], %[[RS]]
// CHECK: linalg.yield %[[S]]
// CHECK-NOT: linalg.generic
// CHECK-NOT: linalg.transpose
// CHECK: return
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#bc = affine_map<(d0, d1, d2, d3) -> (d0, 0, d2, d3)>
func.func @rope(%y: tensor<1x?x2x4xf32>, %cos: tensor<1x1x?x4xf32>, %sin: tensor<1x1x?x4xf32>) -> tensor<1x2x?x4xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %t = tensor.dim %y, %c1 : tensor<1x?x2x4xf32>
  %e = tensor.empty(%t) : tensor<1x2x?x4xf32>
  %x = linalg.transpose ins(%y : tensor<1x?x2x4xf32>) outs(%e : tensor<1x2x?x4xf32>) permutation = [0, 2, 1, 3]
  %xc = linalg.generic {indexing_maps = [#id4, #bc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %cos : tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>) outs(%e : tensor<1x2x?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x2x?x4xf32>
  %rot = linalg.generic {indexing_maps = [#id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      outs(%e : tensor<1x2x?x4xf32>) {
  ^bb0(%o: f32):
    %i0 = linalg.index 0 : index
    %i1 = linalg.index 1 : index
    %i2 = linalg.index 2 : index
    %i3 = linalg.index 3 : index
    %c2 = arith.constant 2 : index
    %cm2 = arith.constant -2 : index
    %hi = arith.addi %i3, %c2 : index
    %lo = arith.addi %i3, %cm2 : index
    %second = arith.cmpi uge, %i3, %c2 : index
    %at = arith.select %second, %lo, %hi : index
    %true = arith.constant true
    %false = arith.constant false
    %neg = arith.select %second, %false, %true : i1
    %v = tensor.extract %x[%i0, %i1, %i2, %at] : tensor<1x2x?x4xf32>
    %n = arith.negf %v : f32
    %r = arith.select %neg, %n, %v : f32
    linalg.yield %r : f32
  } -> tensor<1x2x?x4xf32>
  %rs = linalg.generic {indexing_maps = [#id4, #bc, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%rot, %sin : tensor<1x2x?x4xf32>, tensor<1x1x?x4xf32>) outs(%e : tensor<1x2x?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.mulf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x2x?x4xf32>
  %s = linalg.generic {indexing_maps = [#id4, #id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%xc, %rs : tensor<1x2x?x4xf32>, tensor<1x2x?x4xf32>) outs(%e : tensor<1x2x?x4xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %p = arith.addf %a, %b : f32
    linalg.yield %p : f32
  } -> tensor<1x2x?x4xf32>
  return %s : tensor<1x2x?x4xf32>
}

// -----

// A producer reading its init (a chunked sum's tail added into its combine,
// `out + in`) keeps that result in the fused op, its init indexed through
// the consumer's map of it. Read through a broadcast (a row's position at
// every hidden column), the fused op would read and write one element at
// every column, each reading what the last wrote: not fused. Read at an
// identity map, each element is read once before it is written: fused.
// CHECK-LABEL: func.func @reads_init
// CHECK: %[[T:.*]] = linalg.generic {{.*}} ins(%arg1 : tensor<4xf32>) outs(%arg0 : tensor<4xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic {{.*}} ins(%[[T]] : tensor<4xf32>)
// CHECK: arith.mulf
// CHECK-NOT: linalg.generic
// CHECK: return
// CHECK-LABEL: func.func @reads_init_identity
// CHECK: %[[F:.*]]:2 = linalg.generic {{.*}} ins(%arg1 : tensor<4xf32>) outs(%arg0, %{{.*}} : tensor<4xf32>, tensor<4xf32>)
// CHECK: %[[A:.*]] = arith.addf
// CHECK: arith.mulf %[[A]]
// CHECK-NOT: linalg.generic
// CHECK: return %[[F]]#1
#v = affine_map<(d0) -> (d0)>
#row = affine_map<(d0, d1) -> (d0)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @reads_init(%comb: tensor<4xf32>, %tail: tensor<4xf32>) -> tensor<4x8xf32> {
  %t = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%tail : tensor<4xf32>) outs(%comb : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %y = linalg.generic {indexing_maps = [#row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<4xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}
func.func @reads_init_identity(%comb: tensor<4xf32>, %tail: tensor<4xf32>) -> tensor<4xf32> {
  %t = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%tail : tensor<4xf32>) outs(%comb : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  %e = tensor.empty() : tensor<4xf32>
  %y = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%t : tensor<4xf32>) outs(%e : tensor<4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.mulf %a, %a : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A projection's chunk combine (folding its 2 chunk partials in chunk
// order into a fill of 0) used once by the residual add: the add folds the
// partials itself, in an scf.for over the chunks from 0.0 with the
// combine's own addf (acc first), then adds the residual. No combine is
// left.
// CHECK-LABEL: func.func @combine
// CHECK: %[[Z:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[P:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%arg2 : tensor<?x64xf32>)
// CHECK: ^bb0(%[[R:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[M:.*]] = linalg.index 0
// CHECK: %[[C:.*]] = linalg.index 1
// CHECK: %[[S:.*]] = scf.for %[[J:.*]] = %c0{{.*}} to %c2 step %c1{{.*}} iter_args(%[[A:.*]] = %[[Z]]) -> (f32)
// CHECK: %[[V:.*]] = tensor.extract %[[P]][%[[M]], %[[J]], %[[C]]]
// CHECK: %[[F:.*]] = arith.addf %[[A]], %[[V]]
// CHECK: scf.yield %[[F]]
// CHECK: %[[Y:.*]] = arith.addf %[[S]], %[[R]]
// CHECK: linalg.yield %[[Y]]
// CHECK-NOT: linalg.generic
// CHECK: return
#x = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
#w = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
#p = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#pin = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#pout = affine_map<(d0, d1, d2) -> (d0, d2)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @combine(%x: tensor<?x2x256xf32>, %w: tensor<2x256x64xf32>, %res: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x2x256xf32>
  %zero = arith.constant 0.0 : f32
  %pe = tensor.empty(%t) : tensor<?x2x64xf32>
  %pf = linalg.fill ins(%zero : f32) outs(%pe : tensor<?x2x64xf32>) -> tensor<?x2x64xf32>
  %part = linalg.generic {indexing_maps = [#x, #w, #p], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%x, %w : tensor<?x2x256xf32>, tensor<2x256x64xf32>) outs(%pf : tensor<?x2x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %f = math.fma %a, %b, %o : f32
    linalg.yield %f : f32
  } -> tensor<?x2x64xf32>
  %ce = tensor.empty(%t) : tensor<?x64xf32>
  %cf = linalg.fill ins(%zero : f32) outs(%ce : tensor<?x64xf32>) -> tensor<?x64xf32>
  %comb = linalg.generic {indexing_maps = [#pin, #pout], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%part : tensor<?x2x64xf32>) outs(%cf : tensor<?x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%comb, %res : tensor<?x64xf32>, tensor<?x64xf32>) outs(%ce : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A norm's combine (8 partials of a row's sum) read through a broadcast at
// every column: folded again at each column, in the consumer (8 loads a
// column are cheaper than a kernel); also when the sum keeps its reduced dim
// as a size-1 dim ([T, 1], ReduceMean's keepdims). One of 64 partials
// stays.
// CHECK-LABEL: func.func @broadcast_combine
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<?x64xf32>)
// CHECK: %[[M:.*]] = linalg.index 0
// CHECK: scf.for %[[J:.*]] = %c0{{.*}} to %c8
// CHECK: tensor.extract %arg0[%[[M]], %[[J]]] : tensor<?x8xf32>
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @keepdims_combine
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel"]} ins(%arg1 : tensor<?x64xf32>)
// CHECK: scf.for %[[J:.*]] = %c0{{.*}} to %c8
// CHECK: tensor.extract %arg0[%{{.*}}, %[[J]]] : tensor<?x8xf32>
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @long_broadcast_combine
// CHECK-COUNT-2: linalg.generic
#row = affine_map<(d0, d1) -> (d0)>
#in2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @broadcast_combine(%part: tensor<?x8xf32>, %x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x64xf32>
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty(%t) : tensor<?xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#in2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%part : tensor<?x8xf32>) outs(%rf : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %e = tensor.empty(%t) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#row, #in2, #in2], iterator_types = ["parallel", "parallel"]}
      ins(%sum, %x : tensor<?xf32>, tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %b, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
#keep = affine_map<(d0, d1) -> (d0, 0)>
func.func @keepdims_combine(%part: tensor<?x8xf32>, %x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x64xf32>
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty(%t) : tensor<?x1xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<?x1xf32>) -> tensor<?x1xf32>
  %sum = linalg.generic {indexing_maps = [#in2, #keep], iterator_types = ["parallel", "reduction"]}
      ins(%part : tensor<?x8xf32>) outs(%rf : tensor<?x1xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x1xf32>
  %e = tensor.empty(%t) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#keep, #in2, #in2], iterator_types = ["parallel", "parallel"]}
      ins(%sum, %x : tensor<?x1xf32>, tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %b, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
func.func @long_broadcast_combine(%part: tensor<?x64xf32>, %x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x64xf32>
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty(%t) : tensor<?xf32>
  %rf = linalg.fill ins(%zero : f32) outs(%re : tensor<?xf32>) -> tensor<?xf32>
  %sum = linalg.generic {indexing_maps = [#in2, #row], iterator_types = ["parallel", "reduction"]}
      ins(%part : tensor<?x64xf32>) outs(%rf : tensor<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  %e = tensor.empty(%t) : tensor<?x64xf32>
  %y = linalg.generic {indexing_maps = [#row, #in2, #in2], iterator_types = ["parallel", "parallel"]}
      ins(%sum, %x : tensor<?xf32>, tensor<?x64xf32>) outs(%e : tensor<?x64xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.mulf %b, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// A norm's square before its mean's chunk partials: the square is used once,
// by an expand_shape into [T, 2 chunks, 4] read only by the partials (a
// reduction of one input, the dynamic T's tensor.dim of the square being
// resolved from x). The square is rewritten in the chunked shape and fused:
// one generic over the expanded x whose body squares and adds. A producer
// of more ops (an expanded pow, here 6) is not: the fold would compute it
// one thread a chunk.
// CHECK-LABEL: func.func @norm_partials
// CHECK: %[[X:.*]] = tensor.expand_shape %arg0 {{\[}}[0], [1, 2]]
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<?x2x4xf32>)
// CHECK-NEXT: ^bb0(%[[IN:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[IN]], %[[IN]]
// CHECK-NEXT: %[[SUM:.*]] = arith.addf %[[ACC]], %[[SQ]]
// CHECK-NEXT: linalg.yield %[[SUM]]
// CHECK-NOT: linalg.generic
// CHECK-LABEL: func.func @costly_partials
// CHECK-COUNT-2: linalg.generic
#i2 = affine_map<(d0, d1) -> (d0, d1)>
#i3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#r3 = affine_map<(d0, d1, d2) -> (d0, d1)>
func.func @norm_partials(%x: tensor<?x8xf32>) -> tensor<?x2xf32> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%t) : tensor<?x8xf32>
  %sq = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    linalg.yield %p : f32
  } -> tensor<?x8xf32>
  %t2 = tensor.dim %sq, %c0 : tensor<?x8xf32>
  %chunks = tensor.expand_shape %sq [[0], [1, 2]] output_shape [%t2, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty(%t2) : tensor<?x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x2xf32>) -> tensor<?x2xf32>
  %r = linalg.generic {indexing_maps = [#i3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%chunks : tensor<?x2x4xf32>) outs(%init : tensor<?x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.addf %o, %a : f32
    linalg.yield %p : f32
  } -> tensor<?x2xf32>
  return %r : tensor<?x2xf32>
}
func.func @costly_partials(%x: tensor<?x8xf32>) -> tensor<?x2xf32> {
  %c0 = arith.constant 0 : index
  %t = tensor.dim %x, %c0 : tensor<?x8xf32>
  %e = tensor.empty(%t) : tensor<?x8xf32>
  %sq = linalg.generic {indexing_maps = [#i2, #i2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<?x8xf32>) outs(%e : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.mulf %a, %a : f32
    %q = arith.mulf %p, %a : f32
    %r = arith.addf %q, %p : f32
    %u = arith.mulf %r, %a : f32
    %v = arith.subf %u, %q : f32
    %w = arith.mulf %v, %r : f32
    linalg.yield %w : f32
  } -> tensor<?x8xf32>
  %t2 = tensor.dim %sq, %c0 : tensor<?x8xf32>
  %chunks = tensor.expand_shape %sq [[0], [1, 2]] output_shape [%t2, 2, 4] : tensor<?x8xf32> into tensor<?x2x4xf32>
  %zero = arith.constant 0.0 : f32
  %e2 = tensor.empty(%t2) : tensor<?x2xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x2xf32>) -> tensor<?x2xf32>
  %r = linalg.generic {indexing_maps = [#i3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%chunks : tensor<?x2x4xf32>) outs(%init : tensor<?x2xf32>) {
  ^bb0(%a: f32, %o: f32):
    %p = arith.addf %o, %a : f32
    linalg.yield %p : f32
  } -> tensor<?x2xf32>
  return %r : tensor<?x2xf32>
}

// -----

// A q projection's chunk combine (2 partials), reshaped to [T, 2 heads, 4]
// (tensor.reshape with the exporters' from_elements sizes) and read by a
// RoPE-like consumer twice: as its input, transposed to [2, T, 4], and by a
// gather of the rotated element in its body. Both reads fold the partials
// in chunk order again, at the reshape's row-major position in [T, 8]
// (t·8 + h·4 + d, divided back by 8); the gather's fold replaces the
// extract. The reshape's size (a tensor.dim of it) is read from its shape
// operand; the combine and the reshape are gone.
// CHECK-LABEL: func.func @rope_combine
// CHECK-NOT: tensor.reshape
// CHECK: linalg.generic {{.*}} ins(%arg1 : tensor<2x?x4xf32>)
// CHECK: %[[T:.*]] = linalg.index 1
// CHECK: %[[H:.*]] = linalg.index 0
// CHECK: %[[D:.*]] = linalg.index 2
// CHECK: %[[TH:.*]] = arith.muli %[[T]], %c2
// CHECK: %[[TH2:.*]] = arith.addi %[[TH]], %[[H]]
// CHECK: %[[TH4:.*]] = arith.muli %[[TH2]], %c4
// CHECK: %[[POS:.*]] = arith.addi %[[TH4]], %[[D]]
// CHECK: %[[COL:.*]] = arith.remui %[[POS]], %c8
// CHECK: %[[ROW0:.*]] = arith.divui %[[POS]], %c8
// CHECK: %[[ROW:.*]] = arith.remui %[[ROW0]], %arg2
// CHECK: %[[Q:.*]] = scf.for %[[J:.*]] = %c0 to %c2 step %c1 iter_args(%[[ACC:.*]] = %cst)
// CHECK-NEXT: %[[P:.*]] = tensor.extract %arg0[%[[ROW]], %[[J]], %[[COL]]]
// CHECK-NEXT: arith.addf %[[ACC]], %[[P]]
// CHECK: arith.xori
// CHECK: %[[R:.*]] = scf.for
// CHECK: tensor.extract %arg0
// CHECK: %[[M:.*]] = arith.mulf %[[Q]], %in
// CHECK: arith.subf %[[M]], %[[R]]
// CHECK-NOT: linalg.generic
// CHECK: return %{{.*}}, %c2 :
#p3 = affine_map<(t, j, n) -> (t, j, n)>
#c3 = affine_map<(t, j, n) -> (t, n)>
#tr = affine_map<(h, t, d) -> (t, h, d)>
#id3 = affine_map<(h, t, d) -> (h, t, d)>
func.func @rope_combine(%part: tensor<?x2x8xf32>, %cos: tensor<2x?x4xf32>, %t: index)
    -> (tensor<2x?x4xf32>, index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%t) : tensor<?x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %q = linalg.generic {indexing_maps = [#p3, #c3], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%part : tensor<?x2x8xf32>) outs(%f : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  %shape = tensor.from_elements %t, %c2, %c4 : tensor<3xindex>
  %q3 = tensor.reshape %q(%shape) : (tensor<?x8xf32>, tensor<3xindex>) -> tensor<?x2x4xf32>
  %n = tensor.dim %q3, %c1 : tensor<?x2x4xf32>
  %out = tensor.empty(%t) : tensor<2x?x4xf32>
  %y = linalg.generic {indexing_maps = [#tr, #id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q3, %cos : tensor<?x2x4xf32>, tensor<2x?x4xf32>) outs(%out : tensor<2x?x4xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %h = linalg.index 0 : index
    %tt = linalg.index 1 : index
    %d = linalg.index 2 : index
    %r = arith.xori %d, %c1 : index
    %b = tensor.extract %q3[%tt, %h, %r] : tensor<?x2x4xf32>
    %m = arith.mulf %a, %c : f32
    %s = arith.subf %m, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x?x4xf32>
  return %y, %n : tensor<2x?x4xf32>, index
}

// -----

// v's chunk combine, reshaped to [T, 2, 4] and transposed to [2, T, 4]
// (the KV cache's layout), the transpose read twice (by attention and as a
// step output): the transpose becomes a generic and the combine folds into
// it, once per element (its consumer, reading the transpose that has
// another use, stays apart).
// CHECK-LABEL: func.func @v_combine
// CHECK-NOT: linalg.transpose
// CHECK-NOT: "reduction"
// CHECK: %[[VT:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x?x4xf32>)
// CHECK: scf.for
// CHECK: tensor.extract %arg0
// CHECK: linalg.generic {{.*}} ins(%[[VT]] : tensor<2x?x4xf32>)
// CHECK: return %[[VT]], 
#p3 = affine_map<(t, j, n) -> (t, j, n)>
#c3 = affine_map<(t, j, n) -> (t, n)>
#id3 = affine_map<(h, t, d) -> (h, t, d)>
func.func @v_combine(%part: tensor<?x2x8xf32>, %t: index) -> (tensor<2x?x4xf32>, tensor<2x?x4xf32>) {
  %c2 = arith.constant 2 : index
  %c4 = arith.constant 4 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%t) : tensor<?x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<?x8xf32>) -> tensor<?x8xf32>
  %v = linalg.generic {indexing_maps = [#p3, #c3], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%part : tensor<?x2x8xf32>) outs(%f : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %o, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x8xf32>
  %shape = tensor.from_elements %t, %c2, %c4 : tensor<3xindex>
  %v3 = tensor.reshape %v(%shape) : (tensor<?x8xf32>, tensor<3xindex>) -> tensor<?x2x4xf32>
  %out = tensor.empty(%t) : tensor<2x?x4xf32>
  %vt = linalg.transpose ins(%v3 : tensor<?x2x4xf32>) outs(%out : tensor<2x?x4xf32>) permutation = [1, 0, 2]
  %w = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%vt : tensor<2x?x4xf32>) outs(%out : tensor<2x?x4xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<2x?x4xf32>
  return %vt, %w : tensor<2x?x4xf32>, tensor<2x?x4xf32>
}
