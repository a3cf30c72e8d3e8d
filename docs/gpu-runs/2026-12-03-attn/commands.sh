#!/usr/bin/env bash
# On the device (2026-12-03), after lockstep-gpu-paged-attention (the ragged
# step's attention one kernel a layer, op for op the expansion, instead of
# about 25). $2 names the bundles' run: run9 (the first kernel, results in
# run9/), run10 (its loads grouped, results in run10/) or run11 (its key
# rows read 4 values at a time, 9e2a9ee; only `commands.sh bits run11` was
# run, for lack of device time: results in run11/).
#   commands.sh quick   the profiles of `speed`, then run.py copy,serve;
#   commands.sh profiles  the profiles only.
#   commands.sh bits    scripts/test-gpu on all 66 models, both forms;
#   commands.sh speed   each kernel's device time in a decode step
#                       (LOCKSTEP_CUDA_PROFILE=events; the one before
#                       is run 6's, docs/gpu-runs/2026-12-03-speed/run6/),
#                       then bench/gpu/run.py copy,serve,adaptive,hf.
cd "$(dirname "$0")/../../.."
export LOCKSTEP_PYTHON=python3
r=${2:-run9}
b=/tmp/lsb-$r/bench
mkdir -p /tmp/lsb-$r
[ -d "$b" ] || tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
run="$b/lockstep-run"
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
case "$1" in
speed|quick|profiles)
  python3 -c "
import json, sys; sys.path.insert(0, 'bench/gpu')
import run
run.ensure_model(json.load(open('$b/manifest.json')))" > "$OUT/model.log" 2>&1
  prof() { # NAME LSA ARGS...
    local name=$1 lsa=$2; shift 2
    LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 100 \
      "$run" bench "$lsa" --device cuda --only batched "$@" > "$OUT/$name.log" 2>&1
    echo "$name rc=$?" >> "$OUT/$name.log"
  }
  prof events-decode1 "$b/llama1b.lsa" --requests 1 --prompt-len 128 --max-new-tokens 17
  prof events-decode64 "$b/llama1b.lsa" --requests 64 --prompt-len 128 --max-new-tokens 9
  prof events-prefill "$b/llama1b.lsa" --requests 2 --prompt-len 512 --max-new-tokens 1 --token-budget 512
  for f in "$OUT"/events-*.log; do echo "== $f"; grep -A3 "^cuda profile" "$f" | cut -c1-400; grep -A14 "ONNX op type" "$f"; done
  [ "$1" = profiles ] && exit 0
  only=copy,serve,adaptive,hf
  [ "$1" = quick ] && only=copy,serve
  timeout 400 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" \
    --only $only > "$OUT/bench.log" 2>&1
  echo "run.py rc=$?" >> "$OUT/bench.log"
  tail -45 "$OUT/bench.log"
  ;;
bits)
  timeout 560 scripts/test-gpu gpu-bundle/$r/bundle.tar.xz "$run" --phases exec,control,cpu,wide,gpu \
    --schedules-fixtures 50 --schedules 6 --cpu-schedules 6 --jobs 15 --split 5 --logs "$OUT/logs-all" \
    > "$OUT/all.log" 2>&1
  echo "rc=$?" >> "$OUT/all.log"; tail -5 "$OUT/all.log"
  (cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
  ;;
esac
