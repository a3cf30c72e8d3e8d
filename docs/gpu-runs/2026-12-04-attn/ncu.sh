#!/usr/bin/env bash
# On the device (2026-12-04): Nsight Compute on the two kernels that lead a
# decode step, for the next changes: the paged attention kernel (a288957) of
# gpu-bundle/micro's C_group8 (32 heads over 8 of 64), at a decode step of
# one request (launch 206, its layer 0, in the second decode step after a
# 128-token prompt; counted with the stand-in driver, graphs off) and in the
# 128-token prefill (launch 26); and the one-row tile of 2048 x 5632 (the
# MLP's gate and up projections, gpu-bundle/run13's gemm_2048_5632.lsa) at
# T = 1, its partials and their combine.
cd "$(dirname "$0")/../../.."
ln -sfn "$PWD" /tmp/lockstep-repo
[ -d gpu-bundle/micro ] || tar xJf gpu-bundle/micro.tar.xz -C gpu-bundle
mkdir -p /tmp/lsb-run13; tar xJf gpu-bundle/run13/bench.tar.xz -C /tmp/lsb-run13
export LOCKSTEP_CUDA_GRAPHS=0
sec="--section SpeedOfLight --section LaunchStats --section Occupancy --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis --section SourceCounters"
run=gpu-bundle/micro/lockstep-run
for skip in 205 25; do
  timeout 150 ncu $sec --launch-skip $skip --launch-count 1 $run bench gpu-bundle/micro/C_group8.lsa \
    --device cuda --only batched --requests 1 --prompt-len 128 --max-new-tokens 3 > "$OUT/ncu-attn-$skip.txt" 2>&1
  echo "attn skip $skip rc=$?"; grep -E "Duration|Registers Per|Achieved Occupancy|Stall|Warp Cycles Per Issued|Memory Throughput|Issue Slots Busy" "$OUT/ncu-attn-$skip.txt" | head -20
done
python3 -c "
import numpy as np
np.save('/tmp/X.npy', np.random.RandomState(1).randn(1, 2048).astype(np.float32))
np.save('/tmp/W.npy', np.random.RandomState(2).randn(2048, 5632).astype(np.float32))"
timeout 120 ncu $sec --launch-count 2 /tmp/lsb-run13/bench/lockstep-run exec /tmp/lsb-run13/bench/gemm_2048_5632.lsa \
  --input X=/tmp/X.npy --input W=/tmp/W.npy --output-dir /tmp/o --device cuda > "$OUT/ncu-gemv.txt" 2>&1
echo "gemv rc=$?"; grep -E "Duration|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|Memory Throughput|DRAM Throughput|Grid Size|Block Size" "$OUT/ncu-gemv.txt" | head -20
