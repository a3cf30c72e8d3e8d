// RUN: lockstep-opt %s --split-input-file --verify-diagnostics --lockstep-verify-invariance | FileCheck %s
// RUN: not lockstep-opt %s --split-input-file --lockstep-canonical-reductions=policy=adaptive --lockstep-verify-invariance 2>&1 | FileCheck %s --check-prefix=ADAPT

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// The canonical form passes: a whole chunk over its static extent, and a
// max reduction, which is exact in any order, unmarked.
// CHECK-LABEL: func @canonical
// The adaptive policy's row test is caught, located at the reduction.
// ADAPT: error: the split of this reduction is chosen at run time from a tensor size, not from its own length
// ADAPT: note: by this condition
// ADAPT: note: which reads a size here
func.func @canonical(%x: tensor<?x64xf32>, %init: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %s = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x64xf32>) outs(%init : tensor<?xf32>)
      attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  %m = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x64xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.maximumf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %s, %m : tensor<?xf32>, tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A sum left in the form the lowering made has no fixed order.
func.func @unmarked(%x: tensor<?x?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{this reduction is not in the canonical chunked form}}
  %s = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%init : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A planted batch dependence: a correctly marked reduction that runs only
// when there are fewer than 4 rows.
func.func @planted(%x: tensor<?x64xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c4 = arith.constant 4 : index
  // expected-note @+1 {{which reads a size here}}
  %rows = tensor.dim %x, %c0 : tensor<?x64xf32>
  %few = arith.cmpi ult, %rows, %c4 : index
  // expected-note @+1 {{by this condition}}
  %r = scf.if %few -> tensor<?xf32> {
    // expected-error @+1 {{the split of this reduction is chosen at run time from a tensor size}}
    %s = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<?x64xf32>) outs(%init : tensor<?xf32>)
        attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 64 : i64} {
    ^bb0(%v: f32, %acc: f32):
      %a = arith.addf %acc, %v : f32
      linalg.yield %a : f32
    } -> tensor<?xf32>
    scf.yield %s : tensor<?xf32>
  } else {
    scf.yield %init : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

#in = affine_map<(r, j, k) -> (r, j, k)>
#out = affine_map<(r, j, k) -> (r, j)>

// A partial whose chunk count is computed from the rows (dim 0) instead of
// the reduced dim (dim 1).
func.func @chunks_from_rows(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %n = arith.divui %rows, %c64 : index
  %full = arith.muli %n, %c64 : index
  %s = tensor.extract_slice %x[0, 0] [%rows, %full] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %e = tensor.expand_shape %s [[0], [1, 2]] output_shape [%rows, %n, 64] : tensor<?x?xf32> into tensor<?x?x64xf32>
  %z = arith.constant 0.0 : f32
  %i = tensor.empty(%rows, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%i : tensor<?x?xf32>) -> tensor<?x?xf32>
  // expected-error @+1 {{the chunk count is not computed from the reduced dim's own length}}
  %p = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<?x?x64xf32>) outs(%f : tensor<?x?xf32>)
      attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?x?xf32>
  return %p : tensor<?x?xf32>
}

// -----

#in3 = affine_map<(r, j, k) -> (r, j, k)>
#out3 = affine_map<(r, j, k) -> (r, j)>

// The same through an elementwise op between the chunked operand and the
// partial (as attention's exp(x - m_j) is): the chunk count is still traced
// to the expand_shape, and still refused when it comes from the rows.
func.func @chunks_from_rows_elementwise(%x: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c64 = arith.constant 64 : index
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %n = arith.divui %rows, %c64 : index
  %full = arith.muli %n, %c64 : index
  %s = tensor.extract_slice %x[0, 0] [%rows, %full] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %e = tensor.expand_shape %s [[0], [1, 2]] output_shape [%rows, %n, 64] : tensor<?x?xf32> into tensor<?x?x64xf32>
  %ei = tensor.empty(%rows, %n) : tensor<?x?x64xf32>
  %sq = linalg.generic {indexing_maps = [#in3, #in3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e : tensor<?x?x64xf32>) outs(%ei : tensor<?x?x64xf32>) {
  ^bb0(%v: f32, %o: f32):
    %m = arith.mulf %v, %v : f32
    linalg.yield %m : f32
  } -> tensor<?x?x64xf32>
  %z = arith.constant 0.0 : f32
  %i = tensor.empty(%rows, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%i : tensor<?x?xf32>) -> tensor<?x?xf32>
  // expected-error @+1 {{the chunk count is not computed from the reduced dim's own length}}
  %p = linalg.generic {indexing_maps = [#in3, #out3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%sq : tensor<?x?x64xf32>) outs(%f : tensor<?x?xf32>)
      attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?x?xf32>
  return %p : tensor<?x?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A mark that does not match the op: a whole chunk of width 64 over a
// dynamic extent.
func.func @wrong_extent(%x: tensor<?x?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{a whole chunk of width 64 runs over a reduction of extent ?}}
  %s = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%init : tensor<?xf32>)
      attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %s : tensor<?xf32>
}

// -----

// linalg.softmax leaves its order open.
func.func @softmax(%x: tensor<?x?xf32>, %o: tensor<?x?xf32>) -> tensor<?x?xf32> {
  // expected-error @+1 {{linalg.softmax is left}}
  %r = linalg.softmax dimension(1) ins(%x : tensor<?x?xf32>) outs(%o : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// lockstep.attention must be expanded by lockstep-canonical-reductions first.
func.func @attention_left(%q: tensor<1x2x?x8xf32>, %k: tensor<1x2x?x8xf32>,
                          %v: tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32> {
  // expected-error @+1 {{lockstep.attention is left}}
  %o = lockstep.attention %q, %k, %v
      : (tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>, tensor<1x2x?x8xf32>) -> tensor<1x2x?x8xf32>
  return %o : tensor<1x2x?x8xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A value-dependent split: the branch that runs the reduction is chosen
// from the contents of an input (a request's start in seq_starts), which
// changes with what else is in the batch.
func.func @value_split(%x: tensor<?x64xf32>, %init: tensor<?xf32>, %starts: tensor<?xi64>) -> tensor<?xf32> {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : i64
  // expected-note @+1 {{which reads a value here}}
  %s1 = tensor.extract %starts[%c1] : tensor<?xi64>
  %few = arith.cmpi ult, %s1, %c4 : i64
  // expected-note @+1 {{by this condition}}
  %r = scf.if %few -> tensor<?xf32> {
    // expected-error @+1 {{the split of this reduction is chosen at run time from tensor values (such as seq_starts or block_tables), not from its own length}}
    %s = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<?x64xf32>) outs(%init : tensor<?xf32>)
        attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 64 : i64} {
    ^bb0(%v: f32, %acc: f32):
      %a = arith.addf %acc, %v : f32
      linalg.yield %a : f32
    } -> tensor<?xf32>
    scf.yield %s : tensor<?xf32>
  } else {
    scf.yield %init : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

func.func private @lockstep_thread_count() -> index

// A thread-count-dependent split: the branch is chosen from the number of
// threads the runtime runs the step on.
func.func @thread_split(%x: tensor<?x64xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %c2 = arith.constant 2 : index
  // expected-note @+1 {{which calls here}}
  %t = func.call @lockstep_thread_count() : () -> index
  %many = arith.cmpi uge, %t, %c2 : index
  // expected-note @+1 {{by this condition}}
  %r = scf.if %many -> tensor<?xf32> {
    // expected-error @+1 {{the split of this reduction is chosen at run time from a call (such as the thread count), not from its own length}}
    %s = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<?x64xf32>) outs(%init : tensor<?xf32>)
        attrs = {lockstep.chunk_role = "whole", lockstep.chunk_width = 64 : i64} {
    ^bb0(%v: f32, %acc: f32):
      %a = arith.addf %acc, %v : f32
      linalg.yield %a : f32
    } -> tensor<?xf32>
    scf.yield %s : tensor<?xf32>
  } else {
    scf.yield %init : tensor<?xf32>
  }
  return %r : tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A value-dependent extent: the tail's operand is cut at a point read from
// an input (a block table entry), so where the fold splits follows the
// batch's contents.
func.func @value_extent(%x: tensor<?x?xf32>, %init: tensor<?xf32>, %tables: tensor<?x?xi32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  // expected-note @+1 {{which reads a value here}}
  %b = tensor.extract %tables[%c0, %c0] : tensor<?x?xi32>
  %n = arith.index_cast %b : i32 to index
  // expected-note @+1 {{through this slice or reshape}}
  %s = tensor.extract_slice %x[0, 0] [%rows, %n] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  // expected-error @+1 {{the extent of this reduction's operand is computed at run time from tensor values (such as seq_starts or block_tables), so its split can follow the batch}}
  %t = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<?x?xf32>) outs(%init : tensor<?xf32>)
      attrs = {lockstep.chunk_role = "tail", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %t : tensor<?xf32>
}

// -----

#id = affine_map<(r, k) -> (r, k)>
#r = affine_map<(r, k) -> (r)>

// A dynamic tail that does not start where the whole chunks end: it skips
// the first 64 elements whatever the length, so the chunks before it and
// the tail do not cover the reduction once each.
func.func @tail_bounds(%x: tensor<?x?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %len = tensor.dim %x, %c1 : tensor<?x?xf32>
  %rest = arith.subi %len, %c64 : index
  // expected-note @+1 {{sliced here}}
  %s = tensor.extract_slice %x[0, 64] [%rows, %rest] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  // expected-error @+1 {{a tail whose bounds are not the remainder of the reduced dim's own length after its whole chunks of 64}}
  %t = linalg.generic {indexing_maps = [#id, #r], iterator_types = ["parallel", "reduction"]}
      ins(%s : tensor<?x?xf32>) outs(%init : tensor<?xf32>)
      attrs = {lockstep.chunk_role = "tail", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %t : tensor<?xf32>
}

// -----

#in = affine_map<(r, j, k) -> (r, j, k)>
#out = affine_map<(r, j, k) -> (r, j)>
#pairs = affine_map<(r, p, h) -> (r, p, h)>
#pairout = affine_map<(r, p, h) -> (r, p)>
#comb = affine_map<(r, j) -> (r, j)>
#combout = affine_map<(r, j) -> (r)>

// An unordered combine: the chunk partials are folded in pairs first and
// the pair sums then, a tree whose order is not the chunks' order.
func.func @tree_combine(%x: tensor<?x?xf32>, %init: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c2 = arith.constant 2 : index
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %len = tensor.dim %x, %c1 : tensor<?x?xf32>
  %n = arith.divui %len, %c64 : index
  %full = arith.muli %n, %c64 : index
  %s = tensor.extract_slice %x[0, 0] [%rows, %full] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %e = tensor.expand_shape %s [[0], [1, 2]] output_shape [%rows, %n, 64] : tensor<?x?xf32> into tensor<?x?x64xf32>
  %z = arith.constant 0.0 : f32
  %i = tensor.empty(%rows, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%i : tensor<?x?xf32>) -> tensor<?x?xf32>
  %p = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<?x?x64xf32>) outs(%f : tensor<?x?xf32>)
      attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?x?xf32>
  %half = arith.divui %n, %c2 : index
  // expected-note @+1 {{it is made here}}
  %pp = tensor.expand_shape %p [[0], [1, 2]] output_shape [%rows, %half, 2] : tensor<?x?xf32> into tensor<?x?x2xf32>
  %i2 = tensor.empty(%rows, %half) : tensor<?x?xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%i2 : tensor<?x?xf32>) -> tensor<?x?xf32>
  // expected-note @+2 {{it is made here}}
  // expected-error @+1 {{a combine folds a value that is not the chunks' partials (the chunks would not be folded once each, in order)}}
  %q = linalg.generic {indexing_maps = [#pairs, #pairout], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%pp : tensor<?x?x2xf32>) outs(%f2 : tensor<?x?xf32>)
      attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?x?xf32>
  // A combine of a combine is refused as well.
  // expected-error @+1 {{a combine folds a value that is not the chunks' partials}}
  %c = linalg.generic {indexing_maps = [#comb, #combout], iterator_types = ["parallel", "reduction"]}
      ins(%q : tensor<?x?xf32>) outs(%init : tensor<?xf32>)
      attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  return %c : tensor<?xf32>
}

// -----

#in = affine_map<(r, j, k) -> (r, j, k)>
#out = affine_map<(r, j, k) -> (r, j)>
#chunk = affine_map<(r, j) -> (r, j)>
#swapped = affine_map<(r, j) -> (j, r)>
#row = affine_map<(r, j) -> (r)>

// A combine may read what another combine writes once at each chunk (its
// map has the reduced dim, its init is never read: attention's merge
// weights), at the same chunk of its own fold. It may not read such a value
// at another chunk, nor a value that reads its init, which is not the
// chunk's own.
func.func @per_chunk(%x: tensor<?x?xf32>, %init: tensor<?xf32>)
    -> (tensor<?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %rows = tensor.dim %x, %c0 : tensor<?x?xf32>
  %len = tensor.dim %x, %c1 : tensor<?x?xf32>
  %n = arith.divui %len, %c64 : index
  %full = arith.muli %n, %c64 : index
  %s = tensor.extract_slice %x[0, 0] [%rows, %full] [1, 1] : tensor<?x?xf32> to tensor<?x?xf32>
  %e = tensor.expand_shape %s [[0], [1, 2]] output_shape [%rows, %n, 64] : tensor<?x?xf32> into tensor<?x?x64xf32>
  %z = arith.constant 0.0 : f32
  %i = tensor.empty(%rows, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%i : tensor<?x?xf32>) -> tensor<?x?xf32>
  %p = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<?x?x64xf32>) outs(%f : tensor<?x?xf32>)
      attrs = {lockstep.chunk_role = "partial", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?x?xf32>
  // The running sum after each chunk, written once a chunk (%w#1); and the
  // same added to what the init holds there (%u#1).
  %w:2 = linalg.generic {indexing_maps = [#chunk, #row, #chunk], iterator_types = ["parallel", "reduction"]}
      ins(%p : tensor<?x?xf32>) outs(%init, %i : tensor<?xf32>, tensor<?x?xf32>)
      attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32, %unread: f32):
    %a = arith.addf %acc, %v : f32
    linalg.yield %a, %a : f32, f32
  } -> (tensor<?xf32>, tensor<?x?xf32>)
  %u:2 = linalg.generic {indexing_maps = [#chunk, #row, #chunk], iterator_types = ["parallel", "reduction"]}
      ins(%p : tensor<?x?xf32>) outs(%init, %f : tensor<?xf32>, tensor<?x?xf32>)
      attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64} {
  ^bb0(%v: f32, %acc: f32, %read: f32):
    %a = arith.addf %acc, %v : f32
    %b = arith.addf %read, %a : f32
    linalg.yield %a, %b : f32, f32
  } -> (tensor<?xf32>, tensor<?x?xf32>)
  %ok = linalg.generic {indexing_maps = [#chunk, #chunk, #row], iterator_types = ["parallel", "reduction"]}
      ins(%w#1, %p : tensor<?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<?xf32>)
      attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %v, %a : f32
    %s2 = arith.addf %acc, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<?xf32>
  // expected-note @-23 {{it is made here}}
  // expected-error @+1 {{a combine folds a value that is not the chunks' partials}}
  %other = linalg.generic {indexing_maps = [#swapped, #chunk, #row], iterator_types = ["parallel", "reduction"]}
      ins(%w#1, %p : tensor<?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<?xf32>)
      attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %v, %a : f32
    %s2 = arith.addf %acc, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<?xf32>
  // expected-note @-26 {{it is made here}}
  // expected-error @+1 {{a combine folds a value that is not the chunks' partials}}
  %reads = linalg.generic {indexing_maps = [#chunk, #chunk, #row], iterator_types = ["parallel", "reduction"]}
      ins(%u#1, %p : tensor<?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<?xf32>)
      attrs = {lockstep.chunk_role = "combine", lockstep.chunk_width = 64 : i64} {
  ^bb0(%a: f32, %v: f32, %acc: f32):
    %m = arith.mulf %v, %a : f32
    %s2 = arith.addf %acc, %m : f32
    linalg.yield %s2 : f32
  } -> tensor<?xf32>
  return %ok, %other, %reads : tensor<?xf32>, tensor<?xf32>, tensor<?xf32>
}

// -----

#rk = affine_map<(r, k) -> (r, k)>
#rk_r = affine_map<(r, k) -> (r)>
#r = affine_map<(r) -> (r)>
#re_r = affine_map<(r, e) -> (r)>
#re = affine_map<(r, e) -> (r, e)>

// The ragged step's padding (keys up to max_blocks * 16): a merge with the
// max of masked keys may write a value of each step (its weights) that is
// not a state, but only merges that fold it with the same max and keep
// their own state at a max of -inf may read it (%good); %bad folds it into
// its state at a chunk of padding only as well.
func.func @padded_weights(%s: tensor<?x?xf32>, %pos: tensor<?xi64>,
                          %tables: tensor<?x?xi32> {lockstep.role = "ragged.block_tables"},
                          %l0: tensor<?xf32>, %o0: tensor<?x8xf32>)
    -> (tensor<?xf32>, tensor<?x8xf32>, tensor<?x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %ninf = arith.constant 0xFF800000 : f32
  %rows = tensor.dim %s, %c0 : tensor<?x?xf32>
  %mb = tensor.dim %tables, %c1 : tensor<?x?xi32>
  %len = arith.muli %mb, %c16 : index
  %xe = tensor.empty(%rows, %len) : tensor<?x?xf32>
  %x = linalg.generic {indexing_maps = [#rk, #rk_r, #rk], iterator_types = ["parallel", "parallel"]}
      ins(%s, %pos : tensor<?x?xf32>, tensor<?xi64>) outs(%xe : tensor<?x?xf32>) {
  ^bb0(%v: f32, %p: i64, %o: f32):
    %k = linalg.index 1 : index
    %last = arith.index_cast %p : i64 to index
    %keep = arith.cmpi ule, %k, %last : index
    %r = arith.select %keep, %v, %ninf : f32
    linalg.yield %r : f32
  } -> tensor<?x?xf32>
  %me = tensor.empty(%rows) : tensor<?xf32>
  %mf = linalg.fill ins(%ninf : f32) outs(%me : tensor<?xf32>) -> tensor<?xf32>
  %m = linalg.generic {indexing_maps = [#rk, #rk_r], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<?x?xf32>) outs(%mf : tensor<?xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %a = arith.maximumf %acc, %v : f32
    linalg.yield %a : f32
  } -> tensor<?xf32>
  // expected-error @+1 {{this merge of its chunks writes a value of each chunk that is not folded with the chunk's max, so a chunk of padding only could change a state}}
  %w:2 = linalg.generic {indexing_maps = [#r, #r, #r], iterator_types = ["parallel"]}
      ins(%m : tensor<?xf32>) outs(%l0, %me : tensor<?xf32>, tensor<?xf32>) {
  ^bb0(%mj: f32, %l: f32, %unread: f32):
    %skip = arith.cmpf oeq, %mj, %ninf : f32
    %e = math.exp %mj : f32
    %nl = arith.addf %l, %e : f32
    %kept = arith.select %skip, %l, %nl : f32
    linalg.yield %kept, %e : f32, f32
  } -> (tensor<?xf32>, tensor<?xf32>)
  %good = linalg.generic {indexing_maps = [#re_r, #re_r, #re], iterator_types = ["parallel", "parallel"]}
      ins(%w#1, %m : tensor<?xf32>, tensor<?xf32>) outs(%o0 : tensor<?x8xf32>) {
  ^bb0(%a: f32, %mj: f32, %o: f32):
    %skip = arith.cmpf oeq, %mj, %ninf : f32
    %n = arith.mulf %o, %a : f32
    %kept = arith.select %skip, %o, %n : f32
    linalg.yield %kept : f32
  } -> tensor<?x8xf32>
  // expected-note @+1 {{it is read here}}
  %bad = linalg.generic {indexing_maps = [#re_r, #re], iterator_types = ["parallel", "parallel"]}
      ins(%w#1 : tensor<?xf32>) outs(%o0 : tensor<?x8xf32>) {
  ^bb0(%a: f32, %o: f32):
    %n = arith.mulf %o, %a : f32
    linalg.yield %n : f32
  } -> tensor<?x8xf32>
  return %w#0, %good, %bad : tensor<?xf32>, tensor<?x8xf32>, tensor<?x8xf32>
}
