//===- SymbolBinding.h - Symbol values from actual input shapes -*- C++ -*-===//
//
// An artifact's dims are DimExprs over symbols (batch, past, seq). At run
// time the value of each symbol is read off an input dim that is that symbol
// alone; every other input dim is then checked against its expression, and
// output dims are evaluated from the values.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SYMBOLBINDING_H
#define LOCKSTEP_RUNTIME_SYMBOLBINDING_H

#include "lockstep/Artifact/ArtifactMeta.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace lockstep::rt {

using SymbolValues = std::map<std::string, int64_t>;

/// `shapes[i]` is the actual shape of `inputs[i]`, of the same rank. Binds
/// the symbols and checks every input dim. On failure returns false and sets
/// `error` naming the input, the dim, the expression and the values.
bool bindSymbols(const std::vector<TensorSpec> &inputs,
                 const std::vector<std::vector<int64_t>> &shapes,
                 SymbolValues &values, std::string &error);

/// Evaluates the dims of `spec`; refuses a negative or overflowing dim, and
/// a shape whose element count overflows.
bool evaluateShape(const TensorSpec &spec, const SymbolValues &values,
                   std::vector<int64_t> &shape, std::string &error);

} // namespace lockstep::rt

#endif
