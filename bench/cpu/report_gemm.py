"""The report's GEMM sections: Lockstep's MatMuls against OpenBLAS, where
a step's time goes (its MatMuls timed alone), and the invariance cost
(canonical against --reduction-policy=adaptive, serving and GEMMs)."""
import statistics

from .gemm import gemm_shapes
from .tables import fr, grouped, med


def gemm_table(res, cfg):
    """The GEMM table: each shape, rows and thread count, with the adaptive
    control's time over the canonical one when measured."""
    L = []
    g = res.get("gemm", [])
    if g:
        L += ["### GEMM: Lockstep's compiled MatMul against numpy (OpenBLAS)", "",
              "Y[T, N] = X[T, K] . W[K, N], W an initializer as in the models; Lockstep's time is the median "
              "of `lockstep-run exec --repeat` (the run only), numpy's the median of as many `X @ W` in this "
              f"process, its OpenBLAS set to the same thread count; the two alternate {cfg.get('gemm_rounds', 1)} "
              "times and the medians count. Share = OpenBLAS time / Lockstep time "
              "(the target: 80% at prefill shapes, T = 128 and 512). The lm_head runs at the decode sizes "
              "only: a serving step applies it to one row a request, prefill included. At small T the "
              "weights stay in the cache between repeats, unlike in a model.", "",
              "| K x N | used by | T | threads | OpenBLAS GFLOP/s | Lockstep GFLOP/s | share of OpenBLAS |"
              + (" adaptive / canonical time |" if any("adaptive_s" in r for r in g) else ""),
              "|---|---|---:|---:|---:|---:|---:|" + ("---:|" if any("adaptive_s" in r for r in g) else "")]
        for r in g:
            row = (f"| {r['k']} x {r['n']} | {', '.join(r['uses'])} | {r['t']} | {r['threads']} | "
                   f"{r['numpy_gflops']:.1f} | {r['lockstep_gflops']:.1f} | {r['share'] * 100:.0f}% |")
            if "adaptive_s" in r:
                row += f" {r['adaptive_s'] / r['lockstep_s']:.2f} |"
            L.append(row)
        L.append("")
    return L


def breakdown(models, res):
    """A step's time against the sum of its MatMuls' times in this run's
    GEMM table (the same shapes, rows and threads): what is left is
    attention, norms, elementwise ops, copies and the runtime."""
    g = {(r["k"], r["n"], r["t"], r["threads"]): r for r in res.get("gemm", [])}
    rows = []
    for m in models:
        if not m.get("config"):
            continue
        spec = dict(kind=m["kind"], config=m["config"])
        shapes = gemm_shapes(spec)
        recs = [r for r in res.get("prefill", []) + res.get("decode", []) if r["model"] == m["model"]]
        for (_, what, threads), rs in grouped(recs).items():
            r = rs[0]
            if r["bench"] == "prefill":
                t, head_rows = r["length"], 1
                ls = med(rs, lambda x: x["lockstep_tok_s"])
                ls_ms = 1e3 * t / ls if ls else None
                ort_ms = 1e3 * t / med(rs, lambda x: x["ort_tok_s"])
            else:
                t = head_rows = r["concurrency"]
                ls_ms = med(rs, lambda x: x["lockstep"]["ms_per_step"])
                ort_ms = med(rs, lambda x: x["ort_ms_per_step"])
            if ls_ms is None:
                continue
            ls_mm = blas_mm = 0.0
            ok = True
            for name, k, n, count in shapes:
                rows_ = head_rows if name == "lm_head" else t
                times = count * (1 if name == "lm_head" else m["config"]["layers"])
                rec = g.get((k, n, rows_, r["threads"]))
                if not rec:
                    ok = False
                    break
                ls_mm += times * rec["lockstep_s"] * 1e3
                blas_mm += times * rec["numpy_s"] * 1e3
            if ok:
                rows.append((m["model"], what, r["threads"], ls_ms, ls_mm, blas_mm, ort_ms))
    if not rows:
        return []
    L = ["### Where a step's time goes: its MatMuls, timed alone", "",
         "Each step's MatMuls (every projection of every layer at the step's rows, and the lm_head at "
         "one row a request) summed from the GEMM table above, against the step's time. The rest is "
         "attention, norms, elementwise ops, copies and the runtime. At decode sizes the GEMM table's "
         "weights stay in the cache between repeats, so the MatMul share of a decode step is "
         "underestimated there.", "",
         "| model | case | threads | Lockstep ms a step | its MatMuls alone | MatMul share | "
         "the same MatMuls in OpenBLAS | onnxruntime ms a step |",
         "|---|---|---:|---:|---:|---:|---:|---:|"]
    for model, what, threads, ls_ms, ls_mm, blas_mm, ort_ms in rows:
        L.append(f"| `{model}` | {what} | {threads} | {ls_ms:.1f} | {ls_mm:.1f} | {ls_mm / ls_ms * 100:.0f}% | "
                 f"{blas_mm:.1f} | {ort_ms:.1f} |")
    L.append("")
    return L


def invariance(res):
    """The invariance cost: the serving cases' adaptive tokens/s against
    the canonical ones, then the same on the GEMMs alone by rows."""
    pre, dec = res.get("prefill", []), res.get("decode", [])
    g = res.get("gemm", [])
    L = []
    inv = [r for r in pre + dec if "adaptive" in r]
    if inv:
        L += ["### Invariance cost: canonical against `--reduction-policy=adaptive`", "",
              "The same Lockstep cases, compiled with the adaptive negative control (reductions folded "
              "whole at 4 rows or more, split in chunks of 16 below: the split chosen from the batch, as "
              "ordinary stacks do; not batch-invariant). Cost = adaptive tokens/s over canonical tokens/s "
              "less 1: what the invariant form costs (negative: the control is slower); medians of the "
              "measurements, and the range of the back-to-back pairs' costs. At the lowest thread count "
              "only: the control's loops are not split over threads (with 2 it runs as with 1), which "
              "would measure that instead.", "",
              "| model | case | threads | canonical tok/s | adaptive tok/s | cost | pairs |",
              "|---|---|---:|---:|---:|---:|---:|"]
        for (model, what, threads), rs in grouped(inv).items():
            c = med(rs, lambda r: r["lockstep_tok_s"])
            a = med(rs, lambda r: r["adaptive"]["tok_s"])
            pairs = [r["adaptive"]["tok_s"] / r["lockstep_tok_s"] - 1 for r in rs
                     if r["adaptive"]["tok_s"] and r["lockstep_tok_s"]]
            spread = (f"{min(pairs) * 100:+.0f}% to {max(pairs) * 100:+.0f}%" if len(pairs) > 1 else "")
            L.append(f"| `{model}` | {what} | {threads} | {fr(c)} | {fr(a)} | "
                     + (f"{(a / c - 1) * 100:+.1f}% |" if a and c else "n/a |") + f" {spread} |")
        L.append("")
    ga = [r for r in g if "adaptive_s" in r]
    if ga:
        L += ["The same comparison on the GEMMs alone (the table's last column): the median of adaptive / "
              "canonical time over the shapes: 0.95 means that the control's whole fold takes 5% less time "
              "than the canonical chunks (the partials, then their combine).", "",
              "| rows T | threads | GEMMs | median adaptive / canonical time | range |", "|---|---:|---:|---:|---:|"]
        for label, sel in (("1 (the control splits in chunks of 16)", lambda t: t == 1),
                           ("8 to 32", lambda t: 1 < t < 128), ("128 and more", lambda t: t >= 128)):
            for threads in sorted({r["threads"] for r in ga}):
                v = [r["adaptive_s"] / r["lockstep_s"] for r in ga if sel(r["t"]) and r["threads"] == threads]
                if v:
                    L.append(f"| {label} | {threads} | {len(v)} | {statistics.median(v):.2f} | "
                             f"{min(v):.2f}-{max(v):.2f} |")
        L.append("")
    return L
