//===- CudaDriver.cpp - The CUDA driver API, loaded at run time -----------===//
#include "lockstep/Runtime/Backend/Cuda/CudaDriver.h"

#include <dlfcn.h>
#include <mutex>

using namespace lockstep::rt;

namespace {

constexpr int kAttrComputeMajor = 75; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
constexpr int kAttrComputeMinor = 76; // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR

template <typename F> bool lookup(void *lib, const char *name, F &fn, std::string &why) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  if (!fn)
    why = std::string("libcuda.so.1 has no '") + name + "'";
  return fn != nullptr;
}

/// The graph entry points, all or none.
void lookupGraphs(void *lib, CudaGraphApi &g) {
  std::string ignored;
  if (!lookup(lib, "cuFuncGetParamInfo", g.cuFuncGetParamInfo, ignored) ||
      !lookup(lib, "cuGraphCreate", g.cuGraphCreate, ignored) ||
      !lookup(lib, "cuGraphAddKernelNode_v2", g.cuGraphAddKernelNode, ignored) ||
      !lookup(lib, "cuGraphInstantiateWithFlags", g.cuGraphInstantiateWithFlags, ignored) ||
      !lookup(lib, "cuGraphLaunch", g.cuGraphLaunch, ignored) ||
      !lookup(lib, "cuGraphExecKernelNodeSetParams_v2", g.cuGraphExecKernelNodeSetParams,
              ignored) ||
      !lookup(lib, "cuGraphExecDestroy", g.cuGraphExecDestroy, ignored) ||
      !lookup(lib, "cuGraphDestroy", g.cuGraphDestroy, ignored))
    g = CudaGraphApi{};
}

/// The event entry points, all or none.
void lookupEvents(void *lib, CudaEventApi &e) {
  std::string ignored;
  if (!lookup(lib, "cuEventCreate", e.cuEventCreate, ignored) ||
      !lookup(lib, "cuEventRecord", e.cuEventRecord, ignored) ||
      !lookup(lib, "cuEventElapsedTime", e.cuEventElapsedTime, ignored))
    e = CudaEventApi{};
}

CudaDriver driver;
std::string failure;
bool ready = false;

void open() {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    failure = "no CUDA driver on this machine (" + std::string(e ? e : "libcuda.so.1 not found") +
              ")";
    return;
  }
  CudaDriver &d = driver;
  std::string &w = failure;
  if (!lookup(lib, "cuInit", d.cuInit, w) ||
      !lookup(lib, "cuDeviceGetCount", d.cuDeviceGetCount, w) ||
      !lookup(lib, "cuDeviceGet", d.cuDeviceGet, w) ||
      !lookup(lib, "cuDeviceGetName", d.cuDeviceGetName, w) ||
      !lookup(lib, "cuDeviceGetAttribute", d.cuDeviceGetAttribute, w) ||
      !lookup(lib, "cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain, w) ||
      !lookup(lib, "cuCtxSetCurrent", d.cuCtxSetCurrent, w) ||
      !lookup(lib, "cuModuleLoadData", d.cuModuleLoadData, w) ||
      !lookup(lib, "cuModuleUnload", d.cuModuleUnload, w) ||
      !lookup(lib, "cuModuleGetFunction", d.cuModuleGetFunction, w) ||
      !lookup(lib, "cuLaunchKernel", d.cuLaunchKernel, w) ||
      !lookup(lib, "cuStreamCreate", d.cuStreamCreate, w) ||
      !lookup(lib, "cuStreamSynchronize", d.cuStreamSynchronize, w) ||
      !lookup(lib, "cuMemAlloc_v2", d.cuMemAlloc, w) ||
      !lookup(lib, "cuMemFree_v2", d.cuMemFree, w) ||
      !lookup(lib, "cuMemcpyHtoD_v2", d.cuMemcpyHtoD, w) ||
      !lookup(lib, "cuMemcpyDtoH_v2", d.cuMemcpyDtoH, w) ||
      !lookup(lib, "cuMemsetD8_v2", d.cuMemsetD8, w) ||
      !lookup(lib, "cuMemHostAlloc", d.cuMemHostAlloc, w) ||
      !lookup(lib, "cuMemFreeHost", d.cuMemFreeHost, w) ||
      !lookup(lib, "cuGetErrorString", d.cuGetErrorString, w))
    return;
  lookupGraphs(lib, d.graphs);
  lookupEvents(lib, d.events);
  CUresult r = d.cuInit(0);
  if (r) {
    failure = d.describe(r, "cuInit") + ": no usable GPU";
    return;
  }
  int count = 0;
  if ((r = d.cuDeviceGetCount(&count)) || count == 0) {
    failure = r ? d.describe(r, "cuDeviceGetCount") : "the CUDA driver sees no GPU";
    return;
  }
  char name[256] = {};
  if ((r = d.cuDeviceGet(&d.device, 0)) || (r = d.cuDeviceGetName(name, 255, d.device)) ||
      (r = d.cuDeviceGetAttribute(&d.major, kAttrComputeMajor, d.device)) ||
      (r = d.cuDeviceGetAttribute(&d.minor, kAttrComputeMinor, d.device)) ||
      (r = d.cuDevicePrimaryCtxRetain(&d.context, d.device)) ||
      (r = d.cuCtxSetCurrent(d.context)) || (r = d.cuStreamCreate(&d.stream, 0))) {
    failure = d.describe(r, "initializing device 0");
    return;
  }
  d.name = name;
  ready = true;
}

} // namespace

std::string CudaDriver::describe(CUresult r, const char *what) const {
  const char *text = nullptr;
  if (cuGetErrorString)
    cuGetErrorString(r, &text);
  return "CUDA error " + std::to_string(r) + " (" + (text ? text : "unknown") + ") in " + what;
}

bool CudaDriver::makeCurrent(std::string &error) const {
  if (CUresult r = cuCtxSetCurrent(context)) {
    error = describe(r, "cuCtxSetCurrent");
    return false;
  }
  return true;
}

const CudaDriver *lockstep::rt::cudaDriver(std::string &why) {
  static std::once_flag once;
  std::call_once(once, open);
  if (!ready) {
    why = failure;
    return nullptr;
  }
  return &driver;
}
