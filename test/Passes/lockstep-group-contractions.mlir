// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(lockstep-group-contractions))' | FileCheck %s

#x = affine_map<(t, j, n, k) -> (t, j, k)>
#w = affine_map<(t, j, n, k) -> (j, k, n)>
#p = affine_map<(t, j, n, k) -> (t, j, n)>
#e = affine_map<(t, n) -> (t, n)>

// Two chunked projections of one hidden state (q and k), the q chunks'
// combine between them. The k projection moves up to just after q's, with
// its own reshapes, empty tensor and fill, in their order; it then reads
// q's reshape of %x, and its own (now unused) is erased. The combine stays
// where it was, after both.
// CHECK-LABEL: func.func @siblings
// CHECK: %[[XQ:.*]] = tensor.expand_shape %arg0
// CHECK: %[[Q:.*]] = linalg.generic {{.*}} ins(%[[XQ]], %{{.*}} : tensor<?x2x8xf32>, tensor<2x8x16xf32>)
// CHECK: } -> tensor<?x2x16xf32>
// CHECK-NEXT: tensor.expand_shape %arg2
// CHECK-NEXT: tensor.dim
// CHECK-NEXT: tensor.empty
// CHECK-NEXT: linalg.fill
// CHECK-NEXT: %[[K:.*]] = linalg.generic {{.*}} ins(%[[XQ]], %{{.*}} : tensor<?x2x8xf32>, tensor<2x8x4xf32>)
// CHECK-NOT: tensor.expand_shape %arg0
// CHECK: linalg.generic {{.*}} ins(%[[Q]]
// CHECK: return
func.func @siblings(%x: tensor<?x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x4xf32>)
    -> (tensor<?x2x16xf32>, tensor<?x2x4xf32>) {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %t = tensor.dim %x, %c0 : tensor<?x16xf32>
  %xq = tensor.expand_shape %x [[0], [1, 2]] output_shape [%t, 2, 8] : tensor<?x16xf32> into tensor<?x2x8xf32>
  %wq3 = tensor.expand_shape %wq [[0, 1], [2]] output_shape [2, 8, 16] : tensor<16x16xf32> into tensor<2x8x16xf32>
  %eq = tensor.empty(%t) : tensor<?x2x16xf32>
  %fq = linalg.fill ins(%zero : f32) outs(%eq : tensor<?x2x16xf32>) -> tensor<?x2x16xf32>
  %q = linalg.generic {indexing_maps = [#x, #w, #p], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xq, %wq3 : tensor<?x2x8xf32>, tensor<2x8x16xf32>) outs(%fq : tensor<?x2x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %f = math.fma %a, %b, %acc : f32
    linalg.yield %f : f32
  } -> tensor<?x2x16xf32>
  %cq = linalg.generic {indexing_maps = [affine_map<(t, j, n) -> (t, j, n)>, affine_map<(t, j, n) -> (t, j, n)>], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q : tensor<?x2x16xf32>) outs(%eq : tensor<?x2x16xf32>) {
  ^bb0(%a: f32, %o: f32):
    %s = arith.addf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x2x16xf32>
  %xk = tensor.expand_shape %x [[0], [1, 2]] output_shape [%t, 2, 8] : tensor<?x16xf32> into tensor<?x2x8xf32>
  %wk3 = tensor.expand_shape %wk [[0, 1], [2]] output_shape [2, 8, 4] : tensor<16x4xf32> into tensor<2x8x4xf32>
  %t2 = tensor.dim %x, %c0 : tensor<?x16xf32>
  %ek = tensor.empty(%t2) : tensor<?x2x4xf32>
  %fk = linalg.fill ins(%zero : f32) outs(%ek : tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %k = linalg.generic {indexing_maps = [#x, #w, #p], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%xk, %wk3 : tensor<?x2x8xf32>, tensor<2x8x4xf32>) outs(%fk : tensor<?x2x4xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %f = math.fma %a, %b, %acc : f32
    linalg.yield %f : f32
  } -> tensor<?x2x4xf32>
  return %cq, %k : tensor<?x2x16xf32>, tensor<?x2x4xf32>
}

// -----

#x = affine_map<(t, n, k) -> (t, k)>
#w = affine_map<(t, n, k) -> (k, n)>
#o = affine_map<(t, n, k) -> (t, n)>

// The second projection reads the first one's output through an
// elementwise op: it depends on the group, and nothing moves. A third,
// of another input, is no sibling.
// CHECK-LABEL: func.func @dependent
// CHECK: %[[A:.*]] = linalg.generic {{.*}} ins(%arg0, %arg1
// CHECK: } -> tensor<8x8xf32>
// CHECK-NEXT: linalg.generic {{.*}} ins(%[[A]]
// CHECK: linalg.generic {{.*}} ins(%arg0, %{{.*}} :
// CHECK: linalg.generic {{.*}} ins(%arg3, %arg1
func.func @dependent(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>, %v: tensor<8x8xf32>, %y: tensor<8x8xf32>)
    -> (tensor<8x8xf32>, tensor<8x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %a = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %r = math.fma %p, %q, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j, i)>], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<8x8xf32>) outs(%w : tensor<8x8xf32>) {
  ^bb0(%p: f32, %o: f32):
    linalg.yield %p : f32
  } -> tensor<8x8xf32>
  %b = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %s : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %r = math.fma %p, %q, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  %c = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%y, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) {
  ^bb0(%p: f32, %q: f32, %acc: f32):
    %r = math.fma %p, %q, %acc : f32
    linalg.yield %r : f32
  } -> tensor<8x8xf32>
  return %b, %c : tensor<8x8xf32>, tensor<8x8xf32>
}
