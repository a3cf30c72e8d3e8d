//===- Exec.h - Running an artifact's graph once ----------------*- C++ -*-===//
//
// The engine of `lockstep-run exec`: no serving, no KV cache, one call of the
// entry point with the graph's own inputs and outputs.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_EXEC_H
#define LOCKSTEP_RUNTIME_EXEC_H

#include "Artifact.h"
#include "CpuBackend.h"
#include "Npy.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lockstep::rt {

/// Outputs in metadata order.
using NamedArrays = std::vector<std::pair<std::string, NpyArray>>;

/// Checks `inputs` against the artifact (every input given and no other, each
/// with the .npy dtype of dtypeToNpy() and the right rank), derives the
/// symbol values from the input shapes and checks every input dim against
/// its expression, allocates the outputs at the sizes their dims evaluate
/// to, and calls the entry of `module` (the artifact's code) once. On failure
/// returns false and sets `error` to one line.
bool runGraph(const LoadedArtifact &artifact, const CpuModule &module,
              const std::map<std::string, NpyArray> &inputs,
              NamedArrays &outputs, std::string &error);

} // namespace lockstep::rt

#endif
