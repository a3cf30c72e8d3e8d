// RUN: lockstep-opt %s --lockstep-launch-plan | FileCheck %s

// Each launch site, in program order, becomes an entry of the plan: its
// kernel, its sizes (-1 where the host code computes them) and its ONNX node.
// CHECK: lockstep.launch_plan = [
// CHECK-SAME: {block = array<i64: 256, 1, 1>, function = "scale", grid = array<i64: -1, 1, 1>, module = "kernels", node = "/layers.0/Mul_(Mul)", smem = 0 : i64}
// CHECK-SAME: {block = array<i64: 32, 4, 1>, function = "scale", grid = array<i64: 8, 2, 1>, module = "kernels", node = "-", smem = -1 : i64}
// CHECK-SAME: {block = array<i64: 64, 1, 1>, function = "other", grid = array<i64: 1, 1, 1>, module = "more", node = "sum_(ReduceSum)", smem = 128 : i64}
// CHECK-SAME: ]
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @scale(%arg0: memref<?xf32>) kernel {
      gpu.return
    }
  }
  gpu.module @more {
    gpu.func @other(%arg0: memref<?xf32>) kernel {
      gpu.return
    }
  }
  func.func @main(%buf: memref<?xf32>, %n: index, %smem: i32) {
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : index
    %c32 = arith.constant 32 : index
    %c64 = arith.constant 64 : index
    %c256 = arith.constant 256 : index
    %c128 = arith.constant 128 : i32
    gpu.launch_func @kernels::@scale blocks in (%n, %c1, %c1) threads in (%c256, %c1, %c1)
        args(%buf : memref<?xf32>) loc("/layers.0/Mul (Mul)")
    gpu.launch_func @kernels::@scale blocks in (%c8, %c2, %c1) threads in (%c32, %c4, %c1)
        dynamic_shared_memory_size %smem args(%buf : memref<?xf32>)
    gpu.launch_func @more::@other blocks in (%c1, %c1, %c1) threads in (%c64, %c1, %c1)
        dynamic_shared_memory_size %c128 args(%buf : memref<?xf32>) loc(fused["sum (ReduceSum)", "f.onnx":1:1])
    return
  }
}
