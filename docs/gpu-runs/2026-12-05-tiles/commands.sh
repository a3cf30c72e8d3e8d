#!/usr/bin/env bash
# 2026-12-05, third session. Here: bench/gpu/tiles.py prepare --out /tmp/tiles/tiles
# (compiler at 9a768b8), then (cd /tmp/tiles && tar cJf gpu-bundle/tiles.tar.xz tiles).
# On the device (carry gpu-bundle/tiles.tar.xz):
mkdir -p /tmp/tl && tar xJf gpu-bundle/tiles.tar.xz -C /tmp/tl && nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/gpu.txt
timeout 420 python3 bench/gpu/tiles.py run /tmp/tl/tiles --out $OUT/TILES.md > $OUT/tiles.log 2>&1
