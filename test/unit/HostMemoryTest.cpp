//===- HostMemoryTest.cpp - Unit tests of keepFreedHostMemory -------------===//
#include "lockstep/Runtime/HostMemory.h"

#include <cstdlib>
#include <cstring>
#include <gtest/gtest.h>
#include <malloc.h>

using namespace lockstep::rt;

namespace {

// Above any mmap threshold (mallopt's largest is 64 MiB less than glibc's
// own limit) and above a trim threshold of 256 MiB.
constexpr size_t kBig = size_t(288) << 20;

void *touched(size_t n) {
  void *p = std::malloc(n);
  if (p)
    std::memset(p, 1, n);
  return p;
}

} // namespace

// One test, in this order: glibc's default maps a 288 MiB buffer and gives
// it back at free; after keepFreedHostMemory the main heap serves it, keeps
// it when it is freed (the heap does not shrink), and a second buffer of
// that size reuses its memory (the heap does not grow, so no page is new).
TEST(HostMemory, KeepsFreedBuffersForTheNextStep) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's";
#endif
  size_t mapped = mallinfo2().hblkhd;
  void *a = touched(kBig);
  ASSERT_NE(a, nullptr);
  EXPECT_GE(mallinfo2().hblkhd, mapped + kBig) << "glibc's default did not map 288 MiB";
  std::free(a);

  std::string why;
  ASSERT_TRUE(keepFreedHostMemory(why)) << why;
  mapped = mallinfo2().hblkhd;
  void *b = touched(kBig);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(mallinfo2().hblkhd, mapped) << "a 288 MiB buffer was still mapped on its own";
  size_t heap = mallinfo2().arena;
  std::free(b);
  EXPECT_EQ(mallinfo2().arena, heap) << "the freed buffer went back to the kernel";
  void *c = touched(kBig);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(mallinfo2().arena, heap) << "the heap grew instead of reusing the freed buffer";
  std::free(c);
}

// A step that frees more than 2 GiB at once (a 512-token prefill of a
// 1.24e8-parameter GPT-2 frees 2.4 GiB): the heap keeps it too. A trim
// threshold of 2 GiB (mallopt's largest value) gave it back, and the next
// step faulted every page again. The buffer is not touched: the heap's
// size is what is checked, not its pages.
TEST(HostMemory, KeepsMoreThanTwoGiBFreedAtOnce) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator replaces glibc's";
#endif
  std::string why;
  ASSERT_TRUE(keepFreedHostMemory(why)) << why;
  constexpr size_t kHuge = size_t(2304) << 20; // 2.25 GiB
  void *a = std::malloc(kHuge);
  ASSERT_NE(a, nullptr);
  size_t heap = mallinfo2().arena;
  ASSERT_GE(heap, kHuge) << "the main heap did not serve 2.25 GiB";
  std::free(a);
  EXPECT_EQ(mallinfo2().arena, heap) << "2.25 GiB freed at once went back to the kernel";
}
