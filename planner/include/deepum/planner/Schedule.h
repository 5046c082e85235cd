//===- deepum/planner/Schedule.h - Prefetch, eviction and discard schedules ---===//
//
// Both strategies turn a Trace into plan actions over the iteration's
// positions, in arena space (see plan.proto for what an action means):
//
//   schedulePrefetch  block-level: Belady replacement over the cyclic
//                     iteration (farthest next use, dirty victims charged their
//                     write-back), each fetch issued as early as its slot is
//                     free and in need order (the copy engine is a FIFO), dead
//                     victims discarded instead of written back (one of the
//                     schedules it chooses among takes them first);
//   scheduleSwap      tensor-level swap selection of Zhang et al. 2019;
//   scheduleDemand    no actions: demand faults, and the executor's budget
//                     evicting by next use; counts Belady's MIN misses (the
//                     no-prefetch yardstick).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PLANNER_SCHEDULE_H
#define DEEPUM_PLANNER_SCHEDULE_H

#include "deepum/format/Roofline.h"
#include "deepum/planner/Trace.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <bit>
#include <cassert>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace deepum::planner {

/// What the schedule needs to know about a GPU and its link.
struct CostModel {
  std::string DeviceName;
  /// Achieved host-to-device bandwidth, bytes per second, and device-to-host
  /// (evictions, write-backs; 0 = the same).
  double LinkBytesPerSecond = 12e9;
  double DeviceToHostBytesPerSecond = 0;
  /// One fault batch's service time, us (what a missed prefetch costs).
  double FaultBatchLatencyUs = 45;
  /// Whether evicting a block whose host copy is valid copies it anyway.
  bool EvictionCopiesClean = false;
  /// Host time of one transfer API call, us (transfer_call_us), and of each
  /// range after the first in a batch call (transfer_range_us). A plan's
  /// actions at a position are one batch call per kind (evict, discard,
  /// prefetch), issued before the position's launch, as deepum-sim charges
  /// them. Zero here; loadCostModel reads the device model's.
  double TransferCallUs = 0;
  double TransferRangeUs = 0;
  /// A prefetch of a discarded block (a populate), us on the copy stream, and
  /// a demand fault on one beyond the fault (device model's populate_block_us,
  /// discarded_fault_block_us; zero where unmeasured).
  double PopulateBlockUs = 0;
  double DiscardedFaultBlockUs = 0;
  /// Whether a populate holds the host-to-device copy engine (the device
  /// model's populates_hold_copy_engine): else it takes the driver's time on
  /// a queue of its own, beside the copies.
  bool PopulatesHoldCopyEngine = true;
  /// The copy path (COPY_OUT, COPY_IN): explicit copies of managed memory to
  /// pinned host memory and back (the device model's explicit-copy rates;
  /// 0: no copy path).
  double CopyManagedToHostBytesPerSecond = 0;
  double CopyHostToDeviceBytesPerSecond = 0;
  bool copyPath() const {
    return CopyManagedToHostBytesPerSecond > 0 && CopyHostToDeviceBytesPerSecond > 0;
  }
  /// A block copied out (the discard after it costs its call).
  double copyOutUs(uint64_t Bytes) const {
    return static_cast<double>(Bytes) / CopyManagedToHostBytesPerSecond * 1e6;
  }
  /// A block copied in: the driver populates it, then the copy.
  double copyInUs(uint64_t Bytes) const { return PopulateBlockUs + copyBackUs(Bytes); }
  /// The copy of a block copied in alone, without its populate.
  double copyBackUs(uint64_t Bytes) const {
    return static_cast<double>(Bytes) / CopyHostToDeviceBytesPerSecond * 1e6;
  }
  /// Roofline of the device (device-models.json), for profiles recorded on
  /// another device: kernel durations are recomputed exactly as deepum-sim
  /// does (`--durations auto`). Zero when the model has none.
  deepum::format::RooflineRates Roofline;

  double transferUs(uint64_t Bytes) const {
    return static_cast<double>(Bytes) / LinkBytesPerSecond * 1e6;
  }
  double writeBackUs(uint64_t Bytes) const {
    return DeviceToHostBytesPerSecond > 0
               ? static_cast<double>(Bytes) / DeviceToHostBytesPerSecond * 1e6
               : transferUs(Bytes);
  }
};

/// The cost model of device model `Name` (base::loadDeviceModel: the built-in
/// models, with `File`'s fields over them when it is not empty).
llvm::Expected<CostModel> loadCostModel(llvm::StringRef Name, llvm::StringRef File = "");

struct ScheduleStats {
  /// The cost model's steady-state iteration time, us (compute plus stalls).
  double PredictedIterationUs = 0;
  double ComputeUs = 0;
  double StallUs = 0;
  uint64_t Prefetches = 0;       // blocks fetched per iteration
  uint64_t Populates = 0;        // of which: dead contents, nothing crosses the link
  uint64_t DemandFetches = 0;    // blocks brought in by demand faults (demand strategy)
  uint64_t Evictions = 0;        // blocks evicted
  uint64_t DirtyEvictions = 0;   // of which: written back
  uint64_t Discards = 0;         // blocks dropped without write-back
  uint64_t CopyOuts = 0;         // blocks copied out to the pinned pool
  uint64_t CopyIns = 0;          // blocks copied back from it
  uint64_t CopyPoolBytes = 0;    // the pool the plan's copy-outs fill
  uint64_t ReadMostlyBlocks = 0; // blocks advised read-mostly (kept only when it pays)
  uint64_t CapacityBlocks = 0;
  /// Largest number of distinct blocks one kernel touches.
  uint64_t MaxWorkingSetBlocks = 0;
  /// Whether the cyclic schedule reached a fixed point (same residency at the
  /// start of consecutive iterations).
  bool Converged = false;
};

struct Schedule {
  /// Sorted as plan.proto requires.
  std::vector<deepum::v1::Action> Actions;
  ScheduleStats Stats;
  std::vector<std::string> Ignored;
};

Schedule schedulePrefetch(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes);
Schedule scheduleSwap(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes);
Schedule scheduleDemand(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes);

/// One of the prefetch schedules schedulePrefetch chooses among (exposed for
/// tests): a victim qualifies when its memory is free `MarginBlocks` block
/// transfers before the fetch's kernel could start; with `DeadFirst`, a
/// resident block whose contents are dead (its next use overwrites it, or it
/// is freed first) is taken before anything else as soon as its last kernel
/// has ended by then, oldest first. With `SwapPopulateSlots`, a fetch takes
/// the earlier-freed slot of a populate (a fetch of dead contents, which
/// moves nothing) of an earlier kernel whenever that kernel still finds the
/// fetch's own slot free in time.
Schedule schedulePrefetchWith(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes,
                              double MarginBlocks, bool DeadFirst, bool SwapPopulateSlots = false);

/// Gives each COPY_OUT of `Actions` its slots in the pinned pool and returns
/// the pool's bytes. A block holds its slot from its COPY_OUT until the next
/// action on it; holds inside the iteration share slots (earliest free
/// first), a hold across the iteration's end keeps its own. Each COPY_OUT
/// becomes one action per run of blocks whose slots are adjacent, with the
/// run's pool_offset. The executor checks every slot again when it copies
/// (docs/executor.md, "The copy path").
uint64_t assignCopySlots(const Trace &T, std::vector<deepum::v1::Action> &Actions);

/// Adds cudaMemAdvise(read-mostly) for the unwritten blocks the schedule
/// evicts, when the device model copies clean pages on eviction and the cost
/// model predicts the schedule faster with it; otherwise leaves S unchanged.
void adviseReadMostly(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes, Schedule &S);

/// The cost model's steady-state iteration time of `Actions` (sorted as
/// plan.proto requires), us: what ScheduleStats::PredictedIterationUs holds.
double predictIterationUs(const Trace &T, const CostModel &M,
                          const std::vector<deepum::v1::Action> &Actions, uint64_t GpuMemoryBytes);

/// Sorts actions by (position, issue order: advise, discard, evict,
/// prefetch, then due position, dirty, first offset) and merges actions that
/// differ only in their ranges; adjacent ranges are coalesced.
void normalizeActions(std::vector<deepum::v1::Action> &Actions);

/// Bits whose unsigned order is the order of the doubles, NaN excepted, -0
/// and +0 alike: the prefetch search's victim heap compares (key, block) as
/// one 128-bit number (exposed for tests).
inline uint64_t keyOrderBits(double Key) {
  assert(!std::isnan(Key) && "a victim key is never NaN");
  // Negative keys flipped whole, the others' sign bit set; adding +0 makes
  // -0 into +0, as the two compare as doubles.
  const uint64_t B = std::bit_cast<uint64_t>(Key + 0.0);
  return B >> 63 ? ~B : B | (uint64_t{1} << 63);
}

/// Whether a mode writes the block (anything but a pure read).
inline bool writes(deepum::v1::AccessMode M) { return M != deepum::v1::ACCESS_MODE_READ; }

} // namespace deepum::planner

#endif // DEEPUM_PLANNER_SCHEDULE_H
