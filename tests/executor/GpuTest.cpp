//===- GpuTest.cpp - The CUDA backend on a real device (label: gpu) --------===//
//
// Skips cleanly where no device exists. On a GPU: managed allocation, batched
// prefetch to the device and back, discard, advice, events and stream waits,
// and launch tracking's subscriber (acquired, or the reason it is taken).
//
//===----------------------------------------------------------------------===//
#include "deepum/cupti/Subscriber.h"
#include "deepum/executor/Executor.h"
#include "deepum/executor/cuda/CudaBackend.h"

#include <cuda_runtime_api.h>

#include "gtest/gtest.h"

#include <cstring>

using namespace deepum::executor;

namespace {

class GpuTest : public ::testing::Test {
protected:
  void SetUp() override {
    int N = 0;
    cudaError_t E = cudaGetDeviceCount(&N);
    if (E != cudaSuccess || N == 0)
      GTEST_SKIP() << "no CUDA device: "
                   << (E != cudaSuccess ? cudaGetErrorString(E) : "0 devices");
    Back = cuda::createCudaBackend();
  }
  std::unique_ptr<Backend> Back;
};

TEST_F(GpuTest, ManagedMemoryMovesAndKeepsItsContents) {
  constexpr uint64_t Bytes = uint64_t{8} << 20;
  void *P = nullptr;
  ASSERT_TRUE(Back->allocateManaged(0, Bytes, &P).ok());
  std::memset(P, 0x5a, Bytes);
  StreamHandle S = 0;
  ASSERT_TRUE(Back->createStream(0, &S).ok());
  MemRange R{reinterpret_cast<uintptr_t>(P), Bytes};
  BackendStatus St = Back->prefetchBatch(0, {&R, 1}, 0, S);
  EXPECT_TRUE(St.ok()) << St.Call << ": " << St.Message;
  St = Back->prefetchBatch(0, {&R, 1}, kHostLocation, S);
  EXPECT_TRUE(St.ok()) << St.Call << ": " << St.Message;
  EventHandle E = 0;
  ASSERT_TRUE(Back->createEvent(0, &E).ok());
  ASSERT_TRUE(Back->recordEvent(0, E, S).ok());
  ASSERT_EQ(cudaEventSynchronize(reinterpret_cast<cudaEvent_t>(E)), cudaSuccess);
  EXPECT_EQ(Back->queryEvent(0, E), EventState::Complete);
  EXPECT_EQ(static_cast<unsigned char *>(P)[Bytes - 1], 0x5a);
  EXPECT_TRUE(Back->advise(0, R, MemAdvice::SetPreferredLocationDevice).ok());
  EXPECT_TRUE(Back->advise(0, R, MemAdvice::UnsetPreferredLocation).ok());
  St = Back->discardBatch(0, {&R, 1}, S);
  // Discard needs concurrentManagedAccess; a refusal must be an error, not a crash.
  if (!St.ok())
    GTEST_LOG_(INFO) << "discard refused here: " << St.Message;
  EXPECT_TRUE(Back->destroyEvent(0, E).ok());
  EXPECT_TRUE(Back->freeManaged(0, P).ok());
}

TEST_F(GpuTest, ExecutorAllocatesManagedMemory) {
  Executor Ex(*Back, ExecutorConfig{});
  void *P = Ex.allocate(1 << 20, 0, 0);
  ASSERT_NE(P, nullptr);
  cudaPointerAttributes A{};
  ASSERT_EQ(cudaPointerGetAttributes(&A, P), cudaSuccess);
  EXPECT_EQ(A.type, cudaMemoryTypeManaged);
  Ex.deallocate(P, 0, 0);
}

TEST_F(GpuTest, LaunchTrackingAcquiresOrExplains) {
  struct Count : LaunchObserver {
    void launchBegin(int, StreamHandle, const uint64_t *, size_t N) override { Seen += N; }
    void launchEnd(int, StreamHandle) override {}
    size_t Seen = 0;
  } Observer;
  std::string Why;
  if (!Back->startLaunchTracking(&Observer, Why)) {
    EXPECT_FALSE(Why.empty());
    GTEST_SKIP() << "CUPTI subscriber unavailable: " << Why;
  }
  EXPECT_TRUE(deepum::cupti::CuptiSubscriber::instance().available());
  Back->stopLaunchTracking();
}

} // namespace
