#!/usr/bin/env bash
# On the device (2026-12-07, afternoon). Bundles made here, under
# gpu-bundle/RUN/:
#   bundle.tar.xz  scripts/gpu-prepare of all models with RUN's compiler
#   bench.tar.xz   bench/gpu/prepare.py (directory renamed bench): its
#                  lockstep-run runs the bits
#   host.tar.xz    host/run (RUN's lockstep-run) and bench/gpu/llama1b.py's
#                  model (ragged step, --target=cuda, weights referenced)
#                  as host/old.lsa (compiler b52b0ec's pipeline: no pool
#                  writes, no sibling fusion), host/mid.lsa (run27's: both,
#                  6fc887e) and host/new.lsa (RUN's)
#   run28: serving.ragged.pool_writes = step (lockstep-record-pool-writes):
#          the runtime no longer copies the new K/V rows into the pools
#          after each call (36 scatter kernels a decode step of llama1b),
#          the step having written them; mid.lsa has no such property, so
#          with RUN's runtime it still gets the copies: mid against new is
#          the copies' cost alone
# commands.sh bits RUN   scripts/test-gpu on RUN's bundle
# commands.sh ab RUN     llama1b at 1, 8 and 64 requests (prompt 128, 128 new
#                        tokens, bench --warmup 1), each of old, mid and new
#                        in turn, ROUNDS rounds (default 2); AB_RUNS and
#                        AB_CONC pick fewer artifacts and concurrencies
# commands.sh prof RUN   ncu on new.lsa: the metrics of the warp-state,
#                        occupancy, throughput and launch sections (raw
#                        page: the stall reasons) of 24 kernels of a decode
#                        step at 1 request (prof1.csv), then time, DRAM bytes and
#                        grid of the kernels of one decode step at 64
#                        requests (ncu64.csv)
cd "$(dirname "$0")/../../.."
export LOCKSTEP_PYTHON=python3 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
r=$2
h=/tmp/lsh-$r/host
host_setup() {
  mkdir -p /tmp/lsh-$r; tar xJf gpu-bundle/$r/host.tar.xz -C /tmp/lsh-$r
  python3 bench/gpu/llama1b.py /tmp/lockstep-bench > "$OUT/model.log" 2>&1 || { tail "$OUT/model.log"; exit 1; }
}
find_ncu() {
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
}
case "$1" in
bits)
  exec bash docs/gpu-runs/2026-12-06-group/commands.sh bits "$r"
  ;;
ab)
  host_setup
  for round in $(seq 1 "${ROUNDS:-2}"); do
    for x in ${AB_RUNS:-old mid new}; do
      for c in ${AB_CONC:-1 8 64}; do
        y=$(timeout 120 $h/run bench $h/$x.lsa --device cuda --only batched --warmup 1 \
          --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched|^cuda" | tr '\n' ' ')
        echo "round $round $x c=$c $y" | tee -a "$OUT/ab.log" | cut -c1-400
      done
    done
  done
  ;;
prof)
  host_setup; find_ncu
  timeout 200 $ncu --csv --page raw --launch-skip ${SKIP1:-400} --launch-count 24 \
    --section WarpStateStats --section Occupancy --section SpeedOfLight --section LaunchStats \
    $h/run bench $h/new.lsa --device cuda --only batched --requests 1 --prompt-len 128 \
    --max-new-tokens 16 > "$OUT/prof1.csv" 2> "$OUT/prof1.err"
  echo "prof1 rc=$? $(wc -l < "$OUT/prof1.csv") lines"; tail -2 "$OUT/prof1.err"
  # 64 prompts of 128 are 32 prefill steps of 256 tokens (about 5,400
  # launches); launch 8,000 is in the 15th or so decode step.
  timeout 280 $ncu --csv --page raw --launch-skip ${SKIP64:-8000} --launch-count ${COUNT:-400} \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
    $h/run bench $h/new.lsa --device cuda --only batched --requests 64 --prompt-len 128 \
    --max-new-tokens 64 > "$OUT/ncu64.csv" 2> "$OUT/ncu64.err"
  echo "ncu64 rc=$? $(wc -l < "$OUT/ncu64.csv") lines"; tail -3 "$OUT/ncu64.err"
  ;;
esac
