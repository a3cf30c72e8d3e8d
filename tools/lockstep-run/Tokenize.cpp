//===- Tokenize.cpp - lockstep-run tokenize: a tokenizer.json on text -----===//
//
// Encodes stdin's lines (or decodes lists of ids) with the C++ tokenizer of
// lockstep/Text/Tokenizer.h and prints one JSON line per input line, so that
// tests can compare it with the `tokenizers` Python package.
//
//===----------------------------------------------------------------------===//
#include "Commands.h"

#include "lockstep/Text/Tokenizer.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <iostream>
#include <string>

using lockstep::run::flagValue;
using lockstep::text::Tokenizer;
using Json = nlohmann::json;

namespace {

int usage(const std::string &msg) {
  std::fprintf(stderr, "lockstep-run tokenize: %s (see lockstep-run tokenize --help)\n",
               msg.c_str());
  return 2;
}

std::string dump(const Json &j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace

int lockstep::run::runTokenize(int argc, char **argv) {
  std::string path;
  bool decode = false, jsonLines = false, addSpecial = true, info = false;
  for (int i = 2; i < argc; ++i) {
    bool missing = false;
    std::string value;
    if (flagValue(argc, argv, i, "--tokenizer", value, missing)) {
      if (missing)
        return usage("--tokenizer needs a file");
      path = value;
    } else if (!std::strcmp(argv[i], "--decode")) {
      decode = true;
    } else if (!std::strcmp(argv[i], "--json-lines")) {
      jsonLines = true;
    } else if (!std::strcmp(argv[i], "--no-special")) {
      addSpecial = false;
    } else if (!std::strcmp(argv[i], "--info")) {
      info = true;
    } else {
      return usage(std::string("unknown argument '") + argv[i] + "'");
    }
  }
  if (path.empty())
    return usage("--tokenizer FILE is required");
  std::string error;
  std::unique_ptr<Tokenizer> tok = Tokenizer::fromFile(path, error);
  if (!tok) {
    std::fprintf(stderr, "lockstep-run tokenize: %s\n", error.c_str());
    return 1;
  }
  if (info) {
    Json j = {{"vocab_size", tok->vocabSize()}};
    j["bos"] = tok->bosId() ? Json(*tok->bosId()) : Json(nullptr);
    j["eos"] = tok->eosId() ? Json(*tok->eosId()) : Json(nullptr);
    std::printf("%s\n", dump(j).c_str());
    return 0;
  }
  std::string line;
  size_t lineNo = 0;
  while (std::getline(std::cin, line)) {
    ++lineNo;
    auto bad = [&](const std::string &why) {
      std::fprintf(stderr, "lockstep-run tokenize: line %zu: %s\n", lineNo, why.c_str());
      return 1;
    };
    if (decode) {
      Json in = Json::parse(line, nullptr, false);
      if (!in.is_array())
        return bad("expected a JSON array of ids");
      std::vector<int32_t> ids;
      for (const Json &v : in) {
        if (!v.is_number_integer() || v.get<int64_t>() < INT32_MIN ||
            v.get<int64_t>() > INT32_MAX)
          return bad("expected a JSON array of ids");
        ids.push_back(static_cast<int32_t>(v.get<int64_t>()));
      }
      Json out = {{"text", tok->decode(ids, false)}, {"text_skip", tok->decode(ids, true)}};
      std::printf("%s\n", dump(out).c_str());
      continue;
    }
    std::string text = line;
    if (jsonLines) {
      Json in = Json::parse(line, nullptr, false);
      if (in.is_object() && in.contains("text"))
        in = in["text"];
      if (!in.is_string())
        return bad("expected a JSON string or {\"text\": ...}");
      text = in.get<std::string>();
    }
    std::vector<int32_t> ids = tok->encode(text, addSpecial);
    Json out = {{"ids", ids},
                {"decoded", tok->decode(ids, false)},
                {"decoded_skip", tok->decode(ids, true)}};
    std::printf("%s\n", dump(out).c_str());
  }
  return 0;
}
