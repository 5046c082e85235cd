//===- Trace.cpp - The reference iteration in arena space --------------------===//
//
// Allocations of the profile fall in four groups relative to the reference
// window [first kernel's start, next iteration's first kernel's start):
//   persistent  made before the window and live past it (parameters,
//               optimizer state): placed once, in their own region;
//   window      made inside the window: the iteration's allocation calls;
//               those freed only after the window "wrap": in steady state
//               they are still live at the start of the next iteration;
//   carried-in  made before the window, freed inside it: the previous
//               iteration's wrapping allocations. Each is matched to the
//               window allocation that plays its role one iteration later
//               (same size, same order), whose lifetime then wraps to the
//               carried-in's free, and whose arena bytes the carried-in's
//               accesses are mapped to;
//   other       freed before the window or made after it: not planned.
//
//===----------------------------------------------------------------------===//
#include "deepum/planner/Trace.h"

#include "deepum/base/Error.h"
#include "deepum/format/PlanWire.h"
#include "deepum/format/Signature.h"
#include "deepum/format/Window.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

using namespace llvm;
using namespace deepum::v1;

namespace deepum::planner {

namespace {

Error traceError(const Twine &Msg) { return base::makeError(Msg); }

AccessMode mergeMode(AccessMode A, AccessMode B) {
  if (A == B)
    return A;
  if (A == ACCESS_MODE_UNSPECIFIED || B == ACCESS_MODE_UNSPECIFIED)
    return ACCESS_MODE_UNSPECIFIED;
  return ACCESS_MODE_READ_WRITE;
}

enum class EventKind : uint8_t { Free = 0, Alloc = 1, Kernel = 2 };

/// Allocation id (from the profile: any uint64) -> sequence.
using IdMap = std::unordered_map<uint64_t, uint32_t>;

struct Event {
  uint64_t Time;
  EventKind Kind;
  uint32_t Index; // allocation index in the profile, or position
};

/// A kernel's access to arena bytes [Begin, End).
struct ArenaAccess {
  uint64_t Begin, End;
  AccessMode Mode;
  uint32_t Sequence;
};

} // namespace

void Trace::indexOwners() {
  OwnerStart.assign(Blocks + 1, 0);
  OwnerSpans.clear();
  OwnerMaxSpan.assign(Blocks, 0);
  UnionStart.assign(Blocks + 1, 0);
  Union.clear();
  std::vector<OwnerSpan> Spans;
  for (uint64_t B = 0; B < Blocks; ++B) {
    Spans.clear();
    for (uint32_t S : BlockOwners[B])
      for (const TickInterval &L : Allocations[S].Live)
        if (!L.empty())
          Spans.push_back({L.Begin, L.End, S});
    std::sort(Spans.begin(), Spans.end(), [](const OwnerSpan &X, const OwnerSpan &Y) {
      return X.Begin != Y.Begin ? X.Begin < Y.Begin : X.Sequence < Y.Sequence;
    });
    for (const OwnerSpan &S : Spans) {
      OwnerSpans.push_back(S);
      OwnerMaxSpan[B] = std::max(OwnerMaxSpan[B], S.End - S.Begin);
      // Touching intervals merge: a free and an allocation at consecutive
      // ticks leave no tick without live data.
      if (Union.size() > UnionStart[B] && S.Begin <= Union.back().End)
        Union.back().End = std::max(Union.back().End, S.End);
      else
        Union.push_back({S.Begin, S.End});
    }
    OwnerStart[B + 1] = OwnerSpans.size();
    UnionStart[B + 1] = Union.size();
  }
  SpanLeaves = 1;
  while (SpanLeaves < OwnerSpans.size())
    SpanLeaves *= 2;
  SpanMaxEnd.assign(2 * SpanLeaves, 0);
  for (size_t K = 0; K < OwnerSpans.size(); ++K)
    SpanMaxEnd[SpanLeaves + K] = OwnerSpans[K].End;
  for (uint64_t Node = SpanLeaves; Node-- > 1;)
    SpanMaxEnd[Node] = std::max(SpanMaxEnd[2 * Node], SpanMaxEnd[2 * Node + 1]);
}

bool Trace::blockLiveAt(uint64_t Block, uint32_t Tick) const {
  auto First = Union.begin() + static_cast<long>(UnionStart[Block]);
  auto Last = Union.begin() + static_cast<long>(UnionStart[Block + 1]);
  auto It = std::upper_bound(First, Last, Tick,
                             [](uint32_t T, const TickInterval &I) { return T < I.Begin; });
  return It != First && std::prev(It)->End > Tick;
}

bool Trace::blockDiesBetween(uint64_t Block, uint32_t FromTick, uint32_t ToTick) const {
  // Open query ranges (From, To), split at the end of the iteration.
  TickInterval Query[2];
  if (ToTick > FromTick) {
    Query[0] = {FromTick + 1, ToTick};
  } else {
    Query[0] = {FromTick + 1, Ticks};
    Query[1] = {0, ToTick};
  }
  auto First = Union.begin() + static_cast<long>(UnionStart[Block]);
  auto Last = Union.begin() + static_cast<long>(UnionStart[Block + 1]);
  for (const TickInterval &Q : Query) {
    if (Q.empty())
      continue;
    // Covered only if one merged interval spans the whole query.
    auto It = std::upper_bound(First, Last, Q.Begin,
                               [](uint32_t T, const TickInterval &I) { return T < I.Begin; });
    if (It == First || std::prev(It)->End < Q.End)
      return true;
  }
  return false;
}

namespace {

/// Where one iteration's allocations sit in virtual-address space, for
/// kernels that report blocks but no tensors: one per iteration with the
/// reference's ID sequence ("sibling").
struct AddressRange {
  uint64_t Begin, End, AllocNs, FreeNs;
  uint32_t Sequence;
};
struct Sibling {
  uint32_t First;
  std::vector<AddressRange> ByAddress;
  uint64_t MaxAllocBytes = 0;
  /// The iteration's allocation ids -> the reference's sequences, for its
  /// tensor accesses (empty for the reference itself, which has SeqOfId).
  IdMap Seqs;
};

/// Accesses the reference iteration's kernels make that the plan cannot
/// follow, or that it recovers from the siblings.
struct AccessCounts {
  uint64_t UnknownAllocationAccesses = 0, UnmappedBlocks = 0, KernelsWithoutAccesses = 0,
           RecoveredBlocks = 0, SiblingsLeftOut = 0;
};

/// The steps of buildTrace over the state they share: the reference
/// window, its allocations by group, their ticks and sequences.
class TraceBuilder {
public:
  TraceBuilder(const Profile &Prof, const IterationAnalysis &Analysis, const TraceLimits &Lim,
               Trace &Out)
      : P(Prof), A(Analysis), Limits(Lim), Ref(Analysis.Iterations[Analysis.Reference]),
        First(Ref.First), N(Ref.Count), T(Out) {}

  void classifyAllocations();
  void orderTicks();
  void assignSequences();
  void matchCarriedIn();
  Error layOutArena();
  void indexSiblings();
  Error mapAccesses();
  void mergeTensorUses();
  void reportIgnored();

private:
  Sibling addressIndex(const IdMap &Seqs) const;
  size_t collectAccesses(uint32_t Pos, std::vector<ArenaAccess> &Accesses);
  void recordBlockUses(uint32_t Pos, const std::vector<ArenaAccess> &Accesses, size_t RefAccesses);

  const Profile &P;
  const IterationAnalysis &A;
  const TraceLimits &Limits;
  const IterationSpan &Ref;
  const uint32_t First, N;
  Trace &T;
  uint64_t WindowStart = 0, WindowEnd = 0;
  deepum::format::WindowAllocations Classes;
  std::vector<uint32_t> &Persistent = Classes.Persistent, &Window = Classes.Made,
                        &CarriedIn = Classes.CarriedIn;
  DenseMap<uint32_t, uint32_t> AllocTick, FreeTick; // profile allocation index -> tick
  // Profile allocation id -> sequence. Ids are any uint64: not a DenseMap,
  // which reserves two keys (2^64-1, 2^64-2) for itself.
  IdMap SeqOfId;
  std::vector<Sibling> Siblings;
  AccessCounts Counts;
  // Mapping block accesses (collectAccesses): accesses of allocations made
  // (each kept as a tensor use), and allocations scanned for them.
  uint64_t Mappings = 0, MappingScans = 0;
  // recordBlockUses' scratch, kept across positions to reuse its memory.
  DenseMap<uint64_t, uint32_t> Slot; // block -> index in the position's uses
  std::vector<std::pair<uint64_t, uint64_t>> Written;
};

/// Allocations by their place relative to the reference window.
void TraceBuilder::classifyAllocations() {
  std::tie(WindowStart, WindowEnd) = deepum::format::iterationWindow(P, First, N);
  Classes = deepum::format::classifyAllocations(P, WindowStart, WindowEnd);
}

/// Ticks: frees before allocations before kernels at equal times (a kernel
/// launched at the instant of an allocation uses it; one launched at the
/// instant of a free does not).
void TraceBuilder::orderTicks() {
  std::vector<Event> Events;
  Events.reserve(N + 2 * Window.size() + CarriedIn.size());
  uint64_t PrevKernelTime = 0;
  for (uint32_t Pos = 0; Pos < N; ++Pos) {
    // Several streams: launch order rules, so kernel times never go back.
    PrevKernelTime = std::max(PrevKernelTime, P.kernels(First + Pos).start_ns());
    Events.push_back({PrevKernelTime, EventKind::Kernel, Pos});
  }
  for (uint32_t I : Window) {
    const Allocation &Al = P.allocations(I);
    Events.push_back({Al.alloc_time_ns(), EventKind::Alloc, I});
    if (Al.freed() && Al.free_time_ns() < WindowEnd)
      Events.push_back({Al.free_time_ns(), EventKind::Free, I});
  }
  for (uint32_t I : CarriedIn)
    Events.push_back({P.allocations(I).free_time_ns(), EventKind::Free, I});
  std::sort(Events.begin(), Events.end(), [](const Event &X, const Event &Y) {
    if (X.Time != Y.Time)
      return X.Time < Y.Time;
    if (X.Kind != Y.Kind)
      return X.Kind < Y.Kind;
    return X.Index < Y.Index;
  });
  T.Ticks = static_cast<uint32_t>(Events.size());
  T.KernelTick.assign(N, 0);
  for (uint32_t Tick = 0; Tick < T.Ticks; ++Tick) {
    const Event &E = Events[Tick];
    if (E.Kind == EventKind::Kernel)
      T.KernelTick[E.Index] = Tick;
    else if (E.Kind == EventKind::Alloc)
      AllocTick[E.Index] = Tick;
    else
      FreeTick[E.Index] = Tick;
  }
}

/// Sequences: persistent allocations first, then the window's in call
/// order; persistent ones live for the whole iteration.
void TraceBuilder::assignSequences() {
  auto Add = [&](uint32_t Index, bool IsPersistent) {
    const Allocation &Al = P.allocations(Index);
    PlannedAllocation PA;
    PA.Sequence = static_cast<uint32_t>(T.Allocations.size());
    PA.Size = Al.size_bytes();
    PA.Persistent = IsPersistent;
    PA.ProfileId = Al.id();
    PA.CallIndex = IsPersistent ? Al.call_index() : 0;
    PA.Role = Al.role();
    SeqOfId[Al.id()] = PA.Sequence;
    T.Allocations.push_back(PA);
  };
  for (uint32_t I : Persistent)
    Add(I, true);
  // Placement by call is all or nothing (the executor matches persistent
  // allocations by call once a plan names any call): a persistent allocation
  // without a call index (an older profiler; a driver allocation), a call
  // named twice (a corrupt or hostile profile) or one beyond any process's
  // count means sequence and size for all of them.
  DenseSet<uint64_t> Calls;
  bool ByCall = true;
  for (const PlannedAllocation &PA : T.Allocations)
    if (PA.Persistent && (PA.CallIndex == 0 || PA.CallIndex >= format::kCallIndexLimit ||
                          !Calls.insert(PA.CallIndex).second))
      ByCall = false;
  if (!ByCall)
    for (PlannedAllocation &PA : T.Allocations)
      PA.CallIndex = 0;
  // The size of every profiled call up to the last persistent one, by which
  // libdeepum follows a replay whose calls depart from these.
  uint64_t Last = 0;
  for (const PlannedAllocation &PA : T.Allocations)
    Last = std::max(Last, PA.CallIndex);
  if (ByCall && Last != 0 && Last <= format::kMaxPrologueCalls) {
    T.PrologueCallBytes.assign(Last, 0);
    std::vector<uint8_t> Seen(Last, 0);
    for (const Allocation &Al : P.allocations()) {
      const uint64_t C = Al.call_index();
      if (C == 0 || C > Last)
        continue;
      // A call recorded twice or more (a corrupt profile) is not known.
      T.PrologueCallBytes[C - 1] = Seen[C - 1] ? 0 : Al.size_bytes();
      Seen[C - 1] = 1;
    }
    for (const PlannedAllocation &PA : T.Allocations)
      if (PA.CallIndex != 0)
        T.PrologueCallBytes[PA.CallIndex - 1] = PA.Size;
  }
  for (uint32_t I : Window)
    Add(I, false);
  for (PlannedAllocation &PA : T.Allocations)
    if (PA.Persistent)
      PA.Live[0] = {0, T.Ticks};
}

/// Matches carried-in allocations to wrapping window allocations by size, in
/// order, and gives the window allocations their lifetimes.
void TraceBuilder::matchCarriedIn() {
  DenseMap<uint32_t, uint32_t> WrapEnd; // window allocation index -> tick of its counterpart's free
  DenseSet<uint32_t> Matched;           // carried-in allocation indexes
  size_t Wraps = 0;
  for (uint32_t I : Window)
    Wraps += !FreeTick.count(I);
  for (auto [C, W] : deepum::format::matchCarriedIn(P, Classes, WindowEnd)) {
    WrapEnd[W] = FreeTick[C];
    SeqOfId[P.allocations(C).id()] = SeqOfId[P.allocations(W).id()];
    Matched.insert(C);
  }
  const size_t UnmatchedWraps = Wraps - Matched.size();
  // Only a carried-in allocation that is still live when the window's first
  // kernel runs can be accessed there. One freed at the window's start (its
  // free sorts before that kernel, as an iteration's last frees do in traces
  // whose iterations run back to back) is dead for the whole window: having no
  // counterpart drops nothing.
  unsigned UnmatchedCarried = 0;
  for (uint32_t C : CarriedIn)
    if (!Matched.count(C) && FreeTick[C] > T.KernelTick[0])
      ++UnmatchedCarried;
  for (uint32_t I : Window) {
    PlannedAllocation &PA = T.Allocations[SeqOfId[P.allocations(I).id()]];
    uint32_t Begin = AllocTick[I];
    auto F = FreeTick.find(I);
    if (F != FreeTick.end()) {
      // Freed at the instant it was made: its free sorts first; give it the
      // one tick of its allocation so that it still occupies bytes.
      PA.Live[0] = {Begin, std::max(F->second, Begin + 1)};
      continue;
    }
    PA.Live[0] = {Begin, T.Ticks};
    auto W = WrapEnd.find(I);
    // Without a counterpart the next iteration's free is unknown: assume the
    // allocation lives a whole cycle, which is safe for the layout.
    PA.Live[1] = {0, W != WrapEnd.end() ? std::min(W->second, Begin) : Begin};
  }
  if (UnmatchedCarried)
    T.Ignored.push_back((Twine(UnmatchedCarried) +
                         " allocations carried in from the previous iteration have no "
                         "counterpart in the reference iteration; their accesses are not planned")
                            .str());
  if (UnmatchedWraps)
    T.Ignored.push_back((Twine(UnmatchedWraps) +
                         " allocations outlive the reference iteration without a known free; "
                         "laid out as live for the whole iteration")
                            .str());
}

/// Pool layout and its yardsticks, then each arena block's owners.
Error TraceBuilder::layOutArena() {
  // Bounded first: the layout adds sizes and offsets in uint64_t, and the
  // tables below are per arena block.
  uint64_t PlannedBytes = 0;
  for (const PlannedAllocation &PA : T.Allocations) {
    const uint64_t Room = kMaxPlannedBytes - PlannedBytes;
    if (PA.Size > Room ||
        (PA.Size + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment > Room)
      return traceError("the reference iteration's allocations add up to more than the "
                        "planner's limit of " +
                        Twine(kMaxPlannedBytes >> 40) + " TiB (allocation " + Twine(PA.ProfileId) +
                        " has " + Twine(PA.Size) + " bytes)");
    PlannedBytes += (PA.Size + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
  }
  // The arena is whole UM blocks: plan ranges are whole blocks, and a block's
  // tail past the last allocation would otherwise be touched but never planned.
  T.Pool.LayoutBytes = layoutPool(T.Allocations, T.Pool.Order);
  const uint64_t LayoutBlocks = (T.Pool.LayoutBytes + T.BlockBytes - 1) / T.BlockBytes;
  if (LayoutBlocks * T.BlockBytes > format::PlanLimits::kMaxArenaBytes ||
      LayoutBlocks > format::PlanLimits::kMaxArenaBlocks)
    return traceError("the pool layout needs an arena of " + Twine(LayoutBlocks) +
                      " UM blocks of " + Twine(T.BlockBytes) +
                      " bytes, more than a plan may lay out (" +
                      Twine(format::PlanLimits::kMaxArenaBytes >> 40) + " TiB, " +
                      Twine(format::PlanLimits::kMaxArenaBlocks) + " blocks)");
  T.Pool.ArenaBytes = (T.Pool.LayoutBytes + T.BlockBytes - 1) / T.BlockBytes * T.BlockBytes;
  for (const PlannedAllocation &PA : T.Allocations)
    if (PA.Persistent)
      T.Pool.PersistentBytes += PA.Size;
  T.Pool.PeakLiveBytes = peakLiveBytes(T.Allocations, T.Ticks);
  T.Pool.BestFitPeakBytes = bestFitPeakBytes(T.Allocations, T.Ticks);
  T.Blocks = (T.Pool.ArenaBytes + T.BlockBytes - 1) / T.BlockBytes;
  T.BlockOwners.assign(T.Blocks, {});
  for (const PlannedAllocation &PA : T.Allocations)
    for (uint64_t B = PA.Offset / T.BlockBytes; B <= (PA.Offset + PA.Size - 1) / T.BlockBytes; ++B)
      T.BlockOwners[B].push_back(PA.Sequence);
  T.indexOwners();
  return Error::success();
}

/// The allocations Seqs names, by address, with their sequences.
Sibling TraceBuilder::addressIndex(const IdMap &Seqs) const {
  Sibling Sib;
  for (int I = 0; I < P.allocations_size(); ++I) {
    const Allocation &Al = P.allocations(I);
    auto S = Seqs.find(Al.id());
    if (S == Seqs.end())
      continue;
    Sib.ByAddress.push_back({Al.address(), Al.address() + Al.size_bytes(), Al.alloc_time_ns(),
                             Al.freed() ? Al.free_time_ns() : UINT64_MAX, S->second});
  }
  std::sort(Sib.ByAddress.begin(), Sib.ByAddress.end(),
            [](const AddressRange &X, const AddressRange &Y) { return X.Begin < Y.Begin; });
  for (const AddressRange &R : Sib.ByAddress)
    Sib.MaxAllocBytes = std::max(Sib.MaxAllocBytes, R.End - R.Begin);
  return Sib;
}

/// The other iterations with the reference's kernel sequence (siblings),
/// each mapping its own allocations to the reference's sequences
/// (persistent ones are shared; window ones match by call order when the
/// sizes agree). A profile's access sets are a sample: fault records go
/// missing (dropped, or no fault because the block was still resident), and
/// on a real driver the pages recorded for a kernel differ from one
/// iteration to the next. So every sibling contributes its accesses at each
/// position: its tensor accesses through the id map, or, for kernels that
/// report blocks but no tensors, its blocks through an address index of the
/// reference's and each sibling's allocations. Each sibling scans the
/// allocations and maps (and, for blocks, indexes) its own and the
/// persistent ones: past kMaxSiblingWork (a profile of very many short
/// iterations over very many allocations) the rest are left out and the
/// plan says so.
void TraceBuilder::indexSiblings() {
  bool BlockOnly = false;
  for (uint32_t Pos = 0; Pos < N && !BlockOnly; ++Pos)
    BlockOnly = P.kernels(static_cast<int>(First + Pos)).tensors_size() == 0;
  Siblings.push_back(BlockOnly ? addressIndex(SeqOfId) : Sibling{});
  Siblings.back().First = First;
  // Scanning the allocations, and per allocation mapped an id map entry,
  // plus 5 words per index entry (40 bytes) where blocks need the index.
  const uint64_t SiblingCost =
      static_cast<uint64_t>(P.allocations_size()) +
      (BlockOnly ? 7 : 2) * static_cast<uint64_t>(Persistent.size() + Window.size());
  uint64_t Work = 0;
  for (uint32_t I = 0; I < A.Iterations.size(); ++I) {
    const IterationSpan &S = A.Iterations[I];
    if (I == A.Reference || S.Fingerprint != Ref.Fingerprint || S.Count != N)
      continue;
    if ((Work += SiblingCost) > Limits.SiblingWork) {
      ++Counts.SiblingsLeftOut;
      continue;
    }
    uint64_t SStart = P.kernels(static_cast<int>(S.First)).start_ns();
    uint64_t SEnd = S.First + N < static_cast<uint32_t>(P.kernels_size())
                        ? P.kernels(static_cast<int>(S.First + N)).start_ns()
                        : UINT64_MAX;
    std::vector<uint32_t> Calls;
    for (int J = 0; J < P.allocations_size(); ++J)
      if (P.allocations(J).alloc_time_ns() >= SStart && P.allocations(J).alloc_time_ns() < SEnd)
        Calls.push_back(static_cast<uint32_t>(J));
    std::stable_sort(Calls.begin(), Calls.end(), [&](uint32_t X, uint32_t Y) {
      return P.allocations(X).alloc_time_ns() < P.allocations(Y).alloc_time_ns();
    });
    if (Calls.size() != Window.size())
      continue;
    IdMap Seqs;
    bool Same = true;
    for (size_t K = 0; K < Calls.size() && Same; ++K) {
      const Allocation &Mine = P.allocations(Calls[K]), &Theirs = P.allocations(Window[K]);
      Same = Mine.size_bytes() == Theirs.size_bytes();
      Seqs[Mine.id()] = SeqOfId[Theirs.id()];
    }
    if (!Same)
      continue;
    for (uint32_t J : Persistent)
      Seqs[P.allocations(J).id()] = SeqOfId[P.allocations(J).id()];
    Siblings.push_back(BlockOnly ? addressIndex(Seqs) : Sibling{});
    Siblings.back().First = S.First;
    Siblings.back().Seqs = std::move(Seqs);
  }
}

/// Every position's arena-block uses and tensor uses. Block accesses are
/// mapped through the allocations live on them: a profile of very many
/// allocations sharing blocks under very many launches is refused
/// (kMaxBlockMappings, kMaxBlockMappingScans) rather than mapped into
/// unbounded memory or time.
Error TraceBuilder::mapAccesses() {
  T.Ids.assign(A.Ids.begin() + First, A.Ids.begin() + First + N);
  T.DurationUs.resize(N);
  T.Uses.resize(N);
  std::vector<ArenaAccess> Accesses;
  for (uint32_t Pos = 0; Pos < N; ++Pos) {
    const Kernel &K = P.kernels(First + Pos);
    T.DurationUs[Pos] = static_cast<double>(deepum::format::computeNs(K)) / 1000.0;
    Accesses.clear();
    size_t RefAccesses = collectAccesses(Pos, Accesses);
    if (Mappings > Limits.BlockMappings || MappingScans > Limits.BlockMappingScans)
      return traceError(
          Twine("the kernels' block accesses map to more than ") +
          (Mappings > Limits.BlockMappings
               ? Twine(Limits.BlockMappings) + " accesses of allocations"
               : Twine(Limits.BlockMappingScans) + " allocations scanned") +
          ", the planner's limit (very many allocations sharing the blocks of very many "
          "launches; a profile with tensor accesses, as deepum-profile records for PyTorch, "
          "needs no mapping)");
    if (Accesses.empty() && (K.tensors_size() > 0 || K.blocks_size() > 0))
      ++Counts.KernelsWithoutAccesses;
    recordBlockUses(Pos, Accesses, RefAccesses);
  }
  return Error::success();
}

/// The arena bytes the kernel at Pos accesses: its tensors, or else its
/// blocks mapped through the allocations live at its start, and the same
/// of the siblings' kernels at Pos. Returns how many of them the reference
/// kernel itself reported (the rest come from the siblings).
size_t TraceBuilder::collectAccesses(uint32_t Pos, std::vector<ArenaAccess> &Accesses) {
  const Kernel &K = P.kernels(First + Pos);
  size_t RefAccesses = SIZE_MAX; // accesses of the reference kernel itself come first
  if (K.tensors_size() > 0) {
    for (const Sibling &Sib : Siblings) {
      const bool Own = &Sib == &Siblings.front();
      const IdMap &Seqs = Own ? SeqOfId : Sib.Seqs;
      for (const TensorAccess &TA : P.kernels(static_cast<int>(Sib.First + Pos)).tensors()) {
        auto S = Seqs.find(TA.allocation_id());
        if (S == Seqs.end()) {
          // A sibling's own carried-in allocations have no counterpart.
          Counts.UnknownAllocationAccesses += Own;
          continue;
        }
        const PlannedAllocation &PA = T.Allocations[S->second];
        uint64_t Begin = PA.Offset + std::min(TA.offset(), PA.Size);
        uint64_t End = PA.Offset + std::min(TA.offset() + TA.bytes(), PA.Size);
        if (End > Begin)
          Accesses.push_back({Begin, End, TA.mode(), S->second});
      }
      if (Own)
        RefAccesses = Accesses.size();
    }
    return RefAccesses;
  }
  // Block-level accesses: map each touched 64 KiB page range to the
  // allocations live at the kernel's start that overlap it, in the
  // reference iteration and then in its siblings.
  for (const Sibling &Sib : Siblings) {
    const Kernel &SK = P.kernels(static_cast<int>(Sib.First + Pos));
    for (const BlockAccess &BA : SK.blocks()) {
      uint64_t VBegin = BA.block() * P.um_block_bytes(), VEnd = VBegin + P.um_block_bytes();
      uint64_t PageBytes = P.um_block_bytes() / 32;
      auto It = std::lower_bound(Sib.ByAddress.begin(), Sib.ByAddress.end(),
                                 VBegin > Sib.MaxAllocBytes ? VBegin - Sib.MaxAllocBytes : 0,
                                 [](const AddressRange &R, uint64_t V) { return R.Begin < V; });
      bool Mapped = false;
      for (; It != Sib.ByAddress.end() && It->Begin < VEnd; ++It) {
        if (++MappingScans > Limits.BlockMappingScans)
          return RefAccesses;
        if (It->End <= VBegin || SK.start_ns() < It->AllocNs || SK.start_ns() >= It->FreeNs)
          continue;
        for (unsigned Page = 0; Page < 32; ++Page) {
          if (BA.page_mask() != 0 && !(BA.page_mask() & (1u << Page)))
            continue;
          uint64_t PBegin = std::max(VBegin + Page * PageBytes, It->Begin);
          uint64_t PEnd = std::min(VBegin + (Page + 1) * PageBytes, It->End);
          if (PEnd <= PBegin)
            continue;
          const PlannedAllocation &PA = T.Allocations[It->Sequence];
          Accesses.push_back({PA.Offset + (PBegin - It->Begin), PA.Offset + (PEnd - It->Begin),
                              BA.mode(), It->Sequence});
          if (++Mappings > Limits.BlockMappings)
            return RefAccesses;
          Mapped = true;
        }
      }
      if (!Mapped && &Sib == &Siblings.front())
        ++Counts.UnmappedBlocks;
    }
    if (&Sib == &Siblings.front())
      RefAccesses = Accesses.size();
  }
  return RefAccesses;
}

/// The position's arena blocks in first-touch order, modes merged, and its
/// tensor uses. A block counts as overwritten (WRITE) only when the writes
/// cover every live byte in it; otherwise its old contents survive in part.
void TraceBuilder::recordBlockUses(uint32_t Pos, const std::vector<ArenaAccess> &Accesses,
                                   size_t RefAccesses) {
  std::vector<BlockUse> &Uses = T.Uses[Pos];
  Slot.clear();
  for (size_t AI = 0; AI < Accesses.size(); ++AI) {
    const ArenaAccess &Acc = Accesses[AI];
    for (uint64_t B = Acc.Begin / T.BlockBytes; B <= (Acc.End - 1) / T.BlockBytes; ++B) {
      auto [It, New] = Slot.try_emplace(B, static_cast<uint32_t>(Uses.size()));
      if (New && AI >= RefAccesses)
        ++Counts.RecoveredBlocks;
      if (New)
        Uses.push_back({B, Acc.Mode});
      else
        Uses[It->second].Mode = mergeMode(Uses[It->second].Mode, Acc.Mode);
    }
    T.TensorUses.push_back({Acc.Sequence, Pos, Acc.Mode});
  }
  for (BlockUse &U : Uses) {
    if (U.Mode != ACCESS_MODE_WRITE)
      continue;
    uint64_t BBegin = U.Block * T.BlockBytes, BEnd = BBegin + T.BlockBytes;
    Written.clear();
    for (const ArenaAccess &Acc : Accesses)
      if (Acc.Mode == ACCESS_MODE_WRITE && Acc.Begin < BEnd && Acc.End > BBegin)
        Written.push_back({std::max(Acc.Begin, BBegin), std::min(Acc.End, BEnd)});
    std::sort(Written.begin(), Written.end());
    auto Covered = [&](uint64_t Begin, uint64_t End) {
      uint64_t Reached = Begin;
      for (auto [WB, WE] : Written) {
        if (WB > Reached)
          break;
        Reached = std::max(Reached, WE);
      }
      return Reached >= End;
    };
    bool Partial = false;
    T.forOwnersLiveAt(U.Block, T.KernelTick[Pos], [&](uint32_t S) {
      const PlannedAllocation &PA = T.Allocations[S];
      uint64_t OBegin = std::max(PA.Offset, BBegin), OEnd = std::min(PA.Offset + PA.Size, BEnd);
      if (OEnd > OBegin && !Covered(OBegin, OEnd))
        Partial = true;
    });
    if (Partial)
      U.Mode = ACCESS_MODE_READ_WRITE;
  }
}

/// Tensor uses: one per (sequence, position), modes merged.
void TraceBuilder::mergeTensorUses() {
  std::sort(T.TensorUses.begin(), T.TensorUses.end(), [](const TensorUse &X, const TensorUse &Y) {
    return X.Sequence != Y.Sequence ? X.Sequence < Y.Sequence : X.Position < Y.Position;
  });
  std::vector<TensorUse> Merged;
  for (const TensorUse &U : T.TensorUses) {
    if (!Merged.empty() && Merged.back().Sequence == U.Sequence &&
        Merged.back().Position == U.Position)
      Merged.back().Mode = mergeMode(Merged.back().Mode, U.Mode);
    else
      Merged.push_back(U);
  }
  T.TensorUses = std::move(Merged);
}

void TraceBuilder::reportIgnored() {
  if (Counts.SiblingsLeftOut)
    T.Ignored.push_back((Twine(Counts.SiblingsLeftOut) +
                         " iterations with the same kernel sequence were not searched for "
                         "accesses missing from the reference iteration (the planner's limit on "
                         "indexing them)")
                            .str());
  if (Counts.UnknownAllocationAccesses)
    T.Ignored.push_back((Twine(Counts.UnknownAllocationAccesses) +
                         " tensor accesses name allocations that are not live in the reference "
                         "iteration")
                            .str());
  if (Counts.RecoveredBlocks)
    T.Ignored.push_back((Twine(Counts.RecoveredBlocks) +
                         " block uses missing from the reference iteration were taken from the "
                         "other iterations with the same kernel sequence")
                            .str());
  if (Counts.UnmappedBlocks)
    T.Ignored.push_back(
        (Twine(Counts.UnmappedBlocks) + " block accesses fall outside every planned allocation")
            .str());
  if (Counts.KernelsWithoutAccesses)
    T.Ignored.push_back((Twine(Counts.KernelsWithoutAccesses) +
                         " kernels have accesses that map to no planned allocation")
                            .str());
}

} // namespace

Expected<Trace> buildTrace(const Profile &P, const IterationAnalysis &A,
                           const TraceLimits &Limits, LayoutOrder By) {
  Trace T;
  T.Pool.Order = By;
  const IterationSpan &Ref = A.Iterations[A.Reference];
  T.FirstKernel = Ref.First;
  T.Positions = Ref.Count;
  T.BlockBytes = P.um_block_bytes();
  if (Ref.Count == 0)
    return traceError("the reference iteration has no kernels");
  TraceBuilder Builder(P, A, Limits, T);
  Builder.classifyAllocations();
  Builder.orderTicks();
  Builder.assignSequences();
  Builder.matchCarriedIn();
  if (Error E = Builder.layOutArena())
    return E;
  Builder.indexSiblings();
  if (Error E = Builder.mapAccesses())
    return E;
  Builder.mergeTensorUses();
  Builder.reportIgnored();
  return T;
}

} // namespace deepum::planner
