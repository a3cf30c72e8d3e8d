//===- ThreadPool.cpp - The pool that runs parallel work items ------------===//
#include "lockstep/Runtime/Backend/Cpu/ThreadPool.h"

#include <algorithm>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

using namespace lockstep::rt;

namespace {

/// Spins this many rounds before sleeping, yielding the core every 64 rounds
/// so that a spinning thread on a busy machine lets others run: roughly 20
/// to 200 microseconds when the machine is idle.
constexpr int kSpinRounds = 1 << 11;

inline void relax(int round) {
#if defined(__x86_64__) || defined(__i386__)
  if (round % 64 != 63) {
    _mm_pause();
    return;
  }
#endif
  (void)round;
  std::this_thread::yield();
}

/// Spins until `ready()` or the budget runs out; returns ready().
template <typename F> bool spinUntil(F ready) {
  for (int i = 0; i < kSpinRounds; ++i) {
    if (ready())
      return true;
    relax(i);
  }
  return ready();
}

constexpr uint64_t kGenShift = 32, kCountShift = 16, kMask16 = 0xffff;
constexpr int64_t kMaxChunks = int64_t(kMask16);

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

void ThreadPool::runChunks(uint64_t gen) {
  uint64_t s = claims.load(std::memory_order_acquire);
  for (;;) {
    uint64_t next = s & kMask16, count = (s >> kCountShift) & kMask16;
    if ((s >> kGenShift) != (gen & 0xffffffffu) || next >= count)
      return;
    if (!claims.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel,
                                      std::memory_order_acquire))
      continue; // s now holds the word another thread left
    int64_t b = jobBegin + int64_t(next) * jobChunk;
    jobFn(jobCtx, b, std::min(b + jobChunk, jobEndValue));
    if (completed.fetch_add(1, std::memory_order_acq_rel) + 1 == int64_t(count)) {
      // Under the mutex, so that a caller between its check and its wait
      // cannot miss it.
      std::lock_guard<std::mutex> lock(mutex);
      done.notify_one();
    }
    s = claims.load(std::memory_order_acquire);
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
    runChunks(seen);
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
  int64_t chunks = std::min<int64_t>({n, int64_t(size()) * 4, kMaxChunks});
  int64_t chunk = (n + chunks - 1) / chunks;
  chunks = (n + chunk - 1) / chunk;
  uint64_t gen;
  {
    // Under the mutex, so that a worker between its check and its wait
    // cannot miss the new generation.
    std::lock_guard<std::mutex> lock(mutex);
    jobFn = fn;
    jobCtx = ctx;
    jobBegin = begin;
    jobEndValue = end;
    jobChunk = chunk;
    completed.store(0, std::memory_order_relaxed);
    gen = generation.load(std::memory_order_relaxed) + 1;
    claims.store(((gen & 0xffffffffu) << kGenShift) | (uint64_t(chunks) << kCountShift),
                 std::memory_order_release);
    generation.store(gen, std::memory_order_release);
  }
  wake.notify_all();
  runChunks(gen);
  auto finished = [&] { return completed.load(std::memory_order_acquire) == chunks; };
  if (!spinUntil(finished)) {
    std::unique_lock<std::mutex> lock(mutex);
    done.wait(lock, finished);
  }
}

void ThreadPool::dispatch(void *pool, WorkFn fn, void *ctx, int64_t begin,
                          int64_t end) {
  static_cast<ThreadPool *>(pool)->parallelFor(fn, ctx, begin, end);
}
