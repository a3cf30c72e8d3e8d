//===- LowerCopies.cpp - The lockstep-lower-copies pass -------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace lockstep {
#define GEN_PASS_DEF_LOWERCOPIES
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

struct LowerCopiesPass
    : public lockstep::impl::LowerCopiesBase<LowerCopiesPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp c) { copies.push_back(c); });
    for (memref::CopyOp c : copies) {
      OpBuilder b(c);
      linalg::CopyOp::create(b, c.getLoc(), c.getSource(), c.getTarget());
      c.erase();
    }
  }
};

} // namespace
