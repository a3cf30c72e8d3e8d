//===- HostMemory.cpp - Keeping a step's freed host memory ----------------===//
#include "lockstep/Runtime/HostMemory.h"

#include <climits>
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
  if (!mallopt(M_TRIM_THRESHOLD, INT_MAX)) {
    why = "glibc refused M_TRIM_THRESHOLD";
    return false;
  }
  return true;
}
