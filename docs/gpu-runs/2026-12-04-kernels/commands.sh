#!/usr/bin/env bash
# On the device (2026-12-04). Bundles made here: gpu-bundle/RUN/bundle.tar.xz
# (scripts/gpu-prepare, both forms) and gpu-bundle/RUN/bench.tar.xz
# (bench/gpu/prepare.py, its directory renamed bench).
#   run14 (c15852b): the direct GEMV tiles (one row and up to 8 rows: each
#     thread's column of the weights in registers), the norms' square fused
#     into their mean's partials, the combines' fills forwarded, RoPE's
#     rotate-half written into its concat. Its bundle held 30 of the 66
#     models (models/*.onnx, models/torch, models/window, and gemma, phi3
#     and qwen3 of models/extra): the full one took too long to prepare
#     beside the benchmark's.
#   run15 (8365698): run14 less the fusion into the partials (reverted: the
#     partial got slower than the two kernels), one token -> request map for
#     all layers, the direct tiles only where the weights' n is the fast dim;
#     every model.
#   commands.sh bits RUN    scripts/test-gpu on the bundle, both forms
#   commands.sh speed RUN   the events profile of a decode step at 1
#                           request, then bench/gpu/run.py --only $ONLY
#                           (default copy,gemm,serve,hfc)
cd "$(dirname "$0")/../../.."
export LOCKSTEP_PYTHON=python3 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
r=${2:-run15}
b=/tmp/lsb-$r/bench
mkdir -p /tmp/lsb-$r
[ -d "$b" ] || tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
case "$1" in
bits)
  timeout 540 scripts/test-gpu gpu-bundle/$r/bundle.tar.xz "$b/lockstep-run" --phases exec,control,cpu,wide,gpu \
    --schedules-fixtures 50 --schedules 6 --cpu-schedules 6 --jobs 15 --split 5 --logs "$OUT/logs-all" \
    > "$OUT/bits-all.log" 2>&1
  echo "rc=$?" >> "$OUT/bits-all.log"; grep -c "^ok" "$OUT/bits-all.log"; grep "^FAIL" "$OUT/bits-all.log" | head -20; tail -3 "$OUT/bits-all.log"
  (cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
  ;;
speed)
  python3 -c "
import json, sys; sys.path.insert(0, 'bench/gpu')
import run
run.ensure_model(json.load(open('$b/manifest.json')))" > "$OUT/model.log" 2>&1
  LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 100 \
    "$b/lockstep-run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 1 --prompt-len 128 \
    --max-new-tokens 17 > "$OUT/events-decode1.log" 2>&1
  echo "events rc=$?" >> "$OUT/events-decode1.log"; grep -A3 "^cuda profile" "$OUT/events-decode1.log" | cut -c1-300
  timeout 470 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" \
    --only ${ONLY:-copy,gemm,serve,hfc} --hfc-timeout 240 > "$OUT/bench.log" 2>&1
  echo "run.py rc=$?" >> "$OUT/bench.log"
  tail -45 "$OUT/RESULTS-gpu.md"
  ;;
esac
