//===- ServingRoles.h - What each input and output of a decoder is -*- C++ -*-===//
//
// The serving runtime feeds a decoder graph token ids, positions and its KV
// cache, and reads back logits and the grown cache. Which graph input or
// output plays which part is found from the graph's structure, never from
// names:
//   - token ids: the integer input that indexes (Gather) an embedding weight;
//   - the cache: each output that is a Concat of a graph input (its past)
//     with values computed in the graph, along the past's position axis;
//   - positions: another integer input of the token ids' dims;
//   - an attention mask: an input dimensioned [batch, past + seq];
//   - logits: the one other output, [batch, seq, vocab].
// The artifact records them as `serving.*` properties (input and output
// indices), which `lockstep-run generate` reads.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_SERVING_SERVINGROLES_H
#define LOCKSTEP_SERVING_SERVINGROLES_H

#include "lockstep/Artifact/DimExpr.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lockstep {

struct ServingRoles {
  unsigned tokenIds = 0;                  // input index
  std::optional<unsigned> positions;      // input index
  std::optional<unsigned> attentionMask;  // input index
  unsigned logits = 0;                    // output index
  struct Stream {
    unsigned past;    // input index, [batch, ..., past, ...]
    unsigned present; // output index, the past concatenated with the new rows
    unsigned axis;    // the position axis of both
  };
  std::vector<Stream> cache;
  std::string batch, seq, past; // the symbols
  /// The longest context (prompt + generated tokens) that the graph's
  /// fixed-size tables allow, and the node that sets it (findContextLimit).
  std::optional<int64_t> maxContext;
  std::string maxContextAt;
};

/// The roles of `main`'s inputs and outputs (after onnx-infer-shapes), or
/// nullopt with `why` set when the graph is not a decoder with a KV cache
/// that the serving runtime can drive.
std::optional<ServingRoles> findServingRoles(mlir::func::FuncOp main,
                                             std::string &why);

/// The symbolic dims of a value's type (nullopt when unknown).
std::optional<llvm::SmallVector<DimExpr>> dimsOf(mlir::Value v);

/// Sets `roles.maxContext` from the fixed-size tables that `main` reads by
/// position (see ContextLimit.cpp); leaves it unset when there are none.
void findContextLimit(mlir::func::FuncOp main, ServingRoles &roles);

/// The roles as artifact properties (`serving.token_ids = 0`, ...).
std::vector<std::pair<std::string, std::string>>
servingProperties(const ServingRoles &roles);

/// Whether `main` is a ragged step (made by lockstep-ragged-step).
bool isRaggedStep(mlir::func::FuncOp main);

/// The `serving.*` properties of a ragged step, from the `lockstep.role`
/// attributes of its arguments and results (`serving.step = ragged`, input
/// and output indices, `serving.cache.<s> = "POOL NEW"`); nullopt with `why`
/// when a role is missing.
std::optional<std::vector<std::pair<std::string, std::string>>>
raggedStepProperties(mlir::func::FuncOp main, std::string &why);

} // namespace lockstep

#endif
