//===- Simulator.cpp - deepum-sim on hostile profiles ------------------------===//
//
// Input: one parameter byte, then a binary profile, as for fuzz_planner (the
// same ProfileCaps keep every input cheap). The parameter byte chooses:
//
//   bits 0-2  policy: um, deepum, swap-layer, swap-opt, plan, ideal (6 and 7
//             are um and deepum again); plan replays the prefetch plan the
//             planner makes for the same capacity
//   bits 3-5  capacity: (n + 1) / 8 of the profile's footprint (distinct UM
//             blocks), at least one block
//   bit  6    measured iterations: 1 or 3
//   bit  7    warm-up iterations: 0 or 1
//
// The simulator runs on the built-in v100-pcie-16gb with its invariant checks
// on. Every reported figure must be finite and non-negative, no invariant may
// break, and no policy but ideal may beat the reported lower bound
// (max(compute, transfers, cut bound)); a plan made by the planner must stay
// within the capacity and never read data it discarded (as the planner's
// property tests demand on synthetic profiles).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "deepum/executor/sim/SimBackend.h"
#include "deepum/format/Format.h"
#include "deepum/planner/Planner.h"
#include "deepum/sim/Simulator.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

using namespace deepum;

namespace {

const char *Target = "fuzz_simulator";

const sim::DeviceModel &device() {
  static const sim::DeviceModel D = [] {
    llvm::Expected<sim::DeviceModel> M = sim::loadDeviceModel("v100-pcie-16gb");
    if (!M)
      fuzz::fuzzFail(Target, "the built-in device model does not load: " +
                                 llvm::toString(M.takeError()));
    return *M;
  }();
  return D;
}

void checkFigure(const char *Name, double V, const std::string &Run) {
  if (!std::isfinite(V) || V < 0)
    fuzz::fuzzFail(Target, Run + ": " + Name + " is " + std::to_string(V));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  uint8_t Param = 0;
  std::optional<v1::Profile> P = fuzz::paramAndProfile(Data, Size, Param);
  if (!P)
    return 0;

  static constexpr sim::Policy Policies[] = {sim::Policy::Um,      sim::Policy::DeepUm,
                                             sim::Policy::SwapLayer, sim::Policy::SwapOpt,
                                             sim::Policy::Plan,    sim::Policy::Ideal,
                                             sim::Policy::Offload, sim::Policy::DeepUm};
  sim::SimOptions O;
  O.Device = device();
  O.Pol = Policies[Param & 7u];
  uint64_t BlockBytes = P->um_block_bytes() ? P->um_block_bytes() : format::kUmBlockBytes;
  uint64_t Blocks = sim::footprintBytes(*P) / BlockBytes;
  O.GpuMemoryBytes = std::max<uint64_t>((Blocks * (((Param >> 3) & 7u) + 1) + 7) / 8, 1) *
                     BlockBytes;
  O.Iterations = (Param & 0x40u) ? 3 : 1;
  O.WarmupIterations = (Param & 0x80u) ? 1 : 0;
  O.CheckInvariants = true;

  std::optional<planner::PlanResult> Plan;
  if (O.Pol == sim::Policy::Plan) {
    planner::PlanOptions PO;
    PO.GpuMemoryBytes = O.GpuMemoryBytes;
    PO.DeviceModel = O.Device.Name;
    llvm::Expected<planner::PlanResult> R = planner::compilePlan(*P, PO);
    if (!fuzz::takeValue(R))
      return 0;
    Plan = std::move(*R);
    O.Plan = &Plan->Plan;
    O.PlanPolicy = executor::sim::executorPlanPolicy;
  }

  llvm::Expected<sim::SimResult> R = sim::simulate(*P, O);
  if (!fuzz::takeValue(R))
    return 0;
  std::string Run = std::string(sim::policyName(O.Pol)) + " at " +
                    std::to_string(O.GpuMemoryBytes) + " bytes";
  for (auto [Name, V] : {std::pair<const char *, double>{"iteration_us", R->IterationUs},
                         {"ideal_us", R->IdealUs},
                         {"bound_us", R->BoundUs},
                         {"bound_or_ideal_us", R->BoundOrIdealUs},
                         {"cut_bound_us", R->CutBoundUs},
                         {"lower_bound_us", R->LowerBoundUs},
                         {"stall_us", R->StallUs},
                         {"slowdown", R->SlowdownOverIdeal},
                         {"faults", R->Faults},
                         {"fault_batches", R->FaultBatches},
                         {"bytes_htod", R->BytesHtoD},
                         {"bytes_dtoh", R->BytesDtoH},
                         {"bytes_prefetched", R->BytesPrefetched},
                         {"bytes_driver_prefetched", R->BytesDriverPrefetched},
                         {"bytes_demand", R->BytesDemand},
                         {"evictions", R->Evictions},
                         {"bytes_discarded", R->BytesDiscarded},
                         {"prefetch_hits", R->PrefetchHits},
                         {"late_prefetches", R->LatePrefetches},
                         {"thrashing_events", R->ThrashingEvents},
                         {"throttled_batches", R->ThrottledBatches},
                         {"lost_reads", R->LostReads}})
    checkFigure(Name, V, Run);
  if (R->InvariantViolations != 0)
    fuzz::fuzzFail(Target, Run + ": " + std::to_string(R->InvariantViolations) +
                               " invariant violations");
  if (O.Pol != sim::Policy::Ideal &&
      R->IterationUs < R->LowerBoundUs * (1 - 1e-9) - 1e-6)
    fuzz::fuzzFail(Target, Run + ": iteration " + std::to_string(R->IterationUs) +
                               " us beats the lower bound " + std::to_string(R->LowerBoundUs) +
                               " us");
  if (Plan) {
    if (R->PeakResidentBytes > O.GpuMemoryBytes)
      fuzz::fuzzFail(Target, Run + ": the plan keeps " + std::to_string(R->PeakResidentBytes) +
                                 " bytes resident");
    if (R->LostReads != 0)
      fuzz::fuzzFail(Target, Run + ": the plan discarded data that was read again");
  }
  return 0;
}
