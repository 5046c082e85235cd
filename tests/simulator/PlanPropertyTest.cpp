//===- PlanPropertyTest.cpp - Plans judged by the simulator, not the planner ===//
//
// The planner checks its plans with its own replay; here the simulator's
// engine, with its invariant checks on, replays them: on noisy training-like
// profiles at 1.25x to 3x oversubscription, with both strategies, residency
// never exceeds the capacity, no page is read after its data was discarded,
// every policy stays above the lower bounds, and the plan has no demand
// faults in steady state when the largest kernel's working set fits.
//
//===----------------------------------------------------------------------===//
#include "Synthetic.h"
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/planner/Planner.h"
#include "deepum/sim/Simulator.h"

#include "gtest/gtest.h"

#include <string>

using namespace deepum;
using namespace deepum::test;

namespace {

struct Case {
  std::string Name;
  SyntheticOptions Opts;
};

std::vector<Case> cases() {
  std::vector<Case> Cs;
  Cs.push_back({"clean", {}});
  SyntheticOptions O;
  O.ExtraKernel = true;
  Cs.push_back({"extra_kernel", O});
  O = {};
  O.CutShort = true;
  Cs.push_back({"cut_short", O});
  O = {};
  O.TwoStreams = true;
  Cs.push_back({"two_streams", O});
  O = {};
  O.MissingFaults = true;
  Cs.push_back({"missing_faults", O});
  O = {};
  O.Marks = false;
  O.Iterations = 4;
  Cs.push_back({"no_marks", O});
  return Cs;
}

TEST(SimPlanProperties, PlansRespectTheModelOnNoisyProfiles) {
  sim::DeviceModel D = takeOk(sim::loadDeviceModel("v100-pcie-16gb"));
  unsigned Simulated = 0, FitRows = 0;
  for (const Case &C : cases()) {
    v1::Profile P = syntheticTraining(C.Opts);
    uint64_t Footprint = sim::footprintBytes(P);
    for (double Ratio : {1.25, 2.0, 3.0}) {
      for (planner::Strategy S : {planner::Strategy::Prefetch, planner::Strategy::Swap}) {
        SCOPED_TRACE(C.Name + " at " + std::to_string(Ratio) + "x, " +
                     (S == planner::Strategy::Prefetch ? "prefetch" : "swap"));
        planner::PlanOptions PO;
        PO.GpuMemoryBytes = static_cast<uint64_t>(static_cast<double>(Footprint) / Ratio);
        PO.DeviceModel = D.Name;
        PO.Strat = S;
        planner::PlanResult Plan = takeOk(planner::compilePlan(P, PO));
        sim::SimOptions O;
        O.Device = D;
        O.GpuMemoryBytes = PO.GpuMemoryBytes;
        O.Pol = sim::Policy::Plan;
        O.Plan = &Plan.Plan;
        O.Iterations = 3;
        O.CheckInvariants = true;
        sim::SimResult R = takeOk(sim::simulate(P, O));
        ++Simulated;
        EXPECT_GT(R.IterationUs, 0);
        EXPECT_EQ(R.InvariantViolations, 0u);
        EXPECT_LE(R.PeakResidentBytes, PO.GpuMemoryBytes);
        EXPECT_EQ(R.LostReads, 0) << "a discard dropped data that was read again";
        EXPECT_GE(R.IterationUs, R.LowerBoundUs * (1 - 1e-9));
        if (S == planner::Strategy::Prefetch &&
            Plan.Stats.MaxWorkingSetBlocks * format::kUmBlockBytes <= PO.GpuMemoryBytes) {
          EXPECT_EQ(R.Faults, 0) << "the largest kernel fits, so nothing may fault";
          ++FitRows;
        }
      }
    }
  }
  EXPECT_EQ(Simulated, 6u * 3u * 2u);
  EXPECT_GT(FitRows, 0u) << "the fault property was never exercised";
}

} // namespace
