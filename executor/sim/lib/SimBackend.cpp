//===- SimBackend.cpp - The executor driving deepum-sim --------------------===//
#include "deepum/executor/sim/SimBackend.h"

#include "deepum/executor/CompiledPlan.h"
#include "deepum/executor/Executor.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/FormatVariadic.h"

namespace deepum::executor::sim {

namespace {
constexpr uint64_t kBlockBytes = uint64_t{2} << 20;

deepum::v1::Advice toProto(MemAdvice A) {
  switch (A) {
  case MemAdvice::SetReadMostly:
    return deepum::v1::ADVICE_SET_READ_MOSTLY;
  case MemAdvice::UnsetReadMostly:
    return deepum::v1::ADVICE_UNSET_READ_MOSTLY;
  case MemAdvice::SetPreferredLocationDevice:
    return deepum::v1::ADVICE_SET_PREFERRED_LOCATION_DEVICE;
  case MemAdvice::SetPreferredLocationHost:
    return deepum::v1::ADVICE_SET_PREFERRED_LOCATION_HOST;
  case MemAdvice::UnsetPreferredLocation:
    return deepum::v1::ADVICE_UNSET_PREFERRED_LOCATION;
  case MemAdvice::SetAccessedByDevice:
    return deepum::v1::ADVICE_SET_ACCESSED_BY_DEVICE;
  case MemAdvice::UnsetAccessedByDevice:
    return deepum::v1::ADVICE_UNSET_ACCESSED_BY_DEVICE;
  }
  return deepum::v1::ADVICE_UNSPECIFIED;
}

deepum::sim::Access accessOf(int Mode) {
  switch (Mode) {
  case deepum::v1::ACCESS_MODE_READ:
    return deepum::sim::Access::Read;
  case deepum::v1::ACCESS_MODE_WRITE:
    return deepum::sim::Access::Write;
  default:
    return deepum::sim::Access::ReadWrite;
  }
}

deepum::sim::Access merge(deepum::sim::Access A, deepum::sim::Access B) {
  return A == B ? A : deepum::sim::Access::ReadWrite;
}
} // namespace

BackendStatus SimBackend::allocateManaged(int, uint64_t Bytes, void **Out) {
  *Out = reinterpret_cast<void *>(NextAddress);
  NextAddress += (Bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
  return BackendStatus::success();
}

BackendStatus SimBackend::createStream(int, StreamHandle *Out) {
  *Out = NextHandle++;
  return BackendStatus::success();
}

BackendStatus SimBackend::createEvent(int, EventHandle *Out) {
  *Out = NextHandle++;
  return BackendStatus::success();
}

BackendStatus SimBackend::prefetchBatch(int, std::span<const MemRange> Ranges, int Location,
                                        StreamHandle) {
  // One batch call for all ranges: the engine charges the call once.
  std::vector<deepum::sim::Engine::Range> Batch;
  Batch.reserve(Ranges.size());
  for (const MemRange &R : Ranges)
    Batch.push_back({R.Address, R.Bytes});
  if (Location == kHostLocation)
    Eng.evictBatchToHost(Batch);
  else
    Eng.prefetchBatchToDevice(Batch);
  return BackendStatus::success();
}

BackendStatus SimBackend::discardBatch(int, std::span<const MemRange> Ranges, StreamHandle) {
  std::vector<deepum::sim::Engine::Range> Batch;
  Batch.reserve(Ranges.size());
  for (const MemRange &R : Ranges)
    Batch.push_back({R.Address, R.Bytes});
  Eng.discardBatch(Batch);
  return BackendStatus::success();
}

BackendStatus SimBackend::advise(int, MemRange Range, MemAdvice Advice) {
  Eng.advise(toProto(Advice), Range.Address, Range.Bytes);
  return BackendStatus::success();
}

bool SimBackend::startLaunchTracking(LaunchObserver *O, std::string &) {
  Observer = O;
  return true;
}

llvm::Error SimBackend::launch(uint64_t Id, llvm::ArrayRef<deepum::sim::Engine::AddressUse> Uses,
                               uint64_t DurationNs) {
  if (Observer)
    Observer->launchBegin(0, 0, &Id, 1);
  llvm::Error E = Eng.launchByAddress(Uses, DurationNs);
  if (Observer)
    Observer->launchEnd(0, 0);
  return E;
}

llvm::Expected<ReplayResult> replayPlan(const deepum::v1::Profile &P, const deepum::v1::Plan &Plan,
                                        const deepum::sim::SimOptions &O,
                                        deepum::format::TraceWriter *Timeline) {
  auto fail = [](const std::string &M) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), M);
  };
  // The same kernels deepum-sim --policy plan replays.
  auto Range = deepum::sim::planIteration(Plan, P, O.PlanName, O.ProfileName);
  if (!Range)
    return Range.takeError();
  auto [First, Count] = *Range;
  uint64_t Capacity = O.GpuMemoryBytes ? O.GpuMemoryBytes : Plan.metadata().gpu_memory_bytes();
  if (!Capacity)
    Capacity = O.Device.MemoryBytes;

  CompiledPlan CP;
  std::string Error;
  if (!compilePlan(Plan, "plan", CP, Error))
    return fail(Error);

  // The durations deepum-sim uses: recorded, or its roofline for O.Device.
  bool Roofline = false;
  llvm::Expected<std::vector<uint64_t>> Durations =
      deepum::sim::kernelDurations(P, O.Device, O.Durations, &Roofline, *Range);
  if (!Durations)
    return Durations.takeError();
  if (Durations->size() != Count)
    return fail(llvm::formatv("{0} kernel durations for a steady iteration of {1}",
                              Durations->size(), Count)
                    .str());

  deepum::sim::Engine E(O.Device, Capacity);
  SimBackend B(E);
  ExecutorConfig Cfg;
  Cfg.Cursor.ModelCheckLaunches = Count < 100 ? Count : 100;
  Executor Ex(B, Cfg);
  if (!Ex.setPlan(0, std::move(CP), Capacity))
    return fail("the executor refused the plan");
  const uint64_t Base = Ex.arenaBase(0);
  const uint64_t BaseBlock = Base / kBlockBytes;

  // The workload deepum-sim --policy plan builds: per position, the chain's
  // blocks (all pages, modes merged), durations from the profile.
  std::vector<std::vector<deepum::sim::Engine::AddressUse>> Uses(Count);
  for (const auto &C : Plan.block_chains()) {
    if (C.position() >= Count)
      continue;
    auto &U = Uses[C.position()];
    for (int I = 0; I < C.blocks_size(); ++I) {
      auto M = accessOf(C.modes_size() ? C.modes(I) : deepum::v1::ACCESS_MODE_READ_WRITE);
      uint64_t Block = BaseBlock + C.blocks(I);
      auto Same =
          std::find_if(U.begin(), U.end(), [&](const auto &X) { return X.UmBlock == Block; });
      if (Same != U.end())
        Same->Mode = merge(Same->Mode, M);
      else
        U.push_back({Block, ~uint32_t{0}, M});
    }
  }
  // Dense ids in the simulator's order: chains first, then action ranges.
  for (const auto &U : Uses)
    for (const auto &X : U)
      (void)E.blockId(X.UmBlock);
  E.setCheckInvariants(O.CheckInvariants);

  const unsigned Total = O.WarmupIterations + O.Iterations;
  deepum::sim::EngineStats Before;
  uint64_t BeginNs = 0;
  for (unsigned It = 0; It < Total; ++It) {
    if (It == O.WarmupIterations) {
      Before = E.stats();
      BeginNs = E.computeEndNs();
    }
    if (Timeline && It + 1 == Total)
      E.setTimeline(Timeline);
    const uint64_t IterationBeginNs = E.computeEndNs();
    for (uint32_t K = 0; K < Count; ++K)
      if (llvm::Error Err =
              B.launch(Plan.position_ids(static_cast<int>(K)), Uses[K], (*Durations)[K]))
        return Err;
    if (Timeline)
      deepum::sim::timelineIteration(*Timeline, It, O.WarmupIterations, IterationBeginNs,
                                     E.computeEndNs());
  }
  using deepum::sim::EngineStats;
  const EngineStats &S = E.stats();
  ReplayResult R;
  R.IterationUs = static_cast<double>(E.computeEndNs() - BeginNs) / O.Iterations / 1e3;
  deepum::sim::fillPerIteration(R, Before, S, O.Iterations);
  R.InvariantViolations = S.InvariantViolations + (O.CheckInvariants ? E.verifyAccounting() : 0);
  R.RooflineDurations = Roofline;
  deepum_stats_t St{};
  Ex.stats(0, St);
  R.LaunchesMatched = St.launches_matched;
  R.BackendErrors = St.backend_errors;
  return R;
}

llvm::Error replayPlanInto(const deepum::v1::Profile &P, const deepum::v1::Plan &Plan,
                           const deepum::sim::SimOptions &O, deepum::sim::SimResult &Out,
                           deepum::format::TraceWriter *Timeline) {
  llvm::Expected<ReplayResult> R = replayPlan(P, Plan, O, Timeline);
  if (!R)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "executor replay of " + O.PlanName + ": " +
                                       llvm::toString(R.takeError()));
  if (R->BackendErrors)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("executor replay of {0}: {1} backend errors", O.PlanName, R->BackendErrors)
            .str());
  Out.IterationUs = R->IterationUs;
  Out.SlowdownOverIdeal = Out.IdealUs > 0 ? R->IterationUs / Out.IdealUs : 1;
  Out.StallUs = R->StallUs;
  Out.Faults = R->Faults;
  Out.FaultBatches = R->FaultBatches;
  Out.BytesHtoD = R->BytesHtoD;
  Out.BytesDtoH = R->BytesDtoH;
  Out.BytesPrefetched = R->BytesPrefetched;
  Out.BytesDriverPrefetched = R->BytesDriverPrefetched;
  Out.BytesDemand = R->BytesDemand;
  Out.Evictions = R->Evictions;
  Out.BytesDiscarded = R->BytesDiscarded;
  Out.PrefetchHits = R->PrefetchHits;
  Out.LatePrefetches = R->LatePrefetches;
  Out.ThrashingEvents = R->ThrashingEvents;
  Out.ThrottledBatches = R->ThrottledBatches;
  Out.LostReads = R->LostReads;
  Out.PeakResidentBytes = R->PeakResidentBytes;
  Out.InvariantViolations = R->InvariantViolations;
  Out.Durations = R->RooflineDurations ? "roofline" : "profile";
  Out.PlanReplay = "executor";
  return llvm::Error::success();
}

} // namespace deepum::executor::sim
