"""The report's number formats, and the serving records grouped by case."""
import statistics


def med(recs, key):
    """The median of `key` over the records, Nones left out; None if
    nothing is left."""
    vals = [key(r) for r in recs]
    vals = [v for v in vals if v is not None]
    return statistics.median(vals) if vals else None


def fx(a, b):
    """a / b as a ratio, n/a when one is missing."""
    return "n/a" if a is None or b is None else f"{a / b:.2f}x"


def pair_range(rs):
    """The range of Lockstep / onnxruntime over the back-to-back pairs."""
    v = [r["lockstep_tok_s"] / r["ort_tok_s"] for r in rs if r["lockstep_tok_s"]]
    return f"{min(v):.2f}-{max(v):.2f}" if len(v) > 1 else ""


def took(s):
    """A duration: seconds, minutes from 2 minutes on."""
    return f"{s:.0f} s" if s < 120 else f"{s / 60:.0f} min"


def fr(v):
    """A rate: no decimals (thousands separated) from 100, one below."""
    if v is None:
        return "n/a"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def grouped(recs):
    """Serving records by (model, case, threads), in their order."""
    out = {}
    for r in recs:
        what = f"prefill {r['length']}" if r["bench"] == "prefill" else f"decode x{r['concurrency']}"
        out.setdefault((r["model"], what, r["threads"]), []).append(r)
    return out
