//===- ContractTest.cpp - The stand-in keeps the CUDA runtime's contracts --===//
//
// Each test names the CUDA Runtime API reference section (CUDA 13, the text
// also in cuda_runtime_api.h / driver_types.h) whose documented behaviour it
// checks. ctest runs every test in its own process (DEEPUM_STANDIN_GPU_MEMORY
// = 64MiB); tests that need another configuration or leave a sticky error
// behind run in a child process of their own.
//
//===----------------------------------------------------------------------===//
#include "deepum/standin/StandIn.h"

#include "NvccEntryPoints.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

constexpr size_t MiB = size_t{1} << 20;

cudaMemLocation device0() {
  cudaMemLocation L{};
  L.type = cudaMemLocationTypeDevice;
  L.id = 0;
  return L;
}

cudaMemLocation host() {
  cudaMemLocation L{};
  L.type = cudaMemLocationTypeHost;
  return L;
}

// A "kernel": the host-side symbol nvcc would register, with a twin that
// adds 1 to n floats (or touches whatever pointer it is given).
void hostSymbol() {}
struct AddOne {
  static void run(deepum_standin_launch *L, void **Args, void *) {
    float *P = *static_cast<float **>(Args[0]);
    const int N = *static_cast<int *>(Args[1]);
    if (!deepum_standin_access(L, P, N * sizeof(float), DEEPUM_STANDIN_READ_WRITE))
      return;
    for (int I = 0; I < N; ++I)
      P[I] += 1;
  }
};

const void *registerAddOne() {
  static const void *Fn = [] {
    const void *F = reinterpret_cast<const void *>(&hostSymbol);
    void **H = __cudaRegisterFatBinary(nullptr); // no fat binary: layout from the twin
    __cudaRegisterFunction(H, static_cast<const char *>(F), nullptr, "_Z6addOnePfi", -1, nullptr,
                           nullptr, nullptr, nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(H);
    const uint32_t Sizes[] = {sizeof(float *), sizeof(int)};
    EXPECT_EQ(deepum_standin_register_twin(F, nullptr, &AddOne::run, nullptr, Sizes, 2), 0);
    return F;
  }();
  return Fn;
}

cudaError_t launchAddOne(float *P, int N, cudaStream_t S) {
  void *Args[] = {&P, &N};
  return cudaLaunchKernel(registerAddOne(), dim3(1), dim3(32), Args, 0, S);
}

deepum_standin_stats stats() {
  deepum_standin_stats S{};
  EXPECT_EQ(deepum_standin_get_stats(&S, sizeof(S)), 0);
  return S;
}

class StandIn : public ::testing::Test {
protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

// --- Error Handling (cudaGetLastError, cudaPeekAtLastError, cudaGetErrorName) ---

TEST_F(StandIn, GetLastErrorReturnsAndResetsPeekDoesNot) {
  // "Returns the last error that has been produced by any of the runtime calls
  // in the same host thread and resets it to cudaSuccess"; cudaPeekAtLastError
  // "does not reset the error".
  EXPECT_EQ(cudaMallocManaged(nullptr, 1, cudaMemAttachGlobal), cudaErrorInvalidValue);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaPeekAtLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(StandIn, ErrorNamesComeFromTheHeaders) {
  // cudaGetErrorName: "If the error code is not recognized, 'unrecognized error code' is returned."
  EXPECT_STREQ(cudaGetErrorName(cudaErrorInvalidValue), "cudaErrorInvalidValue");
  EXPECT_STREQ(cudaGetErrorName(cudaErrorStreamCaptureUnsupported),
               "cudaErrorStreamCaptureUnsupported");
  EXPECT_STREQ(cudaGetErrorName(static_cast<cudaError_t>(123456)), "unrecognized error code");
  EXPECT_STREQ(cudaGetErrorString(static_cast<cudaError_t>(123456)), "unrecognized error code");
  EXPECT_NE(std::strstr(cudaGetErrorString(cudaErrorIllegalAddress), "invalid memory address"),
            nullptr);
}

/// In a fresh process: a kernel touches freed memory.
[[noreturn]] void touchFreedMemory() {
  float *P = nullptr;
  if (cudaMallocManaged(&P, MiB, cudaMemAttachGlobal) != cudaSuccess || cudaFree(P) != cudaSuccess)
    std::exit(10);
  // The launch is accepted; the kernel then faults on the freed range.
  if (launchAddOne(P, 16, nullptr) != cudaSuccess)
    std::exit(11);
  void *Q = nullptr;
  if (cudaDeviceSynchronize() != cudaErrorIllegalAddress ||
      cudaMalloc(&Q, 16) != cudaErrorIllegalAddress ||
      cudaGetLastError() != cudaErrorIllegalAddress ||
      cudaGetLastError() != cudaErrorIllegalAddress || // not reset
      cudaPeekAtLastError() != cudaErrorIllegalAddress ||
      cudaDeviceReset() != cudaErrorIllegalAddress ||
      cudaStreamSynchronize(nullptr) != cudaErrorIllegalAddress)
    std::exit(12);
  std::exit(0);
}

TEST_F(StandIn, StickyErrorIsReturnedByEveryLaterCall) {
  // driver_types.h, cudaErrorIllegalAddress: "This leaves the process in an
  // inconsistent state and any further CUDA work will return the same error.
  // To continue using CUDA, the process must be terminated and relaunched."
  EXPECT_EXIT(touchFreedMemory(), ::testing::ExitedWithCode(0), "");
}

// --- Memory Management ----------------------------------------------------------

TEST_F(StandIn, MallocManagedRefusesZeroBytesAndBadFlags) {
  // cudaMallocManaged: "If size is 0, cudaMallocManaged returns
  // cudaErrorInvalidValue"; flags "must be either cudaMemAttachGlobal or cudaMemAttachHost".
  void *P = nullptr;
  EXPECT_EQ(cudaMallocManaged(&P, 0, cudaMemAttachGlobal), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMallocManaged(&P, 16, 0x10), cudaErrorInvalidValue);
  ASSERT_EQ(cudaMallocManaged(&P, 16, cudaMemAttachGlobal), cudaSuccess);
  cudaPointerAttributes A{};
  ASSERT_EQ(cudaPointerGetAttributes(&A, P), cudaSuccess);
  EXPECT_EQ(A.type, cudaMemoryTypeManaged);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
}

TEST_F(StandIn, FreeOfUnknownOrFreedPointerIsInvalidValue) {
  // cudaFree: "If devPtr is 0, no operation is performed"; pointers not
  // returned by an allocation call, or freed already, give cudaErrorInvalidValue.
  EXPECT_EQ(cudaFree(nullptr), cudaSuccess);
  int Local = 0;
  EXPECT_EQ(cudaFree(&Local), cudaErrorInvalidValue);
  void *P = nullptr;
  ASSERT_EQ(cudaMallocManaged(&P, MiB, cudaMemAttachGlobal), cudaSuccess);
  EXPECT_EQ(cudaFree(static_cast<char *>(P) + 64), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaErrorInvalidValue);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue); // not sticky
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
}

TEST_F(StandIn, PrefetchOfNonManagedOrFreedMemoryIsInvalidValue) {
  // cudaMemPrefetchAsync: the range must refer to managed memory.
  void *D = nullptr, *P = nullptr;
  ASSERT_EQ(cudaMalloc(&D, MiB), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&P, MiB, cudaMemAttachGlobal), cudaSuccess);
  EXPECT_EQ(cudaMemPrefetchAsync(D, MiB, device0(), 0, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchAsync(P, 2 * MiB, device0(), 0, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchAsync(P, MiB, device0(), 1, nullptr), cudaErrorInvalidValue);
  cudaMemLocation Other = device0();
  Other.id = 1;
  EXPECT_EQ(cudaMemPrefetchAsync(P, MiB, Other, 0, nullptr), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaMemPrefetchAsync(P, MiB, device0(), 0, nullptr), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
  EXPECT_EQ(cudaMemPrefetchAsync(P, MiB, device0(), 0, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(D), cudaSuccess);
}

TEST_F(StandIn, MemGetInfoFollowsCapacityResidencyAndDeviceAllocations) {
  // cudaMemGetInfo: "Returns in *free and *total respectively, the free and
  // total amount of memory available for allocation by the device in bytes."
  size_t Free = 0, Total = 0;
  ASSERT_EQ(cudaMemGetInfo(&Free, &Total), cudaSuccess);
  EXPECT_EQ(Total, 64 * MiB); // DEEPUM_STANDIN_GPU_MEMORY
  EXPECT_EQ(Free, Total);
  void *P = nullptr, *D = nullptr;
  ASSERT_EQ(cudaMallocManaged(&P, 8 * MiB, cudaMemAttachGlobal), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&Free, &Total), cudaSuccess);
  EXPECT_EQ(Free, Total); // managed memory occupies the GPU only when resident
  ASSERT_EQ(cudaMemPrefetchAsync(P, 8 * MiB, device0(), 0, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&Free, &Total), cudaSuccess);
  EXPECT_EQ(Total - Free, 8 * MiB);
  ASSERT_EQ(cudaMalloc(&D, 16 * MiB), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&Free, &Total), cudaSuccess);
  EXPECT_EQ(Total - Free, 24 * MiB);
  ASSERT_EQ(cudaMemPrefetchAsync(P, 8 * MiB, host(), 0, nullptr), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&Free, &Total), cudaSuccess);
  EXPECT_EQ(Total - Free, 16 * MiB);
  void *Big = nullptr;
  EXPECT_EQ(cudaMalloc(&Big, 64 * MiB), cudaErrorMemoryAllocation);
  EXPECT_EQ(cudaFree(D), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
  ASSERT_EQ(cudaMemGetInfo(&Free, &Total), cudaSuccess);
  EXPECT_EQ(Free, Total);
}

TEST_F(StandIn, PrefetchToTheHostMovesEveryPageItOverlaps) {
  // The driver migrates managed memory in whole 64 KiB pages: a prefetch of
  // part of a page moves the page (docs/standin.md).
  constexpr size_t Page = 64 * 1024;
  char *P = nullptr;
  ASSERT_EQ(cudaMallocManaged(reinterpret_cast<void **>(&P), 4 * MiB, cudaMemAttachGlobal),
            cudaSuccess);
  ASSERT_EQ(cudaMemPrefetchAsync(P, 4 * MiB, device0(), 0, nullptr), cudaSuccess);
  deepum_standin_reset_stats();
  ASSERT_EQ(cudaMemPrefetchAsync(P + 1000, 4096, host(), 0, nullptr), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, 4 * MiB - Page);
  EXPECT_EQ(stats().bytes_dtoh, Page);
  // 200 bytes across the boundary of pages 2 and 3: both move.
  ASSERT_EQ(cudaMemPrefetchAsync(P + 3 * Page - 100, 200, host(), 0, nullptr), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, 4 * MiB - 3 * Page);
  EXPECT_EQ(stats().bytes_dtoh, 3 * Page);
  EXPECT_EQ(cudaFree(P), cudaSuccess);

  // An allocation smaller than a page comes and goes whole.
  void *Small = nullptr;
  ASSERT_EQ(cudaMallocManaged(&Small, 10 * 1024, cudaMemAttachGlobal), cudaSuccess);
  ASSERT_EQ(cudaMemPrefetchAsync(Small, 10 * 1024, device0(), 0, nullptr), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, Page);
  ASSERT_EQ(cudaMemPrefetchAsync(Small, 10 * 1024, host(), 0, nullptr), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, 0u);
  EXPECT_EQ(cudaFree(Small), cudaSuccess);
}

TEST_F(StandIn, BatchPrefetchToTheHostMovesEveryPageItOverlaps) {
  cudaStream_t S = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), cudaSuccess);
  void *Small[2] = {};
  size_t Sizes[2] = {100, 30 * 1024};
  for (void *&P : Small)
    ASSERT_EQ(cudaMallocManaged(&P, 32 * 1024, cudaMemAttachGlobal), cudaSuccess);
  cudaMemLocation Loc = device0();
  size_t Idx = 0;
  ASSERT_EQ(cudaMemPrefetchBatchAsync(Small, Sizes, 2, &Loc, &Idx, 1, 0, S), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, 2 * 64 * 1024u);
  Loc = host();
  ASSERT_EQ(cudaMemPrefetchBatchAsync(Small, Sizes, 2, &Loc, &Idx, 1, 0, S), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, 0u);
  for (void *P : Small)
    EXPECT_EQ(cudaFree(P), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(S), cudaSuccess);
}

// --- Batch prefetch and discard (cudaMemPrefetchBatchAsync, cudaMemDiscardBatchAsync,
// cudaMemDiscardAndPrefetchBatchAsync) --------------------------------------------

class Batch : public StandIn {
protected:
  void SetUp() override {
    StandIn::SetUp();
    ASSERT_EQ(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), cudaSuccess);
    for (void *&P : Ptrs)
      ASSERT_EQ(cudaMallocManaged(&P, 4 * MiB, cudaMemAttachGlobal), cudaSuccess);
  }
  void TearDown() override {
    for (void *P : Ptrs)
      EXPECT_EQ(cudaFree(P), cudaSuccess);
    EXPECT_EQ(cudaStreamDestroy(S), cudaSuccess);
  }
  cudaStream_t S = nullptr;
  void *Ptrs[3] = {};
  size_t Sizes[3] = {4 * MiB, 4 * MiB, 4 * MiB};
};

TEST_F(Batch, TheHostPaysForOneCallNotOnePerRange) {
  // The point of the batch calls (CUDA 13 runtime API: "batches ... in one
  // call"): the model charges the call once plus a small cost per range.
  cudaMemLocation Loc = device0();
  size_t Idx = 0;
  const deepum_standin_stats Before = stats();
  ASSERT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, &Loc, &Idx, 1, 0, S), cudaSuccess);
  const deepum_standin_stats Batched = stats();
  EXPECT_EQ(Batched.host_calls - Before.host_calls, 1u);
  for (void *P : Ptrs)
    ASSERT_EQ(cudaMemPrefetchAsync(P, 4 * MiB, host(), 0, S), cudaSuccess);
  const deepum_standin_stats Single = stats();
  EXPECT_EQ(Single.host_calls - Batched.host_calls, 3u);
  const uint64_t BatchNs = Batched.host_call_ns - Before.host_call_ns;
  const uint64_t SingleNs = Single.host_call_ns - Batched.host_call_ns;
  EXPECT_GT(BatchNs, SingleNs / 3); // one call plus two ranges
  EXPECT_LT(BatchNs, SingleNs);     // less than three calls
  ASSERT_EQ(cudaMemDiscardBatchAsync(Ptrs, Sizes, 3, 0, S), cudaSuccess);
  EXPECT_EQ(stats().host_calls - Single.host_calls, 1u);
}

TEST_F(Batch, PrefetchesEveryRangeToItsLocation) {
  // "prefetchLocs[k] will be applied to copies starting from prefetchLocIdxs[k]
  // through prefetchLocIdxs[k+1] - 1".
  cudaMemLocation Locs[] = {device0(), host()};
  size_t Idxs[] = {0, 2};
  ASSERT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, Locs, Idxs, 1, 0, S), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, 12 * MiB);
  ASSERT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, Locs, Idxs, 2, 0, S), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, 8 * MiB);
}

TEST_F(Batch, RefusesTheLegacyStream) {
  // hStream: "Must not be legacy NULL stream." The per-thread stream is not legacy.
  cudaMemLocation Loc = device0();
  size_t Idx = 0;
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, &Loc, &Idx, 1, 0, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, &Loc, &Idx, 1, 0, cudaStreamLegacy),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemDiscardBatchAsync(Ptrs, Sizes, 3, 0, nullptr), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemDiscardAndPrefetchBatchAsync(Ptrs, Sizes, 3, &Loc, &Idx, 1, 0, nullptr),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, &Loc, &Idx, 1, 0, cudaStreamPerThread),
            cudaSuccess);
}

TEST_F(Batch, FlagsMustBeZero) {
  // flags: "Flags reserved for future use. Must be zero."
  cudaMemLocation Loc = device0();
  size_t Idx = 0;
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, &Loc, &Idx, 1, 1, S), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemDiscardBatchAsync(Ptrs, Sizes, 3, 1, S), cudaErrorInvalidValue);
}

TEST_F(Batch, LocationIndexRules) {
  // "the first entry in prefetchLocIdxs must always be 0. Also, each entry must
  // be greater than the previous entry and the last entry should be less than
  // count. Furthermore, numPrefetchLocs must be lesser than or equal to count."
  cudaMemLocation Locs[4] = {device0(), device0(), device0(), device0()};
  size_t NotZero[] = {1};
  size_t NotIncreasing[] = {0, 1, 1};
  size_t PastCount[] = {0, 3};
  size_t Four[] = {0, 1, 2, 3};
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, Locs, NotZero, 1, 0, S),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, Locs, NotIncreasing, 3, 0, S),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, Locs, PastCount, 2, 0, S),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, Locs, Four, 4, 0, S), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemDiscardAndPrefetchBatchAsync(Ptrs, Sizes, 3, Locs, NotZero, 1, 0, S),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 3, Locs, Four, 3, 0, S), cudaSuccess);
}

TEST_F(Batch, RangesMustBeManagedMemory) {
  // "Each memory range specified must refer to managed memory allocated via
  // cudaMallocManaged".
  void *D = nullptr;
  ASSERT_EQ(cudaMalloc(&D, MiB), cudaSuccess);
  void *Mixed[] = {Ptrs[0], D};
  size_t MixedSizes[] = {MiB, MiB};
  size_t TooLong[] = {4 * MiB + 1, MiB};
  cudaMemLocation Loc = device0();
  size_t Idx = 0;
  EXPECT_EQ(cudaMemPrefetchBatchAsync(Mixed, MixedSizes, 2, &Loc, &Idx, 1, 0, S),
            cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemDiscardBatchAsync(Mixed, MixedSizes, 2, 0, S), cudaErrorInvalidValue);
  EXPECT_EQ(cudaMemDiscardBatchAsync(Ptrs, TooLong, 2, 0, S), cudaErrorInvalidValue);
  EXPECT_EQ(cudaFree(D), cudaSuccess);
}

TEST_F(Batch, DiscardNeedsNoAlignmentAndDropsOnlyWholePages) {
  // No alignment is documented for discards, so none is required; the model
  // drops the 64 KiB pages wholly inside the range and keeps partial ones.
  cudaMemLocation Loc = device0();
  size_t Idx = 0;
  ASSERT_EQ(cudaMemPrefetchBatchAsync(Ptrs, Sizes, 1, &Loc, &Idx, 1, 0, S), cudaSuccess);
  void *Mid[] = {static_cast<char *>(Ptrs[0]) + 1000};
  size_t MidSize[] = {MiB};
  ASSERT_EQ(cudaMemDiscardBatchAsync(Mid, MidSize, 1, 0, S), cudaSuccess);
  // [1000, 1 MiB + 1000) wholly covers pages 1..15.
  EXPECT_EQ(stats().resident_bytes, 4 * MiB - 15 * 64 * 1024);
  EXPECT_EQ(stats().bytes_discarded, 15u * 64 * 1024);
}

TEST_F(Batch, DiscardedPagesReadAsPoisonAndTheRestIsKept) {
  // "the contents of the memory are undefined after the discard": the pages
  // the model drops read as 0xFF bytes (NaN as floats), so that a program
  // that reads memory it discarded computes something else; the partial
  // pages at the range's ends are kept, as the model keeps them resident.
  auto *Bytes = static_cast<unsigned char *>(Ptrs[0]);
  std::memset(Bytes, 0x11, 4 * MiB);
  void *Mid[] = {Bytes + 1000};
  size_t MidSize[] = {MiB};
  const deepum_standin_stats Before = stats();
  ASSERT_EQ(cudaMemDiscardBatchAsync(Mid, MidSize, 1, 0, S), cudaSuccess);
  const size_t Page = 64 * 1024;
  EXPECT_EQ(stats().bytes_poisoned - Before.bytes_poisoned, 15 * Page);
  EXPECT_EQ(Bytes[999], 0x11);
  EXPECT_EQ(Bytes[1000], 0x11);      // page 0: partial, kept
  EXPECT_EQ(Bytes[Page - 1], 0x11);
  EXPECT_EQ(Bytes[Page], 0xFF);       // pages 1..15: dropped
  EXPECT_EQ(Bytes[16 * Page - 1], 0xFF);
  EXPECT_EQ(Bytes[16 * Page], 0x11);  // page 16: partial, kept
  float F;
  std::memcpy(&F, Bytes + 2 * Page, sizeof(F));
  EXPECT_TRUE(std::isnan(F));
}

TEST_F(Batch, DiscardAndPrefetchLeavesRangesResidentWithoutCopies) {
  // "semantically equivalent to calling cudaMemDiscardBatchAsync followed by
  // cudaMemPrefetchBatchAsync".
  cudaMemLocation Loc = device0();
  size_t Idx = 0;
  ASSERT_EQ(cudaMemDiscardAndPrefetchBatchAsync(Ptrs, Sizes, 3, &Loc, &Idx, 1, 0, S), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes, 12 * MiB);
}

/// In a fresh process: the device without concurrentManagedAccess.
[[noreturn]] void batchCallsWithoutConcurrentManagedAccess() {
  setenv("DEEPUM_STANDIN_CONCURRENT_MANAGED_ACCESS", "0", 1);
  int Cma = 1;
  cudaStream_t St = nullptr;
  void *P = nullptr;
  if (cudaDeviceGetAttribute(&Cma, cudaDevAttrConcurrentManagedAccess, 0) != cudaSuccess ||
      Cma != 0 || cudaStreamCreateWithFlags(&St, cudaStreamNonBlocking) != cudaSuccess ||
      cudaMallocManaged(&P, MiB, cudaMemAttachGlobal) != cudaSuccess)
    std::exit(10);
  size_t Size = MiB;
  size_t Idx = 0;
  cudaMemLocation Loc = device0();
  if (cudaMemPrefetchBatchAsync(&P, &Size, 1, &Loc, &Idx, 1, 0, St) == cudaSuccess ||
      cudaMemDiscardBatchAsync(&P, &Size, 1, 0, St) == cudaSuccess ||
      cudaMemDiscardAndPrefetchBatchAsync(&P, &Size, 1, &Loc, &Idx, 1, 0, St) == cudaSuccess)
    std::exit(11);
  std::exit(0);
}

TEST_F(StandIn, BatchCallsNeedConcurrentManagedAccess) {
  // "All devices in the system must have a non-zero value for the device
  // attribute cudaDevAttrConcurrentManagedAccess otherwise the API will return an error."
  EXPECT_EXIT(batchCallsWithoutConcurrentManagedAccess(), ::testing::ExitedWithCode(0), "");
}

// --- Stream Management: capture -------------------------------------------------

TEST_F(StandIn, NoPrefetchOrDiscardIntoACapturingStream) {
  // driver_types.h, cudaErrorStreamCaptureUnsupported: "The operation is not
  // permitted when the stream is capturing"; cudaErrorStreamCaptureInvalidated:
  // "The current capture sequence on the stream has been invalidated due to a
  // previous error."
  cudaStream_t S = nullptr;
  void *P = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&P, MiB, cudaMemAttachGlobal), cudaSuccess);
  size_t Size = MiB, Idx = 0;
  cudaMemLocation Loc = device0();
  for (int Call = 0; Call < 3; ++Call) {
    ASSERT_EQ(cudaStreamBeginCapture(S, cudaStreamCaptureModeRelaxed), cudaSuccess);
    cudaError_t E = Call == 0   ? cudaMemPrefetchAsync(P, MiB, Loc, 0, S)
                    : Call == 1 ? cudaMemPrefetchBatchAsync(&P, &Size, 1, &Loc, &Idx, 1, 0, S)
                                : cudaMemDiscardBatchAsync(&P, &Size, 1, 0, S);
    EXPECT_EQ(E, cudaErrorStreamCaptureUnsupported) << Call;
    cudaStreamCaptureStatus St{};
    ASSERT_EQ(cudaStreamIsCapturing(S, &St), cudaSuccess);
    EXPECT_EQ(St, cudaStreamCaptureStatusInvalidated);
    cudaGraph_t G = nullptr;
    EXPECT_EQ(cudaStreamEndCapture(S, &G), cudaErrorStreamCaptureInvalidated);
    EXPECT_EQ(G, nullptr);
  }
  EXPECT_EQ(stats().resident_bytes, 0u); // nothing was prefetched
  (void)cudaGetLastError();
  EXPECT_EQ(cudaMemPrefetchAsync(P, MiB, Loc, 0, S), cudaSuccess); // not capturing any more
  EXPECT_EQ(cudaFree(P), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(S), cudaSuccess);
}

TEST_F(StandIn, CapturingTheLegacyStreamIsUnsupported) {
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
}

TEST_F(StandIn, CapturedLaunchesReplayFromTheGraph) {
  // Graph Management: a captured kernel "is not executed but instead captured
  // into a graph"; cudaGraphLaunch runs the graph's work in stream order.
  cudaStream_t S = nullptr;
  float *P = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&P, 64 * sizeof(float), cudaMemAttachGlobal), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(launchAddOne(P, 64, S), cudaSuccess);
  ASSERT_EQ(launchAddOne(P, 64, S), cudaSuccess);
  EXPECT_EQ(P[0], 0.0f); // captured, not run
  // Global mode: synchronising the device while capturing is not allowed.
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorStreamCaptureUnsupported);
  cudaGraph_t G = nullptr;
  EXPECT_EQ(cudaStreamEndCapture(S, &G), cudaErrorStreamCaptureInvalidated);
  (void)cudaGetLastError();

  ASSERT_EQ(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal), cudaSuccess);
  ASSERT_EQ(launchAddOne(P, 64, S), cudaSuccess);
  ASSERT_EQ(launchAddOne(P, 64, S), cudaSuccess);
  ASSERT_EQ(cudaStreamEndCapture(S, &G), cudaSuccess);
  cudaGraphExec_t X = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&X, G, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(X, S), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(X, S), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  for (int I = 0; I < 64; ++I)
    ASSERT_EQ(P[I], 4.0f);

  // The driver's graph inspection, as deepum's CUDA backend reaches it.
  void *Fn = nullptr;
  cudaDriverEntryPointQueryResult Q{};
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuGraphGetNodes", &Fn, 13000, cudaEnableDefault, &Q),
            cudaSuccess);
  ASSERT_EQ(Q, cudaDriverEntryPointSuccess);
  auto GetNodes = reinterpret_cast<decltype(&cuGraphGetNodes)>(Fn);
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuGraphKernelNodeGetParams", &Fn, 13000,
                                             cudaEnableDefault, &Q),
            cudaSuccess);
  auto GetParams = reinterpret_cast<decltype(&cuGraphKernelNodeGetParams)>(Fn);
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuFuncGetName", &Fn, 13000, cudaEnableDefault, &Q),
            cudaSuccess);
  auto FuncName = reinterpret_cast<decltype(&cuFuncGetName)>(Fn);
  size_t N = 0;
  ASSERT_EQ(GetNodes(G, nullptr, &N), CUDA_SUCCESS);
  ASSERT_EQ(N, 2u);
  std::vector<CUgraphNode> Nodes(N);
  ASSERT_EQ(GetNodes(G, Nodes.data(), &N), CUDA_SUCCESS);
  CUDA_KERNEL_NODE_PARAMS KP{};
  ASSERT_EQ(GetParams(Nodes[0], &KP), CUDA_SUCCESS);
  EXPECT_EQ(KP.blockDimX, 32u);
  const char *Name = nullptr;
  ASSERT_EQ(FuncName(&Name, KP.func), CUDA_SUCCESS);
  EXPECT_STREQ(Name, "_Z6addOnePfi");

  // Kernel records: two direct launches never ran; four graph launches did.
  std::vector<deepum_standin_kernel_record> R(8);
  ASSERT_EQ(deepum_standin_kernel_records(R.data(), R.size(), 0), 4u);
  EXPECT_EQ(R[0].graph_exec, reinterpret_cast<uint64_t>(X));
  EXPECT_LE(R[0].end_ns, R[1].start_ns);
  EXPECT_EQ(cudaGraphExecDestroy(X), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(G), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(S), cudaSuccess);
}

// --- Launches (nvcc's <<<>>> path) and the model -----------------------------------

TEST_F(StandIn, TripleChevronPathLaunchesThroughTheKernelHandle) {
  // What nvcc 13 emits for kernel<<<grid, block, 0, s>>>(args) (crt/host_runtime.h).
  float *P = nullptr;
  ASSERT_EQ(cudaMallocManaged(&P, 64 * sizeof(float), cudaMemAttachGlobal), cudaSuccess);
  const void *F = registerAddOne();
  cudaKernel_t K = nullptr;
  ASSERT_EQ(__cudaGetKernel(&K, F), cudaSuccess);
  ASSERT_EQ(__cudaPushCallConfiguration(dim3(2), dim3(32), 0, nullptr), 0u);
  dim3 G, B;
  size_t Shm = 1;
  cudaStream_t St = reinterpret_cast<cudaStream_t>(0x1234);
  ASSERT_EQ(__cudaPopCallConfiguration(&G, &B, &Shm, &St), cudaSuccess);
  EXPECT_EQ(G.x, 2u);
  EXPECT_EQ(Shm, 0u);
  EXPECT_EQ(St, nullptr);
  int N = 64;
  void *Args[] = {&P, &N};
  ASSERT_EQ(__cudaLaunchKernel(K, G, B, Args, Shm, St), cudaSuccess);
  EXPECT_EQ(P[63], 1.0f);
  EXPECT_EQ(__cudaPopCallConfiguration(&G, &B, &Shm, &St), cudaErrorMissingConfiguration);
  // Invalid configurations: "cudaErrorInvalidConfiguration".
  EXPECT_EQ(__cudaLaunchKernel(K, dim3(1), dim3(2048), Args, 0, nullptr),
            cudaErrorInvalidConfiguration);
  EXPECT_EQ(__cudaLaunchKernel(K, dim3(0), dim3(1), Args, 0, nullptr),
            cudaErrorInvalidConfiguration);
  int Unregistered = 0;
  EXPECT_EQ(__cudaGetKernel(&K, &Unregistered), cudaErrorInvalidDeviceFunction);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
}

TEST_F(StandIn, LaunchesFaultOnFirstTouchAndNotAfterPrefetch) {
  float *A = nullptr, *B = nullptr;
  ASSERT_EQ(cudaMallocManaged(&A, 4 * MiB, cudaMemAttachGlobal), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&B, 4 * MiB, cudaMemAttachGlobal), cudaSuccess);
  const int N = static_cast<int>(4 * MiB / sizeof(float));
  ASSERT_EQ(launchAddOne(A, N, nullptr), cudaSuccess);
  EXPECT_EQ(stats().faults, 64u); // 4 MiB of 64 KiB pages
  ASSERT_EQ(cudaMemPrefetchAsync(B, 4 * MiB, device0(), 0, nullptr), cudaSuccess);
  ASSERT_EQ(launchAddOne(B, N, nullptr), cudaSuccess);
  EXPECT_EQ(stats().faults, 64u);
  EXPECT_EQ(stats().bytes_prefetched, 4 * MiB);
  EXPECT_EQ(stats().kernels, 2u);
  EXPECT_EQ(B[N - 1], 1.0f);
  EXPECT_EQ(cudaFree(A), cudaSuccess);
  EXPECT_EQ(cudaFree(B), cudaSuccess);
}

TEST_F(StandIn, AKernelLargerThanTheGpuRunsFaultingAndEvicting) {
  // A GPU runs a kernel whose pages exceed its memory: the driver faults
  // them in and evicts others to make room (docs/standin.md). 96 MiB of
  // pages on 64 MiB.
  float *P = nullptr;
  ASSERT_EQ(cudaMallocManaged(reinterpret_cast<void **>(&P), 96 * MiB, cudaMemAttachGlobal),
            cudaSuccess);
  cudaEvent_t Start = nullptr, End = nullptr;
  ASSERT_EQ(cudaEventCreate(&Start), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&End), cudaSuccess);
  const int N = static_cast<int>(96 * MiB / sizeof(float));
  ASSERT_EQ(cudaEventRecord(Start, nullptr), cudaSuccess);
  ASSERT_EQ(launchAddOne(P, N, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(End, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(End), cudaSuccess);
  const deepum_standin_stats S = stats();
  EXPECT_EQ(S.kernels, 1u);
  EXPECT_EQ(S.oversubscribed_launches, 1u);
  EXPECT_EQ(S.model_refused_launches, 0u);
  EXPECT_GT(S.faults, 0u);
  EXPECT_EQ(S.bytes_htod, 96 * MiB); // every page, once
  EXPECT_GE(S.evictions, 16u); // at least the 32 MiB beyond the capacity left, in 2 MiB blocks
  EXPECT_LE(S.resident_bytes, 64 * MiB);
  float Ms = 0;
  ASSERT_EQ(cudaEventElapsedTime(&Ms, Start, End), cudaSuccess);
  // At least the 96 MiB over the link (25 GB/s of an H100's PCIe: ~4 ms).
  EXPECT_GT(Ms, 1.0f);
  deepum_standin_kernel_record R{};
  ASSERT_EQ(deepum_standin_kernel_records(&R, 1, 0), 1u);
  EXPECT_GT(R.end_ns, R.start_ns);
  EXPECT_EQ(R.faults, S.faults);
  EXPECT_EQ(P[N - 1], 1.0f);
  EXPECT_EQ(cudaEventDestroy(Start), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(End), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
}

// --- Device Management ----------------------------------------------------------

TEST_F(StandIn, DeviceIsAnH100PcieByDefault) {
  int N = 0;
  ASSERT_EQ(cudaGetDeviceCount(&N), cudaSuccess);
  EXPECT_EQ(N, 1);
  EXPECT_EQ(cudaSetDevice(1), cudaErrorInvalidDevice);
  cudaDeviceProp P{};
  ASSERT_EQ(cudaGetDeviceProperties(&P, 0), cudaSuccess);
  EXPECT_STREQ(P.name, "NVIDIA H100 PCIe");
  EXPECT_EQ(P.major, 9);
  EXPECT_EQ(P.totalGlobalMem, 64 * MiB);
  EXPECT_EQ(P.concurrentManagedAccess, 1);
  int V = 0;
  ASSERT_EQ(cudaDeviceGetAttribute(&V, cudaDevAttrConcurrentManagedAccess, 0), cudaSuccess);
  EXPECT_EQ(V, 1);
  ASSERT_EQ(cudaDeviceGetAttribute(&V, cudaDevAttrMultiProcessorCount, 0), cudaSuccess);
  EXPECT_EQ(V, P.multiProcessorCount);
  EXPECT_EQ(cudaDeviceGetAttribute(&V, static_cast<cudaDeviceAttr>(100000), 0),
            cudaErrorInvalidValue);
}

// --- Event Management -----------------------------------------------------------

TEST_F(StandIn, ElapsedTimeNeedsTimedRecordedEvents) {
  // cudaEventElapsedTime: "If either event was created with the
  // cudaEventDisableTiming flag, then this function will return
  // cudaErrorInvalidResourceHandle"; likewise if either was never recorded.
  cudaEvent_t A = nullptr, B = nullptr, NoTiming = nullptr;
  ASSERT_EQ(cudaEventCreate(&A), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&B), cudaSuccess);
  ASSERT_EQ(cudaEventCreateWithFlags(&NoTiming, cudaEventDisableTiming), cudaSuccess);
  float Ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&Ms, A, B), cudaErrorInvalidResourceHandle);
  float *P = nullptr;
  ASSERT_EQ(cudaMallocManaged(&P, 8 * MiB, cudaMemAttachGlobal), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(A, nullptr), cudaSuccess);
  ASSERT_EQ(launchAddOne(P, static_cast<int>(8 * MiB / sizeof(float)), nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(B, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(NoTiming, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(B), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(B), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&Ms, A, B), cudaSuccess);
  EXPECT_GT(Ms, 0.0f); // the model's time for 128 faulted pages and the kernel
  EXPECT_EQ(cudaEventElapsedTime(&Ms, A, NoTiming), cudaErrorInvalidResourceHandle);
  EXPECT_EQ(cudaEventDestroy(A), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(B), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(NoTiming), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
}

TEST_F(Batch, CopiesTakeTheModelsCopyTimeOnTheirStream) {
  // cudaMemcpyAsync between pinned host memory and device memory runs on a
  // copy engine at the device model's explicit-copy rates (h100-pcie, the
  // default: 55.03 GB/s host to device, 55.12 GB/s back); the kernel after
  // it on the same stream starts once it has ended.
  const size_t Bytes = 64 * MiB;
  void *Host = nullptr, *Dev = nullptr;
  float *Managed = nullptr;
  ASSERT_EQ(cudaMallocHost(&Host, Bytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&Dev, Bytes), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(&Managed, MiB, cudaMemAttachGlobal), cudaSuccess);
  std::memset(Host, 0x5a, Bytes);
  cudaEvent_t A = nullptr, B = nullptr, C = nullptr;
  for (cudaEvent_t *E : {&A, &B, &C})
    ASSERT_EQ(cudaEventCreate(E), cudaSuccess);
  const deepum_standin_stats Before = stats();
  ASSERT_EQ(cudaEventRecord(A, S), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(Dev, Host, Bytes, cudaMemcpyHostToDevice, S), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(B, S), cudaSuccess);
  ASSERT_EQ(cudaMemcpyAsync(Host, Dev, Bytes, cudaMemcpyDeviceToHost, S), cudaSuccess);
  ASSERT_EQ(launchAddOne(Managed, 16, S), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(C, S), cudaSuccess);
  ASSERT_EQ(cudaEventSynchronize(C), cudaSuccess);
  float In = 0, All = 0;
  ASSERT_EQ(cudaEventElapsedTime(&In, A, B), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&All, A, C), cudaSuccess);
  const double WantIn = static_cast<double>(Bytes) / 55.03e9 * 1e3;
  const double WantOut = static_cast<double>(Bytes) / 55.12e9 * 1e3;
  EXPECT_NEAR(In, WantIn, WantIn * 0.01);
  EXPECT_GT(All, WantIn + WantOut); // the kernel after both copies
  EXPECT_EQ(stats().bytes_copied - Before.bytes_copied, 2 * Bytes);
  EXPECT_EQ(static_cast<unsigned char *>(Host)[Bytes - 1], 0x5a);
  // A memset of host-resident managed memory runs on the GPU: its pages
  // come over as a kernel writing them would fault them in.
  float *Fresh = nullptr;
  ASSERT_EQ(cudaMallocManaged(&Fresh, 4 * MiB, cudaMemAttachGlobal), cudaSuccess);
  const deepum_standin_stats BeforeSet = stats();
  ASSERT_EQ(cudaMemsetAsync(Fresh, 0, 4 * MiB, S), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  EXPECT_EQ(stats().resident_bytes - BeforeSet.resident_bytes, 4 * MiB);
  EXPECT_EQ(stats().kernels, BeforeSet.kernels); // not a kernel of the program's
  for (cudaEvent_t E : {A, B, C})
    EXPECT_EQ(cudaEventDestroy(E), cudaSuccess);
  EXPECT_EQ(cudaFreeHost(Host), cudaSuccess);
  EXPECT_EQ(cudaFree(Dev), cudaSuccess);
  EXPECT_EQ(cudaFree(Managed), cudaSuccess);
  EXPECT_EQ(cudaFree(Fresh), cudaSuccess);
}

TEST_F(Batch, EventsOrderMigrationsAcrossStreams) {
  // Stream semantics: an event stands for the work issued on its stream
  // before it ("cudaEventRecord ... captures the contents of stream at the
  // time of this call"), a stream waiting for it starts its later work no
  // earlier ("all future work submitted to stream will wait until event
  // completes"), cudaEventQuery answers cudaErrorNotReady until that work is
  // done (not an error: cudaGetLastError stays cudaSuccess), and
  // cudaEventSynchronize waits for it. The stand-in's migrations take model
  // time, so an event after a write-back completes when the copy ends.
  cudaStream_t Other = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&Other, cudaStreamNonBlocking), cudaSuccess);
  cudaEvent_t Left = nullptr, Came = nullptr;
  ASSERT_EQ(cudaEventCreate(&Left), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&Came), cudaSuccess);
  ASSERT_EQ(cudaMemPrefetchAsync(Ptrs[0], 4 * MiB, device0(), 0, S), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  ASSERT_EQ(cudaMemPrefetchAsync(Ptrs[0], 4 * MiB, host(), 0, S), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(Left, S), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(Left), cudaErrorNotReady); // its copy is still running
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // The other stream's fetch waits for the write-back: its copy starts when
  // the write-back ends, so the two events lie one 4 MiB copy apart.
  ASSERT_EQ(cudaStreamWaitEvent(Other, Left, 0), cudaSuccess);
  ASSERT_EQ(cudaMemPrefetchAsync(Ptrs[1], 4 * MiB, device0(), 0, Other), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(Came, Other), cudaSuccess);
  float Ms = 0;
  ASSERT_EQ(cudaEventSynchronize(Came), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(Left), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(Came), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&Ms, Left, Came), cudaSuccess);
  const double CopyMs = 4.0 * MiB / 48e9 * 1e3; // h100-pcie's link
  EXPECT_GT(Ms, 0.9 * CopyMs);
  EXPECT_LT(Ms, 1.1 * CopyMs + 0.05); // and the call's cost
  EXPECT_EQ(cudaEventDestroy(Left), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(Came), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(Other), cudaSuccess);
}

TEST_F(Batch, SynchronisationAndQueriesFollowTheModelsClock) {
  // cudaStreamQuery answers cudaErrorNotReady while the stream's work runs,
  // cudaStreamSynchronize and cudaDeviceSynchronize return when it is done
  // (after them every query is cudaSuccess), and cudaEventElapsedTime
  // answers cudaErrorNotReady for an event not yet complete. A program that
  // spins on a query sees time pass (Model::kSpinPolls polls at most).
  cudaEvent_t Begin = nullptr, End = nullptr;
  ASSERT_EQ(cudaEventCreate(&Begin), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&End), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(Begin, S), cudaSuccess);
  ASSERT_EQ(cudaMemPrefetchAsync(Ptrs[0], 4 * MiB, device0(), 0, S), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(End, S), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(S), cudaErrorNotReady);
  float Ms = 0;
  EXPECT_EQ(cudaEventElapsedTime(&Ms, Begin, End), cudaErrorNotReady);
  ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  EXPECT_EQ(cudaStreamQuery(S), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(End), cudaSuccess);
  EXPECT_EQ(cudaEventElapsedTime(&Ms, Begin, End), cudaSuccess);
  EXPECT_GT(Ms, 0.0f);

  ASSERT_EQ(cudaMemPrefetchAsync(Ptrs[1], 4 * MiB, device0(), 0, S), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(End, S), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(End), cudaErrorNotReady);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(cudaEventQuery(End), cudaSuccess);

  ASSERT_EQ(cudaMemPrefetchAsync(Ptrs[2], 4 * MiB, device0(), 0, S), cudaSuccess);
  ASSERT_EQ(cudaEventRecord(End, S), cudaSuccess);
  unsigned Polls = 1;
  while (cudaEventQuery(End) == cudaErrorNotReady)
    ASSERT_LT(++Polls, 10'000u);
  EXPECT_GT(Polls, 1u);
  EXPECT_EQ(cudaStreamQuery(S), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(Begin), cudaSuccess);
  EXPECT_EQ(cudaEventDestroy(End), cudaSuccess);
}

} // namespace
