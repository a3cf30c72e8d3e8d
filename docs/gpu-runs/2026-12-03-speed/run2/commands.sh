#!/usr/bin/env bash
# On the device (2026-12-03, run 2): branch gpugemm's register-blocked
# many-rows tiles (64x128 and 128x128, vector<4> loads): the bits of 14
# models (scripts/gpu-prepare on a subset: the torch exports, three extra
# architectures, two sliding windows, a nocache and the two tiny fixtures),
# then GEMM and serving speed. Bundles made from the branch at d372043.
cd "$(dirname "$0")/../../../.."
export LOCKSTEP_PYTHON=python3
mkdir -p /tmp/lsb && tar xJf gpu-bundle/run2/bench.tar.xz -C /tmp/lsb
b=/tmp/lsb/bench run=/tmp/lsb/bench/lockstep-run
timeout 240 scripts/test-gpu gpu-bundle/run2/bundle.tar.xz "$run" --phases exec,cpu,wide,gpu --schedules-fixtures 100 --schedules 20 --cpu-schedules 20 --jobs 15 --split 5 --logs "$OUT/logs-all" > "$OUT/all.log" 2>&1
echo "rc=$?" >> "$OUT/all.log"; tail -3 "$OUT/all.log"
(cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
timeout 200 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" --only copy,gemm,serve,hf > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
LOCKSTEP_CUDA_PROFILE=1 timeout 40 "$run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 8 --prompt-len 512 --max-new-tokens 1 --token-budget 512 > "$OUT/profile-prefill.log" 2>&1
tail -40 "$OUT/bench.log"
