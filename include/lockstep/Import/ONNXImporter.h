//===- ONNXImporter.h - ONNX model to the onnx dialect ----------*- C++ -*-===//
#ifndef LOCKSTEP_IMPORT_ONNXIMPORTER_H
#define LOCKSTEP_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace lockstep {

/// The opset range of the default ONNX domain that the importer accepts.
constexpr int64_t kMinOpset = 13;
constexpr int64_t kMaxOpset = 21;

/// Imports an ONNX model, binary (.onnx, with external data) or in the
/// textual syntax of onnx/defs/parser.h, into a module holding one
/// `func.func @main` over the onnx dialect. Initializer bytes are not read:
/// large initializers become `onnx.Weight` ops that reference the file and
/// offset of their data. Errors are emitted as diagnostics located at the
/// ONNX node; the result is null on error.
mlir::OwningOpRef<mlir::ModuleOp> importONNXFile(llvm::StringRef path,
                                                 mlir::MLIRContext *ctx);

/// True when the file looks like an ONNX model (by extension or content),
/// so that drivers can accept both .onnx and .mlir inputs.
bool isONNXFile(llvm::StringRef path);

} // namespace lockstep

#endif
