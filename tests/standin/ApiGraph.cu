// Stream capture and graphs on the stand-in (docs/standin.md, "Capture and
// graphs"): kernels, cudaMemcpyAsync and cudaMemsetAsync on a capturing
// stream become nodes, not work; a kernel node keeps the arguments it was
// captured with; cudaGraphLaunch replays the nodes in capture order, every
// launch, taking the model's time; what a capture cannot hold (event records,
// synchronisation, the legacy stream) is refused and invalidates it; graphs
// built by hand answer "not supported". Exits 1 on any mismatch.
#include "ApiTest.h"
#include "deepum/standin/Twin.h"

#include <vector>

namespace su = deepum::standin;

__global__ void addValue(int n, int *x, int v) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    x[i] += v;
}

static void addValueTwin(su::Launch &L, int n, int *x, int v) {
  if (!L.access(x, n * sizeof(int), su::Access::ReadWrite))
    return;
  L.flops(1e11); // long enough to be seen in the model's time
  for (int i = 0; i < n; ++i)
    x[i] += v;
}

static const bool Twins = su::registerTwin(addValue, addValueTwin);

constexpr int N = 1 << 16;

static int countNot(const int *P, int Want) {
  int Wrong = 0;
  for (int I = 0; I < N; ++I)
    Wrong += P[I] != Want;
  return Wrong;
}

/// The model time of the work issued on `S` by `Issue`, ms.
template <typename F> static float timed(cudaStream_t S, F Issue) {
  cudaEvent_t A = nullptr, B = nullptr;
  CHECK(cudaEventCreate(&A));
  CHECK(cudaEventCreate(&B));
  CHECK(cudaEventRecord(A, S));
  Issue();
  CHECK(cudaEventRecord(B, S));
  CHECK(cudaEventSynchronize(B));
  float Ms = 0;
  CHECK(cudaEventElapsedTime(&Ms, A, B));
  CHECK(cudaEventDestroy(A));
  CHECK(cudaEventDestroy(B));
  return Ms;
}

int main() {
  EXPECT(Twins);
  cudaStream_t S = nullptr;
  CHECK(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking));
  int *X = nullptr, *H = nullptr;
  CHECK(cudaMallocManaged(&X, N * sizeof(int), cudaMemAttachGlobal));
  CHECK(cudaMallocHost(&H, N * sizeof(int)));
  for (int I = 0; I < N; ++I) {
    X[I] = 100;
    H[I] = -1;
  }

  // Captured: memset, kernel, copy back to the host. Nothing runs.
  int Value = 7;
  CHECK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
  cudaStreamCaptureStatus Status{};
  CHECK(cudaStreamIsCapturing(S, &Status));
  EXPECT_EQ(Status, cudaStreamCaptureStatusActive);
  CHECK(cudaMemsetAsync(X, 0, N * sizeof(int), S));
  addValue<<<N / 256, 256, 0, S>>>(N, X, Value);
  CHECK(cudaMemcpyAsync(H, X, N * sizeof(int), cudaMemcpyDefault, S));
  cudaGraph_t Graph = nullptr;
  CHECK(cudaStreamEndCapture(S, &Graph));
  CHECK(cudaStreamIsCapturing(S, &Status));
  EXPECT_EQ(Status, cudaStreamCaptureStatusNone);
  EXPECT_EQ(countNot(X, 100), 0); // captured, not run
  EXPECT_EQ(countNot(H, -1), 0);
  size_t Nodes = 0;
  CHECK(cudaGraphGetNodes(Graph, nullptr, &Nodes));
  EXPECT_EQ(Nodes, 3);

  // The kernel node keeps the value it was captured with.
  Value = 9;
  cudaGraphExec_t Exec = nullptr;
  CHECK(cudaGraphInstantiate(&Exec, Graph, 0));
  for (int Launch = 0; Launch < 3; ++Launch) {
    for (int I = 0; I < N; ++I)
      H[I] = -1;
    CHECK(cudaGraphLaunch(Exec, S));
    CHECK(cudaStreamSynchronize(S));
    // The memset runs at every launch: 7, never 14 or 21.
    EXPECT_EQ(countNot(X, 7), 0);
    EXPECT_EQ(countNot(H, 7), 0);
  }

  // A graph launch takes its nodes' model time: more than its kernel alone,
  // less than the kernel twice (the memset and the 256 KiB copy are short).
  // The host's reads above brought X back from the GPU (host faults): a
  // kernel takes it there again first, so that both timings find it there.
  addValue<<<N / 256, 256, 0, S>>>(N, X, 0);
  CHECK(cudaStreamSynchronize(S));
  const float Kernel = timed(S, [&] { addValue<<<N / 256, 256, 0, S>>>(N, X, 0); });
  const float Graphed = timed(S, [&] { CHECK(cudaGraphLaunch(Exec, S)); });
  EXPECT(Kernel > 0);
  EXPECT(Graphed > Kernel);
  EXPECT(Graphed < 2 * Kernel);
  const float Twice = timed(S, [&] {
    CHECK(cudaGraphLaunch(Exec, S));
    CHECK(cudaGraphLaunch(Exec, S));
  });
  EXPECT(Twice > 1.9f * Graphed && Twice < 2.1f * Graphed);
  if (!(Kernel > 0 && Graphed > Kernel))
    std::printf("kernel %.3f ms, graph %.3f ms, graph twice %.3f ms\n", Kernel, Graphed, Twice);
  CHECK(cudaGraphExecDestroy(Exec));
  CHECK(cudaGraphDestroy(Graph));

  // What a capture cannot hold is refused, and the capture is invalidated.
  cudaEvent_t E = nullptr;
  CHECK(cudaEventCreate(&E));
  CHECK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
  EXPECT_ERROR(cudaEventRecord(E, S), cudaErrorStreamCaptureUnsupported);
  CHECK(cudaStreamIsCapturing(S, &Status));
  EXPECT_EQ(Status, cudaStreamCaptureStatusInvalidated);
  EXPECT_ERROR(cudaStreamEndCapture(S, &Graph), cudaErrorStreamCaptureInvalidated);
  CHECK(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal));
  EXPECT_ERROR(cudaStreamSynchronize(S), cudaErrorStreamCaptureUnsupported);
  EXPECT_ERROR(cudaStreamEndCapture(S, &Graph), cudaErrorStreamCaptureInvalidated);
  EXPECT_ERROR(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal),
               cudaErrorStreamCaptureUnsupported);
  EXPECT_EQ(countNot(X, 7), 0); // none of it ran

  // Graphs built by hand are not modelled: "not supported", never a silent
  // success.
  cudaGraph_t Built = nullptr;
  EXPECT_ERROR(cudaGraphCreate(&Built, 0), cudaErrorNotSupported);

  CHECK(cudaEventDestroy(E));
  CHECK(cudaFreeHost(H));
  CHECK(cudaFree(X));
  CHECK(cudaStreamDestroy(S));
  return apitest::finish("ApiGraph");
}
