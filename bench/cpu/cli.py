"""The command line of bench/serve_vs_ort.py: a run (measure, log a JSON
line a measurement, write the report) or, with --from-log, the report of
an earlier run's log."""
import argparse
import datetime
import json
import os
import sys
import tempfile
import time

from .config import FULL, QUICK, model_specs
from .env import OPT, RUN, build, copy_bandwidth, loadavg, log, machine
from .gemm import gemm
from .report import report
from .results import write_report
from .serve import serve


def gemm_only_models(specs):
    """The generated models' records when no serving case measured them
    (--only gemm): the report and its breakdown need their configs."""
    return [dict(model=s["name"], kind=s["kind"], config=s["config"], params=0,
                 matmul_weight_bytes=0) for s in specs if s["large"]]


def main(doc):
    """Runs the command line; `doc` is the script's docstring (its first
    line is --help's description)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a smoke run: small models and sizes")
    ap.add_argument("--out", help="also write the report here")
    ap.add_argument("--results", default=None,
                    help="the RESULTS.md to update (default bench/RESULTS.md for a full run, none "
                         "for --quick; '' for none)")
    ap.add_argument("--work", help="models and artifacts (default: a temporary directory; "
                                   "generated models are kept there and reused)")
    ap.add_argument("--log", help="one JSON line a measurement")
    ap.add_argument("--only", default="serve,gemm,adaptive")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--models", help="comma-separated names (default all)")
    ap.add_argument("--repeat", type=int, help="measurements of each serving case (median kept)")
    ap.add_argument("--no-build", action="store_true")
    ap.add_argument("--from-log", help="measure nothing: write the report of this --log")
    a = ap.parse_args()
    if a.from_log:
        return from_log(a)
    only = set(a.only.split(","))
    cfg = dict(QUICK if a.quick else FULL)
    if a.repeat:
        cfg["repeat"] = a.repeat
    threads_list = [int(t) for t in a.threads.split(",")]
    if not a.no_build:
        build()
    for tool in (OPT, RUN):
        if not os.access(tool, os.X_OK):
            sys.exit(f"serve_vs_ort: {tool} is missing (run scripts/build)")
    work = a.work or tempfile.mkdtemp(prefix="lockstep-cpubench-")
    os.makedirs(work, exist_ok=True)
    specs = model_specs(a.quick)
    if a.models:
        specs = [s for s in specs if s["name"] in a.models.split(",")]
    env = machine()
    t0 = time.time()
    logf = open(a.log, "w") if a.log else None
    loads = [env["loadavg"][0]]
    res, models = {}, []

    def record(rec):
        rec["elapsed_s"] = round(time.time() - t0, 1)
        if "loadavg" in rec:
            loads.append(rec["loadavg"][0])
        if rec["bench"] == "model":
            models.append(rec)
        elif rec["bench"] == "tokens":
            res.setdefault("tokens", []).append(rec)
        line = json.dumps(rec)
        log(line)
        if logf:
            logf.write(line + "\n")
            logf.flush()

    record(dict(bench="machine", quick=a.quick, cfg=cfg, threads=threads_list, **env))
    env["copy_gbs"] = copy_bandwidth() / 1e9
    record(dict(bench="copy", gbs=env["copy_gbs"]))
    if "serve" in only:
        rs = serve(specs, threads_list, cfg, work, "adaptive" in only, record)
        res["prefill"] = [r for r in rs if r["bench"] == "prefill"]
        res["decode"] = [r for r in rs if r["bench"] == "decode"]
    elif "gemm" in only:
        models.extend(gemm_only_models(specs))
    if "gemm" in only:
        res["gemm"] = gemm(specs, threads_list, cfg, work, "adaptive" in only, record)
    env["took_s"] = time.time() - t0
    env["load_min"], env["load_max"] = min(loads), max(loads)
    record(dict(bench="end", loadavg=loadavg(), took_s=env["took_s"],
                time=datetime.datetime.now().isoformat(timespec="seconds")))
    text = report(env, models, res, a.quick, cfg)
    write_report(a, text)
    if not a.work:
        import shutil
        shutil.rmtree(work, ignore_errors=True)


def from_log(a):
    """Measures nothing: rebuilds the records of a --log and writes their
    report as the run would have."""
    recs = [json.loads(l) for l in open(a.from_log) if l.strip()]
    env = dict(recs[0])
    if env.get("bench") != "machine":
        sys.exit(f"serve_vs_ort: {a.from_log} is not a log of this script")
    quick = env["quick"]
    cfg = dict(QUICK if quick else FULL, **env["cfg"])
    models, res, loads = [], {}, [env["loadavg"][0]]
    for r in recs[1:]:
        if "loadavg" in r and r["bench"] != "end":
            loads.append(r["loadavg"][0])
        b = r["bench"]
        if b == "model":
            r.setdefault("kind", "gpt2" if "gpt2" in r["model"] else "llama")
            models.append(r)
        elif b == "copy":
            env["copy_gbs"] = r["gbs"]
        elif b == "end":
            env["took_s"] = r["took_s"]
        elif b in ("tokens", "prefill", "decode", "gemm"):
            res.setdefault(b, []).append(r)
    if not models and res.get("gemm"):
        models.extend(gemm_only_models(model_specs(quick)))
    env.setdefault("took_s", 0)
    env["load_min"], env["load_max"] = min(loads), max(loads)
    a.quick = quick  # a full run's log updates RESULTS.md by default, as the run would have
    write_report(a, report(env, models, res, quick, cfg))
