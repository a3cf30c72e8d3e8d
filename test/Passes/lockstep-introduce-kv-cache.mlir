// RUN: lockstep-opt %s --split-input-file --lockstep-prove-mask --lockstep-introduce-kv-cache 2>/dev/null | FileCheck %s
// RUN: lockstep-opt %s --split-input-file --lockstep-prove-mask --lockstep-introduce-kv-cache --verify-diagnostics > /dev/null

// A whole-sequence decoder: the attention gets past inputs for its keys and
// values (the new `past` length in place of `seq`), reads their
// concatenation with the new ones, returns it as present outputs, and stays
// causal: lockstep-prove-mask proved the graph's mask (keys up to the query,
// and the attention-mask input, which the runtime feeds ones) causal. The
// positions built from Range(0, seq) move by past where a position table and
// the rotary angles read them. The mask and the attention-mask input that fed
// it are erased.
// CHECK-LABEL: func.func @main
// CHECK-SAME: (%[[IDS:arg[0-9]+]]: tensor<1x?xi64, #onnx.dims<[1, seq]>> {onnx.name = "input_ids"}
// CHECK-NOT: attention_mask
// CHECK-SAME: %[[PK:arg[0-9]+]]: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past, 8]>> {onnx.name = "past.0.key"}
// CHECK-SAME: %[[PV:arg[0-9]+]]: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past, 8]>> {onnx.name = "past.0.value"})
// CHECK-SAME: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>> {onnx.name = "present.0.key"}
// CHECK-SAME: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>> {onnx.name = "present.0.value"}
// CHECK: %[[PAST:.*]] = "onnx.Shape"(%[[PK]]) <{end = 3 : i64, start = 2 : i64}> {onnx.sym = #onnx.dims<[past]>}
// CHECK: %[[POS:.*]] = "onnx.Range"
// CHECK: %[[P2:.*]] = "onnx.Unsqueeze"(%[[POS]]
// CHECK: %[[SHIFT:.*]] = "onnx.Add"(%[[P2]], %[[PAST]])
// CHECK: "onnx.Gather"(%{{.*}}, %[[SHIFT]])
// CHECK: %[[SHIFT2:.*]] = "onnx.Add"(%[[P2]], %[[PAST]])
// CHECK: "onnx.Cast"(%[[SHIFT2]])
// CHECK: "onnx.Cos"
// CHECK: %[[K:.*]] = "onnx.Concat"(%[[PK]], %{{.*}}) <{axis = 2 : i64}> : {{.*}} -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, past + seq, 8]>>
// CHECK: %[[V:.*]] = "onnx.Concat"(%[[PV]], %{{.*}}) <{axis = 2 : i64}>
// CHECK: lockstep.attention %{{.*}}, %[[K]], %[[V]] {causal, zero_empty_rows}
// CHECK-NOT: onnx.LessOrEqual
// CHECK: return %{{.*}}, %[[K]], %[[V]]
func.func @main(%ids: tensor<1x?xi64, #onnx.dims<[1, seq]>> {onnx.name = "input_ids"},
                %am: tensor<1x?xi64, #onnx.dims<[1, seq]>> {onnx.name = "attention_mask"},
                %h: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>)
    -> (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {onnx.name = "logits"}) {
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %one = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  %ax0 = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}> : () -> tensor<1xi64>
  %table = "onnx.Constant"() <{value = dense<1.0> : tensor<16x8xf32>}> : () -> tensor<16x8xf32>
  %freq = "onnx.Constant"() <{value = dense<0.5> : tensor<f32>}> : () -> tensor<f32>
  %s1 = "onnx.Shape"(%ids) <{end = 2 : i64, start = 1 : i64}> {onnx.sym = #onnx.dims<[seq]>} : (tensor<1x?xi64, #onnx.dims<[1, seq]>>) -> tensor<1xi64>
  %s = "onnx.Squeeze"(%s1, %ax0) {onnx.sym = #onnx.dims<[seq]>} : (tensor<1xi64>, tensor<1xi64>) -> tensor<i64>
  %pos = "onnx.Range"(%zero, %s, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>>
  %p2 = "onnx.Unsqueeze"(%pos, %ax0) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<1x?xi64, #onnx.dims<[1, seq]>>
  %pe = "onnx.Gather"(%table, %p2) <{axis = 0 : i64}> : (tensor<16x8xf32>, tensor<1x?xi64, #onnx.dims<[1, seq]>>) -> tensor<1x?x8xf32, #onnx.dims<[1, seq, 8]>>
  %pf = "onnx.Cast"(%p2) <{to = 1 : i64}> : (tensor<1x?xi64, #onnx.dims<[1, seq]>>) -> tensor<1x?xf32, #onnx.dims<[1, seq]>>
  %ang = "onnx.Mul"(%pf, %freq) : (tensor<1x?xf32, #onnx.dims<[1, seq]>>, tensor<f32>) -> tensor<1x?xf32, #onnx.dims<[1, seq]>>
  %cos = "onnx.Cos"(%ang) : (tensor<1x?xf32, #onnx.dims<[1, seq]>>) -> tensor<1x?xf32, #onnx.dims<[1, seq]>>
  %c3 = "onnx.Unsqueeze"(%cos, %ax0) : (tensor<1x?xf32, #onnx.dims<[1, seq]>>, tensor<1xi64>) -> tensor<1x1x?xf32, #onnx.dims<[1, 1, seq]>>
  %pe4 = "onnx.Unsqueeze"(%pe, %ax0) : (tensor<1x?x8xf32, #onnx.dims<[1, seq, 8]>>, tensor<1xi64>) -> tensor<1x1x?x8xf32, #onnx.dims<[1, 1, seq, 8]>>
  %hq = "onnx.Add"(%h, %pe4) : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x1x?x8xf32, #onnx.dims<[1, 1, seq, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  %ax1 = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %qpos = "onnx.Unsqueeze"(%pos, %ax1) : (tensor<?xi64, #onnx.dims<[seq]>>, tensor<1xi64>) -> tensor<?x1xi64, #onnx.dims<[seq, 1]>>
  %tri = "onnx.LessOrEqual"(%p2, %qpos) : (tensor<1x?xi64, #onnx.dims<[1, seq]>>, tensor<?x1xi64, #onnx.dims<[seq, 1]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %amb = "onnx.Cast"(%am) <{to = 9 : i64}> : (tensor<1x?xi64, #onnx.dims<[1, seq]>>) -> tensor<1x?xi1, #onnx.dims<[1, seq]>>
  %nm = "onnx.And"(%tri, %amb) : (tensor<?x?xi1, #onnx.dims<[seq, seq]>>, tensor<1x?xi1, #onnx.dims<[1, seq]>>) -> tensor<?x?xi1, #onnx.dims<[seq, seq]>>
  %fill = "onnx.Constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32>
  %o = lockstep.attention %hq, %h, %h mask %nm fill %fill {zero_empty_rows}
      : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<?x?xi1, #onnx.dims<[seq, seq]>>, tensor<f32>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  %u = "onnx.Unsqueeze"(%c3, %ax0) : (tensor<1x1x?xf32, #onnx.dims<[1, 1, seq]>>, tensor<1xi64>) -> tensor<1x1x1x?xf32, #onnx.dims<[1, 1, 1, seq]>>
  %r = "onnx.Transpose"(%u) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<1x1x1x?xf32, #onnx.dims<[1, 1, 1, seq]>>) -> tensor<1x1x?x1xf32, #onnx.dims<[1, 1, seq, 1]>>
  %y = "onnx.Mul"(%o, %r) : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x1x?x1xf32, #onnx.dims<[1, 1, seq, 1]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %y : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}

// -----

// A softmax that was not recognized as attention may be one: the cache is
// not introduced, with a warning, and nothing changes.
// CHECK-LABEL: func.func @unrecognized
// CHECK-NOT: past.
// CHECK: lockstep.attention %arg0, %arg0, %arg0 {lockstep.mask_unproven = "the graph masks nothing: every query sees every key"}
func.func @unrecognized(%x: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>)
    -> (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) {
  %o = lockstep.attention %x, %x, %x : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  // expected-warning @+1 {{a softmax that is not a recognized attention: the KV cache is not introduced}}
  %p = "onnx.Softmax"(%x) <{axis = -1 : i64}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o, %p : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}

// -----

// A mask that is not causal (every query sees every key) is not proven, so
// no cache is introduced: the graph stays as it is, with a warning at the
// attention that says why.
// CHECK-LABEL: func.func @not_causal
// CHECK-NOT: past.
// CHECK: lockstep.attention %arg0, %arg0, %arg0 mask
func.func @not_causal(%x: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>> {
  %all = "onnx.Constant"() <{value = dense<true> : tensor<1xi1>}> : () -> tensor<1xi1>
  %fill = "onnx.Constant"() <{value = dense<-3.40282347E+38> : tensor<f32>}> : () -> tensor<f32>
  // expected-warning @+1 {{attention whose mask is not proven causal or a sliding window (its query at position 0 sees the later key 1 (past 0, seq 2)): the KV cache is not introduced}}
  %o = lockstep.attention %x, %x, %x mask %all fill %fill : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1xi1>, tensor<f32>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>
}
