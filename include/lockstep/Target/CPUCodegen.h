//===- CPUCodegen.h - From the onnx form to an x86-64 shared object -*- C++ -*-===//
#ifndef LOCKSTEP_TARGET_CPUCODEGEN_H
#define LOCKSTEP_TARGET_CPUCODEGEN_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>
#include <vector>

namespace lockstep {

/// The x86-64 level that artifacts are compiled for (the artifact's
/// `cpu_level` property; the runtime checks the host against it).
inline constexpr const char *kCpuLevel = "x86-64-v3";
/// The level of an artifact's second, optional CPU code (AVX-512: the tiles
/// and panels 16 lanes wide), which the runtime prefers where the host has
/// it. Each output is folded in the same order at both levels: the same
/// bits.
inline constexpr const char *kCpuLevelV4 = "x86-64-v4";

/// Choices of the codegen pipeline.
struct CodegenOptions {
  /// "canonical": every reduction in the contract's chunked form, checked by
  /// lockstep-verify-invariance. "adaptive": the negative control, whose
  /// splits depend on the number of rows; the verifier is off.
  std::string reductionPolicy = "canonical";
  /// The adaptive controls' split (lockstep-canonical-reductions'
  /// adaptive-rows and adaptive-chunk): reductions with fewer rows than
  /// `adaptiveRows` are chunked `adaptiveChunk` wide, the others folded
  /// whole. 0: the pass's defaults. Only with an adaptive policy.
  int64_t adaptiveRows = 0, adaptiveChunk = 0;
  /// Replace recognized attention subgraphs with lockstep.attention
  /// (lockstep-recognize-attention); off: every op is lowered as exported.
  bool recognizeAttention = true;
  /// The form of a decoder's `main`: "ragged" (the serving ABI's step, one
  /// call for all requests of a step: lockstep-ragged-step, an error when
  /// the graph does not allow it), "graph" (the exported graph, which the
  /// runtime runs once per request), or "auto": ragged when the graph is a
  /// decoder with a KV cache that allows it, else the graph (with a warning
  /// for a decoder, saying why).
  std::string stepForm = "auto";
  /// "cpu" (x86-64), "cuda" (NVPTX kernels for `chip`, launched by the host
  /// code; see CUDACodegen.h), or "cpu,cuda" (an artifact with both).
  std::string target = "cpu";
  std::string chip = "sm_90";
  /// The x86-64 level that the CPU pipeline builds for: kCpuLevel, or
  /// kCpuLevelV4 (16-lane tiles and panels).
  std::string cpuLevel = kCpuLevel;
  /// Whether a CPU artifact also carries code for kCpuLevelV4.
  bool cpuV4 = true;
  /// The contractions' GPU tile shapes as text (lockstep/GPU/TileShapes.h;
  /// lockstep-opt --gpu-tiles), for tuning; empty: the compiler's table.
  std::string gpuTiles;
};

/// Adds the passes that put the onnx form (shapes inferred) in the serving
/// form: attention recognized (lockstep-recognize-attention) and, for a
/// decoder without one, a KV cache introduced (lockstep-introduce-kv-cache).
/// Nothing when `options.recognizeAttention` is off. Runs before the serving
/// roles are read, and before the linalg and codegen pipelines.
mlir::LogicalResult buildServingPipeline(mlir::OpPassManager &pm,
                                         const CodegenOptions &options);

/// Puts the serving form's `main` (after buildServingPipeline) in the step
/// form that `options.stepForm` asks for.
mlir::LogicalResult applyStepForm(mlir::ModuleOp module, const CodegenOptions &options);

/// The global the runtime writes the thread count into
/// (Runtime/Backend/Cpu/CpuBackend.h), read by the `adaptive-threads`
/// negative control.
inline constexpr const char *kThreadCountGlobal = "lockstep_thread_count";
/// Declares the module-level symbols the linalg pipeline's passes reference
/// for `options` (the thread count global of the adaptive-threads control);
/// nothing otherwise. Runs before the linalg pipeline.
void declarePipelineGlobals(mlir::ModuleOp module, const CodegenOptions &options);

/// Adds the passes from the onnx form (shapes inferred) to linalg in the
/// canonical reduction form, verified (what `--emit=linalg` prints).
mlir::LogicalResult buildLinalgPipeline(mlir::OpPassManager &pm,
                                        const CodegenOptions &options);

/// Adds the passes from the onnx form (shapes inferred) to the LLVM dialect:
/// lowering to linalg, canonical reductions and their verification, outputs
/// as arguments, bufferization, loops, LLVM, and the `lockstep_entry`
/// wrapper.
mlir::LogicalResult buildCPUCodegenPipeline(mlir::OpPassManager &pm,
                                            const CodegenOptions &options = {});

/// Translates an LLVM-dialect module to LLVM IR, compiles it for x86-64 with
/// no fast-math and no FMA contraction, and links the object into a shared
/// object in process (lld). Returns the shared object's bytes; on failure
/// returns false and sets `error`.
bool emitSharedObject(mlir::ModuleOp module, std::vector<uint8_t> &out,
                      std::string &error, const std::string &cpuLevel = kCpuLevel);

} // namespace lockstep

#endif
