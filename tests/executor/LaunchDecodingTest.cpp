//===- LaunchDecodingTest.cpp - CUPTI launch callbacks -> execution IDs ----===//
//
// No GPU: hand-built CUpti_CallbackData for each launch entry point, checked
// against format::executionId (what the planner and profiler compute), and the
// rules for nested callbacks (runtime -> driver, __cudaLaunchKernel -> either).
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/cuda/LaunchDecoding.h"

#include "deepum/format/Signature.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace deepum::executor;
using namespace deepum::executor::cuda;

namespace {

struct Recorder : LaunchObserver {
  struct Launch {
    int Device;
    StreamHandle Stream;
    std::vector<uint64_t> Ids;
  };
  void launchBegin(int Device, StreamHandle Stream, const uint64_t *Ids, size_t N) override {
    Begins.push_back({Device, Stream, std::vector<uint64_t>(Ids, Ids + N)});
  }
  void launchEnd(int, StreamHandle Stream) override { Ends.push_back(Stream); }
  std::vector<Launch> Begins;
  std::vector<StreamHandle> Ends;
};

class LaunchDecodingTest : public ::testing::Test {
protected:
  void SetUp() override { detail::setLaunchObserver(&R); }
  void TearDown() override { detail::setLaunchObserver(nullptr); }

  static CUpti_CallbackData data(CUpti_ApiCallbackSite Site, const void *Params,
                                 const char *Symbol) {
    CUpti_CallbackData D{};
    D.callbackSite = Site;
    D.functionParams = Params;
    D.symbolName = Symbol;
    D.context = nullptr; // no GPU: the device falls back to the current one (0)
    return D;
  }
  void call(CUpti_CallbackDomain Dom, CUpti_CallbackId Id, CUpti_ApiCallbackSite Site,
            const void *Params, const char *Symbol) {
    CUpti_CallbackData D = data(Site, Params, Symbol);
    detail::onLaunchCallback(Dom, Id, &D);
  }
  Recorder R;
};

const char *kKernel = "_Z6volta_sgemm_128x64_nnPfS_";

TEST_F(LaunchDecodingTest, RuntimeLaunchMatchesTheFormatsExecutionId) {
  static int Fn = 0; // a function address of its own (names are cached per function)
  cudaLaunchKernel_v7000_params P{};
  P.func = &Fn;
  P.gridDim = dim3(8, 4, 1);
  P.blockDim = dim3(256, 1, 1);
  P.sharedMem = 1024;
  P.stream = reinterpret_cast<cudaStream_t>(0x77);
  for (int Twice = 0; Twice < 2; ++Twice) { // second time: the cached name hash
    call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
         CUPTI_API_ENTER, &P, kKernel);
    call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
         CUPTI_API_EXIT, &P, kKernel);
  }
  uint64_t Want = deepum::format::executionId(kKernel, {8, 4, 1, 256, 1, 1, 1024});
  ASSERT_EQ(R.Begins.size(), 2u);
  for (const auto &B : R.Begins) {
    ASSERT_EQ(B.Ids.size(), 1u);
    EXPECT_EQ(B.Ids[0], Want);
    EXPECT_EQ(B.Stream, 0x77u);
  }
  EXPECT_EQ(R.Ends.size(), 2u);
}

TEST_F(LaunchDecodingTest, AReusedFunctionHandleWithAnotherNameIsRehashed) {
  static int Fn = 0;
  cuLaunchKernel_params Q{};
  Q.f = reinterpret_cast<CUfunction>(&Fn);
  Q.gridDimX = Q.gridDimY = Q.gridDimZ = 1;
  Q.blockDimX = Q.blockDimY = Q.blockDimZ = 1;
  for (const char *Name : {"first_kernel", "second_kernel"}) {
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, &Q,
         Name);
    call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, &Q,
         Name);
  }
  ASSERT_EQ(R.Begins.size(), 2u);
  EXPECT_EQ(R.Begins[1].Ids[0], deepum::format::executionId("second_kernel", {}));
}

TEST_F(LaunchDecodingTest, NestedDriverCallbackIsNotCountedTwice) {
  static int Fn = 0;
  cudaLaunchKernel_v7000_params P{};
  P.func = &Fn;
  P.gridDim = dim3(1, 1, 1);
  P.blockDim = dim3(32, 1, 1);
  cuLaunchKernel_params Q{};
  Q.f = reinterpret_cast<CUfunction>(&Fn);
  Q.gridDimX = Q.gridDimY = Q.gridDimZ = 1;
  Q.blockDimX = 32;
  Q.blockDimY = Q.blockDimZ = 1;
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
       CUPTI_API_ENTER, &P, "k");
  call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_ENTER, &Q,
       "k");
  call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_API_EXIT, &Q, "k");
  EXPECT_TRUE(R.Ends.empty()); // the outer launch is not finished yet
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, CUPTI_API_EXIT,
       &P, "k");
  EXPECT_EQ(R.Begins.size(), 1u);
  EXPECT_EQ(R.Ends.size(), 1u);
}

TEST_F(LaunchDecodingTest, OpaqueCuda13LaunchIsDecodedFromTheCallInside) {
  CUlaunchConfig Cfg{};
  Cfg.gridDimX = 120;
  Cfg.gridDimY = Cfg.gridDimZ = 1;
  Cfg.blockDimX = 128;
  Cfg.blockDimY = Cfg.blockDimZ = 1;
  Cfg.sharedMemBytes = 49152;
  Cfg.hStream = reinterpret_cast<CUstream>(0x99);
  static int Fn = 0;
  cuLaunchKernelEx_params Q{};
  Q.config = &Cfg;
  Q.f = reinterpret_cast<CUfunction>(&Fn);
  const uint64_t Before = detail::undecodedLaunches();
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
       CUPTI_API_ENTER, nullptr, "triton_kernel");
  call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_API_ENTER, &Q,
       "triton_kernel");
  call(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_API_EXIT, &Q,
       "triton_kernel");
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
       CUPTI_API_EXIT, nullptr, "triton_kernel");
  ASSERT_EQ(R.Begins.size(), 1u);
  EXPECT_EQ(R.Begins[0].Ids[0],
            deepum::format::executionId("triton_kernel", {120, 1, 1, 128, 1, 1, 49152}));
  EXPECT_EQ(R.Begins[0].Stream, 0x99u);
  EXPECT_EQ(detail::undecodedLaunches(), Before);
  // Alone (nothing nested), the opaque launch is counted as undecoded, not guessed.
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
       CUPTI_API_ENTER, nullptr, "x");
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
       CUPTI_API_EXIT, nullptr, "x");
  EXPECT_EQ(detail::undecodedLaunches(), Before + 1);
  EXPECT_EQ(R.Begins.size(), 1u);
}

TEST_F(LaunchDecodingTest, GraphLaunchReportsItsKernelsInOneBegin) {
  int Exec = 0;
  detail::setGraphKernels(&Exec, {11, 12, 13});
  cudaGraphLaunch_v10000_params P{};
  P.graphExec = reinterpret_cast<cudaGraphExec_t>(&Exec);
  P.stream = reinterpret_cast<cudaStream_t>(0x5);
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
       CUPTI_API_ENTER, &P, nullptr);
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_EXIT,
       &P, nullptr);
  ASSERT_EQ(R.Begins.size(), 1u);
  EXPECT_EQ(R.Begins[0].Ids, (std::vector<uint64_t>{11, 12, 13}));
  // An unknown graph is not reported (and does not unbalance the nesting).
  int Other = 0;
  P.graphExec = reinterpret_cast<cudaGraphExec_t>(&Other);
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
       CUPTI_API_ENTER, &P, nullptr);
  call(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, CUPTI_API_EXIT,
       &P, nullptr);
  EXPECT_EQ(R.Begins.size(), 1u);
  EXPECT_EQ(R.Ends.size(), 1u);
}

} // namespace
