//===- deepum/planner/Replay.h - Check a plan by replaying it ----------------===//
//
// A plan is self-contained (chains, actions, capacity), so it can be replayed
// without the profile: residency only, no time. The planner's property tests
// use this to check what every plan must satisfy; deepum-sim measures time.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PLANNER_REPLAY_H
#define DEEPUM_PLANNER_REPLAY_H

#include "deepum/planner/Trace.h"

#include "deepum/v1/plan.pb.h"

#include <cstdint>

namespace deepum::planner {

struct ReplayReport {
  uint64_t CapacityBlocks = 0;
  /// Most blocks resident at once, counting as plan.proto says (from the
  /// prefetch or fault that brings a block to the evict/discard that drops it).
  uint64_t MaxResidentBlocks = 0;
  /// Prefetches issued while the GPU was full: the plan overcommitted.
  uint64_t OverCapacityPrefetches = 0;
  /// Blocks a kernel found absent, in the last replayed iteration.
  uint64_t SteadyStateFaults = 0;
  /// Evictions the driver had to make (faults or prefetches into a full GPU),
  /// in the last replayed iteration.
  uint64_t SteadyStateDriverEvictions = 0;
  /// Largest number of blocks one position touches.
  uint64_t MaxWorkingSetBlocks = 0;
};

/// Replays `Iterations` iterations of the plan from an empty GPU.
ReplayReport replayPlan(const deepum::v1::Plan &P, unsigned Iterations = 4);

/// Discards that drop data still to be read: the block's next use after the
/// discard neither overwrites it wholly nor follows a moment when none of its
/// allocations was live. Must be 0.
uint64_t unsafeDiscards(const deepum::v1::Plan &P, const Trace &T);

} // namespace deepum::planner

#endif // DEEPUM_PLANNER_REPLAY_H
