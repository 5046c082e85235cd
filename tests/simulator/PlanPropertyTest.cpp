//===- PlanPropertyTest.cpp - Plans judged by the simulator, not the planner ===//
//
// The planner checks its plans with its own replay; here the simulator's
// engine, with its invariant checks on, replays them: on noisy training-like
// profiles at 1.25x to 3x oversubscription, with every strategy, residency
// never exceeds the capacity, no page is read after its data was discarded,
// every policy stays above the lower bounds, and the plan has no demand
// faults in steady state when the largest kernel's working set fits.
//
//===----------------------------------------------------------------------===//
#include "Synthetic.h"
#include "TestSupport.h"

#include "deepum/base/DeviceModel.h"
#include "deepum/executor/sim/SimBackend.h"
#include "deepum/format/Format.h"
#include "deepum/format/Perfetto.h"
#include "deepum/planner/Planner.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

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
      for (planner::Strategy S : planner::kStrategies) {
        SCOPED_TRACE(C.Name + " at " + std::to_string(Ratio) + "x, " +
                     planner::strategyName(S).str());
        planner::PlanOptions PO;
        PO.GpuMemoryBytes = static_cast<uint64_t>(static_cast<double>(Footprint) / Ratio);
        PO.DeviceModel = D.Name;
        PO.Strat = S;
        planner::PlanResult Plan = takeOk(planner::compilePlan(P, PO));
        sim::SimOptions O;
        O.Device = D;
        O.GpuMemoryBytes = PO.GpuMemoryBytes;
        O.Pol = sim::Policy::Plan;
        O.PlanPolicy = executor::sim::executorPlanPolicy;
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
  EXPECT_EQ(Simulated, 6u * 3u * std::size(planner::kStrategies));
  EXPECT_GT(FitRows, 0u) << "the fault property was never exercised";
}

} // namespace

namespace {

/// The shipped v100-pcie-16gb model, but the driver copies clean pages back
/// on eviction (one copy of each page, as without read duplication).
std::string copiesCleanDeviceFile(const std::string &Dir) {
  llvm::json::Value Root = takeOk(llvm::json::parse(base::builtinDeviceModelsJson()));
  llvm::json::Array Out;
  for (llvm::json::Value &M : *Root.getAsObject()->getArray("models"))
    if (M.getAsObject()->getString("name") == llvm::Optional<llvm::StringRef>("v100-pcie-16gb")) {
      llvm::json::Object Copy = *M.getAsObject();
      Copy["name"] = "v100-copies-clean";
      Copy["eviction_copies_clean"] = true;
      llvm::json::Object Drops = Copy;
      Drops["name"] = "v100-drops-clean";
      Drops["eviction_copies_clean"] = false;
      Out.push_back(std::move(Copy));
      Out.push_back(std::move(Drops));
    }
  std::string Path = Dir + "/copies-clean.json";
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  OS << llvm::json::Value(llvm::json::Object{{"models", std::move(Out)}});
  OS.flush();
  EXPECT_FALSE(bool(format::writeFileAtomically(Path, Text)));
  return Path;
}

unsigned advised(const v1::Plan &P) {
  unsigned N = 0;
  for (const v1::Action &A : P.actions())
    if (A.kind() == v1::ACTION_KIND_ADVISE && A.advice() == v1::ADVICE_SET_READ_MOSTLY)
      N += static_cast<unsigned>(A.ranges_size());
  return N;
}

} // namespace

TEST(SimPlanAdvice, ReadMostlyOnlyWhereTheSimulatorShowsItPays) {
  // Where the driver copies clean pages on eviction (one copy of each page),
  // advising read-mostly the blocks no kernel writes (frozen parameters) that
  // the schedule evicts saves their copies: in the forward pass the
  // device-to-host engine also carries the activations' write-backs. The
  // planner keeps the advice only when its replay says it is faster; the
  // simulator must agree. Where clean evictions cost nothing (a driver that
  // knew the host copy is current; the shipped models copy them, as stock
  // UVM does) no advice is emitted at all.
  std::string Dir = scratchDir("SimPlanAdvice");
  std::string File = copiesCleanDeviceFile(Dir);
  SyntheticOptions SO;
  SO.FrozenParameters = true; // read-only blocks the schedule has to evict
  SO.ParamBytes = 16ull << 20; // frozen parameters evicted in the forward pass
  SO.ActivationBytes = 16ull << 20;
  SO.KernelNs = 100000;
  v1::Profile P = syntheticTraining(SO);
  uint64_t Capacity = sim::footprintBytes(P) / 2;

  planner::PlanOptions PO;
  PO.GpuMemoryBytes = Capacity;
  PO.DeviceModel = "v100-drops-clean";
  PO.DeviceFile = File;
  EXPECT_EQ(advised(takeOk(planner::compilePlan(P, PO)).Plan), 0u);

  PO.DeviceModel = "v100-copies-clean";
  PO.DeviceFile = File;
  v1::Plan WithAdvice = takeOk(planner::compilePlan(P, PO)).Plan;
  ASSERT_GT(advised(WithAdvice), 0u);
  v1::Plan Without = WithAdvice;
  Without.clear_actions();
  for (const v1::Action &A : WithAdvice.actions())
    if (A.kind() != v1::ACTION_KIND_ADVISE)
      *Without.add_actions() = A;

  sim::SimOptions O;
  O.Device = takeOk(sim::loadDeviceModel("v100-copies-clean", File));
  O.GpuMemoryBytes = Capacity;
  O.Pol = sim::Policy::Plan;
  O.PlanPolicy = executor::sim::executorPlanPolicy;
  O.Iterations = 3;
  O.CheckInvariants = true;
  O.Plan = &WithAdvice;
  sim::SimResult A = takeOk(sim::simulate(P, O));
  O.Plan = &Without;
  sim::SimResult B = takeOk(sim::simulate(P, O));
  EXPECT_EQ(A.InvariantViolations, 0u);
  EXPECT_EQ(A.LostReads, 0);
  EXPECT_LT(A.BytesDtoH, B.BytesDtoH) << "read-mostly blocks leave without a copy";
  EXPECT_LT(A.IterationUs, B.IterationUs) << "the advice must pay in the simulator";
}
