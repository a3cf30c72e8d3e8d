//===- GraphImporter.cpp - ONNX graph to the onnx dialect -----------------===//
//
// Builds `func.func @main` from an ONNX graph: inputs become arguments with
// symbolic dims from their dim_params, initializers become onnx.Weight (or
// onnx.Constant when small), and each node becomes the onnx op of its type,
// created generically from the registered op so that the dialect's TableGen
// definitions are the single list of what is supported. Result types are
// placeholders here; the onnx-infer-shapes pass computes them.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Import/ONNXImporter.h"

#include "ModelReader.h"
#include "TensorData.h"
#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "lockstep/Dialect/ONNX/ONNXTypes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;

namespace {

/// Initializers of at most this many elements are imported as constants.
constexpr int64_t kMaxInlineElements = 64;

class GraphImporter {
public:
  GraphImporter(MLIRContext *ctx, const std::string &path, LoadedModel &m)
      : ctx(ctx), b(ctx), path(path), model(m) {}

  OwningOpRef<ModuleOp> run();

private:
  Location fileLoc() { return FileLineColLoc::get(ctx, path, 0, 0); }
  Location nodeLoc(const onnx::NodeProto &node, int index);
  InFlightDiagnostic nodeError(const onnx::NodeProto &node, int index);
  LogicalResult checkOpsets();
  FailureOr<Type> importType(const onnx::TypeProto &type, const std::string &name,
                             Location loc);
  LogicalResult importInitializers();
  LogicalResult importNode(const onnx::NodeProto &node, int index);
  FailureOr<Attribute> importAttribute(const onnx::AttributeProto &attr,
                                       const onnx::NodeProto &node, int index);

  MLIRContext *ctx;
  OpBuilder b;
  std::string path;
  LoadedModel &model;
  int64_t opset = 0;
  llvm::StringMap<Value> values;
  llvm::StringMap<Type> valueInfoTypes; // element types from value_info
};

Location GraphImporter::nodeLoc(const onnx::NodeProto &node, int index) {
  std::string name = node.name().empty()
                         ? "#" + std::to_string(index)
                         : node.name();
  return NameLoc::get(StringAttr::get(ctx, name + " (" + node.op_type() + ")"),
                      fileLoc());
}

InFlightDiagnostic GraphImporter::nodeError(const onnx::NodeProto &node,
                                            int index) {
  return emitError(nodeLoc(node, index));
}

LogicalResult GraphImporter::checkOpsets() {
  bool found = false;
  for (const auto &o : model.model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") {
      opset = o.version();
      found = true;
    }
  }
  if (!found)
    return emitError(fileLoc()) << "the model imports no opset of the default "
                                   "ONNX domain";
  if (opset < kMinOpset || opset > kMaxOpset)
    return emitError(fileLoc())
           << "unsupported opset " << opset
           << " of the default ONNX domain; Lockstep supports opsets "
           << kMinOpset << " to " << kMaxOpset;
  return success();
}

FailureOr<Type> GraphImporter::importType(const onnx::TypeProto &type,
                                          const std::string &name,
                                          Location loc) {
  if (!type.has_tensor_type())
    return emitError(loc) << "graph value '" << name
                          << "' is not a tensor; only tensors are supported";
  const auto &tt = type.tensor_type();
  Type elt = getElementType(tt.elem_type(), ctx);
  if (!elt)
    return emitError(loc) << "graph value '" << name << "' has unsupported "
                          << "element type " << getOnnxDataTypeName(tt.elem_type());
  if (!tt.has_shape())
    return emitError(loc) << "graph input '" << name
                          << "' has no shape; its rank must be known";
  SmallVector<DimExpr> dims;
  for (int i = 0; i < tt.shape().dim_size(); ++i) {
    const auto &d = tt.shape().dim(i);
    if (d.has_dim_value()) {
      if (d.dim_value() < 0)
        return emitError(loc) << "graph input '" << name << "' has negative dim "
                              << d.dim_value();
      dims.push_back(DimExpr(d.dim_value()));
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      auto e = DimExpr::parse(d.dim_param());
      dims.push_back(e ? *e : DimExpr::symbol(sanitizeDimSymbolName(d.dim_param())));
    } else {
      dims.push_back(DimExpr::symbol(
          sanitizeDimSymbolName(name + "_dim" + std::to_string(i))));
    }
  }
  return Type(getSymbolicTensorType(elt, dims));
}

LogicalResult GraphImporter::importInitializers() {
  const auto &graph = model.model.graph();
  for (int i = 0; i < graph.initializer_size(); ++i) {
    const onnx::TensorProto &t = graph.initializer(i);
    Location loc = NameLoc::get(StringAttr::get(ctx, t.name()), fileLoc());
    Type elt = getElementType(t.data_type(), ctx);
    if (!elt)
      return emitError(loc) << "initializer '" << t.name()
                            << "' has unsupported element type "
                            << getOnnxDataTypeName(t.data_type());
    SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
    if (!isImportableShape(shape))
      return emitError(loc) << "initializer '" << t.name()
                            << "' has an invalid dim or more than 2^40 elements";
    auto type = RankedTensorType::get(shape, elt);
    const auto &where = model.initializerData[i];
    Value v;
    if (type.getNumElements() <= kMaxInlineElements || !where) {
      DenseElementsAttr data;
      if (auto err = readTensorValues(t, where, type, data))
        return emitError(loc) << *err;
      v = ConstantOp::create(b, loc, type, data);
    } else {
      int64_t bytes = type.getNumElements() *
                      ((elt.getIntOrFloatBitWidth() + 7) / 8);
      if (elt.isInteger(1))
        bytes = type.getNumElements();
      if ((int64_t)where->length != bytes)
        return emitError(loc) << "initializer '" << t.name() << "' has "
                              << where->length << " bytes of data, expected "
                              << bytes;
      v = WeightOp::create(b, loc, type, t.name(), where->file,
                           (int64_t)where->offset, (int64_t)where->length);
    }
    values[t.name()] = v;
  }
  return success();
}

FailureOr<Attribute>
GraphImporter::importAttribute(const onnx::AttributeProto &a,
                               const onnx::NodeProto &node, int index) {
  using AP = onnx::AttributeProto;
  switch (a.type()) {
  case AP::INT:
    return Attribute(b.getI64IntegerAttr(a.i()));
  case AP::FLOAT:
    return Attribute(b.getF32FloatAttr(a.f()));
  case AP::STRING:
    return Attribute(b.getStringAttr(a.s()));
  case AP::INTS:
    return Attribute(b.getDenseI64ArrayAttr(
        SmallVector<int64_t>(a.ints().begin(), a.ints().end())));
  case AP::FLOATS:
    return Attribute(b.getDenseF32ArrayAttr(
        SmallVector<float>(a.floats().begin(), a.floats().end())));
  case AP::TENSOR: {
    const auto &t = a.t();
    Type elt = getElementType(t.data_type(), ctx);
    if (!elt)
      return nodeError(node, index)
             << "attribute '" << a.name() << "' has unsupported element type "
             << getOnnxDataTypeName(t.data_type()), failure();
    SmallVector<int64_t> shape(t.dims().begin(), t.dims().end());
    if (!isImportableShape(shape))
      return nodeError(node, index)
                 << "attribute '" << a.name()
                 << "' has an invalid dim or more than 2^40 elements",
             failure();
    auto type = RankedTensorType::get(shape, elt);
    std::optional<WeightLocation> loc;
    DenseElementsAttr data;
    if (t.data_location() == onnx::TensorProto::EXTERNAL)
      return nodeError(node, index) << "attribute '" << a.name()
                                    << "' uses external data, which is not "
                                       "supported in attributes",
             failure();
    if (auto err = readTensorValues(t, loc, type, data))
      return nodeError(node, index) << *err, failure();
    return Attribute(data);
  }
  default:
    return nodeError(node, index)
               << "attribute '" << a.name() << "' has an unsupported type ("
               << AP::AttributeType_Name(a.type()) << ")",
           failure();
  }
}

LogicalResult GraphImporter::importNode(const onnx::NodeProto &node, int index) {
  Location loc = nodeLoc(node, index);
  if (!node.domain().empty() && node.domain() != "ai.onnx")
    return nodeError(node, index) << "unsupported operator domain '"
                                  << node.domain() << "'";
  auto opName = RegisteredOperationName::lookup("onnx." + node.op_type(), ctx);
  auto *iface = opName ? opName->getInterface<ONNXNodeOpInterface>() : nullptr;
  if (!iface)
    return nodeError(node, index) << "unsupported operator '" << node.op_type()
                                  << "'";

  // Operands, with absent optional inputs encoded by operand segment sizes.
  unsigned formal = iface->getNumOnnxInputs();
  bool segmented = opName->hasTrait<OpTrait::AttrSizedOperandSegments>();
  SmallVector<Value> operands;
  SmallVector<int32_t> segments;
  int lastPresent = -1;
  for (int i = 0; i < node.input_size(); ++i)
    if (!node.input(i).empty())
      lastPresent = i;
  for (int i = 0; i <= lastPresent; ++i) {
    const std::string &in = node.input(i);
    if (in.empty()) {
      if (!segmented)
        return nodeError(node, index) << "absent optional input " << i
                                      << " before a present one is not "
                                         "supported for this operator";
      segments.push_back(0);
      continue;
    }
    auto it = values.find(in);
    if (it == values.end())
      return nodeError(node, index) << "input '" << in
                                    << "' is not produced by any earlier node, "
                                       "graph input or initializer";
    operands.push_back(it->second);
    segments.push_back(1);
  }
  if (segmented) {
    if (segments.size() > formal)
      return nodeError(node, index) << "has " << segments.size()
                                    << " inputs, at most " << formal
                                    << " expected";
    segments.resize(formal, 0);
  }

  OperationState state(loc, *opName);
  state.addOperands(operands);
  if (segmented)
    state.addAttribute("operandSegmentSizes", b.getDenseI32ArrayAttr(segments));

  // Attributes, by their ONNX names. Constant's forms all become `value`.
  ArrayRef<StringAttr> known = opName->getAttributeNames();
  for (const auto &a : node.attribute()) {
    std::string name = a.name();
    FailureOr<Attribute> attr = importAttribute(a, node, index);
    if (failed(attr))
      return failure();
    if (node.op_type() == "Constant" && name != "value") {
      RankedTensorType ty;
      if (name == "value_float" || name == "value_floats")
        ty = RankedTensorType::get(name == "value_float" ? ArrayRef<int64_t>{}
                                                         : ArrayRef<int64_t>{(int64_t)a.floats_size()},
                                   b.getF32Type());
      else if (name == "value_int" || name == "value_ints")
        ty = RankedTensorType::get(name == "value_int" ? ArrayRef<int64_t>{}
                                                       : ArrayRef<int64_t>{(int64_t)a.ints_size()},
                                   b.getI64Type());
      else
        return nodeError(node, index) << "unsupported attribute '" << name << "'";
      if (name == "value_float")
        *attr = DenseElementsAttr::get(ty, a.f());
      else if (name == "value_floats")
        *attr = DenseElementsAttr::get(ty, ArrayRef<float>(SmallVector<float>(a.floats().begin(), a.floats().end())));
      else if (name == "value_int")
        *attr = DenseElementsAttr::get(ty, (int64_t)a.i());
      else
        *attr = DenseElementsAttr::get(ty, ArrayRef<int64_t>(SmallVector<int64_t>(a.ints().begin(), a.ints().end())));
      name = "value";
    }
    if (!llvm::any_of(known, [&](StringAttr k) { return k.getValue() == name; }) ||
        name == "operandSegmentSizes")
      return nodeError(node, index) << "unsupported attribute '" << name << "'";
    state.addAttribute(name, *attr);
  }

  // Results: element type from value_info when known; shapes come later.
  int numResults = node.output_size();
  while (numResults > 0 && node.output(numResults - 1).empty())
    --numResults;
  for (int i = 0; i < numResults; ++i) {
    auto it = valueInfoTypes.find(node.output(i));
    Type elt = it != valueInfoTypes.end() ? it->second : b.getF32Type();
    state.addTypes(UnrankedTensorType::get(elt));
  }
  SmallVector<NamedAttribute> requested(state.attributes.begin(),
                                        state.attributes.end());
  Operation *op = b.create(state);
  // An inherent attribute of the wrong kind is dropped on creation: catch it.
  for (const NamedAttribute &a : requested)
    if (op->getAttr(a.getName()) != a.getValue())
      return nodeError(node, index)
             << "attribute '" << a.getName().getValue()
             << "' has the wrong type (" << a.getValue() << ")";
  if (failed(verify(op)))
    return failure(); // the verifier's error is located at the node
  for (int i = 0; i < numResults; ++i)
    if (!node.output(i).empty())
      values[node.output(i)] = op->getResult(i);
  return success();
}

OwningOpRef<ModuleOp> GraphImporter::run() {
  if (failed(checkOpsets()))
    return {};
  const auto &graph = model.model.graph();
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc());
  (*module)->setAttr("onnx.opset", b.getI64IntegerAttr(opset));
  if (!model.model.producer_name().empty())
    (*module)->setAttr("onnx.producer",
                       b.getStringAttr(model.model.producer_name() + " " +
                                       model.model.producer_version()));

  for (const auto &vi : graph.value_info())
    if (vi.type().has_tensor_type())
      if (Type t = getElementType(vi.type().tensor_type().elem_type(), ctx))
        valueInfoTypes[vi.name()] = t;

  llvm::StringSet<> initNames;
  for (const auto &t : graph.initializer())
    initNames.insert(t.name());
  SmallVector<Type> argTypes;
  SmallVector<std::string> argNames;
  for (const auto &in : graph.input()) {
    if (initNames.contains(in.name()))
      continue; // an initializer listed as an input (IR version < 4)
    auto t = importType(in.type(), in.name(), fileLoc());
    if (failed(t))
      return {};
    argTypes.push_back(*t);
    argNames.push_back(in.name());
  }
  for (const auto &out : graph.output())
    if (out.type().has_tensor_type())
      if (Type t = getElementType(out.type().tensor_type().elem_type(), ctx))
        valueInfoTypes[out.name()] = t;

  b.setInsertionPointToEnd(module->getBody());
  auto func = func::FuncOp::create(b, fileLoc(), "main",
                                   b.getFunctionType(argTypes, {}));
  Block *entry = func.addEntryBlock();
  for (auto [i, name] : llvm::enumerate(argNames)) {
    values[name] = entry->getArgument(i);
    func.setArgAttr(i, "onnx.name", b.getStringAttr(name));
  }
  b.setInsertionPointToStart(entry);
  if (failed(importInitializers()))
    return {};
  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(graph.node(i), i)))
      return {};

  SmallVector<Value> results;
  for (const auto &out : graph.output()) {
    auto it = values.find(out.name());
    if (it == values.end()) {
      emitError(fileLoc()) << "graph output '" << out.name()
                           << "' is not produced by any node";
      return {};
    }
    results.push_back(it->second);
  }
  func::ReturnOp::create(b, fileLoc(), results);
  func.setType(b.getFunctionType(argTypes, ValueRange(results).getTypes()));
  for (auto [i, out] : llvm::enumerate(graph.output())) {
    func.setResultAttr(i, "onnx.name", b.getStringAttr(out.name()));
    // The declared shape, -1 for a symbolic or unknown dim, for
    // onnx-infer-shapes to check against what it infers.
    const auto &tt = out.type().tensor_type();
    if (out.type().has_tensor_type() && tt.has_shape()) {
      SmallVector<int64_t> dims;
      for (const auto &d : tt.shape().dim())
        dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
      func.setResultAttr(i, "onnx.declared_shape", b.getDenseI64ArrayAttr(dims));
    }
  }
  return module;
}

} // namespace

bool lockstep::isONNXFile(StringRef path) {
  return path.ends_with(".onnx") || path.ends_with(".onnxtxt");
}

OwningOpRef<ModuleOp> lockstep::importONNXFile(StringRef path, MLIRContext *ctx) {
  ctx->loadDialect<ONNXDialect, func::FuncDialect>();
  LoadedModel model;
  std::string p = path.str();
  // The textual syntax starts with '<' (the model header); binary never does.
  bool text = path.ends_with(".onnxtxt");
  if (!text) {
    auto buf = llvm::MemoryBuffer::getFileSlice(p, 64, 0, false);
    if (buf && !(*buf)->getBuffer().empty()) {
      StringRef head = (*buf)->getBuffer().ltrim();
      text = head.starts_with("<");
    }
  }
  if (auto err = text ? readTextModel(p, model) : readBinaryModel(p, model)) {
    emitError(FileLineColLoc::get(ctx, p, 0, 0)) << *err;
    return {};
  }
  return GraphImporter(ctx, p, model).run();
}
