//===- MetadataText.cpp - The metadata section as line-based text ---------===//
//
// One record per line, fields separated by tabs, every field escaped with
// escapeText() so that names may hold any byte:
//
//   producer <text>
//   target   <text>
//   input    <name> <dtype> <dim>...            (no dim: a scalar)
//   output   <name> <dtype> <dim>...
//   weight   <name> <dtype> embedded|external <offset> <length> <checksum>
//            <path> <size>...                   (path empty when embedded)
//   property <key> <value>
//   end
//
// Numbers are decimal, the checksum is 16 hex digits. `end` must be the last
// line: the artifact's checksum already catches a cut, but a metadata
// section that does not say where it ends would make a cut by a buggy writer
// look like a smaller model.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Artifact/ArtifactMeta.h"

#include <cinttypes>
#include <cstdio>

using namespace lockstep::rt;

std::string lockstep::rt::escapeText(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c == '\\')
      out += "\\\\";
    else if (c == '\t')
      out += "\\t";
    else if (c == '\n')
      out += "\\n";
    else if (c == '\r')
      out += "\\r";
    else if (c < 0x20 || c == 0x7f) {
      char buf[5];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else
      out += char(c);
  }
  return out;
}

namespace {

int hexDigit(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

bool parseU64(const std::string &s, uint64_t &out) {
  if (s.empty() || s.size() > 20)
    return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return false;
    uint64_t d = uint64_t(c - '0');
    if (v > (UINT64_MAX - d) / 10)
      return false;
    v = v * 10 + d;
  }
  out = v;
  return true;
}

bool parseHex64(const std::string &s, uint64_t &out) {
  if (s.size() != 16)
    return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = hexDigit(c);
    if (d < 0)
      return false;
    v = (v << 4) | uint64_t(d);
  }
  out = v;
  return true;
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

// Splits a line at tabs and unescapes each field.
bool splitFields(const std::string &line, std::vector<std::string> &fields) {
  fields.clear();
  size_t start = 0;
  while (true) {
    size_t tab = line.find('\t', start);
    std::string field;
    if (!unescapeText(line.substr(start, tab - start), field))
      return false;
    fields.push_back(std::move(field));
    if (tab == std::string::npos)
      return true;
    start = tab + 1;
  }
}

void appendLine(std::string &out, const std::vector<std::string> &fields) {
  for (size_t i = 0; i < fields.size(); ++i)
    out += (i ? "\t" : "") + escapeText(fields[i]);
  out += '\n';
}

} // namespace

bool lockstep::rt::unescapeText(const std::string &text, std::string &out) {
  out.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c != '\\') {
      out += c;
      continue;
    }
    if (++i == text.size())
      return false;
    switch (text[i]) {
    case '\\': out += '\\'; break;
    case 't': out += '\t'; break;
    case 'n': out += '\n'; break;
    case 'r': out += '\r'; break;
    case 'x': {
      int hi = i + 1 < text.size() ? hexDigit(text[i + 1]) : -1;
      int lo = i + 2 < text.size() ? hexDigit(text[i + 2]) : -1;
      if (hi < 0 || lo < 0)
        return false;
      out += char(hi * 16 + lo);
      i += 2;
      break;
    }
    default:
      return false;
    }
  }
  return true;
}

std::string lockstep::rt::quoted(const std::string &name) {
  return "'" + escapeText(name) + "'";
}

std::string lockstep::rt::dimsText(const std::vector<std::string> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? ", " : "") + dims[i];
  return s + "]";
}

std::string lockstep::rt::serializeMeta(const ArtifactMeta &meta) {
  std::string out;
  appendLine(out, {"producer", meta.producer});
  appendLine(out, {"target", meta.target});
  for (const auto *list : {&meta.inputs, &meta.outputs})
    for (const TensorSpec &t : *list) {
      std::vector<std::string> f = {list == &meta.inputs ? "input" : "output",
                                    t.name, t.dtype};
      f.insert(f.end(), t.dims.begin(), t.dims.end());
      appendLine(out, f);
    }
  for (const WeightSpec &w : meta.weights) {
    std::vector<std::string> f = {
        "weight", w.name, w.dtype, w.embedded ? "embedded" : "external",
        std::to_string(w.offset), std::to_string(w.length), hex64(w.checksum),
        w.path};
    for (int64_t s : w.shape)
      f.push_back(std::to_string(s));
    appendLine(out, f);
  }
  for (const auto &[key, value] : meta.properties)
    appendLine(out, {"property", key, value});
  appendLine(out, {"end"});
  return out;
}

namespace {

bool parseWeight(const std::vector<std::string> &f, WeightSpec &w,
                 std::string &why) {
  if (f.size() < 8) {
    why = "a weight needs at least 8 fields";
    return false;
  }
  w.name = f[1];
  w.dtype = f[2];
  if (f[3] != "embedded" && f[3] != "external") {
    why = "weight storage " + quoted(f[3]) + " is neither embedded nor external";
    return false;
  }
  w.embedded = f[3] == "embedded";
  if (!parseU64(f[4], w.offset) || !parseU64(f[5], w.length) ||
      !parseHex64(f[6], w.checksum)) {
    why = "malformed weight offset, length or checksum";
    return false;
  }
  w.path = f[7];
  for (size_t i = 8; i < f.size(); ++i) {
    uint64_t s;
    if (!parseU64(f[i], s) || s > uint64_t(INT64_MAX)) {
      why = "malformed weight dim " + quoted(f[i]);
      return false;
    }
    w.shape.push_back(int64_t(s));
  }
  return true;
}

} // namespace

bool lockstep::rt::parseMeta(const std::string &text, ArtifactMeta &out,
                             std::string &error) {
  out = ArtifactMeta();
  bool sawProducer = false, sawTarget = false, sawEnd = false;
  size_t pos = 0, lineNo = 0;
  std::vector<std::string> f;
  while (pos < text.size()) {
    ++lineNo;
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) {
      error = "metadata line " + std::to_string(lineNo) + " has no newline";
      return false;
    }
    std::string line = text.substr(pos, nl - pos);
    pos = nl + 1;
    std::string where = "metadata line " + std::to_string(lineNo) + ": ";
    if (sawEnd) {
      error = where + "text after 'end'";
      return false;
    }
    if (!splitFields(line, f)) {
      error = where + "bad escape";
      return false;
    }
    const std::string &kind = f[0];
    std::string why;
    if (kind == "producer" || kind == "target") {
      bool &seen = kind == "producer" ? sawProducer : sawTarget;
      if (f.size() != 2 || seen) {
        error = where + (seen ? "repeated '" : "malformed '") + kind + "'";
        return false;
      }
      seen = true;
      (kind == "producer" ? out.producer : out.target) = f[1];
    } else if (kind == "input" || kind == "output") {
      if (f.size() < 3) {
        error = where + "'" + kind + "' needs a name and a dtype";
        return false;
      }
      TensorSpec t{f[1], f[2], std::vector<std::string>(f.begin() + 3, f.end())};
      (kind == "input" ? out.inputs : out.outputs).push_back(std::move(t));
    } else if (kind == "weight") {
      WeightSpec w;
      if (!parseWeight(f, w, why)) {
        error = where + why;
        return false;
      }
      out.weights.push_back(std::move(w));
    } else if (kind == "property") {
      if (f.size() != 3) {
        error = where + "'property' needs a key and a value";
        return false;
      }
      out.properties.emplace_back(f[1], f[2]);
    } else if (kind == "end" && f.size() == 1) {
      sawEnd = true;
    } else {
      error = where + "unknown record " + quoted(kind);
      return false;
    }
  }
  if (!sawEnd || !sawProducer || !sawTarget) {
    error = std::string("metadata has no '") +
            (!sawEnd ? "end" : !sawProducer ? "producer" : "target") + "' line";
    return false;
  }
  if (!validateMeta(out, error)) {
    error = "metadata: " + error;
    return false;
  }
  return true;
}
