#!/usr/bin/env bash
# On the device (2026-12-07, evening). Bundles made here, under gpu-bundle/RUN/:
#   bench.tar.xz  bench/gpu/prepare.py --out bench at 183421b: llama1b.lsa,
#                 and the invariance cost's two controls, llama1b_adaptive.lsa
#                 (--reduction-policy=adaptive) and llama1b_whole.lsa
#                 (--adaptive-rows=2 --adaptive-chunk=256)
#   (run31: bench/gpu/prepare.py at d2dcf24, which adds the controls
#   llama1b_c128.lsa, llama1b_c512.lsa and llama1b_c1024.lsa: every reduction
#   but attention's in chunks of 128, 512 or 1024 at any batch size)
#   host.tar.xz   run28's (docs/gpu-runs/2026-12-07-pools/commands.sh): mid.lsa
#                 and new.lsa, the same kernels without and with
#                 serving.ragged.pool_writes
# commands.sh cost RUN    bench/gpu/run.py --only serve,adaptive (canonical and
#                         both controls at 1, 8, 64 requests and 8 prefills of 512)
# commands.sh lite RUN    canonical and the whole control only, at 8 and 64
#                         requests and 8 prefills of 512, two rounds
# commands.sh full RUN    bench/gpu/run.py --only copy,gemm,serve,hf,hfc (the
#                         whole table without the controls, HF beside it)
# commands.sh events RUN  decode-heavy runs (prompt 8, 64 new tokens) at 64, 8
#                         and 1 requests: each kernel's device time
#                         (LOCKSTEP_CUDA_PROFILE=events, ev-d*.log), then the
#                         same without a profile, two rounds (plain.log), and
#                         64 requests with every launch waiting (wait-d64.log)
# commands.sh pools RUN   mid and new in turn at 64 requests (prompt 128, 128 new,
#                         bench --warmup 1), ROUNDS rounds (default 3), then
#                         each once with LOCKSTEP_CUDA_PROFILE=1 (every launch
#                         waits: the host's part of a step apart from the device's)
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
r=$2
case "$1" in
cost)
  mkdir -p /tmp/lsb-$r && tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
  python3 bench/gpu/run.py /tmp/lsb-$r/bench --out "$OUT/report.md" --only serve,adaptive \
    --json "$OUT/run.json" > "$OUT/run.log" 2>&1
  echo "run.py rc=$?"; sed -n '/Invariance cost/,$p' "$OUT/report.md"
  ;;
full)
  mkdir -p /tmp/lsb-$r && tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
  timeout 570 python3 bench/gpu/run.py /tmp/lsb-$r/bench --out "$OUT/report.md" \
    --only copy,gemm,serve,hf,hfc --json "$OUT/run.json" --hfc-timeout 200 > "$OUT/run.log" 2>&1
  echo "rc=$?"; head -80 "$OUT/report.md"
  ;;
events)
  b=/tmp/lsb-$r/bench
  mkdir -p /tmp/lsb-$r && tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
  python3 bench/gpu/llama1b.py /tmp/lockstep-bench > "$OUT/model.log" 2>&1 || { tail "$OUT/model.log"; exit 1; }
  for c in 64 8 1; do
    LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 150 $b/lockstep-run bench \
      $b/llama1b.lsa --device cuda --only batched --requests $c --prompt-len 8 \
      --max-new-tokens 64 > "$OUT/ev-d$c.log" 2>&1
    echo "c=$c rc=$?"; grep -E "a call|^batched decode" "$OUT/ev-d$c.log"
  done
  for round in 1 2; do
    for c in 64 8 1; do
      echo "round $round c=$c $(timeout 100 $b/lockstep-run bench $b/llama1b.lsa --device cuda \
        --only batched --warmup 1 --requests $c --prompt-len 8 --max-new-tokens 64 2>&1 |
        grep -E '^batched decode')"
    done
  done | tee "$OUT/plain.log"
  LOCKSTEP_CUDA_PROFILE=1 timeout 100 $b/lockstep-run bench $b/llama1b.lsa --device cuda \
    --only batched --requests 64 --prompt-len 8 --max-new-tokens 64 > "$OUT/wait-d64.log" 2>&1
  ;;
lite)
  # The same comparison in less device time: canonical against the whole
  # control only, at 8 and 64 requests and 8 prefills of 512, two rounds
  # in turn (at one request the two run the same kernels).
  b=/tmp/lsb-$r/bench
  mkdir -p /tmp/lsb-$r && tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
  python3 bench/gpu/llama1b.py /tmp/lockstep-bench > "$OUT/model.log" 2>&1 || { tail "$OUT/model.log"; exit 1; }
  for round in 1 2; do
    for x in llama1b llama1b_whole; do
      for c in 8 64; do
        y=$(timeout 60 $b/lockstep-run bench $b/$x.lsa --device cuda --only batched --warmup 1 \
          --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched" | tr '\n' ' ')
        echo "round $round $x c=$c $y"
      done
      y=$(timeout 60 $b/lockstep-run bench $b/$x.lsa --device cuda --only batched --warmup 1 \
        --requests 8 --prompt-len 512 --max-new-tokens 1 --token-budget 512 2>&1 | grep -E "^batched" | tr '\n' ' ')
      echo "round $round $x prefill $y"
    done
  done | tee "$OUT/lite.log" | cut -c1-150
  ;;
pools)
  h=/tmp/lsh-$r/host
  mkdir -p /tmp/lsh-$r && tar xJf gpu-bundle/$r/host.tar.xz -C /tmp/lsh-$r
  python3 bench/gpu/llama1b.py /tmp/lockstep-bench > "$OUT/model.log" 2>&1 || { tail "$OUT/model.log"; exit 1; }
  for round in $(seq 1 "${ROUNDS:-3}"); do
    for x in mid new; do
      y=$(timeout 120 $h/run bench $h/$x.lsa --device cuda --only batched --warmup 1 \
        --requests 64 --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched|^cuda" | tr '\n' ' ')
      echo "round $round $x c=64 $y"
    done
  done | tee "$OUT/pools.log" | cut -c1-160
  for x in mid new; do
    LOCKSTEP_CUDA_PROFILE=1 timeout 120 $h/run bench $h/$x.lsa --device cuda --only batched \
      --requests 64 --prompt-len 128 --max-new-tokens 32 > "$OUT/prof-$x.log" 2>&1
    echo "prof $x rc=$?"; grep -E "wall|a call" "$OUT/prof-$x.log" | head -3
  done
  ;;
esac
