//===- ThreadPool.h - The pool that runs parallel work items ----*- C++ -*-===//
//
// Compiled code splits only the parallel dims of its loops into work items
// (lockstep-outline-parallel) and hands ranges of items to this pool. Every
// item computes its outputs alone and in a fixed order, so how items are
// grouped into chunks and which thread runs which chunk never changes a bit
// of the result; only the speed depends on the thread count.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_BACKEND_CPU_THREADPOOL_H
#define LOCKSTEP_RUNTIME_BACKEND_CPU_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace lockstep::rt {

/// A work function: runs items [begin, end) with the context `ctx`.
using WorkFn = void (*)(void *ctx, int64_t begin, int64_t end);

class ThreadPool {
public:
  /// A pool of `threads` threads in all, the caller's included (at least 1).
  explicit ThreadPool(unsigned threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  unsigned size() const { return workers.size() + 1; }

  /// Runs fn over [begin, end) in chunks, on the pool's threads and the
  /// calling one, and returns when all are done. One call at a time.
  void parallelFor(WorkFn fn, void *ctx, int64_t begin, int64_t end);

  /// The C entry point that compiled code calls through
  /// `lockstep_parallel_for_impl`, with the pool from `lockstep_thread_pool`.
  static void dispatch(void *pool, WorkFn fn, void *ctx, int64_t begin,
                       int64_t end);

private:
  void workerLoop();
  /// Claims and runs chunks of job `gen` until none is left.
  void runChunks(uint64_t gen);

  std::vector<std::thread> workers;
  std::mutex mutex;
  std::condition_variable wake, done;
  std::atomic<bool> stopping{false};
  std::atomic<uint64_t> generation{0}; // bumped per parallelFor, under mutex
  // The current job's claims, one word so that a claim checks the job it
  // belongs to: generation (high 32 bits), chunk count (16), next chunk (16).
  // A thread that wakes after its job ended finds another generation and
  // claims nothing, so the caller waits only for chunks, never for threads:
  // on a busy machine it runs every chunk itself rather than wait for a
  // worker to be scheduled.
  std::atomic<uint64_t> claims{0};
  std::atomic<int64_t> completed{0}; // chunks of the current job finished
  // The current job, written before its claims word is published and read
  // only by a thread holding a claim (the job cannot end before it).
  WorkFn jobFn = nullptr;
  void *jobCtx = nullptr;
  int64_t jobBegin = 0, jobEndValue = 0, jobChunk = 1;
};

} // namespace lockstep::rt

#endif
