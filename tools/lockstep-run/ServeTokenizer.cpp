//===- ServeTokenizer.cpp - A tokenizer.json as the server's TextCodec ----===//
#include "ServeText.h"

#include "lockstep/Text/Tokenizer.h"

using namespace lockstep::run;
using lockstep::text::Tokenizer;

namespace {

class TokenizerCodec : public TextCodec {
public:
  explicit TokenizerCodec(std::unique_ptr<Tokenizer> tok) : tok(std::move(tok)) {}
  bool encode(const std::string &text, std::vector<int32_t> &ids,
              std::string &error) const override {
    if (!Tokenizer::isValidUtf8(text)) {
      error = "the text is not valid UTF-8";
      return false;
    }
    ids = tok->encode(text, /*addSpecial=*/true);
    if (ids.empty()) {
      error = "the text encodes to no tokens";
      return false;
    }
    return true;
  }
  std::string decode(const std::vector<int32_t> &ids) const override {
    return tok->decode(ids, /*skipSpecial=*/true);
  }

private:
  std::unique_ptr<Tokenizer> tok;
};

} // namespace

std::unique_ptr<TextCodec> lockstep::run::tokenizerCodec(std::string_view json, int64_t vocab,
                                                         int32_t &eos, std::string &error) {
  std::unique_ptr<Tokenizer> tok = Tokenizer::fromJson(json, error);
  if (!tok)
    return nullptr;
  if (int64_t(tok->vocabSize()) > vocab) {
    error = "it has " + std::to_string(tok->vocabSize()) +
            " token ids; the model's vocabulary has " + std::to_string(vocab);
    return nullptr;
  }
  eos = tok->eosId().value_or(-1);
  return std::make_unique<TokenizerCodec>(std::move(tok));
}
