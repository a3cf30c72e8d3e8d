"""Prints each decoder's attention kinds as lockstep-opt proves them.

For every .onnx under MODELS, runs `lockstep-opt MODEL --emit=summary` and
prints one line: the model, whether it is served as a ragged step, and the
kind of each attention in program order (causal, wN for a window of N,
+capC for a softcap of C, a trailing * when the mask reads inputs and was
proven for the values the runtime feeds them). A mask that
lockstep-prove-mask could not prove prints as `own(REASON)`. The last line counts the models, the attentions,
and those left with the graph's own mask.

Usage: check_masks.py MODELS_DIR
"""
import os
import re
import subprocess
import sys


def kinds(summary):
    out = []
    for line in summary.splitlines():
        m = re.match(r"\s+\d+: (.*) \(node .*\)$", line)
        if not m:
            continue
        text = m.group(1)
        served = re.search(r" \(the graph's own mask, proven for [^)]*\)", text)
        text = text.replace(served.group(0), "") if served else text
        w = re.match(r"causal(?:, window (\d+))?(?:, softcap ([0-9.e+-]+))?$", text)
        if w:
            k = "causal" if not w.group(1) else f"w{w.group(1)}"
            if w.group(2):
                k += f"+cap{float(w.group(2)):g}"
            if served:
                k += "*"  # proven for the runtime's inputs; the graph keeps its mask
        else:
            k = "own(" + text + ")"
        out.append(k)
    return out


def main():
    root = sys.argv[1]
    paths = []
    for d, _, files in os.walk(root):
        paths += [os.path.join(d, f) for f in files if f.endswith(".onnx")]
    total = own = 0
    for path in sorted(paths):
        r = subprocess.run(["lockstep-opt", path, "--emit=summary"],
                           capture_output=True, text=True)
        name = os.path.relpath(path, root)
        if r.returncode:
            print(f"{name}: FAIL {r.stderr.strip()}")
            own += 1
            continue
        ks = kinds(r.stdout)
        ragged = "serving:  ragged step" in r.stdout
        total += len(ks)
        own += sum(k.startswith("own") for k in ks)
        print(f"{name}: {'ragged' if ragged else 'graph'} {' '.join(ks)}")
    print(f"{len(paths)} models, {total} attentions, {own} not proven")


if __name__ == "__main__":
    main()
