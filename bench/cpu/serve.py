"""The serving cases: per model and thread count, prefill and decode
tokens/s of onnxruntime and Lockstep measured back to back (and of the
adaptive control, at the lowest thread count), after a check that both
produce the same greedy tokens."""
import os
import sys

from .env import ROOT, loadavg
from .lockstep import bench_prompts, ls_decode, ls_generate, ls_prefill
from .models import compile_model, last_position_variant, max_context, model_facts, write_model
from .ort import Ort


def serve(specs, threads_list, cfg, work, adaptive, record):
    """Measures every serving case of `specs` at each thread count; each
    measurement is passed to `record` and returned. `adaptive`: the
    generated models' adaptive builds too, at the lowest thread count."""
    out = []
    for spec in specs:
        src = write_model(spec, work)
        facts = model_facts(src)
        lsa = os.path.join(work, spec["name"] + ".lsa")
        facts["compile_s"] = compile_model(src, lsa)
        ad = None
        if adaptive and spec["large"]:
            ad = os.path.join(work, spec["name"] + "_adaptive.lsa")
            compile_model(src, ad, ["--reduction-policy=adaptive"])
        ctx = max_context(spec) or 1 << 30
        last = last_position_variant(src, os.path.join(work, spec["name"] + "_lastpos.onnx"))
        record(dict(bench="model", model=spec["name"], kind=spec.get("kind"), source=os.path.relpath(src, ROOT)
                    if src.startswith(ROOT) else src, max_context=ctx, **facts,
                    config=spec.get("config")))
        vocab = facts["vocab"]
        # The fixture's steps take well under a millisecond: more of them,
        # and repeats, so that a figure is not a handful of short steps.
        scale = 1 if spec["large"] else cfg["fixture_scale"]
        repeat = cfg["repeat"] if spec["large"] else cfg["fixture_repeat"]
        # The sanity check that both systems run the same model: greedy tokens.
        check_p = bench_prompts(2, min(16, ctx // 4), vocab)
        for threads in threads_list:
            # onnxruntime's pool threads spin between ops by default; on a
            # shared machine that can cost it more than it gains, so with
            # several threads it runs both ways and the faster counts.
            ort_s = Ort(src, threads)
            ort_ns = Ort(src, threads, spin=False) if threads > 1 else None
            ort_last = Ort(last, threads, spin=threads == 1) if last else None
            if threads == threads_list[0]:
                new = min(8, ctx // 4)
                _, ort_tok = ort_s.decode(check_p, new)
                ls_tok = ls_generate(lsa, check_p, new, threads, work)
                same = int((ort_tok == ls_tok).sum()) if ls_tok.shape == ort_tok.shape else 0
                record(dict(bench="tokens", model=spec["name"], compared=int(ort_tok.size),
                            equal=same))
            for length in cfg["prefill"]:
                L = min(length, ctx - 1)
                n = max(1, scale * cfg["prefill_tokens"] // L)
                for rep in range(repeat):
                    prompts = bench_prompts(n + 1, L, vocab)
                    load = loadavg()
                    o = n * L / sum(ort_s.prefill(prompts))
                    ons = ort_ns and n * L / sum(ort_ns.prefill(prompts))
                    ol = ort_last and n * L / sum(ort_last.prefill(prompts))
                    ls = ls_prefill(lsa, n, L, threads)
                    rec = dict(bench="prefill", model=spec["name"], threads=threads, length=L,
                               asked=length, prompts=n, rep=rep, loadavg=load,
                               ort_tok_s=max(o, ons or 0), ort_spin_tok_s=o, ort_nospin_tok_s=ons,
                               ort_last_tok_s=ol,
                               lockstep=ls, lockstep_tok_s=ls["tok_s"])
                    if ad and threads == min(threads_list):
                        rec["adaptive"] = ls_prefill(ad, n, L, threads)
                    record(rec)
                    out.append(rec)
            for c in cfg["concurrency"]:
                P = min(cfg["decode_prompt"], ctx // 2)
                D = min(scale * cfg["decode_steps"], ctx - P - 1)
                for rep in range(repeat):
                    prompts = bench_prompts(c, P, vocab)
                    load = loadavg()
                    spin, _ = ort_s.decode(prompts, D)
                    nospin = ort_ns.decode(prompts, D)[0] if ort_ns else None
                    secs = min(spin, nospin or spin)
                    ls = ls_decode(lsa, c, P, D, threads)
                    # Ort.decode(prompts, D) times D - 1 decode steps (its
                    # first token comes from the untimed prefill).
                    d = D - 1
                    if d < 1:
                        sys.exit(f"serve_vs_ort: {spec['name']}: no room for 2 decode steps")
                    rec = dict(bench="decode", model=spec["name"], threads=threads, concurrency=c,
                               prompt=P, steps=D, rep=rep, loadavg=load,
                               ort_tok_s=c * d / secs, ort_ms_per_step=1e3 * secs / d,
                               ort_spin_tok_s=c * d / spin, ort_nospin_tok_s=nospin and c * d / nospin,
                               lockstep=ls, lockstep_tok_s=ls["tok_s"])
                    if ad and threads == min(threads_list):
                        rec["adaptive"] = ls_decode(ad, c, P, D, threads)
                    record(rec)
                    out.append(rec)
            del ort_s, ort_ns, ort_last
    return out
