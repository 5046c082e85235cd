//===- Internal.h - Helpers shared by the planner's schedules ----------------===//
#ifndef DEEPUM_PLANNER_LIB_INTERNAL_H
#define DEEPUM_PLANNER_LIB_INTERNAL_H

#include "deepum/planner/Schedule.h"
#include "deepum/planner/Trace.h"

#include <cstdint>
#include <vector>

namespace deepum::planner::detail {

/// Per-block use lists in compressed form (CSR over blocks), positions ascending.
struct UseTable {
  std::vector<uint64_t> Start; // Blocks + 1
  std::vector<uint32_t> Pos;
  std::vector<uint8_t> DeadBefore; // contents dead just before this use
  std::vector<uint8_t> Writes;
  std::vector<uint8_t> FreedBefore; // no live owner at some tick since the previous use

  uint64_t count(uint64_t B) const { return Start[B + 1] - Start[B]; }
};

UseTable buildUseTable(const Trace &T);

/// A schedule with no actions yet and the statistics every strategy reports
/// before it starts: capacity in blocks and the largest kernel's working set.
Schedule emptySchedule(const Trace &T, uint64_t GpuMemoryBytes);

/// Arena range of one block, clipped to the arena.
deepum::v1::ArenaRange blockRange(const Trace &T, uint64_t Block);

} // namespace deepum::planner::detail

#endif // DEEPUM_PLANNER_LIB_INTERNAL_H
