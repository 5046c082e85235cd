// Function attributes and occupancy on the stand-in (docs/standin.md, "What
// is modelled"): cudaFuncGetAttributes from the kernels' cubins (registers,
// static shared memory, launch bounds), cudaFuncSetAttribute,
// cudaOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags],
// cudaOccupancyAvailableDynamicSMemPerBlock and the header's
// cudaOccupancyMaxPotentialBlockSize, all from the device properties by the
// documented model. Built for sm_90 and run as the h100-pcie device. Exits 1
// on any mismatch.
#include "ApiTest.h"

#include <algorithm>

__global__ void small(float *p) { p[threadIdx.x] = 1.0f; }

__global__ void shared40k(float *p) {
  __shared__ float Buf[10240]; // 40 KiB
  Buf[threadIdx.x] = p[threadIdx.x];
  __syncthreads();
  p[threadIdx.x] = Buf[(threadIdx.x + 1) % 10240];
}

__global__ void __launch_bounds__(256) bounded(float *p) { p[threadIdx.x] *= 2.0f; }

__global__ void dynamicShared(float *p) {
  extern __shared__ float Dyn[];
  Dyn[threadIdx.x] = p[threadIdx.x];
  __syncthreads();
  p[threadIdx.x] = Dyn[threadIdx.x ^ 1];
}

// 64 accumulators live at once: more than 64 registers per thread, so the
// register file limits its blocks.
__global__ void heavy(const float *in, float *out, int n) {
  float acc[64];
#pragma unroll
  for (int j = 0; j < 64; ++j)
    acc[j] = in[j * 7 + threadIdx.x];
  for (int i = 0; i < n; ++i) {
#pragma unroll
    for (int j = 0; j < 64; ++j)
      acc[j] = acc[j] * in[i] + acc[(j + 1) % 64];
  }
  float s = 0;
#pragma unroll
  for (int j = 0; j < 64; ++j)
    s += acc[j] * static_cast<float>(j + 1);
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

static cudaDeviceProp Prop;

static int roundUp(int V, int To) { return (V + To - 1) / To * To; }

// The documented model, from the device properties and the function's
// attributes: blocks of `Threads` threads with `Dynamic` bytes of dynamic
// shared memory one SM holds.
static int expected(const cudaFuncAttributes &A, int Threads, int Dynamic) {
  if (Threads > A.maxThreadsPerBlock || Dynamic > A.maxDynamicSharedSizeBytes)
    return 0;
  const int Warps = (Threads + Prop.warpSize - 1) / Prop.warpSize;
  int Blocks = std::min(Prop.maxBlocksPerMultiProcessor,
                        Prop.maxThreadsPerMultiProcessor / Prop.warpSize / Warps);
  if (A.numRegs) {
    const int WarpRegs = roundUp(A.numRegs * Prop.warpSize, 256);
    Blocks = std::min(Blocks, Prop.regsPerMultiprocessor / 4 / WarpRegs * 4 / Warps);
  }
  const int Shared = roundUp(static_cast<int>(A.sharedSizeBytes) + Dynamic +
                                 static_cast<int>(Prop.reservedSharedMemPerBlock),
                             128);
  return std::min(Blocks, static_cast<int>(Prop.sharedMemPerMultiprocessor) / Shared);
}

static int occupancy(const void *F, int Threads, size_t Dynamic = 0) {
  int Blocks = -1;
  CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&Blocks, F, Threads, Dynamic));
  return Blocks;
}

static cudaFuncAttributes attributes(const void *F) {
  cudaFuncAttributes A{};
  CHECK(cudaFuncGetAttributes(&A, F));
  return A;
}

// Every block size and a few dynamic sizes against the model.
static void sweep(const void *F, const char *Name) {
  const cudaFuncAttributes A = attributes(F);
  int Wrong = 0;
  for (int Threads = 1; Threads <= 1024; Threads += (Threads < 64 ? 1 : 31))
    for (int Dynamic : {0, 1000, 20 << 10, 48 << 10, 100 << 10}) {
      const int Got = occupancy(F, Threads, Dynamic);
      int Flagged = -1;
      CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
          &Flagged, F, Threads, Dynamic, cudaOccupancyDisableCachingOverride));
      if (Got != expected(A, Threads, Dynamic) || Flagged != Got) {
        if (++Wrong <= 3)
          std::printf("FAIL %s: %d threads, %d dynamic: %d blocks (flagged %d), expected %d\n",
                      Name, Threads, Dynamic, Got, Flagged, expected(A, Threads, Dynamic));
      }
    }
  apitest::Failures += Wrong;
}

int main() {
  CHECK(cudaGetDeviceProperties(&Prop, 0));
  EXPECT_EQ(Prop.major * 10 + Prop.minor, 90); // the h100-pcie device: sm_90 cubins apply
  const int Sms = Prop.multiProcessorCount;
  const void *Small = reinterpret_cast<const void *>(small);
  const void *Shared40k = reinterpret_cast<const void *>(shared40k);
  const void *Bounded = reinterpret_cast<const void *>(bounded);
  const void *Dynamic = reinterpret_cast<const void *>(dynamicShared);
  const void *Heavy = reinterpret_cast<const void *>(heavy);

  // What the cubins say.
  cudaFuncAttributes A = attributes(Small);
  EXPECT(A.numRegs >= 1 && A.numRegs <= 32);
  EXPECT_EQ(A.sharedSizeBytes, 0);
  EXPECT_EQ(A.localSizeBytes, 0);
  EXPECT_EQ(A.maxThreadsPerBlock, 1024);
  EXPECT_EQ(A.binaryVersion, 90);
  EXPECT_EQ(A.ptxVersion, 90);
  EXPECT_EQ(A.maxDynamicSharedSizeBytes, 48 << 10);
  EXPECT_EQ(A.preferredShmemCarveout, -1);
  A = attributes(Shared40k);
  EXPECT_EQ(A.sharedSizeBytes, 40 << 10);
  EXPECT_EQ(A.maxDynamicSharedSizeBytes, 8 << 10);
  EXPECT_EQ(attributes(Bounded).maxThreadsPerBlock, 256);
  A = attributes(Heavy);
  EXPECT(A.numRegs > 64);
  const int HeavyThreads = 65536 / roundUp(A.numRegs * 32, 256) * 32;
  EXPECT_EQ(A.maxThreadsPerBlock, HeavyThreads);
  EXPECT(HeavyThreads < 1024);
  // cudaGetFuncBySymbol's handle names the same function.
  cudaFunction_t Handle = nullptr;
  CHECK(cudaGetFuncBySymbol(&Handle, Small));
  EXPECT_EQ(attributes(Handle).numRegs, attributes(Small).numRegs);

  // Occupancy: fixed points of the model...
  EXPECT_EQ(occupancy(Small, 1024), 2);    // threads per SM
  EXPECT_EQ(occupancy(Small, 64), 32);     // blocks per SM
  EXPECT_EQ(occupancy(Small, 96), 21);     // whole warps
  EXPECT_EQ(occupancy(Small, 33), 32);     // 2 warps a block
  EXPECT_EQ(occupancy(Shared40k, 256), 5); // 228 KiB / (40 + 1 KiB)
  EXPECT_EQ(occupancy(Bounded, 512), 0);   // beyond its launch bounds
  EXPECT_EQ(occupancy(Bounded, 256), 8);
  EXPECT_EQ(occupancy(Heavy, 1024), 0); // one block's registers exceed the SM's
  EXPECT_EQ(occupancy(Heavy, HeavyThreads), 1);
  EXPECT_EQ(occupancy(Dynamic, 128, 50 << 10), 0); // beyond 48 KiB without opting in
  // ... and every block size and dynamic size against it.
  sweep(Small, "small");
  sweep(Shared40k, "shared40k");
  sweep(Bounded, "bounded");
  sweep(Heavy, "heavy");

  // cudaFuncSetAttribute: opting in to more dynamic shared memory.
  CHECK(cudaFuncSetAttribute(Dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, 100 << 10));
  EXPECT_EQ(attributes(Dynamic).maxDynamicSharedSizeBytes, 100 << 10);
  EXPECT_EQ(occupancy(Dynamic, 128, 50 << 10), 4); // 228 KiB / 51 KiB
  EXPECT_EQ(occupancy(Dynamic, 128, 100 << 10), 2);
  sweep(Dynamic, "dynamicShared");
  EXPECT_ERROR(cudaFuncSetAttribute(Dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(Prop.sharedMemPerBlockOptin) + 1),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaFuncSetAttribute(Shared40k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                    static_cast<int>(Prop.sharedMemPerBlockOptin) - (40 << 10) + 1),
               cudaErrorInvalidValue);
  CHECK(cudaFuncSetAttribute(Shared40k, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(Prop.sharedMemPerBlockOptin) - (40 << 10)));
  EXPECT_ERROR(cudaFuncSetAttribute(Dynamic, cudaFuncAttributeMaxDynamicSharedMemorySize, -1),
               cudaErrorInvalidValue);
  CHECK(cudaFuncSetAttribute(Small, cudaFuncAttributePreferredSharedMemoryCarveout, 50));
  EXPECT_EQ(attributes(Small).preferredShmemCarveout, 50);
  EXPECT_EQ(occupancy(Small, 1024), 2); // a hint: not modelled
  EXPECT_ERROR(cudaFuncSetAttribute(Small, cudaFuncAttributePreferredSharedMemoryCarveout, 101),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaFuncSetAttribute(Small, cudaFuncAttributeRequiredClusterWidth, 2),
               cudaErrorNotSupported);
  EXPECT_ERROR(cudaFuncSetAttribute(Small, static_cast<cudaFuncAttribute>(99), 0),
               cudaErrorInvalidValue);

  // cudaOccupancyAvailableDynamicSMemPerBlock: the most dynamic shared memory
  // for that many blocks, within the kernel's maximum.
  size_t Avail = 0;
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&Avail, Dynamic, 4, 128));
  EXPECT_EQ(Avail,
            (Prop.sharedMemPerMultiprocessor / 4 / 128 * 128) - Prop.reservedSharedMemPerBlock);
  EXPECT(occupancy(Dynamic, 128, Avail) >= 4);
  EXPECT(occupancy(Dynamic, 128, Avail + 128) < 4);
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&Avail, Dynamic, 1, 128));
  EXPECT_EQ(Avail, 100 << 10); // the kernel's maximum
  CHECK(cudaOccupancyAvailableDynamicSMemPerBlock(&Avail, Dynamic, 64, 128));
  EXPECT_EQ(Avail, 0); // more blocks than an SM holds

  // The header's cudaOccupancyMaxPotentialBlockSize, over the calls above.
  int MinGrid = 0, Block = 0;
  CHECK(cudaOccupancyMaxPotentialBlockSize(&MinGrid, &Block, small));
  EXPECT_EQ(Block, 1024);
  EXPECT_EQ(MinGrid, 2 * Sms);
  CHECK(cudaOccupancyMaxPotentialBlockSize(&MinGrid, &Block, bounded));
  EXPECT_EQ(Block, 256);
  EXPECT_EQ(MinGrid, 8 * Sms);
  CHECK(cudaOccupancyMaxPotentialBlockSize(&MinGrid, &Block, heavy));
  EXPECT_EQ(Block, HeavyThreads);
  EXPECT_EQ(MinGrid, Sms);
  CHECK(cudaOccupancyMaxPotentialBlockSize(&MinGrid, &Block, dynamicShared, 100 << 10));
  EXPECT_EQ(Block, 1024);
  EXPECT_EQ(MinGrid, 2 * Sms);

  // Refusals.
  int Blocks = 0;
  EXPECT_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(nullptr, Small, 32, 0),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&Blocks, &Prop, 32, 0),
               cudaErrorInvalidDeviceFunction);
  EXPECT_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&Blocks, Small, 0, 0),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&Blocks, Small, 32, 0, 2),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaFuncGetAttributes(&A, &Prop), cudaErrorInvalidDeviceFunction);
  EXPECT_ERROR(cudaFuncGetAttributes(nullptr, Small), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaFuncSetAttribute(&Prop, cudaFuncAttributePreferredSharedMemoryCarveout, 0),
               cudaErrorInvalidDeviceFunction);
  EXPECT_ERROR(cudaOccupancyAvailableDynamicSMemPerBlock(&Avail, Small, 0, 32),
               cudaErrorInvalidValue);
  return apitest::finish("ApiOccupancy");
}
