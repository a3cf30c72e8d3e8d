//===- CudaServing.cpp - KV cache pools and row scatter on a GPU ----------===//
//
// CudaMemory's serving half (DeviceServing, Backend/Backend.h): pools are
// device memory, zeroed by the driver; swap copies whole blocks between them
// and host memory; and a step's new K/V rows go into the pools through the
// runtime's own kernel, so that the host never reads or writes a pool.
//
//===----------------------------------------------------------------------===//
#include "lockstep/Runtime/Backend/Cuda/CudaBackend.h"

#include "lockstep/Runtime/Backend/Cuda/CudaDriver.h"

#include <algorithm>
#include <mutex>

using namespace lockstep::rt;

namespace {
#include "backend/cuda/scatter_rows.inc"

const CudaDriver *driverFor(const char *what, std::string &error) {
  std::string why;
  const CudaDriver *d = cudaDriver(why);
  if (!d)
    error = std::string(what) + ": " + why;
  return d;
}

/// lockstep_scatter_rows, loaded at its first use.
CUfunction scatterKernel(const CudaDriver &d, std::string &error) {
  static std::mutex mu;
  static CUfunction fn = nullptr;
  std::lock_guard<std::mutex> lock(mu);
  if (fn)
    return fn;
  CUmodule module = nullptr;
  if (CUresult r = d.cuModuleLoadData(&module, kPtx_scatter_rows)) {
    error = d.describe(r, "loading the runtime's scatter_rows kernel");
    return nullptr;
  }
  if (CUresult r = d.cuModuleGetFunction(&fn, module, "lockstep_scatter_rows")) {
    error = d.describe(r, "cuModuleGetFunction (lockstep_scatter_rows)");
    fn = nullptr;
  }
  return fn;
}

} // namespace

float *CudaMemory::allocateZeroed(uint64_t bytes, std::string &error) {
  const CudaDriver *d = driverFor("KV cache pool", error);
  if (!d || !d->makeCurrent(error))
    return nullptr;
  CUdeviceptr p = 0;
  // cuMemAlloc's blocks are 256-byte aligned, beyond kPoolAlignment.
  if (CUresult r = d->cuMemAlloc(&p, std::max<uint64_t>(bytes, 256))) {
    error = d->describe(r, "cuMemAlloc");
    return nullptr;
  }
  if (CUresult r = d->cuMemsetD8(p, 0, bytes)) {
    error = d->describe(r, "cuMemsetD8");
    d->cuMemFree(p);
    return nullptr;
  }
  return reinterpret_cast<float *>(p);
}

void CudaMemory::release(float *pool) {
  std::string why;
  if (!flushCudaLaunches(why))
    recordCudaError(why);
  if (const CudaDriver *d = cudaDriver(why))
    d->cuMemFree(reinterpret_cast<CUdeviceptr>(pool));
}

namespace {

/// A swap copy between pool and host memory; a failure is recorded for the
/// next step to report.
bool swapCopy(bool out, void *dst, const void *src, uint64_t bytes) {
  std::string error;
  if (!flushCudaLaunches(error)) {
    recordCudaError(error);
    return false;
  }
  const CudaDriver *d = driverFor(out ? "swap out" : "swap in", error);
  CUresult r = !d   ? 0
               : out ? d->cuMemcpyDtoH(dst, reinterpret_cast<CUdeviceptr>(src), bytes)
                     : d->cuMemcpyHtoD(reinterpret_cast<CUdeviceptr>(dst), src, bytes);
  if (d && r)
    error = d->describe(r, out ? "swapping KV blocks out (cuMemcpyDtoH)"
                               : "swapping KV blocks in (cuMemcpyHtoD)");
  if (!error.empty())
    recordCudaError(error);
  return error.empty();
}

} // namespace

bool CudaMemory::toHost(float *host, const float *pool, uint64_t bytes) {
  return swapCopy(true, host, pool, bytes);
}

bool CudaMemory::fromHost(float *pool, const float *host, uint64_t bytes) {
  return swapCopy(false, pool, host, bytes);
}

bool CudaMemory::scatterRows(const float *rows, float *pool, const int64_t *slots,
                             int64_t tokens, int64_t heads, int64_t dim,
                             std::string &error) {
  int64_t total = tokens * heads * dim;
  if (total <= 0)
    return true;
  const CudaDriver *d = driverFor("writing KV rows", error);
  if (!d)
    return false;
  CUfunction fn = scatterKernel(*d, error);
  if (!fn)
    return false;
  uint64_t args[6] = {reinterpret_cast<uint64_t>(rows), reinterpret_cast<uint64_t>(pool),
                      reinterpret_cast<uint64_t>(slots), uint64_t(heads), uint64_t(tokens),
                      uint64_t(dim)};
  void *params[6];
  for (int i = 0; i < 6; ++i)
    params[i] = &args[i];
  constexpr int64_t kThreads = 256;
  unsigned blocks = unsigned(std::min<int64_t>((total + kThreads - 1) / kThreads, 1 << 16));
  const unsigned dims[7] = {blocks, 1, 1, kThreads, 1, 1, 0};
  if (!cudaLaunch(fn, dims, params, error)) {
    error += " (lockstep_scatter_rows)";
    return false;
  }
  return true;
}
