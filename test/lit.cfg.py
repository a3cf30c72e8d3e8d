# lit configuration for Lockstep. Run through scripts/test, or:
#   lit build/test
import os
import lit.formats

config.name = "Lockstep"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".onnxtxt", ".test"]
config.excludes = ["lit.cfg.py", "lit.site.cfg.py", "Inputs", "unit", "CMakeLists.txt"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.lockstep_binary_dir, "test")

bin_dir = os.path.join(config.lockstep_binary_dir, "bin")
path = [bin_dir]
if getattr(config, "lockstep_compiler_bin_dir", ""):
    path.append(config.lockstep_compiler_bin_dir)
config.environment["PATH"] = os.pathsep.join(
    path + [config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])

# A sanitized build (scripts/test-sanitize): its tests carry the suite name
# Lockstep-asan, and any ASan, LSan or UBSan report kills the process with
# SIGABRT, which fails the test even under `not`.
if getattr(config, "lockstep_sanitize", False):
    config.name = "Lockstep-asan"
    config.available_features.add("sanitize")
    config.environment["ASAN_OPTIONS"] = (
        "halt_on_error=1:abort_on_error=1:detect_leaks=1:"
        "detect_stack_use_after_return=1:strict_string_checks=1")
    config.environment["UBSAN_OPTIONS"] = (
        "halt_on_error=1:abort_on_error=1:print_stacktrace=1")
config.substitutions.append(("%models", os.path.join(config.lockstep_source_dir, "models")))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%lockstep_src", config.lockstep_source_dir))


# The importer fuzzer (scripts/fuzz-import) needs clang-22's libFuzzer; without
# it, test/Fuzz/import-fuzzer.test is UNSUPPORTED. scripts/test builds the
# fuzzer before lit runs whenever libFuzzer is there.
import glob
if os.path.exists("/usr/lib/llvm-22/bin/clang++") and glob.glob(
        "/usr/lib/llvm-22/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a"):
    config.available_features.add("libfuzzer")

# CUDA's ptxas (the toolkit, /usr/local/cuda on these machines) checks that
# the compiler's PTX assembles for sm_90; without it those tests are
# UNSUPPORTED. A GPU is never needed here: the runtime's CUDA backend is
# tested against a stand-in driver (test/Runtime/Inputs/fake_cuda.c).
import shutil
ptxas = shutil.which("ptxas") or (
    "/usr/local/cuda/bin/ptxas" if os.path.exists("/usr/local/cuda/bin/ptxas") else None)
if ptxas:
    config.available_features.add("ptxas")
    config.substitutions.append(("%ptxas", ptxas))
cc = shutil.which("cc") or shutil.which("gcc")
if cc:
    config.available_features.add("cc")
    config.substitutions.append(("%cc", cc))
import ctypes
try:
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass

# The CPU's AVX-512 (x86-64-v4: F, BW, CD, DQ, VL): artifacts carry code
# for it beside the x86-64-v3 code, and the runtime runs it here.
try:
    _flags = set(open("/proc/cpuinfo").read().split())
except OSError:
    _flags = set()
if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= _flags:
    config.available_features.add("x86-64-v4")
