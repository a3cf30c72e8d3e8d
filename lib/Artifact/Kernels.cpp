//===- Kernels.cpp - The kernels section and the launch plan ---------------===//
#include "lockstep/Artifact/Kernels.h"

#include <charconv>
#include <sstream>

using namespace lockstep::rt;

std::string lockstep::rt::serializeKernels(const std::vector<KernelText> &kernels) {
  std::string out;
  auto put = [&](uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i)
      out.push_back(char((v >> (8 * i)) & 0xff));
  };
  put(kernels.size(), 4);
  for (const KernelText &k : kernels) {
    put(k.name.size(), 4);
    out += k.name;
    put(k.ptx.size() + 1, 8);
    out += k.ptx;
    out.push_back('\0');
  }
  return out;
}

bool lockstep::rt::parseKernels(const uint8_t *data, uint64_t size,
                                std::vector<KernelText> &out, std::string &error) {
  out.clear();
  if (size == 0)
    return true;
  uint64_t at = 0;
  auto take = [&](int bytes, uint64_t &v) {
    if (size - at < uint64_t(bytes))
      return false;
    v = 0;
    for (int i = 0; i < bytes; ++i)
      v |= uint64_t(data[at + i]) << (8 * i);
    at += bytes;
    return true;
  };
  uint64_t count = 0;
  if (!take(4, count)) {
    error = "no kernel count";
    return false;
  }
  for (uint64_t k = 0; k < count; ++k) {
    uint64_t n = 0, len = 0;
    if (!take(4, n) || size - at < n) {
      error = "kernel " + std::to_string(k) + "'s name runs past the section";
      return false;
    }
    std::string name(reinterpret_cast<const char *>(data + at), n);
    at += n;
    if (!take(8, len) || len == 0 || size - at < len || data[at + len - 1] != 0) {
      error = "kernel '" + name + "''s PTX runs past the section or is not NUL-terminated";
      return false;
    }
    out.push_back({name, std::string(reinterpret_cast<const char *>(data + at), len - 1)});
    at += len;
  }
  if (at != size) {
    error = "trailing bytes after " + std::to_string(count) + " kernels";
    return false;
  }
  return true;
}

namespace {

std::string sizeText(int64_t v) {
  return v == KernelLaunch::kDynamic ? "?" : std::to_string(v);
}

bool parseSize(const std::string &word, int64_t &v) {
  if (word == "?") {
    v = KernelLaunch::kDynamic;
    return true;
  }
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  return ec == std::errc() && end == word.data() + word.size() && v >= 0;
}

} // namespace

std::string lockstep::rt::serializeLaunchPlan(const std::vector<KernelLaunch> &plan) {
  std::string out;
  for (const KernelLaunch &l : plan) {
    out += "launch " + l.module + " " + l.function + " grid";
    for (int64_t g : l.grid)
      out += " " + sizeText(g);
    out += " block";
    for (int64_t b : l.block)
      out += " " + sizeText(b);
    out += " smem " + sizeText(l.sharedBytes) + " node " + l.node + "\n";
  }
  return out;
}

bool lockstep::rt::parseLaunchPlan(const uint8_t *data, uint64_t size,
                                   std::vector<KernelLaunch> &out, std::string &error) {
  out.clear();
  std::istringstream text(std::string(reinterpret_cast<const char *>(data), size));
  std::string line;
  for (int n = 1; std::getline(text, line); ++n) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;)
      w.push_back(x);
    KernelLaunch l;
    bool ok = w.size() == 15 && w[0] == "launch" && w[3] == "grid" && w[7] == "block" &&
              w[11] == "smem" && w[13] == "node";
    for (int i = 0; ok && i < 3; ++i)
      ok = parseSize(w[4 + i], l.grid[i]) && parseSize(w[8 + i], l.block[i]) &&
           l.grid[i] != 0 && l.block[i] != 0;
    ok = ok && parseSize(w[12], l.sharedBytes);
    if (!ok) {
      error = "line " + std::to_string(n) + " is not 'launch MODULE FUNCTION grid X Y Z " +
              "block X Y Z smem BYTES node NODE'";
      return false;
    }
    l.module = w[1];
    l.function = w[2];
    l.node = w[14];
    out.push_back(std::move(l));
  }
  return true;
}
