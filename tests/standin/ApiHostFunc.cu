// Host functions and stream callbacks on the stand-in (docs/standin.md,
// "What is modelled"): cudaLaunchHostFunc and cudaStreamAddCallback run
// after the stream's earlier work (they see its kernels' results), before its
// later work (which sees what they wrote), at the model time its earlier work
// (kernels, copies) ends, taking none; a captured host function runs at each launch of the
// graph. Exits 1 on any mismatch.
#include "ApiTest.h"
#include "deepum/standin/Twin.h"

#include <algorithm>
#include <string>
#include <vector>

namespace su = deepum::standin;

extern "C" cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t, cudaHostFn_t, void *);

// What ran, in order: the kernels' twins and the host functions.
static std::vector<std::string> Log;

__global__ void produce(int n, int *x) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] = i;
}

static void produceTwin(su::Launch &L, int n, int *x) {
  if (!L.access(x, n * sizeof(int), su::Access::Write))
    return;
  L.flops(1e11); // long enough to be seen in the model's time
  for (int i = 0; i < n; ++i)
    x[i] = i;
  Log.push_back("produce");
}

__global__ void consume(int n, const int *y, int *z) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    z[i] = y[i] + 1;
}

static void consumeTwin(su::Launch &L, int n, const int *y, int *z) {
  if (!L.access(y, n * sizeof(int), su::Access::Read) ||
      !L.access(z, n * sizeof(int), su::Access::Write))
    return;
  for (int i = 0; i < n; ++i)
    z[i] = y[i] + 1;
  Log.push_back("consume");
}

static const bool Twins =
    su::registerTwin(produce, produceTwin) && su::registerTwin(consume, consumeTwin);

constexpr int N = 4096;

struct Buffers {
  int *X, *Y, *Z;
  int Wrong = 0; // elements of X the host function found without produce's values
};

// Checks produce's results and writes what consume reads.
static void CUDART_CB hostStep(void *User) {
  auto *B = static_cast<Buffers *>(User);
  for (int I = 0; I < N; ++I) {
    B->Wrong += B->X[I] != I;
    B->Y[I] = 2 * B->X[I];
  }
  Log.push_back("host");
}

static cudaStream_t CallbackStream;
static cudaError_t CallbackStatus = cudaErrorUnknown;

static void CUDART_CB callbackStep(cudaStream_t Stream, cudaError_t Status, void *User) {
  CallbackStream = Stream;
  CallbackStatus = Status;
  hostStep(User);
  Log.back() = "callback";
}

static void CUDART_CB never(void *) { Log.push_back("never"); }

static void reset(Buffers &B) {
  Log.clear();
  B.Wrong = 0;
  std::fill(B.X, B.X + N, -1);
  std::fill(B.Y, B.Y + N, -1);
  std::fill(B.Z, B.Z + N, -1);
}

static int wrongZ(const Buffers &B) {
  int Wrong = 0;
  for (int I = 0; I < N; ++I)
    Wrong += B.Z[I] != 2 * I + 1;
  return Wrong;
}

static bool logIs(std::initializer_list<const char *> Want) {
  std::vector<std::string> W(Want.begin(), Want.end());
  if (Log == W)
    return true;
  std::printf("FAIL: ran");
  for (const std::string &S : Log)
    std::printf(" %s", S.c_str());
  std::printf("\n");
  return false;
}

static float elapsed(cudaEvent_t A, cudaEvent_t B) {
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
  Buffers B{};
  CHECK(cudaMallocManaged(&B.X, N * sizeof(int)));
  CHECK(cudaMallocManaged(&B.Y, N * sizeof(int)));
  CHECK(cudaMallocManaged(&B.Z, N * sizeof(int)));
  cudaStream_t S;
  CHECK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  cudaEvent_t Start, AfterKernel, AfterHost;
  CHECK(cudaEventCreate(&Start));
  CHECK(cudaEventCreate(&AfterKernel));
  CHECK(cudaEventCreate(&AfterHost));

  // cudaLaunchHostFunc between two kernels of a stream.
  reset(B);
  deepum_standin_stats Before{}, After{};
  EXPECT(su::stats(Before));
  CHECK(cudaEventRecord(Start, S));
  produce<<<N / 256, 256, 0, S>>>(N, B.X);
  CHECK(cudaEventRecord(AfterKernel, S));
  CHECK(cudaLaunchHostFunc(S, hostStep, &B));
  CHECK(cudaEventRecord(AfterHost, S));
  consume<<<N / 256, 256, 0, S>>>(N, B.Y, B.Z);
  CHECK(cudaStreamSynchronize(S));
  EXPECT(su::stats(After));
  EXPECT(logIs({"produce", "host", "consume"}));
  EXPECT_EQ(B.Wrong, 0);   // it saw produce's results
  EXPECT_EQ(wrongZ(B), 0); // consume saw what it wrote
  // It ran when produce ended. It is host code: the page of produce's
  // results it read came back from the GPU (one host fault), and that is
  // all the model time it took (h100-pcie: a 10 us fault service, then the
  // 64 KiB page over the link).
  EXPECT_EQ(After.host_faults - Before.host_faults, 1);
  const float Kernel = elapsed(Start, AfterKernel);
  EXPECT(Kernel > 0.0f);
  const float HostFunc = elapsed(AfterKernel, AfterHost);
  EXPECT(HostFunc >= 0.010f && HostFunc < 0.020f);
  if (!(HostFunc >= 0.010f && HostFunc < 0.020f))
    std::printf("the host function took %.4f ms\n", HostFunc);

  // After a copy as after a kernel: copies take the model's time on their
  // stream too.
  const size_t CopyBytes = size_t{64} << 20;
  void *Pinned = nullptr, *Dev = nullptr;
  CHECK(cudaMallocHost(&Pinned, CopyBytes));
  CHECK(cudaMalloc(&Dev, CopyBytes));
  reset(B);
  CHECK(cudaEventRecord(Start, S));
  CHECK(cudaMemcpyAsync(Dev, Pinned, CopyBytes, cudaMemcpyHostToDevice, S));
  CHECK(cudaEventRecord(AfterKernel, S));
  CHECK(cudaLaunchHostFunc(S, never, nullptr));
  CHECK(cudaEventRecord(AfterHost, S));
  EXPECT(elapsed(Start, AfterKernel) > 0.0f);
  EXPECT(elapsed(AfterKernel, AfterHost) == 0.0f);
  EXPECT(logIs({"never"}));
  CHECK(cudaFree(Dev));
  CHECK(cudaFreeHost(Pinned));

  // cudaStreamAddCallback: the same, with the stream and a success status.
  reset(B);
  produce<<<N / 256, 256, 0, S>>>(N, B.X);
  CHECK(cudaStreamAddCallback(S, callbackStep, &B, 0));
  consume<<<N / 256, 256, 0, S>>>(N, B.Y, B.Z);
  CHECK(cudaStreamSynchronize(S));
  EXPECT(logIs({"produce", "callback", "consume"}));
  EXPECT(CallbackStream == S);
  EXPECT_EQ(CallbackStatus, cudaSuccess);
  EXPECT_EQ(B.Wrong, 0);
  EXPECT_EQ(wrongZ(B), 0);

  // The legacy stream and the per-thread stream take host functions too.
  reset(B);
  produce<<<N / 256, 256>>>(N, B.X);
  CHECK(cudaLaunchHostFunc(0, hostStep, &B));
  CHECK(cudaLaunchHostFunc_ptsz(0, never, nullptr));
  CHECK(cudaDeviceSynchronize());
  EXPECT(logIs({"produce", "host", "never"}));

  // Captured, a host function becomes a node that runs at each launch of
  // the graph, between the kernels captured around it; not at capture.
  reset(B);
  CHECK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
  produce<<<N / 256, 256, 0, S>>>(N, B.X);
  CHECK(cudaLaunchHostFunc(S, hostStep, &B));
  consume<<<N / 256, 256, 0, S>>>(N, B.Y, B.Z);
  cudaGraph_t Graph = nullptr;
  CHECK(cudaStreamEndCapture(S, &Graph));
  EXPECT(logIs({}));
  size_t Nodes = 0;
  CHECK(cudaGraphGetNodes(Graph, nullptr, &Nodes));
  EXPECT_EQ(Nodes, 3);
  cudaGraphExec_t Exec = nullptr;
  CHECK(cudaGraphInstantiate(&Exec, Graph, 0));
  for (int Launch = 0; Launch < 2; ++Launch) {
    reset(B);
    EXPECT(su::stats(Before));
    CHECK(cudaGraphLaunch(Exec, S));
    CHECK(cudaStreamSynchronize(S));
    EXPECT(su::stats(After));
    EXPECT_EQ(After.host_faults - Before.host_faults, 1); // a host node is host code too
    EXPECT(logIs({"produce", "host", "consume"}));
    EXPECT_EQ(B.Wrong, 0);
    EXPECT_EQ(wrongZ(B), 0);
  }
  CHECK(cudaGraphExecDestroy(Exec));
  CHECK(cudaGraphDestroy(Graph));
  // A stream callback is not capturable: refused, and the capture is
  // invalidated.
  reset(B);
  CHECK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
  EXPECT_ERROR(cudaStreamAddCallback(S, callbackStep, &B, 0), cudaErrorStreamCaptureUnsupported);
  EXPECT_ERROR(cudaStreamEndCapture(S, &Graph), cudaErrorStreamCaptureInvalidated);
  EXPECT(logIs({}));

  // Refusals.
  EXPECT_ERROR(cudaLaunchHostFunc(S, nullptr, nullptr), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaLaunchHostFunc(reinterpret_cast<cudaStream_t>(&B), never, nullptr),
               cudaErrorInvalidResourceHandle);
  EXPECT_ERROR(cudaStreamAddCallback(S, callbackStep, &B, 1), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaStreamAddCallback(S, nullptr, &B, 0), cudaErrorInvalidValue);
  EXPECT(logIs({}));

  // After a device error the context is unusable: the call returns the
  // error and the function never runs ("not called in the event of an
  // error in the CUDA context"). Sticky, so this comes last.
  reset(B);
  int Outside[N];
  produce<<<N / 256, 256, 0, S>>>(N, Outside); // host stack memory: illegal
  EXPECT_EQ(cudaLaunchHostFunc(S, never, nullptr), cudaErrorIllegalAddress);
  EXPECT(logIs({}));
  return apitest::finish("ApiHostFunc");
}
