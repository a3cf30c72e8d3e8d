//===- CpuPagedAttention.cpp - The lockstep-cpu-paged-attention pass ------===//
//
// Each lockstep.paged_attention that the kernel can serve becomes its pool
// writes and one parallel loop (lockstep/CPU/PagedAttentionKernel.h); the
// others are left to lockstep-canonical-reductions' expansion.
//
//===----------------------------------------------------------------------===//
#include "lockstep/CPU/PagedAttentionKernel.h"
#include "lockstep/Passes/Passes.h"

namespace lockstep {
#define GEN_PASS_DEF_CPUPAGEDATTENTION
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;

namespace {

struct CpuPagedAttentionPass
    : public lockstep::impl::CpuPagedAttentionBase<CpuPagedAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
    if (lanes < 1) {
      getOperation().emitError("lockstep-cpu-paged-attention: lanes must be at least 1");
      return signalPassFailure();
    }
    SmallVector<ls::PagedAttentionOp> ops;
    getOperation().walk([&](ls::PagedAttentionOp op) { ops.push_back(op); });
    IRRewriter rw(&getContext());
    SharedRequest shared; // one token -> request map for all layers
    for (ls::PagedAttentionOp op : ops) {
      if (!pagedAttentionKernelRefusal(op, chunk, maxChunk).empty()) {
        ++numLeft;
        continue;
      }
      rw.setInsertionPoint(op);
      buildCpuPagedAttention(rw, op, chunk, lanes, shared);
      ++numKernels;
    }
  }
};

} // namespace
