//===- SimBackend.cpp - The executor driving deepum-sim --------------------===//
#include "deepum/executor/sim/SimBackend.h"

#include "deepum/executor/CompiledPlan.h"
#include "deepum/executor/Executor.h"

#include "llvm/Support/FormatVariadic.h"

namespace deepum::executor::sim {

namespace {
constexpr uint64_t kBlockBytes = uint64_t{2} << 20;

llvm::Error fail(const std::string &Message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Message);
}

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

} // namespace

BackendStatus SimBackend::allocateManaged(int, uint64_t Bytes, void **Out) {
  *Out = reinterpret_cast<void *>(NextAddress);
  NextAddress += (Bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
  return BackendStatus::success();
}

BackendStatus SimBackend::createStream(int, StreamHandle *Out) {
  *Out = NextHandle++;
  Streams[*Out] = {};
  return BackendStatus::success();
}

BackendStatus SimBackend::recordEvent(int, EventHandle Event, StreamHandle Stream) {
  auto It = Streams.find(Stream);
  // The program's stream: its work so far is the kernels launched on the engine.
  EventNs[Event] = It == Streams.end() ? Eng.computeEndNs()
                                       : std::max(It->second.EndNs, It->second.FloorNs);
  if (It != Streams.end())
    EventPrefetches[Event] = It->second.LastPrefetch;
  return BackendStatus::success();
}

EventState SimBackend::queryEvent(int, EventHandle Event) {
  auto It = EventNs.find(Event);
  return It == EventNs.end() || It->second <= Eng.issueNs() ? EventState::Complete
                                                            : EventState::Pending;
}

bool SimBackend::elapsedNs(int, EventHandle Start, EventHandle End, uint64_t &Ns) {
  auto S = EventNs.find(Start), E = EventNs.find(End);
  if (S == EventNs.end() || E == EventNs.end() || E->second > Eng.issueNs())
    return false;
  Ns = E->second > S->second ? E->second - S->second : 0;
  return true;
}

BackendStatus SimBackend::streamWaitEvent(int, StreamHandle Stream, EventHandle Event) {
  auto S = Streams.find(Stream);
  auto E = EventNs.find(Event);
  if (E == EventNs.end())
    return BackendStatus::success();
  if (S != Streams.end())
    S->second.FloorNs = std::max(S->second.FloorNs, E->second);
  else if (auto P = EventPrefetches.find(Event); P != EventPrefetches.end())
    // The program's stream: its next kernel waits for the populates the
    // event follows (the copy path's dependency), not for the rest of that
    // stream's work, as deepum-plan's cost model charges it.
    Eng.awaitPopulates(P->second);
  return BackendStatus::success();
}

BackendStatus SimBackend::createEvent(int, EventHandle *Out) {
  *Out = NextHandle++;
  return BackendStatus::success();
}

BackendStatus SimBackend::prefetchBatch(int, std::span<const MemRange> Ranges, int Location,
                                        StreamHandle Stream) {
  // One batch call for all ranges: the engine charges the call once.
  std::vector<deepum::sim::Engine::Range> Batch;
  Batch.reserve(Ranges.size());
  for (const MemRange &R : Ranges)
    Batch.push_back({R.Address, R.Bytes});
  StreamClock &S = Streams[Stream];
  const bool ToHost = Location == kHostLocation;
  if (ToHost)
    Eng.evictBatchToHost(Batch, S.FloorNs);
  else
    Eng.prefetchBatchToDevice(Batch, S.FloorNs);
  S.LastPrefetch = ToHost ? std::vector<deepum::sim::Engine::Range>{} : Batch;
  // Its transfers are the last queued in their direction.
  S.EndNs = std::max({S.EndNs, S.FloorNs, Eng.issueNs(), Eng.copyEndNs(!ToHost)});
  return BackendStatus::success();
}

BackendStatus SimBackend::allocatePinned(int, uint64_t Bytes, void **Out) {
  *Out = reinterpret_cast<void *>(NextPinned);
  NextPinned += (Bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
  return BackendStatus::success();
}

BackendStatus SimBackend::copyAsync(int, void *Dst, const void *, uint64_t Bytes,
                                    StreamHandle Stream) {
  // As the CUDA stand-in times it: an explicit copy on the copy engines
  // after the work its stream issued before (the populate before a copy
  // back; the program's kernels, for a copy on the program's stream); into
  // managed memory, the pages' contents arrive with it.
  const bool ToDevice = reinterpret_cast<uint64_t>(Dst) < (uint64_t{1} << 46);
  auto It = Streams.find(Stream);
  const uint64_t After = It == Streams.end()
                             ? Eng.computeEndNs()
                             : std::max(It->second.EndNs, It->second.FloorNs);
  const uint64_t End = Eng.explicitCopy(ToDevice, Bytes, After, /*FromManaged=*/!ToDevice);
  if (ToDevice)
    Eng.copiedInto(reinterpret_cast<uint64_t>(Dst), Bytes, End);
  if (It != Streams.end())
    It->second.EndNs = std::max(It->second.EndNs, End);
  return BackendStatus::success();
}

BackendStatus SimBackend::discardBatch(int, std::span<const MemRange> Ranges,
                                       StreamHandle Stream) {
  std::vector<deepum::sim::Engine::Range> Batch;
  Batch.reserve(Ranges.size());
  for (const MemRange &R : Ranges)
    Batch.push_back({R.Address, R.Bytes});
  StreamClock &S = Streams[Stream];
  // After the work its stream issued before (a copy-out's copies).
  Eng.discardBatch(Batch, std::max(S.FloorNs, S.EndNs));
  S.EndNs = std::max({S.EndNs, S.FloorNs, Eng.issueNs()});
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

void SimBackend::launchBegin(uint64_t Id) {
  if (Observer)
    Observer->launchBegin(0, 0, &Id, 1);
}

void SimBackend::launchEnd() {
  if (Observer)
    Observer->launchEnd(0, 0);
}

llvm::Error SimBackend::launch(uint64_t Id, llvm::ArrayRef<deepum::sim::Engine::AddressUse> Uses,
                               uint64_t DurationNs) {
  launchBegin(Id);
  llvm::Error E = Eng.launchByAddress(Uses, DurationNs);
  launchEnd();
  return E;
}

// --- the plan policy ------------------------------------------------------------

ExecutorPolicy::ExecutorPolicy(const deepum::v1::Plan &P, std::string Name,
                               deepum_stats_t *Out)
    : Plan(P), PlanName(std::move(Name)), StatsOut(Out) {}

ExecutorPolicy::~ExecutorPolicy() = default;

llvm::Error ExecutorPolicy::attach(deepum::sim::Engine &E, uint64_t CapacityBytes) {
  CompiledPlan CP;
  std::string Error;
  if (!compilePlan(Plan, "plan", CP, Error))
    return fail("executor replay of " + PlanName + ": " + Error);
  Backend.emplace(E);
  ExecutorConfig Cfg;
  const uint64_t Launches = static_cast<uint64_t>(Plan.position_ids_size());
  Cfg.Cursor.ModelCheckLaunches = Launches < 100 ? Launches : 100;
  // No allocation goes through this executor, and the engine's kernels touch
  // exactly their positions' blocks (which the executor brings back).
  Cfg.CopyTracksAllocations = false;
  Ex = std::make_unique<Executor>(*Backend, Cfg);
  if (!Ex->setPlan(0, std::move(CP), CapacityBytes))
    return fail("executor replay of " + PlanName + ": the executor refused the plan");
  FirstBlock = Ex->arenaBase(0) / kBlockBytes;
  return llvm::Error::success();
}

void ExecutorPolicy::launchObserved(deepum::sim::Engine &, uint32_t Position) {
  Backend->launchBegin(Plan.position_ids(static_cast<int>(Position)));
}

void ExecutorPolicy::kernelEnded(deepum::sim::Engine &, uint32_t) { Backend->launchEnd(); }

deepum_stats_t ExecutorPolicy::stats() const {
  deepum_stats_t St{};
  if (Ex)
    Ex->stats(0, St);
  return St;
}

llvm::Error ExecutorPolicy::finish() {
  deepum_stats_t St = stats();
  if (StatsOut)
    *StatsOut = St;
  if (St.backend_errors)
    return fail(llvm::formatv("executor replay of {0}: {1} backend errors", PlanName,
                              St.backend_errors)
                    .str());
  return llvm::Error::success();
}

llvm::Expected<std::unique_ptr<deepum::sim::SimPolicy>>
executorPlanPolicy(const deepum::v1::Plan &Plan, const deepum::sim::SimOptions &O) {
  return std::make_unique<ExecutorPolicy>(Plan, O.PlanName);
}

llvm::Expected<deepum::sim::SimResult> replayPlan(const deepum::v1::Profile &P,
                                                  const deepum::v1::Plan &Plan,
                                                  deepum::sim::SimOptions O,
                                                  deepum_stats_t *Stats) {
  O.Pol = deepum::sim::Policy::Plan;
  O.Plan = &Plan;
  O.PlanPolicy = [Stats](const deepum::v1::Plan &Pl, const deepum::sim::SimOptions &Opts)
      -> llvm::Expected<std::unique_ptr<deepum::sim::SimPolicy>> {
    return std::make_unique<ExecutorPolicy>(Pl, Opts.PlanName, Stats);
  };
  return deepum::sim::simulate(P, O);
}

} // namespace deepum::executor::sim
