//===- ArtifactEmitter.cpp - Compiling a model into an artifact -----------===//
#include "lockstep/Target/ArtifactEmitter.h"
#include "lockstep/Target/CUDACodegen.h"

#include "lockstep/Artifact/Artifact.h"
#include "lockstep/Artifact/Checksum.h"
#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "lockstep/Serving/ServingRoles.h"
#include "lockstep/Target/CPUCodegen.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/ADT/StringMap.h"

#include <algorithm>
#include "lockstep/Artifact/ServingKeys.h"

using namespace mlir;
using namespace lockstep;
using namespace lockstep::onnxir;
namespace K = lockstep::serving_keys;

namespace {

std::string dtypeOf(Type t) {
  if (t.isF32()) return "f32";
  if (t.isF16()) return "f16";
  if (t.isBF16()) return "bf16";
  if (t.isF64()) return "f64";
  if (t.isInteger(1)) return "bool";
  if (auto it = dyn_cast<IntegerType>(t)) {
    if (it.isUnsigned())
      switch (it.getWidth()) {
      case 8: return "u8";
      case 16: return "u16";
      case 32: return "u32";
      case 64: return "u64";
      }
    if (!it.isUnsigned())
      switch (it.getWidth()) {
      case 8: return "i8";
      case 16: return "i16";
      case 32: return "i32";
      case 64: return "i64";
      }
  }
  return "";
}

FailureOr<rt::TensorSpec> specOf(Location loc, StringRef name, Type type) {
  auto dims = getSymbolicDims(type);
  std::string dtype = dtypeOf(cast<ShapedType>(type).getElementType());
  if (!dims || dtype.empty())
    return emitError(loc) << "'" << name << "' has an unsupported type " << type;
  rt::TensorSpec s;
  s.name = name.str();
  s.dtype = dtype;
  for (const DimExpr &d : *dims)
    s.dims.push_back(d.str());
  return s;
}

rt::ByteView bytesOf(const std::vector<uint8_t> &v) { return {v.data(), v.size()}; }
rt::ByteView bytesOf(const std::string &s) {
  return {reinterpret_cast<const uint8_t *>(s.data()), s.size()};
}

/// The module's `lockstep.launch_plan` (lockstep-launch-plan).
std::vector<rt::KernelLaunch> launchPlanOf(ModuleOp module) {
  std::vector<rt::KernelLaunch> plan;
  auto list = module->getAttrOfType<ArrayAttr>("lockstep.launch_plan");
  for (Attribute a : list ? list.getValue() : ArrayRef<Attribute>()) {
    auto d = cast<DictionaryAttr>(a);
    rt::KernelLaunch l;
    l.module = d.getAs<StringAttr>("module").str();
    l.function = d.getAs<StringAttr>("function").str();
    for (int i = 0; i < 3; ++i) {
      l.grid[i] = d.getAs<DenseI64ArrayAttr>("grid")[i];
      l.block[i] = d.getAs<DenseI64ArrayAttr>("block")[i];
    }
    l.sharedBytes = d.getAs<IntegerAttr>("smem").getInt();
    l.node = d.getAs<StringAttr>("node").str();
    plan.push_back(std::move(l));
  }
  return plan;
}

/// Whether the lowered module's code writes the new rows of every one of the
/// `streams` cache streams into their pools (lockstep-record-pool-writes).
bool writesAllPools(ModuleOp m, size_t streams) {
  auto written = m->getAttrOfType<DenseI64ArrayAttr>("lockstep.pool_writes");
  if (!written)
    return false;
  std::vector<bool> seen(streams, false);
  for (int64_t s : written.asArrayRef())
    if (s >= 0 && size_t(s) < streams)
      seen[size_t(s)] = true;
  return streams > 0 && std::find(seen.begin(), seen.end(), false) == seen.end();
}

} // namespace

LogicalResult lockstep::emitArtifact(ModuleOp module, const std::string &path,
                                        const ArtifactOptions &options) {
  auto func = module.lookupSymbol<func::FuncOp>("main");
  if (!func)
    return module.emitError("no main function");
  rt::ArtifactMeta meta;
  meta.producer = options.producer;
  const bool cpu = targetsCpu(options.codegen), cuda = targetsCuda(options.codegen);
  meta.target = cpu && cuda ? std::string(rt::kCpuTarget) + "," + rt::kCudaTarget
                : cuda      ? rt::kCudaTarget
                            : rt::kCpuTarget;
  meta.properties.push_back({"cpu_level", kCpuLevel});
  if (cuda)
    meta.properties.push_back({"cuda.chip", options.codegen.chip});
  if (cuda && !options.codegen.gpuTiles.empty())
    meta.properties.push_back({"cuda.tiles", options.codegen.gpuTiles});
  meta.properties.push_back({"reduction_policy", options.codegen.reductionPolicy});
  if (options.codegen.adaptiveRows > 0)
    meta.properties.push_back(
        {"reduction_policy.adaptive_rows", std::to_string(options.codegen.adaptiveRows)});
  if (options.codegen.adaptiveChunk > 0)
    meta.properties.push_back(
        {"reduction_policy.adaptive_chunk", std::to_string(options.codegen.adaptiveChunk)});
  meta.properties.push_back(
      {"attention", options.codegen.recognizeAttention ? "recognized" : "decomposed"});
  std::string notServable;
  // The ragged step's cache streams: whether the code writes their pools is
  // known once each target's pipeline has run.
  size_t raggedStreams = 0;
  bool poolsWritten = true;
  if (isRaggedStep(func)) {
    auto props = raggedStepProperties(func, notServable);
    if (!props)
      return func.emitError(notServable);
    meta.properties.insert(meta.properties.end(), props->begin(), props->end());
    for (auto &[key, value] : *props)
      if (key == K::kCacheStreams)
        raggedStreams = std::stoul(value);
  } else if (auto roles = findServingRoles(func, notServable)) {
    for (auto &p : servingProperties(*roles))
      meta.properties.push_back(p);
  } else {
    meta.properties.push_back({K::kNone, notServable});
  }
  auto nameOf = [](DictionaryAttr d, unsigned i) {
    auto n = d ? d.getAs<StringAttr>("onnx.name") : StringAttr();
    return n ? n.str() : "#" + std::to_string(i);
  };
  for (unsigned i = 0; i < func.getNumArguments(); ++i) {
    auto s = specOf(func.getLoc(), nameOf(func.getArgAttrDict(i), i),
                    func.getArgumentTypes()[i]);
    if (failed(s))
      return failure();
    meta.inputs.push_back(*s);
  }
  for (unsigned i = 0; i < func.getNumResults(); ++i) {
    auto s = specOf(func.getLoc(), nameOf(func.getResultAttrDict(i), i),
                    func.getResultTypes()[i]);
    if (failed(s))
      return failure();
    meta.outputs.push_back(*s);
  }

  // Weights, in the order the lowering turns them into arguments.
  std::string modelFile;
  llvm::StringMap<std::unique_ptr<llvm::MemoryBuffer>> mapped;
  std::vector<rt::EmbeddedWeight> embedded;
  SmallVector<WeightOp> weights;
  func.walk([&](WeightOp w) { weights.push_back(w); });
  for (WeightOp w : weights) {
    auto type = cast<RankedTensorType>(w.getType());
    rt::WeightSpec ws;
    ws.name = w.getName().str();
    ws.dtype = dtypeOf(type.getElementType());
    ws.shape.assign(type.getShape().begin(), type.getShape().end());
    ws.length = w.getLength();
    ws.path = w.getFile().str();
    bool inModelFile = ws.path.size() >= 5 && StringRef(ws.path).ends_with(".onnx");
    ws.embedded = options.weights == WeightPolicy::Embed ||
                  (options.weights == WeightPolicy::Auto && inModelFile);
    if (ws.embedded) {
      auto &buf = mapped[ws.path];
      if (!buf) {
        auto b = llvm::MemoryBuffer::getFile(ws.path, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
        if (!b)
          return w.emitError("cannot read weights from '") << ws.path << "'";
        buf = std::move(*b);
      }
      if (w.getOffset() + w.getLength() > (int64_t)buf->getBufferSize())
        return w.emitError("weight '") << ws.name << "' lies past the end of '"
                                       << ws.path << "'";
      embedded.push_back({meta.weights.size(),
                          buf->getBufferStart() + w.getOffset(),
                          (uint64_t)w.getLength()});
      ws.path.clear();
    } else {
      ws.offset = w.getOffset();
      std::string err;
      if (!rt::checksumFileRange(ws.path, ws.offset, ws.length, ws.checksum, err))
        return w.emitError(err);
    }
    meta.weights.push_back(ws);
  }

  // Each target's code from its own copy of the serving form: the weights
  // are the same arguments, in the same order, for both.
  rt::ArtifactCode code;
  std::vector<uint8_t> cpuObject, cudaObject;
  std::string kernels, plan, error;
  if (cuda) {
    OwningOpRef<ModuleOp> copy = cpu ? module.clone() : OwningOpRef<ModuleOp>();
    ModuleOp m = cpu ? *copy : module;
    PassManager pm(m.getContext());
    if (failed(buildCUDACodegenPipeline(pm, options.codegen)) || failed(pm.run(m)))
      return failure();
    poolsWritten = poolsWritten && writesAllPools(m, raggedStreams);
    if (!emitSharedObject(m, cudaObject, error))
      return m.emitError(error);
    std::vector<rt::KernelText> list;
    for (auto &[name, ptx] : kernelPTX(m))
      list.push_back({name, ptx});
    kernels = rt::serializeKernels(list);
    plan = rt::serializeLaunchPlan(launchPlanOf(m));
    code.cuda = bytesOf(cudaObject);
    code.kernels = bytesOf(kernels);
    code.launchPlan = bytesOf(plan);
  }
  std::vector<uint8_t> cpuObjectV4;
  if (cpu && options.codegen.cpuV4) {
    // The same module for x86-64-v4, from a copy: 16-lane tiles and panels,
    // every fold as at the base level.
    OwningOpRef<ModuleOp> copy = module.clone();
    CodegenOptions v4 = options.codegen;
    v4.cpuLevel = kCpuLevelV4;
    PassManager pm(copy->getContext());
    if (failed(buildCPUCodegenPipeline(pm, v4)) || failed(pm.run(*copy)))
      return failure();
    poolsWritten = poolsWritten && writesAllPools(*copy, raggedStreams);
    if (!emitSharedObject(*copy, cpuObjectV4, error, kCpuLevelV4))
      return copy->emitError(error);
    code.cpuV4 = bytesOf(cpuObjectV4);
  }
  if (cpu) {
    PassManager pm(module.getContext());
    if (failed(buildCPUCodegenPipeline(pm, options.codegen)) || failed(pm.run(module)))
      return failure();
    poolsWritten = poolsWritten && writesAllPools(module, raggedStreams);
    if (!emitSharedObject(module, cpuObject, error, options.codegen.cpuLevel))
      return module.emitError(error);
    code.cpu = bytesOf(cpuObject);
  }
  if (raggedStreams > 0 && poolsWritten)
    meta.properties.push_back({K::kPoolWrites, K::kPoolWritesStep});
  code.tokenizer = bytesOf(options.tokenizerJson);
  if (!rt::writeArtifact(path, meta, code, embedded, error))
    return module.emitError(error);
  return success();
}
