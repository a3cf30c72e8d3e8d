// RUN: lockstep-opt %s --split-input-file --verify-diagnostics --lockstep-ptx-gate | FileCheck %s

// The PTX gate reads every kernel's PTX (gpu.binary, format isa) and refuses
// each kind of leak of ../shared/GPU.md, at the launch of the kernel (its
// ONNX node in a compiled model), naming the kernel and the line. First, PTX
// that is exact:
// every f32 add, mul, fma, div and sqrt in its .rn form.
// CHECK-LABEL: gpu.binary @clean
module attributes {gpu.container_module} {
  gpu.binary @clean [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Aadd.rn.f32 %r3, %r1, %r2;\0Amul.rn.f32 %r4, %r3, %r2; fma.rn.f32 %r5, %r4, %r3, %r2;\0Adiv.rn.f32 %r6, %r5, %r4;\0Asqrt.rn.f32 %r7, %r6;\0Amax.NaN.f32 %r8, %r7, %r6;\0Aret;\0A}\0A">]
}

// -----

// An unrounded multiply: ptxas fuses it with an add into an FFMA.
module attributes {gpu.container_module} {
  gpu.binary @mul_no_rn [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Amul.f32 %r3, %r1, %r2;\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'mul_no_rn'), PTX line 5 `mul.f32 %r3, %r1, %r2`: floating-point 'mul' without .rn (ptxas may fuse or approximate it)}}
    gpu.launch_func @mul_no_rn::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// An unrounded add, likewise.
module attributes {gpu.container_module} {
  gpu.binary @add_no_rn [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Aadd.f32 %r3, %r1, %r2;\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'add_no_rn'), PTX line 5 `add.f32 %r3, %r1, %r2`: floating-point 'add' without .rn}}
    gpu.launch_func @add_no_rn::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// div.full is not correctly rounded.
module attributes {gpu.container_module} {
  gpu.binary @div_full [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Adiv.full.f32 %r3, %r1, %r2;\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'div_full'), PTX line 5 `div.full.f32 %r3, %r1, %r2`: floating-point 'div' without .rn}}
    gpu.launch_func @div_full::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// What libdevice's __nv_sqrtf gives.
module attributes {gpu.container_module} {
  gpu.binary @approx [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Asqrt.approx.f32 %r3, %r1;\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'approx'), PTX line 5 `sqrt.approx.f32 %r3, %r1`: an approximate instruction}}
    gpu.launch_func @approx::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// Flushed subnormals.
module attributes {gpu.container_module} {
  gpu.binary @ftz [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Aadd.rn.ftz.f32 %r3, %r1, %r2;\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'ftz'), PTX line 5 `add.rn.ftz.f32 %r3, %r1, %r2`: subnormals flushed to zero (.ftz)}}
    gpu.launch_func @ftz::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// A call into libdevice.
module attributes {gpu.container_module} {
  gpu.binary @call [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Acall.uni (%r3), __nv_expf, (%r1);\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'call'), PTX line 5 `call.uni (%r3), __nv_expf, (%r1)`: a call (libdevice or another function whose bits are not the CPU's)}}
    gpu.launch_func @call::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// An unresolved libdevice declaration (what a compile without the toolkit leaves).
module attributes {gpu.container_module} {
  gpu.binary @extern [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0A.extern .func (.param .b32 r) __nv_expf (.param .b32 x);\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'extern'), PTX line 5 `.extern .func (.param .b32 r) __nv_expf (.param .b32 x)`: an external declaration}}
    gpu.launch_func @extern::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// A tensor-core MMA.
module attributes {gpu.container_module} {
  gpu.binary @mma [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Amma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%r1}, {%r2}, {%r3}, {%r4};\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'mma'), PTX line 5 `mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%r1}, {%r2}, {%r3}, {%r4}`: a tensor-core instruction (not in the portable profile)}}
    gpu.launch_func @mma::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// Hopper's warpgroup MMA.
module attributes {gpu.container_module} {
  gpu.binary @wgmma [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Awgmma.fence.sync.aligned;\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'wgmma'), PTX line 5 `wgmma.fence.sync.aligned`: a tensor-core instruction (not in the portable profile)}}
    gpu.launch_func @wgmma::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}

// -----

// Half-precision arithmetic.
module attributes {gpu.container_module} {
  gpu.binary @half [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Aadd.rn.f16 %h3, %h1, %h2;\0Aret;\0A}\0A">]
  func.func @main() {
    %c1 = arith.constant 1 : index
    // expected-error @+1 {{PTX gate: kernel 'k' (module 'half'), PTX line 5 `add.rn.f16 %h3, %h1, %h2`: 16-bit or tf32 floating-point arithmetic (not in the portable profile)}}
    gpu.launch_func @half::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1)
    return
  }
}
