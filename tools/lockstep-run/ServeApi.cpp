//===- ServeApi.cpp - The OpenAI completions request, checked -------------===//
#include "ServeApi.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

using namespace lockstep::run;
using json = nlohmann::json;

std::string ApiError::json() const {
  nlohmann::json e = {{"message", message},
                      {"type", type},
                      {"param", param.empty() ? nlohmann::json() : nlohmann::json(param)},
                      {"code", code.empty() ? nlohmann::json() : nlohmann::json(code)}};
  return nlohmann::json({{"error", e}})
      .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

bool fail(ApiError &err, const std::string &param, const std::string &message,
          const std::string &code = "invalid_value") {
  err = ApiError();
  err.param = param;
  err.message = message;
  err.code = code;
  return false;
}

bool wrongType(ApiError &err, const std::string &param, const std::string &want) {
  return fail(err, param, "'" + param + "' must be " + want, "invalid_type");
}

/// An integer JSON value in [lo, hi].
bool intIn(const json &v, int64_t lo, int64_t hi, int64_t &out) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > uint64_t(std::numeric_limits<int64_t>::max()) || int64_t(u) > hi)
      return false;
    out = int64_t(u);
    return out >= lo;
  }
  if (!v.is_number_integer())
    return false;
  out = v.get<int64_t>();
  return out >= lo && out <= hi;
}

/// An array of token ids: integers in [0, 2^31).
bool tokenIds(const json &v, std::vector<int32_t> &out) {
  if (!v.is_array())
    return false;
  out.clear();
  out.reserve(v.size());
  for (const json &x : v) {
    int64_t id;
    if (!intIn(x, 0, std::numeric_limits<int32_t>::max(), id))
      return false;
    out.push_back(int32_t(id));
  }
  return true;
}

bool isTokenIdArray(const json &v) {
  if (!v.is_array() || v.empty())
    return false;
  for (const json &x : v)
    if (!x.is_number())
      return false;
  return true;
}

bool noTokenizer(ApiError &err, const std::string &param) {
  return fail(err, param,
              "'" + param + "' is text, and this artifact has no tokenizer: send token ids",
              "no_tokenizer");
}

bool parsePrompt(const json &p, const TextCodec *codec, CompletionParams &out, ApiError &err) {
  const char *want = "an array of token ids (integers in [0, 2^31)), an array of such "
                     "arrays, a string or an array of strings";
  auto encode = [&](const std::string &text) {
    std::vector<int32_t> ids;
    std::string why;
    if (!codec->encode(text, ids, why))
      return fail(err, "prompt", "the prompt cannot be encoded: " + why);
    out.prompts.push_back(std::move(ids));
    return true;
  };
  if (p.is_string()) {
    if (!codec)
      return noTokenizer(err, "prompt");
    return encode(p.get<std::string>());
  }
  if (!p.is_array())
    return wrongType(err, "prompt", want);
  if (p.empty())
    return fail(err, "prompt", "'prompt' is empty");
  if (isTokenIdArray(p)) {
    std::vector<int32_t> ids;
    if (!tokenIds(p, ids))
      return wrongType(err, "prompt", want);
    out.prompts.push_back(std::move(ids));
    return true;
  }
  if (p.size() > kMaxPrompts)
    return fail(err, "prompt",
                "'prompt' holds " + std::to_string(p.size()) + " prompts; at most " +
                    std::to_string(kMaxPrompts) + " are served in one request");
  for (const json &x : p) {
    if (x.is_string()) {
      if (!codec)
        return noTokenizer(err, "prompt");
      if (!encode(x.get<std::string>()))
        return false;
      continue;
    }
    std::vector<int32_t> ids;
    if (!tokenIds(x, ids))
      return wrongType(err, "prompt", want);
    if (ids.empty())
      return fail(err, "prompt", "a prompt of 'prompt' is empty");
    out.prompts.push_back(std::move(ids));
  }
  return true;
}

bool parseStop(const json &s, const TextCodec *codec, CompletionParams &out, ApiError &err) {
  const char *want = "a string, an array of strings, a token id or an array of token ids";
  int64_t id;
  if (s.is_null())
    return true;
  if (s.is_string()) {
    if (!codec)
      return noTokenizer(err, "stop");
    if (s.get<std::string>().empty())
      return fail(err, "stop", "the stop string is empty");
    out.stopTexts.push_back(s.get<std::string>());
    return true;
  }
  if (intIn(s, 0, std::numeric_limits<int32_t>::max(), id)) {
    out.stopIds.push_back(int32_t(id));
    return true;
  }
  if (!s.is_array())
    return wrongType(err, "stop", want);
  if (s.size() > kMaxStops)
    return fail(err, "stop", "at most " + std::to_string(kMaxStops) + " stop sequences");
  for (const json &x : s) {
    if (x.is_string()) {
      if (!codec)
        return noTokenizer(err, "stop");
      if (x.get<std::string>().empty())
        return fail(err, "stop", "a stop string is empty");
      out.stopTexts.push_back(x.get<std::string>());
    } else if (intIn(x, 0, std::numeric_limits<int32_t>::max(), id)) {
      out.stopIds.push_back(int32_t(id));
    } else {
      return wrongType(err, "stop", want);
    }
  }
  return true;
}

/// A number field, or absent/null; false with `err` when it is something else
/// or outside [lo, hi] (`loOpen`: lo itself excluded).
bool number(const json &body, const char *name, double lo, double hi, bool loOpen,
            double &out, ApiError &err) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null())
    return true;
  if (!it->is_number())
    return wrongType(err, name, "a number");
  double v = it->get<double>();
  if (!std::isfinite(v) || v > hi || v < lo || (loOpen && v == lo))
    return fail(err, name,
                std::string("'") + name + "' must be in " + (loOpen ? "(" : "[") +
                    json(lo).dump() + ", " + json(hi).dump() + "]");
  out = v;
  return true;
}

} // namespace

bool lockstep::run::parseCompletion(const std::string &body, const TextCodec *codec,
                                    CompletionParams &out, ApiError &err) {
  out = CompletionParams();
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded())
    return fail(err, "", "the body is not valid JSON", "invalid_json");
  if (!j.is_object())
    return fail(err, "", "the body must be a JSON object", "invalid_json");

  auto it = j.find("prompt");
  if (it == j.end() || it->is_null())
    return fail(err, "prompt", "'prompt' is required", "missing_required_parameter");
  if (!parsePrompt(*it, codec, out, err))
    return false;

  if ((it = j.find("model")) != j.end() && !it->is_null()) {
    if (!it->is_string())
      return wrongType(err, "model", "a string");
    out.model = it->get<std::string>();
  }
  if ((it = j.find("max_tokens")) != j.end() && !it->is_null())
    if (!intIn(*it, 1, int64_t(1) << 40, out.maxTokens))
      return it->is_number_integer() ? fail(err, "max_tokens", "'max_tokens' must be in [1, 2^40]")
                                     : wrongType(err, "max_tokens", "an integer");
  if (!number(j, "temperature", 0, 2, false, out.temperature, err) ||
      !number(j, "top_p", 0, 1, true, out.topP, err))
    return false;
  if ((it = j.find("top_k")) != j.end() && !it->is_null())
    if (!intIn(*it, -1, std::numeric_limits<int32_t>::max(), out.topK))
      return wrongType(err, "top_k", "an integer >= -1");
  if (out.topK < 0)
    out.topK = 0; // vLLM's -1: off
  if ((it = j.find("seed")) != j.end() && !it->is_null()) {
    if (it->is_number_unsigned())
      out.seed = it->get<uint64_t>();
    else if (it->is_number_integer())
      out.seed = uint64_t(it->get<int64_t>());
    else
      return wrongType(err, "seed", "an integer");
  }
  if ((it = j.find("logprobs")) != j.end() && !it->is_null()) {
    int64_t n;
    if (!intIn(*it, 0, 20, n))
      return it->is_number_integer() ? fail(err, "logprobs", "'logprobs' must be in [0, 20]")
                                     : wrongType(err, "logprobs", "an integer or null");
    out.logprobs = n;
  }
  if ((it = j.find("stop")) != j.end() && !parseStop(*it, codec, out, err))
    return false;
  if ((it = j.find("stream")) != j.end() && !it->is_null()) {
    if (!it->is_boolean())
      return wrongType(err, "stream", "a boolean");
    out.stream = it->get<bool>();
  }
  if ((it = j.find("stream_options")) != j.end() && !it->is_null()) {
    if (!it->is_object())
      return wrongType(err, "stream_options", "an object");
    auto u = it->find("include_usage");
    if (u != it->end() && !u->is_null()) {
      if (!u->is_boolean())
        return wrongType(err, "stream_options.include_usage", "a boolean");
      out.includeUsage = u->get<bool>();
    }
  }
  // Known fields that only have their default here.
  for (const char *name : {"n", "best_of"})
    if ((it = j.find(name)) != j.end() && !it->is_null()) {
      int64_t n;
      if (!intIn(*it, 1, 128, n))
        return wrongType(err, name, "an integer >= 1");
      if (n != 1)
        return fail(err, name, std::string("'") + name + "' other than 1 is not supported",
                    "unsupported_value");
    }
  if ((it = j.find("echo")) != j.end() && !it->is_null()) {
    if (!it->is_boolean())
      return wrongType(err, "echo", "a boolean");
    if (it->get<bool>())
      return fail(err, "echo", "'echo' is not supported", "unsupported_value");
  }
  for (const char *name : {"presence_penalty", "frequency_penalty"}) {
    double v = 0;
    if (!number(j, name, -2, 2, false, v, err))
      return false;
    if (v != 0)
      return fail(err, name, std::string("'") + name + "' other than 0 is not supported",
                  "unsupported_value");
  }
  if ((it = j.find("logit_bias")) != j.end() && !it->is_null()) {
    if (!it->is_object())
      return wrongType(err, "logit_bias", "an object");
    if (!it->empty())
      return fail(err, "logit_bias", "'logit_bias' is not supported", "unsupported_value");
  }
  if ((it = j.find("suffix")) != j.end() && !it->is_null()) {
    if (!it->is_string())
      return wrongType(err, "suffix", "a string or null");
    return fail(err, "suffix", "'suffix' is not supported", "unsupported_value");
  }
  if ((it = j.find("user")) != j.end() && !it->is_null() && !it->is_string())
    return wrongType(err, "user", "a string");
  return true;
}
