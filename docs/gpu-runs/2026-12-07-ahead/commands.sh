#!/usr/bin/env bash
# On the device (2026-12-07, evening). Bundle made here, gpu-bundle/RUN/host.tar.xz:
#   host/run        lockstep-run (72be8a3's runtime: serving.ragged.pool_writes)
#   host/base.lsa   bench/gpu/llama1b.py's model, ragged step, --target=cuda,
#                   weights referenced: the compiler of 4f674d5
#   host/aN.lsa     the same with the attention kernel's value loads issued N
#                   groups of 8 keys ahead of their folds, the first N before
#                   the dot (value-ahead.diff applied to 4f674d5, with
#                   LOCKSTEP_ATTN_VALUE_AHEAD=N; N = 2, 4, 8; not kept)
#   host/mid.lsa    run28's mid.lsa: base's kernels without
#                   serving.ragged.pool_writes (the runtime then scatters the
#                   new K/V rows itself after each call)
#   host/ptx/*.ptx  each form's attention kernels (chunk statistics) as PTX
# commands.sh all RUN
#   gen     each form's greedy tokens and logits fingerprints on 9 prompts of
#           1 to 700 tokens (prompts.jsonl), against base's: the same bits
#   events  each kernel's device time (LOCKSTEP_CUDA_PROFILE=events) at 1
#           request (prompt 128, 64 new), 64 requests (prompt 128, 32 new) and
#           a prefill of 2 x 512; mid at 64 requests too
#   ab      generated tok/s at 1 and 64 requests (prompt 128, 128 new, bench
#           --warmup 1), forms in turn, ROUNDS rounds (default 2)
#   sass    ptxas + cuobjdump -sass of each form's attention kernels
cd "$(dirname "$0")/../../.."
export PYTHONUNBUFFERED=1
here=docs/gpu-runs/2026-12-07-ahead
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>&1
r=$2
h=/tmp/lsh-$r/host
mkdir -p /tmp/lsh-$r && tar xJf gpu-bundle/$r/host.tar.xz -C /tmp/lsh-$r
python3 bench/gpu/llama1b.py /tmp/lockstep-bench > "$OUT/model.log" 2>&1 || { tail "$OUT/model.log"; exit 1; }
forms=${FORMS:-base a2 a4 a8}
mkdir -p "$OUT/logs"
for x in $forms; do
  timeout 120 $h/run generate $h/$x.lsa --device cuda --prompts $here/prompts.jsonl \
    --max-new-tokens 8 > "$OUT/logs/gen-$x.txt" 2> "$OUT/logs/gen-$x.err"
  echo "gen $x rc=$? lines=$(wc -l < "$OUT/logs/gen-$x.txt") same-as-base=$(cmp -s "$OUT/logs/gen-base.txt" "$OUT/logs/gen-$x.txt" && echo yes || echo NO)"
done | tee "$OUT/gen.log"
ev() {
  LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 150 \
    $h/run bench $h/$1.lsa --device cuda --only batched "${@:3}" > "$OUT/logs/ev-$1-$2.log" 2>&1
  echo "events $1 $2 rc=$? $(grep -E 'a call:' "$OUT/logs/ev-$1-$2.log" | head -1)"
  grep -i "attention" "$OUT/logs/ev-$1-$2.log" | head -4 | cut -c1-160
}
for x in $forms; do
  ev $x d1 --requests 1 --prompt-len 128 --max-new-tokens 64
  ev $x d64 --requests 64 --prompt-len 128 --max-new-tokens 32
  ev $x pf --requests 2 --prompt-len 512 --max-new-tokens 1 --token-budget 512
done 2>&1 | tee "$OUT/events.log"
ev mid d64 --requests 64 --prompt-len 128 --max-new-tokens 32 | tee -a "$OUT/events.log"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for x in $forms; do
    for c in 1 64; do
      y=$(timeout 120 $h/run bench $h/$x.lsa --device cuda --only batched --warmup 1 \
        --requests $c --prompt-len 128 --max-new-tokens 128 2>&1 | grep -E "^batched" | tr '\n' ' ')
      echo "round $round $x c=$c $y"
    done
  done
done 2>&1 | tee "$OUT/ab.log" | cut -c1-200
export PATH=$PATH:/usr/local/cuda/bin
for f in $h/ptx/*.ptx; do
  n=$(basename $f .ptx)
  ptxas -arch=sm_90 -v $f -o /tmp/$n.cubin > "$OUT/logs/ptxas-$n.txt" 2>&1
  cuobjdump -sass /tmp/$n.cubin > "$OUT/logs/sass-$n.txt" 2>&1 || echo "no cuobjdump for $n"
  grep -E "registers|spill" "$OUT/logs/ptxas-$n.txt" | sed "s/^/$n /"
done | tee "$OUT/sass.log"
(cd "$OUT" && tar czf logs.tgz logs && rm -rf logs)
