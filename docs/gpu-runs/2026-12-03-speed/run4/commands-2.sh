#!/usr/bin/env bash
# On the device (2026-12-03, run 4), second call: the serving benchmark (no
# GEMM table, for lack of device time), with
# HF torch.compile (generate()'s compile_config: static cache, CUDA graphs)
# in the same run.py run.
cd "$(dirname "$0")/../../../.."
export LOCKSTEP_PYTHON=python3
mkdir -p /tmp/lsb && [ -d /tmp/lsb/bench ] || tar xJf gpu-bundle/run4/bench.tar.xz -C /tmp/lsb
b=/tmp/lsb/bench
timeout 500 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" --only copy,serve,hf,hfc --hfc-timeout 240 > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
tail -40 "$OUT/bench.log"
