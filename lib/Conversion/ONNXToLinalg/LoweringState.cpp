//===- LoweringState.cpp - Values and dims during onnx lowering -----------===//
#include "lockstep/Conversion/ONNXToLinalg.h"

#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

LoweringState::LoweringState(func::FuncOp func)
    : func(func), b(func.getContext()), entry(func.getContext()) {
  entry.setInsertionPointToStart(&func.getBody().front());
}

LogicalResult LoweringState::init() {
  for (BlockArgument arg : func.getArguments()) {
    auto d = getSymbolicDims(arg.getType());
    if (!d)
      return func.emitError("argument ")
             << arg.getArgNumber() << " has no known shape";
    argDims[arg] = *d;
    for (auto [j, e] : llvm::enumerate(*d))
      if (auto sym = e.asSymbol())
        symbolSource.try_emplace(*sym, arg.getArgNumber(), j);
  }
  return success();
}

SmallVector<DimExpr> LoweringState::dims(Value old) const {
  auto it = argDims.find(old);
  if (it != argDims.end())
    return it->second;
  return getSymbolicDims(old.getType()).value_or(SmallVector<DimExpr>());
}

Value LoweringState::materialize(const DimExpr &e) {
  std::string key = e.str();
  if (Value v = materialized.lookup(key))
    return v;
  Location loc = func.getLoc();
  auto cst = [&](int64_t c) {
    return arith::ConstantIndexOp::create(entry, loc, c).getResult();
  };
  Value sum;
  for (auto &[mono, coef] : e.getTerms()) {
    Value term = mono.empty() || coef != 1 ? cst(coef) : Value();
    for (const std::string &sym : mono) {
      Value sv = materialized.lookup(sym);
      if (!sv) {
        auto src = symbolSource.find(sym);
        if (src == symbolSource.end()) {
          func.emitError("symbol '") << sym << "' is not a dim of any input";
          return cst(0);
        }
        sv = tensor::DimOp::create(entry, loc,
                                   func.getArgument(src->second.first),
                                   src->second.second);
        materialized[sym] = sv;
      }
      term = term ? arith::MulIOp::create(entry, loc, term, sv).getResult() : sv;
    }
    sum = sum ? arith::AddIOp::create(entry, loc, sum, term).getResult() : term;
  }
  if (!sum)
    sum = cst(0);
  materialized[key] = sum;
  return sum;
}

SmallVector<OpFoldResult> LoweringState::mixedDims(Value old) {
  return mixed(dims(old));
}

SmallVector<OpFoldResult> LoweringState::mixed(ArrayRef<DimExpr> ds) {
  SmallVector<OpFoldResult> out;
  for (const DimExpr &d : ds) {
    if (auto c = d.getConstant())
      out.push_back(b.getIndexAttr(*c));
    else
      out.push_back(materialize(d));
  }
  return out;
}

RankedTensorType LoweringState::plainType(Value old) const {
  auto t = cast<RankedTensorType>(old.getType());
  return RankedTensorType::get(t.getShape(), t.getElementType());
}

Value LoweringState::empty(Value old, Type elementType) {
  RankedTensorType t = plainType(old);
  return tensor::EmptyOp::create(b, old.getLoc(), mixedDims(old),
                                 elementType ? elementType : t.getElementType());
}

Value LoweringState::empty(Location loc, ArrayRef<DimExpr> ds, Type elt) {
  return tensor::EmptyOp::create(b, loc, mixed(ds), elt);
}

std::optional<SmallVector<DimExpr>> LoweringState::symValues(Value old) const {
  Operation *def = old.getDefiningOp();
  if (!def)
    return std::nullopt;
  if (auto sym = def->getAttrOfType<DimsAttr>("onnx.sym"))
    return sym.getExprs();
  if (auto cst = dyn_cast<ConstantOp>(def)) {
    auto dense = dyn_cast<DenseIntElementsAttr>(cst.getValue());
    if (!dense)
      return std::nullopt;
    SmallVector<DimExpr> out;
    for (const APInt &v : dense)
      out.push_back(DimExpr(v.getSExtValue()));
    return out;
  }
  return std::nullopt;
}

Value lockstep::buildElementwise(
    LoweringState &s, Location loc, ArrayRef<DimExpr> out, Type elt,
    ArrayRef<Value> operands, ArrayRef<SmallVector<DimExpr>> operandDims,
    function_ref<Value(OpBuilder &, Location, ValueRange)> body) {
  OpBuilder &b = s.builder();
  unsigned rank = out.size();
  SmallVector<AffineMap> maps;
  for (const auto &dims : operandDims) {
    SmallVector<AffineExpr> exprs;
    unsigned off = rank - dims.size();
    for (unsigned i = 0; i < dims.size(); ++i) {
      bool broadcast = dims[i] == DimExpr(1) && out[off + i] != DimExpr(1);
      exprs.push_back(broadcast ? b.getAffineConstantExpr(0)
                                : b.getAffineDimExpr(off + i));
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, b.getContext()));
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  Value init = s.empty(loc, out, elt);
  SmallVector<utils::IteratorType> iters(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, init.getType(), operands, ValueRange{init}, maps, iters,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Value v = body(nb, nloc, args.drop_back());
        linalg::YieldOp::create(nb, nloc, v);
      });
  return generic.getResult(0);
}
