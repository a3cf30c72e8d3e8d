//===- PagedKernelIO.cpp - What a kernel of lockstep.paged_attention reads ===//
#include "lockstep/Reductions/PagedKernelIO.h"
#include "lockstep/Reductions/Chunking.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace lockstep;

namespace {
/// [1, H, T, D] <-> [1, T, H, D].
constexpr int64_t kSwapHeadsAndTokens[] = {0, 2, 1, 3};
} // namespace

PagedHeads::PagedHeads(ls::PagedAttentionOp op) {
  auto qt = op.getQuery().getType();
  H = qt.getDimSize(1);
  D = qt.getDimSize(3);
  Hk = op.getKey().getType().getDimSize(1);
  G = H / Hk;
  Dv = op.getValue().getType().getDimSize(3);
}

PagedKernelIO::PagedKernelIO(RewriterBase &rw, ls::PagedAttentionOp op, SharedRequest &shared,
                             int64_t width, bool keysRowMajor)
    : rw(rw), op(op), loc(op.getLoc()) {
  Operation *def = shared.map ? shared.map.getDefiningOp() : nullptr;
  bool reuse = def && def->getBlock() == op->getBlock() && def->isBeforeInBlock(op) &&
               shared.positions == op.getPositions() && shared.seqStarts == op.getSeqStarts();
  PagedWrites w = writePagedRows(rw, op, reuse ? shared.map : Value());
  shared = {w.request, op.getPositions(), op.getSeqStarts()};
  tokens = tensor::DimOp::create(rw, loc, op.getQuery(), 2);
  blockSize = tensor::DimOp::create(rw, loc, op.getKeyPool(), 1);
  Value mb = tensor::DimOp::create(rw, loc, op.getBlockTables(), 1);
  keys = arith::MulIOp::create(rw, loc, mb, blockSize);
  chunks = arith::CeilDivUIOp::create(rw, loc, keys,
                                      arith::ConstantIndexOp::create(rw, loc, width));
  in.q = read(op.getQuery());
  in.keys = read(w.keyPool, keysRowMajor);
  in.values = memref::CollapseShapeOp::create(
      rw, loc, read(w.valuePool, /*rowMajor=*/true),
      ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
  in.positions = read(op.getPositions());
  in.request = read(w.request);
  in.tables = read(op.getBlockTables());
  if (op.getScale())
    in.scale = read(op.getScale());
  if (op.getKeyScale())
    in.keyScale = read(op.getKeyScale());
  resultType = cast<RankedTensorType>(op.getResult().getType());
  if (op->hasOneUse())
    if (auto tr = dyn_cast<linalg::TransposeOp>(*op->getUsers().begin()))
      if (tr.getPermutation() == ArrayRef<int64_t>(kSwapHeadsAndTokens) &&
          tr.getInput() == op.getResult())
        outTranspose = tr;
  if (outTranspose)
    resultType = cast<RankedTensorType>(outTranspose.getResult()[0].getType());
  auto outType = MemRefType::get(resultType.getShape(), resultType.getElementType());
  SmallVector<Value> dyn;
  for (unsigned d = 0; d < resultType.getRank(); ++d)
    if (resultType.isDynamicDim(d))
      dyn.push_back(tensor::DimOp::create(rw, loc, op.getQuery(),
                                          outTranspose ? kSwapHeadsAndTokens[d] : d));
  out = memref::AllocOp::create(rw, loc, outType, dyn);
}

Value PagedKernelIO::read(Value t, bool rowMajor) {
  auto tt = cast<RankedTensorType>(t.getType());
  Type type = rowMajor ? MemRefType::get(tt.getShape(), tt.getElementType())
                       : bufferization::getMemRefTypeWithFullyDynamicLayout(tt);
  return bufferization::ToBufferOp::create(rw, loc, type, t, /*read_only=*/true);
}

void PagedKernelIO::replace() {
  Value y = bufferization::ToTensorOp::create(rw, loc, resultType, out, /*restrict=*/true,
                                              /*writable=*/true);
  if (outTranspose) {
    rw.replaceOp(outTranspose, y);
    rw.eraseOp(op);
  } else {
    rw.replaceOp(op, y);
  }
}
