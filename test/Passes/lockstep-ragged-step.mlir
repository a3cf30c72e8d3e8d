// RUN: lockstep-opt %s --split-input-file --verify-diagnostics --lockstep-ragged-step | FileCheck %s

// A KV-cache decoder becomes the ragged step. The attention over
// Concat(past, new) reads the paged pools and the new rows; the presents
// become the new rows; the past inputs go; the batch size that was read from
// a past is read from the token ids. New inputs: positions, seq_starts, block_tables and one pool per
// cache stream, each argument marked with its role. The batch dim is 1 in a
// ragged step, and becomes a static 1 everywhere. The logits here are not
// made by a MatMul, so they stay computed for every token (no logit_rows).
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[IDS:arg[0-9]+]]: tensor<1x?xi64, #onnx.dims<[1, seq]>> {lockstep.role = "token_ids", onnx.name = "input_ids"}
// CHECK-SAME: %[[GPOS:arg[0-9]+]]: tensor<1x?xi64, #onnx.dims<[1, seq]>> {lockstep.role = "positions", onnx.name = "position_ids"}
// CHECK-NOT: past.0.key"}
// CHECK-SAME: %[[POS:arg[0-9]+]]: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions", onnx.name = "positions"}
// CHECK-SAME: %[[ST:arg[0-9]+]]: tensor<?xi64, #onnx.dims<[requests + 1]>> {lockstep.role = "ragged.seq_starts", onnx.name = "seq_starts"}
// CHECK-SAME: %[[BT:arg[0-9]+]]: tensor<?x?xi32, #onnx.dims<[requests, max_blocks]>> {lockstep.role = "ragged.block_tables", onnx.name = "block_tables"}
// CHECK-SAME: %[[KP:arg[0-9]+]]: tensor<?x?x2x8xf32, #onnx.dims<[blocks, block_size, 2, 8]>> {lockstep.role = "pool.0", onnx.name = "past.0.key.pool"}
// CHECK-SAME: %[[VP:arg[0-9]+]]: tensor<?x?x2x8xf32, #onnx.dims<[blocks, block_size, 2, 8]>> {lockstep.role = "pool.1", onnx.name = "past.0.value.pool"})
// CHECK-NOT: logit_rows
// CHECK-SAME: {lockstep.role = "logits", onnx.name = "logits"}
// CHECK-SAME: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {lockstep.role = "new.0", onnx.name = "present.0.key.new"}
// CHECK-SAME: {lockstep.role = "new.1", onnx.name = "present.0.value.new"}
// CHECK-SAME: attributes {lockstep.step = "ragged"}
// CHECK: %[[Q:.*]] = "onnx.Transpose"
// CHECK-NOT: onnx.Concat
// CHECK-NOT: onnx.Less
// CHECK: %[[O:.*]] = lockstep.paged_attention %[[Q]], %[[Q]], %[[Q]], %[[KP]], %[[VP]], %[[POS]], %[[ST]], %[[BT]] scale %{{.*}} {zero_empty_rows}
// CHECK: %[[B:.*]] = "onnx.Shape"(%[[IDS]]) <{end = 1 : i64, start = 0 : i64}> {onnx.sym = #onnx.dims<[1]>}
// CHECK: "onnx.Expand"(%[[O]], %[[B]])
// CHECK: return %{{.*}}, %[[Q]], %[[Q]]
func.func @main(%ids: tensor<?x?xi64, #onnx.dims<[batch, seq]>> {onnx.name = "input_ids"},
                %pos: tensor<?x?xi64, #onnx.dims<[batch, seq]>> {onnx.name = "position_ids"},
                %pk: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.key"},
                %pv: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.value"})
    -> (tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>> {onnx.name = "logits"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.key"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.value"}) {
  %emb = "onnx.Weight"() <{file = "w.bin", length = 512 : i64, name = "embed", offset = 0 : i64}> : () -> tensor<8x2x8xf32>
  %x = "onnx.Gather"(%emb, %ids) <{axis = 0 : i64}> : (tensor<8x2x8xf32>, tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %q = "onnx.Transpose"(%x) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %kc = "onnx.Concat"(%pk, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %vc = "onnx.Concat"(%pv, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  // Causal, as lockstep-prove-mask proved the graph's mask to be.
  %sc = "onnx.Constant"() <{value = dense<0.5> : tensor<f32>}> : () -> tensor<f32>
  %o = lockstep.attention %q, %kc, %vc scale %sc {causal, zero_empty_rows}
      : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<f32>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  // The batch size, read from a past (as exporters do for reshapes).
  %b = "onnx.Shape"(%pv) <{end = 1 : i64, start = 0 : i64}> {onnx.sym = #onnx.dims<[batch]>} : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>) -> tensor<1xi64>
  %ob = "onnx.Expand"(%o, %b) : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>, tensor<1xi64>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %axes = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %t = "onnx.Transpose"(%ob) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %axes2 = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}> : () -> tensor<1xi64>
  %l = "onnx.ReduceSum"(%t, %axes2) <{keepdims = 0 : i64}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>, tensor<1xi64>) -> tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>
  return %l, %kc, %vc : tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
}

// -----

// Positions that the graph computes from the cache length (here Range(past,
// past + seq), unsqueezed to [1, seq]) are read from the step's positions
// where a position table reads them: the Range is replaced, the ops after it
// stay. The logits come from a MatMul with a weight: its hidden states are
// gathered at the rows the runtime asks for (logit_rows) before it.
// CHECK-LABEL: func.func @computed_positions
// CHECK-SAME: %[[POS:arg[0-9]+]]: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"
// CHECK-SAME: %[[ROWS:arg[0-9]+]]: tensor<?xi64, #onnx.dims<[rows]>> {lockstep.role = "ragged.logit_rows", onnx.name = "logit_rows"}
// CHECK-SAME: tensor<1x?x8xf32, #onnx.dims<[1, rows, 8]>> {lockstep.role = "logits"
// CHECK-NOT: onnx.Range
// CHECK: %[[U:.*]] = "onnx.Unsqueeze"(%[[POS]], %{{.*}}) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<1x?xi64, #onnx.dims<[1, seq]>>
// CHECK: "onnx.Gather"(%{{.*}}, %[[U]])
// CHECK: %[[H:.*]] = "onnx.ReduceSum"
// CHECK: %[[G:.*]] = "onnx.Gather"(%[[H]], %[[ROWS]]) <{axis = 1 : i64}> : (tensor<1x?x8xf32, #onnx.dims<[1, seq, 8]>>, tensor<?xi64, #onnx.dims<[rows]>>) -> tensor<1x?x8xf32, #onnx.dims<[1, rows, 8]>>
// CHECK: %[[L:.*]] = "onnx.MatMul"(%[[G]], %{{.*}}) : {{.*}} -> tensor<1x?x8xf32, #onnx.dims<[1, rows, 8]>>
// CHECK: return %[[L]]
func.func @computed_positions(%ids: tensor<?x?xi64, #onnx.dims<[batch, seq]>> {onnx.name = "input_ids"},
                %pk: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.key"},
                %pv: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.value"})
    -> (tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>> {onnx.name = "logits"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.key"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.value"}) {
  %emb = "onnx.Weight"() <{file = "w.bin", length = 512 : i64, name = "embed", offset = 0 : i64}> : () -> tensor<8x2x8xf32>
  %wpe = "onnx.Weight"() <{file = "w.bin", length = 1024 : i64, name = "wpe", offset = 512 : i64}> : () -> tensor<16x2x8xf32>
  %x = "onnx.Gather"(%emb, %ids) <{axis = 0 : i64}> : (tensor<8x2x8xf32>, tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %pl = "onnx.Shape"(%pk) <{end = 3 : i64, start = 2 : i64}> {onnx.sym = #onnx.dims<[past]>} : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>) -> tensor<1xi64>
  %sl = "onnx.Shape"(%ids) <{end = 2 : i64, start = 1 : i64}> {onnx.sym = #onnx.dims<[seq]>} : (tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<1xi64>
  %ax0 = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}> : () -> tensor<1xi64>
  %one = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %start = "onnx.Squeeze"(%pl, %ax0) {onnx.sym = #onnx.dims<[past]>} : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %end1 = "onnx.Add"(%pl, %sl) {onnx.sym = #onnx.dims<[past + seq]>} : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi64>
  %end = "onnx.Squeeze"(%end1, %ax0) {onnx.sym = #onnx.dims<[past + seq]>} : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %r = "onnx.Range"(%start, %end, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>>
  %p2 = "onnx.Unsqueeze"(%r, %ax0) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<1x?xi64, #onnx.dims<[1, seq]>>
  %pe = "onnx.Gather"(%wpe, %p2) <{axis = 0 : i64}> : (tensor<16x2x8xf32>, tensor<1x?xi64, #onnx.dims<[1, seq]>>) -> tensor<1x?x2x8xf32, #onnx.dims<[1, seq, 2, 8]>>
  %h = "onnx.Add"(%x, %pe) : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>, tensor<1x?x2x8xf32, #onnx.dims<[1, seq, 2, 8]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %q = "onnx.Transpose"(%h) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %kc = "onnx.Concat"(%pk, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %vc = "onnx.Concat"(%pv, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %o = lockstep.attention %q, %kc, %vc {causal}
      : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %t = "onnx.Transpose"(%o) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %axes2 = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}> : () -> tensor<1xi64>
  %h2 = "onnx.ReduceSum"(%t, %axes2) <{keepdims = 0 : i64}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>, tensor<1xi64>) -> tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>
  %head = "onnx.Weight"() <{file = "w.bin", length = 256 : i64, name = "lm_head", offset = 2048 : i64}> : () -> tensor<8x8xf32>
  %l = "onnx.MatMul"(%h2, %head) : (tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>, tensor<8x8xf32>) -> tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>
  return %l, %kc, %vc : tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
}

// -----

// OPT's positions, in a decoder given its cache by
// lockstep-introduce-kv-cache: CumSum of ones along the tokens, less one,
// plus the table offset 2, shifted by the past length. The CumSum becomes
// positions + 1 and the shift goes; the offset stays.
// CHECK-LABEL: func.func @cumsum_positions
// CHECK-SAME: %[[POS:arg[0-9]+]]: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"
// CHECK-NOT: onnx.CumSum
// CHECK: %[[P1:.*]] = "onnx.Add"(%[[POS]], %{{.*}}) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>)
// CHECK: %[[U:.*]] = "onnx.Unsqueeze"(%[[P1]]) <{axes = array<i64: 0>}> : {{.*}} -> tensor<1x?xi64, #onnx.dims<[1, seq]>>
// CHECK-NOT: onnx.Expand
// CHECK: %[[F:.*]] = "onnx.Cast"(%[[U]]) <{saturate = 1 : i64, to = 1 : i64}>
// CHECK: %[[S:.*]] = "onnx.Sub"(%[[F]]
// CHECK: %[[I:.*]] = "onnx.Cast"(%[[S]])
// CHECK: %[[O:.*]] = "onnx.Add"(%[[I]], %{{.*}}) : (tensor<1x?xi64, #onnx.dims<[1, seq]>>, tensor<i64>)
// CHECK: "onnx.Gather"(%{{.*}}, %[[O]])
func.func @cumsum_positions(%ids: tensor<?x?xi64, #onnx.dims<[batch, seq]>> {onnx.name = "input_ids"},
                %pk: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.key"},
                %pv: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.value"})
    -> (tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>> {onnx.name = "logits"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.key"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.value"}) {
  %emb = "onnx.Weight"() <{file = "w.bin", length = 512 : i64, name = "embed", offset = 0 : i64}> : () -> tensor<8x2x8xf32>
  %wpe = "onnx.Weight"() <{file = "w.bin", length = 1152 : i64, name = "wpe", offset = 512 : i64}> : () -> tensor<18x2x8xf32>
  %x = "onnx.Gather"(%emb, %ids) <{axis = 0 : i64}> : (tensor<8x2x8xf32>, tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %b = "onnx.Shape"(%ids) <{end = 1 : i64, start = 0 : i64}> {onnx.sym = #onnx.dims<[batch]>} : (tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<1xi64>
  %sl = "onnx.Shape"(%ids) <{end = 2 : i64, start = 1 : i64}> {onnx.sym = #onnx.dims<[seq]>} : (tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<1xi64>
  %bs = "onnx.Concat"(%b, %sl) <{axis = 0 : i64}> {onnx.sym = #onnx.dims<[batch, seq]>} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %onef = "onnx.Constant"() <{value = dense<1.0> : tensor<f32>}> : () -> tensor<f32>
  %ones = "onnx.Expand"(%onef, %bs) : (tensor<f32>, tensor<2xi64>) -> tensor<?x?xf32, #onnx.dims<[batch, seq]>>
  %ax1 = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %cs = "onnx.CumSum"(%ones, %ax1) : (tensor<?x?xf32, #onnx.dims<[batch, seq]>>, tensor<i64>) -> tensor<?x?xf32, #onnx.dims<[batch, seq]>>
  %m1 = "onnx.Sub"(%cs, %onef) : (tensor<?x?xf32, #onnx.dims<[batch, seq]>>, tensor<f32>) -> tensor<?x?xf32, #onnx.dims<[batch, seq]>>
  %pi = "onnx.Cast"(%m1) <{to = 7 : i64}> : (tensor<?x?xf32, #onnx.dims<[batch, seq]>>) -> tensor<?x?xi64, #onnx.dims<[batch, seq]>>
  %two = "onnx.Constant"() <{value = dense<2> : tensor<i64>}> : () -> tensor<i64>
  %p2 = "onnx.Add"(%pi, %two) : (tensor<?x?xi64, #onnx.dims<[batch, seq]>>, tensor<i64>) -> tensor<?x?xi64, #onnx.dims<[batch, seq]>>
  %pl = "onnx.Shape"(%pk) <{end = 3 : i64, start = 2 : i64}> {onnx.sym = #onnx.dims<[past]>} : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>) -> tensor<1xi64>
  %shift = "onnx.Add"(%p2, %pl) : (tensor<?x?xi64, #onnx.dims<[batch, seq]>>, tensor<1xi64>) -> tensor<?x?xi64, #onnx.dims<[batch, seq]>>
  %pe = "onnx.Gather"(%wpe, %shift) <{axis = 0 : i64}> : (tensor<18x2x8xf32>, tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %h = "onnx.Add"(%x, %pe) : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>, tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %q = "onnx.Transpose"(%h) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %kc = "onnx.Concat"(%pk, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %vc = "onnx.Concat"(%pv, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %o = lockstep.attention %q, %kc, %vc {causal}
      : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %t = "onnx.Transpose"(%o) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %axes2 = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}> : () -> tensor<1xi64>
  %l = "onnx.ReduceSum"(%t, %axes2) <{keepdims = 0 : i64}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>, tensor<1xi64>) -> tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>
  return %l, %kc, %vc : tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
}

// -----

// A node that still reads the cache length once the attention is served
// from the pools has no per-request meaning: an error at that node.
func.func @past_read(%ids: tensor<?x?xi64, #onnx.dims<[batch, seq]>> {onnx.name = "input_ids"},
                %pk: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.key"},
                %pv: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.value"})
    -> (tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>> {onnx.name = "logits"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.key"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.value"}) {
  %emb = "onnx.Weight"() <{file = "w.bin", length = 512 : i64, name = "embed", offset = 0 : i64}> : () -> tensor<8x2x8xf32>
  %x = "onnx.Gather"(%emb, %ids) <{axis = 0 : i64}> : (tensor<8x2x8xf32>, tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %q = "onnx.Transpose"(%x) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %kc = "onnx.Concat"(%pk, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %vc = "onnx.Concat"(%pv, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %o = lockstep.attention %q, %kc, %vc {causal}
      : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  // The past's values summed into the output: not a size, a read.
  %axes = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}> : () -> tensor<1xi64>
  // expected-error @+1 {{the ragged step cannot serve this graph: this node reads input 'past.0.key'}}
  %ps = "onnx.ReduceSum"(%pk, %axes) <{keepdims = 1 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<1xi64>) -> tensor<?x2x1x8xf32, #onnx.dims<[batch, 2, 1, 8]>>
  %o2 = "onnx.Add"(%o, %ps) : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>, tensor<?x2x1x8xf32, #onnx.dims<[batch, 2, 1, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %t = "onnx.Transpose"(%o2) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %axes2 = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}> : () -> tensor<1xi64>
  %l = "onnx.ReduceSum"(%t, %axes2) <{keepdims = 0 : i64}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>, tensor<1xi64>) -> tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>
  return %l, %kc, %vc : tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
}

// -----

// Not a decoder with a KV cache: an error at the function.
// expected-error @+1 {{the ragged step needs a decoder with a KV cache: no integer input indexes an embedding table (token ids)}}
func.func @not_a_decoder(%x: tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>> {
  return %x : tensor<?x8xf32, #onnx.dims<[n, 8]>>
}

// -----

// A mask that lockstep-prove-mask could not prove causal (here it kept the
// graph's mask and said why) is never served as causal: the ragged step
// refuses the attention at its node and quotes the reason.
func.func @unproven_mask(%ids: tensor<?x?xi64, #onnx.dims<[batch, seq]>> {onnx.name = "input_ids"},
                %pk: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.key"},
                %pv: tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>> {onnx.name = "past.0.value"})
    -> (tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>> {onnx.name = "logits"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.key"},
        tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>> {onnx.name = "present.0.value"}) {
  %emb = "onnx.Weight"() <{file = "w.bin", length = 512 : i64, name = "embed", offset = 0 : i64}> : () -> tensor<8x2x8xf32>
  %x = "onnx.Gather"(%emb, %ids) <{axis = 0 : i64}> : (tensor<8x2x8xf32>, tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %q = "onnx.Transpose"(%x) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %kc = "onnx.Concat"(%pk, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %vc = "onnx.Concat"(%pv, %q) <{axis = 2 : i64}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
  %m = "onnx.Constant"() <{value = dense<-2.0> : tensor<1x1xf32>}> : () -> tensor<1x1xf32>
  // expected-error @+1 {{the ragged step serves attention whose mask is proven causal or a sliding window; this one's is not (its additive mask holds -2.000000, a bias and not a mask (past 0, seq 2))}}
  %o = lockstep.attention %q, %kc, %vc mask %m {lockstep.mask_unproven = "its additive mask holds -2.000000, a bias and not a mask (past 0, seq 2)"}
      : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<1x1xf32>) -> tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>
  %t = "onnx.Transpose"(%o) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, seq, 8]>>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %axes2 = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}> : () -> tensor<1xi64>
  %l = "onnx.ReduceSum"(%t, %axes2) <{keepdims = 0 : i64}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>, tensor<1xi64>) -> tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>
  return %l, %kc, %vc : tensor<?x?x8xf32, #onnx.dims<[batch, seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>, tensor<?x2x?x8xf32, #onnx.dims<[batch, 2, past + seq, 8]>>
}
