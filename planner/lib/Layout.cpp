//===- Layout.cpp - Lifetime-aware pool layout (Zhang et al. 2019) -----------===//
//
// Offsets are chosen like colouring an interval graph: allocations taken in
// one order, each placed in the smallest gap left by the already-placed
// allocations whose lifetimes overlap its own. Largest first packs tightest;
// in the order the program makes them, an allocation lands where a caching
// allocator would put it, in bytes freed shortly before: under
// oversubscription those are still on the GPU more often, and its blocks
// need no populate (the planner lays out both ways and keeps the faster). Finding those
// neighbours is the hot part: a segment tree over ticks answers "which placed
// allocations overlap [a, b)" in time proportional to the answer.
//
//===----------------------------------------------------------------------===//
#include "deepum/planner/Trace.h"

#include <algorithm>
#include <map>
#include <set>

namespace deepum::planner {

namespace {

uint64_t alignUp(uint64_t V) {
  return (V + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

/// Placed intervals by tick. Cover[n] holds intervals covering node n's whole
/// range (its canonical nodes); Touch[n] those intersecting n's range.
class IntervalIndex {
public:
  explicit IntervalIndex(uint32_t Ticks) : Size(std::max<uint32_t>(Ticks, 1)) {
    Cover.resize(4 * Size);
    Touch.resize(4 * Size);
  }
  void insert(TickInterval I, uint32_t Id) {
    if (!I.empty())
      insert(1, 0, Size, I, Id);
  }
  /// Appends the ids of intervals overlapping I to Out (duplicates possible).
  void query(TickInterval I, std::vector<uint32_t> &Out) const {
    if (!I.empty())
      query(1, 0, Size, I, Out);
  }

private:
  void insert(size_t Node, uint32_t L, uint32_t R, TickInterval I, uint32_t Id) {
    Touch[Node].push_back(Id);
    if (I.Begin <= L && R <= I.End) {
      Cover[Node].push_back(Id);
      return;
    }
    uint32_t M = L + (R - L) / 2;
    if (I.Begin < M)
      insert(2 * Node, L, M, I, Id);
    if (I.End > M)
      insert(2 * Node + 1, M, R, I, Id);
  }
  void query(size_t Node, uint32_t L, uint32_t R, TickInterval I,
             std::vector<uint32_t> &Out) const {
    if (I.Begin <= L && R <= I.End) {
      Out.insert(Out.end(), Touch[Node].begin(), Touch[Node].end());
      return;
    }
    Out.insert(Out.end(), Cover[Node].begin(), Cover[Node].end());
    uint32_t M = L + (R - L) / 2;
    if (I.Begin < M)
      query(2 * Node, L, M, I, Out);
    if (I.End > M)
      query(2 * Node + 1, M, R, I, Out);
  }
  uint32_t Size;
  std::vector<std::vector<uint32_t>> Cover, Touch;
};

} // namespace

uint64_t layoutPool(std::vector<PlannedAllocation> &Allocations, LayoutOrder By) {
  // Persistent region first, in sequence order: these never move.
  uint64_t Base = 0;
  uint32_t Ticks = 0;
  std::vector<uint32_t> Order;
  for (PlannedAllocation &PA : Allocations) {
    Ticks = std::max({Ticks, PA.Live[0].End, PA.Live[1].End});
    if (PA.Persistent) {
      PA.Offset = Base;
      Base += alignUp(PA.Size);
    } else {
      Order.push_back(PA.Sequence);
    }
  }
  if (By == LayoutOrder::BySize)
    std::stable_sort(Order.begin(), Order.end(), [&](uint32_t X, uint32_t Y) {
      return Allocations[X].Size > Allocations[Y].Size;
    });
  else
    // Those live at tick 0 (carried over from the previous iteration) first,
    // then in the order the program makes them.
    std::stable_sort(Order.begin(), Order.end(), [&](uint32_t X, uint32_t Y) {
      const PlannedAllocation &A = Allocations[X], &B = Allocations[Y];
      const bool WrapA = !A.Live[1].empty(), WrapB = !B.Live[1].empty();
      if (WrapA != WrapB)
        return WrapA;
      return A.Live[0].Begin < B.Live[0].Begin;
    });
  IntervalIndex Index(Ticks);
  std::vector<uint32_t> Neighbours;
  std::vector<uint32_t> Stamp(Allocations.size(), UINT32_MAX);
  std::vector<std::pair<uint64_t, uint64_t>> Taken;
  uint64_t Top = 0;
  for (uint32_t Seq : Order) {
    PlannedAllocation &PA = Allocations[Seq];
    uint64_t Need = alignUp(PA.Size);
    Neighbours.clear();
    Index.query(PA.Live[0], Neighbours);
    Index.query(PA.Live[1], Neighbours);
    Taken.clear();
    for (uint32_t N : Neighbours) {
      if (Stamp[N] == Seq)
        continue;
      Stamp[N] = Seq;
      Taken.push_back({Allocations[N].Offset - Base,
                       Allocations[N].Offset - Base + alignUp(Allocations[N].Size)});
    }
    std::sort(Taken.begin(), Taken.end());
    // Best fit among the gaps; the space above every neighbour is the fallback.
    uint64_t BestOffset = UINT64_MAX, BestGap = UINT64_MAX, Reached = 0;
    for (auto [Begin, End] : Taken) {
      if (Begin > Reached && Begin - Reached >= Need && Begin - Reached < BestGap) {
        BestGap = Begin - Reached;
        BestOffset = Reached;
      }
      Reached = std::max(Reached, End);
    }
    if (BestOffset == UINT64_MAX)
      BestOffset = Reached;
    PA.Offset = Base + BestOffset;
    Top = std::max(Top, BestOffset + Need);
    Index.insert(PA.Live[0], Seq);
    Index.insert(PA.Live[1], Seq);
  }
  return Base + Top;
}

uint64_t peakLiveBytes(const std::vector<PlannedAllocation> &Allocations, uint32_t Ticks) {
  std::vector<int64_t> Delta(Ticks + 1, 0);
  uint64_t Persistent = 0;
  for (const PlannedAllocation &PA : Allocations) {
    if (PA.Persistent) {
      Persistent += PA.Size;
      continue;
    }
    for (const TickInterval &L : PA.Live) {
      if (L.empty())
        continue;
      Delta[L.Begin] += static_cast<int64_t>(PA.Size);
      Delta[std::min(L.End, Ticks)] -= static_cast<int64_t>(PA.Size);
    }
  }
  int64_t Live = 0, Peak = 0;
  for (int64_t D : Delta) {
    Live += D;
    Peak = std::max(Peak, Live);
  }
  return Persistent + static_cast<uint64_t>(Peak);
}

namespace {

/// A first-class best-fit heap: free blocks coalesce; the heap grows at the
/// top only when no free block fits, absorbing a free block that ends there.
class BestFitHeap {
public:
  uint64_t allocate(uint64_t Size) {
    auto It = BySize.lower_bound({Size, 0});
    if (It != BySize.end()) {
      auto [BlockSize, Offset] = *It;
      BySize.erase(It);
      ByOffset.erase(Offset);
      if (BlockSize > Size)
        addFree(Offset + Size, BlockSize - Size);
      return Offset;
    }
    uint64_t Offset = Top;
    if (!ByOffset.empty()) {
      auto Last = std::prev(ByOffset.end());
      if (Last->first + Last->second == Top) {
        Offset = Last->first;
        BySize.erase({Last->second, Last->first});
        ByOffset.erase(Last);
      }
    }
    Top = Offset + Size;
    Peak = std::max(Peak, Top);
    return Offset;
  }
  void release(uint64_t Offset, uint64_t Size) {
    auto Next = ByOffset.lower_bound(Offset);
    if (Next != ByOffset.end() && Offset + Size == Next->first) {
      Size += Next->second;
      BySize.erase({Next->second, Next->first});
      Next = ByOffset.erase(Next);
    }
    if (Next != ByOffset.begin()) {
      auto Prev = std::prev(Next);
      if (Prev->first + Prev->second == Offset) {
        Offset = Prev->first;
        Size += Prev->second;
        BySize.erase({Prev->second, Prev->first});
        ByOffset.erase(Prev);
      }
    }
    addFree(Offset, Size);
  }
  uint64_t peak() const { return Peak; }

private:
  void addFree(uint64_t Offset, uint64_t Size) {
    ByOffset[Offset] = Size;
    BySize.insert({Size, Offset});
  }
  std::map<uint64_t, uint64_t> ByOffset;
  std::set<std::pair<uint64_t, uint64_t>> BySize;
  uint64_t Top = 0, Peak = 0;
};

} // namespace

uint64_t bestFitPeakBytes(const std::vector<PlannedAllocation> &Allocations, uint32_t Ticks) {
  BestFitHeap Heap;
  std::vector<std::vector<uint32_t>> AllocAt(Ticks + 1), FreeAt(Ticks + 1);
  std::vector<uint64_t> Offset(Allocations.size(), 0);
  for (const PlannedAllocation &PA : Allocations) {
    if (PA.Persistent) {
      Offset[PA.Sequence] = Heap.allocate(alignUp(PA.Size));
      continue;
    }
    AllocAt[PA.Live[0].Begin].push_back(PA.Sequence);
    if (PA.Live[1].empty()) {
      FreeAt[std::min(PA.Live[0].End, Ticks)].push_back(PA.Sequence);
    } else {
      FreeAt[PA.Live[1].End].push_back(PA.Sequence);
      // The previous iteration's instance is live when this one starts.
      Offset[PA.Sequence] = Heap.allocate(alignUp(PA.Size));
    }
  }
  for (int Iteration = 0; Iteration < 2; ++Iteration)
    for (uint32_t Tick = 0; Tick <= Ticks; ++Tick) {
      for (uint32_t S : FreeAt[Tick])
        Heap.release(Offset[S], alignUp(Allocations[S].Size));
      for (uint32_t S : AllocAt[Tick])
        Offset[S] = Heap.allocate(alignUp(Allocations[S].Size));
    }
  return Heap.peak();
}

} // namespace deepum::planner
