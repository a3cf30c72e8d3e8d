//===- ServeUsage.h - serve's command line, for its --help ------*- C++ -*-===//
//
// The text of `lockstep-run serve --help`, shared by lockstep-run (which
// prints it without the server) and lockstep-serve, the program that
// `lockstep-run serve` runs (ServeForward.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_TOOLS_LOCKSTEP_RUN_SERVEUSAGE_H
#define LOCKSTEP_TOOLS_LOCKSTEP_RUN_SERVEUSAGE_H

namespace lockstep::run {

/// After "lockstep-run ".
inline constexpr const char *kServeUsage =
    "serve MODEL.lsa [--port N] [--host ADDR] [--tokenizer FILE.json] [--threads N] "
    "[--device cpu|cuda]";
inline constexpr const char *kServeHelp =
    "Serve the model over HTTP with an OpenAI-compatible completions API; every request "
    "joins one continuous batch.";
inline constexpr const char *kServeDetails =
    "Endpoints:\n"
    "  POST /v1/completions  OpenAI completions: prompt (token ids, a string, or a list of\n"
    "                        either, one choice each; text needs a tokenizer, the\n"
    "                        artifact's (lockstep-opt --tokenizer) or --tokenizer; without\n"
    "                        one a text prompt is a 400 error), max_tokens (16),\n"
    "                        temperature (1; 0 is greedy), top_p, top_k, seed (0; prompt i\n"
    "                        of a list uses seed + i), logprobs (0-20: log-softmax of the\n"
    "                        logits, in a fixed order), stop (token ids or strings;\n"
    "                        generation ends before one), stream (server-sent events,\n"
    "                        data: [DONE] last).\n"
    "                        Unknown fields are ignored; a known field of the wrong type is\n"
    "                        a 400 {\"error\": {message, type, param, code}}.\n"
    "  GET  /v1/models       the model\n"
    "  GET  /health          status and engine counters (steps, largest batch, KV blocks)\n"
    "Each choice carries token_ids and lockstep_fingerprint (the hash chain over every\n"
    "logits row the request got, as generate prints it); system_fingerprint names the\n"
    "artifact's checksum and numerics profile. A request's ids, logits and fingerprint\n"
    "do not depend on the other requests it shared steps with.\n\n"
    "Options:\n"
    "  --port N            TCP port (default 8000; 0 takes a free one: the port is in the\n"
    "                      'listening on http://HOST:PORT' line printed on stdout)\n"
    "  --host ADDR         address to listen on (default 127.0.0.1)\n"
    "  --model-name NAME   the model's id in responses (default: the artifact's file name\n"
    "                      without .lsa)\n"
    "  --tokenizer FILE    a Hugging Face tokenizer.json (BPE kinds, see tokenize) instead\n"
    "                      of the artifact's own (default: the artifact's, if it has one):\n"
    "                      text prompts and string stops are encoded with it (its BOS\n"
    "                      added), choices get their text (special tokens skipped); its\n"
    "                      ids must fit the model's vocabulary\n"
    "  --threads N         threads of the compiled code (default 1; no effect on bits)\n"
    "  --device cpu|cuda   where the model runs (default cpu; see generate)\n"
    "  --http-threads N    connections served at once (default 64); more wait to be read\n"
    "  --max-queue N       requests in flight (queued or running) at most (default 256);\n"
    "                      beyond it a request gets 429\n"
    "  --max-body-bytes N  largest request body (default 8388608); larger gets 413\n"
    "  --max-context N     longest prompt + max_tokens (default 2048; a model whose\n"
    "                      position tables are shorter caps it); longer gets 400\n"
    "  --token-budget N    tokens fed per step, and the longest prefill chunk (default 256)\n"
    "  --max-seqs N        requests per step (default 64)\n"
    "  --kv-blocks N       device KV blocks (default: 16 full contexts); when they run out\n"
    "                      requests are preempted and resumed, never failed\n"
    "  --block-size N      tokens per KV block (default 16)\n"
    "  --preempt MODE      recompute (default) or swap\n"
    "  --swap-blocks N     host blocks for preemption by swap (default: kv-blocks with\n"
    "                      --preempt swap, else 0)\n"
    "  --eos ID            a generated ID ends its request (finish_reason stop; the id\n"
    "                      is not returned); default: the tokenizer's end-of-sequence\n"
    "                      token with --tokenizer, else none; -1: none\n"
    "  --drain-timeout S   on SIGINT or SIGTERM, how long to wait for requests in flight\n"
    "                      (default 60)\n\n"
    "Errors are JSON: 400 bad JSON, a wrong field or a request longer than the context;\n"
    "404 unknown route; 413 body too large; 429 queue full; 503 draining; 500 model\n"
    "failure. A client that disconnects from a stream cancels its request (its KV blocks\n"
    "are freed); the engine never waits on a client.\n"
    "SIGINT or SIGTERM: new requests get 503, the requests in flight finish and are\n"
    "written, and the server exits 0 (1 if --drain-timeout cut some). Exit status 1\n"
    "when the model cannot be loaded or the port bound, 2 for a bad command line.\n\n"
    "The server is its own program, lockstep-serve, installed next to lockstep-run (which\n"
    "links no HTTP library): `lockstep-run serve ARGS` runs `lockstep-serve ARGS`.";

} // namespace lockstep::run

#endif
