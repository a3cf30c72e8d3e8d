//===- CudaDriver.h - The CUDA driver API, loaded at run time ---*- C++ -*-===//
//
// Lockstep has no link-time CUDA dependency: the driver (libcuda.so.1) is
// opened with dlopen the first time a CUDA artifact is used, and the few
// entry points the backend needs are looked up by name. On a machine without
// a driver or a GPU, `cudaDriver()` says why in one line and nothing else
// changes. The types are the driver API's own ABI (a CUresult is an int,
// handles are pointers, device pointers are 64-bit integers).
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_RUNTIME_BACKEND_CUDA_CUDADRIVER_H
#define LOCKSTEP_RUNTIME_BACKEND_CUDA_CUDADRIVER_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace lockstep::rt {

using CUresult = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphNode = struct CUgraphNode_st *;
using CUgraphExec = struct CUgraphExec_st *;
using CUevent = struct CUevent_st *;

/// CUDA_KERNEL_NODE_PARAMS (version 2, CUDA 12 and later).
struct CudaKernelNodeParams {
  CUfunction func;
  unsigned gridDimX, gridDimY, gridDimZ;
  unsigned blockDimX, blockDimY, blockDimZ;
  unsigned sharedMemBytes;
  void **kernelParams;
  void **extra;
  void *kern;
  CUcontext ctx;
};

/// The entry points for launching a call's kernels as one CUDA graph
/// (LaunchGraph.h). Optional: all null when the driver lacks one of them,
/// and the kernels are then launched one by one.
struct CudaGraphApi {
  CUresult (*cuFuncGetParamInfo)(CUfunction, size_t, size_t *, size_t *);
  CUresult (*cuGraphCreate)(CUgraph *, unsigned);
  CUresult (*cuGraphAddKernelNode)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                   const CudaKernelNodeParams *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecKernelNodeSetParams)(CUgraphExec, CUgraphNode,
                                             const CudaKernelNodeParams *);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);
  bool available() const { return cuGraphDestroy != nullptr; }
};

/// The event entry points, for the profile's device times
/// (LOCKSTEP_CUDA_PROFILE=events). Optional like the graphs': all null when
/// the driver lacks one of them.
struct CudaEventApi {
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventElapsedTime)(float *, CUevent, CUevent);
  bool available() const { return cuEventElapsedTime != nullptr; }
};

struct CudaDriver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(int *, int);
  CUresult (*cuDeviceGetName)(char *, int, int);
  CUresult (*cuDeviceGetAttribute)(int *, int, int);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, int);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuModuleLoadData)(CUmodule *, const void *);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, unsigned, CUstream, void **, void **);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*cuMemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*cuMemsetD8)(CUdeviceptr, unsigned char, size_t);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CudaGraphApi graphs = {};
  CudaEventApi events = {};

  int device = 0;
  CUcontext context = nullptr;
  CUstream stream = nullptr;
  std::string name;      // of device 0
  int major = 0, minor = 0; // its compute capability

  /// "CUDA error N (text) in WHAT".
  std::string describe(CUresult r, const char *what) const;
  /// Makes the context current on the calling thread.
  bool makeCurrent(std::string &error) const;
};

/// The driver, initialized with device 0's primary context and a stream, or
/// null with `why` set (no libcuda.so.1, no GPU, an initialization error).
/// Opened once; later calls return the same answer.
const CudaDriver *cudaDriver(std::string &why);

} // namespace lockstep::rt

#endif
