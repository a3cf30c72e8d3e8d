"""Checks the phase lines of `lockstep-run bench` (its stdout on stdin)
against the mode table above them and the request sizes, and prints one
`MODE: ok ...` line a timed mode (for FileCheck); exit status 1, with what
failed, otherwise.

usage: bench_phases.py REQUESTS PROMPT_LEN MAX_NEW_TOKENS < BENCH_STDOUT

What holds for every run bench makes (greedy, no preemption):
  - each timed mode has one prefill and one decode line, and no other mode;
  - prefill steps + decode steps == the table's steps;
  - prefill fed + decode generated == R * (P + N - 1), every token fed
    (a decode step feeds one token a sampled one);
  - decode generated <= R * (N - 1) (each request's first token is sampled
    in a prefill step), and for alone equal; alone prefills R steps of P;
  - the phases' seconds add up to at most the table's wall time (printed to
    the millisecond), and the printed rates and ms/step are theirs."""
import re
import sys

R, P, N = (int(a) for a in sys.argv[1:4])
out = sys.stdin.read()
table = {m.group(1): (int(m.group(2)), float(m.group(3)))
         for m in re.finditer(r"^(alone|batched)\s+(\d+)\s+([0-9.]+)\s+[0-9.]+\s+[0-9.]+\s+[0-9.]+$",
                              out, re.M)}
line = re.compile(r"^(alone|batched) (prefill|decode) +(\d+) steps  (\d+\.\d{6}) s  (\d+) "
                  r"(fed|generated) tokens  (\d+\.\d) (fed|generated) tokens/s  (\d+\.\d{3}) ms/step$",
                  re.M)
phases = {}
bad = []
for m in line.finditer(out):
    mode, phase, steps, secs, count, what, rate, what2, ms = m.groups()
    want = "fed" if phase == "prefill" else "generated"
    if what != want or what2 != want:
        bad.append(f"{mode} {phase}: counts {what} tokens, not {want}")
    if (mode, phase) in phases:
        bad.append(f"{mode} {phase}: two lines")
    phases[(mode, phase)] = dict(steps=int(steps), secs=float(secs), count=int(count),
                                 rate=float(rate), ms=float(ms))
if not table:
    bad.append("no mode table")
if {m for m, _ in phases} != set(table):
    bad.append(f"phase lines for {sorted({m for m, _ in phases})}, timed modes {sorted(table)}")
for mode, (steps, wall) in sorted(table.items()):
    pre, dec = phases.get((mode, "prefill")), phases.get((mode, "decode"))
    if not pre or not dec:
        bad.append(f"{mode}: no {'prefill' if not pre else 'decode'} line")
        continue
    checks = [
        (pre["steps"] + dec["steps"] == steps,
         f"prefill {pre['steps']} + decode {dec['steps']} steps != the table's {steps}"),
        (pre["count"] + dec["count"] == R * (P + N - 1),
         f"prefill fed {pre['count']} + decode generated {dec['count']} != {R * (P + N - 1)}"),
        (dec["count"] <= R * (N - 1), f"decode generated {dec['count']} > {R * (N - 1)}"),
        (pre["secs"] + dec["secs"] <= wall + 0.0005,
         f"phases {pre['secs'] + dec['secs']:.6f} s > the table's {wall:.3f} s"),
    ]
    if mode == "alone":
        checks += [(pre["steps"] == R and pre["count"] == R * P,
                    f"alone prefill {pre['steps']} steps, {pre['count']} fed"),
                   (dec["count"] == R * (N - 1) and dec["steps"] == R * (N - 1),
                    f"alone decode {dec['steps']} steps, {dec['count']} generated")]
    for name, p in (("prefill", pre), ("decode", dec)):
        if p["steps"]:
            checks += [(p["secs"] > 0, f"{name}: no time"),
                       (abs(p["ms"] - 1e3 * p["secs"] / p["steps"]) <= 0.0011,
                        f"{name}: {p['ms']} ms/step of {p['secs']} s / {p['steps']}"),
                       (abs(p["rate"] - p["count"] / p["secs"]) <= 0.06 + 1e-2 * p["rate"],
                        f"{name}: {p['rate']} tokens/s of {p['count']} / {p['secs']} s")]
    bad += [f"{mode}: {why}" for ok, why in checks if not ok]
    if not any(not ok for ok, _ in checks):
        print(f"{mode}: ok, {pre['steps']} prefill + {dec['steps']} decode steps = {steps}, "
              f"{pre['count']} fed + {dec['count']} generated")
if bad:
    print("\n".join(bad) + "\n--- bench's output:\n" + out, file=sys.stderr)
    sys.exit(1)
