#!/usr/bin/env python3
"""Turns the logs of bench/run_all.py into the sentences and table rows that
README.md and docs/serving.md quote: ranges over the runs (lowest-highest),
ratios against the reference of the same run.

  bench/summary.py [--section machine,exec,serve,compile,import] LOG ...
  bench/summary.py --check FILE ...    each generated block of FILE equals
                                       what this prints for it (exit 1 if not)
  bench/summary.py --update FILE ...   rewrites each generated block

A generated block in a doc is

  <!-- bench/summary.py --section SECTIONS LOG-OR-GLOB ... -->
  ...what bench/summary.py --section SECTIONS LOGS prints...
  <!-- end bench/summary.py -->

with the logs relative to the repository root. --check also refuses a
measured figure (a number followed by x, s, ms, MiB or tokens/s) written
by hand in the section (## heading) that holds a block.
test/Docs/bench-numbers.test runs --check on README.md and docs/serving.md."""
import glob
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = ("machine", "exec", "serve", "compile", "import")


def read_logs(paths):
    runs = []
    for p in paths:
        recs = [json.loads(l) for l in open(p, encoding="utf-8") if l.strip()]
        if not recs or recs[0].get("bench") != "machine":
            sys.exit(f"summary: {p} is not a log of bench/run_all.py")
        runs.append((p, recs))
    return runs


def fmt(v, kind):
    if kind == "ratio":
        return f"{v:.2f}x" if v < 1 else f"{v:.1f}x"
    if kind == "s":
        return f"{v:.2f}" if v < 1 else f"{v:.1f}"
    if kind == "ms":
        return f"{v:.2f}" if v < 10 else f"{v:.1f}"
    if kind in ("rate", "mib", "int"):
        return f"{round(v):,}"
    if kind == "load":
        return f"{v:.1f}"
    raise ValueError(kind)


def rng(values, kind):
    """lowest-highest over the runs, once when they print the same."""
    if not values:
        sys.exit("summary: no measurement for a figure the docs quote")
    lo, hi = fmt(min(values), kind), fmt(max(values), kind)
    if kind == "ratio" and min(values) < 1:  # one precision for both ends
        lo, hi = f"{min(values):.2f}x", f"{max(values):.2f}x"
    if lo == hi:
        return lo
    if min(values) < 0:
        return f"{lo} to {hi}"
    if kind == "ratio":
        return f"{lo[:-1]}-{hi}"
    return f"{lo}-{hi}"


def sci(n):
    """1.25e8: three significant digits, trailing zeros dropped (one kept)."""
    e = len(str(int(n))) - 1
    m = f"{n / 10**e:.2f}".rstrip("0")
    return f"{m}0e{e}" if m.endswith(".") else f"{m}e{e}"


def plural(n, word):
    return f"{n} {word}" + ("" if n == 1 else "s")


def recs(runs, bench):
    out = [r for _, rs in runs for r in rs if r.get("bench") == bench]
    if not out:
        sys.exit(f"summary: no '{bench}' measurement in the logs")
    return out


def machine(runs):
    ms = [rs[0] for _, rs in runs]
    cpus = sorted({m["cpu"] for m in ms})
    cores = sorted({m["cores"] for m in ms})
    dates = sorted({m["date"] for m in ms})
    loads = [r["loadavg"][0] for _, rs in runs for r in rs if "loadavg" in r]
    dirs = sorted({os.path.dirname(os.path.relpath(p, ROOT)) for p, _ in runs})
    quick = sum(1 for m in ms if m.get("quick"))
    dirty = sum(1 for m in ms if m.get("dirty"))
    busy = max(loads) > 0.5 * max(cores)
    import datetime
    took = [(datetime.datetime.fromisoformat(rs[-1]["time"]) -
             datetime.datetime.fromisoformat(rs[0]["time"])).total_seconds()
            for _, rs in runs if rs[-1].get("bench") == "end"]
    commits = []
    for m in ms:
        if m["commit"][:7] not in commits:
            commits.append(m["commit"][:7])
    s = (f"Measured by `bench/run_all.py`: {plural(len(runs), 'run')} on {' to '.join(dates[::max(1, len(dates) - 1)])} "
         f"at {'commit' if len(commits) == 1 else 'commits'} {', '.join(commits)} "
         f"({', '.join('`' + d + '/`' for d in dirs)}), on {' or '.join(map(str, cores))} cores of "
         f"{' / '.join(cpus)} with onnxruntime {' / '.join(sorted({m['onnxruntime'] for m in ms}))}; "
         + (f"a run took {rng(took, 'int')} s; " if len(took) == len(runs) else "")
         + f"a range is the lowest to the highest over the runs. The 1-minute load average before a "
         f"measurement was {rng(loads, 'load')}"
         + (f", more than half its {max(cores)} cores: the machine was not idle, so the times "
            "include contention from other work; each ratio is to a reference measured in the same "
            "run."
            if busy else "."))
    lines = [s]
    if quick or dirty:
        lines.append(f"Of these runs, {quick} used --quick and {dirty} a working tree with "
                     f"uncommitted changes.")
    return lines


def exec_section(runs):
    rs = recs(runs, "exec")
    threads = sorted({r["threads"] for r in rs})
    repeats = sorted({r["repeat"] for r in rs})
    lines = [f"`bench/exec_vs_ort.py`: one forward pass of the exported graph (`--step=graph`), "
             f"batch 1, {' or '.join(map(str, threads))} threads, the median of "
             f"{' or '.join(map(str, repeats))} repeats, against onnxruntime's `run` in the same run "
             f"(the last column is Lockstep's time over onnxruntime's: below 1x, Lockstep is faster):",
             "",
             "| model | pass | attention | onnxruntime ms | lockstep ms | lockstep / onnxruntime |",
             "|---|---|---|---|---|---|"]
    cases = []
    for r in rs:
        key = (r["model"], r["seq"], r["past"], tuple(r["flags"]))
        if key not in cases:
            cases.append(key)
    slower = faster = 0
    for model, seq, past, flags in cases:
        c = [r for r in rs if (r["model"], r["seq"], r["past"], tuple(r["flags"])) ==
             (model, seq, past, flags)]
        what = (f"a prefill of {seq} tokens" if past == 0 else
                f"{plural(seq, 'decode token')} over a past of {past}")
        att = " ".join(f"`{f}`" for f in flags) or "`lockstep.attention`"
        ratios = [r["ratio"] for r in c]
        slower += sum(x > 1 for x in ratios)
        faster += sum(x < 1 for x in ratios)
        lines.append(f"| `models/{model}` | {what} | {att} | {rng([r['ort_ms'] for r in c], 'ms')} "
                     f"| {rng([r['lockstep_ms'] for r in c], 'ms')} | {rng(ratios, 'ratio')} |")
    lines.append("")
    n = len(rs)
    if slower == n:
        lines.append(f"Lockstep is slower than onnxruntime in every one of the {n} measurements.")
    else:
        lines.append(f"Lockstep is slower than onnxruntime in {slower} of the {n} measurements "
                     f"and faster in {faster}.")
    return lines


def serve_section(runs):
    rs = recs(runs, "serve")
    shape = lambda r: (r["requests"], r["prompt_len"], r["max_new_tokens"])
    shapes = list(dict.fromkeys(shape(r) for r in rs))  # distinct, in order
    models = sorted({r["model"] for r in rs})
    reps = sorted({r["repeat"] for r in rs})
    lines = [f"`lockstep-run bench` on {', '.join('`models/' + m + '`' for m in models)}, "
             f"generated tokens per second, each request alone and all batched in the same run "
             f"(in a run, the median of {' or '.join(map(str, reps))} benches of each case):"]
    label = {"ragged": "ragged step (default)", "graph": "`--step=graph` (one call per request)"}
    for n, prompt, new in shapes:
        lines += ["", f"{n} requests of {prompt} prompt + {new} new tokens:", "",
                  "| artifact | threads | alone | batched | batched / alone |",
                  "|---|---|---|---|---|"]
        here = [r for r in rs if shape(r) == (n, prompt, new)]
        keys = sorted(dict.fromkeys((r["step"], r["threads"]) for r in here),
                      key=lambda k: (k[0] != "ragged", k[1]))
        for step, threads in keys:
            c = [r for r in here if (r["step"], r["threads"]) == (step, threads)]
            lines.append(
                f"| {label.get(step, step)} | {threads} "
                f"| {rng([r['alone']['generated_per_s'] for r in c], 'rate')} "
                f"| {rng([r['batched']['generated_per_s'] for r in c], 'rate')} "
                f"| {rng([r['batched_over_alone'] for r in c], 'ratio')} |")
    same = sum(1 for r in rs if r["identical"])
    lines.append("")
    if same == len(rs):
        lines.append(f"Logits identical bit for bit between alone and batched in every one of the "
                     f"{sum(r['repeat'] for r in rs)} benches.")
    else:
        lines.append(f"Logits DIFFERENT between alone and batched in {len(rs) - same} of the "
                     f"{len(rs)} cases measured.")
    return lines


def compile_section(runs):
    rs = recs(runs, "compile")
    r0 = rs[0]
    parts = []
    for case in ("weights embedded", "weights referenced"):
        c = [r for r in rs if r["case"] == case]
        above = [r["above_weights_mib"] for r in c]
        parts.append(f"{case} {rng([r['wall_s'] for r in c], 's')} s, "
                     f"{rng([r['peak_mib'] for r in c], 'mib')} MiB peak" +
                     (f" ({rng(above, 'mib')} MiB above the weights)" if min(above) > 0 else
                      " (less than the weights)" if max(above) < 0 else ""))
    return [f"`bench/compile_large.py` compiles a Llama-style decoder of {sci(r0['params'])} "
            f"parameters ({r0['layers']} layers, hidden {r0['hidden']}, vocab {r0['vocab']}, "
            f"{r0['weights_mib']} MiB of weights) to an artifact: " + "; ".join(parts) + "."]


def import_section(runs):
    rs = recs(runs, "import")
    r0 = rs[0]
    by = lambda case, key: [r[key] for r in rs if r["case"] == case]
    ratio = lambda key: [a[key] / b[key] for a, b in zip(
        [r for r in rs if r["case"] == "inline"], [r for r in rs if r["case"] == "onnx.load"])]
    one = lambda case: f"{rng(by(case, 'wall_s'), 's')} s / {rng(by(case, 'peak_mib'), 'mib')} MiB peak"
    return [f"`bench/import_large.py` builds a graph of {sci(r0['params'])} parameters "
            f"({r0['size_mib']} MiB) and times lockstep-opt's import (`--emit=summary`: shapes "
            f"inferred, weight bytes not read) against `onnx.load` of the same file in the same run: "
            f"external data {one('external data')}, weights inline {one('inline')}; "
            f"`onnx.load` {one('onnx.load')} (inline over `onnx.load`: "
            f"{rng(ratio('wall_s'), 'ratio')} the time, {rng(ratio('peak_mib'), 'ratio')} the memory)."]


MAKERS = {"machine": machine, "exec": exec_section, "serve": serve_section,
          "compile": compile_section, "import": import_section}


def summary(sections, paths):
    runs = read_logs(paths)
    lines = []
    for s in sections:
        if s not in MAKERS:
            sys.exit(f"summary: unknown section '{s}'")
        if lines:
            lines.append("")
        lines += MAKERS[s](runs)
    return lines


BEGIN = re.compile(r"^<!-- bench/summary\.py --section (\S+) (.+?) -->$")
END = "<!-- end bench/summary.py -->"
# A measured figure written by hand: a number followed by a unit of time,
# memory or rate, or by x (a ratio).
FIGURE = re.compile(r"(?<![\w.^-])\d[\d,]*(\.\d+)?(e\d+)?(-\d[\d,.]*)?\s?(x|s|ms|MiB|GiB|tokens/s)(?![\w-])")


def expand(spec):
    paths = []
    for pat in spec.split():
        got = sorted(glob.glob(os.path.join(ROOT, pat)))
        if not got:
            sys.exit(f"summary: no log matches {pat}")
        paths += got
    return paths


def check(files, update):
    wrong = checked = 0
    for f in files:
        lines = open(f, encoding="utf-8").read().split("\n")
        out, i, blocks, section_has_block = [], 0, 0, {}
        heading = None
        hand = []
        while i < len(lines):
            line = lines[i]
            if line.startswith("## "):
                heading = line
            m = BEGIN.match(line)
            if not m:
                out.append(line)
                if not line.startswith("<!--"):
                    code = re.sub(r"`[^`]*`", "", line)
                    for g in FIGURE.finditer(code):
                        hand.append((heading, i + 1, g.group(0)))
                i += 1
                continue
            try:
                end = lines.index(END, i + 1)
            except ValueError:
                sys.exit(f"summary: {f}:{i + 1}: no '{END}' after the block")
            section_has_block[heading] = True
            blocks += 1
            checked += 1
            want = summary(m.group(1).split(","), expand(m.group(2)))
            have = lines[i + 1:end]
            name = f"{os.path.relpath(f, ROOT)}:{i + 1} --section {m.group(1)}"
            if have == want:
                print(f"ok    {name}: {len(want)} lines")
            elif update:
                print(f"updated {name}: {len(want)} lines")
            else:
                wrong += 1
                print(f"WRONG {name}: the doc differs from bench/summary.py")
                diffs = [(h, w) for h, w in zip(have + ["<none>"] * len(want),
                                                 want + ["<none>"] * len(have)) if h != w]
                for h, w in diffs[:8]:
                    print(f"  doc:     {h}\n  summary: {w}")
            out += [line] + want + [END]
            i = end + 1
        for heading, n, fig in hand:
            if section_has_block.get(heading):
                checked += 1
                wrong += 1
                print(f"WRONG {os.path.relpath(f, ROOT)}:{n}: '{fig}' is a figure written by hand "
                      f"in {heading!r}, outside the generated block")
        if blocks == 0:
            wrong += 1
            print(f"WRONG {os.path.relpath(f, ROOT)}: no generated block")
        if update:
            open(f, "w", encoding="utf-8").write("\n".join(out))
    print(f"bench numbers: {checked} checked, {wrong} wrong")
    return 1 if wrong else 0


def main(argv):
    if argv and argv[0] in ("--check", "--update"):
        return check(argv[1:], argv[0] == "--update")
    sections = list(SECTIONS)
    if argv and argv[0] == "--section":
        sections = argv[1].split(",")
        argv = argv[2:]
    if not argv:
        sys.exit(__doc__)
    print("\n".join(summary(sections, argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
