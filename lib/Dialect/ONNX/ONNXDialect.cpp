//===- ONNXDialect.cpp - The onnx dialect ---------------------------------===//
#include "lockstep/Dialect/ONNX/ONNXDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

#include "lockstep/Dialect/ONNX/ONNXDialect.cpp.inc"
#include "lockstep/Dialect/ONNX/ONNXInterfaces.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "lockstep/Dialect/ONNX/ONNXAttrs.cpp.inc"

#define GET_OP_CLASSES
#include "lockstep/Dialect/ONNX/ONNXOps.cpp.inc"

void ONNXDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "lockstep/Dialect/ONNX/ONNXOps.cpp.inc"
      >();
  registerAttributes();
}

void ONNXDialect::registerAttributes() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "lockstep/Dialect/ONNX/ONNXAttrs.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// DimsAttr
//===----------------------------------------------------------------------===//

SmallVector<DimExpr> DimsAttr::getExprs() const {
  SmallVector<DimExpr> out;
  for (Attribute a : getDims())
    out.push_back(*DimExpr::parse(cast<StringAttr>(a).str()));
  return out;
}

DimsAttr DimsAttr::get(MLIRContext *ctx, ArrayRef<DimExpr> exprs) {
  SmallVector<Attribute> strs;
  for (const DimExpr &e : exprs)
    strs.push_back(StringAttr::get(ctx, e.str()));
  return get(ctx, ArrayAttr::get(ctx, strs));
}

// Prints `<[batch, seq + past, 64]>`.
void DimsAttr::print(AsmPrinter &printer) const {
  printer << "<[";
  llvm::interleaveComma(getDims(), printer, [&](Attribute a) {
    printer << cast<StringAttr>(a).getValue();
  });
  printer << "]>";
}

// Parses the expressions between the brackets one character run at a time, so
// that the dim grammar (DimExpr::parse) is the only one.
Attribute DimsAttr::parse(AsmParser &parser, Type) {
  if (parser.parseLess() || parser.parseLSquare())
    return {};
  SmallVector<DimExpr> exprs;
  if (failed(parser.parseOptionalRSquare())) {
    do {
      // Collect tokens up to ',' or ']' at nesting depth 0.
      std::string text;
      int depth = 0;
      while (true) {
        if (depth == 0 && (succeeded(parser.parseOptionalComma()))) {
          break;
        }
        if (depth == 0 && succeeded(parser.parseOptionalRSquare())) {
          depth = -1;
          break;
        }
        StringRef kw;
        int64_t num;
        if (succeeded(parser.parseOptionalLParen())) {
          text += "(";
          ++depth;
        } else if (succeeded(parser.parseOptionalRParen())) {
          text += ")";
          --depth;
        } else if (succeeded(parser.parseOptionalPlus())) {
          text += "+";
        } else if (succeeded(parser.parseOptionalStar())) {
          text += "*";
        } else if (succeeded(parser.parseOptionalMinus())) {
          text += "-";
        } else if (parser.parseOptionalInteger(num).has_value()) {
          text += std::to_string(num) + " ";
        } else if (succeeded(parser.parseOptionalKeyword(&kw))) {
          text += kw.str() + " ";
        } else {
          parser.emitError(parser.getCurrentLocation(),
                           "expected a dim expression");
          return {};
        }
      }
      auto e = DimExpr::parse(text);
      if (!e) {
        parser.emitError(parser.getCurrentLocation(),
                         "invalid dim expression '" + text + "'");
        return {};
      }
      exprs.push_back(*e);
      if (depth == -1)
        break;
    } while (true);
  }
  if (parser.parseGreater())
    return {};
  return DimsAttr::get(parser.getContext(), exprs);
}

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

std::optional<SmallVector<DimExpr>>
lockstep::onnxir::getSymbolicDims(Type type) {
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return std::nullopt;
  if (auto dims = dyn_cast_or_null<DimsAttr>(ranked.getEncoding())) {
    auto exprs = dims.getExprs();
    if (exprs.size() != (size_t)ranked.getRank())
      return std::nullopt;
    return exprs;
  }
  SmallVector<DimExpr> out;
  for (int64_t d : ranked.getShape()) {
    if (ShapedType::isDynamic(d))
      return std::nullopt;
    out.push_back(DimExpr(d));
  }
  return out;
}

RankedTensorType lockstep::onnxir::getSymbolicTensorType(Type elementType,
                                                        ArrayRef<DimExpr> dims) {
  SmallVector<int64_t> shape;
  bool symbolic = false;
  for (const DimExpr &d : dims) {
    auto c = d.getConstant();
    shape.push_back(c ? *c : ShapedType::kDynamic);
    symbolic |= !c.has_value();
  }
  Attribute enc;
  if (symbolic)
    enc = DimsAttr::get(elementType.getContext(), dims);
  return RankedTensorType::get(shape, elementType, enc);
}
