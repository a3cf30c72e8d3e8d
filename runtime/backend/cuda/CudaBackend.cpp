//===- CudaBackend.cpp - Running a CUDA artifact --------------------------===//
#include "lockstep/Runtime/Backend/Cuda/CudaBackend.h"

#include "lockstep/Runtime/Backend/Cuda/CudaDriver.h"
#include "lockstep/Runtime/Backend/Cuda/CudaProfile.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <vector>

using namespace lockstep::rt;

namespace {

/// A module registered by an object's constructor, loaded at its first use.
/// A CUDA artifact's kernel modules by name (its kernels section), kept for
/// the process's life: the host object's modules point to it.
using KernelTable = std::unordered_map<std::string, std::string>;

/// The table of the artifact whose host object is being loaded: its
/// constructors register its modules (mgpuModuleLoadJIT) inside dlopen.
thread_local const KernelTable *loadingKernels = nullptr;

/// Every table made, owned here (freed at exit, after the modules).
std::vector<std::unique_ptr<KernelTable>> kernelTables;

struct LazyModule {
  const char *ptx = nullptr; // "lockstep-kernel:NAME"
  const KernelTable *table = nullptr;
  int index = 0; // in registration order, for the profile
  CUmodule module = nullptr;
  std::unordered_map<const char *, CUfunction> functions; // by name pointer
};

std::mutex mu;
std::string firstError;
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

} // namespace

// The hooks that CUDA artifacts' host code calls (exported by lockstep-run).
extern "C" {

__attribute__((visibility("default"))) void *mgpuModuleLoadJIT(void *data, int) {
  auto *m = new LazyModule;
  m->ptx = static_cast<const char *>(data);
  m->table = loadingKernels;
  m->index = modulesRegistered++;
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
    if (const CudaDriver *d = cudaDriver(why))
      d->cuModuleUnload(m->module);
  delete m;
}

__attribute__((visibility("default"))) void *mgpuModuleGetFunction(void *module,
                                                                  const char *name) {
  std::lock_guard<std::mutex> lock(mu);
  auto *m = static_cast<LazyModule *>(module);
  if (auto it = m->functions.find(name); it != m->functions.end())
    return it->second;
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
    std::string_view key(m->ptx);
    const std::string *ptx = nullptr;
    if (m->table && key.substr(0, std::strlen(kKernelKeyPrefix)) == kKernelKeyPrefix)
      if (auto it = m->table->find(std::string(key.substr(std::strlen(kKernelKeyPrefix))));
          it != m->table->end())
        ptx = &it->second;
    if (!ptx) {
      record("kernel module '" + std::string(key.substr(0, 80)) +
             "' is not in the artifact's kernels section");
      return nullptr;
    }
    auto t0 = cuda_profile::Clock::now();
    if (CUresult r = d->cuModuleLoadData(&m->module, ptx->c_str())) {
      record(d->describe(r, "loading a kernel module (cuModuleLoadData)"));
      return nullptr;
    }
    if (cuda_profile::enabled())
      cuda_profile::moduleLoad(cuda_profile::since(t0));
  }
  CUfunction f = nullptr;
  if (CUresult r = d->cuModuleGetFunction(&f, m->module, name)) {
    record(d->describe(r, "cuModuleGetFunction") + " for kernel '" + name + "'");
    return nullptr;
  }
  m->functions[name] = f;
  if (cuda_profile::enabled())
    kernelNames[f] = "module " + std::to_string(m->index) + " " + name;
  return f;
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
  static const bool wait = [] {
    const char *e = std::getenv("LOCKSTEP_CUDA_SYNC");
    return e && *e == '1';
  }();
  if (!wait)
    return;
  std::lock_guard<std::mutex> lock(mu);
  const CudaDriver *d = driverOrRecord();
  if (!d || !firstError.empty())
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
  const bool profile = cuda_profile::enabled();
  auto t0 = cuda_profile::Clock::now();
  if (profile) {
    d->cuStreamSynchronize(static_cast<CUstream>(stream));
    t0 = cuda_profile::Clock::now();
  }
  if (CUresult r = d->cuLaunchKernel(static_cast<CUfunction>(function), unsigned(gx),
                                     unsigned(gy), unsigned(gz), unsigned(bx), unsigned(by),
                                     unsigned(bz), unsigned(smem),
                                     static_cast<CUstream>(stream), params, extra))
    record(d->describe(r, "cuLaunchKernel"));
  if (profile) {
    d->cuStreamSynchronize(static_cast<CUstream>(stream));
    cuda_profile::kernel(kernelNames[static_cast<CUfunction>(function)],
                         uint64_t(gx * gy * gz * bx * by * bz), cuda_profile::since(t0));
  }
}

__attribute__((visibility("default"))) void *lockstep_device_malloc(size_t bytes) {
  std::lock_guard<std::mutex> lock(mu);
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
  return reinterpret_cast<void *>(p);
}

__attribute__((visibility("default"))) void *lockstep_device_aligned_alloc(size_t,
                                                                          size_t bytes) {
  return lockstep_device_malloc(bytes); // device blocks are 256-byte aligned
}

__attribute__((visibility("default"))) void lockstep_device_free(void *ptr) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = liveBlocks.find(reinterpret_cast<CUdeviceptr>(ptr));
  if (it == liveBlocks.end())
    return;
  freeBlocks.insert({it->second, it->first});
  liveBlocks.erase(it);
}

} // extern "C"

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
  if (artifact.meta().target != kCudaTarget) {
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
  if (artifact.meta().target == kCudaTarget && artifact.kernels().empty()) {
    error = quoted(artifact.path()) + " is compiled for cuda but has no kernels";
    return false;
  }
  if (!d->makeCurrent(error))
    return false;
  KernelTable *table; // kept: the modules registered below point to it
  {
    std::lock_guard<std::mutex> lock(mu);
    table = kernelTables.emplace_back(std::make_unique<KernelTable>()).get();
  }
  for (const KernelText &k : artifact.kernels())
    (*table)[k.name] = k.ptx;
  loadingKernels = table;
  bool loaded = loadCpuModule(artifact.code(), out, error);
  loadingKernels = nullptr;
  if (!loaded) {
    error = quoted(artifact.path()) + ": " + error;
    return false;
  }
  return true;
}

CudaMemory::~CudaMemory() {
  for (auto &[i, p] : weights_)
    lockstep_device_free(p);
  for (void *p : perCall_)
    lockstep_device_free(p);
}

bool CudaMemory::allocate(uint64_t bytes, void *&device, std::string &error) {
  device = lockstep_device_malloc(bytes);
  if (!device) {
    if (!takeCudaError(error))
      error = "device allocation failed";
    return false;
  }
  perCall_.push_back(device);
  return true;
}

bool CudaMemory::upload(const void *host, uint64_t bytes, void *&device,
                        std::string &error) {
  if (!allocate(bytes, device, error))
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

bool CudaMemory::weight(size_t index, const void *host, uint64_t bytes, void *&device,
                        std::string &error) {
  if (auto it = weights_.find(index); it != weights_.end()) {
    device = it->second;
    return true;
  }
  if (!upload(host, bytes, device, error))
    return false;
  perCall_.pop_back(); // kept for the artifact's lifetime, not the call's
  weights_[index] = device;
  return true;
}

bool CudaMemory::download(void *host, const void *device, uint64_t bytes,
                          std::string &error) {
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  auto t0 = cuda_profile::Clock::now();
  if (bytes)
    if (CUresult r = d->cuMemcpyDtoH(host, reinterpret_cast<CUdeviceptr>(device), bytes)) {
      error = d->describe(r, "cuMemcpyDtoH");
      return false;
    }
  if (cuda_profile::enabled())
    cuda_profile::copy(bytes, cuda_profile::since(t0));
  return true;
}

void CudaMemory::endCall() {
  for (void *p : perCall_)
    lockstep_device_free(p);
  perCall_.clear();
}

bool CudaMemory::finish(std::string &error) {
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  auto t0 = cuda_profile::Clock::now();
  if (CUresult r = d->cuStreamSynchronize(d->stream)) {
    error = d->describe(r, "the step's kernels (cuStreamSynchronize)");
    return false;
  }
  if (cuda_profile::enabled())
    cuda_profile::finish(cuda_profile::since(t0));
  if (takeCudaError(error))
    return false;
  return true;
}
