#!/usr/bin/env bash
# On the device: correctness on the fixtures at HEAD (tiles, fusion, parallel pool
# writes), then the speed benchmark, with lockstep-run and its Debian libraries.
cd "$(dirname "$0")/.."
mkdir -p /tmp/lslib && tar xJf gpu-bundle/libs.tar.xz -C /tmp/lslib && cp out/wrap.sh /tmp/lslib/wrap.sh
export LOCKSTEP_PYTHON=python3
timeout 230 scripts/test-gpu gpu-bundle/fixtures.tar.xz /tmp/lslib/wrap.sh --phases exec,control,cpu,wide,gpu --schedules-fixtures 200 --jobs 15 --split 5 --logs "$OUT/logs-fix" > "$OUT/fixtures.log" 2>&1
echo "rc=$?" >> "$OUT/fixtures.log"; tail -3 "$OUT/fixtures.log"
(cd "$OUT" && tar czf logs-fix.tgz logs-fix && rm -rf logs-fix)
mkdir -p /tmp/lsb2 && tar xJf gpu-bundle/bench2.tar.xz -C /tmp/lsb2 && b=/tmp/lsb2/bench2
timeout 270 python3 bench/gpu/run.py "$b" --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" --only copy,gemm,serve,hf > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
LOCKSTEP_CUDA_PROFILE=1 timeout 50 $b/lockstep-run bench $b/llama1b.lsa --device cuda --only batched --requests 8 --prompt-len 512 --max-new-tokens 1 --token-budget 512 > "$OUT/profile-prefill.log" 2>&1
tail -30 "$OUT/bench.log"
scripts/test-gpu gpu-bundle/bundle.tar.xz /tmp/lslib/wrap.sh --phases exec,cpu --jobs 15   # all66-tiled.log, bundle of e5d608e
