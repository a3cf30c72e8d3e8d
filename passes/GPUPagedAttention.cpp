//===- GPUPagedAttention.cpp - The lockstep-gpu-paged-attention pass ------===//
//
// Each lockstep.paged_attention that the kernel can serve becomes its pool
// writes and its kernels (lockstep/GPU/PagedAttentionKernel.h); the
// others are left to lockstep-canonical-reductions' expansion.
//
//===----------------------------------------------------------------------===//
#include "lockstep/GPU/PagedAttentionKernel.h"
#include "lockstep/Passes/Passes.h"

namespace lockstep {
#define GEN_PASS_DEF_GPUPAGEDATTENTION
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;

namespace {

struct GPUPagedAttentionPass
    : public lockstep::impl::GPUPagedAttentionBase<GPUPagedAttentionPass> {
  using Base::Base;

  void runOnOperation() override {
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
      buildPagedAttentionKernel(rw, op, chunk, shared);
      ++numKernels;
    }
  }
};

} // namespace
