//===- Fingerprint.cpp - A hash chain over a request's logits -------------===//
#include "lockstep/Runtime/Serving/Fingerprint.h"

#include "lockstep/Artifact/Checksum.h"

using namespace lockstep::rt;

void Fingerprint::update(const float *row, int64_t count) {
  Checksum c;
  uint8_t buf[8];
  for (int i = 0; i < 8; ++i)
    buf[i] = uint8_t(h >> (8 * i));
  c.update(buf, 8);
  // The floats' bits, little-endian, are the row's bytes as they lie on
  // the runtime's host (x86-64; Checksum's own loads assume the same): XXH64
  // reads them in place (a 64-request step of a 32000-word vocabulary
  // hashes 8 MB).
  if (count > 0)
    c.update(row, size_t(count) * 4);
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
