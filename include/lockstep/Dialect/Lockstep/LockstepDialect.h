//===- LockstepDialect.h - The lockstep dialect -----------------*- C++ -*-===//
#ifndef LOCKSTEP_DIALECT_LOCKSTEP_LOCKSTEPDIALECT_H
#define LOCKSTEP_DIALECT_LOCKSTEP_LOCKSTEPDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "lockstep/Dialect/Lockstep/LockstepDialect.h.inc"

#define GET_OP_CLASSES
#include "lockstep/Dialect/Lockstep/LockstepOps.h.inc"

namespace lockstep {
/// On a lockstep.attention that keeps the graph's own mask: why
/// lockstep-prove-mask did not prove it a causal kind (a string). Passes
/// that need a proven kind quote it in their diagnostics.
inline constexpr char kMaskUnprovenAttr[] = "lockstep.mask_unproven";
/// On a lockstep.attention that keeps the graph's own mask because the mask
/// reads inputs by value (positions, an attention mask): the window (0 for
/// plain causal) that lockstep-prove-mask proved it to be when those inputs
/// hold what the serving runtime feeds them (an i64). The exported graph
/// keeps computing its own mask from whatever it is given; the passes that
/// adopt the serving runtime's inputs (the KV cache, the ragged step) use
/// the proven kind.
inline constexpr char kMaskProvenWindowAttr[] = "lockstep.mask_proven_window";
/// With kMaskProvenWindowAttr: which inputs were given which values (a string).
inline constexpr char kMaskProvenForAttr[] = "lockstep.mask_proven_for";

/// The causal kind of `a` for serving: its own `causal` (and `window`), or
/// the kind lockstep-prove-mask proved for its mask under the serving
/// runtime's inputs. The window (0: plain causal), or nullopt when neither.
inline std::optional<int64_t> servingCausalWindow(ls::AttentionOp a) {
  if (a.getCausal())
    return (int64_t)a.getWindow().value_or(0);
  if (auto w = a->getAttrOfType<mlir::IntegerAttr>(kMaskProvenWindowAttr))
    return w.getInt();
  return std::nullopt;
}

/// servingCausalWindow(a) as the `window` attribute of the op that serves
/// `a`: null for plain causal (or no proven kind).
inline mlir::IntegerAttr servingWindowAttr(mlir::Builder &b, ls::AttentionOp a) {
  int64_t w = servingCausalWindow(a).value_or(0);
  return w ? b.getI64IntegerAttr(w) : mlir::IntegerAttr();
}
} // namespace lockstep

#endif
