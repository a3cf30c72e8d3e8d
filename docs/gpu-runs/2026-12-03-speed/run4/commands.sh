#!/usr/bin/env bash
# On the device (2026-12-03, run 4 of the directory; GPU run 7 in
# bench/RESULTS.md), first call: every model's bits (all 66 of models/, both
# forms: 132 cases from scripts/gpu-prepare) at 56381d4: fills forwarded
# into reductions (lockstep-forward-fills, the tiles), the attention merge's
# weights once a row and chunk (branch attnmerge), transposed partials
# [m, j, n]. Fewer schedules than run 3 to fit the device time. Second call:
# commands-2.sh.
cd "$(dirname "$0")/../../../.."
export LOCKSTEP_PYTHON=python3
mkdir -p /tmp/lsb && tar xJf gpu-bundle/run4/bench.tar.xz -C /tmp/lsb
run=/tmp/lsb/bench/lockstep-run
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
timeout 560 scripts/test-gpu gpu-bundle/run4/bundle.tar.xz "$run" --phases exec,control,cpu,wide,gpu --schedules-fixtures 50 --schedules 6 --cpu-schedules 6 --jobs 15 --split 5 --logs "$OUT/logs-all" > "$OUT/all.log" 2>&1
echo "rc=$?" >> "$OUT/all.log"; tail -3 "$OUT/all.log"
(cd "$OUT" && tar czf logs-all.tgz logs-all && rm -rf logs-all)
