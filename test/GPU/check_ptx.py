"""Every decoder under MODELS compiles for the GPU, through the PTX gate.

For each .onnx under MODELS, runs `lockstep-opt MODEL --target=cuda
--emit=ptx` (the ragged step; the PTX gate refuses any kernel that could
give other bits than the CPU) and counts its kernels. With --ptxas PTXAS,
every kernel of the models named by --assemble (substrings of their paths)
is also assembled by CUDA's ptxas for sm_90, which must accept it.
Prints a line per model and a total; exits 1 on any failure.

usage: check_ptx.py MODELS_DIR WORK_DIR [--ptxas PTXAS] [--assemble NAME ...]
"""
import os
import re
import subprocess
import sys


def main():
    models, work = sys.argv[1], sys.argv[2]
    rest = sys.argv[3:]
    ptxas = rest[rest.index("--ptxas") + 1] if "--ptxas" in rest else None
    assemble = rest[rest.index("--assemble") + 1:] if "--assemble" in rest else []
    os.makedirs(work, exist_ok=True)
    paths = sorted(os.path.join(d, f) for d, _, fs in os.walk(models) for f in fs
                   if f.endswith(".onnx"))
    failures = kernels = assembled = 0
    for path in paths:
        name = os.path.relpath(path, models)
        r = subprocess.run(["lockstep-opt", path, "--target=cuda", "--emit=ptx"],
                           capture_output=True, text=True)
        if r.returncode:
            print(f"FAIL {name}: {r.stderr.strip()}")
            failures += 1
            continue
        parts = re.split(r"^// ===== (\S+)\n", r.stdout, flags=re.M)[1:]
        mods = list(zip(parts[::2], parts[1::2]))
        kernels += len(mods)
        note = ""
        if ptxas and any(a in name for a in assemble):
            for mod, ptx in mods:
                f = os.path.join(work, name.replace("/", "_") + "." + mod + ".ptx")
                with open(f, "w") as out:
                    out.write(ptx)
                a = subprocess.run([ptxas, "-arch=sm_90", f, "-o", os.devnull],
                                   capture_output=True, text=True)
                if a.returncode:
                    print(f"FAIL {name}: ptxas refused {mod}: {a.stderr.strip()}")
                    failures += 1
                    break
                assembled += 1
            note = ", assembled by ptxas"
        print(f"ok   {name}: {len(mods)} kernels through the PTX gate{note}")
    print(f"{len(paths)} models, {kernels} kernels gated, {assembled} assembled by ptxas, "
          f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
