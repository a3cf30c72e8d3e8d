//===- ThreadPoolTest.cpp - Unit tests of the runtime's thread pool -------===//
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"

#include <atomic>
#include <gtest/gtest.h>
#include <vector>

using lockstep::rt::ThreadPool;

namespace {
struct Counts {
  std::vector<std::atomic<int>> hits;
  explicit Counts(size_t n) : hits(n) {}
};

void mark(void *ctx, int64_t begin, int64_t end) {
  auto *c = static_cast<Counts *>(ctx);
  for (int64_t i = begin; i < end; ++i)
    c->hits[i].fetch_add(1);
}
} // namespace

// Every item runs exactly once, for any thread count and range, and the pool
// can be reused.
TEST(ThreadPool, EachItemOnce) {
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (int64_t n : {0, 1, 2, 7, 64, 1000}) {
      for (int64_t begin : {int64_t(0), int64_t(5)}) {
        Counts c(begin + n);
        ThreadPool::dispatch(&pool, mark, &c, begin, begin + n);
        for (int64_t i = 0; i < begin + n; ++i)
          EXPECT_EQ(c.hits[i].load(), i >= begin ? 1 : 0)
              << "threads " << threads << " n " << n << " i " << i;
      }
    }
  }
}

// An empty or reversed range runs nothing.
TEST(ThreadPool, EmptyRange) {
  ThreadPool pool(4);
  Counts c(1);
  pool.parallelFor(mark, &c, 3, 3);
  pool.parallelFor(mark, &c, 5, 2);
  EXPECT_EQ(c.hits[0].load(), 0);
}
