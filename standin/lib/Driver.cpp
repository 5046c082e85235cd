//===- Driver.cpp - libcuda.so.1 of the stand-in ---------------------------===//
//
// Only the driver entry points deepum calls itself (profiler/cuda: device
// identity, context checks, host prefetch at exit,
// executor/cuda's capture check). Each forwards to the
// stand-in runtime, which holds the one model; CUresult and cudaError_t share
// the values of every code these return.
//
//===----------------------------------------------------------------------===//
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "deepum/standin/StandIn.h"

#include <cstdio>

// The primary context of device 0, as a handle nothing dereferences.
struct CUctx_st {
  int Device = 0;
};

namespace {

CUresult result(cudaError_t E) { return static_cast<CUresult>(E); }

CUctx_st PrimaryContext;

} // namespace

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  int Count = 0; // initialises the runtime's model, and CUDA_INJECTION64_PATH with it
  return result(cudaGetDeviceCount(&Count));
}

CUresult cuDriverGetVersion(int *Version) { return result(cudaDriverGetVersion(Version)); }

CUresult cuDeviceGetCount(int *Count) { return result(cudaGetDeviceCount(Count)); }

CUresult cuDeviceGet(CUdevice *Device, int Ordinal) {
  if (!Device)
    return CUDA_ERROR_INVALID_VALUE;
  if (Ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *Device = 0;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *Ctx) {
  if (!Ctx)
    return CUDA_ERROR_INVALID_VALUE;
  *Ctx = &PrimaryContext; // the runtime's primary context is always current
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *Device) {
  if (!Device)
    return CUDA_ERROR_INVALID_VALUE;
  int D = 0;
  if (cudaError_t E = cudaGetDevice(&D))
    return result(E);
  *Device = D;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) { return result(cudaDeviceSynchronize()); }

CUresult cuDeviceGetName(char *Name, int Len, CUdevice Device) {
  if (!Name || Len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp P{};
  if (cudaError_t E = cudaGetDeviceProperties(&P, Device))
    return result(E);
  std::snprintf(Name, static_cast<size_t>(Len), "%s", P.name);
  return CUDA_SUCCESS;
}

// A CUfunction and a CUkernel are the runtime's kernel object here.
CUresult cuFuncGetParamInfo(CUfunction Func, size_t Index, size_t *Offset, size_t *Size) {
  return static_cast<CUresult>(
      deepum_standin_param_info(reinterpret_cast<const void *>(Func), Index, Offset, Size));
}

CUresult cuKernelGetParamInfo(CUkernel Kernel, size_t Index, size_t *Offset, size_t *Size) {
  return static_cast<CUresult>(
      deepum_standin_param_info(reinterpret_cast<const void *>(Kernel), Index, Offset, Size));
}

CUresult cuDeviceTotalMem(size_t *Bytes, CUdevice Device) {
  if (!Bytes)
    return CUDA_ERROR_INVALID_VALUE;
  cudaDeviceProp P{};
  if (cudaError_t E = cudaGetDeviceProperties(&P, Device))
    return result(E);
  *Bytes = P.totalGlobalMem;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *Value, CUdevice_attribute Attr, CUdevice Device) {
  // The runtime's cudaDeviceAttr values are the driver's.
  return result(cudaDeviceGetAttribute(Value, static_cast<cudaDeviceAttr>(Attr), Device));
}

CUresult cuMemPrefetchAsync(CUdeviceptr Ptr, size_t Bytes, CUmemLocation Location,
                            unsigned int Flags, CUstream Stream) {
  cudaMemLocation L{};
  L.type = static_cast<cudaMemLocationType>(Location.type);
  L.id = Location.id;
  return result(cudaMemPrefetchAsync(reinterpret_cast<const void *>(Ptr), Bytes, L, Flags, Stream));
}

// Capture status: the runtime's, whose enum has the driver's values. The
// _ptsz version takes a null stream as the per-thread stream.
CUresult cuStreamIsCapturing(CUstream Stream, CUstreamCaptureStatus *Status) {
  cudaStreamCaptureStatus S{};
  const cudaError_t E = cudaStreamIsCapturing(Stream, Status ? &S : nullptr);
  if (E == cudaSuccess)
    *Status = static_cast<CUstreamCaptureStatus>(S);
  return result(E);
}

CUresult cuStreamIsCapturing_ptsz(CUstream Stream, CUstreamCaptureStatus *Status) {
  return cuStreamIsCapturing(Stream ? Stream : CU_STREAM_PER_THREAD, Status);
}

} // extern "C"
