// RUN: lockstep-opt %s --split-input-file --verify-diagnostics --lockstep-verify-rows | FileCheck %s

// Row-by-row work passes: an embedding lookup, a projection, a
// normalization over each token's features, a reshape that splits each
// token's features into heads, a transpose, a softmax over heads, and sizes
// that count tokens used only as a shape.
// CHECK-LABEL: func.func @rows_kept
func.func @rows_kept(%ids: tensor<?x?xi64, #onnx.dims<[batch, seq]>> {lockstep.role = "token_ids"},
                     %pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"})
    -> tensor<?x2x?xf32, #onnx.dims<[batch, 2, seq]>> attributes {lockstep.step = "ragged"} {
  %emb = "onnx.Weight"() <{file = "w.bin", length = 2048 : i64, name = "embed", offset = 0 : i64}> : () -> tensor<32x16xf32>
  %w = "onnx.Weight"() <{file = "w.bin", length = 1024 : i64, name = "w", offset = 2048 : i64}> : () -> tensor<16x16xf32>
  %x = "onnx.Gather"(%emb, %ids) <{axis = 0 : i64}> : (tensor<32x16xf32>, tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<?x?x16xf32, #onnx.dims<[batch, seq, 16]>>
  %h = "onnx.MatMul"(%x, %w) : (tensor<?x?x16xf32, #onnx.dims<[batch, seq, 16]>>, tensor<16x16xf32>) -> tensor<?x?x16xf32, #onnx.dims<[batch, seq, 16]>>
  %g = "onnx.Constant"() <{value = dense<1.0> : tensor<16xf32>}> : () -> tensor<16xf32>
  %n = "onnx.LayerNormalization"(%h, %g) <{axis = -1 : i64}> : (tensor<?x?x16xf32, #onnx.dims<[batch, seq, 16]>>, tensor<16xf32>) -> tensor<?x?x16xf32, #onnx.dims<[batch, seq, 16]>>
  %b = "onnx.Shape"(%ids) <{end = 1 : i64, start = 0 : i64}> {onnx.sym = #onnx.dims<[batch]>} : (tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<1xi64>
  %s = "onnx.Shape"(%ids) <{end = 2 : i64, start = 1 : i64}> {onnx.sym = #onnx.dims<[seq]>} : (tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<1xi64>
  %hd = "onnx.Constant"() <{value = dense<[2, 8]> : tensor<2xi64>}> : () -> tensor<2xi64>
  %shape = "onnx.Concat"(%b, %s, %hd) <{axis = 0 : i64}> {onnx.sym = #onnx.dims<[batch, seq, 2, 8]>} : (tensor<1xi64>, tensor<1xi64>, tensor<2xi64>) -> tensor<4xi64>
  %r = "onnx.Reshape"(%n, %shape) : (tensor<?x?x16xf32, #onnx.dims<[batch, seq, 16]>>, tensor<4xi64>) -> tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>
  %t = "onnx.Transpose"(%r) <{perm = array<i64: 0, 2, 3, 1>}> : (tensor<?x?x2x8xf32, #onnx.dims<[batch, seq, 2, 8]>>) -> tensor<?x2x8x?xf32, #onnx.dims<[batch, 2, 8, seq]>>
  %sm = "onnx.Softmax"(%t) <{axis = 1 : i64}> : (tensor<?x2x8x?xf32, #onnx.dims<[batch, 2, 8, seq]>>) -> tensor<?x2x8x?xf32, #onnx.dims<[batch, 2, 8, seq]>>
  %ax = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}> : () -> tensor<1xi64>
  %red = "onnx.ReduceSum"(%sm, %ax) <{keepdims = 0 : i64}> : (tensor<?x2x8x?xf32, #onnx.dims<[batch, 2, 8, seq]>>, tensor<1xi64>) -> tensor<?x2x?xf32, #onnx.dims<[batch, 2, seq]>>
  return %red : tensor<?x2x?xf32, #onnx.dims<[batch, 2, seq]>>
}

// -----

func.func @reduce_tokens(%ids: tensor<?x?xi64, #onnx.dims<[batch, seq]>>,
                         %pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                         %h: tensor<?x?x16xf32, #onnx.dims<[batch, seq, 16]>>)
    -> tensor<?x1x16xf32, #onnx.dims<[batch, 1, 16]>> attributes {lockstep.step = "ragged"} {
  %ax = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  // expected-error @+1 {{mixes the rows of different requests: a reduction along the token axis}}
  %m = "onnx.ReduceMean"(%h, %ax) : (tensor<?x?x16xf32, #onnx.dims<[batch, seq, 16]>>, tensor<1xi64>) -> tensor<?x1x16xf32, #onnx.dims<[batch, 1, 16]>>
  return %m : tensor<?x1x16xf32, #onnx.dims<[batch, 1, 16]>>
}

// -----

// Scores of every token against every token: a result with two token axes.
func.func @pairs(%pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                 %q: tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>,
                 %kt: tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, seq]>>)
    -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, seq, seq]>> attributes {lockstep.step = "ragged"} {
  // expected-error @+1 {{mixes the rows of different requests: its result pairs tokens with tokens}}
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x2x?x8xf32, #onnx.dims<[1, 2, seq, 8]>>, tensor<1x2x8x?xf32, #onnx.dims<[1, 2, 8, seq]>>) -> tensor<1x2x?x?xf32, #onnx.dims<[1, 2, seq, seq]>>
  return %s : tensor<1x2x?x?xf32, #onnx.dims<[1, 2, seq, seq]>>
}

// -----

// A product contracted over tokens (here, values weighted by a per-token
// gate and summed over the step).
func.func @contract_tokens(%pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                           %g: tensor<1x?xf32, #onnx.dims<[1, seq]>>,
                           %v: tensor<?x8xf32, #onnx.dims<[seq, 8]>>)
    -> tensor<1x8xf32> attributes {lockstep.step = "ragged"} {
  // expected-error @+1 {{mixes the rows of different requests: a contraction along the token axis}}
  %s = "onnx.MatMul"(%g, %v) : (tensor<1x?xf32, #onnx.dims<[1, seq]>>, tensor<?x8xf32, #onnx.dims<[seq, 8]>>) -> tensor<1x8xf32>
  return %s : tensor<1x8xf32>
}

// -----

// A reshape that moves elements between tokens.
func.func @regroup(%pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                   %h: tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>, %shape: tensor<3xi64>)
    -> tensor<1x16x?xf32, #onnx.dims<[1, 16, seq]>> attributes {lockstep.step = "ragged"} {
  // expected-error @+1 {{mixes the rows of different requests: it regroups elements across tokens}}
  %r = "onnx.Reshape"(%h, %shape) : (tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>, tensor<3xi64>) -> tensor<1x16x?xf32, #onnx.dims<[1, 16, seq]>>
  return %r : tensor<1x16x?xf32, #onnx.dims<[1, 16, seq]>>
}

// -----

// A token's index within the step depends on the other requests.
func.func @range(%pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                 %n: tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>> attributes {lockstep.step = "ragged"} {
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  %one = "onnx.Constant"() <{value = dense<1> : tensor<i64>}> : () -> tensor<i64>
  // expected-error @+1 {{mixes the rows of different requests: it numbers the tokens of the step}}
  %r = "onnx.Range"(%zero, %n, %one) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64, #onnx.dims<[seq]>>
  return %r : tensor<?xi64, #onnx.dims<[seq]>>
}

// -----

// The number of tokens in the step, used as a value (a mean over the step's
// length, say), depends on the other requests.
func.func @count_as_data(%ids: tensor<?x?xi64, #onnx.dims<[batch, seq]>>,
                         %pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                         %x: tensor<1xf32>) -> tensor<1xf32> attributes {lockstep.step = "ragged"} {
  %s = "onnx.Shape"(%ids) <{end = 2 : i64, start = 1 : i64}> {onnx.sym = #onnx.dims<[seq]>} : (tensor<?x?xi64, #onnx.dims<[batch, seq]>>) -> tensor<1xi64>
  // expected-error @+1 {{mixes the rows of different requests: it computes with the number of tokens in the step}}
  %f = "onnx.Cast"(%s) <{to = 1 : i64}> : (tensor<1xi64>) -> tensor<1xf32>
  %y = "onnx.Div"(%x, %f) : (tensor<1xf32>, tensor<1xf32>) -> tensor<1xf32>
  return %y : tensor<1xf32>
}

// -----

// A slice that keeps the last token of the step (not of each request).
func.func @last_token(%pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                      %h: tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>)
    -> tensor<1x1x16xf32> attributes {lockstep.step = "ragged"} {
  %st = "onnx.Constant"() <{value = dense<-1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %en = "onnx.Constant"() <{value = dense<9223372036854775807> : tensor<1xi64>}> : () -> tensor<1xi64>
  %ax = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  // expected-error @+1 {{mixes the rows of different requests: a slice along the token axis}}
  %s = "onnx.Slice"(%h, %st, %en, %ax) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>}> : (tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<1x1x16xf32>
  return %s : tensor<1x1x16xf32>
}

// -----

// Gathering whole token rows at the rows the runtime asks for (logit_rows)
// keeps each row one token's; gathering them by any other index is a gather
// along the token axis.
// CHECK-LABEL: func.func @logit_rows
func.func @logit_rows(%pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                      %rows: tensor<?xi64, #onnx.dims<[rows]>> {lockstep.role = "ragged.logit_rows"},
                      %h: tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>)
    -> tensor<1x?x16xf32, #onnx.dims<[1, rows, 16]>> attributes {lockstep.step = "ragged"} {
  %g = "onnx.Gather"(%h, %rows) <{axis = 1 : i64}> : (tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>, tensor<?xi64, #onnx.dims<[rows]>>) -> tensor<1x?x16xf32, #onnx.dims<[1, rows, 16]>>
  return %g : tensor<1x?x16xf32, #onnx.dims<[1, rows, 16]>>
}

// -----

func.func @other_rows(%pos: tensor<?xi64, #onnx.dims<[seq]>> {lockstep.role = "ragged.positions"},
                      %rows: tensor<?xi64, #onnx.dims<[rows]>>,
                      %h: tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>)
    -> tensor<1x?x16xf32, #onnx.dims<[1, rows, 16]>> attributes {lockstep.step = "ragged"} {
  // expected-error @+1 {{mixes the rows of different requests: a gather along the token axis}}
  %g = "onnx.Gather"(%h, %rows) <{axis = 1 : i64}> : (tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>, tensor<?xi64, #onnx.dims<[rows]>>) -> tensor<1x?x16xf32, #onnx.dims<[1, rows, 16]>>
  return %g : tensor<1x?x16xf32, #onnx.dims<[1, rows, 16]>>
}

// -----

// A function that is not a ragged step is not checked.
// CHECK-LABEL: func.func @not_ragged
func.func @not_ragged(%h: tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>) -> tensor<1x1x16xf32, #onnx.dims<[1, 1, 16]>> {
  %ax = "onnx.Constant"() <{value = dense<1> : tensor<1xi64>}> : () -> tensor<1xi64>
  %m = "onnx.ReduceMean"(%h, %ax) : (tensor<1x?x16xf32, #onnx.dims<[1, seq, 16]>>, tensor<1xi64>) -> tensor<1x1x16xf32, #onnx.dims<[1, 1, 16]>>
  return %m : tensor<1x1x16xf32, #onnx.dims<[1, 1, 16]>>
}
