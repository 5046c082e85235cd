//===- ProfileToolsTest.cpp - A recorded profile plans and simulates --------===//
//
// A profile made from hand-built CUPTI records, as deepum-profile would write
// it, must be accepted by the other engineers' tools: deepum-plan compiles a
// plan from it and deepum-sim replays the profile with and without the plan.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/profiler/Recorder.h"
#include "deepum/profiler/cuda/CuptiRecords.h"

#include <cupti_activity.h>

#include "gtest/gtest.h"

#include <cstdio>
#include <sys/wait.h>

using namespace deepum;
using namespace deepum::profiler;
using namespace deepum::test;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t Base = uint64_t{1} << 40;

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

void addKernel(Recorder &R, const char *Name, uint64_t Start, uint64_t End) {
  CUpti_ActivityKernel10 K = {};
  K.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  K.name = Name;
  K.gridX = K.gridY = K.gridZ = 1;
  K.blockX = 256;
  K.blockY = K.blockZ = 1;
  K.start = Start;
  K.end = End;
  cuda::translateActivity(&K, R);
}

void addFault(Recorder &R, uint64_t Address, uint64_t Time, uint32_t Access) {
  CUpti_ActivityUnifiedMemoryCounter3 F = {};
  F.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
  F.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT;
  F.address = Address;
  F.start = Time;
  F.end = Time + 5;
  F.flags = Access;
  cuda::translateActivity(&F, R);
}

TEST(ProfileTools, RecordedProfilePlansAndSimulates) {
  RecorderOptions O;
  O.Skip = 1;
  O.Iterations = 3;
  Recorder R(O);
  R.setOrigin(0);
  R.setUmCounters(true);
  R.addDevice({0, "test-gpu", uint64_t{16} << 30, 70, false});
  R.addLink({0, 3, 16});
  // Weights 8 MiB, activations 4 MiB, gradients 8 MiB: 20 MiB of footprint.
  R.addAllocation(Base, 8 * MiB, 0, 1, AllocationSource::Allocator);
  R.addAllocation(Base + 8 * MiB, 4 * MiB, 0, 2, AllocationSource::Allocator);
  R.addAllocation(Base + 12 * MiB, 8 * MiB, 0, 3, AllocationSource::Allocator);
  for (uint64_t It = 0; It < 4; ++It) {
    uint64_t T = It * 100000;
    addKernel(R, "_Z7forwardPfS_", T + 1000, T + 20000);
    for (uint64_t B = 0; B < 4; ++B)
      addFault(R, Base + B * 2 * MiB, T + 1100 + B, CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ);
    addFault(R, Base + 8 * MiB, T + 1200, CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE);
    addKernel(R, "_Z8backwardPfS_S_", T + 30000, T + 60000);
    addFault(R, Base + 8 * MiB + 2 * MiB, T + 30100,
             CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ);
    for (uint64_t B = 0; B < 4; ++B)
      addFault(R, Base + 12 * MiB + B * 2 * MiB, T + 30200 + B,
               CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE);
    addKernel(R, "_Z4sgdPfS_", T + 70000, T + 80000);
    for (uint64_t B = 0; B < 4; ++B) {
      addFault(R, Base + B * 2 * MiB, T + 70100 + B,
               CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE);
      addFault(R, Base + 12 * MiB + B * 2 * MiB, T + 70200 + B,
               CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ);
    }
    R.step(T + 100000);
  }
  v1::Profile P = takeOk(R.buildProfile());
  ASSERT_EQ(P.iterations_size(), 3);
  std::string Dir = scratchDir("ProfileTools.PlanSim");
  std::string Profile = Dir + "/recorded.profile.pb";
  ASSERT_FALSE(bool(format::writeProfile(P, Profile)));

  // Less than the 20 MiB footprint, more than any one kernel touches: data must move.
  auto [PlanCode, PlanOut] = shell(std::string(DEEPUM_TEST_PLAN_TOOL) + " " + Profile +
                                   " --gpu-memory 16MiB --quiet -o " + Dir + "/recorded.plan.pb");
  ASSERT_EQ(PlanCode, 0) << PlanOut;
  auto [UmCode, UmOut] = shell(std::string(DEEPUM_TEST_SIM_TOOL) + " " + Profile +
                               " --gpu-memory 16MiB --iterations 2 --warmup 1");
  EXPECT_EQ(UmCode, 0) << UmOut;
  auto [SimCode, SimOut] =
      shell(std::string(DEEPUM_TEST_SIM_TOOL) + " " + Profile + " --policy plan --plan " + Dir +
            "/recorded.plan.pb --gpu-memory 16MiB --iterations 2 --warmup 1");
  EXPECT_EQ(SimCode, 0) << SimOut;
}

} // namespace
