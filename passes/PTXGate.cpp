//===- PTXGate.cpp - The lockstep-ptx-gate pass ---------------------------===//
//
// Reads the PTX of every kernel (the assembly objects of gpu.binary ops,
// after gpu-module-to-binary) and fails compilation where a kernel could
// give other bits than the CPU in the portable profile (../shared/GPU.md):
//   - an f32/f64 add, sub, mul, fma, div, sqrt or rcp without `.rn` (ptxas
//     fuses an unrounded mul and add into an FFMA);
//   - `.approx` or `.ftz` anywhere (approximate math, flushed subnormals);
//   - `call` or `.extern` (a libdevice or other function whose bits are not
//     the CPU's, and which an unresolved `.extern` would not even link);
//   - `mma`/`wgmma`, or f16, bf16 or tf32 arithmetic (the tensor-core
//     profile's, not the portable one's).
// The error names the kernel, the PTX line, and is located at the launch of
// that kernel, whose location is the ONNX node it computes.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Passes/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "llvm/ADT/StringExtras.h"

namespace lockstep {
#define GEN_PASS_DEF_PTXGATE
#include "lockstep/Passes/Passes.h.inc"
} // namespace lockstep

using namespace mlir;

namespace {

/// Why `line` (one PTX statement, trimmed) breaks the portable profile, or
/// an empty string.
std::string violation(StringRef line) {
  if (line.empty() || line.starts_with("//") || line == "{" || line == "}")
    return "";
  if (line.starts_with(".extern"))
    return "an external declaration (a call into code whose bits are not the CPU's)";
  if (line.starts_with("."))
    return "";
  if (line.ends_with(":"))
    return ""; // a label
  if (line.starts_with("@")) // a predicate guard
    line = line.drop_until([](char c) { return c == ' ' || c == '\t'; }).ltrim();
  StringRef opcode = line.take_until([](char c) { return c == ' ' || c == '\t' || c == ';'; });
  SmallVector<StringRef> parts;
  opcode.split(parts, '.');
  if (parts.empty())
    return "";
  StringRef op = parts[0];
  auto has = [&](StringRef p) { return llvm::is_contained(parts, p); };
  if (has("approx"))
    return "an approximate instruction";
  if (has("ftz"))
    return "subnormals flushed to zero (.ftz)";
  if (op == "call")
    return "a call (libdevice or another function whose bits are not the CPU's)";
  if (op == "mma" || op == "wgmma")
    return "a tensor-core instruction (not in the portable profile)";
  if (has("f16") || has("f16x2") || has("bf16") || has("bf16x2") || has("tf32"))
    return "16-bit or tf32 floating-point arithmetic (not in the portable profile)";
  bool fp = has("f32") || has("f64");
  if (fp && (op == "add" || op == "sub" || op == "mul" || op == "fma" || op == "div" ||
             op == "sqrt" || op == "rcp") &&
      !has("rn"))
    return "floating-point '" + op.str() + "' without .rn (ptxas may fuse or "
           "approximate it)";
  return "";
}

struct PTXGatePass : public lockstep::impl::PTXGateBase<PTXGatePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Where each kernel is launched: its ONNX node.
    llvm::StringMap<Location> launchedAt;
    module.walk([&](gpu::LaunchFuncOp l) {
      launchedAt.try_emplace(l.getKernelName().getValue(), l.getLoc());
    });
    bool failed = false;
    module.walk([&](gpu::BinaryOp bin) {
      for (Attribute a : bin.getObjects()) {
        auto obj = dyn_cast<gpu::ObjectAttr>(a);
        if (!obj)
          continue;
        if (obj.getFormat() != gpu::CompilationTarget::Assembly) {
          bin.emitError("the PTX gate reads PTX: compile the kernels to "
                        "assembly (format=isa)");
          failed = true;
          continue;
        }
        StringRef ptx = obj.getObject().getValue();
        SmallVector<StringRef> lines;
        ptx.split(lines, '\n');
        std::string kernel;
        for (auto [i, raw] : llvm::enumerate(lines)) {
          StringRef line = raw.trim();
          if (line.starts_with(".visible .entry") || line.starts_with(".entry")) {
            StringRef rest = line.drop_front(line.find(".entry") + 6).ltrim();
            kernel = rest.take_until([](char c) { return c == '(' || c == ' '; }).str();
          }
          // Several statements may share a line.
          SmallVector<StringRef> stmts;
          line.split(stmts, ';');
          for (StringRef s : stmts) {
            std::string why = violation(s.trim());
            if (why.empty())
              continue;
            auto it = launchedAt.find(kernel);
            Location loc = it != launchedAt.end() ? it->second : bin.getLoc();
            emitError(loc) << "PTX gate: kernel '" << kernel << "' (module '"
                           << bin.getSymName() << "'), PTX line " << i + 1 << " `"
                           << s.trim() << "`: " << why;
            failed = true;
            ++numRefused;
          }
        }
        ++numChecked;
      }
    });
    if (failed)
      signalPassFailure();
  }
};

} // namespace
