//===- Npy.cpp - Reading and writing .npy files ---------------------------===//
#include "lockstep/Runtime/Npy.h"

#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

using namespace lockstep::rt;

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

size_t NpyArray::elementSize(const std::string &dtype) {
  if (dtype.size() < 2)
    return 0;
  char kind = dtype[0];
  if (kind != 'f' && kind != 'i' && kind != 'u' && kind != 'b')
    return 0;
  int width = std::atoi(dtype.c_str() + 1);
  if (width != 1 && width != 2 && width != 4 && width != 8)
    return 0;
  if (kind == 'b' && width != 1)
    return 0;
  if (kind == 'f' && width == 1)
    return 0;
  return width;
}

namespace {

// Finds `'key': value` in the header dict and returns the text of the value.
bool headerValue(const std::string &h, const std::string &key, std::string &v) {
  size_t k = h.find("'" + key + "'");
  if (k == std::string::npos)
    return false;
  size_t colon = h.find(':', k);
  if (colon == std::string::npos)
    return false;
  size_t s = h.find_first_not_of(' ', colon + 1);
  if (s == std::string::npos)
    return false;
  char open = h[s];
  size_t e;
  if (open == '\'') {
    e = h.find('\'', s + 1);
    if (e == std::string::npos)
      return false;
    v = h.substr(s + 1, e - s - 1);
  } else if (open == '(') {
    e = h.find(')', s);
    if (e == std::string::npos)
      return false;
    v = h.substr(s + 1, e - s - 1);
  } else {
    e = h.find_first_of(",}", s);
    v = h.substr(s, e - s);
  }
  return true;
}

} // namespace

bool lockstep::rt::parseNpy(const std::vector<uint8_t> &b, NpyArray &out,
                            std::string &error) {
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY", 6) != 0) {
    error = "not a .npy file (bad magic)";
    return false;
  }
  int major = b[6];
  size_t headerLen, off;
  if (major == 1) {
    headerLen = b[8] | (size_t(b[9]) << 8);
    off = 10;
  } else if (major == 2 || major == 3) {
    if (b.size() < 12) {
      error = "truncated .npy header";
      return false;
    }
    headerLen = b[8] | (size_t(b[9]) << 8) | (size_t(b[10]) << 16) |
                (size_t(b[11]) << 24);
    off = 12;
  } else {
    error = "unsupported .npy version " + std::to_string(major);
    return false;
  }
  if (off + headerLen > b.size()) {
    error = "truncated .npy header";
    return false;
  }
  std::string h(reinterpret_cast<const char *>(b.data() + off), headerLen);
  std::string descr, fortran, shape;
  if (!headerValue(h, "descr", descr) || !headerValue(h, "fortran_order", fortran) ||
      !headerValue(h, "shape", shape)) {
    error = "malformed .npy header";
    return false;
  }
  if (fortran.find("True") != std::string::npos) {
    error = "Fortran-order .npy arrays are not supported";
    return false;
  }
  if (!descr.empty() && (descr[0] == '<' || descr[0] == '|' || descr[0] == '='))
    descr = descr.substr(1);
  else if (!descr.empty() && descr[0] == '>') {
    error = "big-endian .npy arrays are not supported";
    return false;
  }
  if (descr == "?")
    descr = "b1";
  if (NpyArray::elementSize(descr) == 0) {
    error = "unsupported .npy dtype '" + descr + "'";
    return false;
  }
  out.dtype = descr;
  out.shape.clear();
  std::stringstream ss(shape);
  std::string item;
  while (std::getline(ss, item, ',')) {
    size_t s = item.find_first_not_of(' ');
    if (s == std::string::npos)
      continue;
    char *end = nullptr;
    long long d = std::strtoll(item.c_str() + s, &end, 10);
    if (d < 0 || end == item.c_str() + s) {
      error = "malformed .npy shape '(" + shape + ")'";
      return false;
    }
    out.shape.push_back(d);
  }
  size_t bytes = size_t(out.numElements()) * NpyArray::elementSize(descr);
  size_t dataOff = off + headerLen;
  if (b.size() - dataOff < bytes) {
    error = "truncated .npy data: expected " + std::to_string(bytes) +
            " bytes, found " + std::to_string(b.size() - dataOff);
    return false;
  }
  out.data.assign(b.begin() + dataOff, b.begin() + dataOff + bytes);
  return true;
}

bool lockstep::rt::readNpy(const std::string &path, NpyArray &out,
                           std::string &error) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    error = "cannot open '" + path + "'";
    return false;
  }
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                             std::istreambuf_iterator<char>());
  if (!parseNpy(bytes, out, error)) {
    error = "'" + path + "': " + error;
    return false;
  }
  return true;
}

std::vector<uint8_t> lockstep::rt::serializeNpy(const NpyArray &a) {
  std::string descr = (a.dtype == "b1" ? "|b1"
                       : a.dtype.size() > 1 && a.dtype[1] == '1' ? "|" + a.dtype
                                                                  : "<" + a.dtype);
  std::string shape;
  for (size_t i = 0; i < a.shape.size(); ++i)
    shape += std::to_string(a.shape[i]) + (a.shape.size() == 1 ? "," : i + 1 < a.shape.size() ? ", " : "");
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" +
                  shape + "), }";
  size_t total = 10 + h.size() + 1;
  h += std::string((64 - total % 64) % 64, ' ') + "\n";
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                              uint8_t(h.size() & 0xff), uint8_t(h.size() >> 8)};
  out.insert(out.end(), h.begin(), h.end());
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

bool lockstep::rt::writeNpy(const std::string &path, const NpyArray &a,
                            std::string &error) {
  std::vector<uint8_t> bytes = serializeNpy(a);
  std::ofstream f(path, std::ios::binary);
  if (!f || !f.write(reinterpret_cast<const char *>(bytes.data()), bytes.size())) {
    error = "cannot write '" + path + "'";
    return false;
  }
  return true;
}
