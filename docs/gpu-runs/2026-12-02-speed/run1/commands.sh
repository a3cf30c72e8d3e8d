#!/usr/bin/env bash
# On the device: the GPU speed benchmark and two profiles of the 1e9 model.
cd "$(dirname "$0")/.."
mkdir -p /tmp/lsb && tar xJf gpu-bundle/bench.tar.xz -C /tmp/lsb && b=/tmp/lsb/bench
nvidia-smi > "$OUT/nvidia-smi.txt" 2>&1
python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" ${ONLY:+--only $ONLY} > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
if [ -f /tmp/lockstep-bench/llama1b.onnx.data ]; then
  LOCKSTEP_CUDA_PROFILE=1 timeout 120 $b/lockstep-run bench $b/llama1b.lsa --device cuda --only batched --requests 1 --prompt-len 16 --max-new-tokens 32 > "$OUT/profile-decode1.log" 2>&1
  LOCKSTEP_CUDA_PROFILE=1 timeout 120 $b/lockstep-run bench $b/llama1b.lsa --device cuda --only batched --requests 8 --prompt-len 512 --max-new-tokens 1 --token-budget 512 > "$OUT/profile-prefill.log" 2>&1
fi
tail -40 "$OUT/bench.log"
