#!/usr/bin/env bash
# On the device (2026-12-06). Bundles made here, under gpu-bundle/RUN/:
#   bench.tar.xz   bench/gpu/prepare.py (directory renamed bench)
#   bundle.tar.xz  scripts/gpu-prepare of all 66 models
# run19: 8d0c10e (2026-12-05); run20: the contractions that read one input
# in one launch (lockstep-group-contractions, lockstep-tile-contractions);
# run21: run20 and q's, k's and v's chunk combines folded into their RoPE and
# transpose (lockstep-fuse-elementwise).
# Run on 2026-12-06 (morning): only `BITS_TIMEOUT=250 commands.sh bits run21`
# (an H100; 537 passed, 0 failed: run21/bits-all.log), the device's first
# start after eleven refused tries. Later that day, on an H100 (files under
# ab/ and speed/): `ROUNDS=1 commands.sh ab run19 run20 run21`, then
# `SPEED_TIMEOUT=560 commands.sh speed run21`, then `commands.sh ab-more
# run19 run20 run21` (rounds 2 and 3, appended to ab/ab.log here);
# `commands.sh summary docs/gpu-runs/2026-12-06-group/ab/ab.log` (here) makes
# the table of bench/RESULTS.md.
# run22 (65722af: the fusion fix and lockstep-cpu-paged-attention): only
# `BITS_TIMEOUT=400 commands.sh bits run22` (537 passed, 0 failed: run22/).
# commands.sh ab A B... each run's llama1b served at 1, 8 and 64 requests,
#                        alternately, two rounds (the events profile of B's
#                        decode steps at 1 and 64 requests between them)
# commands.sh speed RUN  bench/gpu/run.py --only $ONLY (default
#                        copy,gemm,serve,adaptive,hf,hfc)
# commands.sh bits RUN   scripts/test-gpu on RUN's bundle (both forms)
# commands.sh ab-more A B...  rounds 2 and 3 of ab, without the profiles
# commands.sh summary LOG     (here) the median generated tokens/s and
#                        decode ms/step of each run and concurrency in LOG
cd "$(dirname "$0")/../../.."
if [ "$1" = summary ]; then
  python3 - "$2" <<'PY'
import re, statistics, sys
runs = {}
for line in open(sys.argv[1]):
    m = re.match(r"round (\d+) (\S+) c=(\d+) batched +\d+ +[\d.]+ +([\d.]+) +[\d.]+ +[\d.]+ .*"
                 r"batched decode +\d+ steps .* ([\d.]+) ms/step", line)
    if m:
        runs.setdefault((m[2], int(m[3])), []).append((float(m[4]), float(m[5])))
print("| run | requests | rounds | generated tok/s (median) | all rounds | decode ms/step (median) |")
print("|---|---:|---:|---:|---|---:|")
for (r, c), v in sorted(runs.items(), key=lambda x: (x[0][1], x[0][0])):
    print(f"| {r} | {c} | {len(v)} | {statistics.median(t for t, _ in v):.1f} | "
          f"{' / '.join(f'{t:.1f}' for t, _ in v)} | {statistics.median(d for _, d in v):.2f} |")
PY
  exit
fi
export LOCKSTEP_PYTHON=python3 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
r=$2; b=/tmp/lsb-$r/bench
mkdir -p /tmp/lsb-$r
[ -f gpu-bundle/$r/bench.tar.xz ] && tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
model() {
  python3 -c "
import json, sys; sys.path.insert(0, 'bench/gpu')
import run
run.ensure_model(json.load(open('$b/manifest.json')))" > "$OUT/model.log" 2>&1
}
case "$1" in
bits)
  timeout ${BITS_TIMEOUT:-540} scripts/test-gpu gpu-bundle/$r/bundle.tar.xz "$b/lockstep-run" --phases exec,control,cpu,wide,gpu \
    --schedules-fixtures 50 --schedules 6 --cpu-schedules 6 --jobs 15 --split 5 --logs "$OUT/logs-all" \
    > "$OUT/bits-all.log" 2>&1
  echo "rc=$?" >> "$OUT/bits-all.log"; grep -c "^ok" "$OUT/bits-all.log"; grep "^FAIL" "$OUT/bits-all.log" | head -20; tail -3 "$OUT/bits-all.log"
  (cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
  ;;
ab)
  # Each run's llama1b (default segments), in turn, two rounds; the last
  # run profiled between them.
  model
  shift; runs="$*"; B=${@: -1}
  for x in $runs; do mkdir -p /tmp/lsb-$x; [ -f /tmp/lsb-$x/bench/llama1b.lsa ] || tar xJf gpu-bundle/$x/bench.tar.xz -C /tmp/lsb-$x; done
  ab_round() {
  for round in $ROUND; do
      for x in $runs; do
        d=/tmp/lsb-$x/bench
        for c in 1 8 64; do
          y=$(timeout 120 $d/lockstep-run bench $d/llama1b.lsa --device cuda --only batched \
            --warmup 1 --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched|^cuda" | tr '\n' ' ')
          echo "round $round $x c=$c $y" | tee -a "$OUT/ab.log" | cut -c1-420
        done
      done
    done
  }
  ROUND=1 ab_round
  b=/tmp/lsb-$B/bench
  LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 100 \
    "$b/lockstep-run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 1 --prompt-len 128 \
    --max-new-tokens 17 > "$OUT/events-decode1.log" 2>&1
  echo "events rc=$?" >> "$OUT/events-decode1.log"; grep -A3 "^cuda profile" "$OUT/events-decode1.log" | cut -c1-300
  grep -E "layers.5/" "$OUT/events-decode1.log" | head -30 | cut -c1-200
  LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 100 \
    "$b/lockstep-run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 64 --prompt-len 16 \
    --max-new-tokens 33 > "$OUT/events-decode64.log" 2>&1
  echo "events rc=$?" >> "$OUT/events-decode64.log"; grep -A3 "^cuda profile" "$OUT/events-decode64.log" | cut -c1-300
  grep -E "layers.5/" "$OUT/events-decode64.log" | head -30 | cut -c1-200
  grep "^batched" "$OUT/events-decode64.log"
  [ "${ROUNDS:-2}" = 2 ] && ROUND=2 ab_round
  ;;
ab-more)
  model
  shift
  for x in "$@"; do mkdir -p /tmp/lsb-$x; tar xJf gpu-bundle/$x/bench.tar.xz -C /tmp/lsb-$x; done
  for round in 2 3; do
    for x in "$@"; do
      d=/tmp/lsb-$x/bench
      for c in 1 8 64; do
        y=$(timeout 120 $d/lockstep-run bench $d/llama1b.lsa --device cuda --only batched --warmup 1 \
          --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched" | tr '\n' ' ')
        echo "round $round $x c=$c $y" | tee -a "$OUT/ab.log" | cut -c1-200
      done
    done
  done
  ;;
speed)
  model
  timeout ${SPEED_TIMEOUT:-540} python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" \
    --only ${ONLY:-copy,gemm,serve,adaptive,hf,hfc} --hfc-timeout 240 > "$OUT/bench.log" 2>&1
  echo "run.py rc=$?" >> "$OUT/bench.log"
  tail -45 "$OUT/RESULTS-gpu.md"
  ;;
esac
