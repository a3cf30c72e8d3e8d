//===- ONNXAttrs.td - onnx dialect attributes --------------*- tablegen -*-===//
#ifndef LOCKSTEP_ONNX_ATTRS
#define LOCKSTEP_ONNX_ATTRS

include "lockstep/Dialect/ONNX/ONNXDialect.td"
include "mlir/IR/BuiltinAttributeInterfaces.td"

def ONNX_DimsAttr : AttrDef<ONNX_Dialect, "Dims"> {
  let mnemonic = "dims";
  let summary = "symbolic dims of a tensor, or the values of a shape tensor";
  let description = [{
    A list of symbolic dimension expressions: polynomials with integer
    coefficients over named symbols, in canonical form. As the encoding of a
    ranked tensor type it gives every dim of the tensor (dynamic dims in the
    shape are `?`). As the `onnx.sym` attribute of an op it gives the values
    of its 1-D (or 0-D) integer result, when shape inference knows them.

    Example: `tensor<?x?x8x64xf32, #onnx.dims<[batch, past + seq, 8, 64]>>`.
  }];
  let parameters = (ins "::mlir::ArrayAttr":$dims);
  let hasCustomAssemblyFormat = 1;
  let extraClassDeclaration = [{
    /// The dims as parsed expressions.
    ::llvm::SmallVector<::lockstep::DimExpr> getExprs() const;
    static DimsAttr get(::mlir::MLIRContext *ctx,
                        ::llvm::ArrayRef<::lockstep::DimExpr> exprs);
  }];
}

#endif
