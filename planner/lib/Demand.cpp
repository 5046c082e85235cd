//===- Demand.cpp - Demand paging at the budget: the no-prefetch yardstick ---===//
//
// No prefetch, eviction or discard: every block comes in by a demand fault,
// and the executor keeps residency under the budget by evicting the resident
// blocks needed farthest in the future (executor/lib/Budget.cpp, which evicts
// down to a low watermark 1/16 under the budget, so it misses somewhat more).
// The count reported here is Belady's MIN at the capacity: the fewest misses
// of any replacement policy, a lower bound on the faults any policy without
// prefetch can leave. On a GPU, where real oversubscription is not allowed,
// the plan stands for the run "without a plan" at a budget that a prefetch
// plan's faults are held against.
//
// The schedule replays MIN over rounds of the cyclic iteration until the
// residency at a round's start repeats, and reports the last round: blocks
// faulted in, victims and their write-backs, and a predicted iteration time
// (compute, each kernel that misses one fault batch and its blocks'
// transfers, each victim's write-back before its replacement arrives).
//
//===----------------------------------------------------------------------===//
#include "deepum/planner/Schedule.h"

#include "Internal.h"

#include <algorithm>
#include <cassert>
#include <functional>
#include <set>
#include <utility>

namespace deepum::planner {

using namespace detail;

namespace {
constexpr unsigned kMaxRounds = 8;
} // namespace

Schedule scheduleDemand(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes) {
  Schedule S = emptySchedule(T, GpuMemoryBytes);
  const uint32_t N = T.Positions;
  const uint64_t C = std::max<uint64_t>(S.Stats.CapacityBlocks, 1);
  for (uint32_t P = 0; P < N; ++P)
    S.Stats.ComputeUs += T.DurationUs[P];
  S.Stats.PredictedIterationUs = S.Stats.ComputeUs;
  if (N == 0)
    return S;
  const UseTable U = buildUseTable(T);
  const double BlockUs = M.transferUs(T.BlockBytes), WriteBackUs = M.writeBackUs(T.BlockBytes);

  // Residency ordered by next use (absolute: round * N + position), farthest
  // last; Cursor[B] indexes B's next use in U.Pos.
  std::set<std::pair<uint64_t, uint64_t>> Resident;
  std::vector<uint64_t> NextUse(T.Blocks, 0), Cursor(T.Blocks, 0);
  std::vector<uint8_t> Dirty(T.Blocks, 0), In(T.Blocks, 0);
  std::vector<uint32_t> UsedAt(T.Blocks, ~uint32_t{0});
  auto nextAfterUse = [&](uint64_t B, uint64_t Round) {
    // Called at B's use Cursor[B]: the following one, wrapping to the next round.
    uint64_t J = ++Cursor[B];
    if (J == U.count(B)) {
      Cursor[B] = 0;
      return (Round + 1) * N + U.Pos[U.Start[B]];
    }
    return Round * N + U.Pos[U.Start[B] + J];
  };

  std::vector<uint64_t> StartSet, PrevStartSet;
  for (unsigned Round = 0; Round < kMaxRounds; ++Round) {
    StartSet.clear();
    for (const auto &[Next, B] : Resident)
      StartSet.push_back(B);
    std::sort(StartSet.begin(), StartSet.end());
    if (Round > 0 && StartSet == PrevStartSet) {
      S.Stats.Converged = true;
      break;
    }
    PrevStartSet = StartSet;
    std::fill(Cursor.begin(), Cursor.end(), 0);
    uint64_t Faulted = 0, Victims = 0, Written = 0;
    double Us = 0;
    for (uint32_t P = 0; P < N; ++P) {
      uint64_t Missed = 0;
      for (const BlockUse &BU : T.Uses[P]) {
        const uint64_t B = BU.Block;
        assert(UsedAt[B] != P && "buildTrace lists a block once a position");
        UsedAt[B] = P;
        const uint64_t I = U.Start[B] + Cursor[B];
        if (In[B]) {
          Resident.erase({NextUse[B], B});
        } else {
          In[B] = 1;
          ++Missed; // nothing is discarded: dead contents come back too
        }
        Dirty[B] |= U.Writes[I];
        NextUse[B] = nextAfterUse(B, Round);
        Resident.insert({NextUse[B], B});
      }
      // Make room: the farthest-needed blocks the kernel does not touch.
      uint64_t Copied = 0;
      for (auto It = Resident.end(); Resident.size() > C && It != Resident.begin();) {
        --It;
        const uint64_t B = It->second;
        if (UsedAt[B] == P)
          continue;
        bool Copy = Dirty[B] || M.EvictionCopiesClean;
        Copied += Copy;
        Written += Dirty[B];
        ++Victims;
        Dirty[B] = In[B] = 0;
        It = Resident.erase(It);
      }
      Faulted += Missed;
      Us += T.DurationUs[P] + static_cast<double>(Copied) * WriteBackUs +
            static_cast<double>(Missed) * BlockUs + (Missed ? M.FaultBatchLatencyUs : 0.0);
    }
    S.Stats.DemandFetches = Faulted;
    S.Stats.Evictions = Victims;
    S.Stats.DirtyEvictions = Written;
    S.Stats.PredictedIterationUs = Us;
    for (uint32_t &At : UsedAt)
      At = ~uint32_t{0};
  }
  S.Stats.StallUs = S.Stats.PredictedIterationUs - S.Stats.ComputeUs;
  return S;
}

} // namespace deepum::planner
