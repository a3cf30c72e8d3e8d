//===- ONNXOps.td - onnx dialect operations ----------------*- tablegen -*-===//
//
// One op per ONNX operator. Operands follow ONNX's formal input order; an
// absent optional input is an empty optional operand. Attribute names are
// ONNX's. The generic assembly format is used throughout, so that IR reads like
// the ONNX graph it came from.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_ONNX_OPS
#define LOCKSTEP_ONNX_OPS

include "lockstep/Dialect/ONNX/ONNXDialect.td"
include "lockstep/Dialect/ONNX/ONNXAttrs.td"
include "lockstep/Dialect/ONNX/ONNXInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/CommonAttrConstraints.td"

// Base class. `inputs` are the formal ONNX inputs in order, `attrs` the ONNX
// attributes, `results` the outputs.
class ONNX_Op<string mnemonic, dag inputs, dag attrs, dag outs,
              list<Trait> traits = []>
    : Op<ONNX_Dialect, mnemonic,
         !listconcat(traits, [Pure, ONNX_NodeOpInterface])> {
  let arguments = !con(inputs, attrs);
  let results = outs;
  let extraClassDeclaration =
      "static constexpr unsigned kNumOnnxInputs = " # !size(inputs) # ";";
}

//===----------------------------------------------------------------------===//
// Elementwise
//===----------------------------------------------------------------------===//

class ONNX_UnaryOp<string mnemonic, string what>
    : ONNX_Op<mnemonic, (ins AnyTensor:$X), (ins), (outs AnyTensor:$Y)> {
  let summary = "elementwise " # what;
  let description = "ONNX `" # mnemonic # "`: applies " # what #
      " to each element of `X`; the result has the shape and element type of"
      " `X`.\n\nExample:\n\n```mlir\n%y = \"onnx." # mnemonic #
      "\"(%x) : (tensor<4xf32>) -> tensor<4xf32>\n```";
}

def ONNX_NegOp : ONNX_UnaryOp<"Neg", "negation">;
def ONNX_AbsOp : ONNX_UnaryOp<"Abs", "absolute value">;
def ONNX_SqrtOp : ONNX_UnaryOp<"Sqrt", "square root">;
def ONNX_ReciprocalOp : ONNX_UnaryOp<"Reciprocal", "1/x">;
def ONNX_ExpOp : ONNX_UnaryOp<"Exp", "the exponential">;
def ONNX_LogOp : ONNX_UnaryOp<"Log", "the natural logarithm">;
def ONNX_TanhOp : ONNX_UnaryOp<"Tanh", "the hyperbolic tangent">;
def ONNX_ErfOp : ONNX_UnaryOp<"Erf", "the error function">;
def ONNX_SigmoidOp : ONNX_UnaryOp<"Sigmoid", "the logistic function 1/(1+exp(-x))">;
def ONNX_SinOp : ONNX_UnaryOp<"Sin", "the sine">;
def ONNX_CosOp : ONNX_UnaryOp<"Cos", "the cosine">;
def ONNX_ReluOp : ONNX_UnaryOp<"Relu", "max(x, 0)">;
def ONNX_NotOp : ONNX_UnaryOp<"Not", "logical negation of a bool tensor">;
def ONNX_IdentityOp : ONNX_UnaryOp<"Identity", "the identity">;
def ONNX_IsNaNOp : ONNX_UnaryOp<"IsNaN", "a NaN test (bool result)">;

def ONNX_GeluOp : ONNX_Op<"Gelu", (ins AnyTensor:$X),
    (ins DefaultValuedAttr<StrAttr, "\"none\"">:$approximate),
    (outs AnyTensor:$Y)> {
  let summary = "elementwise GELU (opset 20)";
  let description = [{
    ONNX `Gelu`: `0.5 x (1 + erf(x/√2))`, or with `approximate = "tanh"`,
    `0.5 x (1 + tanh(√(2/π)(x + 0.044715 x³)))`.

    Example:

    ```mlir
    %y = "onnx.Gelu"(%x) {approximate = "tanh"} : (tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
}

class ONNX_BinaryOp<string mnemonic, string what>
    : ONNX_Op<mnemonic, (ins AnyTensor:$A, AnyTensor:$B), (ins),
              (outs AnyTensor:$C)> {
  let summary = "elementwise " # what # " with broadcasting";
  let description = "ONNX `" # mnemonic # "`: " # what # " of `A` and `B`,"
      " with multidirectional (numpy) broadcasting.\n\nExample:\n\n```mlir\n"
      "%c = \"onnx." # mnemonic # "\"(%a, %b) : (tensor<2x3xf32>, tensor<3xf32>)"
      " -> tensor<2x3xf32>\n```";
}

def ONNX_AddOp : ONNX_BinaryOp<"Add", "sum">;
def ONNX_SubOp : ONNX_BinaryOp<"Sub", "difference">;
def ONNX_MulOp : ONNX_BinaryOp<"Mul", "product">;
def ONNX_DivOp : ONNX_BinaryOp<"Div", "quotient">;
def ONNX_PowOp : ONNX_BinaryOp<"Pow", "power A^B">;
def ONNX_EqualOp : ONNX_BinaryOp<"Equal", "equality test (bool result)">;
def ONNX_LessOp : ONNX_BinaryOp<"Less", "A < B (bool result)">;
def ONNX_LessOrEqualOp : ONNX_BinaryOp<"LessOrEqual", "A <= B (bool result)">;
def ONNX_GreaterOp : ONNX_BinaryOp<"Greater", "A > B (bool result)">;
def ONNX_GreaterOrEqualOp : ONNX_BinaryOp<"GreaterOrEqual", "A >= B (bool result)">;
def ONNX_AndOp : ONNX_BinaryOp<"And", "logical and">;
def ONNX_OrOp : ONNX_BinaryOp<"Or", "logical or">;

class ONNX_VariadicOp<string mnemonic, string what>
    : ONNX_Op<mnemonic, (ins Variadic<AnyTensor>:$data_0), (ins),
              (outs AnyTensor:$result)> {
  let summary = "elementwise " # what # " of any number of inputs";
  let description = "ONNX `" # mnemonic # "`: " # what # " of all inputs,"
      " with broadcasting.\n\nExample:\n\n```mlir\n%m = \"onnx." # mnemonic #
      "\"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>\n```";
}

def ONNX_MaxOp : ONNX_VariadicOp<"Max", "maximum">;
def ONNX_MinOp : ONNX_VariadicOp<"Min", "minimum">;
def ONNX_SumOp : ONNX_VariadicOp<"Sum", "sum">;

def ONNX_WhereOp : ONNX_Op<"Where",
    (ins AnyTensor:$condition, AnyTensor:$X, AnyTensor:$Y), (ins),
    (outs AnyTensor:$output)> {
  let summary = "elementwise select with broadcasting";
  let description = [{
    ONNX `Where`: `condition ? X : Y`, all three broadcast together.

    Example:

    ```mlir
    %r = "onnx.Where"(%c, %x, %y) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    ```
  }];
}

def ONNX_CastOp : ONNX_Op<"Cast", (ins AnyTensor:$input),
    (ins I64Attr:$to, DefaultValuedAttr<I64Attr, "1">:$saturate),
    (outs AnyTensor:$output)> {
  let summary = "element type conversion";
  let description = [{
    ONNX `Cast`: converts each element to the ONNX data type `to`
    (TensorProto.DataType: 1 float, 10 float16, 16 bfloat16, 7 int64, 9 bool...).

    Example:

    ```mlir
    %r = "onnx.Cast"(%x) {to = 1 : i64} : (tensor<4xi64>) -> tensor<4xf32>
    ```
  }];
}

def ONNX_CastLikeOp : ONNX_Op<"CastLike",
    (ins AnyTensor:$input, AnyTensor:$target_type),
    (ins DefaultValuedAttr<I64Attr, "1">:$saturate), (outs AnyTensor:$output)> {
  let summary = "element type conversion to the type of another tensor";
  let description = [{
    ONNX `CastLike`: converts `input` to the element type of `target_type`.

    Example:

    ```mlir
    %r = "onnx.CastLike"(%x, %t) : (tensor<4xi64>, tensor<f32>) -> tensor<4xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Reductions and normalizations
//===----------------------------------------------------------------------===//

def ONNX_SoftmaxOp : ONNX_Op<"Softmax", (ins AnyTensor:$input),
    (ins DefaultValuedAttr<I64Attr, "-1">:$axis), (outs AnyTensor:$output)> {
  let summary = "softmax along one axis (opset 13 semantics)";
  let description = [{
    ONNX `Softmax` from opset 13: `exp(x - max) / sum(exp(x - max))` along
    `axis`. Models of older opsets are refused by the importer.

    Example:

    ```mlir
    %p = "onnx.Softmax"(%s) {axis = -1 : i64} : (tensor<2x8xf32>) -> tensor<2x8xf32>
    ```
  }];
}

def ONNX_LayerNormalizationOp : ONNX_Op<"LayerNormalization",
    (ins AnyTensor:$X, AnyTensor:$Scale, Optional<AnyTensor>:$B),
    (ins DefaultValuedAttr<I64Attr, "-1">:$axis,
         DefaultValuedAttr<F32Attr, "1.0e-5">:$epsilon,
         DefaultValuedAttr<I64Attr, "1">:$stash_type),
    (outs AnyTensor:$Y, Variadic<AnyTensor>:$stats)> {
  let summary = "layer normalization over the trailing axes";
  let description = [{
    ONNX `LayerNormalization` (opset 17): normalizes over axes `[axis, rank)`,
    then scales by `Scale` and adds `B`. The optional `Mean` and `InvStdDev`
    outputs are the variadic `stats` results.

    Example:

    ```mlir
    %y = "onnx.LayerNormalization"(%x, %g, %b) {epsilon = 1.0e-05 : f32}
        : (tensor<2x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
    ```
  }];
}

class ONNX_ReduceOp<string mnemonic, string what>
    : ONNX_Op<mnemonic, (ins AnyTensor:$data, Optional<AnyTensor>:$axes_input),
              (ins OptionalAttr<DenseI64ArrayAttr>:$axes,
                   DefaultValuedAttr<I64Attr, "1">:$keepdims,
                   DefaultValuedAttr<I64Attr, "0">:$noop_with_empty_axes),
              (outs AnyTensor:$reduced)> {
  let summary = what # " over axes";
  let description = "ONNX `" # mnemonic # "`: " # what # " over `axes`. The"
      " axes come from the attribute (opset 13 for all but ReduceSum) or from"
      " the second input (ReduceSum from 13, all from 18); with neither, all"
      " axes are reduced unless `noop_with_empty_axes` is set.\n\nExample:\n\n"
      "```mlir\n%r = \"onnx." # mnemonic # "\"(%x) {axes = array<i64: -1>}"
      " : (tensor<2x8xf32>) -> tensor<2x1xf32>\n```";
}

def ONNX_ReduceMeanOp : ONNX_ReduceOp<"ReduceMean", "mean">;
def ONNX_ReduceSumOp : ONNX_ReduceOp<"ReduceSum", "sum">;
def ONNX_ReduceMaxOp : ONNX_ReduceOp<"ReduceMax", "maximum">;
def ONNX_ReduceMinOp : ONNX_ReduceOp<"ReduceMin", "minimum">;

def ONNX_CumSumOp : ONNX_Op<"CumSum", (ins AnyTensor:$x, AnyTensor:$axis),
    (ins DefaultValuedAttr<I64Attr, "0">:$exclusive,
         DefaultValuedAttr<I64Attr, "0">:$reverse),
    (outs AnyTensor:$y)> {
  let summary = "cumulative sum along an axis";
  let description = [{
    ONNX `CumSum`: running sums along the axis given by the scalar `axis`
    input, optionally exclusive or reversed.

    Example:

    ```mlir
    %y = "onnx.CumSum"(%x, %axis) : (tensor<2x8xi64>, tensor<i64>) -> tensor<2x8xi64>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Contractions
//===----------------------------------------------------------------------===//

def ONNX_MatMulOp : ONNX_Op<"MatMul", (ins AnyTensor:$A, AnyTensor:$B), (ins),
    (outs AnyTensor:$Y)> {
  let summary = "numpy matmul";
  let description = [{
    ONNX `MatMul`: matrix product of the two trailing dims, with the leading
    dims broadcast; 1-D operands are promoted as numpy does.

    Example:

    ```mlir
    %y = "onnx.MatMul"(%x, %w) : (tensor<2x3x8xf32>, tensor<8x16xf32>) -> tensor<2x3x16xf32>
    ```
  }];
}

def ONNX_GemmOp : ONNX_Op<"Gemm",
    (ins AnyTensor:$A, AnyTensor:$B, Optional<AnyTensor>:$C),
    (ins DefaultValuedAttr<F32Attr, "1.0">:$alpha,
         DefaultValuedAttr<F32Attr, "1.0">:$beta,
         DefaultValuedAttr<I64Attr, "0">:$transA,
         DefaultValuedAttr<I64Attr, "0">:$transB),
    (outs AnyTensor:$Y)> {
  let summary = "general matrix multiply";
  let description = [{
    ONNX `Gemm`: `alpha * A' B' + beta * C` on 2-D `A` and `B` (optionally
    transposed), `C` broadcast to the result.

    Example:

    ```mlir
    %y = "onnx.Gemm"(%a, %b, %c) {transB = 1 : i64}
        : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

def ONNX_ConcatOp : ONNX_Op<"Concat", (ins Variadic<AnyTensor>:$inputs),
    (ins I64Attr:$axis), (outs AnyTensor:$concat_result)> {
  let summary = "concatenation along an axis";
  let description = [{
    ONNX `Concat`: joins the inputs along `axis`.

    Example:

    ```mlir
    %r = "onnx.Concat"(%a, %b) {axis = 0 : i64} : (tensor<2xi64>, tensor<1xi64>) -> tensor<3xi64>
    ```
  }];
}

def ONNX_SplitOp : ONNX_Op<"Split",
    (ins AnyTensor:$input, Optional<AnyTensor>:$split_input),
    (ins DefaultValuedAttr<I64Attr, "0">:$axis,
         OptionalAttr<DenseI64ArrayAttr>:$split,
         OptionalAttr<I64Attr>:$num_outputs),
    (outs Variadic<AnyTensor>:$outputs)> {
  let summary = "split into parts along an axis";
  let description = [{
    ONNX `Split`: the sizes come from the `split` input (opset 13), the
    `split` attribute (before 13), or equal parts (`num_outputs` from 18, or
    the number of results).

    Example:

    ```mlir
    %a, %b = "onnx.Split"(%x) {axis = 1 : i64} : (tensor<2x8xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>)
    ```
  }];
}

def ONNX_SliceOp : ONNX_Op<"Slice",
    (ins AnyTensor:$data, AnyTensor:$starts, AnyTensor:$ends,
         Optional<AnyTensor>:$axes, Optional<AnyTensor>:$steps), (ins),
    (outs AnyTensor:$output), [AttrSizedOperandSegments]> {
  let summary = "strided slice";
  let description = [{
    ONNX `Slice` (opset 10 and later): `starts`, `ends`, and the optional
    `axes` and `steps` are 1-D integer inputs; indices are clamped as numpy does.

    Example:

    ```mlir
    %r = "onnx.Slice"(%x, %s, %e) {operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>}
        : (tensor<8xf32>, tensor<1xi64>, tensor<1xi64>) -> tensor<4xf32>
    ```
  }];
}

def ONNX_GatherOp : ONNX_Op<"Gather", (ins AnyTensor:$data, AnyTensor:$indices),
    (ins DefaultValuedAttr<I64Attr, "0">:$axis), (outs AnyTensor:$output)> {
  let summary = "gather along an axis";
  let description = [{
    ONNX `Gather`: indexes `data` along `axis` with `indices` (negative
    indices count from the end); the result shape is
    `data[:axis] + indices + data[axis+1:]`.

    Example:

    ```mlir
    %e = "onnx.Gather"(%table, %ids) {axis = 0 : i64} : (tensor<100x16xf32>, tensor<2x5xi64>) -> tensor<2x5x16xf32>
    ```
  }];
}

def ONNX_GatherNDOp : ONNX_Op<"GatherND", (ins AnyTensor:$data, AnyTensor:$indices),
    (ins DefaultValuedAttr<I64Attr, "0">:$batch_dims), (outs AnyTensor:$output)> {
  let summary = "gather slices by index tuples";
  let description = [{
    ONNX `GatherND`: the last dim of `indices` holds index tuples into the
    dims of `data` after the first `batch_dims`.

    Example:

    ```mlir
    %r = "onnx.GatherND"(%x, %i) : (tensor<4x8xf32>, tensor<3x1xi64>) -> tensor<3x8xf32>
    ```
  }];
}

def ONNX_ScatterNDOp : ONNX_Op<"ScatterND",
    (ins AnyTensor:$data, AnyTensor:$indices, AnyTensor:$updates),
    (ins DefaultValuedAttr<StrAttr, "\"none\"">:$reduction),
    (outs AnyTensor:$output)> {
  let summary = "scatter slices by index tuples";
  let description = [{
    ONNX `ScatterND`: a copy of `data` with the slices addressed by `indices`
    replaced by (or, with `reduction`, combined with) `updates`.

    Example:

    ```mlir
    %r = "onnx.ScatterND"(%x, %i, %u) : (tensor<4x8xf32>, tensor<1x1xi64>, tensor<1x8xf32>) -> tensor<4x8xf32>
    ```
  }];
}

def ONNX_ExpandOp : ONNX_Op<"Expand", (ins AnyTensor:$input, AnyTensor:$shape),
    (ins), (outs AnyTensor:$output)> {
  let summary = "broadcast to a shape";
  let description = [{
    ONNX `Expand`: broadcasts `input` with the 1-D `shape` (a dim of 1 in
    `shape` keeps the input's dim).

    Example:

    ```mlir
    %r = "onnx.Expand"(%x, %s) : (tensor<1x8xf32>, tensor<2xi64>) -> tensor<4x8xf32>
    ```
  }];
}

def ONNX_ReshapeOp : ONNX_Op<"Reshape", (ins AnyTensor:$data, AnyTensor:$shape),
    (ins DefaultValuedAttr<I64Attr, "0">:$allowzero), (outs AnyTensor:$reshaped)> {
  let summary = "reshape";
  let description = [{
    ONNX `Reshape`: a `0` in `shape` copies the input dim (unless
    `allowzero`), one `-1` is inferred from the element count.

    Example:

    ```mlir
    %r = "onnx.Reshape"(%x, %s) : (tensor<2x8xf32>, tensor<3xi64>) -> tensor<2x2x4xf32>
    ```
  }];
}

def ONNX_FlattenOp : ONNX_Op<"Flatten", (ins AnyTensor:$input),
    (ins DefaultValuedAttr<I64Attr, "1">:$axis), (outs AnyTensor:$output)> {
  let summary = "flatten into two dims";
  let description = [{
    ONNX `Flatten`: the dims before `axis` (counted from the end when
    negative) become the first output dim, the rest the second; the
    elements keep their order.

    Example:

    ```mlir
    %r = "onnx.Flatten"(%x) {axis = 2 : i64} : (tensor<2x3x4x5xf32>) -> tensor<6x20xf32>
    ```
  }];
}

class ONNX_AxesOp<string mnemonic, string what>
    : ONNX_Op<mnemonic, (ins AnyTensor:$data, Optional<AnyTensor>:$axes_input),
              (ins OptionalAttr<DenseI64ArrayAttr>:$axes),
              (outs AnyTensor:$output)> {
  let summary = what;
  let description = "ONNX `" # mnemonic # "`: " # what # ". The axes are the"
      " second input from opset 13, or the `axes` attribute before.\n\n"
      "Example:\n\n```mlir\n%r = \"onnx." # mnemonic # "\"(%x, %axes)"
      " : (tensor<1x8xf32>, tensor<1xi64>) -> tensor<8xf32>\n```";
}

def ONNX_SqueezeOp : ONNX_AxesOp<"Squeeze", "removes dims of size 1">;
def ONNX_UnsqueezeOp : ONNX_AxesOp<"Unsqueeze", "inserts dims of size 1">;

def ONNX_TransposeOp : ONNX_Op<"Transpose", (ins AnyTensor:$data),
    (ins OptionalAttr<DenseI64ArrayAttr>:$perm), (outs AnyTensor:$transposed)> {
  let summary = "permutation of dims";
  let description = [{
    ONNX `Transpose`: output dim `i` is input dim `perm[i]`; without `perm`,
    the dims are reversed.

    Example:

    ```mlir
    %r = "onnx.Transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x8xf32>) -> tensor<8x2xf32>
    ```
  }];
}

def ONNX_TriluOp : ONNX_Op<"Trilu", (ins AnyTensor:$input, Optional<AnyTensor>:$k),
    (ins DefaultValuedAttr<I64Attr, "1">:$upper), (outs AnyTensor:$output)> {
  let summary = "upper or lower triangle";
  let description = [{
    ONNX `Trilu`: keeps the upper (or lower) triangle of the two trailing
    dims, from diagonal `k`, and zeroes the rest.

    Example:

    ```mlir
    %r = "onnx.Trilu"(%x) {upper = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
    ```
  }];
}

//===----------------------------------------------------------------------===//
// Shapes and constants
//===----------------------------------------------------------------------===//

def ONNX_ShapeOp : ONNX_Op<"Shape", (ins AnyTensor:$data),
    (ins DefaultValuedAttr<I64Attr, "0">:$start, OptionalAttr<I64Attr>:$end),
    (outs AnyTensor:$shape)> {
  let summary = "the shape of a tensor as a 1-D int64 tensor";
  let description = [{
    ONNX `Shape`: the dims `[start, end)` of `data` (opset 15 adds the range).

    Example:

    ```mlir
    %s = "onnx.Shape"(%x) : (tensor<?x8xf32, #onnx.dims<[n, 8]>>) -> tensor<2xi64>
    ```
  }];
}

def ONNX_ConstantOfShapeOp : ONNX_Op<"ConstantOfShape", (ins AnyTensor:$input),
    (ins OptionalAttr<ElementsAttr>:$value), (outs AnyTensor:$output)> {
  let summary = "a tensor of the given shape filled with one value";
  let description = [{
    ONNX `ConstantOfShape`: the shape is the 1-D `input`; `value` is a
    one-element tensor (float 0 when absent).

    Example:

    ```mlir
    %z = "onnx.ConstantOfShape"(%s) {value = dense<0> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<2x3xi64>
    ```
  }];
}

def ONNX_ConstantOp : ONNX_Op<"Constant", (ins), (ins ElementsAttr:$value),
    (outs AnyTensor:$output), [ConstantLike]> {
  let summary = "a constant tensor";
  let description = [{
    ONNX `Constant`. The importer turns every ONNX form (`value`,
    `value_float(s)`, `value_int(s)`) into `value`.

    Example:

    ```mlir
    %c = "onnx.Constant"() {value = dense<[1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    ```
  }];
}

def ONNX_RangeOp : ONNX_Op<"Range",
    (ins AnyTensor:$start, AnyTensor:$limit, AnyTensor:$delta), (ins),
    (outs AnyTensor:$output)> {
  let summary = "an arithmetic sequence";
  let description = [{
    ONNX `Range`: `start, start + delta, ...` up to, not including, `limit`;
    all three are scalars.

    Example:

    ```mlir
    %r = "onnx.Range"(%a, %b, %d) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<?xi64>
    ```
  }];
}

def ONNX_WeightOp : Op<ONNX_Dialect, "Weight", [Pure, ConstantLike]> {
  let summary = "a reference to an initializer's bytes";
  let description = [{
    An ONNX initializer, by name. `file` and `offset`/`length` say where its
    raw little-endian bytes are: inside the model file itself or in an
    external data file. The bytes are never copied into IR. Small initializers
    (64 elements or fewer) are imported as `onnx.Constant` instead, so that
    shape inference can read them.

    Example:

    ```mlir
    %w = "onnx.Weight"() {name = "lm_head.weight", file = "model.onnx",
                          offset = 1024 : i64, length = 131072 : i64}
        : () -> tensor<512x64xf32>
    ```
  }];
  let arguments = (ins StrAttr:$name, StrAttr:$file, I64Attr:$offset,
                       I64Attr:$length);
  let results = (outs AnyTensor:$output);
}

#endif
