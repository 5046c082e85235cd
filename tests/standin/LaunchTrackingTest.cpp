//===- LaunchTrackingTest.cpp - deepum's launch tracking on the stand-in ---===//
//
// libdeepum's CUDA backend (executor/cuda) observes launches through CUPTI
// callbacks: the runtime's launch entry points and, nested in them, the
// driver's cuLaunchKernel, whose cuLaunchKernel_params it decodes. Here it
// runs, unchanged, on the stand-in's libcudart.so.13 and libcupti.so.13 while
// tests/standin/TrainStep.cu (nvcc, -cudart shared, built as a library)
// trains: every <<<>>> launch must reach the observer once, in order, with the
// execution ID of its kernel's name and configuration.
//
// CUPTI API reference, CUDA 13 (cupti_callbacks.h, "CUPTI Callback API"):
// "the callback function is invoked twice for each API call: once at entry
// (CUPTI_API_ENTER) and once at exit (CUPTI_API_EXIT)"; symbolName is "the
// name of the symbol operated on by the runtime or driver API function which
// is the source of this callback ... for example the kernel name for a launch
// call". __cudaLaunchKernel (CUDA 13's <<<>>>) has a callback id but no
// parameter struct in generated_cuda_runtime_api_meta.h: the launch is decoded
// from the driver callback nested in it.
//
//===----------------------------------------------------------------------===//
#include "deepum/cupti/KernelParams.h"
#include "deepum/cupti/Subscriber.h"
#include "deepum/executor/Log.h"
#include "deepum/executor/cuda/CudaBackend.h"
#include "deepum/executor/cuda/LaunchDecoding.h"
#include "deepum/format/Signature.h"
#include "deepum/standin/StandIn.h"

#include "NvccEntryPoints.h"

#include "gtest/gtest.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include <set>
#include <string>
#include <vector>

// TrainStep.cu's entry, built with -DDEEPUM_TRAIN_STEP_MAIN=deepum_train_step_main.
int deepum_train_step_main(int argc, char **argv);

namespace {

using namespace deepum::executor;

struct Recorder : LaunchObserver {
  void launchBegin(int Device, StreamHandle Stream, const uint64_t *Seen, size_t Count) override {
    for (size_t I = 0; I < Count; ++I) {
      Ids.push_back(Seen[I]);
      Streams.push_back(Stream);
      Devices.push_back(Device);
    }
    ++Open;
  }
  void launchEnd(int, StreamHandle) override {
    ++Ends;
    --Open;
  }
  std::vector<uint64_t> Ids;
  std::vector<StreamHandle> Streams;
  std::vector<int> Devices;
  int Open = 0;
  size_t Ends = 0;
};

std::vector<deepum_standin_kernel_record> kernelRecords(size_t First) {
  auto Fn = reinterpret_cast<deepum_standin_kernel_records_fn>(
      dlsym(RTLD_DEFAULT, "deepum_standin_kernel_records"));
  if (!Fn)
    return {};
  std::vector<deepum_standin_kernel_record> R(Fn(nullptr, 0, 0) - First);
  if (!R.empty()) // a NULL `out` asks for the count
    R.resize(Fn(R.data(), R.size(), First));
  return R;
}

TEST(LaunchTracking, EveryTripleChevronLaunchOfTrainStepIsDecodedWithItsKernelName) {
  auto Back = cuda::createCudaBackend();
  ASSERT_TRUE(dlsym(RTLD_DEFAULT, "deepum_standin_kernel_records")) << "not on the stand-in";
  Recorder R;
  std::string Why;
  ASSERT_TRUE(Back->startLaunchTracking(&R, Why)) << Why;
  EXPECT_TRUE(deepum::cupti::CuptiSubscriber::instance().holdsSubscriber());
  const size_t Before = kernelRecords(0).size();
  const uint64_t UndecodedBefore = cuda::detail::undecodedLaunches();

  char Prog[] = "train-step", Mode[] = "numbers";
  char *Argv[] = {Prog, Mode, nullptr};
  ASSERT_EQ(deepum_train_step_main(2, Argv), 0);
  Back->stopLaunchTracking();

  const std::vector<deepum_standin_kernel_record> K = kernelRecords(Before);
  ASSERT_GE(K.size(), 4u); // saxpy and three MLP steps
  ASSERT_EQ(R.Ids.size(), K.size()) << "every launch seen once";
  EXPECT_EQ(R.Ends, K.size());
  EXPECT_EQ(R.Open, 0);
  std::set<std::string> Names;
  for (size_t I = 0; I < K.size(); ++I) {
    const deepum::format::LaunchConfig C{K[I].grid[0],         K[I].grid[1],  K[I].grid[2],
                                         K[I].block[0],        K[I].block[1], K[I].block[2],
                                         K[I].shared_mem_bytes};
    EXPECT_EQ(R.Ids[I], deepum::format::executionId(K[I].name, C))
        << "launch " << I << " of " << K[I].name;
    EXPECT_EQ(R.Streams[I], reinterpret_cast<StreamHandle>(K[I].stream)) << K[I].name;
    EXPECT_EQ(R.Devices[I], 0);
    Names.insert(K[I].name);
  }
  EXPECT_TRUE(Names.count("_Z5saxpyifPKfPf")) << "saxpy's mangled name";
  EXPECT_GE(Names.size(), 4u);
  EXPECT_EQ(cuda::detail::undecodedLaunches(), UndecodedBefore)
      << "every __cudaLaunchKernel decoded from its nested driver callback";
}

// A CUDA graph launch is one callback for many kernels: the backend reads the
// graph's kernel nodes when the exec is created (CUPTI resource callback
// CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, CUpti_GraphData::graph, through
// cuGraphGetNodes / cuGraphKernelNodeGetParams / cuFuncGetName) and reports
// them all at cudaGraphLaunch.
void graphHostSymbol() {}
void addOne(deepum_standin_launch *L, void **Args, void *) {
  float *P = *static_cast<float **>(Args[0]);
  const int N = *static_cast<int *>(Args[1]);
  auto Access =
      reinterpret_cast<deepum_standin_access_fn>(dlsym(RTLD_DEFAULT, "deepum_standin_access"));
  if (!Access(L, P, N * sizeof(float), DEEPUM_STANDIN_READ_WRITE))
    return;
  for (int I = 0; I < N; ++I)
    P[I] += 1;
}

/// The kernel name the graph tests register addOne under.
constexpr const char *AddOneName = "_Z6addOnePfi";

/// Registers `HostFn` as kernel `AddOneName` with addOne as its twin, as nvcc's
/// registration code and the twin header would.
::testing::AssertionResult registerAddOne(const void *HostFn) {
  auto Register = reinterpret_cast<deepum_standin_register_twin_fn>(
      dlsym(RTLD_DEFAULT, "deepum_standin_register_twin"));
  if (!Register)
    return ::testing::AssertionFailure() << "not on the stand-in";
  void **H = __cudaRegisterFatBinary(nullptr);
  __cudaRegisterFunction(H, static_cast<const char *>(HostFn), nullptr, AddOneName, -1, nullptr,
                         nullptr, nullptr, nullptr, nullptr);
  __cudaRegisterFatBinaryEnd(H);
  const uint32_t Sizes[] = {sizeof(float *), sizeof(int)};
  if (int E = Register(HostFn, nullptr, &addOne, nullptr, Sizes, 2))
    return ::testing::AssertionFailure() << "deepum_standin_register_twin returned " << E;
  return ::testing::AssertionSuccess();
}

TEST(LaunchTracking, GraphLaunchReportsEveryKernelOfTheGraph) {
  const void *Fn = reinterpret_cast<const void *>(&graphHostSymbol);
  ASSERT_TRUE(registerAddOne(Fn));

  auto Back = cuda::createCudaBackend();
  Recorder R;
  std::string Why;
  ASSERT_TRUE(Back->startLaunchTracking(&R, Why)) << Why;
  float *P = nullptr;
  int N = 1024;
  ASSERT_EQ(
      cudaMallocManaged(reinterpret_cast<void **>(&P), N * sizeof(float), cudaMemAttachGlobal),
      cudaSuccess);
  cudaStream_t S = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal), cudaSuccess);
  std::vector<uint64_t> Expected;
  for (unsigned G : {1u, 2u, 4u}) {
    void *Args[] = {&P, &N};
    ASSERT_EQ(cudaLaunchKernel(Fn, dim3(G), dim3(128), Args, 0, S), cudaSuccess);
    Expected.push_back(
        deepum::format::executionId(AddOneName, deepum::format::LaunchConfig{G, 1, 1, 128, 1, 1, 0}));
  }
  cudaGraph_t Graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(S, &Graph), cudaSuccess);
  // The launches made while capturing: see CapturedLaunchesAreReportedOnlyWhenTheGraphRuns.
  R.Ids.clear();
  R.Ends = 0;
  cudaGraphExec_t Exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&Exec, Graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(Exec, S), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  EXPECT_EQ(R.Ids, Expected);
  EXPECT_EQ(R.Ends, 1u) << "one graph launch, reported once";
  EXPECT_EQ(R.Open, 0);
  EXPECT_EQ(P[0], 3.0f) << "the graph's three kernels ran";
  Back->stopLaunchTracking();
  EXPECT_EQ(cudaGraphExecDestroy(Exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(Graph), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(S), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
}

// A launch into a capturing stream fires its API callbacks (CUPTI reports API
// calls) but its kernel does not run: it becomes a graph node. The executor
// must see the kernels when the graph runs, once per cudaGraphLaunch, and not
// at capture. Captured here: cudaLaunchKernel (decoded from its runtime
// callback) and <<<>>>'s __cudaLaunchKernel (opaque: decoded from the nested
// driver cuLaunchKernel callback), so both domains' capture checks run.
void captureHostSymbol() {}

TEST(LaunchTracking, CapturedLaunchesAreReportedOnlyWhenTheGraphRuns) {
  const void *Fn = reinterpret_cast<const void *>(&captureHostSymbol);
  ASSERT_TRUE(registerAddOne(Fn));
  cudaKernel_t Kernel = nullptr;
  ASSERT_EQ(__cudaGetKernel(&Kernel, Fn), cudaSuccess);

  auto Back = cuda::createCudaBackend();
  Recorder R;
  std::string Why;
  ASSERT_TRUE(Back->startLaunchTracking(&R, Why)) << Why;
  float *P = nullptr;
  int N = 256;
  ASSERT_EQ(
      cudaMallocManaged(reinterpret_cast<void **>(&P), N * sizeof(float), cudaMemAttachGlobal),
      cudaSuccess);
  cudaStream_t S = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), cudaSuccess);
  const uint64_t CapturedBefore = cuda::detail::capturedLaunches();
  const uint64_t UndecodedBefore = cuda::detail::undecodedLaunches();

  ASSERT_EQ(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal), cudaSuccess);
  std::vector<uint64_t> Expected;
  void *Args[] = {&P, &N};
  for (unsigned G : {1u, 2u}) {
    ASSERT_EQ(cudaLaunchKernel(Fn, dim3(G), dim3(64), Args, 0, S), cudaSuccess);
    Expected.push_back(
        deepum::format::executionId(AddOneName, deepum::format::LaunchConfig{G, 1, 1, 64, 1, 1, 0}));
  }
  ASSERT_EQ(__cudaLaunchKernel(Kernel, dim3(3), dim3(32), Args, 0, S), cudaSuccess);
  Expected.push_back(
      deepum::format::executionId(AddOneName, deepum::format::LaunchConfig{3, 1, 1, 32, 1, 1, 0}));
  cudaStreamCaptureStatus Status{};
  ASSERT_EQ(cudaStreamIsCapturing(S, &Status), cudaSuccess);
  EXPECT_EQ(Status, cudaStreamCaptureStatusActive) << "nothing invalidated the capture";
  cudaGraph_t Graph = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(S, &Graph), cudaSuccess);
  EXPECT_TRUE(R.Ids.empty()) << "captured launches are graph nodes, not launches";
  EXPECT_EQ(R.Ends, 0u);
  EXPECT_EQ(R.Open, 0);
  EXPECT_EQ(cuda::detail::capturedLaunches() - CapturedBefore, 3u) << "each counted once";
  EXPECT_EQ(cuda::detail::undecodedLaunches(), UndecodedBefore);
  EXPECT_EQ(P[0], 0.0f) << "nothing ran at capture";

  cudaGraphExec_t Exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&Exec, Graph, 0), cudaSuccess);
  for (int Launch = 1; Launch <= 2; ++Launch) {
    ASSERT_EQ(cudaGraphLaunch(Exec, S), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
    std::vector<uint64_t> Want;
    for (int I = 0; I < Launch; ++I)
      Want.insert(Want.end(), Expected.begin(), Expected.end());
    EXPECT_EQ(R.Ids, Want) << "graph launch " << Launch << ": each kernel once";
    EXPECT_EQ(R.Ends, static_cast<size_t>(Launch));
    EXPECT_EQ(R.Open, 0);
    EXPECT_EQ(P[0], 3.0f * static_cast<float>(Launch)) << "the graph's three kernels ran";
  }
  for (StreamHandle Seen : R.Streams)
    EXPECT_EQ(Seen, reinterpret_cast<StreamHandle>(S));
  EXPECT_EQ(cuda::detail::capturedLaunches() - CapturedBefore, 3u);
  Back->stopLaunchTracking();
  EXPECT_EQ(cudaGraphExecDestroy(Exec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(Graph), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(S), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
}

// A graph instantiated before deepum started tracking (as after
// torch.compile(mode="reduce-overhead") warmed up before the allocator was
// installed) was never read: its launches cannot be reported. deepum steps
// aside for them, counts them and says so once; a graph instantiated while
// tracking is still reported in full.
void earlyHostSymbol() {}

TEST(LaunchTracking, AGraphInstantiatedBeforeTrackingIsCountedAndSaidOnce) {
  const void *Fn = reinterpret_cast<const void *>(&earlyHostSymbol);
  ASSERT_TRUE(registerAddOne(Fn));

  if (deepum::cupti::CuptiSubscriber::instance().available())
    GTEST_SKIP() << "launch tracking already started in this process; ctest runs each test alone";

  float *P = nullptr;
  int N = 128;
  ASSERT_EQ(
      cudaMallocManaged(reinterpret_cast<void **>(&P), N * sizeof(float), cudaMemAttachGlobal),
      cudaSuccess);
  cudaStream_t S = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), cudaSuccess);
  auto capture = [&](unsigned Kernels, cudaGraph_t &Graph, cudaGraphExec_t &Exec) {
    void *Args[] = {&P, &N};
    ASSERT_EQ(cudaStreamBeginCapture(S, cudaStreamCaptureModeGlobal), cudaSuccess);
    for (unsigned K = 1; K <= Kernels; ++K)
      ASSERT_EQ(cudaLaunchKernel(Fn, dim3(K), dim3(32), Args, 0, S), cudaSuccess);
    ASSERT_EQ(cudaStreamEndCapture(S, &Graph), cudaSuccess);
    ASSERT_EQ(cudaGraphInstantiate(&Exec, Graph, 0), cudaSuccess);
  };
  // Before deepum: no CUPTI subscriber in the process yet (one process per test).
  cudaGraph_t Early = nullptr;
  cudaGraphExec_t EarlyExec = nullptr;
  capture(2, Early, EarlyExec);

  auto Back = cuda::createCudaBackend();
  Recorder R;
  std::string Why;
  ASSERT_TRUE(Back->startLaunchTracking(&R, Why)) << Why;
  cudaGraph_t Late = nullptr;
  cudaGraphExec_t LateExec = nullptr;
  capture(3, Late, LateExec);
  R.Ids.clear();
  R.Ends = 0;

  const uint64_t UnseenBefore = cuda::detail::unseenGraphLaunches();
  LogCapture::start();
  for (int Launch = 0; Launch < 3; ++Launch) {
    ASSERT_EQ(cudaGraphLaunch(EarlyExec, S), cudaSuccess);
    ASSERT_EQ(cudaGraphLaunch(LateExec, S), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(S), cudaSuccess);
  const std::string Log = LogCapture::stop();
  Back->stopLaunchTracking();

  EXPECT_EQ(P[0], 15.0f) << "both graphs ran each time (2 + 3 kernels, 3 times)";
  EXPECT_EQ(cuda::detail::unseenGraphLaunches() - UnseenBefore, 3u) << "the early graph's launches";
  EXPECT_EQ(R.Ids.size(), 9u) << "the late graph's three kernels, three times";
  EXPECT_EQ(R.Ends, 3u);
  EXPECT_EQ(R.Open, 0);
  size_t Lines = 0;
  for (size_t At = Log.find("steps aside"); At != std::string::npos;
       At = Log.find("steps aside", At + 1))
    ++Lines;
  EXPECT_EQ(Lines, UnseenBefore == 0 ? 1u : 0u) << "said once per process:\n" << Log;

  EXPECT_EQ(cudaGraphExecDestroy(EarlyExec), cudaSuccess);
  EXPECT_EQ(cudaGraphExecDestroy(LateExec), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(Early), cudaSuccess);
  EXPECT_EQ(cudaGraphDestroy(Late), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(S), cudaSuccess);
  EXPECT_EQ(cudaFree(P), cudaSuccess);
}

// CUDA runtime API: cudaGetLastError "returns the last error that has been
// produced by any of the runtime calls in the same instance of the CUDA
// Runtime library in the host thread and resets it to cudaSuccess".
// libdeepum's calls run on the program's threads: its own failures must not
// reach the program's next cudaGetLastError, and must not swallow the
// program's pending error either (PyTorch checks every launch that way).
TEST(LaunchTracking, DeepumsFailedCallsNeitherLeakNorHideTheProgramsLastError) {
  auto Back = cuda::createCudaBackend();
  StreamHandle Stream = 0;
  ASSERT_TRUE(Back->createStream(0, &Stream).ok());
  (void)cudaGetLastError();
  const MemRange Unmanaged{0x1000, 65536}; // no managed allocation there
  // A failure of deepum's alone: cleared.
  EXPECT_FALSE(Back->prefetchBatch(0, {&Unmanaged, 1}, 0, Stream).ok());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  EXPECT_FALSE(Back->discardBatch(0, {&Unmanaged, 1}, Stream).ok());
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  // The program's own error pending (an allocation that failed): it survives
  // deepum's failing calls in between.
  void *P = nullptr;
  ASSERT_EQ(cudaMalloc(&P, ~size_t{0} >> 2), cudaErrorMemoryAllocation);
  EXPECT_FALSE(Back->prefetchBatch(0, {&Unmanaged, 1}, 0, Stream).ok());
  EXPECT_FALSE(Back->advise(0, Unmanaged, MemAdvice::SetReadMostly).ok());
  EXPECT_NE(cudaGetLastError(), cudaSuccess);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess); // and it was the program's to clear
}


// What a launch's arguments name (deepum/cupti/KernelParams.h): TrainStep's
// matmul(const float *A, const float *B, float *C, int m, int k, int n, int ta,
// int tb), seen at the driver's cuLaunchKernel nested in each <<<>>> launch,
// laid out as nvcc's .nv.info says (cuFuncGetParamInfo); asking past the
// last parameter leaves the program's last error alone (TrainStep checks
// cudaGetLastError after every launch and fails on any error).
struct MatmulLaunches {
  deepum::cupti::ParamLayouts Layouts;
  const std::vector<deepum::cupti::ParamSlot> *Layout = nullptr;
  std::vector<std::vector<uint64_t>> Words;
  static void onLaunch(void *Self, CUpti_CallbackDomain, CUpti_CallbackId, const void *Data) {
    auto *M = static_cast<MatmulLaunches *>(Self);
    const auto *CB = static_cast<const CUpti_CallbackData *>(Data);
    if (CB->callbackSite != CUPTI_API_ENTER || !CB->symbolName ||
        std::string(CB->symbolName) != "_Z6matmulPKfS0_Pfiiiii")
      return;
    const auto *P = static_cast<const cuLaunchKernel_params *>(CB->functionParams);
    M->Layout = M->Layouts.ofFunction(P->f);
    if (!M->Layout)
      return;
    M->Words.emplace_back();
    deepum::cupti::appendArgumentWords(*M->Layout, P->kernelParams, M->Words.back());
  }
};

TEST(KernelParams, MatmulsLayoutComesFromItsCubinAndItsPointersAreRead) {
  auto &Sub = deepum::cupti::CuptiSubscriber::instance();
  ASSERT_TRUE(Sub.acquire()) << Sub.unavailableReason();
  MatmulLaunches M;
  const auto Id = Sub.addHandler(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
                                 &MatmulLaunches::onLaunch, &M);
  ASSERT_NE(Id, 0u);
  char Prog[] = "train-step", Mode[] = "numbers";
  char *Argv[] = {Prog, Mode, nullptr};
  const int Rc = deepum_train_step_main(2, Argv);
  Sub.removeHandler(Id);
  ASSERT_EQ(Rc, 0);
  ASSERT_NE(M.Layout, nullptr);
  const std::vector<uint32_t> Offsets = {0, 8, 16, 24, 28, 32, 36, 40};
  const std::vector<uint32_t> Sizes = {8, 8, 8, 4, 4, 4, 4, 4};
  ASSERT_EQ(M.Layout->size(), Offsets.size());
  for (size_t I = 0; I < Offsets.size(); ++I) {
    EXPECT_EQ((*M.Layout)[I].Offset, Offsets[I]) << I;
    EXPECT_EQ((*M.Layout)[I].Size, Sizes[I]) << I;
  }
  ASSERT_FALSE(M.Words.empty());
  for (const std::vector<uint64_t> &W : M.Words) {
    // Words at 0, 8, 16: the three matrices. A word is read inside one
    // parameter (a pointer never straddles two): the five 4-byte ints hold none.
    ASSERT_EQ(W.size(), 3u);
    cudaPointerAttributes A{};
    for (int I = 0; I < 3; ++I) {
      ASSERT_EQ(cudaPointerGetAttributes(&A, reinterpret_cast<void *>(W[I])), cudaSuccess);
      EXPECT_EQ(A.type, cudaMemoryTypeManaged) << I;
    }
    EXPECT_NE(W[0], W[2]);
  }
}

// The `extra` form: one buffer, its size given by pointer; a launch that
// names no buffer, or one over the parameter limit, has unknown words.
TEST(KernelParams, TheExtraBufferIsReadWordByWord) {
  uint64_t Buffer[3] = {11, 22, 33};
  size_t Size = 20; // two whole words and a half
  void *Extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, Buffer, CU_LAUNCH_PARAM_BUFFER_SIZE, &Size,
                   CU_LAUNCH_PARAM_END};
  std::vector<uint64_t> Words;
  ASSERT_TRUE(deepum::cupti::appendExtraBufferWords(Extra, Words));
  EXPECT_EQ(Words, (std::vector<uint64_t>{11, 22}));
  void *None[] = {CU_LAUNCH_PARAM_END};
  EXPECT_FALSE(deepum::cupti::appendExtraBufferWords(None, Words));
  EXPECT_FALSE(deepum::cupti::appendExtraBufferWords(nullptr, Words));
  Size = deepum::cupti::kMaxParamBufferBytes + 8;
  EXPECT_FALSE(deepum::cupti::appendExtraBufferWords(Extra, Words));
  EXPECT_EQ(Words.size(), 2u);
}

} // namespace
