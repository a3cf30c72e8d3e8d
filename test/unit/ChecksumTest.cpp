//===- ChecksumTest.cpp - The artifact checksum is XXH64 ------------------===//
//
// The expected values were computed by the reference implementation
// (libxxhash 0.8.1, XXH64 with seed 0), so that the compiler, the runtime and
// any outside tool agree on what a checksum is.
//
//===----------------------------------------------------------------------===//
#include "ArtifactTestUtil.h"
#include "lockstep/Artifact/Checksum.h"

#include <gtest/gtest.h>
#include <vector>

using namespace lockstep::rt;

namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> b(n);
  for (size_t i = 0; i < n; ++i)
    b[i] = uint8_t(i * 131 + 7);
  return b;
}

} // namespace

TEST(Checksum, ReferenceVectors) {
  EXPECT_EQ(checksumBytes(nullptr, 0), 0xef46db3751d8e999ULL);
  EXPECT_EQ(checksumBytes("abc", 3), 0x44bc2cf5ad770999ULL);
  std::vector<uint8_t> b = pattern(1000);
  // Lengths that exercise the 8-byte tail, full stripes, and both.
  EXPECT_EQ(checksumBytes(b.data(), 8), 0x994b676b71ce94ddULL);
  EXPECT_EQ(checksumBytes(b.data(), 32), 0x07f7b8e3bc5d6e25ULL);
  EXPECT_EQ(checksumBytes(b.data(), 100), 0x9ddada11d3dc2d8fULL);
  EXPECT_EQ(checksumBytes(b.data(), 1000), 0x0bf0bdbcc82eb373ULL);
}

TEST(Checksum, StreamingDoesNotDependOnSplits) {
  std::vector<uint8_t> b = pattern(1000);
  uint64_t whole = checksumBytes(b.data(), b.size());
  for (size_t step : {1, 3, 7, 31, 32, 33, 500}) {
    Checksum c;
    for (size_t off = 0; off < b.size(); off += step)
      c.update(b.data() + off, std::min(step, b.size() - off));
    EXPECT_EQ(c.digest(), whole) << "pieces of " << step;
  }
}

TEST(Checksum, FileRange) {
  lockstep::rt::test::TempDir tmp;
  std::string path = tmp.path + "/range.bin";
  std::vector<uint8_t> b = pattern(300);
  lockstep::rt::test::writeFile(path, b);
  uint64_t sum = 0;
  std::string error;
  ASSERT_TRUE(checksumFileRange(path, 100, 150, sum, error)) << error;
  EXPECT_EQ(sum, checksumBytes(b.data() + 100, 150));
  EXPECT_FALSE(checksumFileRange(path, 100, 201, sum, error));
  EXPECT_NE(error.find("too short"), std::string::npos) << error;
  EXPECT_FALSE(checksumFileRange(path + ".missing", 0, 1, sum, error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}
