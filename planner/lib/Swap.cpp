//===- Swap.cpp - Tensor swap selection (Zhang et al. 2019) -----------------===//
//
// The comparison strategy. Memory is the set of arena blocks holding live data
// (blocks whose allocations are all freed are discarded and mapped again when
// reused). While the peak of that load exceeds the capacity, a swap-out is
// chosen among the idle intervals of allocations of at least 1 MiB that span
// the peak: between two consecutive uses, the allocation's blocks no other
// kernel touches leave after the first use and come back before the second.
// Candidates are ranked by three scores — duration of absence, blocks x
// absence, and absence weighted by how far the load exceeds the capacity —
// and the one ranked first by a majority (else the best rank sum) is taken.
// The swap-in is timed never to stall: it is issued at the latest position
// whose remaining compute before the use covers its transfer.
//
//===----------------------------------------------------------------------===//
#include "deepum/planner/Schedule.h"

#include "Internal.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <map>

using namespace llvm;
using namespace deepum::v1;

namespace deepum::planner {

using namespace detail;

namespace {

constexpr uint64_t kMinSwapBytes = uint64_t{1} << 20;

struct Candidate {
  uint32_t Sequence;
  uint32_t From, To; // consecutive uses (To may wrap: To <= From)
  uint32_t Issue;    // swap-in position
  std::vector<uint64_t> Blocks;
  double Scores[3];
};

/// Stall-free compute time of the iteration, cumulative per position.
struct ComputeClock {
  std::vector<double> Static; // Positions + 1
  uint32_t N = 0;

  explicit ComputeClock(const Trace &T) : Static(T.Positions + 1, 0), N(T.Positions) {
    for (uint32_t P = 0; P < N; ++P)
      Static[P + 1] = Static[P] + T.DurationUs[P];
  }
  double total() const { return Static[N]; }
  /// Compute time of positions [From, To), cyclic.
  double span(uint32_t From, uint32_t To) const {
    return To >= From ? Static[To] - Static[From] : Static[N] - Static[From] + Static[To];
  }
};

/// Adds D to the load of positions [From, To), cyclic.
void addLoad(std::vector<int64_t> &Load, uint32_t From, uint32_t To, int64_t D) {
  const uint32_t N = static_cast<uint32_t>(Load.size());
  for (uint32_t P = From; P != To; P = (P + 1) % N)
    Load[P] += D;
}

/// Load: blocks with live data at each position. Freed gaps are discarded
/// after the block's last use and mapped again (no transfer) at its next use;
/// those discards and mappings go into S.
std::vector<int64_t> liveLoad(const Trace &T, const UseTable &U, Schedule &S) {
  const uint32_t N = T.Positions;
  std::vector<int64_t> Load(N, 0);
  for (uint64_t B = 0; B < T.Blocks; ++B) {
    uint64_t Count = U.count(B);
    if (Count == 0)
      continue;
    // Present from each use that follows a freed gap up to the next freed gap.
    bool AnyGap = false;
    for (uint64_t J = 0; J < Count; ++J)
      AnyGap |= U.FreedBefore[U.Start[B] + J];
    if (!AnyGap) {
      for (uint32_t P = 0; P < N; ++P)
        ++Load[P];
      continue;
    }
    // Each live period starts at a use after a freed gap and ends with the
    // last use before the next one.
    for (uint64_t J = 0; J < Count; ++J) {
      if (!U.FreedBefore[U.Start[B] + J])
        continue;
      uint64_t Last = J;
      while (!U.FreedBefore[U.Start[B] + (Last + 1) % Count])
        Last = (Last + 1) % Count;
      uint32_t Begin = U.Pos[U.Start[B] + J], LastPos = U.Pos[U.Start[B] + Last];
      uint32_t Discard = (LastPos + 1) % N;
      Action D;
      D.set_kind(ACTION_KIND_DISCARD);
      D.set_position(Discard);
      D.set_due_position(LastPos);
      *D.add_ranges() = blockRange(T, B);
      S.Actions.push_back(D);
      ++S.Stats.Discards;
      Action Map;
      Map.set_kind(ACTION_KIND_PREFETCH);
      Map.set_position(Begin);
      Map.set_due_position(Begin);
      *Map.add_ranges() = blockRange(T, B);
      S.Actions.push_back(Map);
      ++S.Stats.Prefetches;
      ++S.Stats.Populates;
      if (Discard == Begin)
        addLoad(Load, 0, N - 1, 1), Load[N - 1] += 1;
      else
        addLoad(Load, Begin, Discard, 1);
    }
  }
  return Load;
}

/// The idle interval of allocation PA between its uses at From and To: the
/// blocks of the tensor nobody uses in between and that stay live, and the
/// latest swap-in that still hides their transfer behind compute. False when
/// there is no such block or the interval is too short to hide the transfer.
bool idleInterval(const Trace &T, const UseTable &U, const ComputeClock &Clock, double BlockUs,
                  const PlannedAllocation &PA, Candidate &Cand) {
  const uint32_t N = T.Positions;
  const uint32_t From = Cand.From, To = Cand.To;
  for (uint64_t B = PA.Offset / T.BlockBytes; B <= (PA.Offset + PA.Size - 1) / T.BlockBytes; ++B) {
    uint64_t Count = U.count(B);
    if (Count == 0)
      continue; // no kernel touches this block of the tensor
    auto First = U.Pos.begin() + U.Start[B], Last = First + Count;
    auto It = std::upper_bound(First, Last, From);
    uint64_t NextIdx = It == Last ? 0 : It - First;
    uint32_t NextPos = First[NextIdx];
    if (NextPos != To || U.DeadBefore[U.Start[B] + NextIdx])
      continue;
    Cand.Blocks.push_back(B);
  }
  if (Cand.Blocks.empty())
    return false;
  double Xfer = BlockUs * static_cast<double>(Cand.Blocks.size());
  uint32_t Issue = To;
  uint32_t Steps = 0;
  while (Clock.span(Issue, To) < Xfer && Issue != (From + 1) % N && Steps++ < N)
    Issue = (Issue + N - 1) % N;
  if (Clock.span(Issue, To) < Xfer || Issue == (From + 1) % N)
    return false; // too short to hide: swapping would stall
  Cand.Issue = Issue;
  return true;
}

/// Idle intervals of large allocations: consecutive uses of the tensor.
std::vector<Candidate> swapCandidates(const Trace &T, const UseTable &U, const ComputeClock &Clock,
                                      double BlockUs) {
  std::vector<Candidate> Candidates;
  for (size_t I = 0; I < T.TensorUses.size();) {
    size_t J = I;
    while (J < T.TensorUses.size() && T.TensorUses[J].Sequence == T.TensorUses[I].Sequence)
      ++J;
    const PlannedAllocation &PA = T.Allocations[T.TensorUses[I].Sequence];
    if (PA.Size >= kMinSwapBytes) {
      for (size_t K = I; K < J; ++K) {
        uint32_t From = T.TensorUses[K].Position;
        uint32_t To = T.TensorUses[K + 1 < J ? K + 1 : I].Position;
        if (From == To && J - I > 1)
          continue;
        Candidate Cand{PA.Sequence, From, To, 0, {}, {0, 0, 0}};
        if (idleInterval(T, U, Clock, BlockUs, PA, Cand))
          Candidates.push_back(std::move(Cand));
      }
    }
    I = J;
  }
  return Candidates;
}

/// Scores the candidates not yet taken whose absence covers the peak and
/// returns their indexes: absence, blocks x absence, and the excess load over
/// the capacity weighted by compute time during the absence.
std::vector<size_t> scoreCandidates(const Trace &T, const ComputeClock &Clock,
                                    const std::vector<int64_t> &Load, uint64_t C, uint32_t Peak,
                                    const std::vector<uint8_t> &Taken,
                                    std::vector<Candidate> &Candidates) {
  const uint32_t N = T.Positions;
  auto Covers = [&](const Candidate &Cand, uint32_t P) {
    uint32_t Begin = (Cand.From + 1) % N, End = Cand.Issue;
    return Begin <= End ? (P >= Begin && P < End) : (P >= Begin || P < End);
  };
  // Prefix sums of the excess load weighted by compute time: each
  // candidate's third score in O(1).
  std::vector<double> ExcessPrefix(N + 1, 0);
  for (uint32_t P = 0; P < N; ++P)
    ExcessPrefix[P + 1] =
        ExcessPrefix[P] +
        static_cast<double>(std::max<int64_t>(0, Load[P] - static_cast<int64_t>(C))) *
            T.DurationUs[P];
  auto ExcessOver = [&](uint32_t From, uint32_t To) { // positions [From, To), cyclic
    return To >= From ? ExcessPrefix[To] - ExcessPrefix[From]
                      : ExcessPrefix[N] - ExcessPrefix[From] + ExcessPrefix[To];
  };
  std::vector<size_t> Live;
  for (size_t I = 0; I < Candidates.size(); ++I) {
    if (Taken[I] || !Covers(Candidates[I], Peak))
      continue;
    Candidate &Cand = Candidates[I];
    double Absence = Clock.span((Cand.From + 1) % N, Cand.Issue);
    double Excess = ExcessOver((Cand.From + 1) % N, Cand.Issue);
    Cand.Scores[0] = Absence;
    Cand.Scores[1] = Absence * static_cast<double>(Cand.Blocks.size());
    Cand.Scores[2] = Excess;
    Live.push_back(I);
  }
  return Live;
}

/// Majority vote of the three rankings; rank sums break the tie. Returns an
/// index into Live.
size_t voteCandidate(const std::vector<Candidate> &Candidates, const std::vector<size_t> &Live) {
  std::vector<unsigned> RankSum(Live.size(), 0), Firsts(Live.size(), 0);
  for (int Score = 0; Score < 3; ++Score) {
    std::vector<size_t> Order(Live.size());
    for (size_t I = 0; I < Live.size(); ++I)
      Order[I] = I;
    std::stable_sort(Order.begin(), Order.end(), [&](size_t X, size_t Y) {
      return Candidates[Live[X]].Scores[Score] > Candidates[Live[Y]].Scores[Score];
    });
    for (size_t R = 0; R < Order.size(); ++R)
      RankSum[Order[R]] += static_cast<unsigned>(R);
    ++Firsts[Order[0]];
  }
  size_t Best = 0;
  for (size_t I = 0; I < Live.size(); ++I) {
    if (Firsts[I] >= 2) {
      Best = I;
      break;
    }
    if (RankSum[I] < RankSum[Best])
      Best = I;
  }
  return Best;
}

/// The swap-out after the candidate's first use and the swap-in before its
/// second, block by block.
void emitSwap(const Trace &T, const UseTable &U, const Candidate &Cand, Schedule &S) {
  const uint32_t N = T.Positions;
  for (uint64_t B : Cand.Blocks) {
    bool Dirty = false;
    for (uint64_t I = U.Start[B]; I < U.Start[B + 1]; ++I)
      Dirty |= U.Writes[I];
    Action Out;
    Out.set_kind(ACTION_KIND_EVICT);
    Out.set_position((Cand.From + 1) % N);
    Out.set_due_position(Cand.From);
    Out.set_dirty(Dirty);
    *Out.add_ranges() = blockRange(T, B);
    S.Actions.push_back(Out);
    ++S.Stats.Evictions;
    S.Stats.DirtyEvictions += Dirty;
    Action In;
    In.set_kind(ACTION_KIND_PREFETCH);
    In.set_position(Cand.Issue);
    In.set_due_position(Cand.To);
    *In.add_ranges() = blockRange(T, B);
    S.Actions.push_back(In);
    ++S.Stats.Prefetches;
  }
}

} // namespace

Schedule scheduleSwap(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes) {
  Schedule S = emptySchedule(T, GpuMemoryBytes);
  const uint32_t N = T.Positions;
  const uint64_t C = S.Stats.CapacityBlocks;
  if (N == 0)
    return S;
  UseTable U = buildUseTable(T);
  const double BlockUs = M.transferUs(T.BlockBytes);
  const ComputeClock Clock(T);
  S.Stats.ComputeUs = Clock.total();

  std::vector<int64_t> Load = liveLoad(T, U, S);
  std::vector<Candidate> Candidates = swapCandidates(T, U, Clock, BlockUs);
  std::vector<uint8_t> Taken(Candidates.size(), 0);
  while (true) {
    uint32_t Peak = 0;
    for (uint32_t P = 1; P < N; ++P)
      if (Load[P] > Load[Peak])
        Peak = P;
    if (Load[Peak] <= static_cast<int64_t>(C))
      break;
    std::vector<size_t> Live = scoreCandidates(T, Clock, Load, C, Peak, Taken, Candidates);
    if (Live.empty())
      break;
    size_t Pick = Live[voteCandidate(Candidates, Live)];
    Taken[Pick] = 1;
    const Candidate &Cand = Candidates[Pick];
    addLoad(Load, (Cand.From + 1) % N, Cand.Issue, -static_cast<int64_t>(Cand.Blocks.size()));
    emitSwap(T, U, Cand, S);
  }
  int64_t PeakLoad = *std::max_element(Load.begin(), Load.end());
  if (PeakLoad > static_cast<int64_t>(C))
    S.Ignored.push_back((Twine("swap selection leaves a peak of ") + Twine(PeakLoad) +
                         " blocks above the capacity of " + Twine(C) +
                         "; the excess is left to demand paging")
                            .str());
  // Transfers: the swap-ins are timed to hide behind compute; write-backs
  // share the other engine. The estimate charges what does not fit in the
  // iteration's compute time.
  double H2D = BlockUs * static_cast<double>(S.Stats.Prefetches - S.Stats.Populates);
  double D2H = M.writeBackUs(T.BlockBytes) * static_cast<double>(S.Stats.DirtyEvictions);
  S.Stats.PredictedIterationUs = std::max({Clock.total(), H2D, D2H});
  S.Stats.StallUs = S.Stats.PredictedIterationUs - Clock.total();
  S.Stats.Converged = true;
  normalizeActions(S.Actions);
  return S;
}

} // namespace deepum::planner
