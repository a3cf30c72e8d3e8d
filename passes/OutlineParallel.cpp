//===- OutlineParallel.cpp - The lockstep-outline-parallel pass -----------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/RegionUtils.h"

namespace lockstep {
#define GEN_PASS_DEF_OUTLINEPARALLEL
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

/// ceil((ub - lb) / step) for a positive step.
Value tripCount(OpBuilder &b, Location loc, Value lb, Value ub, Value step) {
  Value span = arith::SubIOp::create(b, loc, ub, lb);
  return arith::CeilDivSIOp::create(b, loc, span, step);
}

struct OutlineParallelPass
    : public lockstep::impl::OutlineParallelBase<OutlineParallelPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<scf::ParallelOp> loops;
    module.walk([&](scf::ParallelOp p) {
      auto f = p->getParentOfType<func::FuncOp>();
      if (!p->getParentOfType<scf::ParallelOp>() && p.getNumResults() == 0 &&
          f && !f.getSymName().starts_with("lockstep_par_"))
        loops.push_back(p);
    });
    unsigned counter = 0;
    for (scf::ParallelOp p : loops)
      outline(p, counter++);
  }

  /// Work functions already made, by their printed body: the layers of a
  /// model repeat the same loops, and one function serves them all.
  llvm::StringMap<func::FuncOp> existing;

  /// Returns an existing function identical to `fn` (erasing `fn`), or `fn`.
  func::FuncOp dedupe(func::FuncOp fn) {
    std::string key;
    llvm::raw_string_ostream os(key);
    StringAttr name = fn.getSymNameAttr();
    fn.setSymName("lockstep_par");
    fn.print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
    fn.setSymNameAttr(name);
    auto [it, inserted] = existing.try_emplace(key, fn);
    if (inserted)
      return fn;
    fn.erase();
    return it->second;
  }

  /// Moves the body's static-size stack buffers (memref.alloca without
  /// operands, as kernels' per-iteration scratch) to the work function's
  /// entry: lowered in place, each item would grow the stack by its
  /// buffers (nothing frees an alloca before the function returns), and a
  /// thread's items run one after another, so one buffer serves them all.
  /// A fresh alloca's contents are undefined, so reusing it changes no
  /// defined result; a buffer passed to a terminator (carried to another
  /// iteration) stays.
  static void hoistScratch(func::FuncOp fn, Block *entry) {
    SmallVector<memref::AllocaOp> scratch;
    fn.walk([&](memref::AllocaOp a) {
      if (a->getBlock() != entry && a->getNumOperands() == 0 &&
          llvm::none_of(a->getUsers(),
                        [](Operation *u) { return u->hasTrait<OpTrait::IsTerminator>(); }))
        scratch.push_back(a);
    });
    for (memref::AllocaOp a : scratch)
      a->moveBefore(entry, entry->begin());
  }

  void outline(scf::ParallelOp p, unsigned id) {
    Location loc = p.getLoc();
    unsigned k = p.getNumLoops();
    // Values the loop needs from outside: bounds, steps and body captures.
    llvm::SetVector<Value> needed;
    for (Value v : p->getOperands())
      needed.insert(v);
    getUsedValuesDefinedAbove(p.getRegion(), needed);
    SmallVector<Value> captures;
    SmallVector<Operation *> clones;
    for (Value v : needed) {
      Operation *def = v.getDefiningOp();
      if (def && def->hasTrait<OpTrait::ConstantLike>() && def->getNumOperands() == 0)
        clones.push_back(def);
      else
        captures.push_back(v);
    }

    // The work function.
    auto parent = p->getParentOfType<func::FuncOp>();
    OpBuilder mb(parent);
    SmallVector<Type> argTypes = {mb.getIndexType(), mb.getIndexType()};
    for (Value v : captures)
      argTypes.push_back(v.getType());
    std::string name = "lockstep_par_" + std::to_string(id);
    auto fn = func::FuncOp::create(mb, loc, name, mb.getFunctionType(argTypes, {}));
    fn.setPrivate();
    Block *entry = fn.addEntryBlock();
    OpBuilder b = OpBuilder::atBlockBegin(entry);
    IRMapping map;
    for (Operation *c : clones)
      b.clone(*c, map);
    for (auto [i, v] : llvm::enumerate(captures))
      map.map(v, entry->getArgument(i + 2));
    auto lbs = llvm::map_to_vector(p.getLowerBound(), [&](Value v) { return map.lookup(v); });
    auto ubs = llvm::map_to_vector(p.getUpperBound(), [&](Value v) { return map.lookup(v); });
    auto steps = llvm::map_to_vector(p.getStep(), [&](Value v) { return map.lookup(v); });
    unsigned split = k == 1 ? 1 : k - 1; // dims that work items enumerate
    SmallVector<Value> counts;
    for (unsigned d = 0; d < split; ++d)
      counts.push_back(tripCount(b, loc, lbs[d], ubs[d], steps[d]));
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto items = scf::ForOp::create(b, loc, entry->getArgument(0), entry->getArgument(1), one);
    b.setInsertionPointToStart(items.getBody());
    // Delinearize the item (row-major) into the split dims' induction values.
    SmallVector<Value> ivs(k);
    Value rem = items.getInductionVar();
    for (int d = split - 1; d >= 0; --d) {
      Value t = d == 0 ? rem : arith::RemSIOp::create(b, loc, rem, counts[d]).getResult();
      if (d > 0)
        rem = arith::DivSIOp::create(b, loc, rem, counts[d]);
      ivs[d] = arith::AddIOp::create(b, loc, lbs[d],
                                     arith::MulIOp::create(b, loc, t, steps[d]));
    }
    Block &body = p.getRegion().front();
    auto cloneBody = [&](OpBuilder &bb) {
      for (unsigned d = 0; d < k; ++d)
        map.map(body.getArgument(d), ivs[d]);
      for (Operation &op : body.without_terminator())
        bb.clone(op, map);
    };
    if (k == 1) {
      cloneBody(b);
    } else {
      auto inner = scf::ForOp::create(b, loc, lbs[k - 1], ubs[k - 1], steps[k - 1]);
      OpBuilder ib = OpBuilder::atBlockBegin(inner.getBody());
      ivs[k - 1] = inner.getInductionVar();
      cloneBody(ib);
    }
    b.setInsertionPointToEnd(entry);
    func::ReturnOp::create(b, loc);
    hoistScratch(fn, entry);
    fn = dedupe(fn);

    // The call over all work items.
    OpBuilder cb(p);
    Value total;
    for (unsigned d = 0; d < split; ++d) {
      Value c = tripCount(cb, loc, p.getLowerBound()[d], p.getUpperBound()[d], p.getStep()[d]);
      total = total ? arith::MulIOp::create(cb, loc, total, c).getResult() : c;
    }
    SmallVector<Value> args = {arith::ConstantIndexOp::create(cb, loc, 0), total};
    args.append(captures.begin(), captures.end());
    func::CallOp::create(cb, loc, fn, args);
    p.erase();
  }
};

} // namespace
