//===- ProveMask.cpp - The lockstep-prove-mask pass -----------------------===//
//
// Proves what each lockstep.attention's mask is, by running the graph's own
// mask subgraph (SubgraphEvaluator) over a grid of sizes, and replaces the
// mask by the kind it proved: `causal`, or `causal` with a sliding `window`
// of W positions. A mask it cannot prove equal to one of them stays the
// graph's own operand, with the reason in `lockstep.mask_unproven`. A mask
// that reads inputs by value is proven for the values the runtime feeds
// them, and so stays the graph's (which computes it from whatever it is
// given), with the kind in `lockstep.mask_proven_window`. The
// passes that need a proven kind (the KV cache introduction, the ragged
// step) then refuse that attention at its node and quote the reason.
//
// The grid. Queries are the last Sq of the Sk keys: Sq is one symbol (the new
// tokens, `seq`) and Sk − Sq is 0 (a whole-sequence graph) or one symbol
// (the past). Every other symbol (the batch) is 1, as the serving runtime
// runs each request with batch 1. The context lengths Sk tried are 1 to 12,
// a few larger ones, and, for every integer constant c of the mask subgraph
// (a window is such a constant), c − 1 to c + 2, 2c and 2c + 1, each with
// several Sq. The inputs the mask reads by value get what the runtime feeds:
// the positions input (of a KV-cache graph) absolute positions past + i, an
// input read by masks only (an attention mask) ones. Any other input read by
// value is a failure. A context beyond a fixed-size table of the mask
// subgraph, where the graph itself cannot run, is skipped; the serving
// roles' context limit refuses such requests.
//
// The check, at each point, for each query i (position t = i + Sk − Sq) and
// mask head: the kept keys (a boolean mask true, or an additive mask exactly
// 0; masked: false, or a value at or below −1e30, and a boolean mask's fill
// at or below −1e30) must be exactly [t − W + 1, t] ∩ [0, t], with one W for
// every query of every point (no W: plain causal). Masked scores at or below
// −1e30 weigh exactly 0 next to any kept score, as the −inf of `causal` does.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Dialect/Lockstep/LockstepDialect.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Serving/Evaluate.h"
#include "lockstep/Serving/Positions.h"
#include "lockstep/Serving/ServingRoles.h"

#include "llvm/ADT/SmallPtrSet.h"

#include <memory>
#include <set>

namespace lockstep {
#define GEN_PASS_DEF_PROVEMASK
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

using Dims = SmallVector<DimExpr>;

/// The ops that compute `roots` (the backward slice, to function arguments).
llvm::SmallPtrSet<Operation *, 32> sliceOf(ArrayRef<Value> roots,
                                           llvm::SmallPtrSet<Value, 8> &args) {
  llvm::SmallPtrSet<Operation *, 32> ops;
  SmallVector<Value> work(roots.begin(), roots.end());
  while (!work.empty()) {
    Value v = work.pop_back_val();
    if (!v)
      continue;
    if (auto a = dyn_cast<BlockArgument>(v)) {
      args.insert(a);
      continue;
    }
    Operation *d = v.getDefiningOp();
    if (!ops.insert(d).second || isa<ShapeOp>(d))
      continue; // a Shape reads sizes only
    for (Value o : d->getOperands())
      work.push_back(o);
  }
  return ops;
}

/// The whole-number constants of `ops` that could be a window or an offset.
std::set<int64_t> sizeConstants(const llvm::SmallPtrSet<Operation *, 32> &ops) {
  std::set<int64_t> out;
  for (Operation *op : ops) {
    auto c = dyn_cast<ConstantOp>(op);
    auto dense = c ? dyn_cast<DenseElementsAttr>(c.getValue()) : nullptr;
    if (!dense || dense.getNumElements() > 64)
      continue;
    auto add = [&](double v) {
      double a = std::fabs(v);
      if (a >= 2 && a <= double(1 << 20) && a == std::floor(a))
        out.insert((int64_t)a);
    };
    if (isa<FloatType>(dense.getElementType()))
      for (const APFloat &f : dense.getValues<APFloat>())
        add(f.convertToDouble());
    else if (!dense.getElementType().isInteger(1))
      for (const APInt &i : dense.getValues<APInt>())
        add((double)i.getSExtValue());
  }
  return out;
}

/// Where the keys of one query row are kept.
struct Verdict {
  std::optional<int64_t> window; // exact, from a row that drops early keys
  int64_t atLeast = 0;           // a window must be at least this
  std::string why;               // set: not proven
};

struct Grid {
  bool hasPast = false;
  SmallVector<std::pair<int64_t, int64_t>> points; // (past, seq)
};

Grid gridFor(bool hasPast, const std::set<int64_t> &constants) {
  std::set<int64_t> totals;
  for (int64_t t = 1; t <= 12; ++t)
    totals.insert(t);
  for (int64_t t : {16, 17, 31, 32, 33, 64, 65, 100})
    totals.insert(t);
  for (int64_t c : constants)
    for (int64_t t : {c - 1, c, c + 1, c + 2, 2 * c, 2 * c + 1})
      if (t >= 1)
        totals.insert(t);
  Grid g;
  g.hasPast = hasPast;
  for (int64_t total : totals) {
    if (!hasPast) {
      g.points.push_back({0, total});
      continue;
    }
    for (int64_t s : {1, 2, 3, 5, 9})
      if (s <= total)
        g.points.push_back({total - s, s});
  }
  return g;
}

struct ProveMaskPass : public lockstep::impl::ProveMaskBase<ProveMaskPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    SmallVector<ls::AttentionOp> attention;
    func.walk([&](ls::AttentionOp a) { attention.push_back(a); });
    SmallVector<Value> roots;
    for (ls::AttentionOp a : attention) {
      if (a.getCausal())
        continue;
      if (!a.getMask()) {
        a->setAttr(kMaskUnprovenAttr,
                   StringAttr::get(&getContext(), "the graph masks nothing: every "
                                                  "query sees every key"));
        ++numUnproven;
        continue;
      }
      roots.push_back(a.getMask());
      if (a.getFill())
        roots.push_back(a.getFill());
    }
    if (roots.empty())
      return;
    // Inputs read by the masks only (attention masks) get ones; the
    // positions input of a KV-cache graph gets absolute positions.
    llvm::SmallPtrSet<Value, 8> readArgs;
    llvm::SmallPtrSet<Operation *, 32> maskOps = sliceOf(roots, readArgs);
    std::string why;
    std::optional<ServingRoles> roles = findServingRoles(func, why);
    llvm::SmallPtrSet<Value, 8> maskOnly;
    for (Value arg : readArgs) {
      bool only = true;
      SmallVector<Value> work{arg};
      llvm::SmallPtrSet<Operation *, 32> seen;
      while (!work.empty() && only) {
        Value v = work.pop_back_val();
        for (OpOperand &use : v.getUses()) {
          Operation *u = use.getOwner();
          if (auto a = dyn_cast<ls::AttentionOp>(u)) {
            only &= use.get() == a.getMask() || use.get() == a.getFill();
            continue;
          }
          if (isa<ShapeOp>(u))
            continue;
          if (!maskOps.contains(u)) {
            only = false;
            break;
          }
          if (seen.insert(u).second)
            for (Value r : u->getResults())
              work.push_back(r);
        }
      }
      if (only)
        maskOnly.insert(arg);
    }
    // One evaluator per grid point, shared by the attentions.
    std::map<std::pair<int64_t, int64_t>, std::unique_ptr<SubgraphEvaluator>> evaluators;
    std::set<int64_t> constants = sizeConstants(maskOps);
    // Fixed-size tables in the masks' subgraph: past their largest extent
    // the graph cannot run at all.
    int64_t tableBound = std::numeric_limits<int64_t>::max();
    for (Operation *op : maskOps)
      if (auto w = dyn_cast<WeightOp>(op)) {
        auto t = cast<RankedTensorType>(w.getType());
        int64_t extent = 0;
        for (int64_t d : t.getShape())
          extent = std::max(extent, d);
        tableBound = std::min(tableBound, extent);
      }

    OpBuilder b(&getContext());
    bool changed = false;
    for (ls::AttentionOp a : attention) {
      if (a.getCausal() || !a.getMask())
        continue;
      Verdict v = prove(a, roles, maskOnly, constants, tableBound, evaluators);
      if (!v.why.empty()) {
        a->setAttr(kMaskUnprovenAttr, b.getStringAttr(v.why));
        ++numUnproven;
        continue;
      }
      // A mask that reads inputs by value was proven for the values the
      // serving runtime feeds; the exported graph keeps computing it from
      // whatever it is given, so it stays, with the proven kind beside it.
      llvm::SmallPtrSet<Value, 8> read;
      SmallVector<Value> own{a.getMask()};
      if (a.getFill())
        own.push_back(a.getFill());
      (void)sliceOf(own, read);
      if (!read.empty()) {
        std::string fed;
        for (Value arg : read) {
          unsigned i = cast<BlockArgument>(arg).getArgNumber();
          auto name = func.getArgAttrOfType<StringAttr>(i, "onnx.name");
          fed += (fed.empty() ? "" : ", ") +
                 (name ? "'" + name.str() + "'" : "input #" + std::to_string(i)) +
                 (maskOnly.contains(arg) ? " all ones" : " absolute positions");
        }
        a->setAttr(kMaskProvenWindowAttr, b.getI64IntegerAttr(v.window.value_or(0)));
        a->setAttr(kMaskProvenForAttr, b.getStringAttr(fed));
        ++numProven;
        continue;
      }
      b.setInsertionPoint(a);
      auto c = ls::AttentionOp::create(
          b, a.getLoc(), a.getOutput().getType(), a.getQuery(), a.getKey(), a.getValue(),
          Value(), Value(), a.getKeyScale(), a.getScale(), a.getScaleDivides(),
          a.getZeroEmptyRows(), /*causal=*/true,
          v.window ? b.getI64IntegerAttr(*v.window) : IntegerAttr(), a.getSoftcapAttr());
      a.getOutput().replaceAllUsesWith(c.getOutput());
      a.erase();
      changed = true;
      ++numProven;
    }
    if (changed)
      eraseDeadOps(func.getBody().front());
  }

  Verdict prove(ls::AttentionOp a, const std::optional<ServingRoles> &roles,
                const llvm::SmallPtrSet<Value, 8> &maskOnly, const std::set<int64_t> &constants,
                int64_t tableBound,
                std::map<std::pair<int64_t, int64_t>, std::unique_ptr<SubgraphEvaluator>> &evals) {
    Verdict v;
    func::FuncOp func = getOperation();
    Dims q = symbolicDimsOrEmpty(a.getQuery()), k = symbolicDimsOrEmpty(a.getKey());
    if (q.size() != 4 || k.size() != 4) {
      v.why = "the queries' and keys' dims are not known";
      return v;
    }
    std::optional<std::string> seq = q[2].asSymbol();
    DimExpr diff = k[2] - q[2];
    std::optional<std::string> past = diff.asSymbol();
    if (!seq || (!diff.isConstant() && !past) || (diff.isConstant() && diff != DimExpr(0))) {
      v.why = "the keys are not the queries' positions after a past (keys " + k[2].str() +
              ", queries " + q[2].str() + ")";
      return v;
    }
    Grid grid = gridFor(past.has_value(), constants);
    int64_t H = q[1].getConstant().value_or(1);
    std::optional<unsigned> positionsArg = roles ? roles->positions : std::nullopt;
    for (auto [p, s] : grid.points) {
      auto key = std::make_pair(p, s);
      if (!evals.count(key)) {
        std::map<std::string, int64_t> symbols;
        for (BlockArgument arg : func.getArguments())
          for (const DimExpr &d : symbolicDimsOrEmpty(arg))
            for (auto &[mono, c] : d.getTerms())
              for (const std::string &n : mono)
                symbols[n] = 1;
        symbols[*seq] = s;
        if (past)
          symbols[*past] = p;
        auto evaluator = std::make_unique<SubgraphEvaluator>(
            symbols, [&, symbols, p = p, s = s](BlockArgument arg) -> std::optional<EvalTensor> {
              std::optional<SmallVector<int64_t>> sizes = sizesUnder(arg, symbols);
              if (!sizes)
                return std::nullopt;
              EvalTensor t;
              t.kind = isa<FloatType>(cast<ShapedType>(arg.getType()).getElementType())
                           ? EvalTensor::Kind::Float
                           : EvalTensor::Kind::Int;
              t.shape = *sizes;
              int64_t n = t.size();
              if (positionsArg && arg.getArgNumber() == *positionsArg) {
                if (t.shape.empty() || t.shape.back() != s || t.kind != EvalTensor::Kind::Int)
                  return std::nullopt;
                for (int64_t i = 0; i < n; ++i)
                  t.ints.push_back(p + i % s);
                return t;
              }
              if (maskOnly.contains(arg)) {
                if (t.kind == EvalTensor::Kind::Float)
                  t.floats.assign(n, 1.0);
                else
                  t.ints.assign(n, 1);
                return t;
              }
              return std::nullopt;
            });
        evals[key] = std::move(evaluator);
      }
      SubgraphEvaluator &ev = *evals[key];
      int64_t T = p + s;
      std::optional<EvalTensor> m = ev.eval(a.getMask());
      std::string failure = m ? std::string() : ev.why();
      std::optional<EvalTensor> fill = a.getFill() ? ev.eval(a.getFill()) : std::nullopt;
      if (m && a.getFill() && !fill)
        failure = ev.why();
      if (!m || (a.getFill() && !fill)) {
        if (T > tableBound)
          continue; // past the graph's own tables
        v.why = "its mask cannot be evaluated at past " + std::to_string(p) + ", seq " +
                std::to_string(s) + ": " + failure;
        return v;
      }
      if (fill && (fill->size() != 1 || !(fill->at(0) <= -1e30))) {
        v.why = "its mask's fill value is not at or below -1e30";
        return v;
      }
      // The mask, right-aligned to [1, H, s, T].
      std::optional<std::string> bad = check(*m, H, p, s, T, fill.has_value(), v);
      if (bad) {
        if (T > tableBound)
          continue;
        v.why = *bad;
        return v;
      }
    }
    if (v.window && *v.window < v.atLeast) {
      v.why = "its queries keep windows of different lengths";
      v.window.reset();
    }
    return v;
  }

  /// Checks every row of `m` at one grid point; returns the reason on a
  /// mismatch, and accumulates the window into `v`.
  std::optional<std::string> check(const EvalTensor &m, int64_t H, int64_t p, int64_t s,
                                   int64_t T, bool boolean, Verdict &v) {
    SmallVector<int64_t> full{1, H, s, T};
    if (m.shape.size() > 4)
      return "its mask has rank above 4";
    SmallVector<int64_t> ms(4 - m.shape.size(), 1);
    ms.append(m.shape.begin(), m.shape.end());
    for (int d = 0; d < 4; ++d)
      if (ms[d] != 1 && ms[d] != full[d])
        return "its mask has shape [" + llvm::join(llvm::map_range(m.shape, [](int64_t x) {
                 return std::to_string(x);
               }), ", ") + "] at past " + std::to_string(p) + ", seq " + std::to_string(s) +
               ", which does not broadcast to the scores";
    int64_t mh = ms[1], mi = ms[2], mk = ms[3];
    std::string at = " (past " + std::to_string(p) + ", seq " + std::to_string(s) + ")";
    for (int64_t h = 0; h < mh; ++h)
      for (int64_t i = 0; i < s; ++i) {
        int64_t t = i + p, lo = -1;
        for (int64_t kk = 0; kk < T; ++kk) {
          int64_t idx = ((h * mi + (mi == 1 ? 0 : i)) * mk) + (mk == 1 ? 0 : kk);
          double x = m.at(idx);
          bool kept;
          if (boolean) {
            kept = x != 0;
          } else if (x == 0) {
            kept = true;
          } else if (x <= -1e30) {
            kept = false;
          } else {
            return "its additive mask holds " + std::to_string(x) +
                   ", a bias and not a mask" + at;
          }
          if (kept && kk > t)
            return "its query at position " + std::to_string(t) + " sees the later key " +
                   std::to_string(kk) + at;
          if (kept && lo < 0)
            lo = kk;
          if (!kept && lo >= 0 && kk <= t)
            return "its query at position " + std::to_string(t) + " skips key " +
                   std::to_string(kk) + " inside its window" + at;
        }
        if (lo < 0)
          return "its query at position " + std::to_string(t) + " sees no key" + at;
        if (lo > t)
          return "its query at position " + std::to_string(t) + " does not see itself" + at;
        if (lo == 0) {
          v.atLeast = std::max(v.atLeast, t + 1);
          continue;
        }
        int64_t w = t - lo + 1;
        if (v.window && *v.window != w)
          return "its queries keep windows of " + std::to_string(*v.window) + " and " +
                 std::to_string(w) + " keys" + at;
        v.window = w;
      }
    return std::nullopt;
  }
};

} // namespace
