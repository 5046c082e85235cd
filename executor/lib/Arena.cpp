//===- Arena.cpp - Allocation: plan placements, else the pool ---------------===//
//
// allocate/deallocate: allocation call s of the planned size goes to the
// plan's offset in the device's arena when nothing live (and nothing freed on
// another stream and not yet known complete) overlaps it; everything else to
// the DevicePool.
//
// Locking: the arena is AllocMu's (DeviceState.h); no other executor lock is
// taken here, so the allocation path never waits for the launch hook except
// while a discard is being issued (Actions.cpp holds AllocMu for that step).
// The pool locks itself.
//
//===----------------------------------------------------------------------===//
#include "DeviceState.h"

#include "deepum/executor/Log.h"

#include <algorithm>
#include <mutex>

namespace deepum::executor {

using namespace detail;

namespace {
/// Allocation calls the sequence matcher looks ahead over when the live
/// sequence departs from the plan (allocations the plan expected but the
/// program did not make).
constexpr uint32_t kPlacementLookahead = 4;
/// Requests above 128 TiB exceed any machine's host and GPU memory together;
/// refusing them up front keeps every address computation far from 2^64.
constexpr uint64_t kMaxAllocationBytes = uint64_t{1} << 47;
} // namespace

StreamClock &detail::clockFor(std::vector<StreamClock> &Clocks, StreamHandle S) {
  for (StreamClock &C : Clocks)
    if (C.Stream == S)
      return C;
  Clocks.push_back({S, 0, 0, false});
  return Clocks.back();
}

/// Places [Off, Off+Size) for `Stream` when nothing live overlaps it and every
/// freed range it overlaps is safe for `Stream` (same stream, or an event
/// recorded after the free has completed). Called with AllocMu held.
static bool tryPlace(Backend &Back, Executor::DeviceState &D, uint64_t Off, uint64_t Size,
                     StreamHandle Stream);

void *Executor::allocate(uint64_t Bytes, int Device, StreamHandle Stream, uint64_t *Call) {
  if (Call)
    *Call = 0;
  if (Bytes == 0 || Bytes > kMaxAllocationBytes)
    return nullptr;
  DeviceState *D = deviceOrCreate(Device);
  if (!D)
    return nullptr;
  // Every call counts, on any device, planned or not, placed or not: the
  // profiler records the same count (Hooks.h), and a plan's persistent
  // placements name it.
  const uint64_t ThisCall = AllocCalls.fetch_add(1, std::memory_order_relaxed) + 1;
  if (Call)
    *Call = ThisCall;
  if (D->HasPlan.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> Lock(D->AllocMu);
    D->AnyAllocation = true;
    // The profiled call this one stands for (detail::CallAlignment: the same
    // index unless the calls departed from the profiled ones).
    const detail::CallAlignment::Where W =
        D->CallAlign.observe(D->Plan->PrologueCallBytes, ThisCall, Bytes);
    if (W.Departed)
      log(LogLevel::Info,
          "device %d: allocation call %llu (%llu bytes) departs from the profiled calls; "
          "placing by call waits until they agree again",
          Device, static_cast<unsigned long long>(ThisCall),
          static_cast<unsigned long long>(Bytes));
    if (W.Realigned)
      log(LogLevel::Info,
          "device %d: allocation calls agree with the profiled ones again at call %llu, "
          "%lld from the profiled index",
          Device, static_cast<unsigned long long>(ThisCall),
          static_cast<long long>(D->CallAlign.offset()));
    if (W.Call < D->Plan->PrologueEnd) {
      // Before the reference iteration: the persistent placements by call
      // index. Every other call (the first step's activations, which may
      // share a gradient's or an optimizer state's size) goes to the pool,
      // as does every call while the calls depart from the profiled ones. A
      // wrap of the launch sequence seen meanwhile is spent here: it must not
      // restart the iteration's sequence in the middle of a later iteration.
      D->WrapPending.store(false);
      auto It = D->Plan->PrologueCalls.find(W.Call);
      if (It != D->Plan->PrologueCalls.end()) {
        auto Pl = D->Plan->Placements.find(It->second);
        if (W.Aligned && Pl != D->Plan->Placements.end() && Pl->second.Size == Bytes &&
            tryPlace(Back, *D, Pl->second.Offset, Bytes, Stream))
          return placed(*D, Pl->second.Offset, Bytes);
        bump(D->C.PlacementMisses); // the program departed from the profiled one here
      }
    } else {
      if (D->WrapPending.exchange(false) && !ExplicitSteps.load(std::memory_order_relaxed))
        D->NextSequence = D->Plan->FirstIterationSequence;
      if (void *P = placeBySequence(*D, Bytes, Stream))
        return P;
      bump(D->C.PlacementMisses);
    }
  }
  void *P = D->Pool.allocate(Bytes, Stream);
  if (P) {
    bump(D->C.Allocations);
    notePeakInUse(*D);
  }
  return P;
}

void Executor::notePeakInUse(DeviceState &D) {
  // Two reads, not one snapshot: another thread's allocation between them can
  // only make this a little low, never count a freed block twice.
  const uint64_t Now = D.Pool.stats().BytesInUse + D.C.ArenaBytesInUse.load();
  uint64_t Peak = D.C.PeakInUse.load();
  while (Now > Peak && !D.C.PeakInUse.compare_exchange_weak(Peak, Now)) {
  }
}

void *Executor::placed(DeviceState &D, uint64_t Offset, uint64_t Bytes) {
  bump(D.C.Allocations);
  bump(D.C.ArenaPlacements);
  uint64_t Now = D.C.ArenaBytesInUse.fetch_add(Bytes) + Bytes;
  uint64_t Peak = D.C.ArenaPeak.load();
  while (Now > Peak && !D.C.ArenaPeak.compare_exchange_weak(Peak, Now)) {
  }
  notePeakInUse(D);
  return reinterpret_cast<void *>(D.ArenaBase + Offset);
}

void *Executor::placeBySequence(DeviceState &D, uint64_t Bytes, StreamHandle Stream) {
  const auto &Placements = D.Plan->Placements;
  for (uint32_t K = 0; K <= kPlacementLookahead; ++K) {
    auto It = Placements.find(D.NextSequence + K);
    if (It == Placements.end() || It->second.Size != Bytes)
      continue;
    D.NextSequence += K + 1;
    if (!tryPlace(Back, D, It->second.Offset, Bytes, Stream))
      return nullptr; // the planned range is still in use: this call was the planned one, but falls back
    return placed(D, It->second.Offset, Bytes);
  }
  return nullptr;
}

static bool tryPlace(Backend &Back, Executor::DeviceState &D, uint64_t Off, uint64_t Size,
                     StreamHandle Stream) {
  const uint64_t End = Off + Size;
  if (End > D.ArenaBytes)
    return false;
  auto First = D.Arena.upper_bound(Off);
  if (First != D.Arena.begin() && std::prev(First)->second.End > Off)
    First = std::prev(First);
  for (auto It = First; It != D.Arena.end() && It->first < End; ++It) {
    const ArenaEntry &E = It->second;
    if (E.Live)
      return false;
    if (E.Stream == Stream)
      continue;
    StreamClock &Clock = clockFor(D.AllocClocks, E.Stream);
    if (Clock.Generation > E.FreeGeneration &&
        Back.queryEvent(D.Device, Clock.Event) == EventState::Complete)
      continue;
    // Not known complete: record now (covering the free) so a later placement
    // can use the range; this one falls back to the pool.
    if (Clock.Generation <= E.FreeGeneration) {
      if (!Clock.Event && !Back.createEvent(D.Device, &Clock.Event).ok())
        return false;
      if (Back.recordEvent(D.Device, Clock.Event, E.Stream).ok())
        Clock.Generation++;
      if (Back.queryEvent(D.Device, Clock.Event) == EventState::Complete)
        continue;
    }
    return false;
  }
  // Free: drop the freed entries it covers, keeping the parts outside it.
  std::vector<std::pair<uint64_t, ArenaEntry>> Keep;
  for (auto It = First; It != D.Arena.end() && It->first < End;) {
    if (It->first < Off)
      Keep.push_back({It->first, {Off, false, It->second.Stream, It->second.FreeGeneration}});
    if (It->second.End > End)
      Keep.push_back({End, It->second});
    It = D.Arena.erase(It);
  }
  for (auto &[O, E] : Keep)
    D.Arena[O] = E;
  D.Arena[Off] = ArenaEntry{End, true, Stream, 0, ++D.PlaceSeq};
  // A discard still queued on the discard stream may cover this range: the
  // new owner's kernels must not run before it (its contents would be lost).
  if (D.DiscardsInFlight.load(std::memory_order_acquire) != 0 && D.DiscardEvent) {
    if (Back.queryEvent(D.Device, D.DiscardEvent) == EventState::Complete)
      D.DiscardsInFlight.store(0, std::memory_order_release);
    else
      (void)Back.streamWaitEvent(D.Device, Stream, D.DiscardEvent);
  }
  // So may a copy-in (a pooled block brought back for a kernel that, with
  // this free, will not come).
  if (D.CopyOutsInFlight.load(std::memory_order_acquire) != 0 && D.CopyOutEvent) {
    if (Back.queryEvent(D.Device, D.CopyOutEvent) == EventState::Complete)
      D.CopyOutsInFlight.store(0, std::memory_order_release);
    else
      (void)Back.streamWaitEvent(D.Device, Stream, D.CopyOutEvent);
  }
  if (D.CopyInsInFlight.load(std::memory_order_acquire) != 0) {
    bool Done = true;
    for (EventHandle E : {D.CopyInEvent, D.CopyInLateEvent})
      if (E && Back.queryEvent(D.Device, E) != EventState::Complete) {
        (void)Back.streamWaitEvent(D.Device, Stream, E);
        Done = false;
      }
    if (Done)
      D.CopyInsInFlight.store(0, std::memory_order_release);
  }
  return true;
}

void Executor::deallocate(void *Ptr, int Device, StreamHandle Stream) {
  if (!Ptr)
    return;
  DeviceState *D = device(Device);
  if (!D)
    return;
  const uintptr_t Addr = reinterpret_cast<uintptr_t>(Ptr);
  if (D->ArenaBase && Addr >= D->ArenaBase && Addr < D->ArenaBase + D->ArenaBytes) {
    std::lock_guard<std::mutex> Lock(D->AllocMu);
    auto It = D->Arena.find(Addr - D->ArenaBase);
    if (It == D->Arena.end() || !It->second.Live) {
      static std::atomic<bool> Once{false};
      DEEPUM_LOG_ONCE(Once, LogLevel::Warn, "device %d: free of an arena address not in use",
                      Device);
      return;
    }
    It->second.Live = false;
    It->second.Stream = Stream;
    It->second.FreeGeneration = clockFor(D->AllocClocks, Stream).Generation;
    bump(D->C.Frees);
    D->C.ArenaBytesInUse.fetch_sub(It->second.End - It->first);
    // Its blocks' contents are dead: the ledger drops their slots (before
    // any new owner's launch is seen).
    if (D->PooledBlocks.load(std::memory_order_relaxed))
      D->FreedWhilePooled.push_back({It->first, It->second.End - It->first});
    return;
  }
  if (D->Pool.deallocate(Ptr, Stream)) {
    bump(D->C.Frees);
    return;
  }
  static std::atomic<bool> Once{false};
  DEEPUM_LOG_ONCE(Once, LogLevel::Warn, "device %d: free of a pointer deepum did not allocate",
                  Device);
}

} // namespace deepum::executor
