#!/usr/bin/env python3
"""Where a CPU run's time goes, by function: `perf record` (software clock
sampling, no root needed where perf_event_paranoid <= 2) around a
lockstep-run command, with the samples in the compiled code (loaded from
a memfd, so perf cannot name them) mapped to the functions of the
artifact's CPU code section, extracted here.

  bench/cpu_profile.py [--top N] [--freq HZ] -- lockstep-run ARGS... MODEL.lsa ...

The artifact is the first argument ending in .lsa. Prints one line per
function: its share of the samples, where it lives (code: the artifact's
functions, lockstep_par_N being the N-th outlined parallel loop, shared
by the layers that repeat it; kernel: page faults and the like; the
runtime, libc), then the shares by place. Each lockstep_par_N also gets
its size and its count of FMA and vector instructions (objdump), a hint of
what it computes.
"""
import argparse
import bisect
import collections
import os
import re
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def runs_v4_code(sections):
    """Whether the runtime runs the artifact's x86-64-v4 code (section 8)
    rather than section 2: as CpuBackend.cpp's pickCpuLevel decides."""
    want = os.environ.get("LOCKSTEP_CPU_LEVEL", "auto")
    if 8 not in sections or want == "base":
        return False
    flags = set(open("/proc/cpuinfo").read().split())
    return want == "x86-64-v4" or {"avx512f", "avx512bw", "avx512cd", "avx512dq",
                                   "avx512vl"} <= flags


def code_section(lsa, out):
    """Writes the CPU code that the runtime runs (section kind 2, or 8 for
    x86-64-v4; each an ELF shared object; lib/Artifact's format,
    include/lockstep/Artifact/Artifact.h) to `out`."""
    b = open(lsa, "rb").read()
    if b[:4] != b"\x89LSA":
        sys.exit(f"cpu_profile: {lsa} is not an artifact")
    sections = {}
    for i in range(struct.unpack_from("<I", b, 12)[0]):
        kind, _, off, size = struct.unpack_from("<IIQQ", b, 64 + 24 * i)
        sections[kind] = (off, size)
    kind = 8 if runs_v4_code(sections) else 2
    if kind not in sections:
        sys.exit(f"cpu_profile: {lsa} has no CPU code")
    off, size = sections[kind]
    open(out, "wb").write(b[off:off + size])
    return out


def symbols(so):
    syms = []
    for line in subprocess.run(["nm", "-n", "-S", so], capture_output=True, text=True).stdout.splitlines():
        p = line.split()
        if len(p) == 4 and p[2] in "tTwW":
            syms.append((int(p[0], 16), int(p[1], 16), p[3]))
    return syms


def text_delta(so):
    """perf names a sample in a deleted memfd by its file offset; the
    symbols are at virtual addresses: the executable segment's vaddr less
    its offset."""
    out = subprocess.run(["readelf", "-lW", so], capture_output=True, text=True).stdout
    for line in out.splitlines():
        p = line.split()
        if p and p[0] == "LOAD" and p[-2].endswith("E"):
            return int(p[2], 16) - int(p[1], 16)
    return 0


def hints(so, syms):
    """Per function: bytes, FMAs, other vector instructions."""
    out = {}
    dis = subprocess.run(["objdump", "-d", "--no-show-raw-insn", so], capture_output=True,
                         text=True).stdout
    cur = None
    for line in dis.splitlines():
        m = re.match(r"^[0-9a-f]+ <([^>]+)>:", line)
        if m:
            cur = m.group(1).replace("_tramp", "")
            out.setdefault(cur, [0, 0])
            continue
        if cur and "\t" in line:
            ins = line.split("\t")[-1].split()[0] if line.split("\t")[-1].split() else ""
            if ins.startswith("vfmadd") or ins.startswith("vfnmadd"):
                out[cur][0] += 1
            elif "ymm" in line or "zmm" in line:
                out[cur][1] += 1
    sizes = collections.Counter()
    for _, size, name in syms:
        sizes[name.replace("_tramp", "")] += size
    return {k: (sizes[k], v[0], v[1]) for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--freq", type=int, default=999)
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd
    lsa = next((c for c in cmd if c.endswith(".lsa")), None)
    if not cmd or not lsa:
        sys.exit("cpu_profile: give a lockstep-run command with its .lsa after --")
    d = tempfile.mkdtemp()
    so = code_section(lsa, os.path.join(d, "code.so"))
    data = os.path.join(d, "perf.data")
    r = subprocess.run(["perf", "record", "-F", str(a.freq), "-o", data, "--"] + cmd,
                       capture_output=True, text=True)
    sys.stdout.write(r.stdout)
    if r.returncode != 0:
        sys.exit(f"cpu_profile: perf record failed ({r.returncode}):\n{r.stderr}")
    syms = symbols(so)
    addrs = [s[0] for s in syms]
    delta = text_delta(so)
    rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso,sym",
                          "--percent-limit", "0", "--stdio"], capture_output=True, text=True).stdout
    funcs, places = collections.Counter(), collections.Counter()
    for line in rep.splitlines():
        m = re.match(r"\s+([0-9.]+)%\s+(\S.*?)\s+\[(.)\]\s+(\S.*)$", line)
        if not m:
            continue
        pct, dso, sym = float(m.group(1)), m.group(2).strip(), m.group(4).strip()
        if "lockstep-code" in dso:
            place = "code"
            if sym.startswith("0x"):
                i = bisect.bisect_right(addrs, int(sym, 16) + delta) - 1
                sym = syms[i][2] if i >= 0 else sym
            sym = sym.replace("_tramp", "")
        else:
            place = "kernel" if "kernel" in dso else os.path.basename(dso)
        funcs[(place, sym)] += pct
        places[place] += pct
    h = hints(so, syms)
    print(f"{'share':>7}  {'where':<14} {'function':<40} {'bytes':>7} {'FMAs':>5} {'vector':>6}")
    for (place, sym), pct in funcs.most_common(a.top):
        b, f, v = h.get(sym, ("", "", "")) if place == "code" else ("", "", "")
        print(f"{pct:6.2f}%  {place[:14]:<14} {sym[:40]:<40} {b:>7} {f:>5} {v:>6}")
    print()
    print("by place: " + ", ".join(f"{p} {v:.1f}%" for p, v in places.most_common()))


if __name__ == "__main__":
    main()
