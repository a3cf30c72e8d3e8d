/* A stand-in for the CUDA driver (libcuda.so.1) for tests on machines
 * without a GPU. It runs no kernel: launches are counted (and printed with
 * FAKE_CUDA_LOG set). Its device memory is PROT_NONE pages, so that a host
 * that reads or writes device memory, which a CUDA step's host code must
 * never do, dies of SIGSEGV; only the copies of cuMemcpy* open them. The
 * functions and their ABI are the ones runtime/backend/cuda/CudaDriver.cpp
 * looks up. Graphs (LaunchGraph.h) are lists of kernel nodes; launching one
 * counts and prints its nodes as launches, marked "(graph)". A kernel's
 * argument count is read from its PTX (the .params of its .entry); each
 * argument is said to be 8 bytes, which only matters to the copies the
 * queue makes. Events (the profile's) count launches. */
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
/* Functions are kept per module, and freed when it is unloaded. */
struct fn { const char *name; size_t params; void *module; struct fn *next; };
static struct fn *functions;
int cuModuleUnload(void *m) {
  for (struct fn **p = &functions; *p;) {
    struct fn *k = *p;
    if (k->module == m) { *p = k->next; free(k); } else p = &k->next;
  }
  return 0; }
int cuModuleGetFunction(void **f, void *m, const char *name) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "resolve %s\n", name);
  struct fn *k = calloc(1, sizeof *k);
  k->module = m; k->next = functions; functions = k;
  char key[512];
  snprintf(key, sizeof key, ".entry %s(", name);
  const char *p = strstr((const char *)m, key), *end = p ? strchr(p, ')') : NULL;
  for (p = p ? strstr(p, ".param") : NULL; p && p < end; p = strstr(p + 1, ".param")) k->params++;
  k->name = name; *f = k; return 0; }
int cuFuncGetParamInfo(void *f, size_t i, size_t *offset, size_t *size) {
  if (i >= ((struct fn *)f)->params) return 1;
  *offset = 8 * i; *size = 8; return 0; }
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned smem, void *s, void **p, void **e) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "launch %s %u %u\n", ((struct fn *)f)->name, gx, bx);
  launches++; return 0; }
/* struct kernel_node_params is CUDA_KERNEL_NODE_PARAMS_v2's layout. */
struct kernel_node_params { void *func; unsigned g[3], b[3], smem; void **params, **extra, *kern, *ctx; };
struct node { struct fn *f; unsigned gx, bx; };
struct graph { size_t n; struct node **nodes; };
int cuGraphCreate(struct graph **g, unsigned flags) { *g = calloc(1, sizeof **g); return 0; }
int cuGraphAddKernelNode_v2(struct node **out, struct graph *g, void *const *deps, size_t ndeps, const struct kernel_node_params *p) {
  struct node *n = calloc(1, sizeof *n);
  n->f = p->func; n->gx = p->g[0]; n->bx = p->b[0];
  g->nodes = realloc(g->nodes, (g->n + 1) * sizeof *g->nodes);
  g->nodes[g->n++] = n; *out = n; return 0; }
int cuGraphInstantiateWithFlags(struct graph **exec, struct graph *g, unsigned long long flags) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "graph made of %zu kernels\n", g->n);
  *exec = g; return 0; }
int cuGraphExecKernelNodeSetParams_v2(struct graph *exec, struct node *n, const struct kernel_node_params *p) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "graph node updated: %s\n", n->f->name);
  n->gx = p->g[0]; n->bx = p->b[0]; return 0; }
int cuGraphLaunch(struct graph *exec, void *s) {
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "graph launch of %zu kernels\n", exec->n);
  for (size_t i = 0; i < exec->n; ++i) {
    if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "launch %s %u %u (graph)\n", exec->nodes[i]->f->name, exec->nodes[i]->gx, exec->nodes[i]->bx);
    launches++; }
  return 0; }
int cuGraphExecDestroy(struct graph *exec) { return 0; }
int cuGraphDestroy(struct graph *g) { for (size_t i = 0; i < g->n; ++i) free(g->nodes[i]); free(g->nodes); free(g); return 0; }
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
/* Page-locked host memory: ordinary memory here, its blocks remembered so
 * that the log says whether a download lands in one. */
static struct { char *p; size_t n; } pinned[256];
int cuMemHostAlloc(void **p, size_t n, unsigned flags) {
  *p = malloc(n ? n : 1);
  if (!*p) return 2;
  for (int i = 0; i < 256; ++i)
    if (!pinned[i].p) { pinned[i].p = *p; pinned[i].n = n; break; }
  if (getenv("FAKE_CUDA_LOG")) fprintf(stderr, "host alloc %zu\n", n);
  return 0; }
int cuMemFreeHost(void *p) {
  for (int i = 0; i < 256; ++i)
    if (pinned[i].p == p) pinned[i].p = 0;
  free(p); return 0; }
int cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
  if (getenv("FAKE_CUDA_LOG")) {
    int locked = 0;
    for (int i = 0; i < 256; ++i)
      locked |= pinned[i].p && (char *)h >= pinned[i].p && (char *)h + n <= pinned[i].p + pinned[i].n;
    fprintf(stderr, "download %zu%s\n", n, locked ? " page-locked" : "");
  }
  pages(d, n, PROT_READ); memcpy(h, (void *)d, n); pages(d, n, PROT_NONE); return 0; }
int cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  pages(d, n, PROT_READ | PROT_WRITE); memset((void *)d, v, n); pages(d, n, PROT_NONE);
  return 0; }
int cuGetErrorString(int r, const char **s) { *s = "fake error"; return 0; }
/* Events: each records the number of launches before it; the time between
 * two is 1 us a launch between them, so a kernel takes 1 us and the device
 * is never idle between kernels. They come from a static pool (the runtime
 * keeps its events for the process's life, and a heap block would be
 * reported as a leak in a sanitizer build). */
static int eventPool[1 << 16];
static int eventsMade;
int cuEventCreate(int **e, unsigned f) {
  if (eventsMade == (int)(sizeof eventPool / sizeof *eventPool))
    return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *e = &eventPool[eventsMade++];
  return 0;
}
int cuEventRecord(int *e, void *s) { *e = launches; return 0; }
int cuEventElapsedTime(float *ms, int *a, int *b) { *ms = (float)(*b - *a) * 1e-3f; return 0; }
