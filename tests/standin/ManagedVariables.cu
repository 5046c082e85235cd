// __managed__ variables on the CUDA stand-in (docs/standin.md, "What is
// modelled"): nvcc's host code reaches each through a pointer the runtime
// sets at registration (__cudaRegisterManagedVar) to managed memory holding
// the variable's initial value from the cubin. Checked here: the initial
// values, host writes, the memory's kind, and its residency moving with a
// prefetch. Prints "ok" and exits 0, or names the first mismatch and exits 1.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>

__managed__ int Counter = 7;
__managed__ float Weights[4] = {1.5f, 2.5f, 3.5f, 4.5f};
__managed__ double Zeroed[1024]; // no initialiser: zeros, in .nv.global

__global__ void touch() { Counter += Weights[threadIdx.x] > 0; }

static int fail(const char *What) {
  std::printf("FAIL %s\n", What);
  return 1;
}

int main() {
  if (Counter != 7)
    return fail("Counter's initial value is not 7");
  const float Want[4] = {1.5f, 2.5f, 3.5f, 4.5f};
  if (std::memcmp(Weights, Want, sizeof(Want)) != 0)
    return fail("Weights' initial values are not the initialiser's");
  for (double D : Zeroed)
    if (D != 0)
      return fail("Zeroed is not zero");
  Counter = 41;
  Weights[2] = -1;
  if (Counter != 41 || Weights[2] != -1)
    return fail("host writes did not stay");
  cudaPointerAttributes A{};
  if (cudaPointerGetAttributes(&A, &Counter) != cudaSuccess || A.type != cudaMemoryTypeManaged)
    return fail("Counter is not managed memory");
  if (cudaPointerGetAttributes(&A, Zeroed) != cudaSuccess || A.type != cudaMemoryTypeManaged)
    return fail("Zeroed is not managed memory");
  // Its pages go to the GPU and back as any managed memory's.
  size_t FreeBefore = 0, FreeAfter = 0, Total = 0;
  if (cudaMemGetInfo(&FreeBefore, &Total) != cudaSuccess)
    return fail("cudaMemGetInfo");
  cudaMemLocation Dev{};
  Dev.type = cudaMemLocationTypeDevice;
  Dev.id = 0;
  if (cudaMemPrefetchAsync(Zeroed, sizeof(Zeroed), Dev, 0, nullptr) != cudaSuccess ||
      cudaDeviceSynchronize() != cudaSuccess)
    return fail("prefetch of Zeroed to the device");
  if (cudaMemGetInfo(&FreeAfter, &Total) != cudaSuccess || FreeAfter >= FreeBefore)
    return fail("the prefetch left no Zeroed page on the device");
  // A kernel that names the variables in its code, not its arguments, runs.
  touch<<<1, 4>>>();
  if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess)
    return fail("a kernel using the variables did not run");
  if (Counter != 41)
    return fail("Counter changed without a twin to compute it");
  std::printf("ok\n");
  return 0;
}
