//===- Fingerprint.cpp - A hash chain over a request's logits -------------===//
#include "lockstep/Runtime/Serving/Fingerprint.h"

#include "lockstep/Artifact/Checksum.h"

#include <cstring>

using namespace lockstep::rt;

namespace {

/// Whether this host stores a float's bits little-endian, as the format
/// writes them: then a row's bytes are fed as they lie in memory.
bool littleEndianHost() {
  const uint32_t one = 1;
  uint8_t first;
  std::memcpy(&first, &one, 1);
  return first == 1;
}

} // namespace

void Fingerprint::update(const float *row, int64_t count) {
  Checksum c;
  uint8_t buf[256];
  for (int i = 0; i < 8; ++i)
    buf[i] = uint8_t(h >> (8 * i));
  c.update(buf, 8);
  static const bool inPlace = littleEndianHost();
  if (inPlace && count > 0) {
    // The row's bytes as they lie: XXH64's stripes read them in place
    // (a 64-request step of a 32000-word vocabulary hashes 8 MB).
    c.update(row, size_t(count) * 4);
  } else {
    // The floats' bits, little-endian, fed in pieces (the digest does not
    // depend on how the input is split).
    size_t used = 0;
    for (int64_t i = 0; i < count; ++i) {
      uint32_t bits;
      std::memcpy(&bits, row + i, 4);
      for (int b = 0; b < 4; ++b)
        buf[used++] = uint8_t(bits >> (8 * b));
      if (used == sizeof(buf)) {
        c.update(buf, used);
        used = 0;
      }
    }
    c.update(buf, used);
  }
  h = c.digest();
  ++n;
}

std::string Fingerprint::toHex(uint64_t value) {
  static const char digits[] = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, value >>= 4)
    s[size_t(i)] = digits[value & 15];
  return s;
}
