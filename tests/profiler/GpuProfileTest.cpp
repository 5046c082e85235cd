//===- GpuProfileTest.cpp - deepum-profile on a real GPU (label: gpu) -------===//
//
// Skips where no CUDA device exists. Does not link libcuda (the test binary
// must start, and be listed, on machines without a driver): the device is
// probed through dlopen.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cstdio>
#include <dlfcn.h>
#include <sys/wait.h>

using namespace deepum;
using namespace deepum::test;
using ::testing::HasSubstr;

namespace {

/// Empty when a device is usable, else why not.
std::string whyNoDevice() {
  void *Lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!Lib)
    return "no CUDA driver (libcuda.so.1 not found)";
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int *);
  auto Init = reinterpret_cast<InitFn>(dlsym(Lib, "cuInit"));
  auto Count = reinterpret_cast<CountFn>(dlsym(Lib, "cuDeviceGetCount"));
  int N = 0;
  if (!Init || !Count || Init(0) != 0 || Count(&N) != 0 || N == 0)
    return "no CUDA device";
  return "";
}

std::pair<int, std::string> shell(const std::string &Cmd) {
  std::string Out;
  FILE *P = popen((Cmd + " 2>&1").c_str(), "r");
  if (!P)
    return {-1, ""};
  char Buf[4096];
  while (size_t N = fread(Buf, 1, sizeof(Buf), P))
    Out.append(Buf, N);
  int Status = pclose(P);
  return {WIFEXITED(Status) ? WEXITSTATUS(Status) : -1, Out};
}

class GpuProfile : public ::testing::Test {
protected:
  void SetUp() override {
    if (std::string Why = whyNoDevice(); !Why.empty())
      GTEST_SKIP() << Why;
  }
};

TEST_F(GpuProfile, NaturalFaultsAreAttributed) {
  std::string Out = scratchDir("GpuProfile.Natural") + "/gpu.profile.pb";
  auto [Code, Log] = shell(std::string(DEEPUM_TEST_PROFILE_TOOL) + " --skip 1 --iterations 2 -o " +
                           Out + " -- " + DEEPUM_TEST_GPU_WORKLOAD + " 5 64");
  ASSERT_EQ(Code, 0) << Log;
  v1::Profile P = takeOk(format::readProfile(Out));
  ASSERT_EQ(P.iterations_size(), 2) << Log;
  EXPECT_EQ(P.kernels_size(), 2);
  EXPECT_EQ(P.kernels(0).name(), "touch");
  EXPECT_FALSE(P.device().name().empty());
  EXPECT_EQ(P.allocations_size(), 1); // the driver saw cuMemAllocManaged
  if (!P.recording().um_counters_enabled()) {
    // A platform that refuses counters must say why, and still give kernels.
    EXPECT_FALSE(P.recording().um_counters_error().empty());
    GTEST_SKIP() << "UM counters refused here: " << P.recording().um_counters_error();
  }
  ASSERT_GT(P.faults_size(), 0) << Log;
  uint64_t Attributed = 0;
  for (const v1::PageFault &F : P.faults())
    Attributed += F.kernel_index() >= 0;
  EXPECT_GT(Attributed, P.faults_size() / 2) << "most faults should land inside the kernel";
  EXPECT_GT(P.kernels(0).blocks_size(), 0);
}

TEST_F(GpuProfile, AccessSetModeSeesEveryPageEachIteration) {
  std::string Out = scratchDir("GpuProfile.AccessSet") + "/gpu.profile.pb";
  auto [Code, Log] = shell(std::string(DEEPUM_TEST_PROFILE_TOOL) +
                           " --mode access-set --skip 1 --iterations 2 -o " + Out + " -- " +
                           DEEPUM_TEST_GPU_WORKLOAD + " 4 16 resident");
  ASSERT_EQ(Code, 0) << Log;
  v1::Profile P = takeOk(format::readProfile(Out));
  EXPECT_EQ(P.access_source(), v1::ACCESS_SOURCE_MEASURED_ACCESS_SET);
  if (!P.recording().um_counters_enabled())
    GTEST_SKIP() << "UM counters refused here: " << P.recording().um_counters_error();
  // 16 MiB = 8 blocks, every page touched by every launch, though the buffer
  // stays resident between them when left alone.
  ASSERT_EQ(P.kernels_size(), 4);
  for (const v1::Kernel &K : P.kernels()) {
    ASSERT_EQ(K.blocks_size(), 8) << K.name();
    for (const v1::BlockAccess &B : K.blocks())
      EXPECT_EQ(B.page_mask(), 0xffffffffu);
  }
}

TEST_F(GpuProfile, IterationsFromProfilerApiAndNvtx) {
  for (std::string Mode : {"profiler-api", "nvtx"}) {
    std::string Out = scratchDir("GpuProfile.Marks." + Mode) + "/gpu.profile.pb";
    std::string Range = Mode == "nvtx" ? " --step-range train_step" : "";
    auto [Code, Log] =
        shell(std::string(DEEPUM_TEST_PROFILE_TOOL) + Range + " --skip 1 --iterations 2 -o " + Out +
              " -- " + DEEPUM_TEST_GPU_WORKLOAD + " 4 8 " + Mode);
    ASSERT_EQ(Code, 0) << Mode << ": " << Log;
    v1::Profile P = takeOk(format::readProfile(Out));
    EXPECT_EQ(P.iterations_size(), 2) << Mode << ": " << Log;
    EXPECT_EQ(P.kernels_size(), 2) << Mode;
  }
}

} // namespace
