// RUN: lockstep-opt %s --split-input-file --lockstep-recognize-attention 2>&1 | FileCheck %s

// The SDPA form that dynamo exports for grouped-query attention: keys and
// values repeat their 2 heads to 4 (Unsqueeze, Expand, Reshape), the scale is
// split between queries and keys, the mask is added, and the probabilities
// pass the NaN guard. Everything between the cache and the output becomes
// one op over the 2 key heads; the queries' scaling stays an onnx op.
// CHECK-LABEL: func @sdpa_gqa
// CHECK: %[[C:.*]] = "onnx.Constant"() <{value = dense<5.000000e-01>
// CHECK: %[[QS:.*]] = "onnx.Mul"(%arg0, %[[C]])
// CHECK: %[[O:.*]] = lockstep.attention %[[QS]], %arg1, %arg2 mask %arg3 key_scale %[[C]] {zero_empty_rows} : (tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>, tensor<?x2x?x16xf32, #onnx.dims<[b, 2, t, 16]>>, tensor<?x2x?x16xf32, #onnx.dims<[b, 2, t, 16]>>, tensor<?x1x?x?xf32, #onnx.dims<[b, 1, s, t]>>, tensor<f32>) -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>
// CHECK-NOT: onnx.Softmax
// CHECK-NOT: onnx.Expand
// CHECK-NOT: onnx.IsNaN
// CHECK: return %[[O]]
func.func @sdpa_gqa(%q: tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>,
                    %k: tensor<?x2x?x16xf32, #onnx.dims<[b, 2, t, 16]>>,
                    %v: tensor<?x2x?x16xf32, #onnx.dims<[b, 2, t, 16]>>,
                    %m: tensor<?x1x?x?xf32, #onnx.dims<[b, 1, s, t]>>,
                    %shape5: tensor<5xi64>, %shape4: tensor<4xi64>)
    -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>> {
  %c = "onnx.Constant"() <{value = dense<5.000000e-01> : tensor<f32>}> : () -> tensor<f32>
  %zero = "onnx.Constant"() <{value = dense<0.000000e+00> : tensor<f32>}> : () -> tensor<f32>
  %ax = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}> : () -> tensor<1xi64>
  %ku = "onnx.Unsqueeze"(%k, %ax) : (tensor<?x2x?x16xf32, #onnx.dims<[b, 2, t, 16]>>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32, #onnx.dims<[b, 2, 1, t, 16]>>
  %ke = "onnx.Expand"(%ku, %shape5) : (tensor<?x2x1x?x16xf32, #onnx.dims<[b, 2, 1, t, 16]>>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32, #onnx.dims<[b, 2, 2, t, 16]>>
  %kr = "onnx.Reshape"(%ke, %shape4) : (tensor<?x2x2x?x16xf32, #onnx.dims<[b, 2, 2, t, 16]>>, tensor<4xi64>) -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, t, 16]>>
  %vu = "onnx.Unsqueeze"(%v, %ax) : (tensor<?x2x?x16xf32, #onnx.dims<[b, 2, t, 16]>>, tensor<1xi64>) -> tensor<?x2x1x?x16xf32, #onnx.dims<[b, 2, 1, t, 16]>>
  %ve = "onnx.Expand"(%vu, %shape5) : (tensor<?x2x1x?x16xf32, #onnx.dims<[b, 2, 1, t, 16]>>, tensor<5xi64>) -> tensor<?x2x2x?x16xf32, #onnx.dims<[b, 2, 2, t, 16]>>
  %vr = "onnx.Reshape"(%ve, %shape4) : (tensor<?x2x2x?x16xf32, #onnx.dims<[b, 2, 2, t, 16]>>, tensor<4xi64>) -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, t, 16]>>
  %kt = "onnx.Transpose"(%kr) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<?x4x?x16xf32, #onnx.dims<[b, 4, t, 16]>>) -> tensor<?x4x16x?xf32, #onnx.dims<[b, 4, 16, t]>>
  %ks = "onnx.Mul"(%kt, %c) : (tensor<?x4x16x?xf32, #onnx.dims<[b, 4, 16, t]>>, tensor<f32>) -> tensor<?x4x16x?xf32, #onnx.dims<[b, 4, 16, t]>>
  %qs = "onnx.Mul"(%q, %c) : (tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>, tensor<f32>) -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>
  %s = "onnx.MatMul"(%qs, %ks) : (tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>, tensor<?x4x16x?xf32, #onnx.dims<[b, 4, 16, t]>>) -> tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>
  %x = "onnx.Add"(%s, %m) : (tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>, tensor<?x1x?x?xf32, #onnx.dims<[b, 1, s, t]>>) -> tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>
  %p = "onnx.Softmax"(%x) <{axis = -1 : i64}> : (tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>) -> tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>
  %n = "onnx.IsNaN"(%p) : (tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>) -> tensor<?x4x?x?xi1, #onnx.dims<[b, 4, s, t]>>
  %g = "onnx.Where"(%n, %zero, %p) : (tensor<?x4x?x?xi1, #onnx.dims<[b, 4, s, t]>>, tensor<f32>, tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>) -> tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>
  %o = "onnx.MatMul"(%g, %vr) : (tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>, tensor<?x4x?x16xf32, #onnx.dims<[b, 4, t, 16]>>) -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>
  return %o : tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>
}

// -----

// The hand-written form: scores divided by a scalar, then a boolean mask
// selects them or a fill. The key transpose is dropped.
// CHECK-LABEL: func @where_mask_divided
// CHECK: lockstep.attention %arg0, %arg1, %arg2 mask %arg3 fill %arg4 scale %arg5 {scale_divides}
// CHECK-NOT: onnx.Transpose
// CHECK-NOT: onnx.Softmax
func.func @where_mask_divided(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>,
                              %k: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>,
                              %v: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>,
                              %m: tensor<1x1x?x?xi1, #onnx.dims<[1, 1, s, t]>>,
                              %fill: tensor<f32>, %d: tensor<f32>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>> {
  %kt = "onnx.Transpose"(%k) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>) -> tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>, tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %sd = "onnx.Div"(%s, %d) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<f32>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %x = "onnx.Where"(%m, %sd, %fill) : (tensor<1x1x?x?xi1, #onnx.dims<[1, 1, s, t]>>, tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<f32>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %p = "onnx.Softmax"(%x) <{axis = 3 : i64}> : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %o = "onnx.MatMul"(%p, %v) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>
}

// -----

// Multi-query attention where the MatMuls broadcast one key head, with
// dynamo's Reshape/Transpose/Reshape for the key transpose and no mask.
// CHECK-LABEL: func @mqa_dynamo_transpose
// CHECK: lockstep.attention %arg0, %arg1, %arg2 : (tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>, tensor<?x1x?x8xf32, #onnx.dims<[b, 1, t, 8]>>, tensor<?x1x?x8xf32, #onnx.dims<[b, 1, t, 8]>>)
// CHECK-NOT: onnx.Reshape
func.func @mqa_dynamo_transpose(%q: tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>,
                                %k: tensor<?x1x?x8xf32, #onnx.dims<[b, 1, t, 8]>>,
                                %v: tensor<?x1x?x8xf32, #onnx.dims<[b, 1, t, 8]>>,
                                %s3: tensor<3xi64>, %s4: tensor<4xi64>)
    -> tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>> {
  %r = "onnx.Reshape"(%k, %s3) : (tensor<?x1x?x8xf32, #onnx.dims<[b, 1, t, 8]>>, tensor<3xi64>) -> tensor<?x?x8xf32, #onnx.dims<[b, t, 8]>>
  %t = "onnx.Transpose"(%r) <{perm = array<i64: 0, 2, 1>}> : (tensor<?x?x8xf32, #onnx.dims<[b, t, 8]>>) -> tensor<?x8x?xf32, #onnx.dims<[b, 8, t]>>
  %kt = "onnx.Reshape"(%t, %s4) : (tensor<?x8x?xf32, #onnx.dims<[b, 8, t]>>, tensor<4xi64>) -> tensor<?x1x8x?xf32, #onnx.dims<[b, 1, 8, t]>>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>, tensor<?x1x8x?xf32, #onnx.dims<[b, 1, 8, t]>>) -> tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>
  %p = "onnx.Softmax"(%s) <{axis = -1 : i64}> : (tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>) -> tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>
  %o = "onnx.MatMul"(%p, %v) : (tensor<?x4x?x?xf32, #onnx.dims<[b, 4, s, t]>>, tensor<?x1x?x8xf32, #onnx.dims<[b, 1, t, 8]>>) -> tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>
  return %o : tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>
}

// -----

// Keys given already transposed with no visible transpose: a Transpose back
// to [B, H, Sk, D] is inserted.
// CHECK-LABEL: func @keys_given_transposed
// CHECK: %[[K:.*]] = "onnx.Transpose"(%arg1) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>
// CHECK: lockstep.attention %arg0, %[[K]], %arg2
func.func @keys_given_transposed(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>,
                                 %kt: tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>,
                                 %v: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>> {
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>, tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %p = "onnx.Softmax"(%s) <{axis = -1 : i64}> : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %o = "onnx.MatMul"(%p, %v) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>
}

// -----

// Not attention, left alone: the probabilities are also returned, and a
// mask added before the scale is not the form the op defines. Heads of a
// dynamic count match the pattern but not the op (which needs them static):
// that one is left alone silently, with no inserted op left behind.
// CHECK-LABEL: func @probabilities_escape
// CHECK-NOT: lockstep.attention
// CHECK: onnx.Softmax
// CHECK-LABEL: func @mask_before_scale
// CHECK-NOT: lockstep.attention
// CHECK: onnx.Softmax
// CHECK-LABEL: func @dynamic_heads
// CHECK-NOT: onnx.Transpose
// CHECK-NOT: lockstep.attention
// CHECK: onnx.Softmax
func.func @probabilities_escape(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>,
                                %v: tensor<1x2x4x8xf32>)
    -> (tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>) {
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = "onnx.Softmax"(%s) <{axis = -1 : i64}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = "onnx.MatMul"(%p, %v) : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o, %p : tensor<1x2x4x8xf32>, tensor<1x2x4x4xf32>
}
func.func @mask_before_scale(%q: tensor<1x2x4x8xf32>, %kt: tensor<1x2x8x4xf32>,
                             %v: tensor<1x2x4x8xf32>, %m: tensor<1x1x4x4xf32>,
                             %c: tensor<f32>) -> tensor<1x2x4x8xf32> {
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %a = "onnx.Add"(%s, %m) : (tensor<1x2x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x2x4x4xf32>
  %x = "onnx.Mul"(%a, %c) : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %p = "onnx.Softmax"(%x) <{axis = -1 : i64}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = "onnx.MatMul"(%p, %v) : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}
func.func @dynamic_heads(%q: tensor<1x?x4x8xf32, #onnx.dims<[1, h, 4, 8]>>,
                         %kt: tensor<1x?x8x4xf32, #onnx.dims<[1, h, 8, 4]>>,
                         %v: tensor<1x?x4x8xf32, #onnx.dims<[1, h, 4, 8]>>)
    -> tensor<1x?x4x8xf32, #onnx.dims<[1, h, 4, 8]>> {
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x?x4x8xf32, #onnx.dims<[1, h, 4, 8]>>, tensor<1x?x8x4xf32, #onnx.dims<[1, h, 8, 4]>>) -> tensor<1x?x4x4xf32, #onnx.dims<[1, h, 4, 4]>>
  %p = "onnx.Softmax"(%s) <{axis = -1 : i64}> : (tensor<1x?x4x4xf32, #onnx.dims<[1, h, 4, 4]>>) -> tensor<1x?x4x4xf32, #onnx.dims<[1, h, 4, 4]>>
  %o = "onnx.MatMul"(%p, %v) : (tensor<1x?x4x4xf32, #onnx.dims<[1, h, 4, 4]>>, tensor<1x?x4x8xf32, #onnx.dims<[1, h, 4, 8]>>) -> tensor<1x?x4x8xf32, #onnx.dims<[1, h, 4, 8]>>
  return %o : tensor<1x?x4x8xf32, #onnx.dims<[1, h, 4, 8]>>
}

// -----

// A scale on the keys that broadcasts them up (from [8, 4] to rank 4) is
// not taken as key_scale: the scaled keys are transposed back instead (one
// key head, broadcast by the MatMuls).
// CHECK-LABEL: func @key_scale_broadcasts
// CHECK: %[[KS:.*]] = "onnx.Mul"(%arg1, %arg3)
// CHECK: %[[K:.*]] = "onnx.Transpose"(%[[KS]]) <{perm = array<i64: 0, 1, 3, 2>}>
// CHECK: lockstep.attention %arg0, %[[K]], %arg2 :
func.func @key_scale_broadcasts(%q: tensor<1x2x4x8xf32>, %k: tensor<8x4xf32>,
                                %v: tensor<1x1x4x8xf32>, %c: tensor<1x1x1x1xf32>)
    -> tensor<1x2x4x8xf32> {
  %kt = "onnx.Mul"(%k, %c) : (tensor<8x4xf32>, tensor<1x1x1x1xf32>) -> tensor<1x1x8x4xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x4x8xf32>, tensor<1x1x8x4xf32>) -> tensor<1x2x4x4xf32>
  %p = "onnx.Softmax"(%s) <{axis = -1 : i64}> : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = "onnx.MatMul"(%p, %v) : (tensor<1x2x4x4xf32>, tensor<1x1x4x8xf32>) -> tensor<1x2x4x8xf32>
  return %o : tensor<1x2x4x8xf32>
}

// -----

// Gemma 2's eager attention: the scaled scores are softcapped (divided by
// 50, tanh, times 50) before the mask is added, and the softmax runs
// between no-op Casts to its own type. The softcap is kept in the op, and
// the Casts go with the subgraph.
// CHECK-LABEL: func @softcap
// CHECK: lockstep.attention %arg0, %arg1, %arg2 mask %arg3 scale %{{.*}} {softcap = 5.000000e+01 : f64}
// CHECK-NOT: onnx.Tanh
// CHECK-NOT: onnx.Cast
func.func @softcap(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>,
                   %k: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>,
                   %v: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>,
                   %m: tensor<1x1x?x?xf32, #onnx.dims<[1, 1, s, t]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>> {
  %sc = "onnx.Constant"() <{value = dense<2.500000e-01> : tensor<f32>}> : () -> tensor<f32>
  %cap = "onnx.Constant"() <{value = dense<5.000000e+01> : tensor<f32>}> : () -> tensor<f32>
  %cap2 = "onnx.Constant"() <{value = dense<5.000000e+01> : tensor<f32>}> : () -> tensor<f32>
  %kt = "onnx.Transpose"(%k) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>) -> tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>, tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %ss = "onnx.Mul"(%s, %sc) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<f32>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %d = "onnx.Div"(%ss, %cap) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<f32>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %th = "onnx.Tanh"(%d) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %c = "onnx.Mul"(%th, %cap2) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<f32>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %x = "onnx.Add"(%c, %m) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<1x1x?x?xf32, #onnx.dims<[1, 1, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %xc = "onnx.Cast"(%x) <{to = 1 : i64}> : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %p = "onnx.Softmax"(%xc) <{axis = -1 : i64}> : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %pc = "onnx.Cast"(%p) <{to = 1 : i64}> : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %pc2 = "onnx.Cast"(%pc) <{to = 1 : i64}> : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %o = "onnx.MatMul"(%pc2, %v) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>
}

// -----

// A softcap whose two constants differ is not Gemma 2's: not peeled, and
// then the scores side of the mask Add is not recognized.
// CHECK-LABEL: func @softcap_mismatch
// CHECK-NOT: lockstep.attention
// CHECK: onnx.Softmax
func.func @softcap_mismatch(%q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>,
                            %k: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>,
                            %v: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>,
                            %m: tensor<1x1x?x?xf32, #onnx.dims<[1, 1, s, t]>>)
    -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>> {
  %cap = "onnx.Constant"() <{value = dense<5.000000e+01> : tensor<f32>}> : () -> tensor<f32>
  %cap2 = "onnx.Constant"() <{value = dense<3.000000e+01> : tensor<f32>}> : () -> tensor<f32>
  %kt = "onnx.Transpose"(%k) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>) -> tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>, tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %d = "onnx.Div"(%s, %cap) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<f32>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %th = "onnx.Tanh"(%d) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %c = "onnx.Mul"(%th, %cap2) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<f32>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %x = "onnx.Add"(%c, %m) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<1x1x?x?xf32, #onnx.dims<[1, 1, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %p = "onnx.Softmax"(%x) <{axis = -1 : i64}> : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>
  %o = "onnx.MatMul"(%p, %v) : (tensor<1x2x?x?xf32, #onnx.dims<[1, 2, s, t]>>, tensor<1x2x?x8xf32, #onnx.dims<[1, 2, t, 8]>>) -> tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>
  return %o : tensor<1x2x?x8xf32, #onnx.dims<[1, 2, s, 8]>>
}
