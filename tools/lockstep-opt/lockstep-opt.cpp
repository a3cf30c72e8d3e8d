//===- lockstep-opt.cpp - The Lockstep compiler driver --------------------===//
//
// Two modes:
//   lockstep-opt MODEL.onnx|MODEL.onnxtxt [--emit=onnx|onnx-raw] [-o FILE]
//     imports an ONNX model and prints the onnx dialect module.
//   lockstep-opt FILE.mlir [passes]
//     the mlir-opt driver, with Lockstep's dialects and passes registered.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Dialect/ONNX/ONNXDialect.h"
#include "lockstep/GPU/TileShapes.h"
#include "lockstep/Import/ModelSummary.h"
#include "lockstep/Import/ONNXImporter.h"
#include "lockstep/Passes/Passes.h"
#include "lockstep/Target/ArtifactEmitter.h"
#include "lockstep/Target/CPUCodegen.h"
#include "lockstep/Target/CUDACodegen.h"
#include "lockstep/Text/Tokenizer.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Debug/Counter.h"
#include "mlir/IR/AsmState.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/Timing.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

using namespace mlir;
using namespace llvm;

namespace {

const char *kOverview =
    "Lockstep compiler driver\n\n"
    "  lockstep-opt MODEL.onnx -o MODEL.lsa [--weights=auto|embed|reference]\n"
    "      Compile an ONNX model into an artifact for the CPU: the x86-64\n"
    "      code, the inputs' and outputs' symbolic dims, and the weights\n"
    "      (auto: weights inside the .onnx file are embedded, external data\n"
    "      is referenced by path, offset, length and checksum). Every\n"
    "      reduction is put in the numerics contract's chunked form and\n"
    "      checked by the invariance verifier; --reduction-policy=adaptive\n"
    "      builds the batch-dependent negative control instead. Attention\n"
    "      subgraphs are recognized by structure and replaced with\n"
    "      lockstep.attention (--attention=decomposed keeps them op by op),\n"
    "      and a decoder without past/present inputs and outputs gets a KV\n"
    "      cache; masks are proven causal or a sliding window by evaluating\n"
    "      the graph's own mask, never assumed.\n"
    "      --target=cuda (or cuda:sm_NN; default sm_90) compiles the step's\n"
    "      work into NVPTX kernels instead, launched by x86-64 host code, with\n"
    "      exact math and every kernel's PTX checked (the PTX gate), the\n"
    "      kernels' PTX and the host code's launch plan in sections of their\n"
    "      own. --target=cpu,cuda puts both targets' code in one artifact\n"
    "      (lockstep-run --device cpu|cuda picks one).\n\n"
    "  lockstep-opt MODEL.onnx [--emit=onnx|onnx-raw|summary|linalg|llvm|ptx] [-o FILE]\n"
    "      Import an ONNX model (binary, with external data, or the ONNX\n"
    "      textual syntax in a .onnxtxt file) and print the onnx dialect\n"
    "      module: onnx-raw right after import, onnx (the default) with\n"
    "      symbolic shapes inferred and constant shape computations folded,\n"
    "      summary a short description of the compiled form's inputs,\n"
    "      outputs, serving roles, weights and ops (after attention is\n"
    "      recognized and a KV cache introduced), linalg after lowering to\n"
    "      linalg on tensors with reductions in the canonical form\n"
    "      (verified), llvm the LLVM dialect, ptx (with --target=cuda) the\n"
    "      PTX of every kernel, gated.\n\n"
    "  lockstep-opt FILE.mlir [--onnx-infer-shapes ...]\n"
    "      Run passes over an MLIR file, like mlir-opt (options below).\n";

/// Prints diagnostics as `FILE: ONNX node NAME (OP): error: MESSAGE`.
void printDiagnostic(Diagnostic &diag) {
  std::string where;
  Location loc = diag.getLocation();
  std::string file, node;
  loc->walk([&](Location l) {
    if (auto f = dyn_cast<FileLineColLoc>(l))
      file = f.getFilename().str();
    else if (auto n = dyn_cast<NameLoc>(l))
      node = n.getName().str();
    return WalkResult::advance();
  });
  const char *sev = diag.getSeverity() == mlir::DiagnosticSeverity::Error ? "error"
                    : diag.getSeverity() == mlir::DiagnosticSeverity::Warning
                        ? "warning"
                        : "note";
  errs() << (file.empty() ? "lockstep-opt" : file);
  if (!node.empty())
    errs() << ": ONNX node " << node;
  errs() << ": " << sev << ": " << diag.str() << "\n";
  for (Diagnostic &note : diag.getNotes())
    errs() << "  note: " << note.str() << "\n";
}

/// Parses the command line like cl::ParseCommandLineOptions, but a bad one
/// gives one line on stderr (LLVM's message can take two or three: the
/// error, then a "Did you mean" hint) and false, for an exit status of 2.
bool parseOptions(int argc, char **argv, StringRef overview) {
  std::string text;
  raw_string_ostream os(text);
  if (cl::ParseCommandLineOptions(argc, argv, overview, &os))
    return true;
  SmallVector<StringRef> lines;
  StringRef(text).split(lines, '\n', -1, /*KeepEmpty=*/false);
  std::string line;
  for (StringRef l : lines) {
    l = l.trim();
    if (!line.empty()) {
      l.consume_front("lockstep-opt: ");
      line += " ";
    }
    line += l.str();
  }
  // An option's own error (a missing or bad value) is printed by LLVM on
  // one line straight to stderr, leaving `text` empty.
  if (!line.empty())
    errs() << line << "\n";
  return false;
}

int importMain(int argc, char **argv) {
  cl::opt<std::string> input(cl::Positional, cl::desc("<model.onnx>"),
                             cl::Required);
  cl::opt<std::string> output("o", cl::desc("Output file (default: stdout)"),
                              cl::value_desc("file"), cl::init("-"));
  cl::opt<std::string> emit(
      "emit", cl::desc("What to produce: onnx (shapes inferred, the default), "
                       "onnx-raw (as imported), summary, linalg, llvm, or lsa "
                       "(an artifact; the default when -o ends in .lsa)"),
      cl::init(""));
  cl::opt<std::string> weights(
      "weights", cl::desc("With lsa: auto (embed weights stored in the model "
                          "file, reference external data), embed or reference"),
      cl::init("auto"));
  cl::opt<std::string> reductionPolicy(
      "reduction-policy",
      cl::desc("canonical (default): every reduction in the numerics "
               "contract's chunked form, checked by the invariance verifier; "
               "adaptive: the negative control, which picks split points from "
               "the number of rows at run time like ordinary stacks (not "
               "batch-invariant; the verifier is off); adaptive-kv: only "
               "attention's key chunks (split-KV) chosen so; adaptive-softmax: "
               "only softmax chunks chosen so (with --attention=decomposed); "
               "adaptive-threads: reductions split when the code runs on more "
               "than one thread; plant-unmasked-padding, plant-merge-no-skip: "
               "the ragged step's attention with its padding unmasked, or its "
               "merges folding chunks of padding, which the verifier must "
               "refuse (for its tests)"),
      cl::init("canonical"));
  cl::opt<int64_t> adaptiveRows(
      "adaptive-rows",
      cl::desc("With an adaptive --reduction-policy: split a reduction when its "
               "rows are fewer than this, fold it whole otherwise (default 4)"),
      cl::init(0));
  cl::opt<int64_t> adaptiveChunk(
      "adaptive-chunk",
      cl::desc("With an adaptive --reduction-policy: the split's chunk width "
               "(default 16). --adaptive-rows=2 --adaptive-chunk=256 is the "
               "canonical split for one row and whole folds for more, one of "
               "the controls of bench/gpu/run.py's invariance cost"),
      cl::init(0));
  cl::opt<std::string> attention(
      "attention",
      cl::desc("recognized (default): attention subgraphs become "
               "lockstep.attention, reduced by the softmax contract; "
               "decomposed: lowered op by op as exported"),
      cl::init("recognized"));
  cl::opt<std::string> target(
      "target",
      cl::desc("cpu (default): x86-64 code; cuda or cuda:sm_NN (default "
               "sm_90): NVPTX kernels launched by x86-64 host code through "
               "the runtime's CUDA backend; cpu,cuda: both in one artifact "
               "(lockstep-run --device picks one)"),
      cl::init("cpu"));
  cl::opt<std::string> step(
      "step",
      cl::desc("auto (default): a decoder with a KV cache becomes the ragged "
               "step (one call for all requests of a step), or stays the "
               "exported graph with a warning saying why; ragged: the ragged "
               "step or an error; graph: the exported graph (run once per "
               "request, and by exec with its own inputs)"),
      cl::init("auto"));
  cl::opt<std::string> cpuLevels(
      "cpu-levels",
      cl::desc("x86-64-v3,x86-64-v4 (default): the CPU code for x86-64-v3 (AVX2) "
               "and, beside it, for x86-64-v4 (AVX-512: 16-lane tiles), which the "
               "runtime runs where the host has it, with the same bits; "
               "x86-64-v3: that code only (half the CPU compile time). With "
               "--emit=llvm, the level printed is the first"),
      cl::init("x86-64-v3,x86-64-v4"));
  // cl::desc keeps a StringRef: the text must outlive the option.
  static const std::string gpuTilesHelp =
      "For tuning, with --target=cuda: the contractions' tile shapes by rows, entries "
      "ROWS:TXxTY/TMxTN/BK[/v4][/direct] separated by ';' (the host takes the first whose "
      "ROWS holds the call's rows; the last ROWS is '*'): TX x TY threads a block, TM x TN "
      "outputs a thread, BK values of k staged a step, v4 the register-blocked form, direct "
      "the weights kept in registers. Every table gives the same bits "
      "(bench/gpu/tiles.py compares tables). Default: " +
      lockstep::formatTileShapes(lockstep::defaultTileShapes());
  cl::opt<std::string> gpuTiles("gpu-tiles", cl::desc(gpuTilesHelp), cl::init(""));
  cl::opt<std::string> tokenizer(
      "tokenizer",
      cl::desc("A Hugging Face tokenizer.json to store in the artifact, checked "
               "first: lockstep-run encodes text prompts and decodes generated "
               "ids with it"),
      cl::init(""));
  if (!parseOptions(argc, argv, kOverview))
    return 2;
  if (step != "auto" && step != "ragged" && step != "graph") {
    errs() << "lockstep-opt: unknown --step value '" << step
           << "' (expected auto, ragged or graph)\n";
    return 2;
  }
  if (attention != "recognized" && attention != "decomposed") {
    errs() << "lockstep-opt: unknown --attention value '" << attention
           << "' (expected recognized or decomposed)\n";
    return 2;
  }
  if (reductionPolicy != "canonical" && reductionPolicy != "adaptive" &&
      reductionPolicy != "adaptive-kv" && reductionPolicy != "adaptive-softmax" &&
      reductionPolicy != "adaptive-threads" && reductionPolicy != "plant-unmasked-padding" &&
      reductionPolicy != "plant-merge-no-skip") {
    errs() << "lockstep-opt: unknown --reduction-policy value '" << reductionPolicy
           << "' (expected canonical, adaptive, adaptive-kv, adaptive-softmax, "
              "adaptive-threads, plant-unmasked-padding or plant-merge-no-skip)\n";
    return 2;
  }
  if ((adaptiveRows.getNumOccurrences() || adaptiveChunk.getNumOccurrences()) &&
      reductionPolicy != "adaptive" && reductionPolicy != "adaptive-kv" &&
      reductionPolicy != "adaptive-softmax") {
    errs() << "lockstep-opt: --adaptive-rows and --adaptive-chunk need "
              "--reduction-policy=adaptive, adaptive-kv or adaptive-softmax\n";
    return 2;
  }
  if ((adaptiveRows.getNumOccurrences() && adaptiveRows < 1) ||
      (adaptiveChunk.getNumOccurrences() && adaptiveChunk < 1)) {
    errs() << "lockstep-opt: --adaptive-rows and --adaptive-chunk must be at least 1\n";
    return 2;
  }
  if (reductionPolicy == "adaptive-threads" && StringRef(target.getValue()).contains("cuda")) {
    errs() << "lockstep-opt: --reduction-policy=adaptive-threads is a CPU control (it reads "
              "the CPU runtime's thread count)\n";
    return 2;
  }
  if (StringRef(reductionPolicy).starts_with("plant-"))
    errs() << "lockstep-opt: warning: --reduction-policy=" << reductionPolicy
           << " plants a violation in the ragged step's attention (for the verifier's "
              "tests): the verifier must refuse it\n";
  else if (reductionPolicy != "canonical")
    errs() << "lockstep-opt: warning: --reduction-policy=" << reductionPolicy
           << " is a negative control: "
           << (reductionPolicy == "adaptive"           ? "reductions split by batch size"
               : reductionPolicy == "adaptive-kv"      ? "attention's key chunks split by batch size"
               : reductionPolicy == "adaptive-softmax" ? "softmax chunks split by batch size"
                                                       : "reductions split by thread count")
           << ", not batch-invariant, verifier off\n";
  if (emit.empty())
    emit = StringRef(output).ends_with(".lsa") ? "lsa" : "onnx";
  if (emit != "onnx" && emit != "onnx-raw" && emit != "summary" &&
      emit != "linalg" && emit != "llvm" && emit != "lsa" && emit != "ptx") {
    errs() << "lockstep-opt: unknown --emit value '" << emit
           << "' (expected onnx, onnx-raw, summary, linalg, llvm, ptx or lsa)\n";
    return 2;
  }
  lockstep::ArtifactOptions artifactOptions;
  {
    std::string err;
    if (!lockstep::parseTarget(target, artifactOptions.codegen, err)) {
      errs() << "lockstep-opt: " << err << "\n";
      return 2;
    }
  }
  if (cpuLevels == "x86-64-v3" || cpuLevels == "x86-64-v3,x86-64-v4") {
    artifactOptions.codegen.cpuV4 = cpuLevels != "x86-64-v3";
  } else if (cpuLevels == "x86-64-v4") {
    artifactOptions.codegen.cpuLevel = lockstep::kCpuLevelV4;
    artifactOptions.codegen.cpuV4 = false;
    if (emit == "lsa") {
      errs() << "lockstep-opt: --cpu-levels=x86-64-v4 is for --emit=llvm: an artifact "
                "always has the x86-64-v3 code (give x86-64-v3 or x86-64-v3,x86-64-v4)\n";
      return 2;
    }
  } else {
    errs() << "lockstep-opt: unknown --cpu-levels value '" << cpuLevels
           << "' (expected x86-64-v3,x86-64-v4, x86-64-v3 or x86-64-v4)\n";
    return 2;
  }
  if (emit == "ptx" && !lockstep::targetsCuda(artifactOptions.codegen)) {
    errs() << "lockstep-opt: --emit=ptx needs --target=cuda\n";
    return 2;
  }
  if ((emit == "llvm" || emit == "linalg") && artifactOptions.codegen.target == "cpu,cuda") {
    errs() << "lockstep-opt: --emit=" << emit
           << " prints one target's code: give --target=cpu or --target=cuda\n";
    return 2;
  }
  if (!gpuTiles.empty()) {
    std::vector<lockstep::ShapeChoice> table;
    std::string err;
    if (!lockstep::targetsCuda(artifactOptions.codegen)) {
      errs() << "lockstep-opt: --gpu-tiles needs --target=cuda\n";
      return 2;
    }
    if (!lockstep::parseTileShapes(gpuTiles, table, err)) {
      errs() << "lockstep-opt: --gpu-tiles: " << err << "\n";
      return 2;
    }
    artifactOptions.codegen.gpuTiles = lockstep::formatTileShapes(table);
  }
  artifactOptions.codegen.reductionPolicy = reductionPolicy;
  artifactOptions.codegen.adaptiveRows = adaptiveRows;
  artifactOptions.codegen.adaptiveChunk = adaptiveChunk;
  artifactOptions.codegen.recognizeAttention = attention == "recognized";
  artifactOptions.codegen.stepForm = step;
  if (weights == "embed")
    artifactOptions.weights = lockstep::WeightPolicy::Embed;
  else if (weights == "reference")
    artifactOptions.weights = lockstep::WeightPolicy::Reference;
  else if (weights != "auto") {
    errs() << "lockstep-opt: unknown --weights value '" << weights
           << "' (expected auto, embed or reference)\n";
    return 2;
  }
  if (!tokenizer.empty()) {
    if (emit != "lsa") {
      errs() << "lockstep-opt: --tokenizer goes into an artifact: give -o MODEL.lsa\n";
      return 2;
    }
    auto buf = MemoryBuffer::getFile(tokenizer);
    if (!buf) {
      errs() << "lockstep-opt: cannot read '" << tokenizer << "': " << buf.getError().message()
             << "\n";
      return 1;
    }
    std::string err;
    artifactOptions.tokenizerJson = (*buf)->getBuffer().str();
    if (!lockstep::text::Tokenizer::fromJson(artifactOptions.tokenizerJson, err)) {
      errs() << "lockstep-opt: " << tokenizer << ": " << err << "\n";
      return 1;
    }
  }
  if (emit == "lsa" && output == "-") {
    errs() << "lockstep-opt: an artifact needs an output file (-o MODEL.lsa)\n";
    return 2;
  }
  if (!sys::fs::exists(input)) {
    errs() << "lockstep-opt: no such file '" << input << "'\n";
    return 1;
  }

  DialectRegistry registry;
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  MLIRContext ctx(registry);
  ctx.printOpOnDiagnostic(false);
  ctx.getDiagEngine().registerHandler(printDiagnostic);
  OwningOpRef<ModuleOp> module = lockstep::importONNXFile(input, &ctx);
  if (!module)
    return 1;
  if (emit != "onnx-raw") {
    PassManager pm(&ctx);
    lockstep::buildImportPipeline(pm);
    // Everything but the onnx form itself is of the serving form.
    if (emit != "onnx" &&
        failed(lockstep::buildServingPipeline(pm, artifactOptions.codegen)))
      return 1;
    if (failed(pm.run(*module)))
      return 1;
    if (emit != "onnx" && failed(lockstep::applyStepForm(*module, artifactOptions.codegen)))
      return 1;
    lockstep::declarePipelineGlobals(*module, artifactOptions.codegen);
  }
  if (emit == "lsa")
    { std::string outPath = output;
    return failed(lockstep::emitArtifact(*module, outPath, artifactOptions)); }
  if (emit == "linalg" || emit == "llvm" || emit == "ptx") {
    PassManager pm(&ctx);
    bool cuda = lockstep::targetsCuda(artifactOptions.codegen);
    if (failed(emit == "linalg" ? lockstep::buildLinalgPipeline(pm, artifactOptions.codegen)
               : cuda           ? lockstep::buildCUDACodegenPipeline(pm, artifactOptions.codegen)
                                : lockstep::buildCPUCodegenPipeline(pm, artifactOptions.codegen)))
      return 1;
    if (failed(pm.run(*module)))
      return 1;
  }
  std::string err;
  auto out = openOutputFile(output, &err);
  if (!out) {
    errs() << "lockstep-opt: " << err << "\n";
    return 1;
  }
  if (emit == "ptx") {
    for (auto &[name, ptx] : lockstep::kernelPTX(*module))
      out->os() << "// ===== " << name << "\n" << ptx;
    out->keep();
    return 0;
  }
  if (emit == "summary") {
    lockstep::printModelSummary(*module, out->os());
  } else {
    module->print(out->os());
    out->os() << "\n";
  }
  out->keep();
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  for (int i = 1; i < argc; ++i) {
    StringRef a(argv[i]);
    if (!a.starts_with("-") && lockstep::isONNXFile(a))
      return importMain(argc, argv);
  }
  DialectRegistry registry;
  registry.insert<lockstep::onnxir::ONNXDialect, lockstep::ls::LockstepDialect>();
  registerAllDialects(registry);
  registerAllExtensions(registry);
  registerAllToLLVMIRTranslations(registry);
  registerAllPasses();
  lockstep::registerLockstepPasses();
  // What MlirOptMain(argc, argv, name, registry) does, with parseOptions for
  // one-line errors.
  cl::opt<std::string> inputFilename(cl::Positional, cl::desc("<input file>"),
                                     cl::init("-"));
  cl::opt<std::string> outputFilename("o", cl::desc("Output filename"),
                                      cl::value_desc("filename"), cl::init("-"));
  MlirOptMainConfig::registerCLOptions(registry);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  tracing::DebugCounter::registerCLOptions();
  if (!parseOptions(argc, argv, kOverview))
    return 2;
  return asMainReturnCode(
      MlirOptMain(argc, argv, inputFilename, outputFilename, registry));
}
