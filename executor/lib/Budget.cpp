//===- Budget.cpp - The capacity budget -------------------------------------===//
//
// Modelled GPU residency (arena blocks brought in by prefetches and by each
// position's block chain, minus evictions and discards, plus live pool
// bytes) is kept under the budget by evicting the resident blocks needed
// furthest in the future (Belady, from the plan's block uses).
//
// Locking: called from the launch hook with the device's LaunchMu held
// (DeviceState.h), which guards Resident, NeededStamp, Stamp, Budget and the
// kept next uses; the pool's statistics take the pool's own lock (a leaf).
//
//===----------------------------------------------------------------------===//
#include "DeviceState.h"

#include <algorithm>
#include <utility>

namespace deepum::executor {

using namespace detail;

namespace {
constexpr uint64_t kNeverUsed = ~uint64_t{0};

/// The position of arena block `B`'s next use after `Pos` (plus the plan's
/// length when it is in the next iteration), or kNeverUsed.
uint64_t nextUse(const CompiledPlan &P, uint32_t B, uint32_t Pos) {
  const auto Uses = P.blockPositions(B);
  if (Uses.empty())
    return kNeverUsed;
  auto It = std::upper_bound(Uses.begin(), Uses.end(), Pos);
  if (It != Uses.end())
    return *It;
  return uint64_t{Uses.front()} + P.positions(); // next iteration
}

/// Distance from the current position to `B`'s next use (Belady's key). A
/// scan's answer is kept: the scans of one iteration find most blocks'
/// next uses unchanged, and the binary search over every resident block's
/// uses was most of the hook's cost under a tight budget.
uint64_t nextUseDistance(DeviceState &D, uint32_t B) {
  const uint32_t Pos = D.CurrentPosition;
  uint64_t &At = D.NextUseAt[B];
  if (D.NextUseEpoch[B] != D.UseEpoch || (At != kNeverUsed && At <= Pos)) {
    At = nextUse(*D.Plan, B, Pos);
    D.NextUseEpoch[B] = D.UseEpoch;
  }
  return At == kNeverUsed ? kNeverUsed : At - Pos;
}

} // namespace

/// Keeps modelled residency + `Incoming` blocks under the budget by evicting
/// the resident blocks needed furthest in the future (Belady), never one
/// stamped as needed now. Called with LaunchMu held.
void detail::enforceBudget(Backend &Back, DeviceState &D, uint64_t Incoming) {
  if (!D.Budget)
    return;
  const uint64_t BlockBytes = D.blockBytes();
  const uint64_t Fallback = D.Pool.stats().BytesInUse; // unplanned memory is on the GPU too
  const uint64_t Limit = D.Budget > Fallback ? D.Budget - Fallback : 0;
  uint64_t Resident = (D.ResidentBlocks.load() + Incoming) * BlockBytes;
  if (Resident <= Limit)
    return;
  // Evict down to a low watermark (1/16 below the limit), not just to the
  // limit: one scan then makes room for many launches, which keeps the hook's
  // amortised cost low, and the driver is never pushed to the edge.
  const uint64_t LowWater = Limit - Limit / 16;
  uint64_t Need = (Resident - LowWater + BlockBytes - 1) / BlockBytes;
  // A position behind the last scan's (a new iteration, a resync back)
  // starts a new epoch: the kept next uses were found ahead of it.
  if (D.CurrentPosition < D.LastScanPosition)
    ++D.UseEpoch;
  D.LastScanPosition = D.CurrentPosition;
  std::vector<std::pair<uint64_t, uint32_t>> &Victims = D.Victims; // (distance, block)
  Victims.clear();
  for (uint32_t B = 0; B < D.Resident.size(); ++B)
    if (D.Resident[B] && D.NeededStamp[B] != D.Stamp)
      Victims.push_back({nextUseDistance(D, B), B});
  if (Victims.empty())
    return;
  Need = std::min<uint64_t>(Need, Victims.size());
  // Furthest next use first; equal distances by address, so that the choice
  // does not depend on the selection algorithm.
  std::nth_element(Victims.begin(), Victims.begin() + static_cast<long>(Need - 1), Victims.end(),
                   [](const auto &A, const auto &B) {
                     return A.first != B.first ? A.first > B.first : A.second < B.second;
                   });
  // In address order, in calls of at most kEvictionCallBlocks blocks.
  std::sort(Victims.begin(), Victims.begin() + static_cast<long>(Need),
            [](const auto &A, const auto &B) { return A.second < B.second; });
  orderAfterCompute(Back, D);
  D.Ranges.clear();
  D.Leaving.clear();
  for (uint64_t I = 0; I < Need; ++I)
    evictInCalls(Back, D, {uint64_t{Victims[I].second} * BlockBytes, BlockBytes},
                 /*Budget=*/true);
  flushEvictions(Back, D, /*Budget=*/true);
}

} // namespace deepum::executor
