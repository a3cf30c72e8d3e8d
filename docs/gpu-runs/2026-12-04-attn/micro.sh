#!/usr/bin/env bash
# On the device (2026-12-04): five forms of the paged attention kernel on
# the attention of the benchmark's Llama (32 query heads over 8 key heads of
# 64), in a 2-layer model of width 64 (gpu-bundle/micro.tar.xz, compiled with
# --target=cpu,cuda, weights referenced through /tmp/lockstep-repo): for
# each, the kernels' device time at 1 and 64 requests and a prefill of 512
# (LOCKSTEP_CUDA_PROFILE=events), and a fuzz campaign on the GPU against the
# CPU baseline of the same artifact (prompts of 1 to 300 tokens).
#   A_run11     0626a4b: a loop over groups of 8 keys, a fold a pass
#   B_unrolled  940c720: the same folds as straight-line code
#   C_groupN    the chunk max by xor shuffles; s_j and o_j in one pass over
#               the keys, N keys' shuffles and loads issued before their
#               folds (a loop iteration each; 32: straight-line)
cd "$(dirname "$0")/../../.."
ln -sfn "$PWD" /tmp/lockstep-repo
[ -d gpu-bundle/micro ] || tar xJf gpu-bundle/micro.tar.xz -C gpu-bundle
b=gpu-bundle/micro
run=$b/lockstep-run
for v in A_run11 B_unrolled C_group8 C_group16 C_group32; do
  for mode in "d1 --requests 1 --prompt-len 128 --max-new-tokens 33" \
              "d64 --requests 64 --prompt-len 128 --max-new-tokens 9" \
              "pf --requests 2 --prompt-len 512 --max-new-tokens 1 --token-budget 512"; do
    set -- $mode; name=$1; shift
    LOCKSTEP_CUDA_PROFILE=events LOCKSTEP_CUDA_PROFILE_ROWS=0 timeout 60 \
      $run bench $b/$v.lsa --device cuda --only batched "$@" > "$OUT/$v-$name.log" 2>&1
    a=$(grep "self_attn/MatMul_1" "$OUT/$v-$name.log" | sort -k2 -n -r | head -2 | awk '{printf "%s:%sus ", $1, $3}')
    d=$(grep "batched decode" "$OUT/$v-$name.log" | awk '{print $(NF-1)}')
    echo "$v $name attention(launches:us) $a decode-ms/step(events) $d"
  done
  timeout 100 $run fuzz $b/$v.lsa --device cuda --baseline-device cpu --prompts $b/prompts.jsonl \
    --schedules 6 --seed 12 --max-new-tokens 6 > "$OUT/$v-fuzz.log" 2>&1
  echo "$v fuzz rc=$? $(grep -E 'verdict|mismatch' "$OUT/$v-fuzz.log" | head -2 | tr '\n' ' ')"
  timeout 60 $run bench $b/$v.lsa --device cuda --only batched --warmup 1 --requests 1 --prompt-len 128 --max-new-tokens 65 2>&1 | grep "batched decode" | sed "s/^/$v graphs d1 /"
done
(cd "$OUT" && tar czf micro-logs.tgz *.log && rm -f *.log)
