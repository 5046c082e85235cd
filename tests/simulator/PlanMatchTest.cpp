//===- PlanMatchTest.cpp - Which kernels a plan replays ---------------------===//
//
// A plan names its launch sequence; the simulator replays the profile's
// kernels that have it: the iteration the plan was compiled from, found even
// when the profile has no iteration marks or its last iteration is noise. A
// plan whose sequence is nowhere in the profile is for another workload.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "deepum/executor/sim/SimBackend.h"
#include "deepum/format/Format.h"
#include "deepum/planner/Planner.h"
#include "deepum/sim/Simulator.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace deepum;
using namespace deepum::test;
using ::testing::HasSubstr;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;

/// Three iterations of a small training-like loop; `Noise` adds a kernel to
/// the last iteration.
v1::Profile loop(bool Marks, bool Noise, int Iterations = 3) {
  ProfileBuilder B("v100-pcie-16gb");
  uint64_t W = B.allocate(8 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t A = B.allocate(8 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION);
  uint64_t G = B.allocate(8 * MiB, 0, -1, v1::ALLOCATION_ROLE_GRADIENT);
  for (int It = 0; It < Iterations; ++It) {
    int First = B.profile().kernels_size();
    B.kernel("fwd", 200'000, {{W, v1::ACCESS_MODE_READ}, {A, v1::ACCESS_MODE_WRITE}});
    B.kernel("bwd", 400'000, {{A, v1::ACCESS_MODE_READ}, {G, v1::ACCESS_MODE_WRITE}});
    if (Noise && It == Iterations - 1)
      B.kernel("extra", 50'000, {{A, v1::ACCESS_MODE_READ}});
    B.kernel("step", 100'000, {{G, v1::ACCESS_MODE_READ}, {W, v1::ACCESS_MODE_READ_WRITE}});
    if (Marks)
      B.iteration(static_cast<uint32_t>(First),
                  static_cast<uint32_t>(B.profile().kernels_size() - First));
  }
  return B.build();
}

v1::Plan planFor(const v1::Profile &P) {
  planner::PlanOptions O;
  O.GpuMemoryBytes = 16 * MiB;
  O.DeviceModel = "v100-pcie-16gb";
  return takeOk(planner::compilePlan(P, O)).Plan;
}

sim::SimOptions planOptions(const v1::Plan &Plan) {
  sim::SimOptions O;
  O.Device = takeOk(sim::loadDeviceModel("v100-pcie-16gb"));
  O.GpuMemoryBytes = 16 * MiB;
  O.Pol = sim::Policy::Plan;
  O.PlanPolicy = executor::sim::executorPlanPolicy;
  O.Plan = &Plan;
  O.PlanName = "loop.plan.pb";
  O.ProfileName = "loop.profile.pb";
  return O;
}

TEST(SimPlanMatch, MarkedIterationIsReplayed) {
  v1::Profile P = loop(/*Marks=*/true, /*Noise=*/false);
  v1::Plan Plan = planFor(P);
  auto Range = takeOk(sim::planIteration(Plan, P));
  EXPECT_EQ(Range.second, 3u);
  sim::SimResult R = takeOk(sim::simulate(P, planOptions(Plan)));
  EXPECT_NEAR(R.IdealUs, 700, 1e-9);
}

TEST(SimPlanMatch, NoisyLastIterationAndNoMarksStillSimulate) {
  // The last iteration has an extra kernel: the plan is compiled from a clean
  // one, and the simulator finds it by its launch sequence.
  v1::Profile Noisy = loop(/*Marks=*/true, /*Noise=*/true);
  v1::Plan Plan = planFor(Noisy);
  ASSERT_EQ(Plan.position_ids_size(), 3);
  auto Range = takeOk(sim::planIteration(Plan, Noisy));
  EXPECT_EQ(Range.second, 3u);
  EXPECT_LT(Range.first, Noisy.iterations(2).first_kernel());
  EXPECT_GT(takeOk(sim::simulate(Noisy, planOptions(Plan))).IterationUs, 0);

  // No marks: the planner finds the period; the simulator finds the run.
  v1::Profile Unmarked = loop(/*Marks=*/false, /*Noise=*/false, /*Iterations=*/6);
  v1::Plan FromPeriod = planFor(Unmarked);
  ASSERT_EQ(FromPeriod.position_ids_size(), 3);
  EXPECT_EQ(takeOk(sim::planIteration(FromPeriod, Unmarked)).first, 15u); // the last run
  sim::SimResult R = takeOk(sim::simulate(Unmarked, planOptions(FromPeriod)));
  EXPECT_NEAR(R.IdealUs, 700, 1e-9);
}

TEST(SimPlanMatch, PlanForAnotherWorkloadIsOneClearError) {
  v1::Profile P = loop(/*Marks=*/true, /*Noise=*/false);
  v1::Plan Plan = planFor(P);
  ProfileBuilder Other("v100-pcie-16gb");
  uint64_t X = Other.allocate(8 * MiB);
  for (int I = 0; I < 3; ++I)
    Other.kernel("conv" + std::to_string(I), 100'000, {{X, v1::ACCESS_MODE_READ_WRITE}});
  Other.iteration(0, 3);
  std::string E = errorText(sim::simulate(Other.build(), planOptions(Plan)));
  EXPECT_THAT(E, HasSubstr("loop.plan.pb does not match loop.profile.pb"));
  EXPECT_EQ(E.find('\n'), std::string::npos);
}

} // namespace
