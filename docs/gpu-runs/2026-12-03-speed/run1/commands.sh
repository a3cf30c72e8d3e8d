#!/usr/bin/env bash
# On the device (2026-12-03, run 1): every model's bits after the CPU
# microkernels (lockstep-cpu-microkernels) and the MatMul-of-Transpose change
# (both change the CPU code the GPU is compared with), with the tile shapes
# of 2aea6df, then the speed benchmark and a decode profile. Bundles from
# scripts/gpu-prepare (all models) and bench/gpu/prepare.py at 8ba076b.
cd "$(dirname "$0")/../../../.."
export LOCKSTEP_PYTHON=python3
mkdir -p /tmp/lsb && tar xJf gpu-bundle/bench.tar.xz -C /tmp/lsb
b=/tmp/lsb/bench run=/tmp/lsb/bench/lockstep-run
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
timeout 300 scripts/test-gpu gpu-bundle/bundle.tar.xz "$run" --phases exec,control,cpu,wide,gpu --schedules-fixtures 100 --schedules 10 --cpu-schedules 10 --jobs 15 --split 5 --logs "$OUT/logs-all" > "$OUT/all.log" 2>&1
echo "rc=$?" >> "$OUT/all.log"; tail -3 "$OUT/all.log"
(cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
timeout 240 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" --only copy,gemm,serve,hf > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
LOCKSTEP_CUDA_PROFILE=1 timeout 25 "$run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 1 --prompt-len 16 --max-new-tokens 32 > "$OUT/profile-decode1.log" 2>&1
tail -30 "$OUT/bench.log"
