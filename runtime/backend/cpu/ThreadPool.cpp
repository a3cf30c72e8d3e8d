//===- ThreadPool.cpp - The pool that runs parallel work items ------------===//
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"

#include <algorithm>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

using namespace lockstep::rt;

namespace {

/// Spins this many rounds (each a pause, about 10 to 150 cycles) before
/// sleeping: roughly 0.1 to 1 ms.
constexpr int kSpinRounds = 1 << 13;

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

/// Spins until `ready()` or the budget runs out; returns ready().
template <typename F> bool spinUntil(F ready) {
  for (int i = 0; i < kSpinRounds; ++i) {
    if (ready())
      return true;
    relax();
  }
  return ready();
}

} // namespace

ThreadPool::ThreadPool(unsigned threads) {
  for (unsigned i = 1; i < std::max(1u, threads); ++i)
    workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping.store(true);
  }
  wake.notify_all();
  for (std::thread &t : workers)
    t.join();
}

void ThreadPool::runChunks() {
  for (;;) {
    int64_t c = nextChunk.fetch_add(1, std::memory_order_relaxed);
    if (c >= jobChunks)
      return;
    int64_t b = jobBegin + c * jobChunk;
    jobFn(jobCtx, b, std::min(b + jobChunk, jobEndValue));
  }
}

void ThreadPool::workerLoop() {
  uint64_t seen = 0;
  for (;;) {
    auto ready = [&] {
      return stopping.load(std::memory_order_acquire) ||
             generation.load(std::memory_order_acquire) != seen;
    };
    if (!spinUntil(ready)) {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, ready);
    }
    if (stopping.load(std::memory_order_acquire))
      return;
    seen = generation.load(std::memory_order_acquire);
    runChunks();
    if (active.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      // Under the mutex, so that a caller between its check and its wait
      // cannot miss it.
      std::lock_guard<std::mutex> lock(mutex);
      done.notify_one();
    }
  }
}

void ThreadPool::parallelFor(WorkFn fn, void *ctx, int64_t begin, int64_t end) {
  int64_t n = end - begin;
  if (n <= 0)
    return;
  if (workers.empty() || n == 1) {
    fn(ctx, begin, end);
    return;
  }
  // A few chunks per thread balance uneven items without much overhead.
  int64_t chunks = std::min<int64_t>(n, int64_t(size()) * 4);
  {
    // Under the mutex, so that a worker between its check and its wait
    // cannot miss the new generation.
    std::lock_guard<std::mutex> lock(mutex);
    jobFn = fn;
    jobCtx = ctx;
    jobBegin = begin;
    jobEndValue = end;
    jobChunk = (n + chunks - 1) / chunks;
    jobChunks = (n + jobChunk - 1) / jobChunk;
    nextChunk.store(0, std::memory_order_relaxed);
    active.store(unsigned(workers.size()), std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_release);
  }
  wake.notify_all();
  runChunks();
  auto finished = [&] { return active.load(std::memory_order_acquire) == 0; };
  if (!spinUntil(finished)) {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, finished);
  }
}

void ThreadPool::dispatch(void *pool, WorkFn fn, void *ctx, int64_t begin,
                          int64_t end) {
  static_cast<ThreadPool *>(pool)->parallelFor(fn, ctx, begin, end);
}
