// RUN: lockstep-opt %s --split-input-file --lockstep-kernels-to-section | FileCheck %s

// Each kernel module's PTX moves to the module's lockstep.kernels dictionary
// (the artifact's kernels section); the object the host code embeds becomes
// the NUL-terminated name the runtime looks it up by.
// CHECK: module attributes {gpu.container_module, lockstep.kernels = {first = "//\0A.visible .entry k(\0A)\0A{\0Aret;\0A}\0A", second = "// two\0A"}}
// CHECK: gpu.binary @first [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "lockstep-kernel:first\00">]
// CHECK: gpu.binary @second [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "lockstep-kernel:second\00">]
// CHECK-NOT: entry
module attributes {gpu.container_module} {
  gpu.binary @first [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "//\0A.visible .entry k(\0A)\0A{\0Aret;\0A}\0A\00">]
  gpu.binary @second [#gpu.object<#nvvm.target<chip = "sm_90">, assembly = "// two\0A">]
}
