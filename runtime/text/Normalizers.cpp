//===- Normalizers.cpp - tokenizer.json "normalizer" ----------------------===//
//
// Sequence, Prepend and Replace: what SentencePiece-style BPE (Llama 2,
// Mistral) uses to turn spaces into '▁'; NFC, NFD, NFKC, NFKD (Qwen2,
// GPT-NeoX) and Lowercase through ICU. SentencePiece's precompiled maps and
// the rest are refused.
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <nlohmann/json.hpp>

namespace lockstep::text::detail {

namespace {

class SequenceNormalizer : public Normalizer {
public:
  std::vector<std::unique_ptr<Normalizer>> parts;
  void normalize(std::string &s) const override {
    for (const auto &p : parts)
      p->normalize(s);
  }
};

/// Prepend: adds its text in front of a non-empty piece.
class PrependNormalizer : public Normalizer {
public:
  std::string prepend;
  void normalize(std::string &s) const override {
    if (!s.empty())
      s.insert(0, prepend);
  }
};

/// Replace: every match of the pattern becomes `content`.
class ReplaceNormalizer : public Normalizer {
public:
  std::unique_ptr<Regex> pattern;
  std::string content;
  void normalize(std::string &s) const override {
    std::vector<Range> matches = pattern->findAll(s);
    if (matches.empty())
      return;
    std::string out;
    size_t prev = 0;
    for (const Range &m : matches) {
      out.append(s, prev, m.first - prev);
      out += content;
      prev = m.second;
    }
    out.append(s, prev, std::string::npos);
    s = std::move(out);
  }
};

class FormNormalizer : public Normalizer {
public:
  UnicodeForm form = UnicodeForm::NFC;
  void normalize(std::string &s) const override { unicodeNormalize(form, s); }
};

class LowercaseNormalizer : public Normalizer {
public:
  void normalize(std::string &s) const override { unicodeLowercase(s); }
};

} // namespace

static bool loadNormalizerAt(const Json &j, std::unique_ptr<Normalizer> &out, std::string &error,
                             int depth) {
  if (depth > kMaxNesting) {
    error = jsonError("normalizer: Sequences nested more than " + std::to_string(kMaxNesting) + " deep");
    return false;
  }
  out.reset();
  if (j.is_null())
    return true;
  if (!j.is_object()) {
    error = jsonError("'normalizer' must be an object or null");
    return false;
  }
  std::string type = typeOf(j);
  if (type == "Sequence") {
    auto seq = std::make_unique<SequenceNormalizer>();
    if (!j.contains("normalizers") || !j["normalizers"].is_array()) {
      error = jsonError("normalizer Sequence: 'normalizers' must be an array");
      return false;
    }
    for (const Json &part : j["normalizers"]) {
      std::unique_ptr<Normalizer> p;
      if (!loadNormalizerAt(part, p, error, depth + 1))
        return false;
      if (p)
        seq->parts.push_back(std::move(p));
    }
    out = std::move(seq);
    return true;
  }
  if (type == "Prepend") {
    auto p = std::make_unique<PrependNormalizer>();
    if (!getString(j, "prepend", p->prepend, "normalizer Prepend", error, true))
      return false;
    out = std::move(p);
    return true;
  }
  if (type == "Replace") {
    auto r = std::make_unique<ReplaceNormalizer>();
    if (!j.contains("pattern")) {
      error = jsonError("normalizer Replace: missing 'pattern'");
      return false;
    }
    r->pattern = loadPattern(j["pattern"], "normalizer Replace", error);
    if (!r->pattern || !getString(j, "content", r->content, "normalizer Replace", error, true))
      return false;
    out = std::move(r);
    return true;
  }
  if (type == "Lowercase") {
    if (!requireIcu("normalizer Lowercase", error))
      return false;
    out = std::make_unique<LowercaseNormalizer>();
    return true;
  }
  for (auto [name, form] : {std::pair{"NFC", UnicodeForm::NFC}, {"NFD", UnicodeForm::NFD},
                            {"NFKC", UnicodeForm::NFKC}, {"NFKD", UnicodeForm::NFKD}}) {
    if (type == name) {
      if (!requireIcu("normalizer " + type, error))
        return false;
      auto f = std::make_unique<FormNormalizer>();
      f->form = form;
      std::string probe = "e\xCC\x81";
      if (!unicodeNormalize(form, probe)) {
        error = jsonError("normalizer " + type + ": ICU's normalizer is not available");
        return false;
      }
      out = std::move(f);
      return true;
    }
  }
  error = jsonError("normalizer type '" + type +
                    "' is not supported (supported: Sequence, Prepend, Replace, NFC, NFD, "
                    "NFKC, NFKD, Lowercase)");
  return false;
}

bool loadNormalizer(const Json &j, std::unique_ptr<Normalizer> &out, std::string &error) {
  return loadNormalizerAt(j, out, error, 0);
}

} // namespace lockstep::text::detail
