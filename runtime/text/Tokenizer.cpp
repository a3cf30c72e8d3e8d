//===- Tokenizer.cpp - Encoding and decoding with the loaded parts --------===//
#include "TextInternal.h"

#include <algorithm>

namespace lockstep::text {

using namespace detail;

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl(std::move(impl)) {}
Tokenizer::~Tokenizer() = default;

bool Tokenizer::isValidUtf8(std::string_view bytes) { return utf8Valid(bytes); }

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool addSpecial) const {
  std::string s = utf8Valid(text) ? std::string(text) : utf8Lossy(text);
  std::vector<int32_t> ids;
  for (Segment &seg : impl->added.extract(s, impl->normalizer.get())) {
    if (seg.id >= 0) {
      ids.push_back(seg.id);
      continue;
    }
    std::vector<Piece> pieces{{std::move(seg.text), seg.atStart}};
    if (impl->preTokenizer)
      impl->preTokenizer->apply(pieces);
    for (const Piece &p : pieces)
      impl->model->tokenize(p.text, ids);
  }
  if (addSpecial && impl->postProcessor)
    impl->postProcessor->process(ids);
  return ids;
}

std::optional<std::string> Tokenizer::idToken(int32_t id) const {
  if (const AddedToken *a = impl->added.token(id))
    return a->content;
  if (const std::string *t = impl->model->idToken(id))
    return *t;
  return std::nullopt;
}

std::string Tokenizer::decode(const std::vector<int32_t> &ids, bool skipSpecial) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    std::optional<std::string> t = idToken(id);
    if (!t || (skipSpecial && impl->added.isSpecial(*t)))
      continue;
    tokens.push_back(std::move(*t));
  }
  std::string out;
  if (impl->decoder) {
    impl->decoder->decodeChain(tokens);
    for (const std::string &t : tokens)
      out += t;
  } else {
    for (size_t k = 0; k < tokens.size(); ++k)
      out += (k ? " " : "") + tokens[k];
  }
  return out;
}

std::optional<int32_t> Tokenizer::tokenId(std::string_view token) const {
  if (auto id = impl->added.tokenId(token))
    return id;
  return impl->model->tokenId(token);
}

size_t Tokenizer::vocabSize() const {
  return static_cast<size_t>(std::max(impl->model->maxId(), impl->added.maxId()) + 1);
}

std::optional<int32_t> Tokenizer::bosId() const {
  return impl->postProcessor ? impl->postProcessor->before() : std::nullopt;
}

std::optional<int32_t> Tokenizer::eosId() const {
  if (impl->postProcessor)
    if (auto id = impl->postProcessor->after())
      return id;
  for (const char *name :
       {"</s>", "<|endoftext|>", "<|end_of_text|>", "<|eot_id|>", "<|im_end|>", "<eos>"})
    if (impl->added.isSpecial(name))
      return impl->added.tokenId(name);
  return std::nullopt;
}

bool Tokenizer::isSpecial(int32_t id) const {
  const AddedToken *a = impl->added.token(id);
  return a && impl->added.isSpecial(a->content);
}

} // namespace lockstep::text
