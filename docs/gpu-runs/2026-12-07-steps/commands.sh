#!/usr/bin/env bash
# On the device (2026-12-07, late). Bundle: gpu-bundle/RUN/bench.tar.xz made
# here by bench/gpu/prepare.py (run31: at d2dcf24). The binary under test is
# this checkout's build/bin/lockstep-run (carried), so host-side changes are
# measured without a new bundle.
# commands.sh steps RUN BIN...  for each binary in turn (default: the
#                         carried build), LOCKSTEP_STEP_TIMES=1 at 64, 8 and 1
#                         requests, decode-heavy (prompt 8, 64 new) and the
#                         issue's shape (prompt 128, 128 new), two rounds: how
#                         the host's wall time of a step splits (schedule,
#                         batch, inputs, call, ...). Binaries kept beside the
#                         bundles: gpu-bundle/steps/lockstep-run-COMMIT.
#                         SHAPES="128,128" runs that prompt,new shape only.
# commands.sh fuzz RUN BIN  lockstep-run fuzz of llama1b on the GPU (8
#                         schedules of 16 requests, 8 new tokens, seeded and
#                         greedy), schedules against the GPU's own baseline:
#                         the host side of a step (rows read in place, the row
#                         pool) must change no bit.
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
mode=$1 r=$2
b=/tmp/lsb-$r/bench
shift 2
bins=("${@:-build/bin/lockstep-run}")
# Binaries travel as gpu-bundle/BINS/bins.tar.xz (BINS=steps1 ...), unpacked
# into gpu-bundle/steps/ there.
[ -n "$BINS" ] && mkdir -p gpu-bundle/steps && tar xJf gpu-bundle/$BINS/bins.tar.xz -C gpu-bundle/steps
case "$mode" in
steps)
  mkdir -p /tmp/lsb-$r && tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
  python3 bench/gpu/llama1b.py /tmp/lockstep-bench > "$OUT/model.log" 2>&1 || { tail "$OUT/model.log"; exit 1; }
  for round in 1 2; do
    for shape in ${SHAPES:-8,64 128,128}; do
      set -- ${shape/,/ }
      for c in 64 8 1; do
        for run in "${bins[@]}"; do
          n=$(basename "$run")
          LOCKSTEP_STEP_TIMES=1 timeout 120 $run bench $b/llama1b.lsa --device cuda --only batched \
            --warmup 1 --requests $c --prompt-len $1 --max-new-tokens $2 \
            > "$OUT/steps-$n-p$1-c$c-r$round.log" 2>&1
          echo "round $round $n p=$1 c=$c rc=$?"
          grep -E "^batched decode|^step times" "$OUT/steps-$n-p$1-c$c-r$round.log"
        done
      done
    done
  done
  ;;
fuzz)
  mkdir -p /tmp/lsb-$r && tar xJf gpu-bundle/$r/bench.tar.xz -C /tmp/lsb-$r
  [ -f /tmp/lockstep-bench/llama1b.onnx ] || python3 bench/gpu/llama1b.py /tmp/lockstep-bench > "$OUT/model.log" 2>&1
  timeout 240 ${bins[0]} fuzz $b/llama1b.lsa --device cuda --schedules ${SCHEDULES:-8} --seed 7 --requests 16 \
    --max-new-tokens 8 --report "$OUT/fuzz.json" --trace "$OUT/fuzz.trace" > "$OUT/fuzz.log" 2>&1
  echo "fuzz rc=$?"; tail -4 "$OUT/fuzz.log"
  ;;
esac
