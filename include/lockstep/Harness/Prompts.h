//===- Prompts.h - Reading prompts from JSON lines --------------*- C++ -*-===//
//
// One prompt per line: a bare array of token ids, `[1, 2, 3]`, or an object
// `{"ids": [1, 2, 3], "max_new_tokens": 8, "temperature": 0.7, "top_k": 40,
// "top_p": 0.9, "seed": 17}` where every key but "ids" is optional; instead
// of "ids", an object may give "text" (a JSON string), which the artifact's
// tokenizer encodes (lockstep-run generate). Blank
// lines are skipped. Anything else is an error naming the line and column.
// The parser is a small recursive-descent reader of this subset of JSON
// (numbers, arrays of numbers, one level of object), bounded so that a hostile
// file cannot exhaust the stack or memory beyond its own size.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_HARNESS_PROMPTS_H
#define LOCKSTEP_HARNESS_PROMPTS_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep::rt {

struct PromptSpec {
  std::vector<int64_t> ids; ///< as written (range-checked later, per model)
  std::optional<std::string> text; ///< "text" instead of "ids": to encode
  std::optional<int64_t> maxNewTokens;
  std::optional<double> temperature, topP;
  std::optional<int64_t> topK;
  std::optional<uint64_t> seed;
};

/// Parses JSON-lines text. On failure returns false and sets `error` to
/// "line L, column C: what".
bool parsePrompts(const std::string &text, std::vector<PromptSpec> &out,
                  std::string &error);

/// Reads and parses a file.
bool readPrompts(const std::string &path, std::vector<PromptSpec> &out,
                 std::string &error);

} // namespace lockstep::rt

#endif
