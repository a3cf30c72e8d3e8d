//===- import_fuzzer.cpp - libFuzzer target for the ONNX importer ---------===//
//
// Feeds arbitrary bytes to the importer the way `lockstep-opt MODEL.onnx`
// does: the bytes become a .onnx file (the textual syntax when they start
// with '<', binary protobuf otherwise), which is imported, run through the
// import pipeline (shape inference, folding of shape computations), printed
// and summarized, then put in the serving form (attention recognized, a KV
// cache introduced) and lowered to linalg in the canonical reduction form,
// verified. Diagnostics are expected and dropped; a crash, an abort, a
// sanitizer report, a hang or unbounded memory is a bug. (LLVM code
// generation is not run: it is upstream code and slow per input.)
//
// Built by scripts/fuzz-import into build-fuzz/ (see README, "Fuzzing").
//
//===----------------------------------------------------------------------===//
#include "lockstep/Import/ModelSummary.h"
#include "lockstep/Import/ONNXImporter.h"
#include "lockstep/Passes/Passes.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace {

/// The file each input is written to: one per process, so that parallel
/// fuzzing jobs (-jobs/-workers) do not share it.
const std::string &inputPath() {
  static const std::string path = [] {
    const char *dir = getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/lockstep-import-fuzz-" +
           std::to_string(getpid()) + ".onnx";
  }();
  return path;
}

bool writeInput(const uint8_t *data, size_t size) {
  FILE *f = fopen(inputPath().c_str(), "wb");
  if (!f)
    return false;
  bool ok = fwrite(data, 1, size, f) == size;
  return fclose(f) == 0 && ok;
}

const mlir::DialectRegistry &registry() {
  static const mlir::DialectRegistry r = [] {
    mlir::DialectRegistry reg;
    mlir::registerAllDialects(reg);
    return reg;
  }();
  return r;
}

} // namespace

/// LLVM's BumpPtrAllocator poisons the free part of each new slab for ASan
/// when its (inline) code is compiled with ASan, as ours is; libMLIR's copy of
/// the same code is not instrumented and hands out that memory without
/// unpoisoning it. Manual poisoning is off so that this mix does not report
/// false use-after-poison errors; ASan's own checks are unaffected.
extern "C" const char *__asan_default_options() {
  return "allow_user_poisoning=0";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!writeInput(data, size)) {
    fprintf(stderr, "import_fuzzer: cannot write %s\n", inputPath().c_str());
    abort();
  }
  // A fresh context per input: nothing uniqued by one input outlives it.
  mlir::MLIRContext ctx(registry(), mlir::MLIRContext::Threading::DISABLED);
  ctx.printOpOnDiagnostic(false);
  ctx.getDiagEngine().registerHandler([](mlir::Diagnostic &) {});
  mlir::OwningOpRef<mlir::ModuleOp> module =
      lockstep::importONNXFile(inputPath(), &ctx);
  if (!module)
    return 0;
  llvm::raw_null_ostream sink;
  mlir::PassManager pm(&ctx);
  lockstep::buildImportPipeline(pm);
  if (mlir::failed(pm.run(*module)))
    return 0;
  module->print(sink);
  lockstep::printModelSummary(*module, sink);
  mlir::PassManager serving(&ctx);
  auto &s = serving.nest<mlir::func::FuncOp>();
  s.addPass(lockstep::createRecognizeAttention());
  s.addPass(lockstep::createProveMask());
  s.addPass(lockstep::createIntroduceKVCache());
  if (mlir::failed(serving.run(*module)))
    return 0;
  // The ragged step, on a copy: it refuses what is not a decoder with a KV
  // cache, and the graph is lowered as well below.
  {
    mlir::OwningOpRef<mlir::ModuleOp> ragged = module->clone();
    mlir::PassManager r(&ctx);
    auto &rf = r.nest<mlir::func::FuncOp>();
    rf.addPass(lockstep::createRaggedStep());
    rf.addPass(lockstep::createVerifyRows());
    rf.addPass(lockstep::createConvertONNXToLinalg());
    rf.addPass(lockstep::createCanonicalReductions());
    rf.addPass(lockstep::createVerifyInvariance());
    if (mlir::succeeded(r.run(*ragged)))
      ragged->print(sink);
  }
  mlir::PassManager lower(&ctx);
  auto &f = lower.nest<mlir::func::FuncOp>();
  f.addPass(lockstep::createConvertONNXToLinalg());
  f.addPass(lockstep::createCanonicalReductions());
  f.addPass(lockstep::createVerifyInvariance());
  if (mlir::succeeded(lower.run(*module)))
    module->print(sink);
  return 0;
}
