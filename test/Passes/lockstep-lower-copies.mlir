// RUN: lockstep-opt %s --pass-pipeline='builtin.module(func.func(lockstep-lower-copies))' | FileCheck %s

// A strided copy becomes linalg.copy, which lowers to loops rather than to a
// call of MLIR's runtime helper.
// CHECK-LABEL: func.func @strided
// CHECK-NOT: memref.copy
// CHECK: linalg.copy ins(%arg0 : memref<?xf32, strided<[2]>>) outs(%arg1 : memref<?xf32>)
func.func @strided(%a: memref<?xf32, strided<[2]>>, %b: memref<?xf32>) {
  memref.copy %a, %b : memref<?xf32, strided<[2]>> to memref<?xf32>
  return
}
