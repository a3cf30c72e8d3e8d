#!/usr/bin/env bash
# On the device (2026-12-03, run 3), first call: every model's bits (all of
# models/, scripts/gpu-prepare) with main at 1010bf2 (gpugemm's tiles, the
# CPU gather kernels, and chunk partials of transposed products laid out
# [m, j, n]), then the speed benchmark with the invariance cost (adaptive).
# Second call: commands-2.sh.
cd "$(dirname "$0")/../../../.."
export LOCKSTEP_PYTHON=python3
mkdir -p /tmp/lsb && tar xJf gpu-bundle/run3/bench.tar.xz -C /tmp/lsb
b=/tmp/lsb/bench run=/tmp/lsb/bench/lockstep-run
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
timeout 300 scripts/test-gpu gpu-bundle/run3/bundle.tar.xz "$run" --phases exec,control,cpu,wide,gpu --schedules-fixtures 100 --schedules 10 --cpu-schedules 10 --jobs 15 --split 5 --logs "$OUT/logs-all" > "$OUT/all.log" 2>&1
echo "rc=$?" >> "$OUT/all.log"; tail -3 "$OUT/all.log"
(cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
timeout 270 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" --only copy,gemm,serve,hf,adaptive > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
tail -30 "$OUT/bench.log"
