//===- TokenizerJson.cpp - Loading a tokenizer.json -----------------------===//
//
// Parses the file with nlohmann-json and builds each part, refusing what is
// not supported with an error that names the part. Nothing here throws out
// of the library: JSON errors become the returned error.
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

namespace lockstep::text {

namespace detail {

std::string jsonError(const std::string &what) { return "tokenizer.json: " + what; }

std::string typeOf(const Json &j) {
  if (j.is_object() && j.contains("type") && j["type"].is_string())
    return j["type"].get<std::string>();
  return "";
}

bool getBool(const Json &j, const char *key, bool &out, const std::string &where,
             std::string &error) {
  if (!j.contains(key) || j[key].is_null())
    return true;
  if (!j[key].is_boolean()) {
    error = jsonError(where + ": '" + key + "' must be true or false");
    return false;
  }
  out = j[key].get<bool>();
  return true;
}

bool getString(const Json &j, const char *key, std::string &out, const std::string &where,
               std::string &error, bool required) {
  if (!j.contains(key) || j[key].is_null()) {
    if (required) {
      error = jsonError(where + ": missing '" + key + "'");
      return false;
    }
    return true;
  }
  if (!j[key].is_string()) {
    error = jsonError(where + ": '" + key + "' must be a string");
    return false;
  }
  out = j[key].get<std::string>();
  return true;
}

} // namespace detail

using namespace detail;

namespace {

bool loadAll(const Json &j, Tokenizer::Impl &t, std::string &error) {
  if (!j.is_object()) {
    error = jsonError("the top level must be an object");
    return false;
  }
  for (const char *key : {"truncation", "padding"}) {
    if (j.contains(key) && !j[key].is_null()) {
      error = jsonError(std::string("'") + key + "' is set; only null is supported");
      return false;
    }
  }
  if (!j.contains("model") || !j["model"].is_object()) {
    error = jsonError("missing 'model'");
    return false;
  }
  const Json &model = j["model"];
  std::string type = typeOf(model);
  // Files of old versions leave out the model's type; BPE is the one with merges.
  if (type.empty() && model.contains("merges"))
    type = "BPE";
  if (type != "BPE") {
    error = jsonError("model type '" + (type.empty() ? std::string("(none)") : type) +
                      "' is not supported (supported: BPE)");
    return false;
  }
  auto field = [&](const char *key) -> const Json & {
    static const Json null;
    return j.contains(key) ? j[key] : null;
  };
  if (!loadNormalizer(field("normalizer"), t.normalizer, error) ||
      !loadPreTokenizer(field("pre_tokenizer"), t.preTokenizer, error) ||
      !loadPostProcessor(field("post_processor"), t.postProcessor, error) ||
      !loadDecoder(field("decoder"), t.decoder, error))
    return false;
  t.model = BpeModel::load(model, error);
  if (!t.model)
    return false;
  return t.added.load(field("added_tokens"), *t.model, t.normalizer.get(), error);
}

} // namespace

std::unique_ptr<Tokenizer> Tokenizer::fromJson(std::string_view text, std::string &error) {
  try {
    Json j = Json::parse(text.begin(), text.end());
    auto impl = std::make_unique<Impl>();
    if (!loadAll(j, *impl, error))
      return nullptr;
    return std::unique_ptr<Tokenizer>(new Tokenizer(std::move(impl)));
  } catch (const Json::parse_error &e) {
    error = jsonError(std::string("not valid JSON: ") + e.what());
  } catch (const Json::exception &e) {
    error = jsonError(e.what());
  } catch (const std::bad_alloc &) {
    error = jsonError("out of memory");
  }
  return nullptr;
}

std::unique_ptr<Tokenizer> Tokenizer::fromFile(const std::string &path, std::string &error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    error = "cannot read '" + path + "'";
    return nullptr;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) {
    error = "cannot read '" + path + "'";
    return nullptr;
  }
  return fromJson(ss.str(), error);
}

} // namespace lockstep::text
