//===- CPUCodegen.cpp - LLVM IR, x86-64 object, shared object -------------===//
//
// The LLVM dialect module is translated to LLVM IR, optimized at O2 and
// compiled to an object with FMA contraction off (FPOpFusion::Strict) and no
// fast-math flags, then linked into a shared object by lld in process. The
// object and the shared object pass through a private temporary directory
// that is removed before returning.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Target/CPUCodegen.h"

#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "lld/Common/Driver.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Triple.h"

LLD_HAS_DRIVER(elf)

using namespace mlir;

namespace {

constexpr const char *kTriple = "x86_64-unknown-linux-gnu";
// x86-64-v3 (AVX2, FMA), or x86-64-v4 (AVX-512) for the optional second
// code: the contract's explicit fma is one instruction (without it, LLVM
// calls libm's fmaf). The bits do not depend on it: fma is correctly rounded
// either way and nothing else is contracted. The runtime refuses to load
// the code on a CPU without these features.
std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const std::string &cpu,
                                                       std::string &error) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  llvm::Triple triple(kTriple);
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions options;
  options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  options.NoInfsFPMath = false;
  options.NoNaNsFPMath = false;
  // Constructors (a CUDA step's kernel-module registration) go in
  // .init_array, which the dynamic loader runs at dlopen; .ctors needs a
  // crtbegin that an in-process lld link does not add.
  options.UseInitArray = true;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, cpu, "", options, llvm::Reloc::PIC_, std::nullopt,
      llvm::CodeGenOptLevel::Default));
}

void optimize(llvm::Module &m, llvm::TargetMachine &tm) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  pb.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O2).run(m, mam);
}

/// A temporary directory removed with everything in it on destruction.
struct TempDir {
  llvm::SmallString<128> path;
  ~TempDir() {
    if (!path.empty())
      llvm::sys::fs::remove_directories(path);
  }
};

} // namespace

bool lockstep::emitSharedObject(ModuleOp module, std::vector<uint8_t> &out,
                                std::string &error, const std::string &cpuLevel) {
  DialectRegistry registry;
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  // A GPU step's host code: gpu.binary (the kernels' PTX, embedded) and
  // gpu.launch_func (calls of the runtime's mgpu* launch functions).
  registerGPUDialectTranslation(registry);
  gpu::registerOffloadingLLVMTranslationInterfaceExternalModels(registry);
  module->getContext()->appendDialectRegistry(registry);

  llvm::LLVMContext llctx;
  std::unique_ptr<llvm::Module> llmod = translateModuleToLLVMIR(module, llctx);
  if (!llmod) {
    error = "translation to LLVM IR failed";
    return false;
  }
  std::unique_ptr<llvm::TargetMachine> tm = makeTargetMachine(cpuLevel, error);
  if (!tm)
    return false;
  llmod->setDataLayout(tm->createDataLayout());
  llmod->setTargetTriple(tm->getTargetTriple());
  optimize(*llmod, *tm);

  llvm::SmallVector<char, 0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile)) {
      error = "the target cannot emit an object file";
      return false;
    }
    pm.run(*llmod);
  }

  TempDir dir;
  if (auto ec = llvm::sys::fs::createUniqueDirectory("lockstep", dir.path)) {
    error = "cannot create a temporary directory: " + ec.message();
    return false;
  }
  llvm::SmallString<128> objPath(dir.path), soPath(dir.path);
  llvm::sys::path::append(objPath, "model.o");
  llvm::sys::path::append(soPath, "model.so");
  {
    std::error_code ec;
    llvm::raw_fd_ostream f(objPath, ec);
    if (ec) {
      error = "cannot write " + std::string(objPath) + ": " + ec.message();
      return false;
    }
    f.write(object.data(), object.size());
  }
  std::string linkLog;
  llvm::raw_string_ostream linkOut(linkLog);
  const char *args[] = {"ld.lld",  "-shared", "-o",     soPath.c_str(),
                        objPath.c_str(), "-z", "noexecstack", "--as-needed"};
  lld::Result r = lld::lldMain(args, linkOut, linkOut,
                               {{lld::Gnu, &lld::elf::link}});
  if (r.retCode != 0) {
    error = "linking the shared object failed: " + linkLog;
    return false;
  }
  auto so = llvm::MemoryBuffer::getFile(soPath, /*IsText=*/false);
  if (!so) {
    error = "cannot read the linked shared object";
    return false;
  }
  out.assign((*so)->getBufferStart(), (*so)->getBufferEnd());
  return true;
}
