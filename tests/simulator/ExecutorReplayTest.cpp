//===- ExecutorReplayTest.cpp - deepum-sim's executor replay on hostile plans ===//
//
// Valid plans at the edges of the format, replayed by libdeepum's executor
// driving the simulated GPU (deepum-sim --policy plan).
//
//===----------------------------------------------------------------------===//
#include "Synthetic.h"
#include "TestSupport.h"

#include "deepum/executor/sim/SimBackend.h"
#include "deepum/format/Format.h"
#include "deepum/planner/Planner.h"
#include "deepum/sim/Simulator.h"

#include "gtest/gtest.h"

using namespace deepum;
using namespace deepum::test;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;

TEST(ExecutorReplayHostile, HugeArenaCostsOnlyTheBlocksUsed) {
  v1::Profile P = syntheticTraining();
  planner::PlanOptions PO;
  PO.GpuMemoryBytes = 64 * MiB;
  PO.DeviceModel = "v100-pcie-16gb";
  planner::PlanResult R = takeOk(planner::compilePlan(P, PO));
  auto Device = sim::loadDeviceModel("v100-pcie-16gb");
  ASSERT_TRUE(static_cast<bool>(Device)) << llvm::toString(Device.takeError());
  sim::SimOptions O;
  O.Device = *Device;
  O.Pol = sim::Policy::Plan;
  O.Iterations = 2;
  O.WarmupIterations = 1;
  O.PlanName = "huge.plan.pb";
  auto Normal = executor::sim::replayPlan(P, R.Plan, O);
  ASSERT_TRUE(static_cast<bool>(Normal)) << llvm::toString(Normal.takeError());
  for (uint64_t Arena : {uint64_t{4} << 40, uint64_t{1} << 44, uint64_t{1} << 62,
                         UINT64_MAX - 2 * MiB + 1}) {
    SCOPED_TRACE(Arena);
    v1::Plan Huge = R.Plan;
    Huge.mutable_layout()->set_arena_bytes(Arena);
    if (llvm::Error E = format::validatePlan(Huge)) {
      // A plan loader that caps the arena refuses it outright: as good.
      std::string Text = llvm::toString(std::move(E));
      EXPECT_NE(Text.find("arena"), std::string::npos) << Text;
      continue;
    }
    O.Plan = &Huge;
    deepum_stats_t Stats{};
    auto Replayed = executor::sim::replayPlan(P, Huge, O, &Stats);
    if (!Replayed) {
      std::string E = llvm::toString(Replayed.takeError());
      EXPECT_NE(E.find("arena"), std::string::npos) << E;
      EXPECT_EQ(E.find('\n'), std::string::npos) << E;
      continue;
    }
    EXPECT_EQ(Replayed->IterationUs, Normal->IterationUs);
    EXPECT_EQ(Replayed->Faults, Normal->Faults);
    EXPECT_EQ(Stats.backend_errors, 0u);
    EXPECT_GT(Stats.launches_matched, 0u);
  }
}

} // namespace
