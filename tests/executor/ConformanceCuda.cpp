//===- ConformanceCuda.cpp - The conformance suite on the CUDA backend -----===//
//
// The CUDA backend as libdeepum.so uses it. Built twice: executor_conformance_
// cuda_test (label gpu: a real device, skipping without one) and
// standin.executor_conformance_cuda_test (the CUDA stand-in, docs/standin.md,
// through LD_LIBRARY_PATH). Launches are played into the executor the way
// the CUPTI callbacks deliver them (no kernel is compiled here); where a range
// is comes from cudaMemRangeGetAttribute where the runtime answers it.
//
//===----------------------------------------------------------------------===//
#include "BackendConformance.h"

#include "deepum/executor/cuda/CudaBackend.h"

#include <cuda_runtime_api.h>

// Weak: the CUDA stand-in does not provide this query (the binary must still
// load there); where it is missing, a range's place is unknown.
#pragma weak cudaMemRangeGetAttribute

using namespace deepum::executor;
using deepum::test::BackendConformance;
using deepum::test::ConformanceParam;
using deepum::test::ConformanceTarget;

namespace {

class CudaTarget final : public ConformanceTarget {
public:
  CudaTarget() {
    int N = 0;
    const cudaError_t E = cudaGetDeviceCount(&N);
    if (E != cudaSuccess || N == 0) {
      Why = std::string("no CUDA device: ") +
            (E != cudaSuccess ? cudaGetErrorString(E) : "0 devices");
      return;
    }
    B = cuda::createCudaBackend();
  }
  std::string unavailable() override { return Why; }
  Backend &backend() override { return *B; }
  bool tracksLaunches() override { return false; }
  void synchronize() override { EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess); }
  bool timesEvents() override { return true; }
  Where location(uintptr_t Ptr, uint64_t Bytes) override {
    auto *volatile Query = &cudaMemRangeGetAttribute;
    if (!Query)
      return Where::Unknown;
    int Loc = 0;
    if (Query(&Loc, sizeof Loc, cudaMemRangeAttributeLastPrefetchLocation,
              reinterpret_cast<const void *>(Ptr), Bytes) != cudaSuccess) {
      (void)cudaGetLastError();
      return Where::Unknown;
    }
    if (Loc == cudaCpuDeviceId)
      return Where::Host;
    return Loc == 0 ? Where::Device : Where::Unknown;
  }

private:
  std::string Why;
  std::unique_ptr<Backend> B;
};

INSTANTIATE_TEST_SUITE_P(Cuda, BackendConformance,
                         ::testing::Values(ConformanceParam{
                             "cuda",
                             [] { return std::unique_ptr<ConformanceTarget>(new CudaTarget); }}),
                         deepum::test::conformanceName);

} // namespace
