"""Compiles each model with each negative control and runs a 20-schedule
fuzz campaign on it. Prints "NAME POLICY: caught" only for a mismatch report
(exit status 1 and a MISMATCH verdict); any other outcome is printed with
the command's last lines, so that a crash or a refusal is never counted as
caught.

  run_controls.py OUTDIR MODEL.onnx ...
"""
import os
import subprocess
import sys

CONTROLS = {
    "adaptive-kv": ["--reduction-policy=adaptive-kv"],
    "adaptive-softmax": ["--reduction-policy=adaptive-softmax", "--attention=decomposed",
                         "--step=graph"],
    "adaptive-threads": ["--reduction-policy=adaptive-threads"],
}


def main(out, models):
    for model in models:
        name = os.path.splitext(os.path.basename(model))[0]
        for policy, flags in CONTROLS.items():
            lsa = os.path.join(out, f"{name}.{policy}.lsa")
            c = subprocess.run(["lockstep-opt", model, *flags, "-o", lsa],
                               capture_output=True, text=True)
            if c.returncode != 0:
                print(f"{name} {policy}: not compiled: {c.stderr.strip()[-300:]}")
                continue
            r = subprocess.run(["lockstep-run", "fuzz", lsa, "--schedules", "20", "--seed", "1",
                                "--trace", os.path.join(out, f"{name}.{policy}.trace")],
                               capture_output=True, text=True)
            caught = r.returncode == 1 and "verdict: MISMATCH" in r.stdout
            if caught:
                print(f"{name} {policy}: caught")
            else:
                tail = (r.stdout + r.stderr).strip().splitlines()[-3:]
                print(f"{name} {policy}: NOT caught (exit {r.returncode}): {' | '.join(tail)}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
