"""Runs `lockstep-run exec` on the inputs written by scripts/gpu_exec_inputs.py.

usage: run_exec.py LOCKSTEP_RUN MODEL.lsa IN_DIR OUT_DIR [EXTRA_FLAGS ...]
Passes every `NAME=FILE` line of IN_DIR/inputs.txt as --input, prints
lockstep-run's output and exits with its status.
"""
import os
import subprocess
import sys

run, model, indir, outdir, extra = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
args = [run, "exec", model, "--output-dir", outdir] + extra
for line in open(os.path.join(indir, "inputs.txt")).read().split():
    name, file = line.split("=", 1)
    args += ["--input", f"{name}={os.path.join(indir, file)}"]
r = subprocess.run(args, capture_output=True, text=True)
sys.stdout.write(r.stdout)
sys.stderr.write(r.stderr)
sys.exit(r.returncode)
