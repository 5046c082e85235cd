// Host-side faults on the stand-in (docs/standin.md, "What is modelled"): a
// host touch of a managed page the model holds on the GPU brings the page
// back, as the driver's CPU fault handler does: the page leaves the GPU (its
// 64 KiB copied back), the host waits for it (one fault's service and the
// copy), and the value read is the GPU's. Pages on the host, read-mostly
// duplicates read, and the GPU's own accesses (kernels, copies, memsets) do
// not fault; a write to a duplicate drops the GPU's copy without a copy. A
// stray access elsewhere still kills the process. Exits 1 on any
// mismatch.
#include "ApiTest.h"
#include "deepum/standin/Twin.h"

#include <csignal>
#include <cstring>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

namespace su = deepum::standin;

__global__ void fill(int n, int *x, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = v + i;
}

static void fillTwin(su::Launch &L, int n, int *x, int v) {
  if (!L.access(x, n * sizeof(int), su::Access::Write))
    return;
  for (int i = 0; i < n; ++i)
    x[i] = v + i;
}

__global__ void sum(int n, const int *x, long long *out) {}

static void sumTwin(su::Launch &L, int n, const int *x, long long *out) {
  if (!L.access(x, n * sizeof(int), su::Access::Read) ||
      !L.access(out, sizeof(long long), su::Access::Write))
    return;
  long long S = 0;
  for (int i = 0; i < n; ++i)
    S += x[i];
  *out = S;
}

static const bool Twins = su::registerTwin(fill, fillTwin) && su::registerTwin(sum, sumTwin);

constexpr size_t kPage = 64 << 10;
constexpr int kInts = int((4 << 20) / sizeof(int)); // 4 MiB: two UM blocks, 64 pages
constexpr int kPerPage = int(kPage / sizeof(int));

static deepum_standin_stats stats() {
  deepum_standin_stats S{};
  if (!su::stats(S)) {
    std::printf("FAIL not on the stand-in\n");
    std::exit(1);
  }
  return S;
}

static void toDevice(void *P, size_t Bytes) {
  cudaMemLocation Dev{};
  Dev.type = cudaMemLocationTypeDevice;
  Dev.id = 0;
  CHECK(cudaMemPrefetchAsync(P, Bytes, Dev, 0, nullptr));
  CHECK(cudaDeviceSynchronize());
}

// What a host function sees of managed memory: it runs on the host.
static void readInHostFunc(void *User) {
  const int *X = static_cast<const int *>(User);
  volatile int V = X[7 * kPerPage];
  (void)V;
}

int main() {
  if (!Twins)
    return 1;
  int *X = nullptr;
  long long *Out = nullptr;
  CHECK(cudaMallocManaged(&X, kInts * sizeof(int)));
  CHECK(cudaMallocManaged(&Out, sizeof(long long)));

  // 1. On the host: writing and reading it faults nothing.
  for (int i = 0; i < kInts; ++i)
    X[i] = -i;
  const deepum_standin_stats S0 = stats();
  EXPECT_EQ(S0.host_faults, 0);

  // 2. A kernel writes it: the pages are the GPU's. Its own accesses (and a
  // second kernel's, a memcpy's and a memset's) are no host faults.
  fill<<<kInts / 256, 256>>>(kInts, X, 1000);
  sum<<<1, 1>>>(kInts, X, Out);
  CHECK(cudaDeviceSynchronize());
  std::vector<int> Copy(kPerPage);
  CHECK(cudaMemcpy(Copy.data(), X + 3 * kPerPage, kPage, cudaMemcpyDefault));
  EXPECT_EQ(Copy[5], 1000 + 3 * kPerPage + 5);
  CHECK(cudaMemset(X + 60 * kPerPage, 0, kPage));
  CHECK(cudaDeviceSynchronize());
  const deepum_standin_stats S1 = stats();
  EXPECT_EQ(S1.host_faults, 0);
  EXPECT(S1.resident_bytes >= kInts * sizeof(int));

  // 3. The host reads one element: its page comes back, the GPU's value with
  // it; the host waited for the fault's service and the copy.
  cudaEvent_t Before, After;
  CHECK(cudaEventCreate(&Before));
  CHECK(cudaEventCreate(&After));
  CHECK(cudaEventRecord(Before, nullptr));
  const int V = X[10 * kPerPage + 3];
  CHECK(cudaEventRecord(After, nullptr));
  CHECK(cudaEventSynchronize(After));
  EXPECT_EQ(V, 1000 + 10 * kPerPage + 3);
  const deepum_standin_stats S2 = stats();
  EXPECT_EQ(S2.host_faults, 1);
  EXPECT_EQ(S1.resident_bytes - S2.resident_bytes, kPage);
  EXPECT_EQ(S2.bytes_dtoh - S1.bytes_dtoh, kPage);
  float Ms = 0;
  CHECK(cudaEventElapsedTime(&Ms, Before, After));
  EXPECT(Ms >= 0.010f); // h100-pcie: a 10 us fault service, then 64 KiB at the link's rate
  // The rest of the page, and a second read, are the host's now.
  for (int i = 0; i < kPerPage; ++i)
    EXPECT_EQ(X[10 * kPerPage + i], 1000 + 10 * kPerPage + i);
  EXPECT_EQ(stats().host_faults, 1);

  // 4. A host write to another page: it comes back too, and the next kernel
  // sees the write (and faults the page in again).
  X[20 * kPerPage] = 77;
  EXPECT_EQ(stats().host_faults, 2);
  sum<<<1, 1>>>(kInts, X, Out);
  CHECK(cudaDeviceSynchronize());
  long long Want = 0;
  for (int i = 0; i < kInts; ++i)
    Want += i >= 60 * kPerPage && i < 61 * kPerPage ? 0 : 1000 + i;
  Want += 77 - (1000 + 20 * kPerPage);
  EXPECT_EQ(*Out, Want); // read on the host: Out's page comes back (fault 3)
  EXPECT_EQ(stats().host_faults, 3);

  // 5. A host function is host code: it faults a GPU page back too.
  const uint64_t BeforeHostFunc = stats().host_faults;
  CHECK(cudaLaunchHostFunc(nullptr, readInHostFunc, X));
  CHECK(cudaDeviceSynchronize());
  EXPECT_EQ(stats().host_faults - BeforeHostFunc, 1);

  // 6. Read-mostly: the host reads a duplicate where it is; a host write
  // drops the GPU's copy, moving nothing.
  int *R = nullptr;
  CHECK(cudaMallocManaged(&R, 2 << 20));
  for (int i = 0; i < (2 << 20) / int(sizeof(int)); ++i)
    R[i] = i;
  cudaMemLocation Dev{};
  Dev.type = cudaMemLocationTypeDevice;
  CHECK(cudaMemAdvise(R, 2 << 20, cudaMemAdviseSetReadMostly, Dev));
  toDevice(R, 2 << 20);
  const deepum_standin_stats S6 = stats();
  EXPECT_EQ(R[kPerPage + 1], kPerPage + 1);
  const deepum_standin_stats S7 = stats();
  EXPECT_EQ(S7.host_faults, S6.host_faults);
  EXPECT_EQ(S7.resident_bytes, S6.resident_bytes);
  R[kPerPage + 1] = -5;
  const deepum_standin_stats S8 = stats();
  EXPECT_EQ(S8.host_faults - S7.host_faults, 1);
  EXPECT_EQ(S7.resident_bytes - S8.resident_bytes, kPage);
  EXPECT_EQ(S8.bytes_dtoh, S7.bytes_dtoh);
  EXPECT_EQ(R[kPerPage + 1], -5);

  // 7. Freed memory's protections go with it: memory mapped there later is
  // the program's to touch.
  toDevice(X, kInts * sizeof(int));
  CHECK(cudaFree(X));
  std::vector<char> Big(8 << 20, 1);
  EXPECT_EQ(Big[Big.size() - 1], 1);

  // 8. A stray access that is no managed page still kills with SIGSEGV.
  const pid_t Child = fork();
  if (Child == 0) {
    alarm(20); // a handler that swallowed the fault would spin on it
    volatile int *Null = nullptr;
    *Null = 1;
    _exit(0);
  }
  int Status = 0;
  waitpid(Child, &Status, 0);
  // (A sanitizer's handler, chained to, reports it and aborts or exits.)
  EXPECT((WIFSIGNALED(Status) && WTERMSIG(Status) != SIGALRM) ||
         (WIFEXITED(Status) && WEXITSTATUS(Status) != 0));

  CHECK(cudaFree(R));
  CHECK(cudaFree(Out));
  return apitest::finish("ApiHostFault");
}
