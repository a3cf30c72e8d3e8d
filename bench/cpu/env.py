"""The run's environment: paths, running and building the tools, the
machine's facts (CPU, cores, load, commit), numpy's OpenBLAS (its name and
thread count, set in this process) and the memory copy bandwidth."""
import ctypes
import datetime
import glob
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np

BENCH = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(BENCH)
BIN = os.path.join(ROOT, "build", "bin")
OPT = os.path.join(BIN, "lockstep-opt")
RUN = os.path.join(BIN, "lockstep-run")


def log(*a):
    print(*a, flush=True)


def loadavg():
    """The 1-, 5- and 15-minute load averages."""
    return [float(x) for x in open("/proc/loadavg").read().split()[:3]]


def sh(cmd, ok=(0,)):
    """Runs `cmd`; an exit status outside `ok` ends the benchmark with
    its output."""
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode not in ok:
        sys.exit(f"serve_vs_ort: failed ({r.returncode}): {' '.join(cmd)}\n{r.stdout}\n{r.stderr}")
    return r


def git(*a):
    """git's output in the checkout, stripped."""
    return subprocess.run(["git", "-C", ROOT] + list(a), capture_output=True, text=True).stdout.strip()


def build():
    """Builds lockstep-opt and lockstep-run if stale (ninja, at most 2
    jobs, in an existing build/; scripts/build otherwise); a failed build
    ends the benchmark."""
    if os.path.exists(os.path.join(ROOT, "build", "build.ninja")):
        jobs = str(max(1, min(2, os.cpu_count() or 1)))
        env = dict(os.environ, CCACHE_BASEDIR=ROOT)
        r = subprocess.run(["ninja", "-j", jobs, "-C", os.path.join(ROOT, "build"),
                            "lockstep-opt", "lockstep-run"], capture_output=True, text=True, env=env)
    else:
        r = subprocess.run([os.path.join(ROOT, "scripts", "build")], capture_output=True, text=True,
                           env=dict(os.environ, NINJA_FLAGS="lockstep-opt lockstep-run"))
    if r.returncode != 0:
        sys.exit(f"serve_vs_ort: the build failed:\n{r.stdout[-4000:]}\n{r.stderr[-4000:]}")


def machine():
    """The run's facts for the log's first line and the report's header
    (dirty: uncommitted changes outside docs/ and Markdown files)."""
    cpu = "unknown"
    for line in open("/proc/cpuinfo"):
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    flags = open("/proc/cpuinfo").read()
    fam = re.search(r"^cpu family\s*:\s*(\d+)", flags, re.M)
    mod = re.search(r"^model\s*:\s*(\d+)", flags, re.M)
    dirty = [l for l in git("status", "--porcelain", "--untracked-files=no").splitlines()
             if not (l[3:].startswith("docs/") or l[3:].endswith(".md"))]
    import onnxruntime
    return {"date": datetime.date.today().isoformat(),
            "time": datetime.datetime.now().isoformat(timespec="seconds"),
            "commit": git("rev-parse", "--short", "HEAD"), "dirty": bool(dirty),
            "cpu": cpu, "cpu_family_model": f"{fam and fam.group(1)}/{mod and mod.group(1)}",
            "cores": len(os.sched_getaffinity(0)), "online_cpus": os.cpu_count(),
            "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "os": platform.platform(), "onnxruntime": onnxruntime.__version__,
            "numpy": np.__version__, "blas": blas_name(), "loadavg": loadavg()}


def copy_bandwidth():
    """Bytes read and written per second by numpy's copy of 256 MiB (one
    thread): the memory roofline of a decode step."""
    a = np.ones(2**26, np.float32)
    b = np.empty_like(a)
    np.copyto(b, a)
    times = []
    for _ in range(5):
        t = time.perf_counter()
        np.copyto(b, a)
        times.append(time.perf_counter() - t)
    return 2 * a.nbytes / min(times)


# ---------------------------------------------------------------------------------
# numpy's OpenBLAS: its thread count, set in this process
# ---------------------------------------------------------------------------------

def _openblas():
    """numpy's own OpenBLAS (numpy.libs beside the package), or None."""
    libs = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "numpy.libs", "*openblas*"))
    for lib in libs:
        try:
            return ctypes.CDLL(lib)
        except OSError:
            pass
    return None


BLAS = _openblas()


def _blas_fn(*names):
    """The first of these OpenBLAS functions that exists (a 64-bit
    integer build suffixes its names), or None."""
    for n in names:
        if BLAS is not None and hasattr(BLAS, n):
            return getattr(BLAS, n)
    return None


def blas_name():
    """OpenBLAS's build configuration and the core its kernels are for."""
    f = _blas_fn("openblas_get_config64_", "openblas_get_config")
    c = _blas_fn("openblas_get_corename64_", "openblas_get_corename")
    if not f:
        return "unknown BLAS (no OpenBLAS found beside numpy)"
    f.restype = ctypes.c_char_p
    name = f().decode()
    if c:
        c.restype = ctypes.c_char_p
        name += f", kernels for {c().decode()}"
    if os.environ.get("OPENBLAS_CORETYPE"):
        name += f" (OPENBLAS_CORETYPE={os.environ['OPENBLAS_CORETYPE']}: this OpenBLAS takes this " \
                "CPU for a Prescott, SSE3 only, unless told)"
    return name


def blas_threads(n):
    """Sets OpenBLAS's thread count; False when it cannot."""
    f = _blas_fn("openblas_set_num_threads64_", "openblas_set_num_threads")
    if not f:
        return False
    f(ctypes.c_int(n))
    return True
