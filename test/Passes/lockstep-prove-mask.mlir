// RUN: lockstep-opt %s --split-input-file --lockstep-prove-mask | FileCheck %s

// The causal mask of a KV-cache graph: key positions Range(0, past + seq)
// against query positions Range(past, past + seq). Evaluated over the grid,
// it is causal everywhere: the mask operand and its subgraph go.
// CHECK-LABEL: func.func @causal
// CHECK-NOT: onnx.Range
// CHECK: lockstep.attention %arg0, %arg1, %arg1 {causal}
// CHECK-NOT: window
func.func @causal(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>,
                  %k: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>>,
                  %pk: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past, 8]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %one = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %ax = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}> : () -> tensor<1xi64>
  %ax1 = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %s1 = "onnx.Shape"(%q) <{end = 3 : i64, start = 2 : i64}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) -> tensor<1xi64>
  %p1 = "onnx.Shape"(%pk) <{end = 3 : i64, start = 2 : i64}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past, 8]>>) -> tensor<1xi64>
  %s = "onnx.Squeeze"(%s1, %ax) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %p = "onnx.Squeeze"(%p1, %ax) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %tot = "onnx.Add"(%p, %s) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %keys = "onnx.Range"(%zero, %tot, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[past + seq]>>
  %qs = "onnx.Range"(%p, %tot, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>>
  %qcol = "onnx.Unsqueeze"(%qs, %ax1) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<?x1xi64, #onnx.dims<[seq, 1]>>
  %m = "onnx.LessOrEqual"(%keys, %qcol) : (tensor<?xi64, #onnx.dims<[past + seq]>>, tensor<?x1xi64, #onnx.dims<[seq, 1]>>) -> tensor<?x?xi1, #onnx.dims<[seq, past + seq]>>
  %fill = "onnx.Constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32>
  %o = lockstep.attention %q, %k, %k mask %m fill %fill
      : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>>, tensor<?x?xi1, #onnx.dims<[seq, past + seq]>>, tensor<f32>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}

// -----

// A sliding window as HF writes it (key > query - W, and key <= query),
// turned into an additive 0 / float-min mask by a Where. The window, 5, is
// read off the evaluation, not off the constant.
// CHECK-LABEL: func.func @window
// CHECK-NOT: onnx.Greater
// CHECK: lockstep.attention %arg0, %arg1, %arg1 {causal, window = 5 : i64}
func.func @window(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>,
                  %k: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>>,
                  %pk: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past, 8]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %one = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %w = "onnx.Constant"() <{value = dense<5> : tensor<i64>}> : () -> tensor<i64>
  %ax = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}> : () -> tensor<1xi64>
  %ax1 = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %s1 = "onnx.Shape"(%q) <{end = 3 : i64, start = 2 : i64}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) -> tensor<1xi64>
  %p1 = "onnx.Shape"(%pk) <{end = 3 : i64, start = 2 : i64}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past, 8]>>) -> tensor<1xi64>
  %s = "onnx.Squeeze"(%s1, %ax) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %p = "onnx.Squeeze"(%p1, %ax) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %tot = "onnx.Add"(%p, %s) : (tensor<i64>, tensor<i64>) -> tensor<i64>
  %keys = "onnx.Range"(%zero, %tot, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[past + seq]>>
  %qs = "onnx.Range"(%p, %tot, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>>
  %qcol = "onnx.Unsqueeze"(%qs, %ax1) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<?x1xi64, #onnx.dims<[seq, 1]>>
  %c = "onnx.LessOrEqual"(%keys, %qcol) : (tensor<?xi64, #onnx.dims<[past + seq]>>, tensor<?x1xi64, #onnx.dims<[seq, 1]>>) -> tensor<?x?xi1, #onnx.dims<[seq, past + seq]>>
  %lo = "onnx.Sub"(%qcol, %w) : (tensor<?x1xi64, #onnx.dims<[seq, 1]>>, tensor<i64>) -> tensor<?x1xi64, #onnx.dims<[seq, 1]>>
  %in = "onnx.Greater"(%keys, %lo) : (tensor<?xi64, #onnx.dims<[past + seq]>>, tensor<?x1xi64, #onnx.dims<[seq, 1]>>) -> tensor<?x?xi1, #onnx.dims<[seq, past + seq]>>
  %b = "onnx.And"(%c, %in) : (tensor<?x?xi1, #onnx.dims<[seq, past + seq]>>, tensor<?x?xi1, #onnx.dims<[seq, past + seq]>>) -> tensor<?x?xi1, #onnx.dims<[seq, past + seq]>>
  %z = "onnx.Constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %min = "onnx.Constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32>
  %m = "onnx.Where"(%b, %z, %min) : (tensor<?x?xi1, #onnx.dims<[seq, past + seq]>>, tensor<f32>, tensor<f32>) -> tensor<?x?xf32, #onnx.dims<[seq, past + seq]>>
  %o = lockstep.attention %q, %k, %k mask %m
      : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>>, tensor<?x?xf32, #onnx.dims<[seq, past + seq]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}

// -----

// A causal mask with one position flipped (the query at position 7 does not
// see key 2) is not causal: the mask stays, with the first place it differs.
// CHECK-LABEL: func.func @flipped
// CHECK: lockstep.attention %arg0, %arg1, %arg1 mask %{{.*}} fill %{{.*}} {lockstep.mask_unproven = "its query at position 7 skips key 2 inside its window (past 0, seq 8)"}
func.func @flipped(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>,
                   %k: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %one = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %two = "onnx.Constant"() <{value = dense<2> : tensor<i64>}> : () -> tensor<i64>
  %seven = "onnx.Constant"() <{value = dense<7> : tensor<i64>}> : () -> tensor<i64>
  %ax = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}> : () -> tensor<1xi64>
  %ax1 = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %s1 = "onnx.Shape"(%q) <{end = 3 : i64, start = 2 : i64}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) -> tensor<1xi64>
  %s = "onnx.Squeeze"(%s1, %ax) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %pos = "onnx.Range"(%zero, %s, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>>
  %qcol = "onnx.Unsqueeze"(%pos, %ax1) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<?x1xi64, #onnx.dims<[seq, 1]>>
  %c = "onnx.LessOrEqual"(%pos, %qcol) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<?x1xi64, #onnx.dims<[seq, 1]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %isq = "onnx.Equal"(%qcol, %seven) : (tensor<?x1xi64, #onnx.dims<[seq, 1]>>, tensor<i64>) -> tensor<?x1xi1, #onnx.dims<[seq, 1]>>
  %isk = "onnx.Equal"(%pos, %two) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<i64>) -> tensor<?xi1, #onnx.dims<[seq]>>
  %at = "onnx.And"(%isq, %isk) : (tensor<?x1xi1, #onnx.dims<[seq, 1]>>, tensor<?xi1, #onnx.dims<[seq]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %not = "onnx.Not"(%at) : (tensor<?x?xi1, #onnx.dims<[seq, seq]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %m = "onnx.And"(%c, %not) : (tensor<?x?xi1, #onnx.dims<[seq, seq]>>, tensor<?x?xi1, #onnx.dims<[seq, seq]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %fill = "onnx.Constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32>
  %o = lockstep.attention %q, %k, %k mask %m fill %fill
      : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<?x?xi1, #onnx.dims<[seq, seq]>>, tensor<f32>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}

// -----

// A position bias in the mask (ALiBi: slope · (key - query) added to the
// causal mask) is a bias, not a mask: it is kept as the graph's operand.
// CHECK-LABEL: func.func @alibi
// CHECK: lockstep.attention %arg0, %arg1, %arg1 mask %{{.*}} {lockstep.mask_unproven = "its additive mask holds -0.500000, a bias and not a mask (past 0, seq 2)"}
func.func @alibi(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>,
                 %k: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %one = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %ax = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}> : () -> tensor<1xi64>
  %ax1 = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %s1 = "onnx.Shape"(%q) <{end = 3 : i64, start = 2 : i64}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) -> tensor<1xi64>
  %s = "onnx.Squeeze"(%s1, %ax) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %pos = "onnx.Range"(%zero, %s, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>>
  %qcol = "onnx.Unsqueeze"(%pos, %ax1) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<?x1xi64, #onnx.dims<[seq, 1]>>
  %c = "onnx.LessOrEqual"(%pos, %qcol) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<?x1xi64, #onnx.dims<[seq, 1]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %d = "onnx.Sub"(%pos, %qcol) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<?x1xi64, #onnx.dims<[seq, 1]>>) -> tensor<?x?xi64, #onnx.dims<[seq, seq]>>
  %df = "onnx.Cast"(%d) <{to = 1 : i64}> : (tensor<?x?xi64, #onnx.dims<[seq, seq]>>) -> tensor<?x?xf32, #onnx.dims<[seq, seq]>>
  %slope = "onnx.Constant"() <{value = dense<0.5> : tensor<f32>}> : () -> tensor<f32>
  %bias = "onnx.Mul"(%df, %slope) : (tensor<?x?xf32, #onnx.dims<[seq, seq]>>, tensor<f32>) -> tensor<?x?xf32, #onnx.dims<[seq, seq]>>
  %min = "onnx.Constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32>
  %m = "onnx.Where"(%c, %bias, %min) : (tensor<?x?xi1, #onnx.dims<[seq, seq]>>, tensor<?x?xf32, #onnx.dims<[seq, seq]>>, tensor<f32>) -> tensor<?x?xf32, #onnx.dims<[seq, seq]>>
  %o = lockstep.attention %q, %k, %k mask %m
      : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<?x?xf32, #onnx.dims<[seq, seq]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}

// -----

// A mask computed from the token ids' values (here: a token equal to 0 is
// hidden) cannot be evaluated without guessing the tokens: not proven. The
// token ids feed the embedding too, so they are not an attention mask that
// the runtime would feed ones.
// CHECK-LABEL: func.func @reads_tokens
// CHECK: lockstep.attention %{{.*}} mask %{{.*}} fill %{{.*}} {lockstep.mask_unproven = "its mask cannot be evaluated at past 0, seq 1: reads the values of input #0"}
func.func @reads_tokens(%ids: tensor<1x?xi64, #onnx.dims<[1, seq]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {
  %emb = "onnx.Weight"() <{file = "w.bin", length = 512 : i64, name = "embed", offset = 0 : i64}> : () -> tensor<8x2x8xf32>
  %x = "onnx.Gather"(%emb, %ids) <{axis = 0 : i64}> : (tensor<8x2x8xf32>, tensor<1x?xi64, #onnx.dims<[1, seq]>>) -> tensor<1x?x2x8xf32, #onnx.dims<[1, seq, 2, 8]>>
  %q = "onnx.Transpose"(%x) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x?x2x8xf32, #onnx.dims<[1, seq, 2, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %m = "onnx.Equal"(%ids, %zero) : (tensor<1x?xi64, #onnx.dims<[1, seq]>>, tensor<i64>) -> tensor<1x?xi1, #onnx.dims<[1, seq]>>
  %fill = "onnx.Constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32>
  %o = lockstep.attention %q, %q, %q mask %m fill %fill
      : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x?xi1, #onnx.dims<[1, seq]>>, tensor<f32>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}

// -----

// An attention with no mask at all sees every key: not a causal decoder's.
// CHECK-LABEL: func.func @no_mask
// CHECK: lockstep.attention %arg0, %arg0, %arg0 {lockstep.mask_unproven = "the graph masks nothing: every query sees every key"}
func.func @no_mask(%x: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {
  %o = lockstep.attention %x, %x, %x : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}

// -----

// A mask that reads an input by value (an attention mask, which feeds masks
// only) is proven for what the serving runtime feeds it: all ones. The
// exported graph keeps its mask, computed from whatever it is given; the
// proven kind goes beside it, for the passes that adopt the runtime's
// inputs (the KV cache, the ragged step).
// CHECK-LABEL: func.func @attention_mask_input
// CHECK: lockstep.attention %arg0, %arg1, %arg1 mask %{{.*}} fill %{{.*}} {lockstep.mask_proven_for = "'attention_mask' all ones", lockstep.mask_proven_window = 0 : i64}
func.func @attention_mask_input(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>,
                                %k: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>,
                                %am: tensor<1x?xi64, #onnx.dims<[1, seq]>> {onnx.name = "attention_mask"})
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %one = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %ax = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}> : () -> tensor<1xi64>
  %ax1 = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %s1 = "onnx.Shape"(%q) <{end = 3 : i64, start = 2 : i64}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) -> tensor<1xi64>
  %s = "onnx.Squeeze"(%s1, %ax) : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %pos = "onnx.Range"(%zero, %s, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>>
  %qcol = "onnx.Unsqueeze"(%pos, %ax1) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<?x1xi64, #onnx.dims<[seq, 1]>>
  %c = "onnx.LessOrEqual"(%pos, %qcol) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<?x1xi64, #onnx.dims<[seq, 1]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %amb = "onnx.Cast"(%am) <{to = 9 : i64}> : (tensor<1x?xi64, #onnx.dims<[1, seq]>>) -> tensor<1x?xi1, #onnx.dims<[1, seq]>>
  %m = "onnx.And"(%c, %amb) : (tensor<?x?xi1, #onnx.dims<[seq, seq]>>, tensor<1x?xi1, #onnx.dims<[1, seq]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %fill = "onnx.Constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32>
  %o = lockstep.attention %q, %k, %k mask %m fill %fill
      : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<?x?xi1, #onnx.dims<[seq, seq]>>, tensor<f32>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}
