//===- deepum/format/Window.h - Allocations across an iteration's edges -----===//
//
// One reading, shared by the planner and the simulator's lower bounds, of how
// a profile's allocations sit relative to one iteration: which live through
// it, which the previous iteration left behind, which it makes, and which of
// those it leaves to the next one. An allocation carried in is the previous
// iteration's instance of one this iteration makes and does not free; they
// are matched by size, in order. The planner gives each pair one slot of its
// arena; the bounds count each pair as one piece of data only where the
// profile also put the two at the same address (Workload.cpp, buildData), so
// that a policy running at the profile's addresses sees the same data.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_WINDOW_H
#define DEEPUM_FORMAT_WINDOW_H

#include "deepum/v1/profile.pb.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace deepum::format {

/// The allocations of a profile (indexes into its allocations) relative to
/// the window [Start, End): from the iteration's first launch to the next
/// iteration's first launch (UINT64_MAX when none follows).
struct WindowAllocations {
  /// Made before the window and not freed before it ends.
  std::vector<uint32_t> Persistent;
  /// Made before the window and freed within it, in profile order.
  std::vector<uint32_t> CarriedIn;
  /// Made within the window, in the order they were made.
  std::vector<uint32_t> Made;
};

WindowAllocations classifyAllocations(const deepum::v1::Profile &P, uint64_t Start, uint64_t End);

/// The window [Start, End) of the iteration of launches [First, First +
/// Count): the first one's start to the next launch's start, UINT64_MAX when
/// the profile has none.
std::pair<uint64_t, uint64_t> iterationWindow(const deepum::v1::Profile &P, uint32_t First,
                                              uint32_t Count);

/// Whether allocation `A`, made in the window, is freed before it ends.
inline bool freedWithin(const deepum::v1::Allocation &A, uint64_t End) {
  return A.freed() && A.free_time_ns() < End;
}

/// Pairs (carried in, made) of allocation indexes: the k-th allocation of
/// each size carried in matched with the k-th of that size the window makes
/// and does not free.
std::vector<std::pair<uint32_t, uint32_t>>
matchCarriedIn(const deepum::v1::Profile &P, const WindowAllocations &A, uint64_t End);

} // namespace deepum::format

#endif
