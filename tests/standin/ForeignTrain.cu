// A CUDA training loop that knows nothing of deepum: no deepum header, no
// iteration marks, its tensors from cudaMallocManaged and cudaMalloc, freed
// with cudaFree, as a C++ training binary of someone else's is written. Built
// with `nvcc -cudart shared`; deepum reaches it only through
// libdeepum_interpose.so (tests/standin/foreign_program.sh).
//
//   foreign-train STEPS
//
// A linear model y = W x trained with SGD on a fixed batch: per step a
// forward kernel, the loss gradient, the weight gradient, the update, and a
// scratch buffer allocated and freed inside the step. Prints one line at the
// end; exits 1 when a CUDA call fails.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                                \
  do {                                                                                             \
    cudaError_t E_ = (call);                                                                       \
    if (E_ != cudaSuccess) {                                                                       \
      std::printf("FAIL %s: %s\n", #call, cudaGetErrorName(E_));                                   \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

__global__ void forward(int In, int Out, int Batch, const float *W, const float *X, float *Y) {
  int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I >= Out * Batch)
    return;
  int O = I % Out, B = I / Out;
  float S = 0;
  for (int K = 0; K < In; ++K)
    S += W[O * In + K] * X[B * In + K];
  Y[I] = S;
}

__global__ void lossGrad(int N, const float *Y, const float *T, float *DY) {
  int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I < N)
    DY[I] = 2.0f * (Y[I] - T[I]) / N;
}

__global__ void weightGrad(int In, int Out, int Batch, const float *DY, const float *X,
                           float *DW) {
  int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I >= Out * In)
    return;
  int O = I / In, K = I % In;
  float S = 0;
  for (int B = 0; B < Batch; ++B)
    S += DY[B * Out + O] * X[B * In + K];
  DW[I] = S;
}

__global__ void sgd(int N, float Lr, const float *DW, float *W) {
  int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I < N)
    W[I] -= Lr * DW[I];
}

__global__ void fill(int N, float V, float *P) {
  int I = blockIdx.x * blockDim.x + threadIdx.x;
  if (I < N)
    P[I] = V * static_cast<float>(I % 7);
}

static int blocks(int N) { return (N + 255) / 256; }

int main(int Argc, char **Argv) {
  int Steps = Argc > 1 ? std::atoi(Argv[1]) : 8;
  // Every tensor a whole number of 2 MiB blocks: W and DW 4 MiB, the rest 2 MiB.
  const int In = 1024, Out = 1024, Batch = 512;
  float *W, *X, *T, *Y, *DY, *DW;
  CHECK(cudaMallocManaged(&W, sizeof(float) * In * Out));
  CHECK(cudaMallocManaged(&X, sizeof(float) * In * Batch));
  CHECK(cudaMallocManaged(&T, sizeof(float) * Out * Batch));
  CHECK(cudaMalloc(&DW, sizeof(float) * In * Out));
  fill<<<blocks(In * Out), 256>>>(In * Out, 0.01f, W);
  fill<<<blocks(In * Batch), 256>>>(In * Batch, 1.0f, X);
  fill<<<blocks(Out * Batch), 256>>>(Out * Batch, 0.5f, T);
  for (int S = 0; S < Steps; ++S) {
    CHECK(cudaMallocManaged(&Y, sizeof(float) * Out * Batch));
    CHECK(cudaMalloc(&DY, sizeof(float) * Out * Batch));
    forward<<<blocks(Out * Batch), 256>>>(In, Out, Batch, W, X, Y);
    lossGrad<<<blocks(Out * Batch), 256>>>(Out * Batch, Y, T, DY);
    weightGrad<<<blocks(Out * In), 256>>>(In, Out, Batch, DY, X, DW);
    sgd<<<blocks(Out * In), 256>>>(Out * In, 0.1f, DW, W);
    CHECK(cudaGetLastError());
    CHECK(cudaFree(DY));
    CHECK(cudaFree(Y));
  }
  CHECK(cudaDeviceSynchronize());
  CHECK(cudaFree(DW));
  CHECK(cudaFree(T));
  CHECK(cudaFree(X));
  CHECK(cudaFree(W));
  std::printf("trained %d steps\n", Steps);
  return 0;
}
