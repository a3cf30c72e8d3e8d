#!/usr/bin/env bash
# On the device (run 4, second call): the end-to-end table again with the
# faster torch reference, HF with a static cache and torch.compile
# (reduce-overhead), beside eager, on the same bundle as run4/commands.sh.
cd "$(dirname "$0")/../../../.."
mkdir -p /tmp/lsb && tar xJf gpu-bundle/bench.tar.xz -C /tmp/lsb
timeout 570 python3 bench/gpu/run.py /tmp/lsb/bench --out "$OUT/RESULTS-gpu.md" --json "$OUT/bench.json" --only copy,serve,hf,hfc --hfc-timeout 330 > "$OUT/bench.log" 2>&1
echo "run.py rc=$?" >> "$OUT/bench.log"
tail -30 "$OUT/bench.log"
