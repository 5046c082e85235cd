// Stream-ordered allocation and the device's memory pool on the stand-in
// (docs/standin.md, "What is modelled"): cudaMallocAsync / cudaFreeAsync /
// cudaMallocFromPoolAsync, the pool's reserved and used memory, reuse of
// freed memory in stream order under each reuse policy, the release
// threshold at synchronisation, cudaMemPoolTrimTo, and the pool's place in
// the device's capacity. Run with DEEPUM_STANDIN_GPU_MEMORY=1GiB. Exits 1 on
// any mismatch.
#include "ApiTest.h"
#include "deepum/standin/Twin.h"

#include <cstdint>
#include <vector>

namespace su = deepum::standin;

// Not declared by the headers unless the program is built for per-thread
// default streams; exported all the same.
extern "C" cudaError_t cudaMallocAsync_ptsz(void **, size_t, cudaStream_t);
extern "C" cudaError_t cudaFreeAsync_ptsz(void *, cudaStream_t);

constexpr uint64_t MiB = uint64_t{1} << 20;

__global__ void iota(int n, int *p) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    p[i] = 7 * i;
}

static void iotaTwin(su::Launch &L, int n, int *p) {
  if (!L.access(p, n * sizeof(int), su::Access::Write))
    return;
  for (int i = 0; i < n; ++i)
    p[i] = 7 * i;
}

// A kernel that takes the model's time: its stream's work ends well after
// the host issued it.
__global__ void busy(float *p) { p[threadIdx.x] += 1.0f; }

static void busyTwin(su::Launch &L, float *p) {
  if (!L.access(p, sizeof(float), su::Access::ReadWrite))
    return;
  L.flops(1e12);
  p[0] += 1.0f;
}

static const bool Twins = su::registerTwin(iota, iotaTwin) && su::registerTwin(busy, busyTwin);

static cudaMemPool_t Pool;

static uint64_t attr(cudaMemPoolAttr A) {
  uint64_t V = 0;
  CHECK(cudaMemPoolGetAttribute(Pool, A, &V));
  return V;
}
static uint64_t reserved() { return attr(cudaMemPoolAttrReservedMemCurrent); }
static uint64_t used() { return attr(cudaMemPoolAttrUsedMemCurrent); }
static void setAttr(cudaMemPoolAttr A, uint64_t V) { CHECK(cudaMemPoolSetAttribute(Pool, A, &V)); }
static void setFlag(cudaMemPoolAttr A, int V) { CHECK(cudaMemPoolSetAttribute(Pool, A, &V)); }

static char *mallocAsync(size_t Bytes, cudaStream_t S) {
  void *P = nullptr;
  CHECK(cudaMallocAsync(&P, Bytes, S));
  return static_cast<char *>(P);
}

// Milliseconds from event A to event B, both waited for.
static float between(cudaEvent_t A, cudaEvent_t B) {
  CHECK(cudaEventSynchronize(A));
  CHECK(cudaEventSynchronize(B));
  float Ms = 0;
  CHECK(cudaEventElapsedTime(&Ms, A, B));
  return Ms;
}

int main() {
  if (!Twins) {
    std::printf("FAIL: not running on the stand-in (no twins)\n");
    return 1;
  }
  int V = 0;
  CHECK(cudaDeviceGetAttribute(&V, cudaDevAttrMemoryPoolsSupported, 0));
  EXPECT_EQ(V, 1);
  CHECK(cudaDeviceGetDefaultMemPool(&Pool, 0));
  cudaMemPool_t Current = nullptr;
  CHECK(cudaDeviceGetMemPool(&Current, 0));
  EXPECT(Current == Pool);
  CHECK(cudaDeviceSetMemPool(0, Pool));
  EXPECT_ERROR(cudaDeviceGetDefaultMemPool(&Current, 1), cudaErrorInvalidDevice);
  EXPECT_ERROR(cudaDeviceGetDefaultMemPool(nullptr, 0), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaDeviceSetMemPool(0, reinterpret_cast<cudaMemPool_t>(&V)), cudaErrorInvalidValue);

  // The documented defaults.
  EXPECT_EQ(attr(cudaMemPoolAttrReleaseThreshold), 0);
  EXPECT_EQ(reserved(), 0);
  EXPECT_EQ(used(), 0);
  for (cudaMemPoolAttr A :
       {cudaMemPoolReuseFollowEventDependencies, cudaMemPoolReuseAllowOpportunistic,
        cudaMemPoolReuseAllowInternalDependencies}) {
    int Flag = 0;
    CHECK(cudaMemPoolGetAttribute(Pool, A, &Flag));
    EXPECT_EQ(Flag, 1);
  }

  cudaStream_t S1, S2;
  CHECK(cudaStreamCreateWithFlags(&S1, cudaStreamNonBlocking));
  CHECK(cudaStreamCreateWithFlags(&S2, cudaStreamNonBlocking));

  // Allocations are device memory carved from 2 MiB chunks at 256-byte
  // granularity; the chunks count as device memory in use.
  size_t Free0 = 0, Free1 = 0, Total = 0;
  CHECK(cudaMemGetInfo(&Free0, &Total));
  char *A = mallocAsync(1000, S1);
  EXPECT_EQ(reserved(), 2 * MiB);
  EXPECT_EQ(used(), 1024);
  CHECK(cudaMemGetInfo(&Free1, &Total));
  EXPECT_EQ(Free0 - Free1, 2 * MiB);
  cudaPointerAttributes PA{};
  CHECK(cudaPointerGetAttributes(&PA, A + 10));
  EXPECT_EQ(PA.type, cudaMemoryTypeDevice);
  EXPECT_EQ(PA.device, 0);
  char *C = mallocAsync(1000, S1);
  EXPECT(C == A + 1024);
  EXPECT_EQ(reserved(), 2 * MiB);
  char *B = mallocAsync(3 * MiB, S1); // too big for the first chunk's rest
  EXPECT_EQ(reserved(), 6 * MiB);
  EXPECT_EQ(used(), 2048 + 3 * MiB);
  EXPECT_EQ(attr(cudaMemPoolAttrReservedMemHigh), 6 * MiB);
  EXPECT_EQ(attr(cudaMemPoolAttrUsedMemHigh), 2048 + 3 * MiB);

  // It is device memory: a kernel writes it, a copy reads it back.
  const int N = 100000;
  iota<<<(N + 255) / 256, 256, 0, S1>>>(N, reinterpret_cast<int *>(B));
  std::vector<int> Host(N);
  CHECK(cudaMemcpyAsync(Host.data(), B, N * sizeof(int), cudaMemcpyDeviceToHost, S1));
  CHECK(cudaStreamSynchronize(S1));
  int Wrong = 0;
  for (int I = 0; I < N; ++I)
    Wrong += Host[I] != 7 * I;
  EXPECT_EQ(Wrong, 0);

  // A freed piece serves the next allocation on its stream (the smallest
  // free piece that fits); used memory falls, reserved memory stays.
  CHECK(cudaFreeAsync(A, S1));
  EXPECT_EQ(used(), 1024 + 3 * MiB);
  EXPECT_EQ(reserved(), 6 * MiB);
  char *D = mallocAsync(500, S1);
  EXPECT(D == A);
  // cudaFree takes pool memory back too; cudaMallocFromPoolAsync and the
  // per-thread-stream forms use the same pool.
  CHECK(cudaFree(D));
  void *E = nullptr;
  CHECK(cudaMallocFromPoolAsync(&E, 1000, Pool, S1));
  EXPECT(E == A);
  CHECK(cudaFreeAsync(E, S2));
  void *F = nullptr;
  CHECK(cudaMallocAsync_ptsz(&F, 100, nullptr));
  EXPECT_EQ(used(), 1024 + 256 + 3 * MiB);
  CHECK(cudaFreeAsync_ptsz(F, nullptr));
  CHECK(cudaFreeAsync(B, S1));
  CHECK(cudaFreeAsync(C, S1));
  EXPECT_EQ(used(), 0);
  EXPECT_EQ(reserved(), 6 * MiB);
  // At a synchronisation the pool keeps no more than its release threshold
  // (0): every chunk goes back.
  CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(reserved(), 0);
  CHECK(cudaMemGetInfo(&Free1, &Total));
  EXPECT_EQ(Free1, Free0);

  // Reuse across streams, in stream order. Each free on S1 comes after a
  // kernel that takes the model's time, so the host has not seen it yet.
  // The threshold keeps freed chunks through synchronisations; each case
  // starts from an empty pool.
  setAttr(cudaMemPoolAttrReleaseThreshold, UINT64_MAX);
  float *Counter = nullptr;
  CHECK(cudaMallocManaged(&Counter, sizeof(float)));
  cudaEvent_t Freed, Allocated;
  CHECK(cudaEventCreate(&Freed));
  CHECK(cudaEventCreate(&Allocated));
  auto freeAllAndTrim = [&](std::initializer_list<char *> Ps) {
    for (char *P : Ps)
      CHECK(cudaFreeAsync(P, S2));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemPoolTrimTo(Pool, 0));
    EXPECT_EQ(reserved(), 0);
  };
  //  - internal dependencies (the default): S2 gets the piece, and its work
  //    now starts after the free.
  char *X = mallocAsync(2 * MiB, S1);
  busy<<<1, 1, 0, S1>>>(Counter);
  CHECK(cudaFreeAsync(X, S1));
  CHECK(cudaEventRecord(Freed, S1));
  char *Y = mallocAsync(2 * MiB, S2);
  EXPECT(Y == X);
  CHECK(cudaEventRecord(Allocated, S2));
  EXPECT(between(Freed, Allocated) >= 0.0f);
  freeAllAndTrim({Y});
  //  - without them: a new chunk, and S2 does not wait for the free.
  setFlag(cudaMemPoolReuseAllowInternalDependencies, 0);
  X = mallocAsync(2 * MiB, S1);
  busy<<<1, 1, 0, S1>>>(Counter);
  CHECK(cudaFreeAsync(X, S1));
  CHECK(cudaEventRecord(Freed, S1));
  Y = mallocAsync(2 * MiB, S2);
  EXPECT(Y != X);
  EXPECT_EQ(reserved(), 4 * MiB);
  CHECK(cudaEventRecord(Allocated, S2));
  EXPECT(between(Freed, Allocated) < 0.0f);
  //  - following an event dependency: once S2 waits for the free's event it
  //    gets the piece (no other policy allowing it).
  setFlag(cudaMemPoolReuseAllowOpportunistic, 0);
  char *W = mallocAsync(2 * MiB, S2);
  EXPECT(W != X);
  CHECK(cudaStreamWaitEvent(S2, Freed, 0));
  char *Z = mallocAsync(2 * MiB, S2);
  EXPECT(Z == X);
  freeAllAndTrim({Y, W, Z});
  //  - opportunistic: once the host has seen the free complete, any stream
  //    may take it.
  setFlag(cudaMemPoolReuseFollowEventDependencies, 0);
  X = mallocAsync(2 * MiB, S1);
  busy<<<1, 1, 0, S1>>>(Counter);
  CHECK(cudaFreeAsync(X, S1));
  Y = mallocAsync(2 * MiB, S2); // no policy allows it
  EXPECT(Y != X);
  CHECK(cudaStreamSynchronize(S1));
  W = mallocAsync(2 * MiB, S2); // seen complete, but not allowed
  EXPECT(W != X);
  setFlag(cudaMemPoolReuseAllowOpportunistic, 1);
  Z = mallocAsync(2 * MiB, S2);
  EXPECT(Z == X);
  freeAllAndTrim({Y, W, Z});
  setFlag(cudaMemPoolReuseFollowEventDependencies, 1);
  //  - a stream destroyed with its free still ahead of the host: a stream
  //    created afterwards (it may have the same address) is not the one
  //    that freed it.
  setFlag(cudaMemPoolReuseAllowOpportunistic, 0);
  cudaStream_t Gone, New;
  CHECK(cudaStreamCreateWithFlags(&Gone, cudaStreamNonBlocking));
  X = mallocAsync(2 * MiB, Gone);
  busy<<<1, 1, 0, Gone>>>(Counter);
  CHECK(cudaFreeAsync(X, Gone));
  CHECK(cudaStreamDestroy(Gone));
  CHECK(cudaStreamCreateWithFlags(&New, cudaStreamNonBlocking));
  Y = mallocAsync(2 * MiB, New);
  EXPECT(Y != X);
  CHECK(cudaFreeAsync(Y, New));
  CHECK(cudaStreamDestroy(New));
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaMemPoolTrimTo(Pool, 0));
  setFlag(cudaMemPoolReuseAllowOpportunistic, 1);
  setFlag(cudaMemPoolReuseAllowInternalDependencies, 1);

  // cudaMemPoolTrimTo: wholly free chunks the host has seen freed go back
  // while at least the bytes asked for stay reserved.
  char *Three[3];
  for (char *&P : Three)
    P = mallocAsync(2 * MiB, S1);
  EXPECT_EQ(reserved(), 6 * MiB);
  for (char *P : Three)
    CHECK(cudaFreeAsync(P, S1));
  CHECK(cudaStreamSynchronize(S1));
  EXPECT_EQ(reserved(), 6 * MiB); // the threshold keeps them
  CHECK(cudaMemPoolTrimTo(Pool, 3 * MiB));
  EXPECT_EQ(reserved(), 4 * MiB);
  CHECK(cudaMemPoolTrimTo(Pool, 5 * MiB)); // fewer than that reserved: nothing
  EXPECT_EQ(reserved(), 4 * MiB);
  CHECK(cudaMemPoolTrimTo(Pool, 0));
  EXPECT_EQ(reserved(), 0);
  // A threshold of 2 MiB: the synchronisation gives back chunks until no
  // more than that is held.
  setAttr(cudaMemPoolAttrReleaseThreshold, 2 * MiB);
  for (char *&P : Three)
    P = mallocAsync(2 * MiB, S1);
  for (char *P : Three)
    CHECK(cudaFreeAsync(P, S1));
  CHECK(cudaStreamSynchronize(S1));
  EXPECT_EQ(reserved(), 2 * MiB);
  EXPECT_EQ(attr(cudaMemPoolAttrReleaseThreshold), 2 * MiB);

  // The watermarks reset to the current amounts (only 0 may be set).
  EXPECT(attr(cudaMemPoolAttrReservedMemHigh) >= 6 * MiB);
  setAttr(cudaMemPoolAttrReservedMemHigh, 0);
  EXPECT_EQ(attr(cudaMemPoolAttrReservedMemHigh), 2 * MiB);
  setAttr(cudaMemPoolAttrUsedMemHigh, 0);
  EXPECT_EQ(attr(cudaMemPoolAttrUsedMemHigh), 0);
  uint64_t One = 1;
  EXPECT_ERROR(cudaMemPoolSetAttribute(Pool, cudaMemPoolAttrUsedMemHigh, &One),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaMemPoolSetAttribute(Pool, cudaMemPoolAttrReservedMemCurrent, &One),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaMemPoolGetAttribute(Pool, static_cast<cudaMemPoolAttr>(99), &One),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaMemPoolGetAttribute(Pool, cudaMemPoolAttrUsedMemCurrent, nullptr),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaMemPoolTrimTo(reinterpret_cast<cudaMemPool_t>(&One), 0), cudaErrorInvalidValue);
  CHECK(cudaMemPoolTrimTo(Pool, 0));

  // The pool's memory is the device's: what it holds, cudaMalloc cannot
  // have; a pool allocation that does not fit gives unused chunks back first.
  setAttr(cudaMemPoolAttrReleaseThreshold, UINT64_MAX);
  X = mallocAsync(600 * MiB, S1);
  CHECK(cudaFreeAsync(X, S1));
  CHECK(cudaStreamSynchronize(S1));
  EXPECT_EQ(reserved(), 600 * MiB);
  void *Big = nullptr;
  EXPECT_ERROR(cudaMalloc(&Big, 600 * MiB), cudaErrorMemoryAllocation);
  Y = mallocAsync(700 * MiB, S1);
  EXPECT_EQ(reserved(), 700 * MiB);
  EXPECT_ERROR(cudaMallocAsync(&Big, 2048 * MiB, S1), cudaErrorMemoryAllocation);
  CHECK(cudaFreeAsync(Y, S1));
  CHECK(cudaStreamSynchronize(S1));
  CHECK(cudaMemPoolTrimTo(Pool, 0));
  CHECK(cudaMalloc(&Big, 600 * MiB));
  CHECK(cudaFree(Big));

  // Refusals.
  EXPECT_ERROR(cudaMallocAsync(nullptr, 16, S1), cudaErrorInvalidValue);
  void *Zero = &V;
  CHECK(cudaMallocAsync(&Zero, 0, S1)); // nothing to allocate
  EXPECT(Zero == nullptr);
  EXPECT_ERROR(cudaFreeAsync(nullptr, S1), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaFreeAsync(Counter, S1), cudaErrorInvalidValue); // managed memory
  X = mallocAsync(4096, S1);
  EXPECT_ERROR(cudaFreeAsync(X + 256, S1), cudaErrorInvalidValue); // not the allocation
  // Device memory, allocated or not, is not the host's to register.
  EXPECT_ERROR(cudaHostRegister(X, 4096, 0), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaHostRegister(X + 8192, 4096, 0), cudaErrorInvalidValue);
  CHECK(cudaFreeAsync(X, S1));
  EXPECT_ERROR(cudaFreeAsync(X, S1), cudaErrorInvalidValue); // freed already
  EXPECT_ERROR(cudaMallocFromPoolAsync(&Big, 16, reinterpret_cast<cudaMemPool_t>(&One), S1),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaMallocAsync(&Big, 16, reinterpret_cast<cudaStream_t>(&One)),
               cudaErrorInvalidResourceHandle);
  // Graph memory nodes are not modelled: an allocation into a capturing
  // stream is refused and invalidates the capture.
  CHECK(cudaStreamBeginCapture(S2, cudaStreamCaptureModeGlobal));
  EXPECT_ERROR(cudaMallocAsync(&Big, 16, S2), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t Graph = nullptr;
  EXPECT_ERROR(cudaStreamEndCapture(S2, &Graph), cudaErrorStreamCaptureInvalidated);

  CHECK(cudaFree(Counter));
  CHECK(cudaEventDestroy(Freed));
  CHECK(cudaEventDestroy(Allocated));
  CHECK(cudaStreamDestroy(S1));
  CHECK(cudaStreamDestroy(S2));
  return apitest::finish("ApiMemPool");
}
