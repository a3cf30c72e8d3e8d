#!/usr/bin/env bash
# On the device (2026-12-04), run 12: the paged attention kernel's folds
# over a chunk's keys as straight-line code (their shuffles and value loads
# issued ahead of the folds) and its dots over d in steps of up to 64 values
# of each key in flight; and bench/gpu/run.py timing Lockstep after one
# untimed run (`bench --warmup 1`). Bundles: gpu-bundle/run11 (the kernel at
# 0626a4b, made again this session) and gpu-bundle/run12 (this change).
#   commands.sh speed   each kernel's device time in a decode step of run12
#                       (LOCKSTEP_CUDA_PROFILE=events), then run.py copy,serve
#                       on run11 and serve,hf,hfc on run12, in the same call;
#   commands.sh bits    scripts/test-gpu on all 66 models, both forms (run12).
cd "$(dirname "$0")/../../.."
export LOCKSTEP_PYTHON=python3 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
unpack() { # RUN -> the bench dir
  local b=/tmp/lsb-$1/bench
  mkdir -p /tmp/lsb-$1
  [ -d "$b" ] || tar xJf gpu-bundle/$1/bench.tar.xz -C /tmp/lsb-$1
  echo "$b"
}
case "$1" in
speed)
  new=$(unpack run12); old=$(unpack run11)
  python3 -c "
import json, sys; sys.path.insert(0, 'bench/gpu')
import run
run.ensure_model(json.load(open('$new/manifest.json')))" > "$OUT/model.log" 2>&1
  prof() { # NAME LSA ARGS...
    local name=$1 lsa=$2; shift 2
    LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 100 \
      "$new/lockstep-run" bench "$lsa" --device cuda --only batched "$@" > "$OUT/$name.log" 2>&1
    echo "$name rc=$?" >> "$OUT/$name.log"
  }
  prof events-decode1 "$new/llama1b.lsa" --requests 1 --prompt-len 128 --max-new-tokens 17
  prof events-decode64 "$new/llama1b.lsa" --requests 64 --prompt-len 128 --max-new-tokens 9
  prof events-prefill "$new/llama1b.lsa" --requests 2 --prompt-len 512 --max-new-tokens 1 --token-budget 512
  for f in "$OUT"/events-*.log; do echo "== $f"; grep -A3 "^cuda profile" "$f" | cut -c1-300; grep "layers.3/self_attn/MatMul_1" "$f" | tail -1; grep "ms/step" "$f"; done
  timeout 150 python3 bench/gpu/run.py "$old" --out "$OUT/RESULTS-run11.md" --json "$OUT/bench-run11.json" \
    --only copy,serve > "$OUT/bench-run11.log" 2>&1
  echo "run.py run11 rc=$?" >> "$OUT/bench-run11.log"; grep -A8 "^| concurrency" "$OUT/RESULTS-run11.md"
  timeout 330 python3 bench/gpu/run.py "$new" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" \
    --only copy,serve,hf,hfc --hfc-timeout 150 > "$OUT/bench.log" 2>&1
  echo "run.py run12 rc=$?" >> "$OUT/bench.log"
  tail -25 "$OUT/RESULTS-gpu.md"
  ;;
bits)
  b=$(unpack run12)
  timeout 560 scripts/test-gpu gpu-bundle/run12/bundle.tar.xz "$b/lockstep-run" --phases exec,control,cpu,wide,gpu \
    --schedules-fixtures 50 --schedules 6 --cpu-schedules 6 --jobs 15 --split 5 --logs "$OUT/logs-all" \
    > "$OUT/bits-all.log" 2>&1
  echo "rc=$?" >> "$OUT/bits-all.log"; tail -5 "$OUT/bits-all.log"
  (cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
  ;;
esac
