//===- ThreadPool.cpp - The pool that runs parallel work items ------------===//
#include "ThreadPool.h"

#include <algorithm>

using namespace lockstep::rt;

ThreadPool::ThreadPool(unsigned threads) {
  for (unsigned i = 1; i < std::max(1u, threads); ++i)
    workers.emplace_back([this] { workerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
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
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping)
        return;
      seen = generation;
    }
    runChunks();
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (--active == 0)
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
    std::lock_guard<std::mutex> lock(mutex);
    jobFn = fn;
    jobCtx = ctx;
    jobBegin = begin;
    jobEndValue = end;
    jobChunk = (n + chunks - 1) / chunks;
    jobChunks = (n + jobChunk - 1) / jobChunk;
    nextChunk.store(0, std::memory_order_relaxed);
    active = workers.size();
    ++generation;
  }
  wake.notify_all();
  runChunks();
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return active == 0; });
}

void ThreadPool::dispatch(void *pool, WorkFn fn, void *ctx, int64_t begin,
                          int64_t end) {
  static_cast<ThreadPool *>(pool)->parallelFor(fn, ctx, begin, end);
}
