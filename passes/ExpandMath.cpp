//===- ExpandMath.cpp - The lockstep-expand-math pass ---------------------===//
//
// Replaces the transcendental math ops of the portable profile by Lockstep's
// own fp32 sequences (lib/Math), so that no libm call or intrinsic decides
// their bits. f16 and bf16 operands are widened to f32 (exactly) and the
// result narrowed back; f64 ops are left as they are (outside the portable
// fp32 profile, they become libm calls).
//
//===----------------------------------------------------------------------===//
#include "lockstep/Math/ScalarMath.h"
#include "lockstep/Passes/Passes.h"

#include "llvm/ADT/TypeSwitch.h"

namespace lockstep {
#define GEN_PASS_DEF_EXPANDMATH
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
namespace lm = lockstep::math;

namespace {

using Builder = std::function<Value(OpBuilder &, Location, ValueRange)>;

/// The sequence for an op, or null when the op is not one this pass expands.
Builder builderFor(Operation *op) {
  auto unary = [](Value (*fn)(OpBuilder &, Location, Value)) -> Builder {
    return [fn](OpBuilder &b, Location l, ValueRange a) { return fn(b, l, a[0]); };
  };
  return llvm::TypeSwitch<Operation *, Builder>(op)
      .Case<math::ExpOp>([&](auto) { return unary(lm::buildExp); })
      .Case<math::LogOp>([&](auto) { return unary(lm::buildLog); })
      .Case<math::TanhOp>([&](auto) { return unary(lm::buildTanh); })
      .Case<math::ErfOp>([&](auto) { return unary(lm::buildErf); })
      .Case<math::SinOp>([&](auto) { return unary(lm::buildSin); })
      .Case<math::CosOp>([&](auto) { return unary(lm::buildCos); })
      .Case<math::RsqrtOp>([&](auto) { return unary(lm::buildRsqrt); })
      .Case<math::PowFOp>([&](auto) -> Builder {
        return [](OpBuilder &b, Location l, ValueRange a) {
          return lm::buildPow(b, l, a[0], a[1]);
        };
      })
      .Default([](Operation *) { return Builder(); });
}

/// f32 for f16/bf16/f32 elements (keeping the shape), else null.
Type computeType(Type t) {
  Type elt = getElementTypeOrSelf(t);
  if (!elt.isF32() && !elt.isF16() && !elt.isBF16())
    return {};
  Type f32 = Float32Type::get(t.getContext());
  if (auto s = dyn_cast<ShapedType>(t))
    return s.clone(f32);
  return f32;
}

struct ExpandMathPass : public lockstep::impl::ExpandMathBase<ExpandMathPass> {
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (op->getDialect() && isa<math::MathDialect>(op->getDialect()) &&
          builderFor(op) && op->getNumResults() == 1)
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      Type t = op->getResult(0).getType();
      Type ct = computeType(t);
      if (!ct)
        continue; // f64: left to libm, outside the portable profile
      if (!lm::isSupportedF32Type(ct)) {
        op->emitError("lockstep-expand-math: expects f16, bf16 or f32 scalars, "
                      "vectors or static tensors; expand math ops on "
                      "dynamically shaped tensors inside a linalg body");
        return signalPassFailure();
      }
      OpBuilder b(op);
      Location loc = op->getLoc();
      SmallVector<Value> args;
      for (Value v : op->getOperands())
        args.push_back(v.getType() == ct ? v : arith::ExtFOp::create(b, loc, ct, v));
      Value r = builderFor(op)(b, loc, args);
      if (t != ct)
        r = arith::TruncFOp::create(b, loc, t, r);
      op->getResult(0).replaceAllUsesWith(r);
      op->erase();
    }
  }
};

} // namespace
