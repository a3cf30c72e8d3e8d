/* A stand-in for the CUDA driver (libcuda.so.1) for tests on machines
 * without a GPU. It runs no kernel: launches are counted (and printed with
 * FAKE_CUDA_LOG set). Its device memory is PROT_NONE pages, so that a host
 * that reads or writes device memory, which a CUDA step's host code must
 * never do, dies of SIGSEGV; only the copies of cuMemcpy* open them. The
 * functions and their ABI are the ones runtime/backend/cuda/CudaDriver.cpp
 * looks up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
typedef unsigned long long CUdeviceptr;
static int launches;
int cuInit(unsigned f) { return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int i) { *d = 0; return 0; }
int cuDeviceGetName(char *s, int n, int d) { snprintf(s, n, "fake GPU"); return 0; }
int cuDeviceGetAttribute(int *v, int a, int d) { *v = a == 75 ? 9 : 0; return 0; }
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)1; return 0; }
int cuCtxSetCurrent(void *c) { return 0; }
int cuModuleLoadData(void **m, const void *ptx) { *m = (void *)ptx; return 0; }
int cuModuleUnload(void *m) { return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "resolve %s\n", name);
  *f = (void *)name; return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem, void *s, void **p, void **e) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "launch %s %u %u\n", (const char *)f, gx, bx);
  launches++; return 0; }
int cuStreamCreate(void **s, unsigned f) { *s = (void *)2; return 0; }
int cuStreamSynchronize(void *s) { return 0; }
/* Device memory the host cannot touch: PROT_NONE pages. */
int cuMemAlloc_v2(CUdeviceptr *p, size_t n) {
  void *m = mmap(NULL, n + 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) return 2;
  *p = (CUdeviceptr)m; return 0; }
int cuMemFree_v2(CUdeviceptr p) { return 0; }
/* Opens the pages of [d, d + n) with `prot` (d need not be page-aligned). */
static void pages(CUdeviceptr d, size_t n, int prot) {
  CUdeviceptr a = d & ~(CUdeviceptr)4095;
  mprotect((void *)a, (d + n - a + 4095) / 4096 * 4096, prot); }
int cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) {
  pages(d, n, PROT_READ | PROT_WRITE); memcpy((void *)d, h, n); pages(d, n, PROT_NONE);
  return 0; }
int cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
  pages(d, n, PROT_READ); memcpy(h, (void *)d, n); pages(d, n, PROT_NONE); return 0; }
int cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  pages(d, n, PROT_READ | PROT_WRITE); memset((void *)d, v, n); pages(d, n, PROT_NONE);
  return 0; }
int cuGetErrorString(int r, const char **s) { *s = "fake error"; return 0; }
