//===- Kernels.h - A CUDA artifact's kernels and launch plan ----*- C++ -*-===//
//
// Two sections of a CUDA artifact (see Artifact.h), written by the compiler
// and read by the runtime's CUDA backend:
//
//   - the kernels section: per kernel module its name and PTX. The host code
//     names each module it loads ("lockstep-kernel:NAME").
//   - the launch plan: one line per launch site of the host code, in program
//     order:
//
//       launch MODULE FUNCTION grid X Y Z block X Y Z smem BYTES node NODE
//
//     where a grid or block size is a number, or `?` where it depends on the
//     step's dims (T, the number of new tokens) and the host code computes it
//     at the launch; NODE is the ONNX node the kernel computes (`-` when the
//     compiler does not know it). The runtime loads every module and resolves
//     every kernel of the plan when it loads the artifact, and refuses a
//     launch of a kernel the plan does not name.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_ARTIFACT_KERNELS_H
#define LOCKSTEP_ARTIFACT_KERNELS_H

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace lockstep::rt {

/// A kernel module of the kernels section.
struct KernelText {
  std::string name, ptx; // ptx without its terminating NUL
};
/// The bytes of the kernels section holding `kernels`.
std::string serializeKernels(const std::vector<KernelText> &kernels);
/// Parses a kernels section; false with `error` on malformed bytes.
bool parseKernels(const uint8_t *data, uint64_t size, std::vector<KernelText> &out,
                  std::string &error);
/// The prefix of a kernel module's name in a CUDA artifact's host object.
inline constexpr const char *kKernelKeyPrefix = "lockstep-kernel:";

/// A launch site of a CUDA artifact's host code.
struct KernelLaunch {
  /// A grid or block size the host code computes at the launch.
  static constexpr int64_t kDynamic = -1;
  std::string module, function;
  std::array<int64_t, 3> grid{1, 1, 1}, block{1, 1, 1};
  int64_t sharedBytes = 0; // kDynamic when computed at the launch
  std::string node = "-";
};
/// The text of a launch plan (one line per launch, see above).
std::string serializeLaunchPlan(const std::vector<KernelLaunch> &plan);
/// Parses a launch plan; false with `error` naming the line on malformed
/// text (names must be non-empty and without spaces, sizes positive or `?`).
bool parseLaunchPlan(const uint8_t *data, uint64_t size, std::vector<KernelLaunch> &out,
                     std::string &error);

} // namespace lockstep::rt

#endif
