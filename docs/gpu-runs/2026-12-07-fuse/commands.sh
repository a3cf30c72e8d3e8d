#!/usr/bin/env bash
# On the device (2026-12-07). Bundles made here, under gpu-bundle/RUN/:
#   bundle.tar.xz  scripts/gpu-prepare of all models with RUN's compiler
#   host.tar.xz    host/run (lockstep-run of the same tree), host/old.lsa and
#                  host/new.lsa: bench/gpu/llama1b.py's model (ragged step,
#                  --target=cuda, weights referenced) compiled without and
#                  with RUN's change (the pass left out of the pipeline text
#                  for old.lsa, nothing else different)
#   run25: lockstep-fuse-pool-writes (the K and V pool writes done by RoPE
#          of k and v's transpose: 2 kernels fewer a layer)
#   run26: also lockstep-fuse-rows (a residual add and the norm after it one
#          kernel of a block a row; not kept, its patch in rows/) and
#          lockstep-fuse-siblings (RoPE of q, RoPE of k, v's transpose one
#          kernel), compiler 4e4bdab; its host.tar.xz holds old.lsa (no
#          fusion), mid.lsa (run25's new.lsa) and new.lsa
#   run27: run26 without lockstep-fuse-rows (pool writes and siblings),
#          host.tar.xz as run26's with its own new.lsa
# Run: `BITS_TIMEOUT=400 commands.sh bits run26` then `ROUNDS=1 commands.sh ab
# run26` in one call (H200; files in run26/ and ab26/; run25 was never run:
# no device was lent before run26 was ready), then `BITS_TIMEOUT=300
# commands.sh bits run27` (an H100; run27/): the device time left after
# sixteen refused starts did not cover `commands.sh ab run27`.
# commands.sh bits RUN   scripts/test-gpu on RUN's bundle
# commands.sh ab RUN     llama1b at 1, 8 and 64 requests (prompt 128, 128 new
#                        tokens, bench --warmup 1), each of old.lsa, mid.lsa
#                        (if there) and new.lsa in turn, ROUNDS rounds
#                        (default 2); then ncu's device
#                        time, DRAM bytes and grid of 170 consecutive kernels
#                        of a 1-request decode call (new.lsa)
# commands.sh ncu64 RUN  ncu's device time, DRAM bytes and grid of the kernels
#                        of one decode call at 64 requests (new.lsa)
cd "$(dirname "$0")/../../.."
export LOCKSTEP_PYTHON=python3 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
r=$2
host_setup() {
  h=/tmp/lsh-$r/host; mkdir -p /tmp/lsh-$r; tar xJf gpu-bundle/$r/host.tar.xz -C /tmp/lsh-$r
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
    for x in old mid new; do
      [ -f $h/$x.lsa ] || continue
      for c in 1 8 64; do
        y=$(timeout 120 $h/run bench $h/$x.lsa --device cuda --only batched --warmup 1 \
          --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched|^cuda" | tr '\n' ' ')
        echo "round $round $x c=$c $y" | tee -a "$OUT/ab.log" | cut -c1-400
      done
    done
  done
  find_ncu
  timeout 150 $ncu --csv --page raw --launch-skip 400 --launch-count 170 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
    $h/run bench $h/new.lsa --device cuda --only batched --requests 1 --prompt-len 128 \
    --max-new-tokens 16 > "$OUT/ncu1.csv" 2> "$OUT/ncu1.err"
  echo "ncu rc=$? $(wc -l < "$OUT/ncu1.csv") lines"; tail -2 "$OUT/ncu1.err"
  ;;
ncu64)
  host_setup; find_ncu
  timeout 280 $ncu --csv --page raw --launch-skip ${SKIP:-14000} --launch-count ${COUNT:-400} \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
    $h/run bench $h/new.lsa --device cuda --only batched --requests 64 --prompt-len 128 \
    --max-new-tokens 16 > "$OUT/ncu64.csv" 2> "$OUT/ncu64.err"
  echo "ncu rc=$? $(wc -l < "$OUT/ncu64.csv") lines"; tail -3 "$OUT/ncu64.err"
  ;;
esac
