//===- LaunchDecodingTest.cpp - CUPTI launch callbacks -> execution IDs ----===//
//
// No GPU: hand-built CUpti_CallbackData for each launch entry point, checked
// against format::executionId (what the planner and profiler compute), and the
// rules for nested callbacks (runtime -> driver, __cudaLaunchKernel -> either).
//
// The table below has one row per callback id the backend subscribes to, each
// with its own parameter struct from CUDA 13's generated_cuda_runtime_api_meta.h
// and generated_cuda_meta.h (the _ptsz structs included, so a layout the
// decoder assumes shared is checked). The set of rows must equal the set of
// subscribed ids, and no other id of either domain may decode.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/cuda/LaunchDecoding.h"

#include "deepum/executor/Log.h"
#include "deepum/format/Signature.h"

#include "gtest/gtest.h"

#include <set>
#include <string>
#include <utility>
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

// --- Every subscribed launch API, from its own parameter struct -------------

/// One launch as the program made it.
struct Launch {
  const void *Fn;
  const char *Name;
  deepum::format::LaunchConfig C;
  uintptr_t Stream;
};

void fire(CUpti_CallbackDomain Dom, CUpti_CallbackId Id, const void *Params, const char *Name) {
  for (CUpti_ApiCallbackSite Site : {CUPTI_API_ENTER, CUPTI_API_EXIT}) {
    CUpti_CallbackData D{};
    D.callbackSite = Site;
    D.functionParams = Params;
    D.symbolName = Name;
    detail::onLaunchCallback(Dom, Id, &D);
  }
}

/// cudaLaunchKernel-shaped runtime structs (func, gridDim, blockDim, args, sharedMem, stream).
template <typename P>
void runtimeTriple(const Launch &L, CUpti_CallbackDomain D, CUpti_CallbackId I) {
  P Q{};
  Q.func = L.Fn;
  Q.gridDim = dim3(L.C.GridX, L.C.GridY, L.C.GridZ);
  Q.blockDim = dim3(L.C.BlockX, L.C.BlockY, L.C.BlockZ);
  Q.sharedMem = L.C.SharedMemoryBytes;
  Q.stream = reinterpret_cast<cudaStream_t>(L.Stream);
  fire(D, I, &Q, L.Name);
}

template <typename P> void runtimeEx(const Launch &L, CUpti_CallbackDomain D, CUpti_CallbackId I) {
  cudaLaunchConfig_t Cfg{};
  Cfg.gridDim = dim3(L.C.GridX, L.C.GridY, L.C.GridZ);
  Cfg.blockDim = dim3(L.C.BlockX, L.C.BlockY, L.C.BlockZ);
  Cfg.dynamicSmemBytes = L.C.SharedMemoryBytes;
  Cfg.stream = reinterpret_cast<cudaStream_t>(L.Stream);
  P Q{};
  Q.config = &Cfg;
  Q.func = L.Fn;
  fire(D, I, &Q, L.Name);
}

/// cuLaunchKernel-shaped driver structs (f, grid, block, sharedMemBytes, hStream, ...).
template <typename P>
void driverTriple(const Launch &L, CUpti_CallbackDomain D, CUpti_CallbackId I) {
  P Q{};
  Q.f = reinterpret_cast<CUfunction>(const_cast<void *>(L.Fn));
  Q.gridDimX = L.C.GridX;
  Q.gridDimY = L.C.GridY;
  Q.gridDimZ = L.C.GridZ;
  Q.blockDimX = L.C.BlockX;
  Q.blockDimY = L.C.BlockY;
  Q.blockDimZ = L.C.BlockZ;
  Q.sharedMemBytes = L.C.SharedMemoryBytes;
  Q.hStream = reinterpret_cast<CUstream>(L.Stream);
  fire(D, I, &Q, L.Name);
}

template <typename P> void driverEx(const Launch &L, CUpti_CallbackDomain D, CUpti_CallbackId I) {
  CUlaunchConfig Cfg{};
  Cfg.gridDimX = L.C.GridX;
  Cfg.gridDimY = L.C.GridY;
  Cfg.gridDimZ = L.C.GridZ;
  Cfg.blockDimX = L.C.BlockX;
  Cfg.blockDimY = L.C.BlockY;
  Cfg.blockDimZ = L.C.BlockZ;
  Cfg.sharedMemBytes = L.C.SharedMemoryBytes;
  Cfg.hStream = reinterpret_cast<CUstream>(L.Stream);
  P Q{};
  Q.config = &Cfg;
  Q.f = reinterpret_cast<CUfunction>(const_cast<void *>(L.Fn));
  fire(D, I, &Q, L.Name);
}

/// Graph launches report the kernels read at instantiation: the launch's own
/// function address stands for the graph exec, registered with its kernel.
std::vector<uint64_t> graphKernels(const Launch &L) {
  return {deepum::format::executionId(L.Name, L.C), 0x1234};
}
template <typename P>
void runtimeGraph(const Launch &L, CUpti_CallbackDomain D, CUpti_CallbackId I) {
  detail::setGraphKernels(L.Fn, graphKernels(L));
  P Q{};
  Q.graphExec = reinterpret_cast<cudaGraphExec_t>(const_cast<void *>(L.Fn));
  Q.stream = reinterpret_cast<cudaStream_t>(L.Stream);
  fire(D, I, &Q, nullptr);
}
void driverGraph(const Launch &L, CUpti_CallbackDomain D, CUpti_CallbackId I) {
  detail::setGraphKernels(L.Fn, graphKernels(L));
  cuGraphLaunch_params Q{};
  Q.hGraph = reinterpret_cast<CUgraphExec>(const_cast<void *>(L.Fn));
  Q.hStream = reinterpret_cast<CUstream>(L.Stream);
  fire(D, I, &Q, nullptr);
}
void driverGraphPtsz(const Launch &L, CUpti_CallbackDomain D, CUpti_CallbackId I) {
  detail::setGraphKernels(L.Fn, graphKernels(L));
  cuGraphLaunch_ptsz_params Q{};
  Q.hGraphExec = reinterpret_cast<CUgraphExec>(const_cast<void *>(L.Fn));
  Q.hStream = reinterpret_cast<CUstream>(L.Stream);
  fire(D, I, &Q, nullptr);
}

/// __cudaLaunchKernel (no parameter struct): decoded from the driver call
/// nested in it, cuLaunchKernelEx or its _ptsz twin.
template <CUpti_CallbackId Nested>
void opaque(const Launch &L, CUpti_CallbackDomain D, CUpti_CallbackId I) {
  CUpti_CallbackData Outer{};
  Outer.callbackSite = CUPTI_API_ENTER;
  Outer.symbolName = L.Name;
  detail::onLaunchCallback(D, I, &Outer);
  if (Nested == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx)
    driverEx<cuLaunchKernelEx_params>(L, CUPTI_CB_DOMAIN_DRIVER_API, Nested);
  else
    driverEx<cuLaunchKernelEx_ptsz_params>(L, CUPTI_CB_DOMAIN_DRIVER_API, Nested);
  Outer.callbackSite = CUPTI_API_EXIT;
  detail::onLaunchCallback(D, I, &Outer);
}

struct Api {
  const char *Name;
  CUpti_CallbackDomain Domain;
  CUpti_CallbackId Id;
  bool PerThread; // a _ptsz entry point: the null stream is the per-thread stream
  bool Graph;
  void (*Fire)(const Launch &, CUpti_CallbackDomain, CUpti_CallbackId);
};

constexpr CUpti_CallbackDomain kRt = CUPTI_CB_DOMAIN_RUNTIME_API;
constexpr CUpti_CallbackDomain kDrv = CUPTI_CB_DOMAIN_DRIVER_API;

// clang-format off
const Api kApis[] = {
  {"cudaLaunchKernel", kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, false, false,
   &runtimeTriple<cudaLaunchKernel_v7000_params>},
  {"cudaLaunchKernel_ptsz", kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000, true, false,
   &runtimeTriple<cudaLaunchKernel_ptsz_v7000_params>},
  {"cudaLaunchCooperativeKernel", kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000,
   false, false, &runtimeTriple<cudaLaunchCooperativeKernel_v9000_params>},
  {"cudaLaunchCooperativeKernel_ptsz", kRt,
   CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000, true, false,
   &runtimeTriple<cudaLaunchCooperativeKernel_ptsz_v9000_params>},
  {"cudaLaunchKernelExC", kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060, false, false,
   &runtimeEx<cudaLaunchKernelExC_v11060_params>},
  {"cudaLaunchKernelExC_ptsz", kRt, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060, true,
   false, &runtimeEx<cudaLaunchKernelExC_ptsz_v11060_params>},
  {"__cudaLaunchKernel", kRt, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, false, false,
   &opaque<CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx>},
  {"__cudaLaunchKernel_ptsz", kRt, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000, true,
   false, &opaque<CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz>},
  {"cudaGraphLaunch", kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, false, true,
   &runtimeGraph<cudaGraphLaunch_v10000_params>},
  {"cudaGraphLaunch_ptsz", kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, true, true,
   &runtimeGraph<cudaGraphLaunch_ptsz_v10000_params>},
  {"cuLaunchKernel", kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, false, false,
   &driverTriple<cuLaunchKernel_params>},
  {"cuLaunchKernel_ptsz", kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz, true, false,
   &driverTriple<cuLaunchKernel_ptsz_params>},
  {"cuLaunchCooperativeKernel", kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel, false,
   false, &driverTriple<cuLaunchCooperativeKernel_params>},
  {"cuLaunchCooperativeKernel_ptsz", kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
   true, false, &driverTriple<cuLaunchCooperativeKernel_ptsz_params>},
  {"cuLaunchKernelEx", kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, false, false,
   &driverEx<cuLaunchKernelEx_params>},
  {"cuLaunchKernelEx_ptsz", kDrv, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz, true, false,
   &driverEx<cuLaunchKernelEx_ptsz_params>},
  {"cuGraphLaunch", kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, false, true, &driverGraph},
  {"cuGraphLaunch_ptsz", kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, true, true,
   &driverGraphPtsz},
};
// clang-format on

TEST_F(LaunchDecodingTest, EveryLaunchApiGivesTheProfilersExecutionIdAndStream) {
  // Every field distinct, so a swapped pair changes the ID.
  const deepum::format::LaunchConfig C{7, 5, 3, 64, 2, 1, 4096};
  static char Functions[std::size(kApis)][2]; // an address of its own per API and stream
  const uint64_t UndecodedBefore = detail::undecodedLaunches();
  for (size_t A = 0; A < std::size(kApis); ++A) {
    const Api &Api = kApis[A];
    const std::string Name = std::string("_Z6kernelv_") + Api.Name;
    for (uintptr_t Stream : {uintptr_t{0x77}, uintptr_t{0}}) {
      SCOPED_TRACE(std::string(Api.Name) + (Stream ? " on a stream" : " on the null stream"));
      const Launch L{&Functions[A][Stream ? 0 : 1], Name.c_str(), C, Stream};
      R.Begins.clear();
      R.Ends.clear();
      Api.Fire(L, Api.Domain, Api.Id);
      ASSERT_EQ(R.Begins.size(), 1u) << "reported once";
      const std::vector<uint64_t> Want =
          Api.Graph ? graphKernels(L) : std::vector<uint64_t>{deepum::format::executionId(Name, C)};
      EXPECT_EQ(R.Begins[0].Ids, Want);
      const StreamHandle WantStream = Stream ? Stream
                                      : Api.PerThread
                                          ? reinterpret_cast<StreamHandle>(cudaStreamPerThread)
                                          : StreamHandle{0};
      EXPECT_EQ(R.Begins[0].Stream, WantStream);
      ASSERT_EQ(R.Ends.size(), 1u) << "ended once";
      EXPECT_EQ(R.Ends[0], WantStream);
    }
  }
  EXPECT_EQ(detail::undecodedLaunches(), UndecodedBefore);
}

TEST_F(LaunchDecodingTest, TheSubscribedIdsAreExactlyTheDecodedOnes) {
  std::set<std::pair<int, CUpti_CallbackId>> Subscribed, Tested;
  for (const detail::LaunchCallback &L : detail::launchCallbacks())
    EXPECT_TRUE(Subscribed.insert({L.Domain, L.Id}).second) << "subscribed twice: " << L.Id;
  for (const Api &A : kApis)
    Tested.insert({A.Domain, A.Id});
  EXPECT_EQ(Subscribed, Tested) << "every subscribed id has a row above, and only those";

  // Any other id, even with parameters that would decode under any launch
  // struct (every word points at a zeroed block that is also a known graph
  // exec), reports nothing: a decoder case for an id that is not subscribed
  // fails here.
  alignas(64) static unsigned char Zero[1024] = {};
  detail::setGraphKernels(Zero, {99});
  std::vector<void *> Poison(128, Zero);
  const uint64_t UndecodedBefore = detail::undecodedLaunches();
  size_t Tried = 0;
  for (auto [Dom, Size] : {std::pair{kRt, uint32_t{CUPTI_RUNTIME_TRACE_CBID_SIZE}},
                           std::pair{kDrv, uint32_t{CUPTI_DRIVER_TRACE_CBID_SIZE}}})
    for (CUpti_CallbackId Id = 1; Id < Size; ++Id) {
      if (Subscribed.count({Dom, Id}))
        continue;
      fire(Dom, Id, Poison.data(), "poison");
      ++Tried;
    }
  EXPECT_GT(Tried, 1000u);
  EXPECT_TRUE(R.Begins.empty()) << "an unsubscribed id decoded";
  EXPECT_TRUE(R.Ends.empty());
  EXPECT_EQ(detail::undecodedLaunches(), UndecodedBefore);
  // The same poison through a subscribed id does decode (the check above can fail).
  fire(kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, Poison.data(), nullptr);
  ASSERT_EQ(R.Begins.size(), 1u);
  EXPECT_EQ(R.Begins[0].Ids, std::vector<uint64_t>{99});
}

TEST_F(LaunchDecodingTest, AnUnseenGraphIsCountedAndSaidOnce) {
  static int Unknown = 0, Empty = 0;   // addresses no other test registers
  detail::setGraphKernels(&Empty, {}); // read, but no kernel nodes: nothing to say
  const uint64_t Before = detail::unseenGraphLaunches();
  deepum::executor::LogCapture::start();
  for (int I = 0; I < 3; ++I) {
    cudaGraphLaunch_v10000_params P{};
    P.graphExec = reinterpret_cast<cudaGraphExec_t>(&Unknown);
    fire(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, &P, nullptr);
    cuGraphLaunch_params Q{};
    Q.hGraph = reinterpret_cast<CUgraphExec>(&Empty);
    fire(kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, &Q, nullptr);
  }
  // cudaGraphLaunch calls cuGraphLaunch: one launch, counted once.
  cudaGraphLaunch_ptsz_v10000_params Outer{};
  Outer.graphExec = reinterpret_cast<cudaGraphExec_t>(&Unknown);
  cuGraphLaunch_ptsz_params Inner{};
  Inner.hGraphExec = reinterpret_cast<CUgraphExec>(&Unknown);
  CUpti_CallbackData D{};
  D.callbackSite = CUPTI_API_ENTER;
  D.functionParams = &Outer;
  detail::onLaunchCallback(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, &D);
  fire(kDrv, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, &Inner, nullptr);
  D.callbackSite = CUPTI_API_EXIT;
  detail::onLaunchCallback(kRt, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, &D);
  const std::string Log = deepum::executor::LogCapture::stop();
  EXPECT_TRUE(R.Begins.empty());
  EXPECT_TRUE(R.Ends.empty());
  EXPECT_EQ(detail::unseenGraphLaunches() - Before, 4u) << "the unknown graph's launches only";
  size_t Lines = 0;
  for (size_t At = Log.find("steps aside"); At != std::string::npos;
       At = Log.find("steps aside", At + 1))
    ++Lines;
  // Said once per process: here, unless an earlier test already said it.
  EXPECT_EQ(Lines, Before == 0 ? 1u : 0u) << Log;
}

} // namespace
