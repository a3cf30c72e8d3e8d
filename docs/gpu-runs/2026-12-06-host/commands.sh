#!/usr/bin/env bash
# On the device (2026-12-06, late). Bundles made here, under gpu-bundle/RUN/:
#   bundle.tar.xz  scripts/gpu-prepare of all models (run23: 37e93a0, the
#                  compiler of 3ef390a, Pow 3 as products)
#   bench.tar.xz   bench/lockstep-run (the runtime tool of the same tree; for
#                  run23 with two uncommitted changes: outputs not zeroed
#                  before their download, which 27d5b38 keeps, and downloads
#                  of 1 MiB or more staged through page-locked memory, which
#                  the probe showed slower and which was dropped)
#   host.tar.xz    host/llama1b.lsa (bench/gpu/llama1b.py's model, ragged
#                  step, --target=cuda, weights referenced), host/run-old
#                  (lockstep-run of bc170af) and host/run-new (run23's, as
#                  bench.tar.xz's)
#   probe/copy     copy.cu here (`nvcc -O2 -o gpu-bundle/probe/copy copy.cu`):
#                  pageable, page-locked and registered device-to-host copies
#                  of 1, 8 and 32 MiB
# commands.sh bits RUN   the probe, then scripts/test-gpu on RUN's bundle
# commands.sh host RUN   llama1b at 1, 8 and 64 requests (prompt 128, 128 new
#                        tokens, bench --warmup 1), run-old and run-new in
#                        turn, two rounds; then the events profile of each at
#                        64 requests; then ncu's device time, DRAM bytes
#                        and grid of 170 consecutive kernels at 1 and at 64
#                        requests (run-new): at 1 request a decode call
#                        (ncu1.csv); at 64 the skip landed in a call with a
#                        256-token prefill chunk (ncu64.csv), not a decode one
# Run, in this order: `BITS_TIMEOUT=420 commands.sh bits run23` (H200),
# `commands.sh host run23` (H200), then with run24 (H100):
# `BITS_TIMEOUT=420 ../2026-12-06-group/commands.sh bits run24` and
# `commands.sh pdl run24`. Files: run23/, host/, run24/, pdl/.
cd "$(dirname "$0")/../../.."
export LOCKSTEP_PYTHON=python3 PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
r=$2
# RUN's host bundle unpacked (its directory in $h) and the model's weights
# written from their seed; ncu's path in $ncu.
host_setup() {
  h=/tmp/lsh-$r/host; mkdir -p /tmp/lsh-$r; tar xJf gpu-bundle/$r/host.tar.xz -C /tmp/lsh-$r
  python3 bench/gpu/llama1b.py /tmp/lockstep-bench > "$OUT/model.log" 2>&1 || { tail "$OUT/model.log"; exit 1; }
}
find_ncu() {
  ncu=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
}
case "$1" in
bits)
  gpu-bundle/probe/copy > "$OUT/probe.txt" 2>&1; cat "$OUT/probe.txt"
  exec bash docs/gpu-runs/2026-12-06-group/commands.sh bits "$r"
  ;;
host)
  host_setup
  for round in 1 2; do
    for x in old new; do
      for c in 1 8 64; do
        y=$(timeout 120 $h/run-$x bench $h/llama1b.lsa --device cuda --only batched --warmup 1 \
          --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched|^cuda" | tr '\n' ' ')
        echo "round $round $x c=$c $y" | tee -a "$OUT/host.log" | cut -c1-400
      done
    done
  done
  for x in old new; do
    LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 100 $h/run-$x bench \
      $h/llama1b.lsa --device cuda --only batched --requests 64 --prompt-len 128 \
      --max-new-tokens 33 > "$OUT/events64-$x.log" 2>&1
    echo "events rc=$?" >> "$OUT/events64-$x.log"; grep -A3 "^cuda profile" "$OUT/events64-$x.log" | cut -c1-300
    grep "^batched" "$OUT/events64-$x.log"
  done
  find_ncu
  # A call is about 167 launches: skip the prefill calls, then one decode call.
  for c in 1 64; do
    skip=$((c == 1 ? 400 : 6680))
    timeout 150 $ncu --csv --page raw --launch-skip $skip --launch-count 170 \
      --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
      $h/run-new bench $h/llama1b.lsa --device cuda --only batched --requests $c --prompt-len 128 \
      --max-new-tokens 16 > "$OUT/ncu$c.csv" 2> "$OUT/ncu$c.err"
    echo "ncu c=$c rc=$? $(wc -l < "$OUT/ncu$c.csv") lines"; tail -2 "$OUT/ncu$c.err"
  done
  ;;
esac
# run24: the kernels begin with griddepcontrol.wait (lockstep-grid-dependency-
# wait) and the runtime links them by programmatic edges in its graphs;
# gpu-bundle/run24/host.tar.xz holds host/run-old and host/llama1b-old.lsa
# (run23's) beside host/run-new and host/llama1b.lsa (run24's).
# commands.sh pdl RUN    llama1b at 1, 8 and 64 requests, two rounds: old
#                        (run23), new (run24), plain (run24 with
#                        LOCKSTEP_CUDA_PDL=0: the waits without the edges)
# commands.sh ncu RUN    (not run: no device was lent at that hour) ncu's full set on five kernels of one decode call at
#                        1 request (run-new): launches 401 (the attention's
#                        chunk statistics), 402 (their merge), 403 (o_proj),
#                        405 (a norm's sum, one block) and 413 (q/k/v)
if [ "$1" = ncu ]; then
  host_setup; find_ncu
  for id in 401 402 403 405 413; do
    timeout 100 $ncu --set full --launch-skip $id --launch-count 1 --print-details all \
      $h/run-new bench $h/llama1b.lsa --device cuda --only batched --requests 1 --prompt-len 128 \
      --max-new-tokens 4 > "$OUT/ncu-full-$id.txt" 2>&1
    echo "ncu $id rc=$?"; grep -E "Duration|Memory Throughput|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Grid Size|One or More|Stall" "$OUT/ncu-full-$id.txt" | head -12
  done
fi
if [ "$1" = pdl ]; then
  host_setup
  for round in 1 2; do
    for x in old new plain; do
      run=$h/run-new; lsa=$h/llama1b.lsa; pdl=1
      [ $x = old ] && { run=$h/run-old; lsa=$h/llama1b-old.lsa; }
      [ $x = plain ] && pdl=0
      for c in 1 8 64; do
        y=$(LOCKSTEP_CUDA_PDL=$pdl timeout 120 $run bench $lsa --device cuda --only batched --warmup 1 \
          --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched|^cuda" | tr '\n' ' ')
        echo "round $round $x c=$c $y" | tee -a "$OUT/pdl.log" | cut -c1-330
      done
    done
  done
fi
# commands.sh ncu64 RUN  (not run: no device was lent) ncu's device time, DRAM bytes and grid of the 370
#                        kernels of one decode call at 64 requests (prompt
#                        128: the prefill takes 32 calls of about 370
#                        launches; 40 calls are skipped), run-new
if [ "$1" = ncu64 ]; then
  host_setup; find_ncu
  timeout 280 $ncu --csv --page raw --launch-skip 14800 --launch-count 370 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,launch__grid_size,launch__block_size,launch__registers_per_thread \
    $h/run-new bench $h/llama1b.lsa --device cuda --only batched --requests 64 --prompt-len 128 \
    --max-new-tokens 16 > "$OUT/ncu64-decode.csv" 2> "$OUT/ncu64-decode.err"
  echo "ncu rc=$? $(wc -l < "$OUT/ncu64-decode.csv") lines"; tail -3 "$OUT/ncu64-decode.err"
  grep -E "^batched" "$OUT/ncu64-decode.csv"
fi
