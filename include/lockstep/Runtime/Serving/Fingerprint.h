//===- Fingerprint.h - A hash chain over a request's logits -----*- C++ -*-===//
//
// Two runs on two machines are compared without shipping logits: each
// request carries a fingerprint, a hash chain over the logits rows it got,
// one link per row, in order:
//
//   h_0 = kFingerprintIV
//   h_i = XXH64(le64(h_{i-1}) || le32 bits of the floats of row i)
//
// XXH64 is `checksumBytes` of Artifact/Checksum.h (seed 0); le64 / le32 are
// little-endian byte encodings, written out explicitly so that the value does
// not depend on the host's byte order. A float enters by its bits, so -0.0
// and +0.0, or two NaNs with different payloads, give different fingerprints.
// The printed form is 16 lowercase hex digits of h.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_SERVING_FINGERPRINT_H
#define LOCKSTEP_RUNTIME_SERVING_FINGERPRINT_H

#include <cstdint>
#include <string>

namespace lockstep::rt {

/// The chain's initial value: the ASCII of "lockstep" read as a big-endian
/// integer. It is part of the format: changing it changes every fingerprint.
constexpr uint64_t kFingerprintIV = 0x6c6f636b73746570ULL; // "lockstep"

class Fingerprint {
public:
  /// Appends one logits row of `count` floats to the chain.
  void update(const float *row, int64_t count);
  uint64_t value() const { return h; }
  /// Number of rows appended.
  int64_t rows() const { return n; }
  /// value() as 16 lowercase hex digits.
  std::string hex() const { return toHex(h); }
  static std::string toHex(uint64_t value);

private:
  uint64_t h = kFingerprintIV;
  int64_t n = 0;
};

} // namespace lockstep::rt

#endif
