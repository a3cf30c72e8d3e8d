//===- CpuGatherKernels.cpp - The lockstep-cpu-gather-kernels pass --------===//
//
// Computes each bufferized gather contraction (a generic folding over one
// reduction dim with `math.fma` into its output, whose body loads one of
// its factors from a memref at an index read from an input: the paged
// attention's scores and value products) a vector of outputs at a time:
// the lanes run over the output's last, contiguous, dim, each lane one
// output, and the body is applied to all lanes at once, op by op (a factor
// read along the reduction dim, as a key row is, is loaded 8 steps at a time
// and transposed into one vector of the lanes per step). So each
// output still folds with the generic's own body, over the reduction dim in
// increasing order, from its own value, in one thread; only which outputs
// are computed together changes (see the pass's description in Passes.td).
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"
#include "lockstep/CPU/ContractionKernels.h"

#include "mlir/Dialect/Linalg/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace lockstep {
#define GEN_PASS_DEF_CPUGATHERKERNELS
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using lockstep::indicesOf;
using lockstep::lastIs;
using lockstep::unitLastStride;
using lockstep::cstIndex;
using lockstep::kCpuLanes;

namespace {


/// Whether `v` is `linalg.index dim`.
bool isIndexOf(Value v, unsigned dim) {
  auto i = v.getDefiningOp<linalg::IndexOp>();
  return i && i.getDim() == dim;
}

/// A matched gather contraction.
struct Gather {
  linalg::GenericOp op;
  unsigned lane = 0;            // the output's last index: one output per lane
  unsigned red = 0;             // the reduction dim
  SmallVector<unsigned> outer;  // the other (parallel) dims, in loop order
  int64_t vectors = 1;          // vectors of a work item's block of lanes
  DenseSet<Value> varying;      // body values that differ between lanes
  /// Varying loads whose last index is `linalg.index red` (unit stride) and
  /// whose other indices do not depend on red: each lane reads kCpuLanes
  /// consecutive reduction steps as one vector (see Emitter::tile).
  DenseSet<Operation *> rowLoads;
  /// An outer dim whose `shareCount` consecutive points a work item folds
  /// together, sharing the transposed row-load tiles (no row load depends
  /// on it: the query heads of one key head); -1: none.
  int share = -1;
  int64_t shareCount = 1;
};

/// The largest accumulators a work item holds when it shares tiles:
/// shareCount · vectors.
constexpr int64_t kMaxSharedAccumulators = 8;
/// The most points of the shared dim a work item folds together.
constexpr int64_t kMaxShare = 4;

/// Picks `g.share`: when the row loads are tiled, the outer dim of static
/// extent e > 1 on which no row load's buffer or indices depend (through
/// `linalg.index`, or an input read along it), with the most points a work
/// item can take (the largest divisor of e up to kMaxShare, at least 2).
/// Its points then share each tile's loads and transposes.
void chooseShare(Gather &g) {
  linalg::GenericOp op = g.op;
  int64_t red = op.getStaticLoopRanges()[g.red];
  if (g.rowLoads.empty() || ShapedType::isDynamic(red) || red % kCpuLanes != 0)
    return;
  Block *body = op.getBlock();
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  for (unsigned d : g.outer) {
    int64_t e = ranges[d];
    if (ShapedType::isDynamic(e) || e < 2)
      continue;
    int64_t count = 1;
    for (int64_t c = std::min(e, kMaxShare); c >= 2; --c)
      if (e % c == 0) {
        count = c;
        break;
      }
    if (count <= g.shareCount)
      continue;
    DenseSet<Value> dep;
    for (OpOperand *in : op.getDpsInputOperands())
      if (lockstep::readsDim(op.getMatchingIndexingMap(in), d))
        dep.insert(body->getArgument(in->getOperandNumber()));
    bool shared = true;
    for (Operation &o : body->without_terminator()) {
      auto idx = dyn_cast<linalg::IndexOp>(o);
      bool depends = (idx && idx.getDim() == d) ||
                     llvm::any_of(o.getOperands(), [&](Value v) { return dep.contains(v); });
      if (g.rowLoads.contains(&o) && depends) {
        shared = false;
        break;
      }
      if (depends)
        for (Value r : o.getResults())
          dep.insert(r);
    }
    if (shared) {
      g.share = d;
      g.shareCount = count;
    }
  }
  if (g.share >= 0)
    g.vectors = std::max<int64_t>(1, std::min(g.vectors, kMaxSharedAccumulators / g.shareCount));
}

/// Which body values differ between the lanes of `lane`: the output's
/// value, the inputs that read `lane`, `linalg.index lane` and whatever
/// uses one of them. Fails (false) on a body op that cannot run on lanes:
/// one with regions or side effects other than a load, or a varying one
/// that is neither a load nor elementwise-vectorizable.
bool analyse(Gather &g) {
  linalg::GenericOp op = g.op;
  Block *body = op.getBlock();
  for (OpOperand *in : op.getDpsInputOperands())
    if (lockstep::readsDim(op.getMatchingIndexingMap(in), g.lane))
      g.varying.insert(body->getArgument(in->getOperandNumber()));
  g.varying.insert(body->getArguments().back());
  Value outRoot = lockstep::rootOf(op.getDpsInitOperand(0)->get());
  for (Operation &o : body->without_terminator()) {
    if (o.getNumRegions() || o.getNumResults() != 1)
      return false;
    Type t = o.getResult(0).getType();
    if (!t.isIntOrIndexOrFloat())
      return false;
    if (auto idx = dyn_cast<linalg::IndexOp>(o)) {
      if (idx.getDim() == g.lane)
        g.varying.insert(idx);
      continue;
    }
    bool vary = llvm::any_of(o.getOperands(), [&](Value v) { return g.varying.contains(v); });
    if (auto load = dyn_cast<memref::LoadOp>(o)) {
      // A buffer that the generic does not write (no output row feeds a
      // load) and that is defined outside the body.
      if (lockstep::rootOf(load.getMemRef()) == outRoot ||
          load.getMemRef().getParentBlock() == body)
        return false;
    } else if (!isMemoryEffectFree(&o)) {
      return false;
    } else if (vary && (!o.hasTrait<OpTrait::Vectorizable>() ||
                        !(isa<arith::ArithDialect>(o.getDialect()) || isa<math::FmaOp>(o)))) {
      // Only ops whose vector form is exactly the scalar one per lane: arith
      // and the contract's fma (another math op on vectors could lower to
      // another expansion than its scalar form, e.g. an intrinsic vs libm).
      return false;
    }
    for (Value v : o.getOperands())
      if (!v.getType().isIntOrIndexOrFloat() && v.getParentBlock() == body)
        return false;
    if (vary)
      g.varying.insert(o.getResult(0));
  }
  // Values that depend on the reduction step: its index, and inputs read
  // at it.
  DenseSet<Value> perStep;
  for (OpOperand *in : op.getDpsInputOperands())
    if (lockstep::readsDim(op.getMatchingIndexingMap(in), g.red))
      perStep.insert(body->getArgument(in->getOperandNumber()));
  for (Operation &o : body->without_terminator()) {
    auto idx = dyn_cast<linalg::IndexOp>(o);
    if ((idx && idx.getDim() == g.red) ||
        llvm::any_of(o.getOperands(), [&](Value v) { return perStep.contains(v); }))
      perStep.insert(o.getResult(0));
    auto load = dyn_cast<memref::LoadOp>(o);
    if (!load || !g.varying.contains(load.getResult()) || !load.getType().isF32() ||
        !unitLastStride(load.getMemRef()))
      continue;
    ValueRange ids = load.getIndices();
    if (isIndexOf(ids.back(), g.red) &&
        llvm::none_of(ids.drop_back(), [&](Value v) { return perStep.contains(v); }))
      g.rowLoads.insert(load);
  }
  return g.varying.contains(body->getTerminator()->getOperand(0));
}

/// `op` as a gather contraction: pure buffer semantics, one output of f32
/// and any inputs; one reduction dim, the others parallel; projected
/// permutation maps; the output written at every parallel point (one
/// output per point), not at the reduction dim, its last index a dim of
/// unit stride (the lanes) of at least kCpuLanes when static; a body whose
/// yield is `math.fma(x, y, out)` with the output's value used there only,
/// that loads from a buffer at an index computed from an input (the
/// gather), and that `analyse` accepts; and no input sharing the output's
/// buffer.
std::optional<Gather> match(linalg::GenericOp op, int64_t vectors) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInits() != 1 || op->getNumResults() != 0 ||
      op.getNumDpsInputs() < 1)
    return std::nullopt;
  Gather g;
  g.op = op;
  SmallVector<utils::IteratorType> iters = op.getIteratorTypesArray();
  std::optional<unsigned> red;
  for (unsigned d = 0; d < iters.size(); ++d) {
    if (linalg::isParallelIterator(iters[d]))
      continue;
    if (red || !linalg::isReductionIterator(iters[d]))
      return std::nullopt;
    red = d;
  }
  if (!red)
    return std::nullopt;
  g.red = *red;
  for (AffineMap m : op.getIndexingMapsArray())
    if (!m.isProjectedPermutation(/*allowZeroInResults=*/true))
      return std::nullopt;
  OpOperand *init = op.getDpsInitOperand(0);
  AffineMap outMap = op.getMatchingIndexingMap(init);
  Value out = init->get();
  if (!cast<MemRefType>(out.getType()).getElementType().isF32() || !unitLastStride(out) ||
      lockstep::readsDim(outMap, g.red))
    return std::nullopt;
  auto last = dyn_cast<AffineDimExpr>(outMap.getResults().back());
  if (!last)
    return std::nullopt;
  g.lane = last.getPosition();
  for (unsigned d = 0; d < iters.size(); ++d) {
    if (d == g.red)
      continue;
    if (!lockstep::readsDim(outMap, d))
      return std::nullopt; // two points would write one output
    if (d != g.lane)
      g.outer.push_back(d);
  }
  int64_t extent = op.getStaticLoopRanges()[g.lane];
  if (!ShapedType::isDynamic(extent) && extent < kCpuLanes)
    return std::nullopt;
  g.vectors = ShapedType::isDynamic(extent) ? vectors : std::min(vectors, extent / kCpuLanes);
  Value outRoot = lockstep::rootOf(out);
  for (OpOperand *in : op.getDpsInputOperands())
    if (isa<MemRefType>(in->get().getType()) && lockstep::rootOf(in->get()) == outRoot)
      return std::nullopt;
  // The fold: yield fma(x, y, out), the output's value used there only.
  Block *body = op.getBlock();
  BlockArgument acc = body->getArguments().back();
  auto fma = body->getTerminator()->getOperand(0).getDefiningOp<math::FmaOp>();
  if (!fma || fma.getC() != acc || !acc.hasOneUse())
    return std::nullopt;
  // The gather: a load at an index that depends on an input's value.
  DenseSet<Value> fromInput;
  for (BlockArgument a : body->getArguments().drop_back())
    fromInput.insert(a);
  bool gathers = false;
  for (Operation &o : body->without_terminator()) {
    if (auto load = dyn_cast<memref::LoadOp>(o))
      gathers |= llvm::any_of(load.getIndices(), [&](Value v) { return fromInput.contains(v); });
    if (llvm::any_of(o.getOperands(), [&](Value v) { return fromInput.contains(v); }))
      for (Value r : o.getResults())
        fromInput.insert(r);
  }
  if (!gathers || !analyse(g))
    return std::nullopt;
  chooseShare(g);
  return g;
}

/// Emits the folds of one gather contraction.
class Emitter {
public:
  Emitter(Gather g, ArrayRef<Value> sizes) : g(std::move(g)), sizes(sizes) {}

  /// A work item per (outer point, block of kCpuLanes · vectors lanes). A whole
  /// block folds its vectors together; a last, partial, block a vector at a
  /// time, then its last lanes one at a time with the scalar body.
  void build(OpBuilder &b, Location loc) {
    int64_t block = kCpuLanes * g.vectors;
    SmallVector<Value> extents;
    for (unsigned d : g.outer)
      extents.push_back((int)d == g.share
                            ? arith::DivUIOp::create(b, loc, sizes[d],
                                                     cstIndex(b, loc, g.shareCount))
                                  .getResult()
                            : sizes[d]);
    Value blockC = cstIndex(b, loc, block), n = sizes[g.lane];
    extents.push_back(arith::CeilDivUIOp::create(b, loc, n, blockC));
    auto [pb, idx] = lockstep::parallelOver(b, loc, extents);
    SmallVector<Value> dims(sizes.size());
    for (auto [i, d] : llvm::enumerate(g.outer))
      dims[d] = idx[i];
    // The shared dim's points of this work item.
    SmallVector<Value> shares;
    if (g.share >= 0) {
      Value base = arith::MulIOp::create(pb, loc, dims[g.share], cstIndex(pb, loc, g.shareCount));
      for (int64_t s = 0; s < g.shareCount; ++s)
        shares.push_back(s == 0 ? base
                                : arith::AddIOp::create(pb, loc, base, cstIndex(pb, loc, s))
                                      .getResult());
    }
    Value l0 = arith::MulIOp::create(pb, loc, idx.back(), blockC);
    Value full = arith::CmpIOp::create(pb, loc, arith::CmpIPredicate::ule,
                                       arith::AddIOp::create(pb, loc, l0, blockC), n);
    auto branch = scf::IfOp::create(pb, loc, full, /*withElse=*/true);
    OpBuilder fb = OpBuilder::atBlockTerminator(&branch.getThenRegion().front());
    fold(fb, loc, dims, shares, l0, g.vectors, kCpuLanes);
    OpBuilder eb = OpBuilder::atBlockTerminator(&branch.getElseRegion().front());
    Value lanes = cstIndex(eb, loc, kCpuLanes), one = cstIndex(eb, loc, 1);
    Value span = arith::SubIOp::create(eb, loc, n, l0);
    Value vecEnd = arith::AddIOp::create(
        eb, loc, l0,
        arith::MulIOp::create(eb, loc, arith::DivUIOp::create(eb, loc, span, lanes), lanes));
    auto vecLoop = scf::ForOp::create(eb, loc, l0, vecEnd, lanes);
    OpBuilder vb = OpBuilder::atBlockTerminator(vecLoop.getBody());
    fold(vb, loc, dims, shares, vecLoop.getInductionVar(), 1, kCpuLanes);
    // The last lanes, one shared point after another.
    auto restLoop = scf::ForOp::create(eb, loc, vecEnd, n, one);
    OpBuilder sb = OpBuilder::atBlockTerminator(restLoop.getBody());
    for (Value sh : shares.empty() ? SmallVector<Value>{Value()} : shares) {
      if (sh)
        dims[g.share] = sh;
      fold(sb, loc, dims, {}, restLoop.getInductionVar(), 1, 1);
    }
  }

private:
  Gather g; // a copy: its op's accessors are not const
  ArrayRef<Value> sizes;

  /// The outputs at lanes [l0, l0 + count · width) (and `dims`' outer dims;
  /// the shared dim at each of `shares`, if any) held in count accumulators
  /// of `width` lanes (1: scalars) a shared point, folded over the reduction
  /// dim in increasing order from their values in memory.
  void fold(OpBuilder &b, Location loc, SmallVector<Value> dims, ArrayRef<Value> shares,
            Value l0, int64_t count, int64_t width) {
    OpOperand *init = g.op.getDpsInitOperand(0);
    Value out = init->get();
    AffineMap outMap = g.op.getMatchingIndexingMap(init);
    SmallVector<Value> starts;
    for (int64_t v = 0; v < count; ++v)
      starts.push_back(
          v == 0 ? l0 : arith::AddIOp::create(b, loc, l0, cstIndex(b, loc, v * width)).getResult());
    // Accumulator a = p · count + v: shared point p, lanes from starts[v].
    SmallVector<Value> points(shares.begin(), shares.end());
    if (points.empty())
      points.push_back(Value());
    auto setPoint = [&](int64_t a) {
      if (Value p = points[a / starts.size()])
        dims[g.share] = p;
      dims[g.lane] = starts[a % starts.size()];
    };
    auto outAt = [&](OpBuilder &ob, int64_t a) {
      setPoint(a);
      return indicesOf(ob, loc, outMap, dims);
    };
    Type f32 = b.getF32Type();
    auto vt = VectorType::get({width}, f32);
    int64_t n = points.size() * starts.size();
    SmallVector<Value> accs;
    for (int64_t a = 0; a < n; ++a)
      accs.push_back(width == 1
                         ? memref::LoadOp::create(b, loc, out, outAt(b, a)).getResult()
                         : vector::LoadOp::create(b, loc, vt, out, outAt(b, a)).getResult());
    // With row loads and a static reduction of whole tiles, kCpuLanes steps a
    // loop iteration: each lane's kCpuLanes steps of a row load read as one
    // vector, transposed to a vector of the lanes for each step; the steps
    // still run one after another, in order, for every accumulator.
    int64_t red = g.op.getStaticLoopRanges()[g.red];
    bool tiled = width == kCpuLanes && !g.rowLoads.empty() && !ShapedType::isDynamic(red) &&
                 red % kCpuLanes == 0;
    int64_t step = tiled ? kCpuLanes : 1;
    auto loop =
        scf::ForOp::create(b, loc, cstIndex(b, loc, 0), sizes[g.red], cstIndex(b, loc, step), accs);
    {
      OpBuilder lb = OpBuilder::atBlockBegin(loop.getBody());
      SmallVector<Value> cur(loop.getRegionIterArgs());
      SmallVector<Value> stepAt;
      for (int64_t t = 0; t < step; ++t)
        stepAt.push_back(t == 0 ? loop.getInductionVar()
                                : arith::AddIOp::create(lb, loc, loop.getInductionVar(),
                                                        cstIndex(lb, loc, t))
                                      .getResult());
      // Tiled: one vector of lanes after another, its tile (loaded and
      // transposed once, for every shared point) used up step by step, so
      // that only one tile is live. Else one step (t = 0) for every
      // accumulator. Either way each accumulator takes the steps in order.
      size_t vecs = starts.size();
      for (size_t v = 0; v < (tiled ? vecs : 1); ++v) {
        DenseMap<Operation *, SmallVector<Value>> tile;
        for (int64_t t = 0; t < step; ++t) {
          dims[g.red] = stepAt[t];
          for (int64_t a = 0; a < n; ++a) {
            if (tiled && (size_t)(a % vecs) != v)
              continue;
            setPoint(a);
            cur[a] = body(lb, loc, dims, width, cur[a], tiled ? &tile : nullptr, t);
          }
        }
      }
      scf::YieldOp::create(lb, loc, cur);
    }
    for (int64_t a = 0; a < n; ++a) {
      if (width == 1)
        memref::StoreOp::create(b, loc, loop.getResult(a), out, outAt(b, a));
      else
        vector::StoreOp::create(b, loc, loop.getResult(a), out, outAt(b, a));
    }
  }

  /// The transposed tile of a row load: vector t holds every lane's
  /// element at step t. Each lane's kCpuLanes steps are one vector load at
  /// its indices (`laneAt(u)`), transposed with shuffles. When the lanes'
  /// indices turn out to be the same at run time (every varying index, a
  /// vector, equal in all its lanes: a paged attention's keys past a
  /// token's position, all clamped to its own row), all lanes would load
  /// the same row: then vector t is that row's element at step t, loaded
  /// once and broadcast (a broadcast load, no shuffle). Both give every lane
  /// the same values.
  SmallVector<Value> loadTile(OpBuilder &b, Location loc, Value mem, ValueRange ids,
                              IRMapping &map, function_ref<SmallVector<Value>(int64_t)> laneAt,
                              int64_t width, Type elt) {
    auto vt = VectorType::get({width}, elt);
    SmallVector<SmallVector<Value>> at;
    for (int64_t u = 0; u < width; ++u)
      at.push_back(laneAt(u));
    Value uniform;
    for (Value id : ids) {
      Value v = map.lookupOrDefault(id);
      if (!isa<VectorType>(v.getType()))
        continue;
      Value first = vector::ExtractOp::create(b, loc, v, int64_t(0));
      Value eq = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, v,
                                       vector::BroadcastOp::create(b, loc, v.getType(), first));
      Value all = vector::ReductionOp::create(b, loc, vector::CombiningKind::AND, eq);
      uniform = uniform ? arith::AndIOp::create(b, loc, uniform, all).getResult() : all;
    }
    auto transposed = [&](OpBuilder &ob) {
      SmallVector<Value> rows;
      for (int64_t u = 0; u < width; ++u)
        rows.push_back(vector::LoadOp::create(ob, loc, vt, mem, at[u]));
      return lockstep::transpose8x8(ob, loc, rows);
    };
    if (!uniform)
      return transposed(b);
    auto branch = scf::IfOp::create(b, loc, SmallVector<Type>(width, vt), uniform,
                                    /*withElseRegion=*/true);
    OpBuilder tb = OpBuilder::atBlockEnd(&branch.getThenRegion().front());
    SmallVector<Value> same;
    for (int64_t t = 0; t < width; ++t) {
      SmallVector<Value> i = at[0];
      if (t)
        i.back() = arith::AddIOp::create(tb, loc, i.back(), cstIndex(tb, loc, t));
      same.push_back(vector::BroadcastOp::create(
          tb, loc, vt, memref::LoadOp::create(tb, loc, mem, i)));
    }
    scf::YieldOp::create(tb, loc, same);
    OpBuilder eb = OpBuilder::atBlockEnd(&branch.getElseRegion().front());
    scf::YieldOp::create(eb, loc, transposed(eb));
    return SmallVector<Value>(branch.getResults());
  }

  /// `v`'s lanes as a vector: a varying value as it is, a uniform one
  /// broadcast.
  Value lanesOf(OpBuilder &b, Location loc, Value v, int64_t width) {
    if (isa<VectorType>(v.getType()))
      return v;
    return vector::BroadcastOp::create(b, loc, VectorType::get({width}, v.getType()), v);
  }

  /// A load of `width` lanes from `mem`, lane u at the indices `at(u)`:
  /// one vector load when only the last index varies, as the lane
  /// (`contiguous`), and the buffer's last stride is 1; else a scalar load
  /// per lane.
  Value loadLanes(OpBuilder &b, Location loc, Value mem, int64_t width,
                  function_ref<SmallVector<Value>(int64_t)> at, bool contiguous, Type elt) {
    auto vt = VectorType::get({width}, elt);
    if (contiguous && unitLastStride(mem))
      return vector::LoadOp::create(b, loc, vt, mem, at(0));
    SmallVector<Value> elems;
    for (int64_t u = 0; u < width; ++u)
      elems.push_back(memref::LoadOp::create(b, loc, mem, at(u)));
    return vector::FromElementsOp::create(b, loc, vt, elems);
  }

  /// The generic's body for lanes [dims[lane], dims[lane] + width) at the
  /// point `dims`, the output's values `acc`: each op once, on scalars when
  /// its operands are the same for all lanes, else on vectors (elementwise
  /// ops on vector<width x T>, loads as above). Returns the yielded value.
  /// With `tiles`, the row loads of step `t` of a tile: the first time (t =
  /// 0 of the first shared point) each lane's kCpuLanes steps are loaded and
  /// transposed into `tiles` (their other indices depend neither on the step,
  /// so t = 0's serve the tile, nor on the shared dim), and step t reads
  /// vector t.
  Value body(OpBuilder &b, Location loc, ArrayRef<Value> dims, int64_t width, Value acc,
             DenseMap<Operation *, SmallVector<Value>> *tiles = nullptr, int64_t t = 0) {
    linalg::GenericOp op = g.op;
    Block *blk = op.getBlock();
    IRMapping map;
    auto vary = [&](Value v) { return width > 1 && g.varying.contains(v); };
    // The index of lane u along the lane dim.
    auto laneIdx = [&](int64_t u) -> Value {
      if (u == 0)
        return dims[g.lane];
      return arith::AddIOp::create(b, loc, dims[g.lane], cstIndex(b, loc, u));
    };
    auto at = [&](AffineMap m, int64_t u) {
      SmallVector<Value> d(dims.begin(), dims.end());
      d[g.lane] = laneIdx(u);
      return indicesOf(b, loc, m, d);
    };
    for (OpOperand *in : op.getDpsInputOperands()) {
      BlockArgument arg = blk->getArgument(in->getOperandNumber());
      if (arg.use_empty())
        continue;
      AffineMap m = op.getMatchingIndexingMap(in);
      Value src = in->get();
      if (!isa<MemRefType>(src.getType())) {
        map.map(arg, src); // a scalar operand
        continue;
      }
      if (!vary(arg)) {
        map.map(arg, memref::LoadOp::create(b, loc, src, at(m, 0)));
        continue;
      }
      map.map(arg, loadLanes(
                       b, loc, src, width, [&](int64_t u) { return at(m, u); },
                       lastIs(m, g.lane), arg.getType()));
    }
    map.map(blk->getArguments().back(), acc);
    for (Operation &o : blk->without_terminator()) {
      if (auto idx = dyn_cast<linalg::IndexOp>(o)) {
        // Lane indices used only as a load's index are read there (above).
        bool onlyIndexes = llvm::all_of(idx->getUses(), [](OpOperand &u) {
          auto load = dyn_cast<memref::LoadOp>(u.getOwner());
          return load && u.get() != load.getMemRef();
        });
        if (idx.getDim() != g.lane || width == 1) {
          map.map(idx.getResult(), dims[idx.getDim()]);
        } else if (!onlyIndexes) {
          SmallVector<int64_t> steps;
          for (int64_t u = 0; u < width; ++u)
            steps.push_back(u);
          auto it = VectorType::get({width}, b.getIndexType());
          Value step =
              arith::ConstantOp::create(b, loc, it, DenseElementsAttr::get(it, ArrayRef(steps)));
          map.map(idx.getResult(),
                  arith::AddIOp::create(b, loc, lanesOf(b, loc, dims[g.lane], width), step)
                      .getResult());
        }
        continue;
      }
      if (!vary(o.getResult(0))) {
        b.clone(o, map);
        continue;
      }
      Type elt = o.getResult(0).getType();
      if (auto load = dyn_cast<memref::LoadOp>(o)) {
        // Contiguous: every index but the last the same for all lanes, the
        // last `linalg.index lane` itself.
        ValueRange ids = load.getIndices();
        bool contiguous = !ids.empty() && isIndexOf(ids.back(), g.lane) &&
                          llvm::none_of(ids.drop_back(), [&](Value v) { return vary(v); });
        auto laneAt = [&](int64_t u) {
          SmallVector<Value> i;
          for (Value v : ids) {
            if (isIndexOf(v, g.lane))
              i.push_back(laneIdx(u));
            else if (vary(v))
              i.push_back(vector::ExtractOp::create(b, loc, map.lookupOrDefault(v), u));
            else
              i.push_back(map.lookupOrDefault(v));
          }
          return i;
        };
        if (tiles && g.rowLoads.contains(load)) {
          SmallVector<Value> &tile = (*tiles)[load];
          if (tile.empty())
            tile = loadTile(b, loc, map.lookupOrDefault(load.getMemRef()), ids, map, laneAt,
                            width, elt);
          map.map(load.getResult(), tile[t]);
          continue;
        }
        map.map(load.getResult(), loadLanes(b, loc, map.lookupOrDefault(load.getMemRef()),
                                            width, laneAt, contiguous, elt));
        continue;
      }
      // Elementwise: the same op on vectors of the lanes.
      OperationState st(o.getLoc(), o.getName());
      for (Value v : o.getOperands())
        st.addOperands(lanesOf(b, loc, map.lookupOrDefault(v), width));
      st.addTypes(VectorType::get({width}, elt));
      st.addAttributes(o.getAttrs());
      map.map(o.getResult(0), b.create(st)->getResult(0));
    }
    return map.lookupOrDefault(blk->getTerminator()->getOperand(0));
  }
};

struct CpuGatherKernelsPass
    : public lockstep::impl::CpuGatherKernelsBase<CpuGatherKernelsPass> {
  using CpuGatherKernelsBase::CpuGatherKernelsBase;

  void runOnOperation() override {
    if (vectors < 1) {
      getOperation().emitError("lockstep-cpu-gather-kernels: vectors must be at least 1");
      return signalPassFailure();
    }
    SmallVector<Gather> found;
    getOperation().walk([&](linalg::GenericOp op) {
      if (std::optional<Gather> g = match(op, vectors))
        found.push_back(std::move(*g));
    });
    for (Gather &g : found) {
      OpBuilder b(g.op);
      SmallVector<Value> sizes = lockstep::loopSizes(b, g.op);
      Emitter(g, sizes).build(b, g.op.getLoc());
      g.op.erase();
      ++numRewritten;
    }
  }
};

} // namespace
