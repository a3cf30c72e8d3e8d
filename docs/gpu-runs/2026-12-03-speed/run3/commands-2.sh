#!/usr/bin/env bash
# On the device (2026-12-03, run 3), second call: Lockstep's serving beside
# HF with torch.compile (static cache, CUDA graphs) in one run.py run, then
# the same serving without CUDA graphs.
cd "$(dirname "$0")/../../../.."
export LOCKSTEP_PYTHON=python3
mkdir -p /tmp/lsb && [ -d /tmp/lsb/bench ] || tar xJf gpu-bundle/run3/bench.tar.xz -C /tmp/lsb
b=/tmp/lsb/bench
timeout 520 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu-2.md" --json "$OUT/bench-2.json" --only serve,hfc,nographs --hfc-timeout 330 > "$OUT/bench-2.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench-2.log"
tail -30 "$OUT/bench-2.log"
# Every kernel of a decode step at 1 request (16-token prompt, 8 new tokens),
# with its launches, for counting the kernels a layer runs.
LOCKSTEP_CUDA_PROFILE=1 LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 40 "$b/lockstep-run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 1 --prompt-len 16 --max-new-tokens 8 > "$OUT/profile-decode-all.log" 2>&1
tail -5 "$OUT/profile-decode-all.log"
