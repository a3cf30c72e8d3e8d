//===- CUDACodegen.h - From the onnx form to NVPTX kernels ------*- C++ -*-===//
//
// `--target=cuda`: the same pipeline as the CPU's up to bufferization (the
// serving form, the ragged step, the canonical reductions and their
// verifier), then every part of the step that touches data is put in a GPU
// kernel (lockstep-map-to-gpu), the kernels are outlined, given exact math
// (lockstep-gpu-exact-math) and compiled to PTX by LLVM's NVPTX backend,
// and every kernel's PTX is checked (lockstep-ptx-gate). The host code that
// is left allocates device memory, computes sizes and launches; it is
// compiled for x86-64 like the CPU's code and calls the runtime's CUDA
// backend (the `mgpu*` launch functions and `lockstep_device_*`
// allocators, see Runtime/Backend/Cuda/CudaBackend.h). The PTX is embedded
// in it.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_TARGET_CUDACODEGEN_H
#define LOCKSTEP_TARGET_CUDACODEGEN_H

#include "lockstep/Target/CPUCodegen.h"

namespace lockstep {

/// The default chip of `--target=cuda`.
inline constexpr const char *kDefaultCudaChip = "sm_90";

/// Parses `--target`: "cpu", "cuda" or "cuda:sm_NN", or both separated by a
/// comma ("cpu,cuda": one artifact with the code of each), into
/// `options.target` ("cpu", "cuda" or "cpu,cuda") and `options.chip`; false
/// (with `error`) for anything else.
bool parseTarget(const std::string &text, CodegenOptions &options, std::string &error);
/// Whether `options.target` includes the CPU, or CUDA.
bool targetsCpu(const CodegenOptions &options);
bool targetsCuda(const CodegenOptions &options);

/// Adds the passes from the onnx form (shapes inferred) to the host's LLVM
/// dialect module with the kernels' PTX in gpu.binary ops, gated.
mlir::LogicalResult buildCUDACodegenPipeline(mlir::OpPassManager &pm,
                                             const CodegenOptions &options);

/// The PTX of every kernel of a module after buildCUDACodegenPipeline, with
/// its gpu.binary's name: what `--emit=ptx` prints.
std::vector<std::pair<std::string, std::string>> kernelPTX(mlir::ModuleOp module);

} // namespace lockstep

#endif
