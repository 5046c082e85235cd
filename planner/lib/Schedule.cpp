//===- Schedule.cpp - Block-level prefetch schedule over the whole iteration ---===//
//
// The iteration repeats, so its future is known. Replacement follows Belady's
// MIN on the cyclic block-use sequence (the victim is the resident block used
// farthest in the future; dead blocks, whose next use overwrites them, come
// first; a dirty victim's key is moved nearer by its write-back time, so a
// clean drop wins when next uses are close). Timing follows the
// "conservative" prefetching of Cao et al. 1995: each fetch takes exactly
// MIN's slot, and is issued as soon as that slot is free — after the victim's
// last use and, for a dirty victim, after its predicted write-back — and never
// more than one iteration ahead. Fetches are not held to need order: keeping
// the copy engine's FIFO in need order idles the link while an early need
// waits for its slot, and measured 4-11% slower in deepum-sim on the shipped
// models; issuing even later than the slot allows (a fixed lead) was slower
// still. A variant takes dead blocks (discarded, never written back) first.
//
// The cost model replays this on a time line: kernels take their profiled
// durations; a kernel starts when its predecessor ends and its blocks have
// arrived; transfers take bytes / link bandwidth on their engine's queue.
// Several rounds of the cyclic iteration run until the residency at an
// iteration start repeats; that round's actions are the plan.
//
//===----------------------------------------------------------------------===//
#include "deepum/planner/Schedule.h"

#include "Internal.h"

#include "deepum/format/PlanWire.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>
#include <map>
#include <queue>
#include <tuple>

using namespace llvm;
using namespace deepum::v1;

namespace deepum::planner {

namespace detail {
/// Per-block use lists in compressed form (CSR over blocks).
UseTable buildUseTable(const Trace &T) {
  UseTable U;
  U.Start.assign(T.Blocks + 1, 0);
  for (const auto &Uses : T.Uses)
    for (const BlockUse &BU : Uses)
      ++U.Start[BU.Block + 1];
  for (uint64_t B = 0; B < T.Blocks; ++B)
    U.Start[B + 1] += U.Start[B];
  U.Pos.resize(U.Start.back());
  U.DeadBefore.resize(U.Start.back());
  U.Writes.resize(U.Start.back());
  U.FreedBefore.resize(U.Start.back());
  std::vector<uint64_t> Fill(U.Start.begin(), U.Start.end() - 1);
  std::vector<AccessMode> Mode(U.Start.back());
  for (uint32_t P = 0; P < T.Positions; ++P)
    for (const BlockUse &BU : T.Uses[P]) {
      uint64_t I = Fill[BU.Block]++;
      U.Pos[I] = P;
      Mode[I] = BU.Mode;
      U.Writes[I] = writes(BU.Mode);
    }
  for (uint64_t B = 0; B < T.Blocks; ++B) {
    uint64_t N = U.count(B);
    for (uint64_t J = 0; J < N; ++J) {
      uint64_t I = U.Start[B] + J;
      uint64_t Prev = U.Start[B] + (J + N - 1) % N;
      // After a moment with no live allocation in the block its old contents
      // are garbage — unless the next use only reads: then the new contents
      // were written by the host (input batches are copied in, not computed),
      // and the block must be fetched, not merely mapped.
      U.FreedBefore[I] = Mode[I] != ACCESS_MODE_READ &&
                         T.blockDiesBetween(B, T.KernelTick[U.Pos[Prev]], T.KernelTick[U.Pos[I]]);
      U.DeadBefore[I] = Mode[I] == ACCESS_MODE_WRITE || U.FreedBefore[I];
    }
  }
  return U;
}

ArenaRange blockRange(const Trace &T, uint64_t Block) {
  ArenaRange R;
  R.set_offset(Block * T.BlockBytes);
  R.set_bytes(std::min(T.BlockBytes, T.Pool.ArenaBytes - Block * T.BlockBytes));
  return R;
}

} // namespace detail

using namespace detail;

namespace {

constexpr unsigned kRounds = 6;
/// Resident blocks examined per victim choice (in next-use order).
constexpr size_t kVictimWindow = 32;
constexpr double kInfinity = std::numeric_limits<double>::infinity();

/// The host-to-device side of the cost model's time line: one copy engine
/// for fetches and copies back, with the populates on it, or on the driver's
/// queue of their own where the device model says a populate holds no copy
/// engine (deepum-sim's engine does the same).
class HostToDevice {
public:
  HostToDevice(const CostModel &Model, double Fetch, double CopyBack)
      : M(Model), FetchUs(Fetch), CopyBackUs(CopyBack) {}
  /// A populate of a discarded block whose memory is free at Ready: its end.
  double populate(double Ready) {
    if (M.PopulateBlockUs <= 0)
      return Ready;
    double &Queue = M.PopulatesHoldCopyEngine ? Copy : Populates;
    Queue = std::max(Ready, Queue) + M.PopulateBlockUs;
    return Queue;
  }
  /// A block copied back from the pool: populated, then the copy.
  double copyIn(double Ready) {
    Copy = std::max(populate(Ready), Copy) + CopyBackUs;
    return Copy;
  }
  /// A block fetched from the host's pages by Unified Memory.
  double fetch(double Ready) {
    Copy = std::max(Ready, Copy) + FetchUs;
    return Copy;
  }

private:
  const CostModel &M;
  const double FetchUs, CopyBackUs;
  double Copy = 0, Populates = 0;
};

unsigned kindOrder(ActionKind K) {
  switch (K) {
  case ACTION_KIND_ADVISE:
    return 0;
  case ACTION_KIND_DISCARD:
    return 1;
  case ACTION_KIND_EVICT:
    return 2;
  case ACTION_KIND_COPY_OUT:
    return 3;
  case ACTION_KIND_PREFETCH:
    return 4;
  case ACTION_KIND_COPY_IN:
    return 5;
  default:
    return 6;
  }
}

/// A first-in first-out queue in one array: pops move a head index, and the
/// popped prefix is dropped once it is half the array. The search pushes a
/// block use per kernel use and pops most of them soon after; a std::deque
/// allocated and freed a node per 32 of them (5% of deepum-plan's time on a
/// 1M-block-use profile).
template <typename T> class Fifo {
public:
  bool empty() const { return Head == Items.size(); }
  const T &front() const { return Items[Head]; }
  void push_back(const T &X) { Items.push_back(X); }
  void pop_front() {
    if (++Head == Items.size()) {
      Items.clear();
      Head = 0;
    } else if (Head >= 4096 && 2 * Head >= Items.size()) {
      Items.erase(Items.begin(), Items.begin() + static_cast<ptrdiff_t>(Head));
      Head = 0;
    }
  }
  auto begin() const { return Items.begin() + static_cast<ptrdiff_t>(Head); }
  auto end() const { return Items.end(); }

private:
  std::vector<T> Items;
  size_t Head = 0;
};

/// Max-heap of blocks by (key, block) with each block at most once, so keys
/// can change without leaving stale entries behind. Keys sit beside their
/// blocks in the heap: comparisons read no other array. A key is held as
/// bits whose unsigned order is the double's, so that (key, block) compares
/// as one 128-bit number, without branches (the comparisons were a fifth of
/// the search's time).
class VictimHeap {
public:
  explicit VictimHeap(uint64_t Blocks) : Where(Blocks, kAbsent) {}
  bool empty() const { return Heap.empty(); }
  bool contains(uint64_t B) const { return Where[B] != kAbsent; }
  uint64_t top() const { return Heap.front().Block; }
  /// Inserts B, or moves it to its new key in place.
  void insert(uint64_t B, double Key) {
    const uint64_t Bits = keyOrderBits(Key);
    if (contains(B)) {
      size_t I = Where[B];
      if (Heap[I].Bits == Bits)
        return;
      Heap[I].Bits = Bits;
      up(I);
      down(Where[B]);
      return;
    }
    Where[B] = Heap.size();
    Heap.push_back({Bits, B});
    up(Heap.size() - 1);
  }
  /// Calls Visit(B) for the blocks in decreasing (key, block) order — the
  /// order successive top() and remove() give — without removing any, until
  /// Visit returns false. O(k log k) for k blocks visited: a frontier of heap
  /// slots, each above its children.
  template <typename Fn> void visitInOrder(Fn Visit) {
    Frontier.clear();
    if (!Heap.empty())
      Frontier.push_back({Heap[0], 0});
    auto Below = [](const Slot &X, const Slot &Y) { return above(Y.E, X.E); };
    while (!Frontier.empty()) {
      const size_t I = Frontier.front().Index;
      if (!Visit(Frontier.front().E.Block))
        return;
      // The visited slot's first child takes its place (one sift instead of
      // a pop and a push), the second is pushed.
      const size_t C = 2 * I + 1;
      if (C >= Heap.size()) {
        std::pop_heap(Frontier.begin(), Frontier.end(), Below);
        Frontier.pop_back();
        continue;
      }
      replaceFrontierTop({Heap[C], C});
      if (C + 1 < Heap.size()) {
        Frontier.push_back({Heap[C + 1], C + 1});
        std::push_heap(Frontier.begin(), Frontier.end(), Below);
      }
    }
  }
  void remove(uint64_t B) {
    size_t I = Where[B];
    if (I == kAbsent)
      return;
    Where[B] = kAbsent;
    Entry Last = Heap.back();
    Heap.pop_back();
    if (I == Heap.size())
      return;
    place(I, Last);
    up(I);
    down(Where[Last.Block]);
  }

private:
  static constexpr size_t kAbsent = SIZE_MAX;
  __extension__ typedef unsigned __int128 Order;
  struct Entry {
    uint64_t Bits; // keyOrderBits of the key
    uint64_t Block;
  };
  struct Slot {
    Entry E;
    size_t Index;
  };
  static bool above(const Entry &X, const Entry &Y) {
    return ((Order{X.Bits} << 64) | X.Block) > ((Order{Y.Bits} << 64) | Y.Block);
  }
  void place(size_t I, const Entry &E) {
    Heap[I] = E;
    Where[E.Block] = I;
  }
  void up(size_t I) {
    Entry E = Heap[I];
    while (I > 0 && above(E, Heap[(I - 1) / 2])) {
      place(I, Heap[(I - 1) / 2]);
      I = (I - 1) / 2;
    }
    place(I, E);
  }
  void down(size_t I) {
    Entry E = Heap[I];
    for (;;) {
      size_t C = 2 * I + 1;
      if (C >= Heap.size())
        break;
      if (C + 1 < Heap.size() && above(Heap[C + 1], Heap[C]))
        ++C;
      if (!above(Heap[C], E))
        break;
      place(I, Heap[C]);
      I = C;
    }
    place(I, E);
  }
  /// The frontier's top replaced by X, sifted down to its place.
  void replaceFrontierTop(const Slot &X) {
    const size_t N = Frontier.size();
    size_t I = 0;
    for (;;) {
      size_t C = 2 * I + 1;
      if (C >= N)
        break;
      if (C + 1 < N && above(Frontier[C + 1].E, Frontier[C].E))
        ++C;
      if (!above(Frontier[C].E, X.E))
        break;
      Frontier[I] = Frontier[C];
      I = C;
    }
    Frontier[I] = X;
  }
  std::vector<Entry> Heap;
  std::vector<size_t> Where;
  std::vector<Slot> Frontier; // visitInOrder's, kept to reuse its memory
};

/// Actions as the replay reads them: each position's block runs, in action
/// and range order (CSR over positions). The replay walks them five times,
/// and chasing protobuf messages for each was most of its cost.
struct BlockRun {
  ActionKind Kind;
  Advice AdviceKind;
  uint64_t First, End; // blocks [First, End)
};
struct RunTable {
  std::vector<uint32_t> AtStart; // Positions + 1
  std::vector<BlockRun> Runs;
  ArrayRef<BlockRun> at(uint32_t P) const {
    return ArrayRef<BlockRun>(Runs.data() + AtStart[P], Runs.data() + AtStart[P + 1]);
  }
};

BlockRun blockRun(const Trace &T, ActionKind Kind, Advice AdviceKind, uint64_t Offset,
                  uint64_t Bytes) {
  return {Kind, AdviceKind, Offset / T.BlockBytes,
          std::min<uint64_t>((Offset + Bytes + T.BlockBytes - 1) / T.BlockBytes, T.Blocks)};
}

/// A search action on one block, as the round emits it.
struct BlockAction {
  uint32_t Position;
  ActionKind Kind;
  uint32_t Due;
  bool Dirty;
  uint64_t Block;
};

/// Actions as normalizeActions leaves them, without protobuf messages: one
/// head per action, its ranges (offset, bytes) in Ranges[RangeStart[i] ..
/// RangeStart[i + 1]). Three schedules are searched and one is kept; only
/// that one becomes messages.
struct NormalActions {
  std::vector<BlockAction> Heads; // Block unused
  std::vector<uint32_t> RangeStart;
  std::vector<std::pair<uint64_t, uint64_t>> Ranges;
};

/// normalizeActions on one-block actions: the same order (position, kind,
/// due position, dirty, first offset), the same grouping, the same merged
/// ranges.
NormalActions normalizeBlockActions(const Trace &T, std::vector<BlockAction> &Acts) {
  // Sorted by position and kind with a counting sort (linear in the actions
  // and positions; a comparison sort of a million actions was the planner's
  // one superlinear step), then by due position, dirtiness and block within
  // each (position, kind), where groups are small.
  struct Keyed {
    uint64_t DueDirty, Block;
    BlockAction A;
  };
  auto KeyOf = [](const BlockAction &A) { return size_t{A.Position} << 3 | kindOrder(A.Kind); };
  std::vector<uint32_t> Start((size_t{T.Positions} << 3) + 1, 0);
  for (const BlockAction &A : Acts) {
    assert(A.Position < T.Positions && "an action's position is inside the iteration");
    ++Start[KeyOf(A) + 1];
  }
  for (size_t K = 1; K < Start.size(); ++K)
    Start[K] += Start[K - 1];
  std::vector<Keyed> Sorted(Acts.size());
  {
    std::vector<uint32_t> Fill(Start.begin(), Start.end() - 1);
    for (const BlockAction &A : Acts)
      Sorted[Fill[KeyOf(A)]++] = {uint64_t{A.Due} << 1 | uint64_t{A.Dirty}, A.Block, A};
  }
  for (size_t K = 0; K + 1 < Start.size(); ++K)
    if (Start[K + 1] - Start[K] > 1)
      std::sort(Sorted.begin() + Start[K], Sorted.begin() + Start[K + 1],
                [](const Keyed &X, const Keyed &Y) {
                  if (X.DueDirty != Y.DueDirty)
                    return X.DueDirty < Y.DueDirty;
                  return X.Block < Y.Block;
                });
  for (size_t I = 0; I < Acts.size(); ++I)
    Acts[I] = Sorted[I].A;
  NormalActions Out;
  for (size_t I = 0; I < Acts.size();) {
    const BlockAction Head = Acts[I];
    Out.Heads.push_back(Head);
    Out.RangeStart.push_back(static_cast<uint32_t>(Out.Ranges.size()));
    auto SameAction = [&](const BlockAction &A) {
      return A.Position == Head.Position && A.Kind == Head.Kind && A.Due == Head.Due &&
             A.Dirty == Head.Dirty;
    };
    // Blocks ascend within an action: touching or repeated ones merge.
    uint64_t Begin = 0, End = 0;
    bool Open = false;
    for (; I < Acts.size() && SameAction(Acts[I]); ++I) {
      uint64_t Offset = Acts[I].Block * T.BlockBytes;
      uint64_t Bytes = std::min(T.BlockBytes, T.Pool.ArenaBytes - Offset);
      if (Open && Offset <= End) {
        End = std::max(End, Offset + Bytes);
        continue;
      }
      if (Open)
        Out.Ranges.push_back({Begin, End - Begin});
      Begin = Offset;
      End = Offset + Bytes;
      Open = true;
    }
    Out.Ranges.push_back({Begin, End - Begin});
  }
  Out.RangeStart.push_back(static_cast<uint32_t>(Out.Ranges.size()));
  return Out;
}

RunTable runTable(const Trace &T, const NormalActions &Acts) {
  const uint32_t N = T.Positions;
  RunTable R;
  R.AtStart.assign(N + 1, 0);
  for (size_t I = 0; I < Acts.Heads.size(); ++I)
    R.AtStart[Acts.Heads[I].Position + 1] += Acts.RangeStart[I + 1] - Acts.RangeStart[I];
  for (uint32_t P = 0; P < N; ++P)
    R.AtStart[P + 1] += R.AtStart[P];
  R.Runs.resize(R.AtStart[N]);
  std::vector<uint32_t> Fill(R.AtStart.begin(), R.AtStart.end() - 1);
  for (size_t I = 0; I < Acts.Heads.size(); ++I)
    for (uint32_t J = Acts.RangeStart[I]; J < Acts.RangeStart[I + 1]; ++J)
      R.Runs[Fill[Acts.Heads[I].Position]++] = blockRun(
          T, Acts.Heads[I].Kind, ADVICE_UNSPECIFIED, Acts.Ranges[J].first, Acts.Ranges[J].second);
  return R;
}

std::vector<Action> toActions(const NormalActions &Acts) {
  std::vector<Action> Out(Acts.Heads.size());
  for (size_t I = 0; I < Acts.Heads.size(); ++I) {
    const BlockAction &H = Acts.Heads[I];
    Action &A = Out[I];
    A.set_kind(H.Kind);
    A.set_position(H.Position);
    A.set_due_position(H.Due);
    A.set_dirty(H.Dirty);
    for (uint32_t J = Acts.RangeStart[I]; J < Acts.RangeStart[I + 1]; ++J) {
      ArenaRange *R = A.add_ranges();
      R->set_offset(Acts.Ranges[J].first);
      R->set_bytes(Acts.Ranges[J].second);
    }
  }
  return Out;
}

struct PendingAction {
  ActionKind Kind;
  int64_t Position; // absolute (round * N + position)
  int64_t Due;
  uint64_t Block;
  bool Dirty;
  int64_t Need; // absolute position of the use the fetch (and its victim's eviction) serves
};

} // namespace

void normalizeActions(std::vector<Action> &Actions) {
  // Sort indices by plain keys: moving protobuf messages around is slow.
  using Key = std::tuple<uint32_t, unsigned, uint32_t, bool, int, uint64_t, size_t>;
  std::vector<Key> Keys;
  Keys.reserve(Actions.size());
  for (size_t I = 0; I < Actions.size(); ++I) {
    const Action &A = Actions[I];
    Keys.emplace_back(A.position(), kindOrder(A.kind()), A.due_position(), A.dirty(),
                      static_cast<int>(A.advice()), A.ranges_size() ? A.ranges(0).offset() : 0, I);
  }
  std::sort(Keys.begin(), Keys.end());
  std::vector<Action> Out;
  Out.reserve(Actions.size());
  for (const Key &K : Keys) {
    Action &A = Actions[std::get<6>(K)];
    bool Same = !Out.empty() && Out.back().position() == A.position() &&
                Out.back().kind() == A.kind() && Out.back().due_position() == A.due_position() &&
                Out.back().dirty() == A.dirty() && Out.back().advice() == A.advice();
    if (!Same) {
      Out.push_back(std::move(A));
      continue;
    }
    for (const ArenaRange &R : A.ranges())
      *Out.back().add_ranges() = R;
  }
  std::vector<std::pair<uint64_t, uint64_t>> Ranges;
  for (Action &A : Out) {
    if (A.ranges_size() < 2)
      continue; // already sorted and merged
    Ranges.clear();
    for (const ArenaRange &R : A.ranges())
      Ranges.push_back({R.offset(), R.offset() + R.bytes()});
    std::sort(Ranges.begin(), Ranges.end());
    A.clear_ranges();
    for (size_t I = 0; I < Ranges.size();) {
      uint64_t Begin = Ranges[I].first, End = Ranges[I].second;
      for (++I; I < Ranges.size() && Ranges[I].first <= End; ++I)
        End = std::max(End, Ranges[I].second);
      ArenaRange *R = A.add_ranges();
      R->set_offset(Begin);
      R->set_bytes(End - Begin);
    }
  }
  Actions = std::move(Out);
}

namespace {

RunTable runTable(const Trace &T, const std::vector<Action> &Actions) {
  const uint32_t N = T.Positions;
  RunTable R;
  R.AtStart.assign(N + 1, 0);
  for (const Action &A : Actions)
    R.AtStart[A.position() + 1] += static_cast<uint32_t>(A.ranges_size());
  for (uint32_t P = 0; P < N; ++P)
    R.AtStart[P + 1] += R.AtStart[P];
  R.Runs.resize(R.AtStart[N]);
  std::vector<uint32_t> Fill(R.AtStart.begin(), R.AtStart.end() - 1);
  for (const Action &A : Actions)
    for (const ArenaRange &Range : A.ranges())
      R.Runs[Fill[A.position()]++] =
          blockRun(T, A.kind(), A.advice(), Range.offset(), Range.bytes());
  return R;
}

double predictRuns(const Trace &T, const CostModel &M, const RunTable &Table,
                   uint64_t GpuMemoryBytes) {
  const uint32_t N = T.Positions;
  const uint64_t NB = T.Blocks, C = GpuMemoryBytes / T.BlockBytes;
  const double BlockUs = M.transferUs(T.BlockBytes), WriteBackUs = M.writeBackUs(T.BlockBytes);
  const double CopyOutUs = M.copyPath() ? M.copyOutUs(T.BlockBytes) : WriteBackUs;
  HostToDevice H2D(M, BlockUs, M.copyPath() ? M.copyBackUs(T.BlockBytes) : BlockUs);
  auto At = [&](uint32_t P) { return Table.at(P); };
  // On the copy path a kernel waits for the populates of its blocks, as for
  // their copies back (docs/executor.md, "The copy path"): a late one delays
  // it, and is never faulted on.
  bool AwaitPopulates = false;
  for (const BlockRun &R : Table.Runs)
    AwaitPopulates |= R.Kind == ACTION_KIND_COPY_OUT || R.Kind == ACTION_KIND_COPY_IN;
  // Host time of each position's API calls, charged before its transfers are
  // issued and its kernel launched: one batch call per kind present, plus
  // each range after the first (runs of consecutive blocks, in issue order),
  // as deepum-sim charges a plan. Advice is not charged. libdeepum evicts in
  // calls of at most format::kEvictionCallBlocks resident blocks: the calls
  // beyond the first are charged in the replay, where residency is known.
  // The copy path: one copy call per range and a discard call after them
  // (out); a populate call, then one copy call per range (in).
  std::vector<double> CallUs(N, 0);
  for (uint32_t P = 0; P < N; ++P)
    for (ActionKind Kind : {ACTION_KIND_EVICT, ACTION_KIND_DISCARD, ACTION_KIND_PREFETCH,
                            ACTION_KIND_COPY_OUT, ACTION_KIND_COPY_IN}) {
      // Copies: one call per range as the plan cuts them (assignCopySlots:
      // runs of adjacent blocks whose slots are adjacent too).
      const bool Copies = Kind == ACTION_KIND_COPY_OUT || Kind == ACTION_KIND_COPY_IN;
      uint64_t Ranges = 0, Prev = 0;
      for (const BlockRun &R : At(P)) {
        if (R.Kind != Kind)
          continue;
        for (uint64_t B = R.First; B < R.End; ++B) {
          Ranges += Ranges == 0 || B != Prev + 1 || (Copies && B == R.First);
          Prev = B;
        }
      }
      if (!Ranges)
        continue;
      CallUs[P] += std::max(0.0, M.TransferCallUs) +
                   static_cast<double>(Ranges - 1) * std::max(0.0, M.TransferRangeUs);
      if (Kind == ACTION_KIND_COPY_OUT || Kind == ACTION_KIND_COPY_IN)
        CallUs[P] += static_cast<double>(Ranges) * std::max(0.0, M.TransferCallUs);
    }
  // Every block starts with contents on the host (parameters, inputs the
  // host fills); a discard makes them dead until a kernel writes them.
  std::vector<uint8_t> Resident(NB, 0), Valid(NB, 1), HostValid(NB, 1), ReadMostly(NB, 0);
  // Contents in the pinned pool (copied out): they come back by copy.
  std::vector<uint8_t> Pooled(NB, 0);
  // Populating: the block's fetch maps discarded pages; a kernel that comes
  // before it is done faults on them (as deepum-sim charges it).
  std::vector<uint8_t> Populating(NB, 0);
  std::vector<double> Arrival(NB, 0), BusyUntil(NB, 0);
  // When the block's last eviction or discard ends: it comes back no earlier
  // (the host holds its contents only once the write-back is done; the
  // executor issues such a fetch after that release's event).
  std::vector<double> LeftAt(NB, 0);
  // Memory of evicted blocks is released when their write-back (or last
  // kernel) completes.
  std::priority_queue<double, std::vector<double>, std::greater<>> Pending;
  uint64_t Used = 0;
  double D2HFree = 0, PrevStart = 0, PrevEnd = 0;
  double IterationEnd[4] = {0, 0, 0, 0};
  auto Release = [&](double Upto) {
    while (!Pending.empty() && Pending.top() <= Upto) {
      Pending.pop();
      --Used;
    }
  };
  for (int It = 0; It < 4; ++It) {
    // The host waits for the GPU at the iteration's end (deepum-sim's
    // default, SimOptions::HostWaitsEachIteration): the first launch is seen
    // when the last kernel has ended.
    PrevStart = std::max(PrevStart, PrevEnd);
    for (uint32_t P = 0; P < N; ++P) {
      // Launch P is seen while P-1 runs; its API calls hold the host first.
      uint64_t Leaving = 0, CopiedOut = 0;
      for (const BlockRun &R : At(P))
        if (R.Kind == ACTION_KIND_EVICT || R.Kind == ACTION_KIND_COPY_OUT)
          for (uint64_t B = R.First; B < R.End; ++B)
            (R.Kind == ACTION_KIND_EVICT ? Leaving : CopiedOut) += Resident[B];
      // The calls beyond the first of `Blocks` in calls of `PerCall`: the
      // evictions', and the copy-outs' discards, which go in slices too.
      auto Beyond = [](uint64_t Blocks, uint64_t PerCall) {
        return Blocks ? (Blocks - 1) / PerCall : 0;
      };
      const uint64_t MoreCalls = Beyond(Leaving, format::kEvictionCallBlocks) +
                                 Beyond(CopiedOut, format::kCopyOutSliceBlocks);
      const double Issue = PrevStart + CallUs[P] +
                           static_cast<double>(MoreCalls) * std::max(0.0, M.TransferCallUs);
      for (const BlockRun &R : At(P))
        for (uint64_t B = R.First; B < R.End; ++B) {
          if (R.Kind == ACTION_KIND_ADVISE) {
            // Read-mostly duplicates instead of migrating: the host copy
            // stays valid, so evicting an unwritten block copies nothing.
            if (R.AdviceKind == ADVICE_SET_READ_MOSTLY)
              ReadMostly[B] = 1;
            else if (R.AdviceKind == ADVICE_UNSET_READ_MOSTLY)
              ReadMostly[B] = 0;
          } else if (R.Kind == ACTION_KIND_EVICT || R.Kind == ACTION_KIND_DISCARD ||
                     R.Kind == ACTION_KIND_COPY_OUT) {
            if (R.Kind == ACTION_KIND_DISCARD)
              Pooled[B] = 0; // dead: the executor drops the slot
            if (!Resident[B])
              continue;
            double Ready = std::max({Issue, BusyUntil[B], Arrival[B]}), Done = Ready;
            const bool ToPool = R.Kind == ACTION_KIND_COPY_OUT && Valid[B];
            bool Copy = R.Kind != ACTION_KIND_DISCARD && Valid[B] &&
                        (ToPool || !HostValid[B] || (M.EvictionCopiesClean && !ReadMostly[B]));
            if (Copy) {
              Done = std::max(Ready, D2HFree) + (ToPool ? CopyOutUs : WriteBackUs);
              D2HFree = Done;
            }
            if (R.Kind == ACTION_KIND_DISCARD)
              Valid[B] = HostValid[B] = 0;
            else
              HostValid[B] = Valid[B] ? 1 : HostValid[B];
            Pooled[B] = ToPool;
            Resident[B] = 0;
            LeftAt[B] = Done;
            Pending.push(Done);
          } else if ((R.Kind == ACTION_KIND_PREFETCH || R.Kind == ACTION_KIND_COPY_IN) &&
                     !Resident[B]) {
            Release(Issue);
            double Room = Issue;
            while (Used >= C && !Pending.empty()) {
              Room = std::max(Room, Pending.top());
              Pending.pop();
              --Used;
            }
            double Ready = std::max(Room, LeftAt[B]), Done = Ready;
            if (Pooled[B]) { // the executor copies it back whatever the kind
              Done = H2D.copyIn(Ready);
              Pooled[B] = 0;
              HostValid[B] = 0;
            } else if (Valid[B] && HostValid[B]) {
              Done = H2D.fetch(Ready);
            } else if (!Valid[B]) {
              Done = H2D.populate(Ready);
            }
            Populating[B] = !Valid[B];
            Resident[B] = 1;
            Arrival[B] = Done;
            ++Used;
          }
        }
      double Start = std::max(PrevEnd, Issue); // the host launches it after its calls
      const double Ready = Start;               // before any wait, as deepum-sim tests it
      double DiscardedUs = 0;
      for (const BlockUse &U : T.Uses[P]) {
        uint64_t B = U.Block;
        if (Populating[B] && Resident[B] && Arrival[B] > Ready && M.DiscardedFaultBlockUs > 0 &&
            !AwaitPopulates) {
          DiscardedUs += M.DiscardedFaultBlockUs; // faulted on before its populate
          Populating[B] = 0;
          Arrival[B] = Ready;
          continue;
        }
        if (!Resident[B]) { // demand fault: one batch, then the copy
          Release(Start);
          while (Used >= C && !Pending.empty()) {
            Pending.pop();
            --Used;
          }
          double Done = std::max(Start, LeftAt[B]) + M.FaultBatchLatencyUs;
          if (Pooled[B]) // the plan's own access set: the executor copies it back
            Done = H2D.copyIn(Done), Pooled[B] = 0, HostValid[B] = 0;
          else if (Valid[B] && HostValid[B])
            Done = H2D.fetch(Done);
          else if (!Valid[B])
            Done += M.DiscardedFaultBlockUs;
          Resident[B] = 1;
          Arrival[B] = Done;
          ++Used;
        }
        Start = std::max(Start, Arrival[B]);
      }
      Start += DiscardedUs;
      double End = Start + T.DurationUs[P];
      for (const BlockUse &U : T.Uses[P]) {
        BusyUntil[U.Block] = End;
        if (writes(U.Mode)) {
          Valid[U.Block] = 1;
          HostValid[U.Block] = 0;
        }
      }
      PrevStart = Start;
      PrevEnd = End;
    }
    IterationEnd[It] = PrevEnd;
  }
  return IterationEnd[3] - IterationEnd[2];
}

} // namespace

double predictIterationUs(const Trace &T, const CostModel &M, const std::vector<Action> &Actions,
                          uint64_t GpuMemoryBytes) {
  return predictRuns(T, M, runTable(T, Actions), GpuMemoryBytes);
}

Schedule detail::emptySchedule(const Trace &T, uint64_t GpuMemoryBytes) {
  Schedule S;
  S.Stats.CapacityBlocks = GpuMemoryBytes / T.BlockBytes;
  for (const auto &Uses : T.Uses)
    S.Stats.MaxWorkingSetBlocks = std::max<uint64_t>(S.Stats.MaxWorkingSetBlocks, Uses.size());
  return S;
}

namespace {

/// The search behind one schedule: Belady's MIN weighed by a clock, over
/// rounds of the cyclic iteration until the residency at a round's start
/// repeats. `MarginBlocks`: a victim qualifies when its memory is free this
/// many block transfers before the fetch's kernel could start.
class PrefetchSearch {
public:
  PrefetchSearch(const Trace &Tr, const UseTable &Uses, const CostModel &Model,
                 uint64_t CapacityBlocks, double Margin, bool TakeDeadFirst, bool SwapPopulateSlots)
      : T(Tr), U(Uses), M(Model), N(Tr.Positions), C(CapacityBlocks), MarginBlocks(Margin),
        DeadFirst(TakeDeadFirst), SwapSlots(SwapPopulateSlots),
        BlockUs(Model.transferUs(Tr.BlockBytes)), WriteBackUs(Model.writeBackUs(Tr.BlockBytes)),
        DirtyPenaltyUs(WriteBackUs),
        CopyOutUs(Model.copyPath() ? Model.copyOutUs(Tr.BlockBytes) : 0),
        H2D(Model, BlockUs, Model.copyPath() ? Model.copyBackUs(Tr.BlockBytes) : BlockUs),
        UseCopy(Model.copyPath() && !Tr.Copyable.empty() &&
                Model.copyOutUs(Tr.BlockBytes) < WriteBackUs),
        Static(N + 1, 0),
        NB(Tr.Blocks), Resident(NB, 0), Dirty(NB, 0), InPool(NB, 0), LastUse(NB, -1),
        EvictedAt(NB, 0),
        HeapUse(NB, -2), Cursor(NB, 0), Ready(NB, 0), Stamp(NB, 0), Heap(NB),
        Start(static_cast<size_t>(kRounds) * N, 0), End(Start.size(), 0) {
    for (uint32_t P = 0; P < N; ++P)
      Static[P + 1] = Static[P] + T.DurationUs[P];
    IterUs = Static[N];
    for (uint64_t I = 0; I < C; ++I)
      FreeSlots.push(0.0);
  }

  /// Stall-free compute time of one iteration.
  double iterationUs() const { return IterUs; }
  /// Whether some kernel's working set exceeded the capacity.
  bool skippedBlocks() const { return Skipped != 0; }

  /// Runs rounds of the iteration until the residency at a round's start
  /// repeats, or kRounds of them.
  void run() {
    const int64_t Last = static_cast<int64_t>(kRounds) * N;
    for (int64_t Now = 0; Now < Last; ++Now) {
      uint32_t P = static_cast<uint32_t>(Now % N);
      if (P == 0 && recordRoundStart()) {
        // Swapping slots moves a round's populates by the next round's
        // fetches too: run it, its residency is the same.
        if (SwapSlots)
          for (int64_t Next = Now; Next < std::min(Now + N, Last); ++Next)
            runPosition(Next, static_cast<uint32_t>(Next % N));
        break;
      }
      runPosition(Now, P);
    }
    if (RoundStartState.size() == kRounds) // ran to the end: record the last state
      RoundStartState.push_back(residentState());
  }

  /// The actions of the first round that ends where it started (else the
  /// last one), with the statistics of that round, into S.
  void emitRound(Schedule &S, std::vector<BlockAction> &Actions) const;

private:
  /// The key of resident block B in the victim heap: the stall-free time of
  /// its next use after Now (infinite when its contents are dead by then).
  double nextUseKey(uint64_t B, int64_t Now) const {
    // Cursor[B] is the index of B's next use after Now.
    uint64_t I = U.Start[B] + Cursor[B];
    if (U.DeadBefore[I])
      return kInfinity;
    int64_t Round = Now / N;
    int64_t Next = Round * N + U.Pos[I];
    if (Next <= Now)
      Next += N;
    double Key = static_cast<double>(Next / N) * IterUs + Static[Next % N];
    // A dirty victim costs its write-back: its key moves nearer by that much.
    if (Dirty[B] || M.EvictionCopiesClean)
      Key -= copies(B) ? CopyOutUs : DirtyPenaltyUs;
    return Key;
  }

  // Actions at position q are issued while kernel q-1 runs (the host sees
  // launch q then): at kernel q-1's start.
  double issueTime(int64_t Q) const { return Q > 0 ? Start[Q - 1] : 0.0; }

  /// First position whose issue time is at or after X (issue times known up to Now).
  int64_t firstIssueAtOrAfter(double X, int64_t Now) const {
    if (X <= 0)
      return 0;
    // X is most often near the present: gallop back from Now to bracket it,
    // then search the bracket (Start is non-decreasing).
    int64_t Hi = Now, Lo = Now;
    for (int64_t Step = 1;; Step *= 2) {
      Lo = Hi - Step;
      if (Lo <= 0) {
        Lo = 0;
        break;
      }
      if (Start[Lo] < X)
        break;
      Hi = Lo;
    }
    auto It = std::lower_bound(Start.begin() + Lo, Start.begin() + Hi, X);
    return (It - Start.begin()) + 1;
  }

  /// When evicting Cand would leave its memory free: its last kernel has
  /// ended and, for a write-back, the copy behind the engine's queue is done.
  double freeTime(uint64_t Cand) const {
    double Free = LastUse[Cand] >= 0 ? End[LastUse[Cand]] : 0.0;
    bool Dead = U.DeadBefore[U.Start[Cand] + Cursor[Cand]];
    if (!Dead && (Dirty[Cand] || M.EvictionCopiesClean))
      Free = std::max(Free, D2HFree) + (copies(Cand) ? CopyOutUs : WriteBackUs);
    return Free;
  }

  /// Whether block B leaves by the copy path when it leaves dirty.
  bool copies(uint64_t B) const { return UseCopy && T.Copyable[B]; }

  std::vector<std::pair<uint64_t, uint8_t>> residentState() const {
    std::vector<std::pair<uint64_t, uint8_t>> State;
    for (uint64_t B = 0; B < NB; ++B)
      if (Resident[B])
        State.push_back({B, Dirty[B]});
      else if (InPool[B])
        State.push_back({B, 2});
    return State;
  }

  /// Records the residency at a round's start; true once the round that just
  /// ended repeated its start. Actions are taken by the round of the use they
  /// serve, so that round is complete.
  bool recordRoundStart() {
    RoundStartState.push_back(residentState());
    size_t R = RoundStartState.size();
    return R >= 3 && RoundStartState[R - 2] == RoundStartState[R - 1];
  }

  void runPosition(int64_t Now, uint32_t P);
  bool chooseVictim(int64_t Now, uint64_t &V);
  bool takeDeadVictim(int64_t Now, uint64_t &V);
  void admitRecent(int64_t Now, double Deadline);
  bool beladyVictim(int64_t Now, double Deadline, uint64_t &V);
  double evict(uint64_t V, int64_t Now);
  double earlierSlot(double FreeAt, int64_t Now);
  void fetch(uint64_t B, uint64_t UseIndex, int64_t Now, double FreeAt);

  const Trace &T;
  const UseTable &U;
  const CostModel &M;
  const uint32_t N;
  const uint64_t C;
  const double MarginBlocks;
  const bool DeadFirst;
  const bool SwapSlots;
  const double BlockUs, WriteBackUs;
  const double DirtyPenaltyUs;
  const double CopyOutUs;
  HostToDevice H2D;
  const bool UseCopy;

  // Static (stall-free) start times: the victim key's clock.
  std::vector<double> Static;
  double IterUs = 0;

  const uint64_t NB;
  std::vector<uint8_t> Resident, Dirty;
  std::vector<uint8_t> InPool; // contents in the pinned pool (copied out)
  std::vector<int64_t> LastUse, EvictedAt;
  // LastUse of each block when it entered the victim heap.
  std::vector<int64_t> HeapUse;
  std::vector<uint64_t> Cursor; // index into the block's use list of its next use
  std::vector<double> Ready;
  std::vector<uint32_t> Stamp;
  // Victim heap: the largest key is evicted. Ties go to the higher block, never
  // to insertion order: the choice must not depend on the round, or the cyclic
  // schedule never settles.
  VictimHeap Heap;

  std::vector<double> Start, End;
  uint64_t ResidentCount = 0;
  std::priority_queue<double, std::vector<double>, std::greater<>> FreeSlots;
  double D2HFree = 0;
  std::vector<PendingAction> Pending;
  std::vector<std::vector<std::pair<uint64_t, uint8_t>>> RoundStartState;
  uint64_t Skipped = 0;
  std::vector<uint64_t> Stash, Stale;
  // Blocks used, in use order, not yet in the victim heap: (block, stamp).
  Fifo<std::pair<uint64_t, uint32_t>> Recent;
  // The subset of Recent whose contents are dead before their next use.
  Fifo<std::pair<uint64_t, uint32_t>> DeadQ;
  // Populates (fetches that move nothing) and when their slot's memory is
  // free, earliest first: a later fetch may take that slot and give the
  // populate its own, if the populate's kernel still finds it free.
  struct HeldSlot {
    double FreeAt;
    int64_t Need;        // absolute position of the populate's kernel
    size_t PendingIndex; // its prefetch in Pending
    bool operator>(const HeldSlot &O) const {
      return std::tie(FreeAt, Need, PendingIndex) > std::tie(O.FreeAt, O.Need, O.PendingIndex);
    }
  };
  std::priority_queue<HeldSlot, std::vector<HeldSlot>, std::greater<>> Held;
};

/// One kernel: a slot for each of its blocks that is not resident (a free
/// one, or a victim's), then its start once its blocks have arrived.
void PrefetchSearch::runPosition(int64_t Now, uint32_t P) {
  double KernelStart = Now > 0 ? End[Now - 1] : 0;
  Start[Now] = KernelStart;
  for (const BlockUse &BU : T.Uses[P]) {
    uint64_t B = BU.Block;
    uint64_t UseIndex = U.Start[B] + Cursor[B];
    if (!Resident[B]) {
      // Find a slot: a free one, or MIN's victim.
      double FreeAt = 0;
      if (!FreeSlots.empty()) {
        FreeAt = FreeSlots.top();
        FreeSlots.pop();
      } else {
        uint64_t V = 0;
        if (!chooseVictim(Now, V)) {
          // The kernel's working set exceeds the capacity: leave this block
          // to demand paging.
          ++Skipped;
          Resident[B] = 0;
          LastUse[B] = Now;
          Cursor[B] = (Cursor[B] + 1) % U.count(B);
          continue;
        }
        FreeAt = evict(V, Now);
      }
      if (SwapSlots && !U.DeadBefore[UseIndex])
        FreeAt = earlierSlot(FreeAt, Now);
      fetch(B, UseIndex, Now, FreeAt);
    }
    KernelStart = std::max(KernelStart, Ready[B]);
    if (U.Writes[UseIndex])
      Dirty[B] = 1;
    LastUse[B] = Now;
    Cursor[B] = (Cursor[B] + 1) % U.count(B);
  }
  for (const BlockUse &BU : T.Uses[P])
    if (Resident[BU.Block]) {
      Recent.push_back({BU.Block, ++Stamp[BU.Block]});
      if (DeadFirst && U.DeadBefore[U.Start[BU.Block] + Cursor[BU.Block]])
        DeadQ.push_back({BU.Block, Stamp[BU.Block]});
    }
  Start[Now] = KernelStart;
  End[Now] = KernelStart + T.DurationUs[P];
}

/// Belady, weighed by the clock: among the resident blocks whose memory is
/// free in time for this fetch (last kernel over and, if dirty, write-back
/// done behind the engine's queue), the one used farthest in the future.
/// Blocks enter the victim heap only once their last kernel has ended early
/// enough (Recent holds them until then, in use order), so freshly written
/// blocks whose write-back would delay the fetch are passed over for a
/// slightly nearer one. If nothing qualifies, the block that frees earliest
/// is taken. False when no resident block can be taken.
bool PrefetchSearch::chooseVictim(int64_t Now, uint64_t &V) {
  const double Deadline = Now > 0 ? End[Now - 1] - MarginBlocks * BlockUs : 0.0;
  bool Victim = DeadFirst && takeDeadVictim(Now, V);
  admitRecent(Now, Deadline);
  if (!Victim)
    Victim = beladyVictim(Now, Deadline, V);
  if (Victim) {
    Heap.remove(V);
    ++Stamp[V]; // its queue entry, if any, is stale
  }
  return Victim;
}

/// Dead first: a block whose contents are dead costs no write-back; the
/// oldest one whose last kernel has ended by the time this kernel could
/// start is taken before Belady's choice.
bool PrefetchSearch::takeDeadVictim(int64_t Now, uint64_t &V) {
  const double NeedAt = Now > 0 ? End[Now - 1] : 0.0;
  while (!DeadQ.empty()) {
    auto [Cand, St] = DeadQ.front();
    if (St != Stamp[Cand] || !Resident[Cand] || LastUse[Cand] == Now) {
      DeadQ.pop_front();
      continue;
    }
    if (End[LastUse[Cand]] <= NeedAt) {
      V = Cand;
      DeadQ.pop_front();
      return true;
    }
    break;
  }
  return false;
}

/// Moves the blocks of Recent whose last kernel ends by the deadline into
/// the victim heap, oldest first.
void PrefetchSearch::admitRecent(int64_t Now, double Deadline) {
  while (!Recent.empty()) {
    auto [Cand, St] = Recent.front();
    if (St != Stamp[Cand] || !Resident[Cand] || LastUse[Cand] == Now) {
      Recent.pop_front(); // stale, or used by this kernel (re-queued after it)
      continue;
    }
    if (End[LastUse[Cand]] > Deadline)
      break;
    Heap.insert(Cand, nextUseKey(Cand, Now));
    HeapUse[Cand] = LastUse[Cand];
    Recent.pop_front();
  }
}

/// The farthest-used of the heap's first kVictimWindow blocks whose memory
/// is free by the deadline, else the one among them (or the oldest in
/// Recent) that frees earliest. The others go back into the heap.
bool PrefetchSearch::beladyVictim(int64_t Now, double Deadline, uint64_t &V) {
  bool Victim = false;
  Stash.clear();
  Stale.clear();
  uint64_t Fallback = 0;
  double FallbackAt = kInfinity;
  // Visited in heap order and left in place: taking each out and putting the
  // passed-over ones back cost two heap operations per candidate.
  Heap.visitInOrder([&](uint64_t Cand) {
    // Gone, pinned by this kernel, or used since it entered the heap
    // (its key is stale; it comes back through Recent).
    if (!Resident[Cand] || LastUse[Cand] != HeapUse[Cand]) {
      Stale.push_back(Cand);
      return true;
    }
    double Free = freeTime(Cand);
    if (Free <= Deadline) {
      V = Cand;
      Victim = true;
      return false;
    }
    Stash.push_back(Cand);
    if (Free < FallbackAt) {
      FallbackAt = Free;
      Fallback = Cand;
    }
    return Stash.size() < kVictimWindow;
  });
  for (uint64_t Cand : Stale)
    Heap.remove(Cand);
  if (!Victim)
    for (const auto &[Cand, St] : Recent)
      if (St == Stamp[Cand] && Resident[Cand] && LastUse[Cand] != Now) {
        if (freeTime(Cand) < FallbackAt) {
          FallbackAt = freeTime(Cand);
          Fallback = Cand;
        }
        break; // the oldest valid one frees first
      }
  if (!Victim && FallbackAt < kInfinity) {
    V = Fallback;
    Victim = true;
  }
  // The passed-over stay; their keys move where the round changed them.
  for (uint64_t Cand : Stash)
    if (!Victim || Cand != V) {
      Heap.insert(Cand, nextUseKey(Cand, Now));
      HeapUse[Cand] = LastUse[Cand];
    }
  return Victim;
}

/// Evicts (or discards) V right after its last use, at most one iteration
/// ahead; returns when its memory is free.
double PrefetchSearch::evict(uint64_t V, int64_t Now) {
  bool Dead = U.DeadBefore[U.Start[V] + Cursor[V]];
  int64_t Evict = std::max<int64_t>(LastUse[V] + 1, Now - N + 1);
  Evict = std::min(Evict, Now);
  double FreeAt = std::max(issueTime(Evict), LastUse[V] >= 0 ? End[LastUse[V]] : 0.0);
  bool WriteBack = !Dead && (Dirty[V] || M.EvictionCopiesClean);
  // A dirty block the guard protects leaves through the copy engine.
  const bool Copy = WriteBack && Dirty[V] && copies(V);
  if (WriteBack) {
    double WbStart = std::max(FreeAt, D2HFree);
    D2HFree = WbStart + (Copy ? CopyOutUs : WriteBackUs);
    FreeAt = D2HFree;
  }
  Pending.push_back({Dead   ? ACTION_KIND_DISCARD
                     : Copy ? ACTION_KIND_COPY_OUT
                            : ACTION_KIND_EVICT,
                     Evict, std::max<int64_t>(LastUse[V], 0), V, static_cast<bool>(Dirty[V]), Now});
  InPool[V] = Copy;
  Resident[V] = 0;
  Dirty[V] = 0;
  EvictedAt[V] = Evict;
  --ResidentCount;
  return FreeAt;
}

/// A fetch whose slot frees at FreeAt trades it for the earlier slot of a
/// populate of an earlier kernel when that kernel's blocks could still be
/// mapped in time from FreeAt on: a populate moves nothing, so it only needs
/// its memory by its kernel's start, while a fetch needs its slot early
/// enough to cover its transfer. Taking slots in need order, populates of
/// the next kernels would otherwise hold the memory free beside a long
/// kernel and the link would idle under it (vgg16 at 3x: the populates of
/// launch 149 hold the 330 blocks left free beside launch 146, 24.8 ms,
/// while the optimizer's fetches wait for 146 to end). Returns the time the
/// fetch's slot is free.
double PrefetchSearch::earlierSlot(double FreeAt, int64_t Now) {
  while (!Held.empty()) {
    HeldSlot H = Held.top();
    if (H.FreeAt >= FreeAt)
      return FreeAt;
    Held.pop();
    PendingAction &Pop = Pending[H.PendingIndex];
    if (H.Need >= Now || H.Need + N <= Now)
      continue;
    // The populate is issued once FreeAt has passed, still before its kernel.
    int64_t Issue = std::max(firstIssueAtOrAfter(FreeAt, Now), Pop.Position);
    if (Issue > H.Need)
      continue;
    Pop.Position = Issue;
    Held.push({FreeAt, H.Need, H.PendingIndex});
    return H.FreeAt;
  }
  return FreeAt;
}

/// Fetches B (or maps it, when its contents are dead) into a slot whose
/// memory is free at FreeAt.
void PrefetchSearch::fetch(uint64_t B, uint64_t UseIndex, int64_t Now, double FreeAt) {
  // Issue at the first position whose issue time finds the memory free
  // (no earlier than capacity allows), at most one iteration ahead, and
  // at the latest at the need itself.
  bool Populate = U.DeadBefore[UseIndex];
  // Contents in the pool come back by copy (populate, then the copy).
  const bool FromPool = InPool[B] && !Populate;
  InPool[B] = 0;
  // Never before the block's own last eviction: the plan would drop it
  // again after fetching it.
  int64_t Issue = std::max({firstIssueAtOrAfter(FreeAt, Now), EvictedAt[B],
                            Now - static_cast<int64_t>(N) + 1, int64_t{0}});
  Issue = std::min(Issue, Now);
  double Done = std::max(issueTime(Issue), FreeAt);
  Done = Populate ? H2D.populate(Done) : FromPool ? H2D.copyIn(Done) : H2D.fetch(Done);
  Ready[B] = Done;
  if (SwapSlots && Populate)
    Held.push({FreeAt, Now, Pending.size()});
  Pending.push_back(
      {FromPool ? ACTION_KIND_COPY_IN : ACTION_KIND_PREFETCH, Issue, Now, B, false, Now});
  Resident[B] = 1;
  // Copied back, the contents are on the GPU alone (the pool's slot is
  // free again, the host's pages were discarded): dirty.
  Dirty[B] = FromPool;
  ++ResidentCount;
  assert(ResidentCount <= C && "a fetch took a slot nobody freed");
}

void PrefetchSearch::emitRound(Schedule &S, std::vector<BlockAction> &Actions) const {
  int64_t Emit = kRounds - 1;
  for (unsigned R = 1; R + 1 < RoundStartState.size(); ++R)
    if (RoundStartState[R] == RoundStartState[R + 1]) {
      Emit = R;
      S.Stats.Converged = true;
      break;
    }
  int64_t Lo = Emit * N, Hi = Lo + N;
  S.Stats.PredictedIterationUs = End[Hi - 1] - (Lo > 0 ? End[Lo - 1] : 0);
  S.Stats.StallUs = std::max(0.0, S.Stats.PredictedIterationUs - IterUs);
  // Actions are taken by the round of the use they serve, not by the round
  // they are issued in: issue times drift between rounds (copy-engine state),
  // and every use of the cycle must get exactly one fetch and its eviction.
  for (const PendingAction &PA : Pending) {
    if (PA.Need < Lo || PA.Need >= Hi)
      continue;
    Actions.push_back({static_cast<uint32_t>(PA.Position % N), PA.Kind,
                       static_cast<uint32_t>(PA.Due % N),
                       PA.Dirty && (PA.Kind == ACTION_KIND_EVICT || PA.Kind == ACTION_KIND_COPY_OUT),
                       PA.Block});
    switch (PA.Kind) {
    case ACTION_KIND_PREFETCH: {
      ++S.Stats.Prefetches;
      int64_t DueRound = PA.Due;
      uint64_t B = PA.Block;
      // Recover whether this fetch was a populate from the use it serves.
      uint32_t DuePos = static_cast<uint32_t>(DueRound % N);
      auto First = U.Pos.begin() + U.Start[B], Last = U.Pos.begin() + U.Start[B + 1];
      auto It = std::lower_bound(First, Last, DuePos);
      if (It != Last && *It == DuePos && U.DeadBefore[It - U.Pos.begin()])
        ++S.Stats.Populates;
      break;
    }
    case ACTION_KIND_EVICT:
      ++S.Stats.Evictions;
      if (PA.Dirty)
        ++S.Stats.DirtyEvictions;
      break;
    case ACTION_KIND_DISCARD:
      ++S.Stats.Discards;
      break;
    case ACTION_KIND_COPY_OUT:
      ++S.Stats.CopyOuts;
      break;
    case ACTION_KIND_COPY_IN:
      ++S.Stats.CopyIns;
      ++S.Stats.Prefetches;
      break;
    default:
      break;
    }
  }
}

/// One schedule. `MarginBlocks`: a victim qualifies when its memory is free
/// this many block transfers before the fetch's kernel could start.
/// Its actions go to `Actions`, not to the schedule: the caller makes
/// messages of the one it keeps.
Schedule scheduleWith(const Trace &T, const UseTable &U, const CostModel &M,
                      uint64_t GpuMemoryBytes, double MarginBlocks, bool DeadFirst,
                      bool SwapSlots, NormalActions &Actions) {
  Schedule S = emptySchedule(T, GpuMemoryBytes);
  const uint64_t C = S.Stats.CapacityBlocks;
  if (T.Positions == 0)
    return S;
  PrefetchSearch Search(T, U, M, C, MarginBlocks, DeadFirst, SwapSlots);
  const double IterUs = Search.iterationUs();
  S.Stats.ComputeUs = IterUs;
  Search.run();
  std::vector<BlockAction> Emitted;
  Search.emitRound(S, Emitted);
  Actions = normalizeBlockActions(T, Emitted);
  // The search's own clock processes fetches in need order; the plan issues
  // them in position order. The prediction is a timed replay of the plan as
  // issued (the same model, one FIFO per direction in issue order).
  S.Stats.PredictedIterationUs = predictRuns(T, M, runTable(T, Actions), GpuMemoryBytes);
  S.Stats.StallUs = std::max(0.0, S.Stats.PredictedIterationUs - IterUs);
  if (Search.skippedBlocks())
    S.Ignored.push_back((Twine("the largest kernel touches ") + Twine(S.Stats.MaxWorkingSetBlocks) +
                         " blocks, more than the capacity of " + Twine(C) +
                         " blocks; the excess is left to demand paging")
                            .str());
  if (!S.Stats.Converged)
    S.Ignored.push_back("the cyclic schedule did not reach a fixed point; the plan replays one "
                        "round of it");
  return S;
}

} // namespace

Schedule schedulePrefetchWith(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes,
                              double MarginBlocks, bool DeadFirst, bool SwapPopulateSlots) {
  NormalActions Actions;
  Schedule S = scheduleWith(T, buildUseTable(T), M, GpuMemoryBytes, MarginBlocks, DeadFirst,
                            SwapPopulateSlots, Actions);
  S.Actions = toActions(Actions);
  return S;
}

Schedule schedulePrefetch(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes) {
  // How far ahead a victim must be free trades Belady's choice against the
  // clock: a small margin evicts the farthest-used block even when it was
  // just written (its write-back then delays the fetch); a large one prefers,
  // among the farthest-used, those that left the kernels long ago. Which is
  // best depends on the model (measured in deepum-sim: bert-large on V100 at
  // 2x is 3291 ms with 1 block of margin, 2951 ms with 4096; resnet50 is best
  // near 256). A third choice takes dead blocks first (oldest first, as soon
  // as their last kernel has ended): discarding costs no transfer, and taking
  // them before Belady's farthest-used block keeps dirty data resident while
  // the device-to-host engine is saturated (deepum-sim at 2x on h100-pcie:
  // gpt2-medium 1043 -> 1015 ms, bert-large 737 -> 734 ms; at 3x 1396 -> 1369
  // and 955 -> 923 ms; vgg16 at 3x is better without it, 420 vs 435 ms).
  // The cost model's replay picks, per plan, among the three; the margins
  // were chosen on the shipped models (a grid of 16-16384 blocks with and
  // without dead-first gained under 0.3% over these three).
  // The best of the three is tried again with populates giving their slots
  // to later fetches (earlierSlot), kept where the replay predicts it faster.
  // Where the device gives discarded data a cost (an H100 with driver 580:
  // a populate takes 14 us a block, but a kernel that writes a discarded
  // block before its populate arrives pays 4 ms a block), the three are tried
  // again keeping dead contents: no discard, dead blocks written back and
  // fetched like live ones. The replay, which charges both costs, picks.
  UseTable U = buildUseTable(T), Kept;
  if (M.PopulateBlockUs > 0 || M.DiscardedFaultBlockUs > 0) {
    Kept = U;
    std::fill(Kept.DeadBefore.begin(), Kept.DeadBefore.end(), 0);
  }
  Schedule Best;
  NormalActions BestActions;
  bool Have = false;
  double BestMargin = 0;
  bool BestDeadFirst = false;
  const UseTable *BestTable = &U;
  auto Try = [&](const UseTable &Table, double Margin, bool DeadFirst, bool SwapSlots) {
    NormalActions Actions;
    Schedule S = scheduleWith(T, Table, M, GpuMemoryBytes, Margin, DeadFirst, SwapSlots, Actions);
    if (!Have || S.Stats.PredictedIterationUs < Best.Stats.PredictedIterationUs * 0.9999) {
      Best = std::move(S);
      BestActions = std::move(Actions);
      Have = true;
      BestMargin = Margin;
      BestDeadFirst = DeadFirst;
      BestTable = &Table;
    }
  };
  for (const UseTable *Table : {&U, &Kept}) {
    if (Table->Start.empty())
      continue;
    Try(*Table, 256, true, false);
    Try(*Table, 1024, false, false);
    Try(*Table, 8192, false, false);
  }
  Try(*BestTable, BestMargin, BestDeadFirst, true);
  Best.Actions = toActions(BestActions);
  adviseReadMostly(T, M, GpuMemoryBytes, Best);
  return Best;
}

uint64_t assignCopySlots(const Trace &T, std::vector<Action> &Actions) {
  const uint64_t BB = T.BlockBytes;
  // Each block copied out holds a slot from its COPY_OUT's position until
  // the next action that brings it back or drops it (a copy back, a
  // prefetch, a discard) issues, cyclically: [Out, In) on the ring of
  // positions. An eviction or advice of it does not end the hold.
  struct Hold {
    uint32_t Out, In; // In <= Out: wraps past the iteration's end
    uint64_t Block;
    uint64_t Slot = 0;
  };
  std::vector<std::vector<uint32_t>> ActionsOf(T.Blocks); // where each block comes back or dies
  std::vector<Hold> Holds;
  for (const Action &A : Actions)
    for (const ArenaRange &R : A.ranges())
      for (uint64_t B = R.offset() / BB; B < (R.offset() + R.bytes() + BB - 1) / BB && B < T.Blocks;
           ++B) {
        if (A.kind() == ACTION_KIND_PREFETCH || A.kind() == ACTION_KIND_COPY_IN ||
            A.kind() == ACTION_KIND_DISCARD)
          ActionsOf[B].push_back(A.position());
        if (A.kind() == ACTION_KIND_COPY_OUT)
          Holds.push_back({A.position(), A.position(), B});
      }
  if (Holds.empty())
    return 0;
  for (Hold &H : Holds) {
    std::vector<uint32_t> &Ps = ActionsOf[H.Block];
    std::sort(Ps.begin(), Ps.end());
    auto It = std::upper_bound(Ps.begin(), Ps.end(), H.Out);
    // The first after, else the next iteration's first (none: it holds its
    // slot for good).
    H.In = It != Ps.end() ? *It : Ps.empty() ? H.Out : Ps.front();
  }
  // Holds within the iteration share slots (interval partitioning, earliest
  // free slot first); those that wrap keep a slot of their own, so that every
  // iteration assigns the same slots. A block next to the one before it in
  // the same copy takes the slot next to that one's when it is free: a run
  // of blocks is one copy call, out and back.
  std::sort(Holds.begin(), Holds.end(), [](const Hold &X, const Hold &Y) {
    return std::tie(X.Out, X.Block) < std::tie(Y.Out, Y.Block);
  });
  constexpr uint32_t kForever = UINT32_MAX;
  std::vector<uint32_t> SlotEnd; // per slot: the position its hold ends (kForever: wraps)
  std::priority_queue<std::pair<uint32_t, uint64_t>, std::vector<std::pair<uint32_t, uint64_t>>,
                      std::greater<>>
      FreeAt; // (position its hold ends, slot); stale when SlotEnd moved on
  // Free once its copy back has issued, at an earlier position: a
  // position's copy-outs go before its copy-ins.
  auto Take = [&](uint64_t Slot, const Hold &H) {
    if (Slot == SlotEnd.size())
      SlotEnd.push_back(0);
    const bool Wraps = H.In <= H.Out;
    SlotEnd[Slot] = Wraps ? kForever : H.In;
    if (!Wraps)
      FreeAt.push({H.In, Slot});
    return Slot;
  };
  const Hold *Prev = nullptr;
  for (Hold &H : Holds) {
    const uint64_t Next = Prev ? Prev->Slot + 1 : 0;
    // A hold that wraps also holds its slot from the iteration's start: only
    // a slot nobody has held yet will do.
    const bool Wraps = H.In <= H.Out;
    if (Prev && Prev->Out == H.Out && Prev->Block + 1 == H.Block &&
        (Next == SlotEnd.size() || (!Wraps && SlotEnd[Next] < H.Out))) {
      H.Slot = Take(Next, H);
    } else if (Wraps) {
      H.Slot = Take(SlotEnd.size(), H);
    } else {
      while (!FreeAt.empty() && SlotEnd[FreeAt.top().second] != FreeAt.top().first)
        FreeAt.pop(); // taken again since
      if (!FreeAt.empty() && FreeAt.top().first < H.Out) {
        const uint64_t Slot = FreeAt.top().second;
        FreeAt.pop();
        H.Slot = Take(Slot, H);
      } else {
        H.Slot = Take(SlotEnd.size(), H);
      }
    }
    Prev = &H;
  }
  const uint64_t Slots = SlotEnd.size();
  // Each COPY_OUT becomes one action per run of blocks with adjacent slots
  // (its pool_offset the run's first), and each COPY_IN is cut where the
  // slots its blocks come back from are not adjacent: each piece is then one
  // copy call of the executor, as the cost model charges it.
  std::map<std::pair<uint32_t, uint64_t>, uint64_t> OutSlot, InSlot; // (position, block) -> slot
  for (const Hold &H : Holds) {
    OutSlot[{H.Out, H.Block}] = H.Slot;
    InSlot[{H.In, H.Block}] = H.Slot;
  }
  std::vector<Action> Out;
  Out.reserve(Actions.size());
  for (Action &A : Actions) {
    const bool IsOut = A.kind() == ACTION_KIND_COPY_OUT;
    if (!IsOut && A.kind() != ACTION_KIND_COPY_IN) {
      Out.push_back(std::move(A));
      continue;
    }
    const auto &SlotAt = IsOut ? OutSlot : InSlot;
    size_t Cur = SIZE_MAX; // Out's index of the piece being extended
    uint64_t NextBlock = 0, NextSlot = 0;
    for (const ArenaRange &R : A.ranges())
      for (uint64_t B = R.offset() / BB; B < (R.offset() + R.bytes() + BB - 1) / BB && B < T.Blocks;
           ++B) {
        auto It = SlotAt.find({A.position(), B});
        const uint64_t Slot = It != SlotAt.end() ? It->second : UINT64_MAX;
        if (Cur != SIZE_MAX && B == NextBlock && (Slot == NextSlot || Slot == UINT64_MAX)) {
          ArenaRange *Last = Out[Cur].mutable_ranges(Out[Cur].ranges_size() - 1);
          Last->set_bytes(Last->bytes() + BB);
        } else {
          Action Piece = A;
          Piece.clear_ranges();
          if (IsOut)
            Piece.set_pool_offset(Slot * BB);
          ArenaRange *X = Piece.add_ranges();
          X->set_offset(B * BB);
          X->set_bytes(BB);
          Out.push_back(std::move(Piece));
          Cur = Out.size() - 1;
        }
        NextBlock = B + 1;
        NextSlot = Slot + 1;
      }
  }
  Actions = std::move(Out);
  return Slots * BB;
}

void adviseReadMostly(const Trace &T, const CostModel &M, uint64_t GpuMemoryBytes, Schedule &S) {
  // Only where evicting a clean block costs a copy can read-mostly pay (the
  // host keeps a valid duplicate); candidates are blocks the iteration never
  // writes that the schedule evicts. The advice is kept only when the cost
  // model's replay of the whole schedule says it is faster.
  if (!M.EvictionCopiesClean)
    return;
  std::vector<uint8_t> Written(T.Blocks, 0), Evicted(T.Blocks, 0);
  for (const auto &Uses : T.Uses)
    for (const BlockUse &U : Uses)
      if (writes(U.Mode))
        Written[U.Block] = 1;
  for (const Action &A : S.Actions)
    if (A.kind() == ACTION_KIND_EVICT)
      for (const ArenaRange &R : A.ranges())
        for (uint64_t B = R.offset() / T.BlockBytes;
             B < (R.offset() + R.bytes() + T.BlockBytes - 1) / T.BlockBytes && B < T.Blocks; ++B)
          Evicted[B] = 1;
  if (T.Positions == 0)
    return;
  Action Advise;
  Advise.set_kind(ACTION_KIND_ADVISE);
  Advise.set_advice(ADVICE_SET_READ_MOSTLY);
  Advise.set_position(0);
  Advise.set_due_position(0);
  uint64_t Blocks = 0;
  for (uint64_t B = 0; B < T.Blocks; ++B)
    if (Evicted[B] && !Written[B]) {
      ArenaRange *R = Advise.add_ranges();
      R->set_offset(B * T.BlockBytes);
      R->set_bytes(T.BlockBytes);
      ++Blocks;
    }
  if (Blocks == 0)
    return;
  std::vector<Action> With = S.Actions;
  With.push_back(std::move(Advise));
  normalizeActions(With);
  double Predicted = predictIterationUs(T, M, With, GpuMemoryBytes);
  if (Predicted >= S.Stats.PredictedIterationUs * 0.999)
    return;
  S.Stats.StallUs = std::max(0.0, S.Stats.StallUs - (S.Stats.PredictedIterationUs - Predicted));
  S.Stats.PredictedIterationUs = Predicted;
  S.Stats.ReadMostlyBlocks = Blocks;
  S.Actions = std::move(With);
}

} // namespace deepum::planner
