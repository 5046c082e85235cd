//===- deepum/executor/sim/SimBackend.h - The executor driving deepum-sim ---===//
//
// A Backend over the simulator's Engine (deepum/sim/Engine.h): the executor's
// own code (cursor, actions, ordering, budget) issues the commands, the engine
// models one GPU under UM. Lives in deepum_executor_sim, which links
// deepum_sim; libdeepum.so never does.
//
// ExecutorPolicy is deepum-sim's `plan` policy: the executor, plugged into the
// simulator's one loop (deepum/sim/Policy.h) through this backend, observes
// each launch and issues the plan's commands to the engine. There is no other
// plan replay.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_SIM_SIMBACKEND_H
#define DEEPUM_EXECUTOR_SIM_SIMBACKEND_H

#include "deepum/executor/Backend.h"
#include "deepum/executor/Executor.h"
#include "deepum/sim/Engine.h"
#include "deepum/sim/Policy.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>

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
  // Events order streams as CUDA does: an event recorded on a stream stands
  // for the end of the work issued there so far (the last transfer it queued,
  // or the last kernel for a stream the backend did not create: the
  // program's), and a stream that waits for it starts its later commands no
  // earlier. So a prefetch batch waits behind the write-backs of the releases
  // before it, as libdeepum's action stream does on a GPU. The engine keeps
  // its own rules besides (FIFO copy engines; nothing leaves the GPU before
  // the last kernel using it finishes). An event is complete for the host once
  // the engine's host clock has reached the work it stands for.
  BackendStatus recordEvent(int, EventHandle Event, StreamHandle Stream) override;
  BackendStatus streamWaitEvent(int, StreamHandle Stream, EventHandle Event) override;
  EventState queryEvent(int, EventHandle Event) override;
  bool elapsedNs(int, EventHandle Start, EventHandle End, uint64_t &Ns) override;
  BackendStatus prefetchBatch(int Device, std::span<const MemRange> Ranges, int Location,
                              StreamHandle Stream) override;
  BackendStatus discardBatch(int Device, std::span<const MemRange> Ranges,
                             StreamHandle Stream) override;
  BackendStatus advise(int Device, MemRange Range, MemAdvice Advice) override;
  /// The copy path on the engine, timed as the CUDA stand-in times it: the
  /// pool is address space of its own; a copy is an explicit copy
  /// (Engine::explicitCopy), the discard after a copy out and the populate
  /// before a copy back are the engine's own.
  BackendStatus allocatePinned(int, uint64_t Bytes, void **Out) override;
  BackendStatus freePinned(int, void *) override { return BackendStatus::success(); }
  BackendStatus copyAsync(int Device, void *Dst, const void *Src, uint64_t Bytes,
                          StreamHandle Stream) override;
  /// The simulator's kernels touch exactly the plan's access sets: a launch
  /// names the arena blocks its position uses (launch()), none other.
  bool reportsLaunchArguments() const override { return true; }
  bool startLaunchTracking(LaunchObserver *Observer, std::string &Why) override;
  void stopLaunchTracking() override { Observer = nullptr; }

  /// One kernel: the executor observes the launch (begin), the engine runs it,
  /// the executor sees it enqueued (end).
  llvm::Error launch(uint64_t ExecutionId, llvm::ArrayRef<deepum::sim::Engine::AddressUse> Uses,
                     uint64_t DurationNs);
  /// The two halves of launch() around a kernel the caller runs on the engine.
  void launchBegin(uint64_t ExecutionId);
  void launchEnd();

private:
  deepum::sim::Engine &Eng;
  LaunchObserver *Observer = nullptr;
  uint64_t NextAddress = uint64_t{1} << 40; // 2 MiB aligned, never 0
  uint64_t NextPinned = uint64_t{1} << 46;  // the pool's addresses, apart from managed ones

  uintptr_t NextHandle = 1;
  /// Per stream the backend created: when the work issued on it ends, and
  /// the earliest its next command may start (the events it waits for).
  struct StreamClock {
    uint64_t EndNs = 0;
    uint64_t FloorNs = 0;
    std::vector<deepum::sim::Engine::Range> LastPrefetch; // its last call to the GPU
  };
  std::unordered_map<StreamHandle, StreamClock> Streams;
  std::unordered_map<EventHandle, uint64_t> EventNs;
  /// The prefetch call each event follows on its stream.
  std::unordered_map<EventHandle, std::vector<deepum::sim::Engine::Range>> EventPrefetches;
};

/// The `plan` policy: libdeepum's executor (cursor, release-before-prefetch
/// ordering, budget) replaying `Plan` on the engine through a SimBackend. At
/// each observed launch the executor sees the plan's position ID; the
/// workload's arena blocks are offsets into the arena it allocated.
class ExecutorPolicy final : public deepum::sim::SimPolicy {
public:
  /// `Plan` must outlive the policy. The executor's counters at the end of
  /// the run go to `*StatsOut` when given.
  ExecutorPolicy(const deepum::v1::Plan &Plan, std::string PlanName,
                 deepum_stats_t *StatsOut = nullptr);
  ~ExecutorPolicy() override;

  llvm::Error attach(deepum::sim::Engine &E, uint64_t CapacityBytes) override;
  uint64_t firstUmBlock() const override { return FirstBlock; }
  void launchObserved(deepum::sim::Engine &E, uint32_t Position) override;
  void kernelEnded(deepum::sim::Engine &E, uint32_t Position) override;
  /// Fails when the backend refused any command.
  llvm::Error finish() override;

  /// The executor's counters (launches matched, backend errors, ...).
  deepum_stats_t stats() const;

private:
  const deepum::v1::Plan &Plan;
  std::string PlanName;
  std::optional<SimBackend> Backend;
  std::unique_ptr<Executor> Ex;
  deepum_stats_t *StatsOut;
  uint64_t FirstBlock = 0;
};

/// deepum-sim's plan policy (SimOptions::PlanPolicy, SimToolOptions::PlanPolicy).
llvm::Expected<std::unique_ptr<deepum::sim::SimPolicy>>
executorPlanPolicy(const deepum::v1::Plan &Plan, const deepum::sim::SimOptions &Options);

/// simulate() with Policy::Plan and the executor as its policy: `Plan`
/// against `Profile`'s iteration with Options' device, capacity, iteration
/// counts and durations (its Pol, Plan and PlanPolicy are ignored). The
/// executor's own counters at the end go to `*Stats` when given.
llvm::Expected<deepum::sim::SimResult> replayPlan(const deepum::v1::Profile &Profile,
                                                  const deepum::v1::Plan &Plan,
                                                  deepum::sim::SimOptions Options,
                                                  deepum_stats_t *Stats = nullptr);

} // namespace deepum::executor::sim

#endif // DEEPUM_EXECUTOR_SIM_SIMBACKEND_H
