// RUN: lockstep-opt %s --lockstep-device-alloc | FileCheck %s

// The host code of a CUDA step allocates device memory: malloc, aligned_alloc
// and free become the runtime's device allocator, with the same signatures.
// CHECK-NOT: @malloc
// CHECK: llvm.func @lockstep_device_malloc(i64) -> !llvm.ptr
// CHECK: llvm.func @lockstep_device_aligned_alloc(i64, i64) -> !llvm.ptr
// CHECK: llvm.func @lockstep_device_free(!llvm.ptr)
// CHECK-LABEL: llvm.func @main
// CHECK: llvm.call @lockstep_device_malloc(%{{.*}}) : (i64) -> !llvm.ptr
// CHECK: llvm.call @lockstep_device_aligned_alloc(%{{.*}}, %{{.*}}) : (i64, i64) -> !llvm.ptr
// CHECK: llvm.call @lockstep_device_free(%{{.*}}) : (!llvm.ptr) -> ()
// CHECK: llvm.call @lockstep_device_free(%{{.*}}) : (!llvm.ptr) -> ()
module {
  llvm.func @malloc(i64) -> !llvm.ptr
  llvm.func @aligned_alloc(i64, i64) -> !llvm.ptr
  llvm.func @free(!llvm.ptr)
  llvm.func @main(%n: i64) {
    %a = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
    %b = llvm.call @aligned_alloc(%n, %n) : (i64, i64) -> !llvm.ptr
    llvm.call @free(%a) : (!llvm.ptr) -> ()
    llvm.call @free(%b) : (!llvm.ptr) -> ()
    llvm.return
  }
}
