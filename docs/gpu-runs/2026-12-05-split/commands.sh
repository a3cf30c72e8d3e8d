#!/usr/bin/env bash
# On the device (2026-12-05). Bundles made here, under gpu-bundle/:
#   p0.tar.xz  bench/{llama1b.lsa,lockstep-run} at dc0da74 (run 15's code)
#   p1.tar.xz  p1/{llama1b.lsa,lockstep-run} with the split paged attention
#              (a warp a chunk, then a merge kernel) when the step has at
#              most 65536 (token, head, chunk) items
#   q1.tar.xz  scripts/gpu-prepare of 9 models (both forms) with p1's code
#   run16/bundle.tar.xz  scripts/gpu-prepare of all 66 models at 977f276
#   run16/bench.tar.xz   bench/gpu/prepare.py at 977f276 (directory renamed
#                        bench)
# commands.sh bits RUN   scripts/test-gpu on RUN's bundle (both forms)
# commands.sh speed RUN  the events profile of a decode step at 1 request,
#                        then bench/gpu/run.py --only $ONLY (default
#                        copy,gemm,serve,adaptive,hf,hfc)
# commands.sh ab A B    the llama1b of runs A and B (bench.tar.xz) served
#                        alternately, two rounds, at 1, 8 and 64 requests
# commands.sh split   bits of q1 on the GPU against the CPU (scripts/test-gpu),
#                     then p0 and p1 served alternately at 1, 8 and 64
#                     requests (bench --warmup 1, graphs on) and a prefill of
#                     8 x 512, then the events profile of both at 1 and 64
cd "$(dirname "$0")/../../.."
export LOCKSTEP_PYTHON=python3 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
w=/tmp/lsw; mkdir -p $w
for v in p0 p1; do [ -f gpu-bundle/$v.tar.xz ] && tar xJf gpu-bundle/$v.tar.xz -C $w; done
mv $w/bench $w/p0 2>/dev/null
case "$1" in
bits|speed)
  r=$2; b=/tmp/lsb-$r/bench
  mkdir -p /tmp/lsb-$r; tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
  if [ "$1" = bits ]; then
    timeout 540 scripts/test-gpu gpu-bundle/$r/bundle.tar.xz "$b/lockstep-run" --phases exec,control,cpu,wide,gpu \
      --schedules-fixtures 50 --schedules 6 --cpu-schedules 6 --jobs 15 --split 5 --logs "$OUT/logs-all" \
      > "$OUT/bits-all.log" 2>&1
    echo "rc=$?" >> "$OUT/bits-all.log"; grep -c "^ok" "$OUT/bits-all.log"; grep "^FAIL" "$OUT/bits-all.log" | head -20; tail -3 "$OUT/bits-all.log"
    (cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
    exit 0
  fi
  python3 -c "
import json, sys; sys.path.insert(0, 'bench/gpu')
import run
run.ensure_model(json.load(open('$b/manifest.json')))" > "$OUT/model.log" 2>&1
  LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 100 \
    "$b/lockstep-run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 1 --prompt-len 128 \
    --max-new-tokens 17 > "$OUT/events-decode1.log" 2>&1
  echo "events rc=$?" >> "$OUT/events-decode1.log"; grep -A3 "^cuda profile" "$OUT/events-decode1.log" | cut -c1-300
  timeout 470 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" \
    --only ${ONLY:-copy,gemm,serve,adaptive,hf,hfc} --hfc-timeout 240 > "$OUT/bench.log" 2>&1
  echo "run.py rc=$?" >> "$OUT/bench.log"
  tail -45 "$OUT/RESULTS-gpu.md"
  ;;
ab)
  for r in $2 $3; do mkdir -p /tmp/lsb-$r; [ -d /tmp/lsb-$r/bench ] || tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r; done
  python3 -c "
import json, sys; sys.path.insert(0, 'bench/gpu')
import run
run.ensure_model(json.load(open('/tmp/lsb-$2/bench/manifest.json')))" > "$OUT/model-ab.log" 2>&1
  for round in 1 2; do
    for r in $2 $3; do
      b=/tmp/lsb-$r/bench
      for c in 1 8 64; do
        x=$(timeout 120 $b/lockstep-run bench $b/llama1b.lsa --device cuda --only batched --warmup 1 \
          --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched|^cuda launches" | tr '\n' ' ')
        echo "round $round $r c=$c $x" | tee -a "$OUT/ab.log"
      done
    done
  done
  ;;
split)
  python3 -c "
import sys; sys.path.insert(0, 'bench/gpu')
import run, llama1b
run.ensure_model({'model_dir': '/tmp/lockstep-bench'})" > "$OUT/model.log" 2>&1 &
  mp=$!
  timeout 300 scripts/test-gpu gpu-bundle/q1.tar.xz $w/p1/lockstep-run --phases exec,control,cpu,wide,gpu \
    --schedules-fixtures 40 --schedules 6 --cpu-schedules 6 --jobs 12 --split 3 --logs "$OUT/logs-q1" \
    > "$OUT/bits-q1.log" 2>&1
  echo "rc=$?" >> "$OUT/bits-q1.log"; grep -c "^ok" "$OUT/bits-q1.log"; grep "^FAIL" "$OUT/bits-q1.log" | head; tail -2 "$OUT/bits-q1.log"
  (cd "$OUT" && tar czf logs-q1.tgz logs-q1 && rm -rf logs-q1)
  wait $mp; tail -2 "$OUT/model.log"
  for round in 1 2; do
    for v in p0 p1; do
      for c in 1 8 64; do
        r=$(timeout 120 $w/$v/lockstep-run bench $w/$v/llama1b.lsa --device cuda --only batched --warmup 1 \
          --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched|^cuda launches" | tr '\n' ' ')
        echo "round $round $v c=$c $r" | tee -a "$OUT/serve.log"
      done
      r=$(timeout 120 $w/$v/lockstep-run bench $w/$v/llama1b.lsa --device cuda --only batched --warmup 1 \
        --requests 8 --prompt-len 512 --max-new-tokens 1 --token-budget 512 2>&1 | grep -E "^batched" | tr '\n' ' ')
      echo "round $round $v prefill $r" | tee -a "$OUT/serve.log"
    done
  done
  for v in p0 p1; do
    for c in 1 64; do
      LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 100 \
        $w/$v/lockstep-run bench $w/$v/llama1b.lsa --device cuda --only batched --requests $c --prompt-len 128 \
        --max-new-tokens 17 > "$OUT/events-$v-c$c.log" 2>&1
      echo "events $v c=$c rc=$?"; grep -A2 "^cuda profile" "$OUT/events-$v-c$c.log" | cut -c1-250
      grep "self_attn/MatMul_1" "$OUT/events-$v-c$c.log" | sort -k2 -n -r | head -3
    done
  done
  ;;
esac
