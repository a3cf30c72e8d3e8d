// RUN: lockstep-opt %s --split-input-file --lockstep-emit-entry --verify-diagnostics | FileCheck %s

// The entry loads one descriptor pointer per argument of the C interface and
// calls it; the importer's argument attributes are dropped.
// The wrapped glue function is not optimized (it only allocates and calls).
// CHECK-LABEL: llvm.func @main() attributes {passthrough = ["optnone", "noinline"]}
// CHECK-LABEL: llvm.func @_mlir_ciface_main(%arg0: !llvm.ptr, %arg1: !llvm.ptr)
// CHECK: llvm.func @lockstep_entry(%[[ARGS:.*]]: !llvm.ptr)
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[D0:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[P1:.*]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: %[[D1:.*]] = llvm.load %[[P1]]
// CHECK: llvm.call @_mlir_ciface_main(%[[D0]], %[[D1]])
// CHECK: llvm.return
module {
  llvm.func @main() {
    llvm.return
  }
  llvm.func @_mlir_ciface_main(%arg0: !llvm.ptr {onnx.name = "x"}, %arg1: !llvm.ptr {lockstep.weight = {name = "w"}}) {
    llvm.return
  }
}

// -----

// Without the C interface there is nothing to wrap.
// expected-error @+1 {{no LLVM function '_mlir_ciface_main' to wrap}}
module {
  llvm.func @main() {
    llvm.return
  }
}
