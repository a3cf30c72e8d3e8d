//===- LockstepDialect.td - The lockstep dialect -----------*- tablegen -*-===//
#ifndef LOCKSTEP_DIALECT
#define LOCKSTEP_DIALECT

include "mlir/IR/OpBase.td"

def Lockstep_Dialect : Dialect {
  let name = "lockstep";
  let cppNamespace = "::lockstep::ls";
  let summary = "The serving form: ops that the compiler recognizes in a decoder";
  let description = [{
    Ops that stand for a whole subgraph of an exported decoder once the
    compiler has recognized it, such as attention. They are defined by the
    numerics contract of DESIGN.md, not by the ops they replace: each one's
    description says in which order it reduces. They live between the onnx
    form and linalg: convert-onnx-to-linalg carries them over with plain
    tensor types, and lockstep-canonical-reductions expands them into marked
    linalg ops.
  }];
}

#endif
