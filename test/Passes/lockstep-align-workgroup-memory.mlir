// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(lockstep-align-workgroup-memory))' | FileCheck %s
// RUN: lockstep-opt %s --split-input-file --pass-pipeline='builtin.module(gpu.module(lockstep-align-workgroup-memory, convert-gpu-to-nvvm))' | FileCheck %s --check-prefix=NVVM

// Every workgroup attribution of a kernel gets `llvm.align = 16`, so that
// its `.shared` array is 16-byte aligned for vector<4xf32> accesses
// (convert-gpu-to-nvvm otherwise aligns it only to its element); a larger
// alignment is kept.
// CHECK-LABEL: gpu.func @tiles
// CHECK-SAME: workgroup(%{{.*}} : memref<2x8x132xf32, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<8x65xbf16, #gpu.address_space<workgroup>> {llvm.align = 16 : i64}, %{{.*}} : memref<4xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64})
// NVVM: llvm.mlir.global internal @__wg_tiles_0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<2112 x f32>
// NVVM: llvm.mlir.global internal @__wg_tiles_1() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<520 x bf16>
// NVVM: llvm.mlir.global internal @__wg_tiles_2() {addr_space = 3 : i32, alignment = 64 : i64} : !llvm.array<4 x f32>
gpu.module @kernels {
  gpu.func @tiles(%out: memref<4xf32>)
      workgroup(%a : memref<2x8x132xf32, #gpu.address_space<workgroup>>,
                %b : memref<8x65xbf16, #gpu.address_space<workgroup>>,
                %c : memref<4xf32, #gpu.address_space<workgroup>> {llvm.align = 64 : i64}) kernel {
    %c0 = arith.constant 0 : index
    %v = vector.load %a[%c0, %c0, %c0] {alignment = 16 : i64} : memref<2x8x132xf32, #gpu.address_space<workgroup>>, vector<4xf32>
    vector.store %v, %out[%c0] : memref<4xf32>, vector<4xf32>
    gpu.return
  }
}
