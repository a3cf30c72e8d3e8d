//===- HostMemory.h - Keeping a step's freed host memory --------*- C++ -*-===//
//
// A compiled CPU step allocates its temporaries at every call and frees
// them at its end; a prefill step of 512 tokens allocates more than a GiB.
// glibc serves large requests with fresh mappings and returns them at free,
// and gives the heap's free top back to the kernel, so every step paid page
// faults and the kernel's zeroing of every page again (a prefill step of
// 4 prompts of 128 tokens on a 1.24e8-parameter GPT-2 took 4.1-6.2 s, and
// 1.5-1.6 s with this policy; `perf` over the whole process had 58% of its
// samples in the kernel's clear_page_erms). (The tools had
// asked for a 64 MiB mmap threshold, which mallopt refuses, and trimmed the
// heap beyond 256 MiB free, which a prefill step frees.)
// keepFreedHostMemory() makes the process keep what it frees for the next
// step: the main heap serves every size (M_MMAP_MAX 0; other threads' arenas
// still map what their heaps cannot hold), and its top is never returned
// (M_TRIM_THRESHOLD -1: a threshold of 2 GiB, mallopt's largest, was still
// crossed by a 512-token GPT-2 prefill step, which frees 2.4 GiB). Memory in
// use at the peak of a step stays with the process, as a caching
// allocator's does.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_HOSTMEMORY_H
#define LOCKSTEP_RUNTIME_HOSTMEMORY_H

#include <string>

namespace lockstep::rt {

/// Applies the policy above to the whole process (glibc's mallopt); false,
/// with `why`, if glibc refused a setting. Call it once, early in main().
/// In a build with AddressSanitizer, whose allocator replaces glibc's, it
/// does nothing and returns true.
bool keepFreedHostMemory(std::string &why);

} // namespace lockstep::rt

#endif
