//===- LockstepDialect.cpp - The lockstep dialect -------------------------===//
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace lockstep::ls;

#include "lockstep/Dialect/Lockstep/LockstepDialect.cpp.inc"

#define GET_OP_CLASSES
#include "lockstep/Dialect/Lockstep/LockstepOps.cpp.inc"

void LockstepDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "lockstep/Dialect/Lockstep/LockstepOps.cpp.inc"
      >();
}

namespace {

/// Two sizes that may be dynamic agree unless both are static and differ.
bool agree(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

bool isScalar(RankedTensorType t) {
  return llvm::all_of(t.getShape(), [](int64_t d) { return d == 1; });
}

} // namespace

/// A window of at least one position; a softcap that is positive and finite.
static LogicalResult verifyWindowSoftcap(Operation *op, std::optional<uint64_t> window,
                                         std::optional<APFloat> softcap) {
  if (window && (int64_t)*window < 1)
    return op->emitOpError("window must be at least 1 position");
  if (softcap && (!softcap->isFiniteNonZero() || softcap->isNegative()))
    return op->emitOpError("softcap must be positive and finite");
  return success();
}

LogicalResult AttentionOp::verify() {
  auto q = getQuery().getType(), k = getKey().getType(), v = getValue().getType(),
       o = getOutput().getType();
  if (q.getRank() != 4 || k.getRank() != 4 || v.getRank() != 4 || o.getRank() != 4)
    return emitOpError("query, key, value and result must be of rank 4 "
                       "[batch, heads, positions, head size]");
  Type elt = q.getElementType();
  if (!isa<FloatType>(elt) || k.getElementType() != elt ||
      v.getElementType() != elt || o.getElementType() != elt)
    return emitOpError("query, key, value and result must share one "
                       "floating-point element type");
  auto qs = q.getShape(), ks = k.getShape(), vs = v.getShape(), os = o.getShape();
  if (!agree(qs[3], ks[3]))
    return emitOpError("query and key head sizes differ (") << qs[3] << " vs " << ks[3] << ")";
  if (!agree(ks[1], vs[1]) || !agree(ks[2], vs[2]))
    return emitOpError("key and value disagree in heads or positions");
  if (ShapedType::isDynamic(qs[1]) || ShapedType::isDynamic(ks[1]) ||
      ks[1] <= 0 || qs[1] % ks[1] != 0)
    return emitOpError("query heads (") << qs[1]
           << ") must be a static multiple of key heads (" << ks[1] << ")";
  if (!agree(qs[0], ks[0]) || !agree(qs[0], vs[0]) || !agree(os[0], qs[0]) ||
      !agree(os[1], qs[1]) || !agree(os[2], qs[2]) || !agree(os[3], vs[3]))
    return emitOpError("result must be [batch, query heads, query positions, "
                       "value head size]");
  if (ShapedType::isDynamic(qs[3]) || ShapedType::isDynamic(vs[3]))
    return emitOpError("head sizes must be static");
  if (Value m = getMask()) {
    auto mt = cast<RankedTensorType>(m.getType());
    if (mt.getRank() > 4)
      return emitOpError("mask of rank ") << mt.getRank() << " does not broadcast to rank 4";
    bool boolean = mt.getElementType().isInteger(1);
    if (boolean != (getFill() != nullptr))
      return emitOpError("a boolean mask needs a fill value, and only it");
    if (!boolean && mt.getElementType() != elt)
      return emitOpError("an additive mask must have the query's element type");
  } else if (getFill()) {
    return emitOpError("a fill value without a mask");
  }
  for (Value s : {getFill(), getKeyScale(), getScale()})
    if (s) {
      auto st = cast<RankedTensorType>(s.getType());
      if (!isScalar(st) || st.getElementType() != elt)
        return emitOpError("fill, key_scale and scale must be single elements "
                           "of the query's element type");
    }
  if (getCausal() && getMask())
    return emitOpError("a causal attention takes no mask");
  if (getWindow() && !getCausal())
    return emitOpError("a window needs causal");
  if (failed(verifyWindowSoftcap(*this, getWindow(), getSoftcap())))
    return failure();
  if (getScaleDivides() && !getScale())
    return emitOpError("scale_divides without a scale");
  return success();
}

LogicalResult PagedAttentionOp::verify() {
  auto q = getQuery().getType(), k = getKey().getType(), v = getValue().getType(),
       kp = getKeyPool().getType(), vp = getValuePool().getType(),
       o = getOutput().getType();
  for (RankedTensorType t : {q, k, v, kp, vp, o})
    if (t.getRank() != 4)
      return emitOpError("query, key, value, the pools and the result must be of rank 4");
  Type elt = q.getElementType();
  for (RankedTensorType t : {k, v, kp, vp, o})
    if (!isa<FloatType>(elt) || t.getElementType() != elt)
      return emitOpError("query, key, value, the pools and the result must share "
                         "one floating-point element type");
  auto qs = q.getShape(), ks = k.getShape(), vs = v.getShape(), kps = kp.getShape(),
       vps = vp.getShape(), os = o.getShape();
  for (int64_t b : {qs[0], ks[0], vs[0], os[0]})
    if (!agree(b, 1))
      return emitOpError("the batch dim of a ragged step must be 1");
  if (ShapedType::isDynamic(qs[1]) || ShapedType::isDynamic(ks[1]) || ks[1] <= 0 ||
      qs[1] % ks[1] != 0)
    return emitOpError("query heads (") << qs[1]
           << ") must be a static multiple of key heads (" << ks[1] << ")";
  if (ShapedType::isDynamic(qs[3]) || ShapedType::isDynamic(vs[3]))
    return emitOpError("head sizes must be static");
  if (!agree(qs[3], ks[3]) || !agree(ks[1], vs[1]) || !agree(qs[2], ks[2]) ||
      !agree(qs[2], vs[2]))
    return emitOpError("key and value must be [1, key heads, tokens, head size] "
                       "of the query's tokens");
  if (!agree(kps[0], vps[0]) || !agree(kps[1], vps[1]) || !agree(kps[2], ks[1]) ||
      !agree(vps[2], vs[1]) || !agree(kps[3], ks[3]) || !agree(vps[3], vs[3]))
    return emitOpError("the pools must be [blocks, block size, key heads, head size] "
                       "of the key and value");
  if (!agree(os[1], qs[1]) || !agree(os[2], qs[2]) || !agree(os[3], vs[3]))
    return emitOpError("result must be [1, query heads, tokens, value head size]");
  auto pos = getPositions().getType(), starts = getSeqStarts().getType(),
       tables = getBlockTables().getType();
  if (pos.getRank() != 1 || !pos.getElementType().isInteger(64) || !agree(pos.getDimSize(0), qs[2]))
    return emitOpError("positions must be i64 [tokens]");
  if (starts.getRank() != 1 || !starts.getElementType().isInteger(64))
    return emitOpError("seq_starts must be i64 [requests + 1]");
  if (tables.getRank() != 2 || !tables.getElementType().isInteger(32))
    return emitOpError("block_tables must be i32 [requests, blocks per request]");
  for (Value s : {getKeyScale(), getScale()})
    if (s) {
      auto st = cast<RankedTensorType>(s.getType());
      if (!isScalar(st) || st.getElementType() != elt)
        return emitOpError("key_scale and scale must be single elements of the "
                           "query's element type");
    }
  if (failed(verifyWindowSoftcap(*this, getWindow(), getSoftcap())))
    return failure();
  if (getScaleDivides() && !getScale())
    return emitOpError("scale_divides without a scale");
  return success();
}
