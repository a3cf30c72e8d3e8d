//===- CudaBackend.cpp - Running a CUDA artifact --------------------------===//
#include "lockstep/Runtime/Backend/Cuda/CudaBackend.h"

#include "lockstep/Runtime/Backend/Cuda/CudaDriver.h"
#include "lockstep/Runtime/Backend/Cuda/CudaProfile.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <unordered_map>
#include <vector>

using namespace lockstep::rt;

namespace {

struct LazyModule;

/// A CUDA artifact's kernels, kept for the process's life: the host object's
/// modules point to it.
struct KernelTable {
  /// The kernels section: PTX by module name.
  std::unordered_map<std::string, std::string> ptx;
  /// The launch plan's kernels: function names by module name.
  std::unordered_map<std::string, std::set<std::string>> planned;
  /// The ONNX node of each planned module's first launch (for the profile).
  std::unordered_map<std::string, std::string> nodes;
  /// The modules that the host object registered while it was loaded.
  std::vector<LazyModule *> registered;
};

/// The table of the artifact whose host object is being loaded: its
/// constructors register its modules (mgpuModuleLoadJIT) inside dlopen.
thread_local KernelTable *loadingKernels = nullptr;

/// Every table made, owned here (freed at exit, after the modules).
std::vector<std::unique_ptr<KernelTable>> kernelTables;

/// A module registered by an object's constructor. Its PTX is loaded, and
/// the launch plan's kernels in it resolved, when the artifact is loaded
/// (loadCudaModule).
struct LazyModule {
  const char *ptx = nullptr; // "lockstep-kernel:NAME"
  const KernelTable *table = nullptr;
  int index = 0; // in registration order, for the profile
  CUmodule module = nullptr;
  std::unordered_map<const char *, CUfunction> functions; // by name pointer
  std::unordered_map<std::string, CUfunction> byName;

  std::string name() const {
    std::string_view key(ptx);
    size_t n = std::strlen(kKernelKeyPrefix);
    return key.substr(0, n) == kKernelKeyPrefix ? std::string(key.substr(n)) : std::string();
  }
};

std::mutex mu;
std::string firstError;
/// The arena of the call that this thread is making (CudaMemory's), which
/// the host code's allocations come from; null outside a call.
thread_local CudaArena *currentArena = nullptr;
std::unordered_map<CUdeviceptr, size_t> liveBlocks;
std::multimap<size_t, CUdeviceptr> freeBlocks;
int modulesRegistered = 0;
std::unordered_map<CUfunction, std::string> kernelNames; // for the profile
void record(const std::string &e) {
  if (firstError.empty())
    firstError = e;
}

const CudaDriver *driverOrRecord() {
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  if (!d)
    record(why);
  return d;
}

LaunchQueue launches; // under `mu`

bool envIs(const char *name, char value) {
  const char *e = std::getenv(name);
  return e && e[0] == value && e[1] == 0;
}

/// Whether each launch is waited for (LOCKSTEP_CUDA_SYNC=1).
bool syncEachLaunch() {
  static const bool wait = envIs("LOCKSTEP_CUDA_SYNC", '1');
  return wait;
}

/// The launch queue, configured at its first use. Called with `mu` held.
LaunchQueue &queue(const CudaDriver &d) {
  static bool configured = false;
  if (!configured) {
    configured = true;
    const char *why = envIs("LOCKSTEP_CUDA_GRAPHS", '0') ? "LOCKSTEP_CUDA_GRAPHS=0"
                      : syncEachLaunch()                 ? "LOCKSTEP_CUDA_SYNC=1"
                      : cuda_profile::enabled()          ? "the profile times each launch"
                                                         : nullptr;
    size_t segment = LaunchQueue::kDefaultSegment;
    if (const char *v = std::getenv("LOCKSTEP_CUDA_GRAPH_SEGMENT"); v && *v) {
      char *end = nullptr;
      unsigned long long n = std::strtoull(v, &end, 10);
      if (*end == 0 && n <= 1000000) // else: the default
        segment = size_t(n);
    }
    launches.configure(d, why == nullptr, why ? why : "", segment);
  }
  return launches;
}

/// Runs the queued launches; an error is recorded. Called with `mu` held.
bool flushLocked() {
  std::string why, error;
  const CudaDriver *d = cudaDriver(why);
  if (!d)
    return true; // nothing was queued
  if (!queue(*d).flush(*d, error)) {
    record(error);
    return false;
  }
  return true;
}

/// The size class of a request: 256 bytes at least, then four classes per
/// doubling (1.25, 1.5, 1.75 and 2 times a power of two), so that a freed
/// block serves the next step's slightly different size (T changes every
/// step) at the cost of at most a quarter more memory.
size_t sizeClass(size_t n) {
  if (n <= 256)
    return 256;
  int k = 63 - __builtin_clzll(uint64_t(n - 1)); // 2^k < n <= 2^(k+1)
  size_t base = size_t(1) << k, step = base / 4;
  return base + (n - base + step - 1) / step * step;
}

/// A device block from the size-class cache, or cuMemAlloc; null with the
/// error recorded. Called with `mu` held.
void *blockAlloc(size_t bytes) {
  const CudaDriver *d = driverOrRecord();
  if (!d)
    return nullptr;
  size_t size = sizeClass(bytes);
  CUdeviceptr p = 0;
  auto it = freeBlocks.find(size);
  if (cuda_profile::enabled())
    cuda_profile::allocation(it == freeBlocks.end());
  if (it != freeBlocks.end()) {
    p = it->second;
    freeBlocks.erase(it);
  } else if (CUresult r = d->cuMemAlloc(&p, size)) {
    record(d->describe(r, "cuMemAlloc") + " of " + std::to_string(size) + " bytes");
    return nullptr;
  }
  liveBlocks[p] = size;
  if (currentArena)
    currentArena->overflowed(size);
  return reinterpret_cast<void *>(p);
}

/// Returns a block of blockAlloc to the cache. Called with `mu` held.
void blockFree(void *ptr) {
  auto it = liveBlocks.find(reinterpret_cast<CUdeviceptr>(ptr));
  if (it == liveBlocks.end())
    return;
  if (currentArena)
    currentArena->overflowFreed(it->second);
  freeBlocks.insert({it->second, it->first});
  liveBlocks.erase(it);
}

/// Loads `m`'s PTX (once) and resolves its kernel `name`; null with the error
/// recorded when it fails. Called with `mu` held.
CUfunction resolveKernel(LazyModule *m, const std::string &name) {
  const CudaDriver *d = driverOrRecord();
  if (!d || !firstError.empty())
    return nullptr;
  if (!m->module) {
    std::string error;
    if (!d->makeCurrent(error)) {
      record(error);
      return nullptr;
    }
    // The host object names its module; the PTX is in the kernels section.
    const std::string *ptx = nullptr;
    if (m->table)
      if (auto it = m->table->ptx.find(m->name()); it != m->table->ptx.end())
        ptx = &it->second;
    if (!ptx) {
      record("kernel module '" + std::string(std::string_view(m->ptx).substr(0, 80)) +
             "' is not in the artifact's kernels section");
      return nullptr;
    }
    auto t0 = cuda_profile::Clock::now();
    if (CUresult r = d->cuModuleLoadData(&m->module, ptx->c_str())) {
      record(d->describe(r, "cuModuleLoadData") + " loading kernel module '" + m->name() + "'");
      return nullptr;
    }
    if (cuda_profile::enabled())
      cuda_profile::moduleLoad(cuda_profile::since(t0));
  }
  CUfunction f = nullptr;
  if (CUresult r = d->cuModuleGetFunction(&f, m->module, name.c_str())) {
    record(d->describe(r, "cuModuleGetFunction") + " for kernel '" + name + "'");
    return nullptr;
  }
  m->byName[name] = f;
  if (cuda_profile::enabled()) {
    kernelNames[f] = "module " + std::to_string(m->index) + " " + name;
    if (m->table)
      if (auto it = m->table->nodes.find(m->name()); it != m->table->nodes.end())
        kernelNames[f] += " " + it->second;
  }
  return f;
}

} // namespace

// The hooks that CUDA artifacts' host code calls (exported by lockstep-run).
extern "C" {

__attribute__((visibility("default"))) void *mgpuModuleLoadJIT(void *data, int) {
  auto *m = new LazyModule;
  m->ptx = static_cast<const char *>(data);
  m->table = loadingKernels;
  m->index = modulesRegistered++;
  if (loadingKernels)
    loadingKernels->registered.push_back(m);
  return m;
}

__attribute__((visibility("default"))) void *mgpuModuleLoad(void *data, size_t) {
  return mgpuModuleLoadJIT(data, 3);
}

__attribute__((visibility("default"))) void mgpuModuleUnload(void *module) {
  auto *m = static_cast<LazyModule *>(module);
  if (!m)
    return;
  std::string why;
  if (m->module)
    if (const CudaDriver *d = cudaDriver(why)) {
      // The cached graphs may hold this module's kernels: they go first.
      std::lock_guard<std::mutex> lock(mu);
      launches.clear(*d);
      d->cuModuleUnload(m->module);
    }
  delete m;
}

__attribute__((visibility("default"))) void *mgpuModuleGetFunction(void *module,
                                                                  const char *name) {
  std::lock_guard<std::mutex> lock(mu);
  auto *m = static_cast<LazyModule *>(module);
  if (auto it = m->functions.find(name); it != m->functions.end())
    return it->second;
  // Every kernel of the launch plan was resolved when the artifact was
  // loaded; a launch of any other is refused.
  auto it = m->byName.find(name);
  if (it == m->byName.end()) {
    record("the host code launches kernel '" + std::string(name) + "' of module '" +
           m->name() + "', which the artifact's launch plan does not name");
    return nullptr;
  }
  m->functions[name] = it->second;
  return it->second;
}

__attribute__((visibility("default"))) void *mgpuStreamCreate() {
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  return d ? d->stream : nullptr;
}

__attribute__((visibility("default"))) void mgpuStreamDestroy(void *) {}

// MLIR's lowering synchronizes after every launch. Nothing needs it: every
// launch, and every reuse of a block by the device allocator, is ordered on
// the one stream; the host code never reads device memory (the fake-driver
// tests hold it to that); and the caller's finish() waits for the call and
// reports its first error. So a launch only queues, unless
// LOCKSTEP_CUDA_SYNC=1 asks for the wait (an error then names its kernel).
__attribute__((visibility("default"))) void mgpuStreamSynchronize(void *stream) {
  if (!syncEachLaunch())
    return;
  std::lock_guard<std::mutex> lock(mu);
  const CudaDriver *d = driverOrRecord();
  if (!d || !firstError.empty() || !flushLocked())
    return;
  if (CUresult r = d->cuStreamSynchronize(static_cast<CUstream>(stream)))
    record(d->describe(r, "a kernel (cuStreamSynchronize)"));
}

__attribute__((visibility("default"))) void
mgpuLaunchKernel(void *function, intptr_t gx, intptr_t gy, intptr_t gz, intptr_t bx,
                 intptr_t by, intptr_t bz, int32_t smem, void *stream, void **params,
                 void **extra, size_t) {
  std::lock_guard<std::mutex> lock(mu);
  const CudaDriver *d = driverOrRecord();
  if (!d || !firstError.empty() || !function)
    return;
  const bool events = cuda_profile::enabled() && cuda_profile::timesByEvents(*d);
  const bool wait = cuda_profile::enabled() && !events;
  auto t0 = cuda_profile::Clock::now();
  if (wait) {
    d->cuStreamSynchronize(static_cast<CUstream>(stream));
    t0 = cuda_profile::Clock::now();
  }
  if (events)
    cuda_profile::beforeKernel(*d);
  const unsigned dims[7] = {unsigned(gx), unsigned(gy), unsigned(gz), unsigned(bx),
                            unsigned(by), unsigned(bz), unsigned(smem)};
  std::string error;
  if (!queue(*d).launch(*d, static_cast<CUfunction>(function), dims, params, error))
    record(error);
  const uint64_t threads = uint64_t(gx * gy * gz * bx * by * bz);
  if (events)
    cuda_profile::afterKernel(*d, kernelNames[static_cast<CUfunction>(function)], threads);
  if (wait) {
    d->cuStreamSynchronize(static_cast<CUstream>(stream));
    cuda_profile::kernel(kernelNames[static_cast<CUfunction>(function)], threads,
                         cuda_profile::since(t0));
  }
}

__attribute__((visibility("default"))) void *lockstep_device_malloc(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu);
  if (currentArena)
    if (void *p = currentArena->allocate(bytes))
      return p;
  return blockAlloc(bytes);
}

__attribute__((visibility("default"))) void *lockstep_device_aligned_alloc(size_t,
                                                                          size_t bytes) {
  return lockstep_device_malloc(bytes); // device blocks are 256-byte aligned
}

__attribute__((visibility("default"))) void lockstep_device_free(void *ptr) {
  std::lock_guard<std::mutex> lock(mu);
  if (currentArena && currentArena->release(ptr))
    return;
  blockFree(ptr);
}

} // extern "C"

bool lockstep::rt::cudaLaunch(CUfunction f, const unsigned dims[7], void **params,
                              std::string &error) {
  std::lock_guard<std::mutex> lock(mu);
  const CudaDriver *d = cudaDriver(error);
  return d && queue(*d).launch(*d, f, dims, params, error);
}

bool lockstep::rt::flushCudaLaunches(std::string &error) {
  std::lock_guard<std::mutex> lock(mu);
  if (flushLocked())
    return true;
  error = std::exchange(firstError, std::string());
  return false;
}

/// Adds host time spent waiting for the device to the launch stats.
static void noteWait(cuda_profile::Clock::time_point t0) {
  double s = cuda_profile::since(t0);
  std::lock_guard<std::mutex> lock(mu);
  launches.waited(s);
}

LaunchGraphStats lockstep::rt::cudaLaunchStats() {
  std::lock_guard<std::mutex> lock(mu);
  return launches.stats();
}

void lockstep::rt::recordCudaError(const std::string &error) {
  std::lock_guard<std::mutex> lock(mu);
  record(error);
}

bool lockstep::rt::takeCudaError(std::string &error) {
  std::lock_guard<std::mutex> lock(mu);
  if (firstError.empty())
    return false;
  error = std::exchange(firstError, std::string());
  return true;
}

bool lockstep::rt::loadCudaModule(const LoadedArtifact &artifact, CpuModule &out,
                                  std::string &error) {
  if (!hasTarget(artifact.meta(), kCudaTarget)) {
    error = quoted(artifact.path()) + " is compiled for target " +
            quoted(artifact.meta().target) + ", not " + quoted(kCudaTarget) +
            " (compile it with --target=cuda)";
    return false;
  }
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  if (!d) {
    error = "--device cuda: " + why;
    return false;
  }
  for (const auto &[key, value] : artifact.meta().properties) {
    if (key != "cuda.chip")
      continue;
    int sm = 0;
    if (std::sscanf(value.c_str(), "sm_%d", &sm) != 1 || sm > d->major * 10 + d->minor) {
      error = quoted(artifact.path()) + " is compiled for " + quoted(value) + ", which " +
              d->name + " (sm_" + std::to_string(d->major * 10 + d->minor) +
              ") cannot run";
      return false;
    }
  }
  if (!d->makeCurrent(error))
    return false;
  KernelTable *table; // kept: the modules registered below point to it
  {
    std::lock_guard<std::mutex> lock(mu);
    table = kernelTables.emplace_back(std::make_unique<KernelTable>()).get();
  }
  for (const KernelText &k : artifact.kernels())
    table->ptx[k.name] = k.ptx;
  for (const KernelLaunch &l : artifact.launchPlan()) {
    if (!table->ptx.count(l.module)) {
      error = quoted(artifact.path()) + ": the launch plan names kernel module " +
              quoted(l.module) + ", which the kernels section lacks";
      return false;
    }
    table->planned[l.module].insert(l.function);
    table->nodes.emplace(l.module, l.node);
  }
  loadingKernels = table;
  bool loaded = loadCpuModule(artifact.cudaCode(), out, error);
  loadingKernels = nullptr;
  if (!loaded) {
    error = quoted(artifact.path()) + ": " + error;
    return false;
  }
  // Load every module the host code registered, and resolve every kernel the
  // plan names, now: no PTX is compiled while a step runs.
  std::lock_guard<std::mutex> lock(mu);
  for (LazyModule *m : std::exchange(table->registered, {})) {
    auto it = table->planned.find(m->name());
    if (it == table->planned.end())
      continue;
    for (const std::string &function : it->second)
      if (!resolveKernel(m, function))
        break;
  }
  if (!firstError.empty()) {
    error = quoted(artifact.path()) + ": " + std::exchange(firstError, std::string());
    return false;
  }
  return true;
}

void *CudaArena::allocate(size_t bytes) {
  std::optional<uint64_t> at = layout_.allocate(bytes);
  if (!at)
    return nullptr;
  if (cuda_profile::enabled())
    cuda_profile::arenaAllocation();
  return reinterpret_cast<void *>(uintptr_t(base_ + *at));
}

bool CudaArena::release(void *ptr) {
  auto p = uint64_t(reinterpret_cast<uintptr_t>(ptr));
  return base_ && p >= base_ && p < base_ + layout_.capacity() && layout_.release(p - base_);
}

void CudaArena::overflowed(uint64_t bytes) {
  overflowLive_ += bytes;
  demand_ = std::max(demand_, layout_.live() + overflowLive_);
}

void CudaArena::overflowFreed(uint64_t bytes) { overflowLive_ -= std::min(overflowLive_, bytes); }

void CudaArena::endCall() {
  uint64_t need = std::max(demand_, layout_.peak());
  if (need > layout_.capacity()) {
    // Grow between calls: the call's peak and a quarter more, in 2 MiB.
    // cuMemFree waits for the kernels that may still read the old block.
    std::string why;
    if (const CudaDriver *d = cudaDriver(why)) {
      if (base_)
        d->cuMemFree(CUdeviceptr(base_));
      base_ = 0;
      CUdeviceptr block = 0;
      uint64_t capacity = (need + need / 4 + (2u << 20) - 1) / (2u << 20) * (2u << 20);
      if (d->cuMemAlloc(&block, capacity) == 0) {
        base_ = uint64_t(block);
        layout_.reset(capacity);
        ++growths_;
        if (cuda_profile::enabled())
          cuda_profile::arenaGrowth(capacity);
      } else {
        base_ = 0;
        layout_.reset(0); // the calls take their memory from the block cache
      }
    }
  } else {
    layout_.reset(layout_.capacity());
  }
  demand_ = overflowLive_ = 0;
}

CudaArena::~CudaArena() {
  std::string why;
  if (base_)
    if (const CudaDriver *d = cudaDriver(why))
      d->cuMemFree(CUdeviceptr(base_));
}

CudaMemory::~CudaMemory() {
  std::lock_guard<std::mutex> lock(mu);
  for (auto &[i, p] : weights_)
    blockFree(p);
  for (void *p : perCall_)
    blockFree(p);
}

bool CudaMemory::allocate(uint64_t bytes, void *&device, std::string &error) {
  currentArena = &arena_; // the call has begun
  device = lockstep_device_malloc(bytes);
  if (!device) {
    if (!takeCudaError(error))
      error = "device allocation failed";
    return false;
  }
  perCall_.push_back(device);
  return true;
}

bool CudaMemory::copyIn(const void *host, uint64_t bytes, void *device, std::string &error) {
  if (!flushCudaLaunches(error))
    return false;
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  auto t0 = cuda_profile::Clock::now();
  if (bytes)
    if (CUresult r = d->cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(device), host, bytes)) {
      error = d->describe(r, "cuMemcpyHtoD");
      return false;
    }
  if (cuda_profile::enabled())
    cuda_profile::copy(bytes, cuda_profile::since(t0));
  return true;
}

bool CudaMemory::upload(const void *host, uint64_t bytes, void *&device,
                        std::string &error) {
  return allocate(bytes, device, error) && copyIn(host, bytes, device, error);
}

bool CudaMemory::weight(size_t index, const void *host, uint64_t bytes, void *&device,
                        std::string &error) {
  if (auto it = weights_.find(index); it != weights_.end()) {
    device = it->second;
    return true;
  }
  {
    // Kept for the artifact's lifetime: a block of its own, not the arena's.
    std::lock_guard<std::mutex> lock(mu);
    CudaArena *call = std::exchange(currentArena, nullptr);
    device = blockAlloc(bytes);
    currentArena = call;
  }
  if (!device) {
    if (!takeCudaError(error))
      error = "device allocation failed";
    return false;
  }
  weights_[index] = device;
  return copyIn(host, bytes, device, error);
}

bool CudaMemory::download(void *host, const void *device, uint64_t bytes,
                          std::string &error) {
  if (!flushCudaLaunches(error))
    return false;
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  auto t0 = cuda_profile::Clock::now();
  if (bytes)
    if (CUresult r = d->cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes)) {
      error = d->describe(r, "cuMemcpyDtoH");
      return false;
    }
  noteWait(t0);
  if (cuda_profile::enabled())
    cuda_profile::copy(bytes, cuda_profile::since(t0));
  return true;
}

namespace {
void freeHostBlock(void *p) {
  std::string why;
  if (const CudaDriver *d = cudaDriver(why))
    d->cuMemFreeHost(p);
}
} // namespace

DeviceMemory::HostBlock CudaMemory::hostBlock(uint64_t bytes) {
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  void *p = nullptr;
  if (!d || !bytes || d->cuMemHostAlloc(&p, size_t(bytes), 0) != 0 || !p)
    return {}; // ordinary memory instead
  return {p, freeHostBlock};
}

void CudaMemory::endCall() {
  std::lock_guard<std::mutex> lock(mu);
  flushLocked(); // before the arena may free its block
  // The arena frees its own blocks at once; blockFree passes over them.
  for (void *p : perCall_)
    blockFree(p);
  perCall_.clear();
  arena_.endCall();
  if (currentArena == &arena_)
    currentArena = nullptr;
}

bool CudaMemory::finish(std::string &error) {
  if (!flushCudaLaunches(error))
    return false;
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  auto t0 = cuda_profile::Clock::now();
  if (CUresult r = d->cuStreamSynchronize(d->stream)) {
    error = d->describe(r, "the step's kernels (cuStreamSynchronize)");
    return false;
  }
  noteWait(t0);
  if (cuda_profile::enabled()) {
    cuda_profile::finish(cuda_profile::since(t0));
    if (cuda_profile::timesByEvents(*d))
      cuda_profile::readKernelEvents(*d);
  }
  if (takeCudaError(error))
    return false;
  return true;
}
