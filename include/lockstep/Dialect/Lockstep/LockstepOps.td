//===- LockstepOps.td - lockstep dialect operations --------*- tablegen -*-===//
#ifndef LOCKSTEP_OPS
#define LOCKSTEP_OPS

include "lockstep/Dialect/Lockstep/LockstepDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

class Lockstep_Op<string mnemonic, list<Trait> traits = []>
    : Op<Lockstep_Dialect, mnemonic, traits>;

def Lockstep_AttentionOp : Lockstep_Op<"attention",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "scaled dot-product attention, reduced by the softmax contract";
  let description = [{
    Attention of `query` [B, H, Sq, D] over `key` [B, Hk, Sk, D] and `value`
    [B, Hk, Sk, Dv], with H a multiple of Hk: query head h reads key and value
    head h / (H / Hk) (grouped-query attention; H = Hk is ordinary
    multi-head attention). The result is [B, H, Sq, Dv]. Key index k is
    absolute position k of the sequence: the keys of a cache come first.

    The scores, for each (b, h, i, k):
    - `dot = Σ_d fma(q[d], k'[d], dot)` from +0.0 in increasing d (chunked by
      the contract when D is long), where `k' = key * key_scale` when
      `key_scale` is given (a scalar);
    - `s = dot * scale`, or `dot / scale` with `scale_divides`, when `scale`
      (a scalar) is given;
    - with `softcap` c: `s = tanh(s / c) * c` (Gemma 2's logit softcapping,
      in the graph's order: a division, Lockstep's own tanh, a product);
    - with a `mask` of element type i1 and a `fill` scalar:
      `x = mask ? s : fill`; with a floating-point `mask`: `x = s + mask`.
      The mask broadcasts numpy-style to [B, H, Sq, Sk]. This is the graph's
      own mask, served as the graph computes it.
    - with `causal` (and no mask): query i, at position t = i + (Sk − Sq),
      keeps keys k <= t, the others are −inf: the queries are the last Sq
      positions of the Sk keys. With `window` W as well, it keeps only the
      W keys t − W < k <= t (a sliding window). lockstep-prove-mask sets
      these where it has proven that the graph's mask is that predicate.

    The softmax over k and the product with `value` follow the contract's
    chunk-local statistics, with chunks of width C counted from key 0. For
    chunk j: `m_j = max x`, `s_j = Σ exp(x − m_j)` and
    `o_j = Σ fma(exp(x − m_j), v, o_j)` from +0.0 (terms are 0 when m_j is
    -inf). Chunks merge left to right from (−inf, 0, 0):
    `m = max(m_acc, m_j)`, `α = exp(m_acc − m)`, `β = exp(m_j − m)`,
    `l = l_acc·α + s_j·β`, `o = o_acc·α + o_j·β`. The result is `o / l`;
    with `zero_empty_rows` a row whose `l` is 0 (no key kept) gives 0, as
    the `Where(IsNaN(p), 0, p)` guard of exported SDPA does.

    Because the chunks are fixed by key position, a query at position t gets
    the same bits whether it is computed in a prefill of any length or in a
    decode step, provided that masked keys get a fill far below the kept
    scores (or −inf).

    Example (grouped-query attention, 4 query heads over 2 key heads, a
    causal boolean mask, scaled by 0.25):

    ```mlir
    %o = lockstep.attention %q, %k, %v mask %m fill %ninf scale %c
        : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>,
           tensor<1x1x?x?xi1>, tensor<f32>, tensor<f32>) -> tensor<1x4x?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                       AnyRankedTensor:$value, Optional<AnyRankedTensor>:$mask,
                       Optional<AnyRankedTensor>:$fill,
                       Optional<AnyRankedTensor>:$key_scale,
                       Optional<AnyRankedTensor>:$scale,
                       UnitAttr:$scale_divides, UnitAttr:$zero_empty_rows,
                       UnitAttr:$causal, OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^)? (`fill` $fill^)?
    (`key_scale` $key_scale^)? (`scale` $scale^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Lockstep_PagedAttentionOp : Lockstep_Op<"paged_attention",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "causal (or sliding-window) attention of a ragged step over a paged KV cache";
  let description = [{
    The attention of the ragged `step` (the serving ABI): the T new tokens
    of R requests, request r owning tokens [seq_starts[r], seq_starts[r+1]),
    token t at absolute position `positions[t]` of its request. Its operands:

    - `query` [1, H, T, D], `key` and `value` [1, Hk, T, D] and [1, Hk, T, Dv]:
      the new tokens' rows, computed row by row by the rest of the step;
    - `key_pool` [NB, BS, Hk, D] and `value_pool` [NB, BS, Hk, Dv]: the
      paged cache of this layer, NB blocks of BS positions;
    - `positions` [T] (i64), `seq_starts` [R + 1] (i64) and `block_tables`
      [R, MB] (i32): position p of request r lives in block
      `block_tables[r, p / BS]`, slot `p % BS`.

    Token t of request r attends to the positions [0, positions[t]] of its
    own request, in order: a position before the request's first new token
    `p0 = positions[seq_starts[r]]` is the pools' row, a later one the new
    row (`key[0, hk, seq_starts[r] + p − p0]`). Nothing of another request
    is read: a token's result depends on its own request only. The
    expansion writes the new rows into the pools at their slots and reads
    every key from the pools; after bufferization that write goes to the
    pool arguments themselves, so the caller's cache holds the step's rows
    (the runtime writes the same rows again from the results).

    The scores, the softmax and the product with the values are those of
    `lockstep.attention` with `causal` (the same `key_scale`, `scale`,
    `scale_divides`, `zero_empty_rows`, `window` and `softcap`), over a key
    axis of length MB · BS whose positions past `positions[t]` (and, with
    `window` W, at or before `positions[t] − W`) are masked with −inf. Chunks
    of width C count from position 0 of the request, so a token gets the
    same bits as from `lockstep.attention` over its request's contiguous
    cache, in any step of any batch.

    Example (4 query heads over 2 key heads, head size 16):

    ```mlir
    %o = lockstep.paged_attention %q, %k, %v, %kp, %vp, %pos, %starts, %tables scale %c
        : (tensor<1x4x?x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x?x16xf32>,
           tensor<?x?x2x16xf32>, tensor<?x?x2x16xf32>, tensor<?xi64>,
           tensor<?xi64>, tensor<?x?xi32>, tensor<f32>) -> tensor<1x4x?x16xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$query, AnyRankedTensor:$key,
                       AnyRankedTensor:$value, AnyRankedTensor:$key_pool,
                       AnyRankedTensor:$value_pool, AnyRankedTensor:$positions,
                       AnyRankedTensor:$seq_starts, AnyRankedTensor:$block_tables,
                       Optional<AnyRankedTensor>:$key_scale,
                       Optional<AnyRankedTensor>:$scale,
                       UnitAttr:$scale_divides, UnitAttr:$zero_empty_rows,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs AnyRankedTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value `,` $key_pool `,` $value_pool `,` $positions `,`
    $seq_starts `,` $block_tables (`key_scale` $key_scale^)? (`scale` $scale^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

#endif
