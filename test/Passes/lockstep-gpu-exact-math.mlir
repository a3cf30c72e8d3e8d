// RUN: lockstep-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(gpu.module(lockstep-gpu-exact-math))' | FileCheck %s

// The math ops left after lockstep-expand-math become the LLVM intrinsics
// that NVPTX selects as exact instructions (fma.rn, sqrt.rn, ...), never
// the libdevice calls that convert-gpu-to-nvvm would make of them.
// CHECK-LABEL: gpu.func @exact
// CHECK: llvm.call_intrinsic "llvm.fma.f32"(%{{.*}}, %{{.*}}, %{{.*}}) : (f32, f32, f32) -> f32
// CHECK: llvm.call_intrinsic "llvm.sqrt.f32"
// CHECK: llvm.call_intrinsic "llvm.fabs.f32"
// CHECK: llvm.call_intrinsic "llvm.floor.f32"
// CHECK-NOT: math.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @exact(%a: f32, %b: f32, %out: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      %f = math.fma %a, %b, %a : f32
      %s = math.sqrt %f : f32
      %x = math.absf %s : f32
      %y = math.floor %x : f32
      memref.store %y, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }
}

// -----

// A transcendental op that Lockstep's own math did not expand would be a
// libdevice call: refused at the op.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @libdevice(%a: f32, %out: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{'math.exp' in a GPU kernel would become a libdevice call, whose bits are not the CPU's (Lockstep's own math must expand it first)}}
      %e = math.exp %a : f32
      memref.store %e, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }
}

// -----

// Fast-math flags let ptxas contract or approximate: refused.
module attributes {gpu.container_module} {
  gpu.module @k {
    gpu.func @fastmath(%a: f32, %b: f32, %out: memref<1xf32>) kernel {
      %c0 = arith.constant 0 : index
      // expected-error @+1 {{fast-math flags in a GPU kernel: ptxas would fuse or approximate this op, and its bits would not be the CPU's}}
      %m = arith.mulf %a, %b fastmath<contract> : f32
      memref.store %m, %out[%c0] : memref<1xf32>
      gpu.return
    }
  }
}
