#!/usr/bin/env bash
# On the device (2026-12-04), run 12: the paged attention kernel's folds
# over a chunk's keys as straight-line code (their shuffles and value loads
# issued ahead of the folds) and its dots over d in steps of up to 64 values
# of each key in flight; and bench/gpu/run.py timing Lockstep after one
# untimed run (`bench --warmup 1`). Bundles: gpu-bundle/run11 (the kernel at
# 0626a4b, made again this session), gpu-bundle/run12 (940c720) and
# gpu-bundle/run13 (a288957: the max by xor shuffles, s_j and o_j in one
# pass in groups of 8 keys; see micro.sh for the five forms measured).
#   commands.sh speed NEW OLD  each kernel's device time in a decode step of
#                       NEW (LOCKSTEP_CUDA_PROFILE=events), then run.py on
#                       OLD (--only $ONLY_OLD, default copy,serve) and on NEW
#                       (--only $ONLY_NEW, default copy,serve,hf,hfc), in the
#                       same call. Run 12: `speed run12 run11`; run 13:
#                       `ONLY_OLD=gemm,serve ONLY_NEW=copy,gemm,serve,adaptive,hf
#                       speed run13 run11`;
#   commands.sh hfc NEW   run.py serve,hfc on NEW (run 13's second speed call:
#                       HF compiled at 1, 8 and 64 requests beside Lockstep,
#                       which the first left out);
#   commands.sh bits NEW  scripts/test-gpu on all 66 models, both forms.
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
  new=$(unpack ${2:-run12}); old=$(unpack ${3:-run11})
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
  timeout 200 python3 bench/gpu/run.py "$old" --out "$OUT/RESULTS-run11.md" --json "$OUT/bench-run11.json" \
    --only ${ONLY_OLD:-copy,serve} > "$OUT/bench-run11.log" 2>&1
  echo "run.py ${3:-run11} rc=$?" >> "$OUT/bench-run11.log"; grep -A8 "^| concurrency" "$OUT/RESULTS-run11.md"
  grep "| 64 |" "$OUT/RESULTS-run11.md"
  timeout 420 python3 bench/gpu/run.py "$new" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" \
    --only ${ONLY_NEW:-copy,serve,hf,hfc} --hfc-timeout 150 > "$OUT/bench.log" 2>&1
  echo "run.py ${2:-run12} rc=$?" >> "$OUT/bench.log"
  tail -40 "$OUT/RESULTS-gpu.md"
  ;;
hfc)
  new=$(unpack ${2:-run13})
  python3 -c "
import json, sys; sys.path.insert(0, 'bench/gpu')
import run
run.ensure_model(json.load(open('$new/manifest.json')))" > "$OUT/model.log" 2>&1
  timeout 420 python3 bench/gpu/run.py "$new" --out "$OUT/RESULTS-gpu-2.md" --json "$OUT/bench-2.json" \
    --only ${ONLY_NEW:-serve,hfc} --hfc-timeout 300 > "$OUT/bench-2.log" 2>&1
  echo "run.py rc=$?" >> "$OUT/bench-2.log"; tail -20 "$OUT/RESULTS-gpu-2.md"
  ;;
bits)
  r=${2:-run12}; b=$(unpack $r)
  timeout 560 scripts/test-gpu gpu-bundle/$r/bundle.tar.xz "$b/lockstep-run" --phases exec,control,cpu,wide,gpu \
    --schedules-fixtures 50 --schedules 6 --cpu-schedules 6 --jobs 15 --split 5 --logs "$OUT/logs-all" \
    > "$OUT/bits-all.log" 2>&1
  echo "rc=$?" >> "$OUT/bits-all.log"; tail -5 "$OUT/bits-all.log"
  (cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
  ;;
esac
