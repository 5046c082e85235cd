//===- NvccEntryPoints.h - nvcc's host-side entry points, for the tests ----===//
//
// The registration and launch calls nvcc emits for `-cudart shared`
// (crt/host_runtime.h and crt/device_functions.h declare them for
// nvcc-compiled code only); the stand-in's tests call them directly.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_TESTS_STANDIN_NVCCENTRYPOINTS_H
#define DEEPUM_TESTS_STANDIN_NVCCENTRYPOINTS_H

#include <cuda_runtime_api.h>

extern "C" {
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);
unsigned __cudaPushCallConfiguration(dim3 gridDim, dim3 blockDim, size_t sharedMem,
                                     struct CUstream_st *stream);
cudaError_t __cudaPopCallConfiguration(dim3 *gridDim, dim3 *blockDim, size_t *sharedMem,
                                       void *stream);
// CUDA 13's <<<>>>: the kernel handle once, then the launch.
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *hostFun);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 gridDim, dim3 blockDim, void **args,
                               size_t sharedMem, cudaStream_t stream);
}

#endif
