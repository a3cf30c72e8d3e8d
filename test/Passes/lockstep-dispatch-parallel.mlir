// RUN: lockstep-opt %s --lockstep-dispatch-parallel | FileCheck %s

// The call of a work function stores its captured arguments in a stack
// context and goes through the helper, which uses the runtime's pool when
// one is set and otherwise runs the whole range here.
// CHECK-LABEL: llvm.func @caller
// CHECK: %[[CTX:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, f32)>
// CHECK: llvm.store %arg0
// CHECK: llvm.store %arg1
// CHECK: %[[T:.*]] = llvm.mlir.addressof @lockstep_par_0_tramp
// CHECK: llvm.call @lockstep_parallel_for(%[[T]], %[[CTX]], %{{.*}}, %arg2)
// CHECK-NOT: llvm.call @lockstep_par_0(
// CHECK: llvm.mlir.global external @lockstep_parallel_for_impl() {{.*}} : !llvm.ptr
// CHECK: llvm.mlir.global external @lockstep_thread_pool() {{.*}} : !llvm.ptr
// CHECK-LABEL: llvm.func internal @lockstep_parallel_for(
// CHECK: llvm.icmp "eq"
// CHECK: llvm.cond_br
// CHECK-LABEL: llvm.func internal @lockstep_par_0_tramp(
// CHECK: llvm.getelementptr %arg0[0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(ptr, f32)>
// CHECK: llvm.load {{.*}} -> !llvm.ptr
// CHECK: llvm.getelementptr %arg0[0, 1]
// CHECK: llvm.load {{.*}} -> f32
// CHECK: llvm.call @lockstep_par_0(%arg1, %arg2,
module {
  llvm.func @lockstep_par_0(%begin: i64, %end: i64, %p: !llvm.ptr, %x: f32) {
    llvm.return
  }
  llvm.func @caller(%p: !llvm.ptr, %x: f32, %n: i64) {
    %c0 = llvm.mlir.constant(0 : i64) : i64
    llvm.call @lockstep_par_0(%c0, %n, %p, %x) : (i64, i64, !llvm.ptr, f32) -> ()
    llvm.return
  }
}
