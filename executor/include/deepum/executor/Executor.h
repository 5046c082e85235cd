//===- deepum/executor/Executor.h - Replays a plan inside the training process -===//
//
// The executor is the allocator of the training process and, when it has a
// plan, its memory scheduler:
//
// - allocate/deallocate: planned allocations go to their offset in the
//   device's managed arena (matched by sequence number and size); everything
//   else to a stream-ordered pool of managed memory (DevicePool).
// - launchBegin/launchEnd (a LaunchObserver fed by the backend): a PlanCursor
//   finds the plan position of each launch; prefetches and advice for that
//   position are issued before the launch runs, evictions and discards after
//   it is enqueued, on a dedicated stream, in batches, ordered after the
//   compute streams with events.
// - a capacity budget: modelled GPU residency is kept under it by explicit
//   eviction of the arena blocks needed furthest in the future.
//
// Failing backend calls are counted and logged (once per kind), never fatal.
// Thread-safe: one allocation lock and one launch lock per device.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_EXECUTOR_H
#define DEEPUM_EXECUTOR_EXECUTOR_H

#include "deepum/deepum.h"
#include "deepum/executor/Backend.h"
#include "deepum/executor/CompiledPlan.h"
#include "deepum/executor/PlanCursor.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace deepum::executor {

/// Where a setting applies: one device or all (-1).
inline constexpr int kAllDevices = -1;
/// Devices one process may use.
inline constexpr int kMaxDevices = 64;

struct ExecutorConfig {
  /// Plan file per device (kAllDevices = every device without its own).
  std::map<int, std::string> PlanPaths;
  /// Capacity budget per device, bytes (0 = none; absent = the plan's own capacity).
  std::map<int, uint64_t> BudgetBytes;
  /// Observe launches (off: a pure allocator).
  bool TrackLaunches = true;
  /// A kernel waits (an event on its stream) for the prefetches the plan
  /// issues at its own position, as deepum-plan and deepum-sim assume,
  /// instead of running into the pages still in flight and faulting on them
  /// (docs/results/gpu.md, finding 12). DEEPUM_KERNEL_WAITS_FOR_PREFETCH=1.
  /// Off until a GPU has shown which is faster.
  bool KernelsWaitForTheirPrefetches = false;
  /// The launch-time guard (launchArguments): on unless
  /// DEEPUM_TEST_NO_LAUNCH_GUARD=1, a setting for tests that must show what
  /// happens without it.
  bool LaunchGuard = true;
  /// The copy path follows the arena's allocations: it copies out only
  /// blocks holding a live allocation, and a copy-in writes back only the
  /// bytes of allocations live at the copy-out and still live (never a
  /// block's free part, nor an allocation placed there since, which the
  /// program may have written). Off only where allocations are not made
  /// through the executor and the launches touch exactly the plan's access
  /// sets: the simulator's replay, which copies whole blocks.
  bool CopyTracksAllocations = true;
  CursorOptions Cursor;

  std::string planFor(int Device) const;
  /// Budget for a device; `PlanCapacity` is used when the configuration names none.
  uint64_t budgetFor(int Device, uint64_t PlanCapacity) const;

  /// Parses DEEPUM_PLAN ("path" or "0=a.pb,1=b.pb") and DEEPUM_GPU_MEMORY
  /// ("8GiB" or "0=8GiB,1=4GiB"). Bad parts are skipped and described in `Warnings`.
  static ExecutorConfig parse(const char *Plan, const char *GpuMemory, std::string &Warnings);
  /// Reads DEEPUM_PLAN, DEEPUM_GPU_MEMORY and applies DEEPUM_LOG.
  static ExecutorConfig fromEnvironment();
};

/// Everything deepum_stats_json reports about one device: the counters of
/// deepum_stats_t, the plan and, when it is not being replayed, why not.
struct DeviceReport {
  deepum_stats_t Stats{};
  const char *Backend = "";
  std::string PlanPath; ///< Empty: no plan was configured for the device.
  bool PlanLoaded = false;
  uint64_t ProfileFingerprint = 0; ///< The plan's (0 = none or no plan).
  /// What the program's marked iterations said about it (None without a plan).
  FingerprintCheck Fingerprint = FingerprintCheck::None;
  std::string WhyNot;              ///< Empty while the plan is active.
  uint64_t UndecodedLaunches = 0;  ///< Process-wide (the backend's count).
  uint64_t AdviseBytes = 0;
  uint64_t PeakResidentBytes = 0;
};

class Executor final : public LaunchObserver {
public:
  Executor(Backend &B, ExecutorConfig C);
  ~Executor() override;
  Executor(const Executor &) = delete;
  Executor &operator=(const Executor &) = delete;

  /// `Call`, when given, receives the process's count of allocation calls so
  /// far, every device's, this one included (1 for the first; 0 when refused
  /// before counting).
  void *allocate(uint64_t Bytes, int Device, StreamHandle Stream, uint64_t *Call = nullptr);
  void deallocate(void *Ptr, int Device, StreamHandle Stream);
  /// End of a training iteration (deepum_step).
  void markIteration();
  /// False for a device out of range.
  bool stats(int Device, deepum_stats_t &Out) const;
  /// False for a device out of range or not in use.
  bool report(int Device, DeviceReport &Out) const;
  /// The JSON object of deepum_stats_json (schema 1, docs/executor.md): one
  /// device, or with kAllDevices {"schema":1,"devices":[...]} of every device
  /// in use. Makes no backend call that reaches the GPU: safe at exit, after
  /// CUDA is torn down. False for a device out of range or not in use.
  bool statsJson(int Device, std::string &Out) const;

  /// Replaces a device's plan with a compiled one (tests and the simulator
  /// backend build plans in memory). Only before the device's first allocation.
  bool setPlan(int Device, CompiledPlan Plan, uint64_t BudgetBytes);
  uintptr_t arenaBase(int Device) const;
  bool planActive(int Device) const;
  bool launchTracking() const { return Tracking; }
  /// Copies of a device's modelled residency, one flag per arena block (tests).
  std::vector<bool> residentBlocks(int Device) const;

  void launchBegin(int Device, StreamHandle Stream, const uint64_t *Ids, size_t Count) override;
  void launchEnd(int Device, StreamHandle Stream) override;
  void launchArguments(int Device, StreamHandle Stream, std::span<const uint64_t> Words) override;
  void launchArgumentsUnknown(int Device, StreamHandle Stream) override;
  void hostSynchronize(int Device) override;

  struct DeviceState;

private:
  DeviceState *device(int Device) const;
  DeviceState *deviceOrCreate(int Device);
  void loadPlanFor(DeviceState &D);
  bool setPlanLocked(DeviceState &D, CompiledPlan Plan, uint64_t BudgetBytes);
  /// Arena.cpp, with the device's AllocMu held: the next planned placement by
  /// sequence (a few ahead, for calls the program skipped) of this size, when
  /// its range is free; and the bookkeeping of a placement made.
  void *placeBySequence(DeviceState &D, uint64_t Bytes, StreamHandle Stream);
  void *placed(DeviceState &D, uint64_t Offset, uint64_t Bytes);
  /// Updates the peak of the pool's and the arena's bytes in use together.
  void notePeakInUse(DeviceState &D);

  Backend &Back;
  ExecutorConfig Config;
  std::array<std::atomic<DeviceState *>, kMaxDevices> Devices{};
  std::atomic<bool> ExplicitSteps{false};
  /// Allocation calls since the process started, on every device, planned or
  /// not (the count the profiler records and CompiledPlan::PrologueCalls names).
  std::atomic<uint64_t> AllocCalls{0};
  /// Plans read so far by path (nullptr: unusable); guarded by device creation.
  std::map<std::string, std::shared_ptr<const CompiledPlan>> PlanCache;
  /// Why each unusable plan in PlanCache was refused.
  std::map<std::string, std::string> PlanErrors;
  bool Tracking = false;
  std::string TrackingWhy; ///< Why launches cannot be observed (set once, in the constructor).
};

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_EXECUTOR_H
