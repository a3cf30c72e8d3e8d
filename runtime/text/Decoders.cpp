//===- Decoders.cpp - tokenizer.json "decoder" ----------------------------===//
//
// Each decoder maps the list of token strings to a new list (decode_chain);
// the tokenizer joins the last list. Sequence, ByteLevel (characters back to
// bytes, invalid UTF-8 replaced), Replace, ByteFallback (<0xNN> runs back to
// text), Fuse, Strip, Metaspace and BPEDecoder (end-of-word suffix to a
// space), as `tokenizers` 0.20 defines them.
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <nlohmann/json.hpp>

namespace lockstep::text::detail {

namespace {

class SequenceDecoder : public Decoder {
public:
  std::vector<std::unique_ptr<Decoder>> parts;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (const auto &p : parts)
      p->decodeChain(tokens);
  }
};

/// Each token's characters back to the bytes they stand for (a token with a
/// character that stands for no byte is kept as its own bytes), all joined,
/// invalid UTF-8 replaced by U+FFFD.
class ByteLevelDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::string bytes;
    for (const std::string &t : tokens) {
      std::string mapped;
      bool all = true;
      for (size_t i = 0; i < t.size(); i += utf8CharLen(t, i)) {
        int b = charToByte(utf8Decode(t, i));
        if (b < 0) {
          all = false;
          break;
        }
        mapped += static_cast<char>(b);
      }
      bytes += all ? mapped : t;
    }
    tokens.assign(1, utf8Lossy(bytes));
  }
};

class ReplaceDecoder : public Decoder {
public:
  std::unique_ptr<Regex> pattern;
  std::string content;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &t : tokens) {
      std::vector<Range> matches = pattern->findAll(t);
      if (matches.empty())
        continue;
      std::string out;
      size_t prev = 0;
      for (const Range &m : matches) {
        out.append(t, prev, m.first - prev);
        out += content;
        prev = m.second;
      }
      out.append(t, prev, std::string::npos);
      t = std::move(out);
    }
  }
};

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/// "<0xNN>" -> the byte, as u8::from_str_radix(NN, 16) reads NN.
int byteToken(const std::string &t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>')
    return -1;
  int hi = hexDigit(t[3]), lo = hexDigit(t[4]);
  if (t[3] == '+' && lo >= 0)
    return lo;
  if (hi < 0 || lo < 0)
    return -1;
  return hi * 16 + lo;
}

/// Runs of <0xNN> tokens become the text they encode, or one U+FFFD per byte
/// when the run is not valid UTF-8.
class ByteFallbackDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::vector<std::string> out;
    std::string run;
    size_t runLen = 0;
    auto flush = [&]() {
      if (runLen == 0)
        return;
      if (utf8Valid(run))
        out.push_back(run);
      else
        for (size_t k = 0; k < runLen; ++k)
          out.push_back("\xEF\xBF\xBD");
      run.clear();
      runLen = 0;
    };
    for (std::string &t : tokens) {
      int b = byteToken(t);
      if (b >= 0) {
        run += static_cast<char>(b);
        ++runLen;
        continue;
      }
      flush();
      out.push_back(std::move(t));
    }
    flush();
    tokens = std::move(out);
  }
};

class FuseDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::string all;
    for (const std::string &t : tokens)
      all += t;
    tokens.assign(1, std::move(all));
  }
};

/// Removes up to `start` leading and `stop` trailing `content` characters of
/// each token.
class StripDecoder : public Decoder {
public:
  uint32_t content = ' ';
  size_t start = 0, stop = 0;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &t : tokens) {
      std::vector<size_t> at; // byte offset of each character
      for (size_t i = 0; i < t.size(); i += utf8CharLen(t, i))
        at.push_back(i);
      size_t n = at.size(), startCut = 0, stopCut = n;
      for (size_t i = 0; i < start && i < n; ++i) {
        if (utf8Decode(t, at[i]) != content)
          break;
        startCut = i + 1;
      }
      for (size_t i = 0; i < stop && i < n; ++i) {
        size_t index = n - i - 1;
        if (utf8Decode(t, at[index]) != content)
          break;
        stopCut = index;
      }
      if (stopCut <= startCut) {
        t.clear();
        continue;
      }
      size_t b = startCut < n ? at[startCut] : t.size();
      size_t e = stopCut < n ? at[stopCut] : t.size();
      t = t.substr(b, e - b);
    }
  }
};

/// The replacement character becomes a space, except in the first token,
/// where it is dropped unless prepend_scheme is never.
class MetaspaceDecoder : public Decoder {
public:
  uint32_t replacement = 0x2581;
  bool never = false;
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (size_t k = 0; k < tokens.size(); ++k) {
      const std::string &t = tokens[k];
      std::string out;
      for (size_t i = 0; i < t.size(); i += utf8CharLen(t, i)) {
        uint32_t c = utf8Decode(t, i);
        if (c != replacement)
          out.append(t, i, utf8CharLen(t, i));
        else if (k != 0 || never)
          out += ' ';
      }
      tokens[k] = std::move(out);
    }
  }
};

/// Each occurrence of the suffix becomes a space, or nothing in the last token.
class BpeSuffixDecoder : public Decoder {
public:
  std::string suffix = "</w>";
  void decodeChain(std::vector<std::string> &tokens) const override {
    if (suffix.empty())
      return;
    for (size_t k = 0; k < tokens.size(); ++k) {
      std::string &t = tokens[k];
      std::string out;
      size_t prev = 0;
      for (const Range &m : findLiteral(t, suffix)) {
        out.append(t, prev, m.first - prev);
        out += k + 1 == tokens.size() ? "" : " ";
        prev = m.second;
      }
      out.append(t, prev, std::string::npos);
      t = std::move(out);
    }
  }
};

bool oneChar(const Json &j, const char *key, uint32_t &out, const std::string &where,
             std::string &error) {
  std::string s;
  if (!getString(j, key, s, where, error, true))
    return false;
  if (s.empty() || utf8CharLen(s, 0) != s.size()) {
    error = jsonError(where + ": '" + key + "' must be one character");
    return false;
  }
  out = utf8Decode(s, 0);
  return true;
}

bool getCount(const Json &j, const char *key, size_t &out, const std::string &where,
              std::string &error) {
  if (!j.contains(key) || !j[key].is_number_unsigned()) {
    error = jsonError(where + ": '" + key + "' must be a count");
    return false;
  }
  out = j[key].get<size_t>();
  return true;
}

} // namespace

static bool loadDecoderAt(const Json &j, std::unique_ptr<Decoder> &out, std::string &error,
                          int depth) {
  bool ok = false;
  if (loadCommon<SequenceDecoder>(j, "decoder", "decoders", out, error, depth, loadDecoderAt, ok))
    return ok;
  std::string type = typeOf(j);
  if (type == "ByteLevel") {
    out = std::make_unique<ByteLevelDecoder>();
    return true;
  }
  if (type == "Replace") {
    auto r = std::make_unique<ReplaceDecoder>();
    if (!j.contains("pattern")) {
      error = jsonError("decoder Replace: missing 'pattern'");
      return false;
    }
    r->pattern = loadPattern(j["pattern"], "decoder Replace", error);
    if (!r->pattern || !getString(j, "content", r->content, "decoder Replace", error, true))
      return false;
    out = std::move(r);
    return true;
  }
  if (type == "ByteFallback") {
    out = std::make_unique<ByteFallbackDecoder>();
    return true;
  }
  if (type == "Fuse") {
    out = std::make_unique<FuseDecoder>();
    return true;
  }
  if (type == "Strip") {
    auto s = std::make_unique<StripDecoder>();
    if (!oneChar(j, "content", s->content, "decoder Strip", error) ||
        !getCount(j, "start", s->start, "decoder Strip", error) ||
        !getCount(j, "stop", s->stop, "decoder Strip", error))
      return false;
    out = std::move(s);
    return true;
  }
  if (type == "Metaspace") {
    auto m = std::make_unique<MetaspaceDecoder>();
    const std::string where = "decoder Metaspace";
    if (!oneChar(j, "replacement", m->replacement, where, error))
      return false;
    std::string scheme;
    if (!getString(j, "prepend_scheme", scheme, where, error, false))
      return false;
    if (scheme.empty()) {
      bool add = true;
      if (!getBool(j, "add_prefix_space", add, where, error))
        return false;
      scheme = add ? "always" : "never";
    }
    if (scheme != "always" && scheme != "first" && scheme != "never") {
      error = jsonError(where + ": prepend_scheme '" + scheme +
                        "' is not one of first, always, never");
      return false;
    }
    m->never = scheme == "never";
    out = std::move(m);
    return true;
  }
  if (type == "BPEDecoder") {
    auto b = std::make_unique<BpeSuffixDecoder>();
    if (!getString(j, "suffix", b->suffix, "decoder BPEDecoder", error, false))
      return false;
    out = std::move(b);
    return true;
  }
  error = jsonError("decoder type '" + type +
                    "' is not supported (supported: Sequence, ByteLevel, Replace, "
                    "ByteFallback, Fuse, Strip, Metaspace, BPEDecoder)");
  return false;
}

bool loadDecoder(const Json &j, std::unique_ptr<Decoder> &out, std::string &error) {
  return loadDecoderAt(j, out, error, 0);
}

} // namespace lockstep::text::detail
