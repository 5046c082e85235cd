//===- deepum/executor/sim/SimBackend.h - The executor driving deepum-sim ---===//
//
// A Backend over the simulator's Engine (deepum/sim/Engine.h): the executor's
// own code (cursor, actions, ordering, budget) issues the commands, the engine
// models one GPU under UM. Lives in deepum_executor_sim, which links
// deepum_sim; libdeepum.so never does.
//
// replayPlan runs a profile's steady-state iteration (durations) with a plan's
// block chains (accesses) through executor + engine, the same workload
// deepum-sim --policy plan builds, so the two can be compared (closed loop).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_SIM_SIMBACKEND_H
#define DEEPUM_EXECUTOR_SIM_SIMBACKEND_H

#include "deepum/executor/Backend.h"
#include "deepum/sim/Engine.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/Error.h"

#include <cstdint>

namespace deepum::executor::sim {

class SimBackend final : public Backend {
public:
  explicit SimBackend(deepum::sim::Engine &E) : Eng(E) {}

  const char *name() const override { return "sim"; }
  int deviceCount() override { return 1; }
  uint64_t deviceMemoryBytes(int) override { return Eng.capacityBytes(); }
  BackendStatus allocateManaged(int Device, uint64_t Bytes, void **Out) override;
  BackendStatus freeManaged(int, void *) override { return BackendStatus::success(); }
  BackendStatus createStream(int, StreamHandle *Out) override;
  BackendStatus createEvent(int, EventHandle *Out) override;
  BackendStatus destroyEvent(int, EventHandle) override { return BackendStatus::success(); }
  // The engine orders commands itself (FIFO copy engines; nothing leaves the
  // GPU before the last kernel using it finishes), so events complete at once.
  BackendStatus recordEvent(int, EventHandle, StreamHandle) override {
    return BackendStatus::success();
  }
  BackendStatus streamWaitEvent(int, StreamHandle, EventHandle) override {
    return BackendStatus::success();
  }
  EventState queryEvent(int, EventHandle) override { return EventState::Complete; }
  BackendStatus prefetchBatch(int Device, std::span<const MemRange> Ranges, int Location,
                              StreamHandle Stream) override;
  BackendStatus discardBatch(int Device, std::span<const MemRange> Ranges,
                             StreamHandle Stream) override;
  BackendStatus advise(int Device, MemRange Range, MemAdvice Advice) override;
  bool startLaunchTracking(LaunchObserver *Observer, std::string &Why) override;
  void stopLaunchTracking() override { Observer = nullptr; }

  /// One kernel: the executor observes the launch (begin), the engine runs it,
  /// the executor sees it enqueued (end).
  llvm::Error launch(uint64_t ExecutionId, llvm::ArrayRef<deepum::sim::Engine::AddressUse> Uses,
                     uint64_t DurationNs);

private:
  deepum::sim::Engine &Eng;
  LaunchObserver *Observer = nullptr;
  uint64_t NextAddress = uint64_t{1} << 40; // 2 MiB aligned, never 0
  uintptr_t NextHandle = 1;
};

/// Steady-state results of a closed-loop replay (means per measured iteration).
struct ReplayResult {
  double IterationUs = 0;
  double StallUs = 0; ///< compute lane idle
  double Faults = 0;  ///< 64 KiB pages demand-faulted
  double FaultBatches = 0;
  double BytesHtoD = 0;
  double BytesDtoH = 0;
  double BytesPrefetched = 0;
  double BytesDriverPrefetched = 0;
  double BytesDemand = 0;
  double Evictions = 0; ///< 2 MiB chunks evicted
  double BytesDiscarded = 0;
  double PrefetchHits = 0;
  double LatePrefetches = 0;
  double ThrashingEvents = 0;
  double ThrottledBatches = 0;
  double LostReads = 0;
  uint64_t PeakResidentBytes = 0;
  uint64_t InvariantViolations = 0; ///< with SimOptions::CheckInvariants
  bool RooflineDurations = false;   ///< kernel durations recomputed (SimOptions::Durations)
  uint64_t LaunchesMatched = 0;
  uint64_t BackendErrors = 0;
};

/// Replays `Plan` against `Profile`'s steady-state iteration through the
/// executor and the engine, with SimOptions' device, capacity, iteration
/// counts and kernel durations (its policy is ignored: the executor is the
/// policy). `Timeline`, when given, receives the engine's events of the last
/// iteration and a slice per iteration (deepum::sim::timelineIteration).
llvm::Expected<ReplayResult> replayPlan(const deepum::v1::Profile &Profile,
                                        const deepum::v1::Plan &Plan,
                                        const deepum::sim::SimOptions &Options,
                                        deepum::format::TraceWriter *Timeline = nullptr);

/// deepum-sim's executor replay (SimToolOptions::ExecutorReplay): replayPlan,
/// its measurements written over `Result`'s (iteration, stall, slowdown,
/// faults, bytes, evictions, ...). The fields it does not measure (ideal,
/// bound, footprint, capacity) keep the values `Result` came with, the
/// simulator's own computation.
llvm::Error replayPlanInto(const deepum::v1::Profile &Profile, const deepum::v1::Plan &Plan,
                           const deepum::sim::SimOptions &Options, deepum::sim::SimResult &Result,
                           deepum::format::TraceWriter *Timeline = nullptr);

} // namespace deepum::executor::sim

#endif // DEEPUM_EXECUTOR_SIM_SIMBACKEND_H
