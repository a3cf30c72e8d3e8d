#!/usr/bin/env python3
"""CPU speed against onnxruntime (issue 18), in one command. Builds what it
needs (lockstep-opt and lockstep-run, if ninja says they are stale), writes
and compiles the models into a work directory, measures both systems in the
same run, and writes a Markdown report (date, CPU, cores, load average,
commit) whose ratios are Lockstep over onnxruntime, measured back to back:

  serve    per model and thread count (1 and 2): prefill tokens/s (prompts
           of 128 and 512) and decode tokens/s at 1, 8 and 32 concurrent
           requests. Lockstep: `lockstep-run bench --only batched` on the
           ragged step. onnxruntime: an InferenceSession on the same ONNX
           file (intra_op_num_threads = the thread count), its own greedy
           loop over past/present, on the same prompts (bench's, redrawn
           here from its seed).
  gemm     one MatMul graph per projection shape of the two large models
           (X[T, K] . W[K, N], W an initializer as in the models), compiled
           by lockstep-opt and timed by `lockstep-run exec --repeat`,
           against numpy's matmul (OpenBLAS, its thread count set to the
           same) in this process: the share of OpenBLAS's speed;
  adaptive the invariance cost: the same Lockstep cases and GEMMs compiled
           with --reduction-policy=adaptive (split chosen from the rows, as
           ordinary stacks do) against the canonical (invariant) build.

How each figure is taken (both systems get a warm-up that is not timed):
  prefill  N prompts of L tokens, one prompt a step (Lockstep: --token-budget
           L, --max-new-tokens 1; onnxruntime: batch 1, seq L, past 0).
           Lockstep: one `lockstep-run bench --warmup 1` process (the
           prompts served once untimed, so that first touches are not
           timed), its prefill line: the N steps, each timed inside the
           run.
           onnxruntime computes the logits of every position, as the graph
           says; Lockstep only the last (the serving step). A second
           onnxruntime column runs the same graph with the lm_head applied
           to the last position only (a Slice inserted before it), which is
           the same work as Lockstep's.
  decode   C requests of P prompt tokens, the whole prefill in one step
           (Lockstep: --token-budget C*P; onnxruntime: one batch of C equal
           prompts, so no padding and no attention mask), then D greedy
           steps of C tokens. onnxruntime: the D steps timed. Lockstep: one
           `lockstep-run bench --max-new-tokens D + 1 --warmup 1` process,
           its decode line: the D decode steps, each timed inside the run.

usage: bench/serve_vs_ort.py [--quick] [--out REPORT.md] [--results bench/RESULTS.md]
                             [--work DIR] [--log FILE] [--only serve,gemm,adaptive]
                             [--threads 1,2] [--models NAME,...] [--no-build]
--quick is a smoke run (small models, small sizes, a minute or two); a full run
writes its report into --results (bench/RESULTS.md by default, between the
markers of its CPU section) unless --results is empty."""
import os
import sys


def pick_openblas_core():
    """numpy's OpenBLAS picks its kernels when it loads. Some of its builds
    do not know newer CPUs and fall back to Prescott's (SSE3): 43 GFLOP/s
    at one thread here, where its SkylakeX kernels give 207. Before numpy
    is imported, a probe (another process) asks which core it picked; when
    that is Prescott on a CPU with AVX-512 (or AVX2 and FMA),
    OPENBLAS_CORETYPE is set to SkylakeX (Haswell) for this process, and
    the report's BLAS line says so (`kernels for ...`). A value already set
    in the environment (some machines here set Haswell, AVX2 only, even
    where the CPU has AVX-512) is removed first, as issue 18 asks, and so is
    OPENBLAS_L2_SIZE (it mis-sizes the blocking): the probe then sees what
    OpenBLAS picks by itself."""
    os.environ.pop("OPENBLAS_L2_SIZE", None)
    os.environ.pop("OPENBLAS_CORETYPE", None)
    import subprocess
    probe = ("import ctypes, glob, os, numpy\n"
             "p = glob.glob(os.path.join(os.path.dirname(numpy.__file__), '..', 'numpy.libs', '*openblas*'))\n"
             "lib = ctypes.CDLL(p[0])\n"
             "f = getattr(lib, 'openblas_get_corename64_', None) or lib.openblas_get_corename\n"
             "f.restype = ctypes.c_char_p\n"
             "print(f().decode())\n")
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.strip().lower() != "prescott":
        return
    flags = set()
    for line in open("/proc/cpuinfo"):
        if line.startswith("flags"):
            flags = set(line.split(":", 1)[1].split())
            break
    if {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"} <= flags:
        os.environ["OPENBLAS_CORETYPE"] = "SkylakeX"
    elif {"avx2", "fma"} <= flags:
        os.environ["OPENBLAS_CORETYPE"] = "Haswell"


pick_openblas_core()
# The benchmark is the package bench/cpu (its modules by concern).
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu.cli import main  # noqa: E402

if __name__ == "__main__":
    main(__doc__)
