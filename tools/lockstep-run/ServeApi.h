//===- ServeApi.h - The OpenAI completions request, checked -----*- C++ -*-===//
//
// What `POST /v1/completions` accepts, parsed from the body with
// nlohmann::json and checked field by field. Unknown fields are ignored;
// a known field of the wrong type or out of range is an error naming it
// (`param`), answered as OpenAI answers: HTTP 400 and
//
//   {"error": {"message": ..., "type": "invalid_request_error",
//              "param": ..., "code": ...}}
//
// Fields (OpenAI's defaults):
//   prompt       array of token ids, or array of such arrays (one choice
//                each); a string or array of strings needs a TextCodec
//   max_tokens   integer >= 1 (16)
//   temperature  number in [0, 2] (1); 0 is greedy
//   top_p        number in (0, 1] (1)
//   top_k        integer >= 0 (0: off; an extension, as vLLM has it)
//   seed         integer (0): the sampler's key; prompt i of a list uses
//                seed + i
//   logprobs     integer in [0, 20] or null: the logprob of each generated
//                token and of the N most likely ones
//   stop         token id, array of token ids, string or array of strings
//                (strings need a TextCodec): generation ends before it
//   stream       boolean (false): server-sent events
//   stream_options.include_usage  boolean: a last chunk with usage
//   n, best_of   1 only; echo false only; suffix null only; logit_bias empty
//   presence_penalty, frequency_penalty   0 only
//   model, user  strings, not checked against anything
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_TOOLS_LOCKSTEP_RUN_SERVEAPI_H
#define LOCKSTEP_TOOLS_LOCKSTEP_RUN_SERVEAPI_H

#include "ServeText.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::run {

struct ApiError {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param; ///< Empty: null.
  std::string code;  ///< Empty: null.
  /// The body: {"error": {"message", "type", "param", "code"}}.
  std::string json() const;
};

struct CompletionParams {
  std::vector<std::vector<int32_t>> prompts; ///< One per choice.
  int64_t maxTokens = 16;
  double temperature = 1;
  double topP = 1;
  int64_t topK = 0;
  uint64_t seed = 0;
  std::optional<int64_t> logprobs;
  std::vector<int32_t> stopIds;
  std::vector<std::string> stopTexts;
  bool stream = false;
  bool includeUsage = false;
  std::string model;
};

/// The longest prompt list and stop list accepted.
inline constexpr size_t kMaxPrompts = 64;
inline constexpr size_t kMaxStops = 16;

/// Parses and checks a request body; false with `err` (status 400) when it
/// is not JSON, not an object, or a known field is wrong. `codec` may be
/// null (no tokenizer).
bool parseCompletion(const std::string &body, const TextCodec *codec, CompletionParams &out,
                     ApiError &err);

} // namespace lockstep::run

#endif
