//===- Passes.td - Lockstep passes -------------------------*- tablegen -*-===//
#ifndef LOCKSTEP_PASSES
#define LOCKSTEP_PASSES

include "mlir/Pass/PassBase.td"

def ONNXInferShapes : Pass<"onnx-infer-shapes", "mlir::func::FuncOp"> {
  let summary = "Infer element types and symbolic shapes of onnx ops";
  let description = [{
    Walks the ops of a function in order and computes, for every result, its
    element type and its dims as symbolic expressions over the named dims of
    the graph inputs (batch, sequence, past length, ...). The values of small
    integer tensors (shape tensors) are tracked too, through Shape, Gather,
    Unsqueeze, Concat, Slice, arithmetic, Range, Reshape, Expand and Where, so
    that shapes computed at run time by exporter subgraphs fold to
    expressions. Results get ranked types with an `#onnx.dims` encoding where
    any dim is symbolic; integer results whose values are known get an
    `onnx.sym` attribute. The function's result types are updated.

    A result whose rank or dims cannot be determined is an error located at
    the op.

    Example: with `%x : tensor<?x?xf32, #onnx.dims<[b, s]>>`,
    `"onnx.Shape"(%x)` gets `{onnx.sym = #onnx.dims<[b, s]>}` and a
    `"onnx.Reshape"(%x, %shape)` whose shape is `Concat(Shape(x)[0], [-1])`
    gets type `tensor<?x?xf32, #onnx.dims<[b, s]>>`.
  }];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect"];
}

def ONNXFoldShapeConstants : Pass<"onnx-fold-shape-constants", "mlir::func::FuncOp"> {
  let summary = "Replace shape computations with known values by constants";
  let description = [{
    After onnx-infer-shapes, an integer op whose `onnx.sym` values are all
    constants is replaced by an `onnx.Constant`, and ops left without uses are
    erased. Shape subgraphs whose values are symbolic stay, annotated.

    Example: `"onnx.Shape"(%w) {onnx.sym = #onnx.dims<[64, 16]>}` becomes
    `"onnx.Constant"() {value = dense<[64, 16]> : tensor<2xi64>}`.
  }];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect"];
}

def RecognizeAttention : Pass<"lockstep-recognize-attention", "mlir::func::FuncOp"> {
  let summary = "Replace the attention subgraphs of a decoder with lockstep.attention";
  let description = [{
    Runs on the onnx form, after shape inference. It finds attention by
    structure, never by names or sizes:
    - a Softmax over the last axis of a rank-4 tensor whose only consumer is
      a MatMul with the values [B, H, Sk, Dv], directly or through the
      `Where(IsNaN(p), 0, p)` guard that exported SDPA adds (then
      `zero_empty_rows` is set);
    - its input: a MatMul of the queries [B, H, Sq, D] with the keys
      transposed [B, H, D, Sk], optionally multiplied or divided by a scalar,
      then optionally masked, by `Add` of a float mask or by
      `Where(mask, scores, fill)` with a scalar fill.
    The keys are unwound to [B, Hk, Sk, D]: a scalar Mul on them (SDPA's
    split scale) becomes `key_scale`; a Transpose of the last two axes, or
    dynamo's Reshape/Transpose/Reshape, is dropped (else a Transpose is
    inserted). When both keys and values repeat their heads for
    grouped-query attention (Unsqueeze, Expand by G, Reshape to Hk·G heads),
    the repetition is dropped and the op reads head h / G.

    The mask subgraph itself is kept as an operand. An attention that does
    not match is left as it is and compiles op by op.

    Example: `Softmax(Add(Mul(MatMul(%q, Transpose(%k)), %c), %m))` followed
    by `MatMul(%p, %v)` becomes
    `lockstep.attention %q, %k, %v mask %m scale %c`.
  }];
  let statistics = [
    Statistic<"numRecognized", "recognized", "attention subgraphs replaced">
  ];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect", "::lockstep::ls::LockstepDialect"];
}

def ProveMask : Pass<"lockstep-prove-mask", "mlir::func::FuncOp"> {
  let summary = "Prove each attention's mask causal or a sliding window, by evaluating it";
  let description = [{
    Runs after lockstep-recognize-attention. For each `lockstep.attention`
    that carries the graph's own mask, it evaluates the mask subgraph at
    compile time (no runtime, no guess) over a grid of context sizes and
    compares every element with the predicates it supports:
    - causal: the query at position t keeps keys 0..t;
    - causal with a sliding window of W: it keeps keys t-W+1..t (W is read
      off the evaluation, the same for every query and size).

    Queries are the last Sq of Sk keys, Sq the symbol of the new tokens and
    Sk - Sq zero or the past's symbol; the batch is 1. The grid covers
    context lengths 1 to 12, several larger ones, and c-1 to c+2, 2c and
    2c+1 for every integer constant c of the mask subgraph (where a window
    is written), each with several Sq. Inputs read by value get what the
    serving runtime feeds them: the positions input absolute positions, an
    input that feeds masks only (an attention mask) ones. Kept is a true
    boolean or an additive 0; masked is false, or -1e30 and below (float
    min, -inf), and a boolean mask's fill must be -1e30 or below.

    A proven mask is replaced by `causal` (and `window`); the mask subgraph
    is erased when nothing else reads it. A mask that reads inputs by value
    was proven only for the values the runtime feeds them, so it stays the
    graph's, with `lockstep.mask_proven_window` (0: plain causal) and
    `lockstep.mask_proven_for` beside it; the KV cache introduction and the
    ragged step, which feed those values, take the proven kind. A mask that is not proven (a
    different predicate, a bias such as ALiBi, a flipped position, an op the
    evaluator does not cover, an input whose values it would have to guess)
    stays as the graph's operand, and the attention gets
    `lockstep.mask_unproven` with the reason: it is served exactly as the
    graph computes it, or refused where a proven kind is needed. An
    attention without any mask is marked too: it is not causal.

    Example: `lockstep.attention %q, %k, %v mask %m` whose %m is
    `Where(And(k > t - 8, k <= t), 0, -3.4e38)` becomes
    `lockstep.attention %q, %k, %v {causal, window = 8 : i64}`.
  }];
  let statistics = [
    Statistic<"numProven", "proven", "masks proven causal or a sliding window">,
    Statistic<"numUnproven", "unproven", "masks left as the graph's operand">
  ];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect", "::lockstep::ls::LockstepDialect"];
}

def IntroduceKVCache : Pass<"lockstep-introduce-kv-cache", "mlir::func::FuncOp"> {
  let summary = "Give a whole-sequence decoder a KV cache";
  let description = [{
    Runs after lockstep-recognize-attention on a decoder without past/present
    inputs and outputs (token ids in, logits for every position out). For
    each `lockstep.attention`, in program order, it adds inputs
    `past.<i>.key` and `past.<i>.value` (the attention's keys and values with
    a new `past` length in place of the new tokens'), concatenates them in
    front of the new keys and values, returns the concatenations as
    `present.<i>.key` and `present.<i>.value`, and makes the attention
    `causal` over them (query i is position past + i), in place of the
    graph's own mask. Positions that the graph computes itself are shifted by
    `past` where they are used: the indices of a position table (a Gather of
    a weight, other than the token embedding) and the integers that rotary
    angles are cast from (backwards from Cos and Sin). Positions read from an
    input are left as they are. Ops and inputs left unused (the mask
    subgraph, an attention-mask input) are erased.

    The graph's mask is assumed to be the causal mask of one sequence without
    padding: a sliding window or a prefix mask in the exported graph is not
    carried over. A graph that already has a cache, has no recognized
    attention, or keeps a softmax that was not recognized is left as it is
    (with a warning in the last case).

    Example: `lockstep.attention %q, %k, %v mask %m fill %f` over keys
    `[1, 2, seq, 16]` becomes
    `lockstep.attention %q, Concat(%past0k, %k), Concat(%past0v, %v) {causal}`
    with a new input `past.0.key : [1, 2, past, 16]` and a new result
    `present.0.key : [1, 2, past + seq, 16]`.
  }];
  let statistics = [
    Statistic<"numIntroduced", "introduced", "functions given a KV cache">
  ];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect", "::lockstep::ls::LockstepDialect"];
}

def RaggedStep : Pass<"lockstep-ragged-step", "mlir::func::FuncOp"> {
  let summary = "Make a KV-cache decoder the ragged step of the serving ABI";
  let description = [{
    Runs after lockstep-recognize-attention (and lockstep-introduce-kv-cache)
    on a decoder whose serving roles are found (token ids, past/present
    cache streams, logits). The result is the `step` of the serving ABI: one
    call for the T new tokens of all R requests of a step, run with batch 1
    and seq T, so that every row-by-row op serves all requests at once.

    New inputs: `positions` [seq] (i64, each token's absolute position),
    `seq_starts` [requests + 1] (i64, request r owns tokens
    [seq_starts[r], seq_starts[r+1])), `block_tables` [requests, max_blocks]
    (i32), and per cache stream a pool `<past name>.pool`
    [blocks, block_size, heads, head size]. Each lockstep.attention over a
    cache becomes a lockstep.paged_attention that reads a token's own
    request from the pools and the new rows; each present output becomes the
    new rows (`<present name>.new`, [batch, heads, seq, head size]), which
    the runtime writes to the pools after the step. Positions that the graph
    computes itself (a position table's indices, the integers rotary angles
    are cast from) become `positions`. The past inputs and an attention mask
    input are erased; a node that still reads them is an error, located
    there. So is a softmax that is not a recognized attention.

    Like lockstep-introduce-kv-cache, it takes the graph's mask to be the
    causal mask of one unpadded sequence. Arguments and results get a
    `lockstep.role` attribute and the function `lockstep.step = "ragged"`,
    from which the artifact's `serving.*` properties are written.

    Example: `lockstep.attention %q, Concat(%past0k, %k), Concat(%past0v, %v)`
    becomes `lockstep.paged_attention %q, %k, %v, %pool0k, %pool0v,
    %positions, %seq_starts, %block_tables`, and `present.0.key` becomes
    `present.0.key.new = %k`.
  }];
  let statistics = [
    Statistic<"numRagged", "ragged", "functions made a ragged step">
  ];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect", "::lockstep::ls::LockstepDialect"];
}

def VerifyRows : Pass<"lockstep-verify-rows", "mlir::func::FuncOp"> {
  let summary = "Fail compilation where a ragged step could mix the rows of requests";
  let description = [{
    Runs on a function made by lockstep-ragged-step (others are left alone).
    The tokens of a step belong to different requests, so apart from
    lockstep.paged_attention, which reads each token's own request by
    construction, no op may combine the rows of different tokens. The proof
    uses the symbolic dims of the onnx form: a tensor's token axis is the one
    whose dim mentions the step's token count (the dim of `positions`), and
    each op is checked against what its ONNX semantics do to that axis.
    Elementwise ops must keep token axes aligned; reductions, Softmax,
    LayerNormalization, CumSum, Trilu, Concat, Split, Slice (unless whole)
    and Gather must not run along it; MatMul and Gemm must not contract it;
    Reshape, Flatten, Squeeze and Unsqueeze must keep each token's elements
    together; a result with two token axes, a Range over the token count,
    and the token count used as data are refused, and so is any other op
    that reads a token axis. Each failure is an error at the ONNX node.

    Example: `onnx.ReduceSum(%h, axes = [1])` over `[batch, seq, 64]` fails
    with "mixes the rows of different requests: a reduction along the token
    axis".
  }];
  let dependentDialects = ["::lockstep::onnxir::ONNXDialect", "::lockstep::ls::LockstepDialect"];
}

def ConvertONNXToLinalg : Pass<"convert-onnx-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Lower onnx ops to linalg, tensor, arith and math on tensors";
  let description = [{
    Lowers every onnx op of a function whose shapes have been inferred
    (onnx-infer-shapes). Dynamic sizes are computed from the symbolic dims:
    each symbol is read once, at the entry, from an argument dim that is
    exactly that symbol, so shape subgraphs are not executed. Integer ops
    whose values are known (`onnx.sym`) become those values.

    `onnx.Weight` ops become trailing function arguments, in order, with a
    `lockstep.weight` argument attribute giving the initializer's name, file,
    offset and length. Types lose their `#onnx.dims` encoding.

    Elementwise ops become one linalg.generic each, broadcasting through the
    indexing maps; MatMul and Gemm become generics with a reduction dim;
    reductions, Softmax and LayerNormalization become reduction generics and
    elementwise ops; Reshape, Squeeze and Unsqueeze become tensor.reshape;
    Concat, Split and Slice become tensor slices.

    Example: `"onnx.Add"(%a, %b)` of `tensor<?x64xf32, #onnx.dims<[n, 64]>>`
    and `tensor<64xf32>` becomes a linalg.generic over `tensor.empty(%n)`
    whose second indexing map is `(d0, d1) -> (d1)`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::tensor::TensorDialect"
  ];
}

def ExpandMath : Pass<"lockstep-expand-math", "mlir::func::FuncOp"> {
  let summary = "Expand transcendental math ops into Lockstep's own fp32 sequences";
  let description = [{
    The portable profile's numerics contract: `exp`, `log`, `tanh`, `erf`,
    `sin`, `cos`, `pow` and `rsqrt` are computed by Lockstep's own sequences
    of correctly rounded arith ops (addf, subf, mulf, divf), explicit
    `math.fma`, `math.sqrt`, integer and bit ops (arith.bitcast), compares
    and selects, never by libm or a hardware approximation, so that every
    target gives the same bits. The algorithms (range reduction, fitted
    polynomials, reconstruction, special cases) are in lib/Math and
    docs/math.md.

    Rewrites math.exp, math.log, math.tanh, math.erf, math.sin, math.cos,
    math.powf and math.rsqrt anywhere in the function, including the bodies
    of linalg.generic ops. Operands may be scalars, vectors or statically
    shaped tensors. f16 and bf16 operands are widened to f32 (exactly), the
    result is rounded back. f64 ops are left as they are: fp64 is outside the
    portable fp32 profile and still lowers to libm. A math op on a
    dynamically shaped f32 tensor is an error.

    Example: `%y = math.exp %x : f32` becomes a clamp of %x to [-104, 89],
    `k = round(x / ln2)` by an fma against 1.5 * 2^23, the reduced argument
    `r = fma(-k, ln2_hi, x)`, `fma(-k, ln2_lo, r)`, a degree-5 polynomial in
    Horner form with math.fma, and the result scaled by `2^k` built from its
    bits (`arith.bitcast` of `(k + 127) << 23`), in two halves.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect"];
}

def OutputsToArguments : Pass<"lockstep-outputs-to-args", "mlir::func::FuncOp"> {
  let summary = "Return results through caller-provided output arguments";
  let description = [{
    Appends one tensor argument per result and writes each returned value
    into it with `bufferization.materialize_in_destination`, then returns
    nothing. After bufferization the caller owns every output buffer, sized
    from the output's symbolic dims, and the code writes into it (in place
    where one-shot bufferization can, else by a copy). This is the entry ABI
    of artifacts: inputs, weights, then outputs. The function is marked
    `llvm.emit_c_interface` for lockstep-emit-entry.

    Example: `func.func @main(%x: tensor<?xf32>) -> tensor<?xf32>` becomes
    `func.func @main(%x: tensor<?xf32>, %out: tensor<?xf32>)`.
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def EmitEntry : Pass<"lockstep-emit-entry", "mlir::ModuleOp"> {
  let summary = "Add the packed `lockstep_entry(void **args)` wrapper";
  let description = [{
    After lowering to the LLVM dialect, defines
    `void lockstep_entry(void **args)`, which calls the C interface of
    `main` (`_mlir_ciface_main`, one pointer to a memref descriptor per
    argument) with `args[0], args[1], ...`. The runtime, which has no MLIR
    dependency, then calls any model through one signature.

    Example: for `_mlir_ciface_main(!llvm.ptr, !llvm.ptr)`, the wrapper loads
    two pointers from `args` and calls it.
  }];
  let options = [
    Option<"function", "function", "std::string", /*default=*/"\"main\"",
           "The function to wrap (its C interface is `_mlir_ciface_<name>`)">,
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def LowerCopies : Pass<"lockstep-lower-copies", "mlir::func::FuncOp"> {
  let summary = "Turn memref.copy into linalg.copy";
  let description = [{
    memref.copy of a non-contiguous memref lowers to a call of MLIR's
    `memrefCopy` runtime helper, which artifacts do not link. As linalg.copy
    it becomes plain loops with the rest of the linalg ops, and the shared
    object stays self-contained.

    Example: `memref.copy %a, %b : memref<?xf32, strided<[2]>> to memref<?xf32>`
    becomes `linalg.copy ins(%a : ...) outs(%b : ...)`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def OutlineParallel : Pass<"lockstep-outline-parallel", "mlir::ModuleOp"> {
  let summary = "Outline outermost scf.parallel loops into work functions";
  let description = [{
    Each outermost `scf.parallel` loop nest becomes a private function
    `@lockstep_par_<N>(%begin: index, %end: index, captures...)` that runs
    work items `[begin, end)`, and the loop becomes a call of it over all
    items. A work item is one point of the loop's parallel dims except the
    last, which each item runs whole (so that its inner loop can be
    vectorized); with one parallel dim, an item is one iteration. Values the
    body uses from outside are passed as arguments; constants are cloned in.
    Identical work functions (the same loop in every layer) are made once.
    Stack buffers of static size in the body (`memref.alloca`, a kernel's
    per-iteration scratch) move to the work function's entry, so that a
    thread's items reuse one buffer instead of growing the stack by one an
    item (an alloca is freed only when its function returns).

    lockstep-dispatch-parallel later turns each call into a dispatch to the
    runtime's thread pool. Only parallel dims are split: every output element
    is still computed by one work item, in the same order, so results do not
    depend on the number of threads.

    Example: `scf.parallel (%i, %j) = (%c0, %c0) to (%n, %m)` becomes
    `call @lockstep_par_0(%c0, %n, ...)` and a function looping over
    `%i` in `[begin, end)` and `%j` in `[0, m)`.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect"];
}

def DispatchParallel : Pass<"lockstep-dispatch-parallel", "mlir::ModuleOp"> {
  let summary = "Dispatch outlined parallel work to the runtime's thread pool";
  let description = [{
    After lowering to the LLVM dialect, rewrites each call of a
    `@lockstep_par_<N>` work function into: its arguments stored in a stack
    struct, and a call through the exported global
    `lockstep_parallel_for_impl`, which the runtime sets to its thread pool's
    `parallel_for(pool, trampoline, ctx, begin, end)` (with the global
    `lockstep_thread_pool` as `pool`). When the runtime has set no pool, the
    trampoline is called directly on the whole range. The trampoline
    `@lockstep_par_<N>_tramp(ctx, begin, end)` loads the arguments back and
    calls the work function.

    Example: `llvm.call @lockstep_par_0(%lo, %hi, %p, %n)` becomes a store of
    `%p, %n` into an alloca and a call of `lockstep_parallel_for_impl`.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ReductionsInnermost : Pass<"lockstep-reductions-innermost", "mlir::func::FuncOp"> {
  let summary = "Move every linalg.generic's reduction dims after its parallel dims";
  let description = [{
    Runs for `--target=cuda` before convert-linalg-to-parallel-loops, which
    makes an `scf.parallel` of the leading parallel dims only: a chunked
    projection `[1, T, K(reduction), N]` would become a parallel loop over
    T with the loops over K and N inside, every GPU thread computing a whole
    row. Each generic's dims are permuted so that its parallel dims come
    first, in their order, then its reduction dims, in theirs. Every output
    still folds over the reduction dims in the same lexicographic order, so
    no fold changes: only which outputs a thread owns does.

    Example: a generic with iterator types
    `["parallel", "parallel", "reduction", "parallel"]` and maps
    `(d0, d1, d2, d3) -> (d0, d1, d2)`, `(d2, d3)`, `(d0, d1, d3)` becomes
    `["parallel", "parallel", "parallel", "reduction"]` with
    `(d0, d1, d2, d3) -> (d0, d1, d3)`, `(d3, d2)`, `(d0, d1, d2)`.
  }];
  let statistics = [
    Statistic<"numInterchanged", "interchanged", "generics whose dims were permuted">
  ];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FuseElementwise : Pass<"lockstep-fuse-elementwise", "mlir::func::FuncOp"> {
  let summary = "Fuse chains of elementwise linalg ops into one op each";
  let description = [{
    Runs on tensors for both targets, after the canonical reductions and
    their verification (and lockstep-expand-math). A `linalg.generic` whose loops are all parallel and
    whose result has one use, by another such generic, is fused into it
    (upstream's elementwise fusion, limited to these pairs): the chains of
    norm scaling, RoPE, activations and residual adds become one op, so one
    kernel and one pass over memory. Every element is computed by the same
    scalar ops in the same order from the same operands, and an f32 held in
    a register equals the f32 stored and reloaded, so no bit changes.
    Producers with several uses (of one result or of several) are left
    alone: fusing them would compute them once per use. A cheap elementwise
    producer (at most 4 ops: a norm's square) used once by a reduction of
    one input is fused into it, through the expand_shape that splits the
    reduced dim into chunks: each folded value is computed in the fold by
    the same ops. An expanded pow or exp is not (fused into a norm's
    partials, one thread a chunk of 256, the H200 took 63 us against 14 for
    the two kernels). Contractions are never fused into.

    Two rewrites come first. A `tensor.extract` from a `linalg.transpose`
    (RoPE's rotate-half is such a gather, see ConcatSlices.cpp) reads the
    transpose's input at the permuted index instead; and a transpose used
    once, as an input of an elementwise generic, becomes a generic, which
    then fuses into it. So the exporters' q and k path (reshape, transpose,
    x·cos + rotate_half(x)·sin) is one op reading the projection's output.
    A copy is exact: these change no bit either.

    A reduction of one input whose only use is an input of an elementwise
    generic, read through a permutation (each of its elements once: a
    projection's chunk combine before the residual add or the MLP's
    activation product), is folded in the consumer's body instead: an
    `scf.for` over the reduced dim from the reduction's init (its fill value
    or its element), applying the reduction's own body to each element of
    its input in order. One kernel fewer and the combined tensor never
    stored; the fold is the same ops in the same order. A reduction read
    through a broadcast (a norm's mean, at every column) is folded again at
    each read, so only when it folds at most 32 elements (a norm's combine
    of 8 chunk partials). So is one that the consumer also gathers from
    with `tensor.extract` in its body (RoPE's rotate-half of the q and k
    projections), each gathered element folded again. The reduction may
    reach the consumer through a `tensor.reshape` with `tensor.from_elements`
    sizes (the exporters' [1, T, H·D] -> [1, T, H, D]): an element of the
    reshape is the element at the same row-major position of its source,
    and the reshape's `tensor.dim`s are read from its sizes. A transpose of
    such a reduction (v's, into the KV cache's layout) becomes a generic,
    so the combine folds into it: q's, k's and v's chunk combines are no
    kernels of their own.

    Example: `%a = generic {x * y}` used once by `%b = generic {a + z}`
    becomes one `generic {(x * y) + z}`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def ForwardFills : Pass<"lockstep-forward-fills", "mlir::func::FuncOp"> {
  let summary = "Start reductions from their init's fill value instead of a filled buffer";
  let description = [{
    Runs on the bufferized step, for both targets, after the kernel passes
    that forward fills themselves (lockstep-tile-contractions,
    lockstep-cpu-microkernels) and before convert-linalg-to-parallel-loops.
    A `linalg.fill` of a value `c` into a buffer that a reduction
    `linalg.generic` then folds into (see `forwardableFill` in
    lockstep/Reductions/Contraction.h: nothing else touches the buffer in
    between, and the generic writes all of it) is erased, and the generic's
    body reads `select(first, c, acc)` for that output's value, where
    `first` is true at index 0 of every reduction dim. Each output's fold
    then starts from `c` exactly as it started from the stored `c` before,
    so no bit changes; the step loses a kernel (on the GPU) or a pass over
    memory (on the CPU) per forwarded fill. Only generics whose reduction
    dims have static, nonzero extents are rewritten: with no iteration the
    output would keep the unfilled buffer's contents.

    Example: `linalg.fill ins(%zero) outs(%out)` then a combine
    `generic {acc + p}` over 3 chunks becomes one `generic {select(j == 0,
    %zero, acc) + p}`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect"];
  let statistics = [
    Statistic<"numForwarded", "forwarded", "Fills forwarded into the reductions after them">,
  ];
}

def PromoteAccumulators : Pass<"lockstep-promote-accumulators", "mlir::func::FuncOp"> {
  let summary = "Carry a reduction loop's output element in a register instead of memory";
  let description = [{
    Runs on the bufferized step, for both targets, right after
    convert-linalg-to-parallel-loops. A reduction lowered to loops loads its
    output element, combines and stores it back at every iteration of an
    `scf.for`. When the loop's body (directly, not nested) has a
    `memref.load` and then a `memref.store` of one element, at the same
    indices, with the memref and the indices defined outside the loop, and
    no other access in the loop (nested ones included) may touch that
    buffer, the element is loaded once before the loop, carried as an
    iter_arg, and stored once after it. May touch: views of the same
    buffer do, a fresh allocation (`memref.alloc`/`alloca`) is touched only
    by its own views, a global of the module only by views of itself,
    function arguments may be any buffer that was not allocated here, and a
    memref made any other way (a branch's result, say) may be any buffer. A loop with an
    op of unknown memory effects is left alone. Loops are visited inner
    first, so a fold over several reduction loops is carried through all of
    them.

    The fold's ops, their order and their operands do not change, and an
    f32 in a register equals the f32 stored and loaded, so no bit changes.
    A loop that runs no iteration stores back the value it loaded. What
    goes is a round trip through memory per iteration: on the GPU each
    iteration's loads waited for the store before them (they may alias it),
    so a fold of 256 values waited for global memory 256 times.

    Example: `scf.for %k { %a = load %out[%i]; %x = load %in[%i, %k];
    %s = addf %a, %x; store %s, %out[%i] }` with `%out` an allocation
    becomes `%a0 = load %out[%i]; %r = scf.for %k iter_args(%a = %a0) {
    %x = load %in[%i, %k]; %s = addf %a, %x; yield %s }; store %r,
    %out[%i]`.
  }];
  let dependentDialects = ["::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect"];
  let statistics = [
    Statistic<"numPromoted", "promoted", "Accumulators carried in registers">,
  ];
}

def GroupContractions : Pass<"lockstep-group-contractions", "mlir::func::FuncOp"> {
  let summary = "Move contractions that read the same input next to each other";
  let description = [{
    Runs for `--target=cuda` on tensors, after lockstep-fuse-elementwise, so
    that lockstep-tile-contractions can give a step's projections of one
    hidden state one launch (q, k and v; gate and up): at one or a few rows
    each alone fills few of the device's SMs (k and v of a 1e9-parameter
    Llama: 64 blocks of 64 threads), together they fill more.

    Two contractions (linalg.generic, two inputs, one output, one reduction
    dim) are siblings when their first inputs are the same tensor (one
    value, or the same expand_shape or collapse_shape of one tensor), read
    through the same map, and that map reads the rows and every batch dim;
    their loops, k and its length agree. A later sibling moves to just after
    the group's last member, with the ops after that member it depends on
    (its weights' reshape, its output's empty tensor and fill), in their
    order; then its first input becomes the group's first member's own
    value (the reshape it had is erased when unused). It moves only when
    none of those ops has side effects and it depends on no member. So
    every value is computed by the same ops from the same operands, only
    earlier in the block: no bit changes.

    Example: `%q = generic(%xq, %wq)`, `%cq = combine(%q)`, `%xk =
    expand_shape %x`, `%k = generic(%xk, %wk)` (with `%xq` the same
    expand_shape of `%x`) becomes `%q = generic(%xq, %wq)`, `%k =
    generic(%xq, %wk)`, `%cq = combine(%q)`.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numMoved", "moved", "contractions moved next to a sibling">
  ];
}

def TileContractions : Pass<"lockstep-tile-contractions", "mlir::func::FuncOp"> {
  let summary = "Launch each bufferized contraction as a shared-memory tiled GPU kernel";
  let description = [{
    Runs for `--target=cuda` on the bufferized step, before
    convert-linalg-to-parallel-loops. A `linalg.generic` of two inputs and
    one output whose one reduction dim `k` is its last loop, with a static
    length divisible by 8, and with a parallel dim `m` read only by the first
    input and a dim `n` read only by the second (both written), is a
    contraction: a projection `X·W`, a chunk's partial of one, or a batched
    product. Every other parallel dim is a batch dim, mapped to grid z.

    It becomes a `gpu.launch` in which a block owns a tile of (m, n): the
    block stages `BK` values of k of both inputs in workgroup memory
    (`tile[k][p]`), and each thread folds its outputs over those k, in
    increasing k, starting from the output's value, with the generic's own
    body. So every output folds over k from its init in increasing k, exactly
    as the generic says: tiling changes which thread computes an output and
    where its operands come from, never the order of its fold. Rows and
    columns past the end read zeros and are never stored. When a
    `linalg.fill` of the output comes just before (see `forwardableFill` in
    lockstep/Reductions/Contraction.h), the tiles start every output from
    the fill's value instead of loading it, and the fill moves into the
    branch that keeps the plain generic: one kernel fewer a contraction.

    The host picks the tile from the number of rows, each call: one row
    (decode of one request) takes 1x64 tiles of 64 threads, an output each,
    BK up to 64; up to 8 rows, 8x64 tiles of 64 threads with 8x1 outputs
    each, BK up to 32. These two are direct: only the first input goes
    through workgroup memory, and each thread loads its own column of the
    second (the weights) for the step's k into registers (the next step's
    while it folds this one, the column clamped to the last so that no
    load branches) and folds from them, the loop over the step's k unrolled
    whole. Up to 16 rows take 16x64 tiles of 64x4 threads with 4x1 outputs
    each, BK up to 64, both inputs staged (a thread's rows are `ty + i·TY`,
    its columns `tx + j·TX`). More rows take register-blocked
    tiles: up to 32 rows, 32x64 tiles of 16x8 threads with 4x4 outputs a
    thread, BK 32; up to 256, 64x128 tiles of 16x16 threads with 4x8, BK
    16; more (prefill), 128x128 tiles of 16x16 with 8x8, BK 8 (the table
    in lib/GPU/TileShapes.cpp; the `shapes` option, lockstep-opt
    --gpu-tiles, replaces it for tuning, bench/gpu/tiles.py). There a
    thread's rows and columns come in groups of 4 adjacent ones, 64 apart
    (rows `4·ty + i%4 + 64·(i/4)`), which it reads from workgroup memory as
    `vector<4>`s (the tiles padded by 4 elements a row, so rows stay 16-byte
    aligned and a warp's stores of k-major rows hit distinct banks; see
    lockstep-align-workgroup-memory). An input whose last index is k or its
    own dim, with unit stride, 32-bit elements and that dim's static size,
    other strides and offset multiples of 4 (any identity layout whose last
    size 4 divides), is loaded as `vector<4>`s of 4 adjacent elements: along
    its own dim stored as one vector, along k (`X[m, k]`, transposed
    weights `W[n, k]`) stored element by element into the k-major tile. An
    input that is not (bf16 weights, a view with a dynamic offset) is loaded
    element by element. The outputs' init loads and final stores are
    `vector<4>`s under the same condition on n. All give the same bits.
    With no rows (or more batch points than grid z takes) the generic is
    kept, and lockstep-map-to-gpu maps it a point a thread.

    Staging is software-pipelined: a thread issues all its loads of a step's
    tiles before storing any (global loads may alias the workgroup stores,
    so they would otherwise wait one by one), and the next step's loads are
    issued before this step's fold, their values carried in registers. The
    register-blocked tiles are double-buffered: the next step's values are
    stored into the other buffer after the fold, one barrier a step; their
    fold over a step's k is unrolled by 2 (fully unrolled, ptxas hoists the
    workgroup loads and takes more than 128 registers a thread).

    A generic is not tiled when its body reads `linalg.index` or has side
    effects, or when its output shares a buffer with an input.

    Contractions that read the same first input (one buffer, one map that
    reads the rows and every batch dim), with the same k and the same kind
    of second input, and with nothing between them but allocations, size
    and view computations, and fills or frees of buffers no member reads
    (lockstep-group-contractions puts a step's q, k and v projections so,
    and gate and up), share one launch a shape, at the last one's place:
    block x runs over the first one's column tiles, then the next one's,
    and each block computes its member's tile exactly as that member's own
    launch would (lockstep::buildContractionGroupLaunch). At one row the k
    and v projections of a 1e9-parameter Llama have 64 blocks each; with q
    one launch of 384 fills the device. No output's fold changes.

    Example: `Y[t, n, j] = fold_k fma(X[t, j, k], W[j, k, n], .)` (a chunk's
    partial: k of extent 256, j the chunk) becomes
    `scf.if (T > 0 && ...) { scf.if (T <= 1) { gpu.launch blocks(ceil(N/64),
    T, J) threads(64, 1, 1) ... } else { scf.if (T <= 8) {...} else {
    scf.if (T <= 16) {...} else { scf.if (T <= 32) {...} else { scf.if (T <= 256)
    {...} else { gpu.launch
    blocks(ceil(N/128), ceil(T/128), J) threads(16, 16, 1)
    workgroup(memref<2x8x132xf32, 3>, memref<2x8x132xf32, 3>) {...} } } } } }
    } else { <the generic> }`; there X is loaded as `vector<4>`s along k and
    W along n (given static sizes that 4 divides), and Y element by element
    (its last index is j, not n).
  }];
  let options = [
    Option<"minRows", "min-rows", "int64_t", /*default=*/"0",
           "Tile only when the row dim has more points than this">,
    Option<"shapes", "shapes", "std::string", /*default=*/"\"\"",
           "The table of tile shapes as text (lockstep/GPU/TileShapes.h: "
           "entries ROWS:TXxTY/TMxTN/BK[/v4][/direct] separated by ';', the "
           "last ROWS '*'); empty: the compiler's table above. Every table "
           "gives the same bits">
  ];
  let statistics = [
    Statistic<"numTiled", "tiled", "contractions given tiled launches">,
    Statistic<"numGrouped", "grouped", "contractions launched together with others that read the same input">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::vector::VectorDialect"];
}

def CpuMicrokernels : Pass<"lockstep-cpu-microkernels", "mlir::func::FuncOp"> {
  let summary = "Compute each bufferized f32 contraction in register-blocked vector tiles";
  let description = [{
    Runs for `--target=cpu` on the bufferized step, before
    convert-linalg-to-parallel-loops. A contraction (the generic's loop dims
    all parallel but one reduction dim `k`, anywhere in the loop order; a
    dim `m` read by the first input only and a dim `n` read by the second
    only, both written; see lockstep/Reductions/Contraction.h) is rewritten
    when its body is the contract's `math.fma` of the two inputs into the
    output, all f32, and `n` is the last, unit-stride, index of the output
    (its rows contiguous). The second input (the weights) is read as
    `W[k, n]` when `n` is its last, unit-stride, index too; transposed
    weights (`W[n, k]`, k last and of unit stride, as in a tied lm_head
    `X·Embᵀ`) and weights of any other layout only when k is static and
    the packed copy below fits; transposed weights with a static k too
    long for it (a reduction folded whole, as the adaptive controls fold
    them: 768 values of k are 96 KiB a tile of 32 columns) take the
    transposed strips below at every number of rows. The kernels are built
    by lockstep/CPU/ContractionKernels.h.

    The number of rows `m` (T, usually dynamic) picks the form at run
    time, and both give the same bits. With fewer than `panel-rows` (0:
    `rows`; the CPU pipelines use 8, where the panels beat the 4-row tiles)
    rows (decode), it becomes an `scf.parallel` of one dim over (batch point,
    panel of 4096 columns): each work item streams its rows of the weights
    once, k outermost and in increasing order, 4 values of k a step: for
    each row it broadcasts `A[m, k..k+3]`, and each `vector<8xf32>` of
    outputs is loaded, folded over the 4 in order (`out = math.fma(a_u,
    B[k+u, n:n+8], out)`) and stored, the last columns of a panel not
    filling a vector one at a time with the generic's scalar body; the last
    k mod 4 values one at a time. (A step of one k loaded and stored every
    output once per weight row.) Wide panels keep each weight row one sequential stream,
    which the hardware prefetches; the chunk dims of a partial and the
    panels are what threads share. Transposed weights take this form up to
    `strip-rows` rows when it is set (else below `panel-rows` too). They
    are streamed in strips of 16 columns (then of one vector, then single
    columns with the scalar body), a partial's chunk dim (which indexes the
    weights) looped inside each strip so that its weight rows are read in
    address order, and a strip's rows taken `rows` at a time (then the last
    one at a time): for each row of the tile, 2 `vector<8xf32>` (with
    `lanes=16`, 1 `vector<16xf32>`) accumulators are loaded from the output
    (or start from a forwarded fill's value) and carried over all of k; each L x L block of `W[n:n+L, k:k+L]` (L the
    vectors' lanes) is loaded along its contiguous k and transposed in
    registers once for all the tile's rows (24 `vector.shuffle`s for 8
    lanes, 64 for 16), and its L values of k are folded into each row in
    increasing order; the last k mod L values are gathered a column at a
    time. A strip's weights stay in cache from one row tile to the next.

    Otherwise an `scf.parallel` of one dim over (batch point, group of G
    column tiles of `cols`): a work item copies its whole tiles of the
    weights `B[k, n0 + t·cols : n0 + (t+1)·cols]` for all k into a heap
    buffer `[G, k, cols]` (when k is static and one tile is at most 64 KiB:
    it is then read from cache by every row tile instead of a row stride
    apart, where the loads of a power-of-two stride fall into the same
    cache sets), k outermost, so that each weight row's columns of the
    group are read as one sequential run; transposed weights are copied a
    tile at a time in the same 8 x 8 transposed blocks, the last k mod 8 an
    element at a time. Then it runs the row tiles of each column tile in
    turn. G is chosen at run time: as many tiles as 256 KiB of packed
    weights hold, fewer when the contraction has fewer than 16 groups'
    worth of (batch point, tile) pairs, so that threads still share it; the
    columns after a group's last whole tile fold each output alone. (With
    one tile a work item, a decode step of 8 rows read one 64-byte line of
    each of k weight rows a page apart per item, at a few GB/s.) Up to 32
    rows (a decode step of a few requests), weights `W[k, n]` are not
    copied: the copy would be read back by only a few row tiles, and the
    core would wait on memory for each group's copy before its first
    product. The row tiles read them in place instead, and each step of k
    issues a `memref.prefetch` of weight row k + 64 (the last row past the
    end), a cache line of every 16 columns of the tile: rows a weight
    stride apart are too far apart for the hardware's prefetchers to run
    ahead of the loads. There a partial's chunk dim, which indexes the
    weights, gets no work items of its own: each column tile loops over
    the chunks, in order, around its row tiles, so that its weight rows
    are read in address order, all of k, and the prefetch of chunk j runs
    on into chunk j + 1's rows (row j·C + k + 64 of the chunks' rows read
    as one run `W[j, k, n]`, up to the last). (With a work item a chunk,
    a decode step of GPT-2's 768 x 2304 projection started each chunk's
    first 64 rows without a prefetch.) A tile of `rows` x
    `cols` outputs is held in `vector<8xf32>` accumulators, `scf.for`
    iter_args loaded from the output; for each k in increasing order, from
    0, every row's `A[m, k]` is broadcast, the weights' vectors loaded, and
    each accumulator becomes `math.fma(a, b, acc)`; at the end they are
    stored. The last rows, fewer than `rows`, run the same loop a row at a
    time; a column tile past the end of `n` folds each of its outputs with
    the generic's own scalar body.

    Every product is `math.fma` on vectors (operands in the body's order),
    which lowers to `llvm.intr.fma`; not `vector.fma`, which MLIR lowers to
    `llvm.intr.fmuladd`, free to become a product and a sum. In every case
    each output is one lane, folded with the same fma, over the same k in
    the same order, from its own value: the bits are those of the generic,
    whatever the rows, tiles or threads. Chunked reductions keep their
    chunks (a partial's chunk dim is a batch dim) and their combine, which
    is another generic. Where the strips run a partial whose fill is
    forwarded and whose combine comes right after it (`out = addf(out,
    partial)` or `addf(partial, out)` over the chunk dim, the dim that
    indexes the weights, into a fresh buffer of its own whose rows are
    contiguous; see `stripCombine` in lockstep/CPU/ContractionKernels.h),
    they run that combine too: once a chunk's outputs are folded, they are
    added to the combine's output at once (loaded, the combine's own add in
    its operand order, stored; chunk 0 adds to the combine's forwarded fill
    value), and the partials are never stored. The strips of an output run
    its chunks in increasing order, so its adds are the combine's, in the
    combine's order: the same bits, without a partial buffer written and
    read back (a tied lm_head's: 3 x 50257 floats a row for GPT-2) or a
    pass of its own. Where the rows pick the tiles instead, the combine
    (and its fill) runs after them as before.

    A `linalg.fill` of the output just before (see `forwardableFill` in
    lockstep/Reductions/Contraction.h) is forwarded: the tiles and the
    transposed panels start their accumulators from its value instead of
    loading it; the other few-rows forms, which fold in memory, run the
    fill first. Either way each output's fold starts from the same value.

    Any other generic is left to convert-linalg-to-parallel-loops.

    Example: `Y[t, n] = fold_k fma(X[t, k], W[k, n], Y[t, n])` with
    `rows=4 cols=16` becomes `scf.if (T < 4) { scf.parallel (%p) = (0) to
    (ceil(N/4096)) { scf.for %k { scf.for %t { scf.for %n step 8 {...} } } }
    } else { scf.parallel (%g) = (0) to (ceil(N/(16·G))) { scf.if (T <= 32)
    {the tiles below, reading W in place} else { pack; scf.for %nt {
    scf.for %mt { scf.if (full tile) { scf.for %k iter_args(8 x
    vector<8xf32>) } else {a row at a time} } } }; last columns alone } }`.
  }];
  let options = [
    Option<"rows", "rows", "int64_t", /*default=*/"4",
           "Rows of a register tile (outputs folded together along m)">,
    Option<"cols", "cols", "int64_t", /*default=*/"16",
           "Columns of a register tile, a multiple of lanes (one vector each lanes)">,
    Option<"panelRows", "panel-rows", "int64_t", /*default=*/"0",
           "Fewer rows than this take the panels (0: `rows`); at least `rows`">,
    Option<"stripRows", "strip-rows", "int64_t", /*default=*/"0",
           "Transposed weights: up to this many rows take the strips (0: as "
           "`panel-rows` says)">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"8",
           "f32 lanes of the tiles' and panels' vectors: 8 (AVX2, x86-64-v3) or 16 "
           "(AVX-512, x86-64-v4); the transposed strips stay 8">,
  ];
  let statistics = [
    Statistic<"numRewritten", "rewritten", "contractions computed in vector tiles">,
    Statistic<"numCombined", "combined", "chunk combines run by their partials' transposed strips">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def CpuGatherKernels : Pass<"lockstep-cpu-gather-kernels", "mlir::func::FuncOp"> {
  let summary = "Compute each bufferized gather contraction a vector of outputs at a time";
  let description = [{
    Runs for `--target=cpu` on the bufferized step, next to
    lockstep-cpu-microkernels and before convert-linalg-to-parallel-loops.
    A gather contraction is a generic that folds over one reduction dim `r`
    (its other dims parallel, every map a projected permutation) into one
    f32 output, whose body yields `math.fma(x, y, out)` with `out` used
    there only, and loads from a buffer at an index computed from an input's
    value: the paged attention's scores (`dot[b, hk, g, i, k] = fold_d
    fma(q[b, hk, g, i, d], keys[rows[i, k], hk, d] (· key_scale), dot)`)
    and value products (`o[b, hk, g, i, j, e] = fold_c fma(p[b, hk, g, i, j,
    c], values[rows[i, j, c], hk, e], o)`). As a generic it runs as scalar
    code, one dependent fma chain per output.

    The lane dim `l` is the output's last index (of unit stride, and at least
    8 when static); every parallel dim must be written (one output per
    point), and `r` must not be. Then the generic becomes an `scf.parallel`
    of one dim over (point of the other parallel dims, block of `8 ·
    vectors` lanes; `vectors` is capped at `l`'s static extent / 8). A work
    item holds its block in `vectors` accumulators of `vector<8xf32>`,
    `scf.for` iter_args loaded from the output, and for each `r` from 0, in
    increasing order, applies the generic's body to all lanes at once, op by
    op: an op whose operands are the same for every lane (they do not
    depend on `l`: `q`, `p`, `rows` of the value product, the key scale)
    runs once on scalars; another, elementwise (arith, or math.fma: ops
    whose vector form lowers to the scalar form per lane), runs on
    `vector<8xT>` with the others broadcast; a load whose last index is
    `linalg.index l` (and the others the same for every lane) is one vector
    load (the value row's `e`, contiguous), any other varying load one
    scalar load per lane gathered into a vector (the key rows of 8 keys); an
    input read at `l` is loaded the same way. A varying f32 load whose last
    index is `linalg.index r` (unit stride) and whose other indices do not
    depend on `r` (the key rows: `keys[rows[i, k], hk, d]`) is read a tile
    at a time when `r`'s extent is static and a multiple of 8: the loop
    then steps `r` by 8, each lane's 8 steps are one vector load, the 8 x 8
    tile is transposed with shuffles (moves, no arithmetic) into one vector
    of the lanes per step, and the 8 steps run one after another, in
    order, for every accumulator. Before that, a run-time test: when every
    varying index of the load is the same in all 8 lanes (the 8 keys' rows
    are one row, as for the keys past a token's position, which the
    paged attention clamps to the token's own row), each step's vector is
    that row's element loaded once and broadcast instead (the same values
    in every lane, without a shuffle). At the end the accumulators are stored. A last block not filling `8 · vectors` lanes folds a
    vector at a time, and its last lanes, fewer than 8, one at a time with
    the generic's scalar body.

    Shared tiles: when the row loads are tiled and some outer dim of static
    extent e > 1 is one that no row load depends on (neither its buffer nor
    its indices derive from `linalg.index` of it or from an input read
    along it: the query heads `g` of one key head, whose keys are the same),
    a work item takes c consecutive points of it (c the largest divisor of e
    up to 4; the one dim with the largest c), and `vectors` is capped at
    8 / c. The tiled loop then goes one vector of lanes after another: its
    tile is loaded and transposed once, and for each of its 8 steps, in
    order, the body runs for each of the c points. So the c points share the
    tile's loads and shuffles, and only one tile is live at a time; each
    accumulator still takes every step in order. The last lanes fold one
    point after another.

    Elementwise ops on vectors compute each lane as the scalar op would
    (`math.fma` lowers to `llvm.intr.fma`, one rounding), so every output
    is one lane, folded by one thread with the generic's own body, over `r`
    in increasing order, from its own value: the bits are those of the
    generic. Only which outputs are computed together changes: the lanes'
    chains are independent, so they no longer wait on one another's fma.

    A generic is left alone (to convert-linalg-to-parallel-loops) when its
    body has an op with regions or several results, a side effect other
    than a load, a load from the output's buffer, or a varying op that is
    neither a load nor an elementwise arith op or math.fma; or when an input
    shares the output's buffer.

    Example: the scores above with `vectors=8` become `scf.parallel (%p) =
    (0) to (B·Hk·G·T · ceil(L/64))`, whose items run `scf.if (full block) {
    scf.for %d step 8 iter_args(8 x vector<8xf32>) { 64 rows, 64 vector
    loads of 8 steps of a key, 8 transposes; 8 times: math.fma (broadcast
    q[d], keys at d, acc) for each accumulator } } else {8 keys at a time,
    then one}`.
  }];
  let options = [
    Option<"vectors", "vectors", "int64_t", /*default=*/"8",
           "vector<8xf32> accumulators of a block (independent chains)">,
  ];
  let statistics = [
    Statistic<"numRewritten", "rewritten", "gather contractions computed on vector lanes">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def GPUPagedAttention : Pass<"lockstep-gpu-paged-attention", "mlir::func::FuncOp"> {
  let summary = "Make each lockstep.paged_attention one GPU kernel, op for op its expansion";
  let description = [{
    Runs for `--target=cuda` before lockstep-canonical-reductions, on tensors.
    Each `lockstep.paged_attention` becomes the pool writes of its expansion
    (each token's request, then its new key and value rows written at its
    slot) and `gpu.launch`es reading buffers of those tensors
    (`bufferization.to_buffer read_only`) and writing a new buffer that
    becomes the result (`bufferization.to_tensor restrict writable`). A step
    of at most 65536 (token, query head, key chunk) items takes two
    launches: a warp a chunk of a (token, query head) writes the chunk's
    statistics to a scratch buffer, then a warp a (token, query head) merges
    them in chunk order. A larger step takes one launch, a warp a (token,
    query head) looping over its chunks. When the result's only use is a
    `linalg.transpose` by [0, 2, 1, 3] (to [1, T, H, Dv], before the output
    projection), y is stored in that layout and replaces the transpose. See
    lockstep/GPU/PagedAttentionKernel.h for how each value is the same ops
    on the same operands, in the same order, as in the expansion of
    lockstep-canonical-reductions with key chunks of `chunk`, and why the
    chunks it skips (all keys masked) change no bit.

    An op the kernel cannot serve is left to that expansion: not f32, a
    head size over `max-chunk` (the dot is then chunked), more than 1024
    threads a block, keys of one static chunk, or a planted violation. The
    pipeline leaves this pass out under the policies that make attention's
    chunks depend on the batch (adaptive-kv) and the planted ones.

    `chunk` and `max-chunk` must be lockstep-canonical-reductions'
    `dynamic-chunk` and `max-chunk`.
  }];
  let options = [
    Option<"chunk", "chunk", "int64_t", /*default=*/"64",
           "Key chunk width (canonical-reductions' dynamic-chunk)">,
    Option<"maxChunk", "max-chunk", "int64_t", /*default=*/"256",
           "Longest static reduction folded whole (canonical-reductions' max-chunk)">,
  ];
  let statistics = [
    Statistic<"numKernels", "kernels", "paged attentions made one GPU kernel">,
    Statistic<"numLeft", "left", "paged attentions left to the expansion">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect",
                           "::mlir::math::MathDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect", "::mlir::vector::VectorDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def CpuPagedAttention : Pass<"lockstep-cpu-paged-attention", "mlir::func::FuncOp"> {
  let summary = "Make each lockstep.paged_attention one parallel CPU loop, op for op its expansion";
  let description = [{
    Runs for the CPU target before lockstep-canonical-reductions, on
    tensors. Each `lockstep.paged_attention` becomes the pool writes of its
    expansion (each token's request, then its new key and value rows
    written at its slot) and one `scf.parallel` over (block of `lanes`
    tokens, query head) reading buffers of those tensors
    (`bufferization.to_buffer read_only`) and writing a new buffer that
    becomes the result (`bufferization.to_tensor restrict writable`). A
    block's tokens are split into runs of one request, whose tokens are the
    lanes of vectors: per key chunk, each key's dot with every lane's query
    (over d in order from +0.0), the expansion's scale, soft cap and mask,
    the chunk's max, exp(x - m_j) and their sum in key order; then lane by
    lane o_j over the keys in order (value columns as vector lanes) and the
    expansion's merge. Chunks all of whose keys are masked for a run, and
    o_j of a lane whose chunk is all masked, are skipped (their merge is an
    exact no-op). When the result's only use is a `linalg.transpose` by
    [0, 2, 1, 3], y is stored in that layout and replaces the transpose.
    See lockstep/CPU/PagedAttentionKernel.h for how each value is the same
    ops on the same operands, in the same order, as in the expansion with
    key chunks of `chunk`.

    The ops the GPU kernel refuses are left to the expansion (not f32, a
    head size over `max-chunk`, keys of one static chunk, a planted
    violation, ...). The pipeline leaves this pass out under the policies
    that make attention's chunks depend on the batch and the planted ones.
  }];
  let options = [
    Option<"chunk", "chunk", "int64_t", /*default=*/"64",
           "Key chunk width (canonical-reductions' dynamic-chunk)">,
    Option<"maxChunk", "max-chunk", "int64_t", /*default=*/"256",
           "Longest static reduction folded whole (canonical-reductions' max-chunk)">,
    Option<"lanes", "lanes", "int64_t", /*default=*/"8",
           "Tokens computed together (the f32 lanes of a vector register)">,
  ];
  let statistics = [
    Statistic<"numKernels", "kernels", "paged attentions made one parallel loop">,
    Statistic<"numLeft", "left", "paged attentions left to the expansion">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect", "::mlir::math::MathDialect",
                           "::mlir::linalg::LinalgDialect", "::mlir::tensor::TensorDialect",
                           "::mlir::vector::VectorDialect",
                           "::mlir::bufferization::BufferizationDialect"];
}

def FusePoolWrites : Pass<"lockstep-fuse-pool-writes", "mlir::func::FuncOp"> {
  let summary = "Write the ragged step's new key and value rows into the pools from the loop that computes them";
  let description = [{
    Runs on the bufferized step for `--target=cuda`, after
    convert-linalg-to-parallel-loops and lockstep-promote-accumulators and
    before lockstep-map-to-gpu. The ragged step writes each token's new
    key (or value) row into its slot of the paged pool with an `scf.for`
    marked `lockstep.disjoint_iterations`, over the tokens: the slot
    computed from the token's request, position and block table (reads
    only), then an `scf.parallel` copying `rows[0, .., t, ..]` (a subview
    of the rows' buffer at the token in one dim) to the slot. The rows come
    from the parallel loop before it that computes them (RoPE of k, v's
    transpose), each element stored once by one thread.

    That loop (one `memref.store` of the rows' buffer, directly in its
    body, at its induction variables, from 0 by 1, every dim but the
    token's with the buffer's static size as its bound) is moved down to
    the copy's place and, after its store, also computes the slot of its
    token `t` and stores the same value at the element's place in the
    pool, if `t` is below the copy loop's bound. The copy loop goes. The
    move is made only when no op between the two writes what the producer
    reads or touches what it writes, and the slot's reads touch nothing it
    writes; the step's arguments count as distinct buffers (the runtime
    binds each to memory of its own). Every element of the pool gets the
    same f32 as before, from the same register: no bit changes, and the
    step loses a kernel per pool per layer (a decode step of a Llama of 18
    layers, 36 launches).

    Example: `scf.parallel (%a, %h, %t, %d) { ...; store %v, %k[%a, %h, %t,
    %d] }` then `scf.for %t { %slot = ...; %row = subview %k[0, 0, %t, 0]
    [1, 8, 1, 64]; %dst = subview %pool[%slot...]; scf.parallel (%i, %j)
    { store (load %row[%i, %j]), %dst[%i, %j] } }` becomes the first loop
    with, after its store, `scf.if %t < T { %slot = ...; %dst = subview
    %pool[...]; store %v, %dst[%h, %d] }`.
  }];
  let statistics = [
    Statistic<"numFused", "fused", "pool writes done by the loop computing the rows">
  ];
  let dependentDialects = ["::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"];
}

def FuseSiblings : Pass<"lockstep-fuse-siblings", "mlir::func::FuncOp"> {
  let summary = "Launch consecutive independent parallel loops as one kernel over all their points";
  let description = [{
    Runs on the bufferized step for `--target=cuda`, after
    lockstep-warp-reductions (whose loops are launches by then) and right
    before lockstep-map-to-gpu, which would launch each remaining
    host-level `scf.parallel` on its own, a thread a point. After a
    decode step's q/k/v projection come three such loops that do not
    depend on each other (RoPE of q, RoPE of k with its pool write, v's
    transpose with its pool write), each a few microseconds however little
    it does.

    Consecutive host-level parallel loops (with ops between them that touch
    no memory but allocate) whose only memory accesses are `memref.load`
    and `memref.store` form a group while none of them writes a buffer that
    another reads or writes (by the roots of their views; the step's
    arguments count as distinct buffers, as in lockstep-fuse-pool-writes).
    A group of two or more becomes one `gpu.launch` at the last loop's
    place over N1 + N2 + ... points (256 threads a block, as
    lockstep-map-to-gpu): thread `id` runs point `id - (N1 + ... + Ni-1)`
    of loop i when it falls in its range. The loops never read each
    other's results, so running them side by side reads what each read
    before, and each point runs the same ops in the same order: no bit
    changes, and the three loops after a q/k/v projection are one kernel.

    Example: `scf.parallel (%i) = (0) to (%n) { store f(x[%i]), y[%i] }`
    then `scf.parallel (%j) = (0) to (64) { store g(u[%j]), v[%j] }`
    becomes `gpu.launch blocks(ceil((%n + 64) / 256)) threads(...)` with
    `if id < %n { y[id] = f(x[id]) }` and `if %n <= id < %n + 64 { v[id -
    %n] = g(u[id - %n]) }`.
  }];
  let statistics = [
    Statistic<"numKernels", "kernels", "kernels over several loops' points">,
    Statistic<"numFused", "fused", "parallel loops run in them">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def MapToGPU : Pass<"lockstep-map-to-gpu", "mlir::func::FuncOp"> {
  let summary = "Put every part of a bufferized step that touches data in a gpu.launch";
  let description = [{
    Runs on the bufferized step after convert-linalg-to-parallel-loops, for
    `--target=cuda`. Each top-level `scf.parallel` becomes a `gpu.launch`
    over its iteration space flattened to one dim (256 threads a block,
    ceil(N / 256) blocks, one point a thread, guarded by `id < N`); the
    loop body, its reduction loops included, runs in that thread in its own
    order, so the mapping never changes a fold. A top-level `scf.for`
    marked `lockstep.disjoint_iterations` (the ragged step's loop that writes
    each new row into its own pool slot) is launched over its iterations,
    merged with the parallel loop its body ends in (the row's copy) when the
    body before it only reads and that loop's bounds come from outside: a
    thread an element. Any other top-level op that reads or writes data
    becomes a launch of one thread: the host never reads device memory.
    (`gpu.launch` ops already there, from lockstep-tile-contractions, are
    kept.) Shape buffers (used only by host stores, loads and
    `memref.reshape`) become `memref.alloca`, host memory; every other
    allocation is device memory (see lockstep-device-alloc). Constants read
    in a launch (`memref.get_global`) are read inside it, so that kernel
    outlining copies them into the GPU module.

    Example: `scf.parallel (%i, %j) = (0, 0) to (%m, 8)` becomes
    `gpu.launch blocks(ceil(%m * 8 / 256)) threads(min(%m * 8, 256))` whose
    thread computes `id = bid * 256 + tid`, and if `id < %m * 8`,
    `%i = id / 8`, `%j = id % 8` and the body.
  }];
  let statistics = [
    Statistic<"numKernels", "kernels", "parallel loops launched on the GPU">,
    Statistic<"numSerial", "serial", "ops launched as one GPU thread">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect", "::mlir::memref::MemRefDialect"];
}

def WarpReductions : Pass<"lockstep-warp-reductions", "mlir::func::FuncOp"> {
  let summary = "Give a reduction loop's output a warp: lanes make the values, every lane folds them in order";
  let description = [{
    Runs on the bufferized step for `--target=cuda`, after
    lockstep-promote-accumulators and before lockstep-map-to-gpu, which
    would give each point of a top-level `scf.parallel` a thread that reads
    the values of its reduction loop one after another (a norm's partial
    sums at a decode step: 8 threads reading 256 values each). A parallel
    loop whose body is reads, one `scf.for` of step 1 with iter_args (the
    promoted accumulators) of 32 or more iterations (or a dynamic count),
    then anything, becomes a `gpu.launch` of a warp a point (8 a block of
    256 threads). The loop body splits into the ops that do not depend on
    the accumulators (reads and pure ops: the values) and those that do
    (pure ops: the fold). For each slab of 32 iterations from the loop's
    lower bound, lane l runs the first kind for iteration k0 + l (none past
    the upper bound), and then every lane runs the fold for k0, k0 + 1, ...
    in order, each value the fold reads coming from lane j by a
    `gpu.shuffle idx` (32-bit values only: else the loop is left to
    lockstep-map-to-gpu). Lane 0 runs what follows the loop (the store).
    The fold is the same ops on the same values in the same order, so the
    bits cannot change; only the thread that computes each value does.

    Example: `scf.parallel (%i) { %s = scf.for %k = 0 to 256 iter_args(%a =
    %init) { %x = load[%i, %k]; %q = mulf %x, %x; %n = addf %a, %q } store
    %s }`: lane l loads `x[i, k0 + l]` and squares it; every lane then adds
    the 32 squares of the slab to its accumulator, k increasing.
  }];
  let statistics = [
    Statistic<"numWarpReductions", "warp-reductions", "parallel loops launched a warp a point">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def GPUExactMath : Pass<"lockstep-gpu-exact-math", "mlir::gpu::GPUModuleOp"> {
  let summary = "Give a GPU module's math ops their exact PTX instructions, never libdevice";
  let description = [{
    Runs on each gpu.module before convert-gpu-to-nvvm, which would turn
    math ops (and the intrinsics of convert-math-to-llvm) into libdevice
    calls: `__nv_sqrtf` is `sqrt.approx.f32` (../shared/GPU.md). The math
    ops left after lockstep-expand-math (fma, sqrt, absf, floor, ceil,
    trunc, roundeven, round, copysign) become `llvm.call_intrinsic` of the
    LLVM intrinsic that NVPTX selects as the exact instruction (`fma.rn`,
    `sqrt.rn`, `cvt.rmi`, ...). Any other math op, and any arith op with
    fast-math flags, is an error at the op.

    Example: `math.sqrt %x : f32` becomes
    `llvm.call_intrinsic "llvm.sqrt.f32"(%x) : (f32) -> f32`.
  }];
  let statistics = [
    Statistic<"numReplaced", "replaced", "math ops given exact intrinsics">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def AlignWorkgroupMemory : Pass<"lockstep-align-workgroup-memory", "mlir::gpu::GPUModuleOp"> {
  let summary = "Align every kernel's workgroup memory to 16 bytes";
  let description = [{
    Runs on each gpu.module after gpu-kernel-outlining, before
    convert-gpu-to-nvvm. That conversion makes each workgroup attribution of
    a `gpu.func` a `.shared` array aligned only to its element unless the
    attribution carries `llvm.align`, and `gpu.launch` has no place for the
    attribute. The register-blocked kernels of lockstep-tile-contractions
    read and write their workgroup tiles as `vector<4xf32>`, whose
    `ld.shared.v4`/`st.shared.v4` need 16-byte alignment, so every workgroup
    attribution gets `llvm.align = 16` (a larger one is kept). What a thread
    computes does not change.

    Example: `gpu.func @k() workgroup(%t : memref<2x8x132xf32, 3>) kernel`
    becomes `workgroup(%t : memref<2x8x132xf32, 3> {llvm.align = 16 : i64})`,
    and its PTX array `.shared .align 16 .b8 __wg_k_0[8448]`.
  }];
}

def KernelsToSection : Pass<"lockstep-kernels-to-section", "mlir::ModuleOp"> {
  let summary = "Move every kernel module's PTX out of the host code, into the artifact's kernels section";
  let description = [{
    Runs after lockstep-ptx-gate, before gpu-to-llvm embeds the binaries in
    the host code. Each `gpu.binary`'s PTX is recorded in the module's
    `lockstep.kernels` dictionary (binary name to PTX), which the artifact
    emitter writes as the kernels section, and the object the host code
    embeds becomes the NUL-terminated key `lockstep-kernel:NAME`: the host
    object only names the modules it loads, and the runtime's CUDA backend
    finds their PTX in the section.

    Example: `gpu.binary @main_kernel [#gpu.object<#nvvm.target, assembly = "//
    PTX...">]` becomes `gpu.binary @main_kernel [#gpu.object<#nvvm.target,
    assembly = "lockstep-kernel:main_kernel\00">]` and the module gets
    `lockstep.kernels = {main_kernel = "// PTX..."}`.
  }];
  let statistics = [
    Statistic<"numKernels", "kernels", "kernel modules moved to the section">
  ];
}

def LaunchPlan : Pass<"lockstep-launch-plan", "mlir::ModuleOp"> {
  let summary = "Record every kernel launch of the host code: the artifact's launch plan";
  let description = [{
    Runs while the host code still launches kernels with `gpu.launch_func`
    (before gpu-to-llvm). Each launch site, in program order, becomes an
    entry of the module's `lockstep.launch_plan` array: its kernel module and
    function, grid and block sizes (-1 where the host code computes them from
    the step's dims), dynamic shared memory, and the ONNX node it computes
    (from its location). The artifact emitter writes the array as the launch
    plan section (lockstep/Artifact/Kernels.h); the runtime loads every
    module and resolves every kernel of the plan when it loads the artifact,
    and refuses a launch of any other kernel.

    Example: `gpu.launch_func @main_kernel::@main_kernel blocks in (%n, %c1,
    %c1) threads in (%c256, %c1, %c1)` at `loc("mm (MatMul)")` becomes
    `{module = "main_kernel", function = "main_kernel", grid = array<i64:
    -1, 1, 1>, block = array<i64: 256, 1, 1>, smem = 0, node = "mm_(MatMul)"}`.
  }];
  let statistics = [
    Statistic<"numLaunches", "launches", "launch sites recorded in the plan">
  ];
}

def PTXGate : Pass<"lockstep-ptx-gate", "mlir::ModuleOp"> {
  let summary = "Fail compilation where a kernel's PTX could differ from the CPU's bits";
  let description = [{
    Reads the PTX of every `gpu.binary` (compiled with format=isa) and fails
    at the launch of the kernel (its ONNX node), naming the kernel and the
    PTX line, when it finds: an f32/f64 add, sub, mul, fma, div, sqrt or rcp
    without `.rn`; `.approx` or `.ftz`; `call` or `.extern`; `mma` or
    `wgmma`; f16, bf16 or tf32 arithmetic. These are the leaks of
    ../shared/GPU.md, each of which changes bits on an H200: ptxas fuses an
    unrounded multiply and add; approximate and flushing forms are not
    IEEE; libdevice and tensor cores are not the CPU's arithmetic.

    Example: a kernel with `mul.f32 %r3, %r1, %r2;` is refused with
    "PTX gate: kernel 'main_kernel' ..., PTX line 20 `mul.f32 %r3, %r1, %r2`:
    floating-point 'mul' without .rn (ptxas may fuse or approximate it)".
  }];
  let statistics = [
    Statistic<"numChecked", "checked", "PTX objects read">,
    Statistic<"numRefused", "refused", "PTX statements refused">
  ];
}

def RecordPoolWrites : Pass<"lockstep-record-pool-writes", "mlir::ModuleOp"> {
  let summary = "Record which KV pools the bufferized ragged step writes itself";
  let description = [{
    Runs right after one-shot-bufferize (both targets). The ragged step
    writes each token's new key and value rows into their slots of the pools
    (lockstep.paged_attention's expansion); bufferization makes those
    inserts stores into the pool arguments, unless it had to copy a pool
    first. This pass finds, on `main`, each argument marked
    `lockstep.role = "pool.S"` and looks at every op that uses it, through
    views (subview, collapse_shape, expand_shape, reinterpret_cast, cast)
    and loops that carry it (an scf.for's iter_arg and result):
    when one of them writes it (MemoryEffects::Write on that buffer), stream
    S is written in place. The written streams go into the module's
    `lockstep.pool_writes` (an array of stream numbers); the artifact emitter
    writes `serving.ragged.pool_writes = step` when every stream is written
    by every target's code, and the runtime then skips its own copy of the
    new rows into the pools. The only writes of a pool in the step are the
    new rows', so a pool the step writes holds them after the call.

    Example: `func @main(%pool: memref<?x?x2x16xf32> {lockstep.role =
    "pool.0"}) { %s = memref.subview %pool[...]; memref.copy %rows, %s }`
    gives the module `lockstep.pool_writes = array<i64: 0>`.
  }];
  let statistics = [
    Statistic<"numWritten", "written", "pool arguments the step writes in place">
  ];
}

def DeviceAlloc : Pass<"lockstep-device-alloc", "mlir::ModuleOp"> {
  let summary = "Make the host code of a GPU step allocate device memory";
  let description = [{
    Runs on the LLVM dialect host module of a `--target=cuda` step. Every
    buffer the host allocates there is kernel data (lockstep-map-to-gpu made
    shape buffers stack allocations), so `malloc`, `aligned_alloc` and
    `free` become `lockstep_device_malloc`, `lockstep_device_aligned_alloc`
    and `lockstep_device_free` (same signatures), which the runtime's CUDA
    backend serves from device memory.

    Example: `llvm.call @malloc(%n)` becomes
    `llvm.call @lockstep_device_malloc(%n)`.
  }];
}

def CanonicalReductions : Pass<"lockstep-canonical-reductions", "mlir::func::FuncOp"> {
  let summary = "Rewrite every floating-point sum into the canonical chunked form";
  let description = [{
    The numerics contract (DESIGN.md): a reduction of length L is cut into
    chunks of width C counted from index 0. Each chunk is folded left to
    right from +0.0 (`p = fma(a, b, p)` for dot products, `p = p + x` for
    sums), and the chunk partials are folded left to right. C is a
    compile-time constant chosen from the reduction's own length: L itself
    when L is static and at most `max-chunk`; else the largest divisor of L in
    [`min-chunk`, `max-chunk`]; else `max-chunk`; and `dynamic-chunk` when L
    is dynamic. It never depends on a parallel dim.

    A linalg.generic with one floating-point add (or fma) reduction dim r of
    length L becomes:
    - a `partial` generic over the first floor(L/C) whole chunks: r is split
      into a parallel chunk dim j and a reduction dim k of static extent C
      (the operands are sliced and expanded, never copied), so partial j is
      the fold of elements [jC, jC + C) from +0.0. The partials are the
      output's dims with j before the first one that comes after r in the
      loop order; when none does and some input is broadcast along the
      output's last dim (a contraction with r last, as in `X·Wᵀ`), j goes
      before that last dim, so a row of partials stays contiguous; else j
      is last. The layout is free under the contract;
    - a `combine` generic that folds the partials over j, in increasing j,
      into the op's original init;
    - when L mod C can be nonzero, a `tail` generic folding [floor(L/C)·C, L)
      from +0.0, and an elementwise add of it after the combine.
    Each carries `lockstep.chunk_width = C` and `lockstep.chunk_role`; a
    generic whose L is static and at most C is kept whole and marked `whole`.
    Reductions over several dims are rejected (the lowering collapses them).
    Max and min reductions and integer reductions are exact in any order and
    are left as they are.

    linalg.softmax becomes chunk-local statistics: per chunk j the max m_j
    and s_j = Σ exp(x - m_j) (0 when m_j = -inf), merged left to right with
    m = max(m_acc, m_j), l = l_acc·exp(m_acc - m) + s_j·exp(m_j - m), every
    product and sum spelled out; the output is exp(x - m) / l.

    lockstep.attention and lockstep.paged_attention become the same
    statistics over the keys, with o_j[e] = Σ fma(exp(x - m_j), v[e], ·) per
    value column e. Over a dynamic number of keys the merge is two
    `combine` generics, so that its weights are computed once per row and
    chunk, not once per value column: one over (b, hk, g, i, j) folds (m, l)
    and writes each chunk's α_j = exp(m_acc - m) and β_j = exp(m_j - m); one
    over (b, hk, g, i, e, j) folds o = o_acc·α_j + o_j[e]·β_j with them. A
    chunk whose max is -inf leaves (m, l, o) as they are, by a select in
    each. The tail's merge step is split the same way (two elementwise
    generics); the output is o / l.

    `policy=adaptive` is the negative control: when the product of a
    reduction's dynamic parallel extents (its rows) is below `adaptive-rows`,
    it is chunked with width `adaptive-chunk`, else folded whole, chosen at
    run time by an scf.if, the way ordinary stacks pick split-K from the
    batch size. `policy=adaptive-kv` does the same to attention only: its
    key chunks are `adaptive-chunk` wide when the query has few rows, the
    contract's width otherwise, as kernels pick split-KV from the batch.
    `policy=adaptive-softmax` does it to linalg.softmax only (attention
    compiled decomposed). `policy=adaptive-threads` chunks every such
    reduction when the i64 the module's `memref.global
    @lockstep_thread_count` holds (the runtime writes its thread count
    there; the module must declare it) is 2 or more. lockstep-verify-invariance
    rejects all four. `policy=plant-unmasked-padding` and
    `policy=plant-merge-no-skip` plant a violation in the ragged step's
    paged attention (its keys past a token's position unmasked; its merges
    folding chunks of padding like any other) for the verifier's tests,
    which must see it refused.

    Example: a matmul generic over (m, k, n) with k of dynamic length becomes
    a partial over (m, j, k', n) with k' of extent 64 reading
    `tensor.expand_shape` of the sliced operands, a combine over (m, j, n),
    and a tail over (m, k, n) of the last L mod 64 elements.
  }];
  let options = [
    Option<"policy", "policy", "std::string", /*default=*/"\"canonical\"",
           "canonical (the contract), a negative control (adaptive, adaptive-kv, adaptive-softmax, adaptive-threads) or a planted violation (plant-unmasked-padding, plant-merge-no-skip)">,
    Option<"maxChunk", "max-chunk", "int64_t", /*default=*/"256",
           "Largest chunk width for a static length">,
    Option<"minChunk", "min-chunk", "int64_t", /*default=*/"64",
           "Smallest divisor of a static length taken as the chunk width">,
    Option<"dynamicChunk", "dynamic-chunk", "int64_t", /*default=*/"64",
           "Chunk width for a dynamic length">,
    Option<"adaptiveRows", "adaptive-rows", "int64_t", /*default=*/"4",
           "adaptive policy: split when the rows are fewer than this">,
    Option<"adaptiveChunk", "adaptive-chunk", "int64_t", /*default=*/"16",
           "adaptive policy: chunk width of the split">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect", "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def VerifyInvariance : Pass<"lockstep-verify-invariance", "mlir::func::FuncOp"> {
  let summary = "Fail when a reduction's order or split could depend on the batch";
  let description = [{
    Checks, for every linalg op with a reduction dim, that the way it is
    split cannot depend on anything but the reduction's own length:
    - a floating-point reduction whose combiner is not exact (add, fma, mul)
      carries the canonical form's `lockstep.chunk_width` and
      `lockstep.chunk_role`; a `partial` or `whole` reduction runs over a
      static extent equal to its chunk width, a `tail` over fewer elements;
    - the chunk count of a partial comes from the reduced dim of its own
      operand (`tensor.dim` of that axis divided by the width);
    - a `combine` folds, over one reduction dim, only values of each chunk:
      partials of its width, exact reductions over each chunk (attention's
      chunk maxima), or what another combine of its width writes once at
      each chunk without reading its init (attention's merge weights), read
      at the same chunk; never a fold of chunks, a slice or a reshape;
    - no reduction sits under control flow (scf.if, loops) whose condition
      or bounds are computed from tensor sizes: that is how a split chosen
      from the number of rows shows up;
    - no linalg.softmax is left (it reduces in an unspecified order).
    Max and min reductions and integer reductions are exact and pass.
    Errors are located at the op (its ONNX node).

    Example: a generic under `scf.if %few_rows` where `%few_rows` is computed
    from `tensor.dim %x, %c0` of a parallel dim is an error: "the split of
    this reduction depends on dim 0 of an operand, which is not the reduced
    dim".
  }];
}

#endif
