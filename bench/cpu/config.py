"""What the CPU benchmark measures: the models (the repository's fixture
and two generated decoders, small ones for --quick) and the sizes."""

# The models. `gen` builds one with models/gen_decoders.py at that size.
LLAMA_125M = dict(layers=12, hidden=768, heads=12, kv_heads=4, head_dim=64, inter=2048,
                  vocab=32000, max_pos=2048)  # bench/compile_large.py's
GPT2_124M = dict(layers=12, hidden=768, heads=12, head_dim=64, inter=3072, vocab=50257,
                 max_pos=1024)  # GPT-2 small's shape
LLAMA_QUICK = dict(layers=2, hidden=256, heads=4, kv_heads=2, head_dim=64, inter=512,
                   vocab=4000, max_pos=512)
GPT2_QUICK = dict(layers=2, hidden=256, heads=4, head_dim=64, inter=1024, vocab=4000,
                  max_pos=512)


def model_specs(quick):
    """The models: the fixture llama_dynamo18 and the two generated
    decoders (with --quick their small configs, named NAME_quick)."""
    large = [("llama_125m", "llama", LLAMA_QUICK if quick else LLAMA_125M),
             ("gpt2_124m", "gpt2", GPT2_QUICK if quick else GPT2_124M)]
    if quick:
        large = [(n.split("_")[0] + "_quick", k, c) for n, k, c in large]
    return [dict(name="llama_dynamo18", file="models/torch/llama_dynamo18.onnx", large=False)] + \
        [dict(name=n, kind=k, config=c, large=True) for n, k, c in large]


# What is measured (capped to a model's positions, said in the report).
FULL = dict(prefill=[128, 512], prefill_tokens=1024, concurrency=[1, 8, 32], decode_prompt=32,
            decode_steps=64, gemm_t=[1, 8, 32, 128, 512], gemm_seconds=0.15, gemm_rounds=3, repeat=3,
            fixture_scale=4, fixture_repeat=3)
QUICK = dict(prefill=[32, 128], prefill_tokens=128, concurrency=[1, 8], decode_prompt=16,
             decode_steps=8, gemm_t=[8, 128], gemm_seconds=0.05, gemm_rounds=1, repeat=1,
             fixture_scale=4, fixture_repeat=1)
