// A kernel in a compressed fat binary (nvcc -Xfatbin -compress-all, as
// PyTorch is built), without a twin: the stand-in cannot read its parameter
// layout, so it cannot model what the kernel touches, and says so once on
// standard error (standin_compressed_kernel_is_said_once). Its launches still
// succeed, as on a GPU.
#include <cuda_runtime.h>

#include <cstdio>

__global__ void addOne(float *P) { P[threadIdx.x] += 1; }

int main() {
  float *P = nullptr;
  if (cudaMallocManaged(&P, 1024) != cudaSuccess)
    return 1;
  addOne<<<1, 4>>>(P);
  addOne<<<1, 4>>>(P);
  const cudaError_t E = cudaDeviceSynchronize();
  std::printf("synchronize: %s\n", cudaGetErrorName(E));
  return E == cudaSuccess ? 0 : 1;
}
