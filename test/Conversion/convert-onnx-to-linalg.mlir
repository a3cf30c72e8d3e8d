// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(convert-onnx-to-linalg))' --verify-diagnostics | FileCheck %s

// A broadcast Add over a symbolic dim: the dim is read once from the argument,
// the bias is read through a map that drops the broadcast dim, and the types
// lose their #onnx.dims encoding.
// CHECK-LABEL: func.func @add_bias
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[B:.*]]: tensor<64xf32>) -> tensor<?x64xf32>
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %c0
// CHECK: %[[E:.*]] = tensor.empty(%[[N]]) : tensor<?x64xf32>
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[BMAP:.*]], #{{.*}}], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<?x64xf32>, tensor<64xf32>) outs(%[[E]] : tensor<?x64xf32>)
// CHECK: arith.addf
func.func @add_bias(%x: tensor<?x64xf32, #onnx.dims<[n, 64]>>, %b: tensor<64xf32>)
    -> tensor<?x64xf32, #onnx.dims<[n, 64]>> {
  %y = "onnx.Add"(%x, %b) : (tensor<?x64xf32, #onnx.dims<[n, 64]>>, tensor<64xf32>) -> tensor<?x64xf32, #onnx.dims<[n, 64]>>
  return %y : tensor<?x64xf32, #onnx.dims<[n, 64]>>
}

// -----

// MatMul is a generic with the contraction dim as a reduction before the
// column dim (each sum still runs over k in order; columns vectorize),
// accumulating into a zero fill with the contract's explicit fma.
// CHECK-LABEL: func.func @matmul
// CHECK: linalg.fill
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "reduction", "parallel"]
// CHECK: math.fma %in, %in_{{.*}}, %out
// CHECK-NOT: arith.mulf
func.func @matmul(%x: tensor<?x?x16xf32, #onnx.dims<[b, s, 16]>>, %w: tensor<16x8xf32>)
    -> tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>> {
  %y = "onnx.MatMul"(%x, %w) : (tensor<?x?x16xf32, #onnx.dims<[b, s, 16]>>, tensor<16x8xf32>) -> tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>>
  return %y : tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>>
}

// -----

// A MatMul of a Transpose that swaps the two trailing dims (a tied lm_head,
// `x @ wte^T`, as the dynamo exporter writes it) reads the Transpose's input
// through a map with those dims swapped: no transposed copy is made, and the
// Transpose, read by nothing else, is gone. The loops are (row, column, k),
// k last, where B is contiguous. A Transpose with another
// permutation, or with another reader, stays.
// CHECK-DAG: #[[A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @matmul_transposed
// CHECK-NOT: linalg.transpose
// CHECK: linalg.generic {indexing_maps = [#[[A]], #[[B]], #[[C]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0, %arg1 : tensor<?x16xf32>, tensor<8x16xf32>)
// CHECK-NOT: linalg.transpose
// CHECK: return
func.func @matmul_transposed(%x: tensor<?x16xf32, #onnx.dims<[s, 16]>>, %w: tensor<8x16xf32>)
    -> tensor<?x8xf32, #onnx.dims<[s, 8]>> {
  %t = "onnx.Transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = "onnx.MatMul"(%x, %t) : (tensor<?x16xf32, #onnx.dims<[s, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #onnx.dims<[s, 8]>>
  return %y : tensor<?x8xf32, #onnx.dims<[s, 8]>>
}

// -----

// CHECK-LABEL: func.func @matmul_transposed_kept
// CHECK: %[[T:.*]] = linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%arg0, %arg1 : tensor<?x16xf32>, tensor<8x16xf32>)
// CHECK: return {{.*}}%[[T]]
func.func @matmul_transposed_kept(%x: tensor<?x16xf32, #onnx.dims<[s, 16]>>, %w: tensor<8x16xf32>)
    -> (tensor<?x8xf32, #onnx.dims<[s, 8]>>, tensor<16x8xf32>) {
  %t = "onnx.Transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<8x16xf32>) -> tensor<16x8xf32>
  %y = "onnx.MatMul"(%x, %t) : (tensor<?x16xf32, #onnx.dims<[s, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #onnx.dims<[s, 8]>>
  return %y, %t : tensor<?x8xf32, #onnx.dims<[s, 8]>>, tensor<16x8xf32>
}

// -----

// CHECK-LABEL: func.func @matmul_transposed_identity
// CHECK: linalg.transpose
// CHECK: linalg.generic {{.*}} ins(%arg0, %{{.*}} : tensor<?x16xf32>, tensor<16x8xf32>)
func.func @matmul_transposed_identity(%x: tensor<?x16xf32, #onnx.dims<[s, 16]>>, %w: tensor<16x8xf32>)
    -> tensor<?x8xf32, #onnx.dims<[s, 8]>> {
  %t = "onnx.Transpose"(%w) {perm = array<i64: 0, 1>} : (tensor<16x8xf32>) -> tensor<16x8xf32>
  %y = "onnx.MatMul"(%x, %t) : (tensor<?x16xf32, #onnx.dims<[s, 16]>>, tensor<16x8xf32>) -> tensor<?x8xf32, #onnx.dims<[s, 8]>>
  return %y : tensor<?x8xf32, #onnx.dims<[s, 8]>>
}

// -----

// Softmax is linalg.softmax, whose sums lockstep-canonical-reductions
// orders (chunk-local statistics); a negative axis counts from the end.
// CHECK-LABEL: func.func @softmax
// CHECK: %[[E:.*]] = tensor.empty
// CHECK: linalg.softmax dimension(1) ins(%arg0 : tensor<?x8xf32>) outs(%[[E]] : tensor<?x8xf32>)
func.func @softmax(%x: tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>> {
  %y = "onnx.Softmax"(%x) {axis = -1 : i64} : (tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>>
  return %y : tensor<?x8xf32, #onnx.dims<[n, 8]>>
}

// -----

// Reshape sizes its result from the result's dims (4*s), not from the shape
// tensor, whose values shape inference already knows.
// CHECK-LABEL: func.func @reshape
// CHECK: %[[S:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[S4:.*]] = arith.muli %c4{{.*}}, %[[S]]
// CHECK: %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %[[S4]], %{{.*}} : tensor<3xindex>
// CHECK: tensor.reshape %arg0(%[[SHAPE]])
func.func @reshape(%x: tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>) -> tensor<?x?x16xf32, #onnx.dims<[b, 4*s, 16]>> {
  %shape = "onnx.Constant"() {value = dense<[0, -1, 16]> : tensor<3xi64>} : () -> tensor<3xi64>
  %r = "onnx.Reshape"(%x, %shape) {allowzero = 0 : i64} : (tensor<?x?x64xf32, #onnx.dims<[b, s, 64]>>, tensor<3xi64>) -> tensor<?x?x16xf32, #onnx.dims<[b, 4*s, 16]>>
  return %r : tensor<?x?x16xf32, #onnx.dims<[b, 4*s, 16]>>
}

// -----

// A shape computation with known symbolic values becomes those values.
// CHECK-LABEL: func.func @shape_values
// CHECK: %[[P:.*]] = tensor.dim %arg0, %c1
// CHECK: %[[Q:.*]] = tensor.dim %arg1, %c1
// CHECK: %[[T:.*]] = arith.addi %[[P]], %[[Q]]
// CHECK: %[[I:.*]] = arith.index_cast %[[T]] : index to i64
// CHECK: tensor.from_elements %[[I]] : tensor<1xi64>
// CHECK-NOT: onnx.
func.func @shape_values(%a: tensor<1x?xf32, #onnx.dims<[1, p]>>, %b: tensor<1x?xf32, #onnx.dims<[1, q]>>) -> tensor<1xi64> {
  %c = "onnx.Concat"(%a, %b) {axis = 1 : i64} : (tensor<1x?xf32, #onnx.dims<[1, p]>>, tensor<1x?xf32, #onnx.dims<[1, q]>>) -> tensor<1x?xf32, #onnx.dims<[1, p + q]>>
  %s = "onnx.Shape"(%c) {start = 1 : i64, onnx.sym = #onnx.dims<[p + q]>} : (tensor<1x?xf32, #onnx.dims<[1, p + q]>>) -> tensor<1xi64>
  return %s : tensor<1xi64>
}

// -----

// Concat writes each input into its slot of one tensor.
// CHECK-LABEL: func.func @concat
// CHECK: %[[E:.*]] = tensor.empty
// CHECK: %[[A:.*]] = tensor.insert_slice %arg0 into %[[E]][0, 0] [%{{.*}}, 16] [1, 1]
// CHECK: tensor.insert_slice %arg1 into %[[A]][%{{.*}}, 0] [%{{.*}}, 16] [1, 1]
func.func @concat(%a: tensor<?x16xf32, #onnx.dims<[p, 16]>>, %b: tensor<?x16xf32, #onnx.dims<[s, 16]>>) -> tensor<?x16xf32, #onnx.dims<[p + s, 16]>> {
  %c = "onnx.Concat"(%a, %b) {axis = 0 : i64} : (tensor<?x16xf32, #onnx.dims<[p, 16]>>, tensor<?x16xf32, #onnx.dims<[s, 16]>>) -> tensor<?x16xf32, #onnx.dims<[p + s, 16]>>
  return %c : tensor<?x16xf32, #onnx.dims<[p + s, 16]>>
}

// -----

// Gather reads the table by index, wrapping negative indices and clamping
// the index to [0, 99]: a token id out of range reads row 0 or 99, never
// memory outside the table.
// CHECK-LABEL: func.func @gather
// CHECK: linalg.generic
// CHECK: arith.index_cast
// CHECK: arith.select
// CHECK: %[[LAST:.*]] = arith.subi %c100, %c1
// CHECK: %[[LO:.*]] = arith.minsi %{{.*}}, %[[LAST]]
// CHECK: %[[I:.*]] = arith.maxsi %[[LO]], %c0
// CHECK: tensor.extract %arg0[%[[I]], %{{.*}}]
func.func @gather(%t: tensor<100x8xf32>, %ids: tensor<?x?xi64, #onnx.dims<[b, s]>>) -> tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>> {
  %e = "onnx.Gather"(%t, %ids) {axis = 0 : i64} : (tensor<100x8xf32>, tensor<?x?xi64, #onnx.dims<[b, s]>>) -> tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>>
  return %e : tensor<?x?x8xf32, #onnx.dims<[b, s, 8]>>
}

// -----

// Weights become trailing arguments that say where their bytes are.
// CHECK-LABEL: func.func @weights
// CHECK-SAME: %arg1: tensor<512x64xf32> {lockstep.weight = {file = "m.onnx", length = 131072 : i64, name = "w", offset = 64 : i64}}
// CHECK: linalg.generic {{.*}}ins(%arg0, %arg1
func.func @weights(%x: tensor<?x512xf32, #onnx.dims<[n, 512]>>) -> tensor<?x64xf32, #onnx.dims<[n, 64]>> {
  %w = "onnx.Weight"() {name = "w", file = "m.onnx", offset = 64 : i64, length = 131072 : i64} : () -> tensor<512x64xf32>
  %y = "onnx.MatMul"(%x, %w) : (tensor<?x512xf32, #onnx.dims<[n, 512]>>, tensor<512x64xf32>) -> tensor<?x64xf32, #onnx.dims<[n, 64]>>
  return %y : tensor<?x64xf32, #onnx.dims<[n, 64]>>
}

// -----

// An op that cannot be lowered is an error at the op, not a crash: ScatterND
// unrolls its index tuples, so their number must be static.
func.func @scatternd_dynamic(%d: tensor<4x8xf32>, %i: tensor<?x1xi64, #onnx.dims<[n, 1]>>, %u: tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<4x8xf32> {
  // expected-error @+1 {{ScatterND needs a static number of index tuples}}
  %y = "onnx.ScatterND"(%d, %i, %u) : (tensor<4x8xf32>, tensor<?x1xi64, #onnx.dims<[n, 1]>>, tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// arith takes signless integers only: a uint8 operand is cast to i8 in the
// body, divided with the unsigned division, and the result cast back.
// CHECK-LABEL: func.func @div_u8
// CHECK: ^bb0(%[[A:.*]]: ui8, %[[B:.*]]: ui8, %{{.*}}: ui8):
// CHECK: %[[SA:.*]] = builtin.unrealized_conversion_cast %[[A]] : ui8 to i8
// CHECK: %[[SB:.*]] = builtin.unrealized_conversion_cast %[[B]] : ui8 to i8
// CHECK: %[[Q:.*]] = arith.divui %[[SA]], %[[SB]] : i8
// CHECK: %[[R:.*]] = builtin.unrealized_conversion_cast %[[Q]] : i8 to ui8
// CHECK: linalg.yield %[[R]] : ui8
func.func @div_u8(%a: tensor<6xui8>, %b: tensor<6xui8>) -> tensor<6xui8> {
  %y = "onnx.Div"(%a, %b) : (tensor<6xui8>, tensor<6xui8>) -> tensor<6xui8>
  return %y : tensor<6xui8>
}

// -----

// Comparisons of unsigned integers use the unsigned predicates.
// CHECK-LABEL: func.func @less_u8
// CHECK: arith.cmpi ult, %{{.*}}, %{{.*}} : i8
// CHECK-NEXT: linalg.yield %{{.*}} : i1
func.func @less_u8(%a: tensor<6xui8>, %b: tensor<6xui8>) -> tensor<6xi1> {
  %y = "onnx.Less"(%a, %b) : (tensor<6xui8>, tensor<6xui8>) -> tensor<6xi1>
  return %y : tensor<6xi1>
}

// -----

// Integer Pow is exponentiation by squaring, unrolled over the exponent's
// bits (no libm, no loop); a negative exponent gives 1/x truncated.
// CHECK-LABEL: func.func @pow_i32
// CHECK: ^bb0(%[[X:.*]]: i32, %[[E:.*]]: i32, %{{.*}}: i32):
// CHECK: arith.andi %[[E]], %c1_i32
// CHECK: arith.muli %c1_i32, %[[X]]
// CHECK: arith.muli %[[X]], %[[X]]
// CHECK: arith.shrui %[[E]], %c1_i32
// CHECK-NOT: math.
// CHECK: arith.cmpi slt, %[[E]], %c0_i32
// CHECK: linalg.yield
func.func @pow_i32(%a: tensor<3xi32>, %b: tensor<3xi32>) -> tensor<3xi32> {
  %y = "onnx.Pow"(%a, %b) : (tensor<3xi32>, tensor<3xi32>) -> tensor<3xi32>
  return %y : tensor<3xi32>
}

// -----

// An integer exponent of a float base is converted to the base's type.
// CHECK-LABEL: func.func @pow_f32_i64
// CHECK: %[[E:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK: math.powf %{{.*}}, %[[E]] : f32
func.func @pow_f32_i64(%a: tensor<3xf32>, %b: tensor<3xi64>) -> tensor<3xf32> {
  %y = "onnx.Pow"(%a, %b) : (tensor<3xf32>, tensor<3xi64>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// An integer base with a float exponent is computed in f64, as numpy does,
// and truncated back.
// CHECK-LABEL: func.func @pow_i64_f32
// CHECK: %[[X:.*]] = arith.sitofp %{{.*}} : i64 to f64
// CHECK: %[[E:.*]] = arith.extf %{{.*}} : f32 to f64
// CHECK: %[[P:.*]] = math.powf %[[X]], %[[E]] : f64
// CHECK: arith.fptosi %[[P]] : f64 to i64
func.func @pow_i64_f32(%a: tensor<3xi64>, %b: tensor<3xf32>) -> tensor<3xi64> {
  %y = "onnx.Pow"(%a, %b) : (tensor<3xi64>, tensor<3xf32>) -> tensor<3xi64>
  return %y : tensor<3xi64>
}

// -----

// A float base to the constant 2 (a norm's square, a float or an integer
// exponent) is x * x, the correctly rounded square; to the constant 3 (tanh
// GELU's cube) (x * x) * x, as onnxruntime computes both; 4 keeps pow.
// CHECK-LABEL: func.func @pow_two
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[S:.*]] = arith.mulf %[[X]], %[[X]] : f32
// CHECK-NEXT: linalg.yield %[[S]]
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: arith.mulf %[[Y]], %[[Y]] : f32
// CHECK: linalg.generic
// CHECK-NEXT: ^bb0(%[[C:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[C2:.*]] = arith.mulf %[[C]], %[[C]] : f32
// CHECK-NEXT: %[[C3:.*]] = arith.mulf %[[C2]], %[[C]] : f32
// CHECK-NEXT: linalg.yield %[[C3]]
// CHECK: math.powf
func.func @pow_two(%a: tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> (tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<?x8xf32, #onnx.dims<[n, 8]>>) {
  %two = "onnx.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %y = "onnx.Pow"(%a, %two) : (tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<f32>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>>
  %itwo = "onnx.Constant"() {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
  %z = "onnx.Pow"(%a, %itwo) : (tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<1xi64>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>>
  %three = "onnx.Constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %c = "onnx.Pow"(%a, %three) : (tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<f32>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>>
  %four = "onnx.Constant"() {value = dense<4.0> : tensor<f32>} : () -> tensor<f32>
  %w = "onnx.Pow"(%a, %four) : (tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<f32>) -> tensor<?x8xf32, #onnx.dims<[n, 8]>>
  return %y, %z, %c, %w : tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<?x8xf32, #onnx.dims<[n, 8]>>
}

// -----

// f32 to bf16 rounds to nearest even in integer arithmetic (no truncf, which
// LLVM would turn into a call to compiler-rt); NaN becomes 0x7FC0.
// CHECK-LABEL: func.func @cast_bf16
// CHECK: %[[BITS:.*]] = arith.bitcast %{{.*}} : f32 to i32
// CHECK: %[[HI:.*]] = arith.shrui %[[BITS]], %c16_i32
// CHECK: %[[LSB:.*]] = arith.andi %[[HI]], %c1_i32
// CHECK: %[[BIAS:.*]] = arith.addi %[[LSB]], %c32767_i32
// CHECK: %[[SUM:.*]] = arith.addi %[[BITS]], %[[BIAS]]
// CHECK: %[[R:.*]] = arith.shrui %[[SUM]], %c16_i32
// CHECK: %[[NAN:.*]] = arith.cmpf uno
// CHECK: %[[SEL:.*]] = arith.select %[[NAN]], %c32704_i32, %[[R]]
// CHECK: %[[T:.*]] = arith.trunci %[[SEL]] : i32 to i16
// CHECK: arith.bitcast %[[T]] : i16 to bf16
// CHECK-NOT: arith.truncf
func.func @cast_bf16(%a: tensor<4xf32>) -> tensor<4xbf16> {
  %y = "onnx.Cast"(%a) {to = 16 : i64} : (tensor<4xf32>) -> tensor<4xbf16>
  return %y : tensor<4xbf16>
}

// -----

// CumSum is a sum over the whole axis (a reduction dim k) from index 0, of
// the elements in the prefix of the output's index (k < i when exclusive) and
// of zeros elsewhere.
// CHECK: #[[IN:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK: #[[OUT:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @cumsum
// CHECK: %[[INIT:.*]] = linalg.fill ins(%cst{{.*}} : f32)
// CHECK: linalg.generic {indexing_maps = [#[[IN]], #[[OUT]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%arg0 : tensor<2x?xf32>) outs(%[[INIT]] : tensor<2x?xf32>)
// CHECK: ^bb0(%[[X:.*]]: f32, %[[ACC:.*]]: f32):
// CHECK: %[[I:.*]] = linalg.index 1
// CHECK: %[[K:.*]] = linalg.index 2
// CHECK: %[[IN_PREFIX:.*]] = arith.cmpi ult, %[[K]], %[[I]]
// CHECK: %[[M:.*]] = arith.select %[[IN_PREFIX]], %[[X]], %{{.*}}
// CHECK: arith.addf %[[ACC]], %[[M]]
func.func @cumsum(%x: tensor<2x?xf32, #onnx.dims<[2, n]>>) -> tensor<2x?xf32, #onnx.dims<[2, n]>> {
  %a = "onnx.Constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
  %y = "onnx.CumSum"(%x, %a) {exclusive = 1 : i64} : (tensor<2x?xf32, #onnx.dims<[2, n]>>, tensor<i64>) -> tensor<2x?xf32, #onnx.dims<[2, n]>>
  return %y : tensor<2x?xf32, #onnx.dims<[2, n]>>
}

// -----

// An axis known only at run time: the running sums along each axis (here
// reversed, k >= i), and an elementwise pick by the axis, wrapped if negative.
// CHECK-LABEL: func.func @cumsum_axis_input
// CHECK: %[[A:.*]] = tensor.extract %arg1[] : tensor<i32>
// CHECK: %[[AX:.*]] = arith.select %{{.*}}, %{{.*}}, %[[A]] : i32
// CHECK: %[[S0:.*]] = linalg.generic {{.*}}"reduction"
// CHECK: arith.cmpi uge
// CHECK: %[[S1:.*]] = linalg.generic {{.*}}"reduction"
// CHECK: arith.cmpi uge
// CHECK: linalg.generic {{.*}} ins(%[[S0]], %[[S1]] :
// CHECK: ^bb0(%[[V0:.*]]: i64, %[[V1:.*]]: i64, %{{.*}}: i64):
// CHECK: %[[IS0:.*]] = arith.cmpi eq, %[[AX]], %c0_i32
// CHECK: arith.select %[[IS0]], %[[V0]], %[[V1]]
func.func @cumsum_axis_input(%x: tensor<2x3xi64>, %a: tensor<i32>) -> tensor<2x3xi64> {
  %y = "onnx.CumSum"(%x, %a) {reverse = 1 : i64} : (tensor<2x3xi64>, tensor<i32>) -> tensor<2x3xi64>
  return %y : tensor<2x3xi64>
}

// -----

// Trilu's k, when an input, is read from its tensor.
// CHECK-LABEL: func.func @trilu_k_input
// CHECK: %[[KV:.*]] = tensor.extract %arg1[] : tensor<i64>
// CHECK: %[[K:.*]] = arith.index_cast %[[KV]] : i64 to index
// CHECK: linalg.generic
// CHECK: %[[D:.*]] = arith.subi
// CHECK: arith.cmpi sle, %[[D]], %[[K]] : index
func.func @trilu_k_input(%x: tensor<4x5xf32>, %k: tensor<i64>) -> tensor<4x5xf32> {
  %y = "onnx.Trilu"(%x, %k) {upper = 0 : i64} : (tensor<4x5xf32>, tensor<i64>) -> tensor<4x5xf32>
  return %y : tensor<4x5xf32>
}

// -----

// A Slice that steps down reads element i of an axis at start + i * step:
// here rows from n - 1 down to 0, and columns 6, 4, 2.
// CHECK-LABEL: func.func @slice_reverse
// CHECK: %[[N:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[LAST:.*]] = arith.addi %c-1, %[[N]] : index
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 0
// CHECK: %[[IS:.*]] = arith.muli %[[I]], %c-1{{.*}}
// CHECK: %[[ROW:.*]] = arith.addi %[[LAST]], %[[IS]]
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: %[[JS:.*]] = arith.muli %[[J]], %c-2
// CHECK: %[[COL:.*]] = arith.addi %c6, %[[JS]]
// CHECK: tensor.extract %arg0[%[[ROW]], %[[COL]]]
func.func @slice_reverse(%x: tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<?x3xf32, #onnx.dims<[n, 3]>> {
  %s = "onnx.Constant"() {value = dense<[-1, 6]> : tensor<2xi64>} : () -> tensor<2xi64>
  %e = "onnx.Constant"() {value = dense<[-9223372036854775807, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  %a = "onnx.Constant"() {value = dense<[0, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %p = "onnx.Constant"() {value = dense<[-1, -2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %y = "onnx.Slice"(%x, %s, %e, %a, %p) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<?x8xf32, #onnx.dims<[n, 8]>>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>, tensor<2xi64>) -> tensor<?x3xf32, #onnx.dims<[n, 3]>>
  return %y : tensor<?x3xf32, #onnx.dims<[n, 3]>>
}

// -----

// GatherND reads the index tuple of each output element from the indices
// (after batch_dims leading dims, which index data directly), wrapping
// negative indices by the dim they index and clamping them to it (an index
// out of range reads the nearest element, never memory outside data).
// CHECK-LABEL: func.func @gathernd
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4xf32>)
// CHECK: %[[B:.*]] = linalg.index 0
// CHECK: %[[IV:.*]] = tensor.extract %arg1[%[[B]], %c0{{.*}}] : tensor<2x1xi64>
// CHECK: %[[I:.*]] = arith.index_cast %[[IV]]
// CHECK: %[[W:.*]] = arith.addi %[[I]], %c3
// CHECK: %[[SEL:.*]] = arith.select %{{.*}}, %[[W]], %[[I]]
// CHECK: %[[LO:.*]] = arith.minsi %[[SEL]], %{{.*}}
// CHECK: %[[IDX:.*]] = arith.maxsi %[[LO]], %c0
// CHECK: %[[J:.*]] = linalg.index 1
// CHECK: tensor.extract %arg0[%[[B]], %[[IDX]], %[[J]]] : tensor<2x3x4xf32>
func.func @gathernd(%d: tensor<2x3x4xf32>, %i: tensor<2x1xi64>) -> tensor<2x4xf32> {
  %y = "onnx.GatherND"(%d, %i) {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

// ScatterND updates a copy of data one index tuple at a time, in order (so
// that repeated indices accumulate): each slice of data is combined with its
// slice of updates and inserted back.
// CHECK-LABEL: func.func @scatternd_add
// CHECK: %[[COPY:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x8xf32>)
// CHECK: arith.select
// CHECK: %[[R0:.*]] = arith.maxsi
// CHECK: %[[U0:.*]] = tensor.extract_slice %arg2[0, 0] [1, 8] [1, 1] : tensor<2x8xf32> to tensor<8xf32>
// CHECK: %[[D0:.*]] = tensor.extract_slice %[[COPY]][%[[R0]], 0] [1, 8] [1, 1] : tensor<4x8xf32> to tensor<8xf32>
// CHECK: %[[S0:.*]] = linalg.generic {{.*}} ins(%[[D0]], %[[U0]] :
// CHECK: arith.addf
// CHECK: %[[A0:.*]] = tensor.insert_slice %[[S0]] into %[[COPY]][%[[R0]], 0] [1, 8] [1, 1]
// CHECK: tensor.extract %arg1[%c1
// CHECK: tensor.extract_slice %arg2[1, 0] [1, 8] [1, 1]
// CHECK: tensor.extract_slice %[[A0]]
// CHECK: %[[A1:.*]] = tensor.insert_slice %{{.*}} into %[[A0]]
// CHECK: return %[[A1]]
func.func @scatternd_add(%d: tensor<4x8xf32>, %i: tensor<2x1xi64>, %u: tensor<2x8xf32>) -> tensor<4x8xf32> {
  %y = "onnx.ScatterND"(%d, %i, %u) {reduction = "add"} : (tensor<4x8xf32>, tensor<2x1xi64>, tensor<2x8xf32>) -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

// On bool, ReduceMax is an or from false and ReduceMin an and from true.
// CHECK-LABEL: func.func @reduce_bool
// CHECK: linalg.fill ins(%false : i1)
// CHECK: arith.ori
// CHECK: linalg.fill ins(%true : i1)
// CHECK: arith.andi
func.func @reduce_bool(%x: tensor<3x4xi1>) -> (tensor<3xi1>, tensor<3xi1>) {
  %a = "onnx.Constant"() {value = dense<1> : tensor<1xi64>} : () -> tensor<1xi64>
  %mx = "onnx.ReduceMax"(%x, %a) {keepdims = 0 : i64} : (tensor<3x4xi1>, tensor<1xi64>) -> tensor<3xi1>
  %mn = "onnx.ReduceMin"(%x, %a) {keepdims = 0 : i64} : (tensor<3x4xi1>, tensor<1xi64>) -> tensor<3xi1>
  return %mx, %mn : tensor<3xi1>, tensor<3xi1>
}

// -----

// LayerNormalization of f16 computes as its ONNX function body does: x is
// widened to the stash type f32, the statistics (also outputs) are f32, the
// normalized x is narrowed back before the f16 scale and bias.
// CHECK-LABEL: func.func @layernorm_f16
// CHECK: %[[X32:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<?x8xf16>)
// CHECK: arith.extf %{{.*}} : f16 to f32
// CHECK: linalg.generic {{.*}}"reduction"{{.*}} ins(%[[X32]] : tensor<?x8xf32>)
// CHECK: math.sqrt %{{.*}} : f32
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<?x8xf16>)
// CHECK: %[[N:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: %[[N16:.*]] = arith.truncf %[[N]] : f32 to f16
// CHECK: %[[S:.*]] = arith.mulf %[[N16]], %{{.*}} : f16
// CHECK: arith.addf %[[S]], %{{.*}} : f16
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x8xf16>, tensor<?x1xf32>, tensor<?x1xf32>
func.func @layernorm_f16(%x: tensor<?x8xf16, #onnx.dims<[n, 8]>>, %g: tensor<8xf16>, %b: tensor<8xf16>)
    -> (tensor<?x8xf16, #onnx.dims<[n, 8]>>, tensor<?x1xf32, #onnx.dims<[n, 1]>>, tensor<?x1xf32, #onnx.dims<[n, 1]>>) {
  %y, %m, %r = "onnx.LayerNormalization"(%x, %g, %b) {axis = -1 : i64, epsilon = 1.0e-05 : f32} : (tensor<?x8xf16, #onnx.dims<[n, 8]>>, tensor<8xf16>, tensor<8xf16>) -> (tensor<?x8xf16, #onnx.dims<[n, 8]>>, tensor<?x1xf32, #onnx.dims<[n, 1]>>, tensor<?x1xf32, #onnx.dims<[n, 1]>>)
  return %y, %m, %r : tensor<?x8xf16, #onnx.dims<[n, 8]>>, tensor<?x1xf32, #onnx.dims<[n, 1]>>, tensor<?x1xf32, #onnx.dims<[n, 1]>>
}

// -----

// An axes input of size 0 is empty, even when its values are unknown: every
// axis is reduced. The reduced axes are collapsed into one (the canonical
// form reduces over one dim) and the result expanded back to 1x1.
// CHECK-LABEL: func.func @reduce_empty_axes_input
// CHECK: %[[C:.*]] = tensor.collapse_shape %arg0 {{\[\[}}0, 1]] : tensor<3x4xf32> into tensor<12xf32>
// CHECK: %[[R:.*]] = linalg.generic {{.*}}iterator_types = ["reduction"]{{.*}} ins(%[[C]] : tensor<12xf32>)
// CHECK: tensor.expand_shape %[[R]] [] output_shape [1, 1] : tensor<f32> into tensor<1x1xf32>
func.func @reduce_empty_axes_input(%x: tensor<3x4xf32>, %axes: tensor<0xi64>) -> tensor<1x1xf32> {
  %y = "onnx.ReduceSum"(%x, %axes) : (tensor<3x4xf32>, tensor<0xi64>) -> tensor<1x1xf32>
  return %y : tensor<1x1xf32>
}

// -----

// Non-adjacent reduced axes are moved last by a transpose first.
// CHECK-LABEL: func.func @reduce_non_adjacent
// CHECK: %[[T:.*]] = linalg.transpose ins(%arg0 : tensor<2x3x4xf32>) outs(%{{.*}} : tensor<3x2x4xf32>) permutation = [1, 0, 2]
// CHECK: %[[C:.*]] = tensor.collapse_shape %[[T]] {{\[\[}}0], [1, 2]] : tensor<3x2x4xf32> into tensor<3x8xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]{{.*}} ins(%[[C]] : tensor<3x8xf32>)
func.func @reduce_non_adjacent(%x: tensor<2x3x4xf32>) -> tensor<3xf32> {
  %axes = "onnx.Constant"() {value = dense<[0, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %y = "onnx.ReduceSum"(%x, %axes) {keepdims = 0 : i64} : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<3xf32>
  return %y : tensor<3xf32>
}

// -----

// An empty result of Slice or Split is a tensor.empty, and Concat skips an
// empty input: a slice may not start at the end of a dim, even when empty.
// CHECK-LABEL: func.func @empty_slices
// CHECK-NOT: tensor.extract_slice
// CHECK: %[[S:.*]] = tensor.empty() : tensor<0x4xf32>
// CHECK: %[[P:.*]] = tensor.extract_slice %arg0[0, 0] [10, 4] [1, 1]
// CHECK: %[[Z:.*]] = tensor.empty() : tensor<0x4xf32>
// CHECK: %[[C:.*]] = tensor.empty() : tensor<10x4xf32>
// CHECK: %[[I:.*]] = tensor.insert_slice %[[P]] into %[[C]][0, 0] [10, 4] [1, 1]
// CHECK-NOT: tensor.insert_slice
// CHECK: return %[[S]], %[[Z]], %[[I]]
func.func @empty_slices(%x: tensor<10x4xf32>) -> (tensor<0x4xf32>, tensor<0x4xf32>, tensor<10x4xf32>) {
  %s = "onnx.Constant"() {value = dense<10> : tensor<1xi64>} : () -> tensor<1xi64>
  %e = "onnx.Constant"() {value = dense<12> : tensor<1xi64>} : () -> tensor<1xi64>
  %y = "onnx.Slice"(%x, %s, %e) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<10x4xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<0x4xf32>
  %sizes = "onnx.Constant"() {value = dense<[10, 0]> : tensor<2xi64>} : () -> tensor<2xi64>
  %p, %z = "onnx.Split"(%x, %sizes) {axis = 0 : i64} : (tensor<10x4xf32>, tensor<2xi64>) -> (tensor<10x4xf32>, tensor<0x4xf32>)
  %c = "onnx.Concat"(%p, %z) {axis = 0 : i64} : (tensor<10x4xf32>, tensor<0x4xf32>) -> tensor<10x4xf32>
  return %y, %z, %c : tensor<0x4xf32>, tensor<0x4xf32>, tensor<10x4xf32>
}

// -----

// RoPE's rotate-half, Concat(Neg(x[..., 8:16]), x[..., 0:8]), is one gather:
// output index d of the last dim reads x at d + 8 (negated) below 8 and at
// d - 8 from 8 on. No piece is made and no slice copied.
// CHECK-LABEL: func.func @rotate_half
// CHECK-NOT: tensor.insert_slice
// CHECK: linalg.generic
// CHECK: %[[D:.*]] = linalg.index 3 : index
// CHECK: %[[HI:.*]] = arith.addi %[[D]], %c8
// CHECK: %[[LO:.*]] = arith.addi %[[D]], %c-8
// CHECK: %[[SECOND:.*]] = arith.cmpi uge, %[[D]], %c8
// CHECK: %[[AT:.*]] = arith.select %[[SECOND]], %[[LO]], %[[HI]]
// CHECK: %[[NEG:.*]] = arith.select %[[SECOND]], %false, %true
// CHECK: %[[V:.*]] = tensor.extract %arg0[%{{.*}}, %{{.*}}, %{{.*}}, %[[AT]]] : tensor<?x4x?x16xf32>
// CHECK: %[[N:.*]] = arith.negf %[[V]]
// CHECK: %[[R:.*]] = arith.select %[[NEG]], %[[N]], %[[V]]
// CHECK: linalg.yield %[[R]]
// CHECK-NOT: tensor.insert_slice
// CHECK: return
func.func @rotate_half(%x: tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>) -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>> {
  %zero = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %half = "onnx.Constant"() {value = dense<8> : tensor<1xi64>} : () -> tensor<1xi64>
  %end = "onnx.Constant"() {value = dense<9223372036854775807> : tensor<1xi64>} : () -> tensor<1xi64>
  %axis = "onnx.Constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
  %one = "onnx.Constant"() {value = dense<1> : tensor<1xi64>} : () -> tensor<1xi64>
  %lo = "onnx.Slice"(%x, %zero, %half, %axis, %one) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>
  %hi = "onnx.Slice"(%x, %half, %end, %axis, %one) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>
  %n = "onnx.Neg"(%hi) : (tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>) -> tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>
  %c = "onnx.Concat"(%n, %lo) {axis = -1 : i64} : (tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>, tensor<?x4x?x8xf32, #onnx.dims<[b, 4, s, 8]>>) -> tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>
  return %c : tensor<?x4x?x16xf32, #onnx.dims<[b, 4, s, 16]>>
}

// -----

// Slices of two different tensors are copied piece by piece.
// CHECK-LABEL: func.func @concat_two_sources
// CHECK: tensor.extract_slice %arg0
// CHECK: tensor.extract_slice %arg1
// CHECK: tensor.insert_slice
// CHECK: tensor.insert_slice
func.func @concat_two_sources(%x: tensor<4x16xf32>, %y: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %zero = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %half = "onnx.Constant"() {value = dense<8> : tensor<1xi64>} : () -> tensor<1xi64>
  %axis = "onnx.Constant"() {value = dense<1> : tensor<1xi64>} : () -> tensor<1xi64>
  %a = "onnx.Slice"(%x, %zero, %half, %axis) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<4x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x8xf32>
  %b = "onnx.Slice"(%y, %zero, %half, %axis) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0>} : (tensor<4x16xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<4x8xf32>
  %c = "onnx.Concat"(%a, %b) {axis = 1 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}
