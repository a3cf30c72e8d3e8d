#!/usr/bin/env bash
# On the device (run 4): every model's bits with the final kernels of this
# stop (four tile shapes, pipelined staging, CUDA graphs), then the speed
# benchmark. Bundles from scripts/gpu-prepare (all models) and
# bench/gpu/prepare.py, at the commit in manifest.json.
cd "$(dirname "$0")/../../../.."
export LOCKSTEP_PYTHON=python3
mkdir -p /tmp/lsb && tar xJf gpu-bundle/bench.tar.xz -C /tmp/lsb
b=/tmp/lsb/bench run=/tmp/lsb/bench/lockstep-run
timeout 320 scripts/test-gpu gpu-bundle/bundle.tar.xz "$run" --phases exec,control,cpu,wide,gpu --schedules-fixtures 100 --schedules 10 --cpu-schedules 10 --jobs 15 --split 5 --logs "$OUT/logs-all" > "$OUT/all.log" 2>&1
echo "rc=$?" >> "$OUT/all.log"; tail -3 "$OUT/all.log"
(cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
timeout 240 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" --only copy,gemm,serve,nographs,hf > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
LOCKSTEP_CUDA_PROFILE=1 timeout 25 "$run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 1 --prompt-len 16 --max-new-tokens 32 > "$OUT/profile-decode1.log" 2>&1
tail -30 "$OUT/bench.log"
