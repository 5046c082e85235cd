// Pinned and registered host memory on the stand-in (docs/standin.md, "What
// is modelled"): cudaHostAlloc with every combination of its flags,
// cudaHostRegister / cudaHostUnregister, cudaHostGetDevicePointer,
// cudaHostGetFlags, what cudaPointerGetAttributes says of each range, and a
// kernel reading and writing mapped memory through its device pointer.
// Exits 1 on any mismatch.
#include "ApiTest.h"
#include "deepum/standin/Twin.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>

namespace su = deepum::standin;

__global__ void scale(int n, float a, const float *x, float *y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a * x[i];
}

static void scaleTwin(su::Launch &L, int n, float a, const float *x, float *y) {
  if (!L.access(x, n * sizeof(float), su::Access::Read) ||
      !L.access(y, n * sizeof(float), su::Access::Write))
    return;
  for (int i = 0; i < n; ++i)
    y[i] = a * x[i];
}
static const bool Twins = su::registerTwin(scale, scaleTwin);

static void expectHost(const void *P, const char *What) {
  cudaPointerAttributes A{};
  CHECK(cudaPointerGetAttributes(&A, P));
  if (A.type != cudaMemoryTypeHost || A.device != 0 || A.hostPointer != P || A.devicePointer != P) {
    std::printf("FAIL %s: type %d device %d host %p device %p\n", What, A.type, A.device,
                A.hostPointer, A.devicePointer);
    ++apitest::Failures;
  }
}

static void expectUnregistered(const void *P, const char *What) {
  cudaPointerAttributes A{};
  CHECK(cudaPointerGetAttributes(&A, P));
  if (A.type != cudaMemoryTypeUnregistered) {
    std::printf("FAIL %s: type %d, expected cudaMemoryTypeUnregistered\n", What, A.type);
    ++apitest::Failures;
  }
}

int main() {
  if (!Twins) {
    std::printf("FAIL: not running on the stand-in (no twins)\n");
    return 1;
  }
  int V = 0;
  CHECK(cudaDeviceGetAttribute(&V, cudaDevAttrHostRegisterSupported, 0));
  EXPECT_EQ(V, 1);
  CHECK(cudaDeviceGetAttribute(&V, cudaDevAttrCanUseHostPointerForRegisteredMem, 0));
  EXPECT_EQ(V, 1);
  CHECK(cudaDeviceGetAttribute(&V, cudaDevAttrCanMapHostMemory, 0));
  EXPECT_EQ(V, 1);
  CHECK(cudaDeviceGetAttribute(&V, cudaDevAttrHostRegisterReadOnlySupported, 0));
  EXPECT_EQ(V, 0);
  int PageableAccess = 0;
  CHECK(cudaDeviceGetAttribute(&PageableAccess, cudaDevAttrPageableMemoryAccess, 0));

  // cudaHostAlloc: every combination of the three flags; the flags come back
  // as given, and every range is mapped at its own address.
  for (unsigned F = 0; F < 8; ++F) {
    char *P = nullptr;
    CHECK(cudaHostAlloc(&P, 1000, F));
    unsigned Got = ~0u;
    CHECK(cudaHostGetFlags(&Got, P + 999));
    EXPECT_EQ(Got, F);
    void *D = nullptr;
    CHECK(cudaHostGetDevicePointer(&D, P + 10, 0));
    EXPECT(D == P + 10);
    expectHost(P, "cudaHostAlloc");
    CHECK(cudaFreeHost(P));
    expectUnregistered(P, "freed cudaHostAlloc");
  }
  char *Pinned = nullptr;
  CHECK(cudaMallocHost(&Pinned, 4096));
  unsigned Got = ~0u;
  CHECK(cudaHostGetFlags(&Got, Pinned));
  EXPECT_EQ(Got, cudaHostAllocDefault);
  EXPECT_ERROR(cudaHostAlloc(reinterpret_cast<void **>(&Pinned), 64, 0x8), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaHostAlloc(nullptr, 64, 0), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaHostGetFlags(nullptr, Pinned), cudaErrorInvalidValue);
  void *Dummy = nullptr;
  EXPECT_ERROR(cudaHostGetDevicePointer(&Dummy, Pinned, 1), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaFree(Pinned), cudaErrorInvalidValue); // pinned memory is cudaFreeHost's

  // cudaHostRegister: the program's own pages become pinned memory the
  // model knows, until unregistered.
  const size_t Page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  const size_t Bytes = 64 * Page;
  void *Raw = mmap(nullptr, Bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (Raw == MAP_FAILED) {
    std::printf("FAIL: mmap\n");
    return 1;
  }
  char *Buf = static_cast<char *>(Raw);
  expectUnregistered(Buf, "before cudaHostRegister");
  EXPECT_ERROR(cudaHostGetDevicePointer(&Dummy, Buf, 0), cudaErrorInvalidValue);
  CHECK(cudaHostRegister(Buf, Bytes, cudaHostRegisterMapped));
  expectHost(Buf, "registered");
  expectHost(Buf + Bytes - 1, "registered, last byte");
  expectUnregistered(Buf + Bytes, "past the registered range");
  void *D = nullptr;
  CHECK(cudaHostGetDevicePointer(&D, Buf + 3 * Page, 0));
  EXPECT(D == Buf + 3 * Page);
  EXPECT_ERROR(cudaHostGetFlags(&Got, Buf), cudaErrorInvalidValue); // not from cudaHostAlloc
  EXPECT_ERROR(cudaHostRegister(Buf + Page, Page, 0), cudaErrorHostMemoryAlreadyRegistered);
  EXPECT_ERROR(cudaHostRegister(Pinned, 64, 0), cudaErrorHostMemoryAlreadyRegistered);
  EXPECT_ERROR(cudaFreeHost(Buf), cudaErrorInvalidValue); // the program's memory
  EXPECT_ERROR(cudaHostUnregister(Buf + Page), cudaErrorHostMemoryNotRegistered);
  EXPECT_ERROR(cudaHostUnregister(Pinned), cudaErrorHostMemoryNotRegistered);

  // Refused registrations.
  void *Hole = mmap(nullptr, 4 * Page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(static_cast<char *>(Hole) + Page, Page); // an unmapped page inside the range
  EXPECT_ERROR(cudaHostRegister(Hole, 4 * Page, 0), cudaErrorInvalidValue);
  CHECK(cudaHostRegister(Hole, Page, cudaHostRegisterPortable)); // the mapped page alone is fine
  CHECK(cudaHostUnregister(Hole));
  static char Static[4096];
  EXPECT_ERROR(cudaHostRegister(Static, sizeof(Static), cudaHostRegisterReadOnly),
               cudaErrorNotSupported);
  EXPECT_ERROR(cudaHostRegister(Static, sizeof(Static), cudaHostRegisterIoMemory),
               cudaErrorNotSupported);
  EXPECT_ERROR(cudaHostRegister(Static, sizeof(Static), 0x10), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaHostRegister(Static, 0, 0), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaHostRegister(nullptr, 64, 0), cudaErrorInvalidValue);
  float *Managed = nullptr;
  CHECK(cudaMallocManaged(&Managed, 4096));
  EXPECT_ERROR(cudaHostRegister(Managed, 4096, 0), cudaErrorInvalidValue);
  CHECK(cudaHostRegister(Static, sizeof(Static), 0)); // cudaHostRegisterDefault
  expectHost(Static, "registered static array");
  CHECK(cudaHostUnregister(Static));

  // A kernel reads registered memory and writes cudaHostAlloc'd mapped
  // memory through their device pointers; the host sees the results.
  const int N = 1000;
  auto *X = reinterpret_cast<float *>(Buf);
  for (int I = 0; I < N; ++I)
    X[I] = static_cast<float>(I);
  float *Y = nullptr, *DX = nullptr, *DY = nullptr;
  CHECK(cudaHostAlloc(&Y, N * sizeof(float), cudaHostAllocMapped | cudaHostAllocWriteCombined));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&DX), X, 0));
  CHECK(cudaHostGetDevicePointer(reinterpret_cast<void **>(&DY), Y, 0));
  scale<<<(N + 255) / 256, 256>>>(N, 3.0f, DX, DY);
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  int Wrong = 0;
  for (int I = 0; I < N; ++I)
    Wrong += Y[I] != 3.0f * static_cast<float>(I);
  EXPECT_EQ(Wrong, 0);
  // Copies accept pinned memory on either side.
  float *Dev = nullptr;
  CHECK(cudaMalloc(&Dev, N * sizeof(float)));
  CHECK(cudaMemcpy(Dev, Y, N * sizeof(float), cudaMemcpyHostToDevice));
  std::memset(X, 0, N * sizeof(float));
  CHECK(cudaMemcpy(X, Dev, N * sizeof(float), cudaMemcpyDeviceToHost));
  EXPECT(X[N - 1] == 3.0f * (N - 1));
  CHECK(cudaFree(Dev));
  CHECK(cudaFreeHost(Y));
  CHECK(cudaFreeHost(Pinned));
  CHECK(cudaFree(Managed));

  // Unregistered, the pages are the host's alone again: a kernel touching
  // them faults as the device's MMU would (on a device without pageable
  // memory access), and the error is sticky, so this comes last.
  CHECK(cudaHostUnregister(Buf));
  expectUnregistered(Buf, "after cudaHostUnregister");
  EXPECT_ERROR(cudaHostUnregister(Buf), cudaErrorHostMemoryNotRegistered);
  if (!PageableAccess) {
    float *Out = nullptr;
    CHECK(cudaMallocManaged(&Out, N * sizeof(float)));
    scale<<<(N + 255) / 256, 256>>>(N, 2.0f, X, Out);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorIllegalAddress);
    EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress); // sticky: it stays
    EXPECT_EQ(cudaGetLastError(), cudaErrorIllegalAddress);
  }
  munmap(Raw, Bytes);
  return apitest::finish("ApiHostMemory");
}
