#!/usr/bin/env bash
# On the device (run 3, first call): the fixtures' bits with CUDA graphs and
# the pipelined tiles, then the speed benchmark, a decode profile, and nsys's
# kernel totals if nsys is there. Bundles from scripts/gpu-prepare and
# bench/gpu/prepare.py at the commit named in manifest.json.
cd "$(dirname "$0")/../../../.."
export LOCKSTEP_PYTHON=python3
mkdir -p /tmp/lsb && tar xJf gpu-bundle/bench.tar.xz -C /tmp/lsb
b=/tmp/lsb/bench run=/tmp/lsb/bench/lockstep-run
ldd "$run" | grep -i "not found" && echo "lockstep-run does not start here" > "$OUT/fixtures.log"
timeout 200 scripts/test-gpu gpu-bundle/fixtures.tar.xz "$run" --phases exec,control,cpu,wide,gpu --schedules-fixtures 100 --jobs 15 --split 5 --logs "$OUT/logs-fix" > "$OUT/fixtures.log" 2>&1
echo "rc=$?" >> "$OUT/fixtures.log"; tail -3 "$OUT/fixtures.log"
(cd "$OUT" && tar czf logs-fix.tgz logs-fix && rm -rf logs-fix)
timeout 330 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" --only copy,gemm,serve,nographs,hf > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
LOCKSTEP_CUDA_PROFILE=1 timeout 30 "$run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 1 --prompt-len 16 --max-new-tokens 32 > "$OUT/profile-decode1.log" 2>&1
nsys=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
if [ -n "$nsys" ]; then
  (cd /tmp && timeout 60 "$nsys" profile -o /tmp/decode1 --force-overwrite true --stats=true "$run" bench "$b/llama1b.lsa" --device cuda --only batched --requests 1 --prompt-len 16 --max-new-tokens 32) > "$OUT/nsys-decode1.log" 2>&1
else
  echo "no nsys" > "$OUT/nsys-decode1.log"
fi
tail -40 "$OUT/bench.log"
