//===- ServeText.h - Text in and out of the HTTP server ---------*- C++ -*-===//
//
// The server speaks token ids. Text (a string prompt, string stop
// sequences, a choice's `text`) needs a tokenizer, which an artifact may not
// have: the server takes a `TextCodec` or none. Without one, a text prompt
// or a string stop is refused with a 400 error saying that the artifact has
// no tokenizer, and every choice's `text` is empty (its `token_ids` carry
// the completion).
//
// A tokenizer.json (lockstep/Text/Tokenizer.h: the artifact's own, from
// lockstep-opt --tokenizer, or `serve --tokenizer FILE`) plugs in through
// `tokenizerCodec`; another source of text would implement the same
// interface, and nothing else in the server changes.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_TOOLS_LOCKSTEP_RUN_SERVETEXT_H
#define LOCKSTEP_TOOLS_LOCKSTEP_RUN_SERVETEXT_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lockstep::run {

class TextCodec {
public:
  virtual ~TextCodec() = default;
  /// The ids of a prompt's text; false with `error` when it cannot be
  /// encoded.
  virtual bool encode(const std::string &text, std::vector<int32_t> &ids,
                      std::string &error) const = 0;
  /// The text of a run of generated ids (valid UTF-8; a multi-byte
  /// character split across ids appears once its last id is there).
  virtual std::string decode(const std::vector<int32_t> &ids) const = 0;
};

/// A TextCodec over the text of a Hugging Face tokenizer.json: encode adds
/// the special tokens its post-processor adds (a BOS), decode skips special
/// tokens. Null with `error` when it cannot be loaded, or when the tokenizer
/// has more ids than the model's vocabulary (`vocab`). `eos` gets the
/// tokenizer's end-of-sequence id, -1 when it has none.
std::unique_ptr<TextCodec> tokenizerCodec(std::string_view json, int64_t vocab, int32_t &eos,
                                          std::string &error);

} // namespace lockstep::run

#endif
