//===- FingerprintTest.cpp - The logits hash chain ------------------------===//
#include "lockstep/Artifact/Checksum.h"
#include "lockstep/Runtime/Serving/Fingerprint.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

using namespace lockstep::rt;

namespace {

std::vector<float> row(int seed, int n) {
  std::vector<float> r(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    r[size_t(i)] = float(seed * 31 + i) * 0.125f - 3.0f;
  return r;
}

// h_i = XXH64(le64(h_{i-1}) || bytes of row i), spelled out over one buffer
// (the test host is little-endian, as the format is).
uint64_t link(uint64_t prev, const std::vector<float> &r) {
  std::vector<uint8_t> bytes(8 + r.size() * 4);
  std::memcpy(bytes.data(), &prev, 8);
  std::memcpy(bytes.data() + 8, r.data(), r.size() * 4);
  return checksumBytes(bytes.data(), bytes.size());
}

} // namespace

TEST(Fingerprint, IsTheXXH64Chain) {
  Fingerprint f;
  EXPECT_EQ(f.value(), kFingerprintIV);
  EXPECT_EQ(f.rows(), 0);
  // 100 floats span several 256-byte pieces of the streaming update.
  std::vector<float> a = row(1, 100), b = row(2, 100);
  f.update(a.data(), 100);
  EXPECT_EQ(f.value(), link(kFingerprintIV, a));
  f.update(b.data(), 100);
  EXPECT_EQ(f.value(), link(link(kFingerprintIV, a), b));
  EXPECT_EQ(f.rows(), 2);
}

TEST(Fingerprint, OrderMatters) {
  std::vector<float> a = row(1, 7), b = row(2, 7);
  Fingerprint ab, ba;
  ab.update(a.data(), 7);
  ab.update(b.data(), 7);
  ba.update(b.data(), 7);
  ba.update(a.data(), 7);
  EXPECT_NE(ab.value(), ba.value());
  // And rows are not just concatenated: one row of 14 is another chain.
  std::vector<float> both = a;
  both.insert(both.end(), b.begin(), b.end());
  Fingerprint one;
  one.update(both.data(), 14);
  EXPECT_NE(one.value(), ab.value());
}

TEST(Fingerprint, EveryBitCounts) {
  std::vector<float> a = row(3, 50);
  Fingerprint ref;
  ref.update(a.data(), 50);
  for (size_t i = 0; i < a.size(); i += 7)
    for (int bit = 0; bit < 32; bit += 5) {
      std::vector<float> c = a;
      uint32_t u;
      std::memcpy(&u, &c[i], 4);
      u ^= 1u << bit;
      std::memcpy(&c[i], &u, 4);
      Fingerprint f;
      f.update(c.data(), 50);
      EXPECT_NE(f.value(), ref.value()) << "float " << i << " bit " << bit;
    }
  // -0.0 and +0.0 differ.
  float pz = 0.0f, nz = -0.0f;
  Fingerprint fp, fn;
  fp.update(&pz, 1);
  fn.update(&nz, 1);
  EXPECT_NE(fp.value(), fn.value());
}

TEST(Fingerprint, HexIsSixteenLowercaseDigits) {
  EXPECT_EQ(Fingerprint::toHex(0), "0000000000000000");
  EXPECT_EQ(Fingerprint::toHex(0x0123456789abcdefULL), "0123456789abcdef");
  EXPECT_EQ(Fingerprint::toHex(~0ULL), "ffffffffffffffff");
  Fingerprint f;
  EXPECT_EQ(f.hex(), "6c6f636b73746570");
}
