//===- PostProcessors.cpp - tokenizer.json "post_processor" ---------------===//
//
// What encode(text, add_special_tokens=True) adds around a single sequence:
// TemplateProcessing's "single" template, RobertaProcessing's and
// BertProcessing's cls ... sep, ByteLevel's nothing (it only trims offsets),
// and a Sequence of those in turn. Pairs of sequences are not encoded here.
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <nlohmann/json.hpp>

namespace lockstep::text::detail {

namespace {

class NoOpProcessor : public PostProcessor {
public:
  void process(std::vector<int32_t> &) const override {}
};

class TemplateProcessor : public PostProcessor {
public:
  std::vector<int32_t> prefix, suffix; // the ids before and after $A
  std::optional<int32_t> first, last;
  void process(std::vector<int32_t> &ids) const override {
    ids.insert(ids.begin(), prefix.begin(), prefix.end());
    ids.insert(ids.end(), suffix.begin(), suffix.end());
  }
  std::optional<int32_t> before() const override { return first; }
  std::optional<int32_t> after() const override { return last; }
};

class SequenceProcessor : public PostProcessor {
public:
  std::vector<std::unique_ptr<PostProcessor>> parts;
  void process(std::vector<int32_t> &ids) const override {
    for (const auto &p : parts)
      p->process(ids);
  }
  std::optional<int32_t> before() const override {
    for (const auto &p : parts)
      if (auto id = p->before())
        return id;
    return std::nullopt;
  }
  std::optional<int32_t> after() const override {
    for (const auto &p : parts)
      if (auto id = p->after())
        return id;
    return std::nullopt;
  }
};

bool loadTemplate(const Json &j, std::unique_ptr<PostProcessor> &out, std::string &error) {
  const std::string where = "post_processor TemplateProcessing";
  auto t = std::make_unique<TemplateProcessor>();
  if (!j.contains("single") || !j["single"].is_array()) {
    error = jsonError(where + ": 'single' must be an array");
    return false;
  }
  const Json *specials = j.contains("special_tokens") ? &j["special_tokens"] : nullptr;
  if (specials && !specials->is_object()) {
    error = jsonError(where + ": 'special_tokens' must be an object");
    return false;
  }
  bool seenA = false;
  for (const Json &piece : j["single"]) {
    if (piece.is_object() && piece.contains("Sequence") && piece["Sequence"].is_object()) {
      const Json &seq = piece["Sequence"];
      if (!seq.contains("id") || !seq["id"].is_string()) {
        error = jsonError(where + ": a Sequence piece has no 'id'");
        return false;
      }
      if (seq["id"] == "A") {
        if (seenA) {
          error = jsonError(where + ": $A appears twice in 'single'");
          return false;
        }
        seenA = true;
      }
      // $B is ignored for a single sequence, as in `tokenizers`.
      continue;
    }
    if (!piece.is_object() || !piece.contains("SpecialToken") ||
        !piece["SpecialToken"].is_object() || !piece["SpecialToken"].contains("id") ||
        !piece["SpecialToken"]["id"].is_string()) {
      error = jsonError(where + ": a 'single' piece is neither a Sequence nor a SpecialToken");
      return false;
    }
    std::string name = piece["SpecialToken"]["id"].get<std::string>();
    if (!specials || !specials->contains(name)) {
      error = jsonError(where + ": special token '" + name + "' is not in 'special_tokens'");
      return false;
    }
    const Json &spec = (*specials)[name];
    if (!spec.is_object() || !spec.contains("ids") || !spec["ids"].is_array()) {
      error = jsonError(where + ": special token '" + name + "' has no 'ids' array");
      return false;
    }
    std::vector<int32_t> &dst = seenA ? t->suffix : t->prefix;
    for (const Json &id : spec["ids"]) {
      if (!id.is_number_unsigned() || id.get<uint64_t>() > INT32_MAX) {
        error = jsonError(where + ": special token '" + name + "' has an id that is not one");
        return false;
      }
      dst.push_back(static_cast<int32_t>(id.get<uint64_t>()));
    }
  }
  if (!t->prefix.empty())
    t->first = t->prefix.front();
  if (!t->suffix.empty())
    t->last = t->suffix.front();
  out = std::move(t);
  return true;
}

/// RobertaProcessing and BertProcessing: "cls": [token, id], "sep": [token, id].
bool loadClsSep(const Json &j, const std::string &type, std::unique_ptr<PostProcessor> &out,
                std::string &error) {
  auto t = std::make_unique<TemplateProcessor>();
  for (const char *key : {"cls", "sep"}) {
    if (!j.contains(key) || !j[key].is_array() || j[key].size() != 2 ||
        !j[key][1].is_number_unsigned() || j[key][1].get<uint64_t>() > INT32_MAX) {
      error = jsonError("post_processor " + type + ": '" + key + "' must be [token, id]");
      return false;
    }
    int32_t id = static_cast<int32_t>(j[key][1].get<uint64_t>());
    (std::string(key) == "cls" ? t->prefix : t->suffix).push_back(id);
  }
  t->first = t->prefix.front();
  t->last = t->suffix.front();
  out = std::move(t);
  return true;
}

} // namespace

static bool loadPostProcessorAt(const Json &j, std::unique_ptr<PostProcessor> &out,
                                std::string &error, int depth) {
  if (depth > kMaxNesting) {
    error = jsonError("post_processor: Sequences nested more than " + std::to_string(kMaxNesting) + " deep");
    return false;
  }
  out.reset();
  if (j.is_null())
    return true;
  if (!j.is_object()) {
    error = jsonError("'post_processor' must be an object or null");
    return false;
  }
  std::string type = typeOf(j);
  if (type == "TemplateProcessing")
    return loadTemplate(j, out, error);
  if (type == "RobertaProcessing" || type == "BertProcessing")
    return loadClsSep(j, type, out, error);
  if (type == "ByteLevel") {
    out = std::make_unique<NoOpProcessor>();
    return true;
  }
  if (type == "Sequence") {
    auto seq = std::make_unique<SequenceProcessor>();
    if (!j.contains("processors") || !j["processors"].is_array()) {
      error = jsonError("post_processor Sequence: 'processors' must be an array");
      return false;
    }
    for (const Json &part : j["processors"]) {
      std::unique_ptr<PostProcessor> p;
      if (!loadPostProcessorAt(part, p, error, depth + 1))
        return false;
      if (p)
        seq->parts.push_back(std::move(p));
    }
    out = std::move(seq);
    return true;
  }
  error = jsonError("post_processor type '" + type +
                    "' is not supported (supported: TemplateProcessing, ByteLevel, "
                    "RobertaProcessing, BertProcessing, Sequence)");
  return false;
}

bool loadPostProcessor(const Json &j, std::unique_ptr<PostProcessor> &out,
                       std::string &error) {
  return loadPostProcessorAt(j, out, error, 0);
}

} // namespace lockstep::text::detail
