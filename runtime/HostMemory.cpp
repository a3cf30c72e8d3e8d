//===- HostMemory.cpp - Keeping a step's freed host memory ----------------===//
#include "lockstep/Runtime/HostMemory.h"

#include <malloc.h>

bool lockstep::rt::keepFreedHostMemory(std::string &why) {
#if defined(__SANITIZE_ADDRESS__)
  // AddressSanitizer's allocator replaces glibc's and takes no mallopt.
  (void)why;
  return true;
#endif
  // mallopt refuses an mmap threshold above 32 MiB (half of a heap's
  // largest size on 64-bit) and returns 0; M_MMAP_MAX 0 has no such limit.
  if (!mallopt(M_MMAP_MAX, 0)) {
    why = "glibc refused M_MMAP_MAX 0";
    return false;
  }
  // -1 turns trimming off (mallopt(3)). The largest threshold mallopt
  // takes, INT_MAX, is 2 GiB: a 512-token prefill step of a 1.24e8-parameter
  // GPT-2 at one thread frees 2.4 GiB at once, so the heap was trimmed after
  // every step and the next one faulted 2.4 GiB of fresh pages again.
  if (!mallopt(M_TRIM_THRESHOLD, -1)) {
    why = "glibc refused M_TRIM_THRESHOLD";
    return false;
  }
  return true;
}
