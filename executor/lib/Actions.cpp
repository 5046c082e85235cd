//===- Actions.cpp - Issuing the plan's actions -----------------------------===//
//
// Advice, prefetches, evictions and discards at the CUDA boundary: arena
// ranges become page-rounded addresses (a discard only the whole pages
// inside its free part), releases are ordered after the compute streams with
// events, prefetches after the releases issued before them, and a discard
// never destroys live data (deferred until freed, else evicted).
//
// Locking: called from the launch hook with the device's LaunchMu held
// (DeviceState.h). issueRanges also takes AllocMu (after LaunchMu, the lock
// order) for one step: finding a range free, discarding it and recording the
// event its next owner waits for.
//
//===----------------------------------------------------------------------===//
#include "DeviceState.h"

#include "deepum/executor/Log.h"
#include "deepum/format/PlanWire.h"

#include <algorithm>
#include <mutex>
#include <utility>

namespace deepum::executor {

using namespace detail;

void detail::noteError(Executor::DeviceState &D, const BackendStatus &S) {
  if (S.ok())
    return;
  bump(D.C.BackendErrors);
  DEEPUM_LOG_ONCE(D.ErrorLogged, LogLevel::Warn,
                  "device %d: %s failed: %s (counted in backend_errors; deepum carries on, further "
                  "failures are not logged)",
                  D.Device, S.Call, S.Message.c_str());
}

EventHandle detail::takeSpareEvent(std::vector<EventHandle> &Spares) {
  if (Spares.empty())
    return 0;
  const EventHandle E = Spares.back();
  Spares.pop_back();
  return E;
}

bool detail::ensureEvent(Backend &Back, Executor::DeviceState &D, EventHandle &E) {
  if (E)
    return true;
  BackendStatus S = Back.createEvent(D.Device, &E);
  noteError(D, S);
  if (!S.ok())
    E = 0;
  return E != 0;
}

uint64_t detail::rangeBytes(const std::vector<MemRange> &Rs) {
  uint64_t B = 0;
  for (const MemRange &R : Rs)
    B += R.Bytes;
  return B;
}

namespace {
MemRange toAddress(const Executor::DeviceState &D, const MemRange &ArenaRange) {
  uint64_t Off = ArenaRange.Address;
  uint64_t Bytes = std::min<uint64_t>(ArenaRange.Bytes, D.ArenaBytes - std::min(Off, D.ArenaBytes));
  return {D.ArenaBase + Off, Bytes};
}

} // namespace

MemRange detail::pagesAround(const Executor::DeviceState &D, const MemRange &R) {
  const MemRange A = toAddress(D, R);
  constexpr uint64_t P = kManagedPageBytes;
  const uint64_t Start = std::max<uint64_t>(A.Address / P * P, D.ArenaBase);
  const uint64_t End =
      std::min<uint64_t>((A.Address + A.Bytes + P - 1) / P * P, D.ArenaBase + D.ArenaMapped);
  return {Start, End > Start ? End - Start : 0};
}

std::pair<uint64_t, uint64_t> detail::blocksOverlapping(const Executor::DeviceState &D,
                                                        const MemRange &Pages, uint64_t Limit) {
  const uint64_t BB = D.blockBytes();
  return {(Pages.Address - D.ArenaBase) / BB,
          std::min(Limit, (Pages.Address + Pages.Bytes - D.ArenaBase + BB - 1) / BB)};
}

namespace {
/// The address range of arena range `R` for a discard: the whole pages inside
/// it, none of a neighbour's (Bytes = 0 when it holds no whole page).
MemRange pagesInside(const Executor::DeviceState &D, const MemRange &R) {
  const MemRange A = toAddress(D, R);
  constexpr uint64_t P = kManagedPageBytes;
  const uint64_t Start = (A.Address + P - 1) / P * P;
  const uint64_t End = (A.Address + A.Bytes) / P * P;
  return {Start, End > Start ? End - Start : 0};
}

} // namespace

/// Orders the action stream after everything enqueued so far on the compute
/// streams that launched since the last time (a discard or eviction never
/// overtakes a kernel still using the data).
void detail::orderAfterCompute(Backend &Back, Executor::DeviceState &D) {
  for (StreamClock &C : D.ComputeClocks) {
    if (!C.Dirty || !ensureEvent(Back, D, C.Event))
      continue;
    BackendStatus S = Back.recordEvent(D.Device, C.Event, C.Stream);
    noteError(D, S);
    if (S.ok()) {
      noteError(D, Back.streamWaitEvent(D.Device, D.ReleaseStream, C.Event));
      noteError(D, Back.streamWaitEvent(D.Device, D.DiscardStream, C.Event));
      if (D.CopyPath)
        noteError(D, Back.streamWaitEvent(D.Device, D.CopyOutStream, C.Event));
    }
    C.Dirty = false;
  }
}

namespace {
using Mark = Executor::DeviceState::ReleaseMark;

bool markDone(Backend &Back, const Executor::DeviceState &D, const Mark &M) {
  return !M.Event || Back.queryEvent(D.Device, M.Event) == EventState::Complete;
}

/// Takes the front mark of `Q` off the ledger; a mark not known complete
/// becomes the one to wait for on its stream (FIFO: it covers the earlier).
void popMark(Backend &Back, Executor::DeviceState &D, std::deque<Mark> &Q,
             EventHandle &WaitFor) {
  const Mark M = Q.front();
  Q.pop_front();
  D.PendingReleaseBlocks -= M.Blocks;
  if (M.Event && !markDone(Back, D, M)) {
    if (WaitFor)
      D.SpareEvents.push_back(WaitFor);
    WaitFor = M.Event;
  } else if (M.Event) {
    D.SpareEvents.push_back(M.Event);
  }
}

bool anyReleasePending(const Executor::DeviceState &D) {
  return !D.DiscardsPending.empty() || !D.EvictionsPending.empty() || !D.CopiesPending.empty();
}

/// Drops the marks at the fronts that the host sees complete.
void dropDoneMarks(Backend &Back, Executor::DeviceState &D) {
  EventHandle None = 0;
  for (std::deque<Mark> *Q : {&D.DiscardsPending, &D.EvictionsPending, &D.CopiesPending})
    while (!Q->empty() && markDone(Back, D, Q->front()))
      popMark(Back, D, *Q, None);
}

} // namespace

/// Mark `Seq` while it is on the ledger, else null (each queue is in Seq order).
const Mark *detail::findPendingMark(const Executor::DeviceState &D, uint64_t Seq) {
  for (const std::deque<Mark> *Q : {&D.DiscardsPending, &D.EvictionsPending, &D.CopiesPending}) {
    auto It = std::lower_bound(Q->begin(), Q->end(), Seq,
                               [](const Mark &M, uint64_t S) { return M.Seq < S; });
    if (It != Q->end() && It->Seq == Seq)
      return &*It;
  }
  return nullptr;
}

namespace {
/// The budget in blocks, less the pool's live bytes (as enforceBudget counts them).
uint64_t roomBlocks(const Executor::DeviceState &D) {
  const uint64_t Fallback = D.Pool.stats().BytesInUse;
  return D.Budget > Fallback ? (D.Budget - Fallback) / D.blockBytes() : 0;
}

} // namespace

void detail::markRelease(Backend &Back, DeviceState &D, StreamHandle Stream) {
  dropDoneMarks(Back, D); // keeps the ledger as short as the work in flight
  const uint64_t Blocks = D.Leaving.size();
  if (!Blocks)
    return;
  EventHandle E = takeSpareEvent(D.SpareEvents);
  if (ensureEvent(Back, D, E)) {
    BackendStatus S = Back.recordEvent(D.Device, E, Stream);
    noteError(D, S);
    if (!S.ok()) {
      D.SpareEvents.push_back(E);
      E = 0; // untracked: counted as leaving, never waited for (the error is counted)
    }
  }
  const uint64_t Seq = D.NextMarkSeq++;
  (Stream == D.DiscardStream   ? D.DiscardsPending
   : Stream == D.CopyOutStream ? D.CopiesPending
                               : D.EvictionsPending)
      .push_back({E, Blocks, Seq});
  D.PendingReleaseBlocks += Blocks;
  for (uint32_t B : D.Leaving)
    D.LeftWith[B] = Seq;
  D.Leaving.clear();
}

void detail::waitForRoom(Backend &Back, DeviceState &D, uint64_t Occupied) {
  const uint64_t Limit = roomBlocks(D);
  // One event to wait for per stream (each queue is one stream's, FIFO).
  std::deque<Mark> *Queues[] = {&D.DiscardsPending, &D.EvictionsPending, &D.CopiesPending};
  EventHandle WaitFor[3] = {0, 0, 0};
  dropDoneMarks(Back, D);
  // Oldest first over the streams, until the room is there.
  while (Occupied + D.PendingReleaseBlocks > Limit && anyReleasePending(D)) {
    int Oldest = -1;
    for (int I = 0; I < 3; ++I)
      if (!Queues[I]->empty() &&
          (Oldest < 0 || Queues[I]->front().Seq < Queues[Oldest]->front().Seq))
        Oldest = I;
    popMark(Back, D, *Queues[Oldest], WaitFor[Oldest]);
  }
  for (EventHandle E : WaitFor)
    if (E) {
      noteError(D, Back.streamWaitEvent(D.Device, D.ActionStream, E));
      D.SpareEvents.push_back(E); // re-recording it later does not change this wait
    }
}

namespace {
/// `Pages` onto the end of `To`: into its last range where they overlap or
/// touch it (a run of adjacent pages is one range), else as a range of their own.
void extendOrAppend(std::vector<MemRange> &To, const MemRange &Pages) {
  if (!To.empty() && To.back().Address <= Pages.Address &&
      To.back().Address + To.back().Bytes >= Pages.Address)
    To.back().Bytes =
        std::max(To.back().Address + To.back().Bytes, Pages.Address + Pages.Bytes) -
        To.back().Address;
  else
    To.push_back(Pages);
}

void stampBlocks(Executor::DeviceState &D, uint64_t Off, uint64_t Bytes, uint64_t &Incoming) {
  const uint64_t BB = D.blockBytes();
  const uint64_t Last = std::min<uint64_t>((Off + Bytes + BB - 1) / BB, D.Resident.size());
  for (uint64_t B = Off / BB; B < Last; ++B) {
    if (D.NeededStamp[B] == D.Stamp)
      continue;
    D.NeededStamp[B] = D.Stamp;
    if (!D.Resident[B]) {
      ++Incoming;
      D.Blocks.push_back(static_cast<uint32_t>(B));
    }
  }
}

} // namespace

/// Prefetches and advice of one position, before its launch runs.
void detail::issueBefore(Backend &Back, Executor::DeviceState &D, uint32_t Pos,
                         std::optional<StreamHandle> Launch) {
  const CompiledPlan &P = *D.Plan;
  // The plan's issue order within a position: ADVISE, DISCARD, EVICT,
  // PREFETCH (room is made before it is used).
  for (const PlanAction &A : P.BeforeLaunch[Pos]) {
    if (A.Kind != PlanActionKind::Advise)
      continue;
    for (const MemRange &R : A.Ranges) {
      BackendStatus S = Back.advise(D.Device, toAddress(D, R), A.Advice);
      noteError(D, S);
      if (S.ok()) {
        bump(D.C.Advises);
        bump(D.C.AdviseBytes, toAddress(D, R).Bytes);
      }
    }
  }
  issueReleases(Back, D, P.ReleaseBefore[Pos]);
  dropFreedSlots(D);
  D.CurrentPosition = Pos;
  ++D.Stamp;
  D.Blocks.clear();
  const uint64_t BB = D.blockBytes();
  // The prefetches' blocks first, each range's new ones counted: the room each
  // range needs when it is issued. Then the kernel's own (faulted in if not
  // prefetched).
  const auto &Actions = P.BeforeLaunch[Pos];
  std::vector<DeviceState::PrefetchRange> &Ranges = D.Prefetches;
  Ranges.clear();
  // When the kernel waits for its own prefetches (those due at its position),
  // they go first, in calls of their own, so that it waits for none issued
  // here for a later kernel (it does wait for what their streams held
  // before); their blocks are counted first too (the room each range needs).
  const bool Wait = Launch && D.KernelsWaitForTheirPrefetches;
  uint64_t Incoming = 0;
  // The copy path: pooled blocks come back by copy, not by prefetch (a
  // prefetch would only map them empty), in the prefetches' order and under
  // their room rules; the position's own that no action brings, on the
  // launch's stream.
  const bool Pooled = D.CopyPath && D.PooledBlocks.load(std::memory_order_relaxed);
  std::vector<uint32_t> &CopyNow = D.CopyIns;
  CopyNow.clear();
  // A prefetch range goes in pieces of format::kPrefetchRoomBlocks blocks,
  // each of which waits only for the room it needs: the room comes free
  // release by release (a copy-out slice, an eviction call), and a range of
  // hundreds of blocks that waited for all of its room held back its first
  // blocks behind the last release (the planner counts each block's room as
  // it comes free). Pieces that need no wait go in one range of one call, as
  // the plan gave it. Copies back go whole (each run of slots is one copy).
  auto AddRange = [&](const MemRange &R, bool DueNow, bool Copy = false) {
    const uint64_t Piece = format::kPrefetchRoomBlocks * BB;
    for (uint64_t Off = R.Address, End = R.Address + R.Bytes; Off < End;) {
      const uint64_t Cut = Copy ? End : std::min(End, (Off / Piece + 1) * Piece);
      const MemRange Part{Off, Cut - Off};
      const uint64_t Before = Incoming;
      stampBlocks(D, Part.Address, Part.Bytes, Incoming);
      if (MemRange Pages = pagesAround(D, Part); Pages.Bytes)
        Ranges.push_back({Pages, Part, Incoming - Before, DueNow, Copy, Off != R.Address});
      Off = Cut;
    }
  };
  for (int Pass = Wait ? 0 : 1; Pass < 2; ++Pass)
    for (const PlanAction &A : Actions)
      if ((A.Kind == PlanActionKind::Prefetch || A.Kind == PlanActionKind::CopyIn) &&
          (!Wait || (A.DuePosition == Pos) == (Pass == 0)))
        for (const MemRange &R : A.Ranges) {
          if (!Pooled) {
            AddRange(R, A.DuePosition == Pos);
            continue;
          }
          // Runs of blocks in the pool or not, each as the plan says.
          const uint64_t End = R.Address + R.Bytes;
          for (uint64_t Run = R.Address; Run < End;) {
            const uint64_t B = Run / BB;
            const bool Copy = B < D.SlotOf.size() && D.SlotOf[B];
            uint64_t Cut = std::min(End, (B + 1) * BB);
            while (Cut < End && (Cut / BB < D.SlotOf.size() && D.SlotOf[Cut / BB]) == Copy)
              Cut = std::min(End, Cut + BB);
            AddRange({Run, Cut - Run}, A.DuePosition == Pos, Copy);
            Run = Cut;
          }
        }
  for (uint32_t B : P.PositionBlocks[Pos]) {
    // The plan's own access set: a pooled block no action brings back comes
    // back now, whatever the plan said.
    if (Pooled && D.SlotOf[B] && D.NeededStamp[B] != D.Stamp) {
      if (Launch)
        CopyNow.push_back(B);
      else
        AddRange({uint64_t{B} * BB, BB}, false, true);
    }
    stampBlocks(D, uint64_t{B} * BB, BB, Incoming);
  }
  if (Incoming)
    enforceBudget(Back, D, Incoming);
  // The kernel's own blocks become resident whether prefetched or faulted in.
  for (uint32_t B : D.Blocks)
    D.Resident[B] = 1;
  const uint64_t Now = D.ResidentBlocks.fetch_add(D.Blocks.size()) + D.Blocks.size();
  if (Now > D.PeakResidentBlocks.load(std::memory_order_relaxed))
    D.PeakResidentBlocks.store(Now, std::memory_order_relaxed);
  if (!CopyNow.empty())
    copyIn(Back, D, CopyNow, *Launch);
  // The kernel waits for the copy-ins of its blocks (issued here or ahead of
  // it): a dependency, not a hint (their pages are mapped before the copy
  // lands). After the ranges are issued.
  struct WaitCopies {
    Backend &Back;
    DeviceState &D;
    uint32_t Pos;
    std::optional<StreamHandle> Launch;
    ~WaitCopies() {
      if (Launch && D.CopyPath && !D.CopyInsPending.empty())
        waitForCopyIns(Back, D, D.Plan->PositionBlocks[Pos], *Launch);
    }
  } AtEnd{Back, D, Pos, Launch};
  if (Ranges.empty())
    return;
  // Room first, as far as each range needs it: the ranges go in calls that
  // start once enough of the releases issued before them have ended (a call
  // of all of them when the room is there). A range holding blocks whose own
  // release is still pending (migrations on two streams are not ordered) goes
  // on the late stream after that release instead, so that it holds back no
  // other prefetch (a populate behind a discard waits for the kernels before
  // the discard).
  uint64_t Fetched = 0;
  for (const DeviceState::PrefetchRange &R : Ranges)
    Fetched += R.Blocks;
  uint64_t Occupied = Now - Fetched; // resident, the kernel's own blocks included
  std::vector<MemRange> &Piece = D.Piece;
  Piece.clear();
  auto Call = [&](std::vector<MemRange> &Rs, StreamHandle Stream) {
    if (Rs.empty())
      return false;
    BackendStatus S = Back.prefetchBatch(D.Device, Rs, D.Device, Stream);
    noteError(D, S);
    if (S.ok()) {
      bump(D.C.PrefetchBatches);
      bump(D.C.PrefetchBytes, rangeBytes(Rs));
    }
    return S.ok();
  };
  auto Issue = [&](std::vector<MemRange> &Rs, StreamHandle Stream) {
    // The copy path's populates first, in a call of their own that the
    // kernels using them wait for; then the rest.
    splitPopulates(D, Rs, D.PopulatePiece);
    if (Call(D.PopulatePiece, Stream))
      awaitPrefetches(Back, D, D.PopulatePiece, Stream);
    Call(Rs, Stream);
    Rs.clear();
  };
  // The launching stream waits for what was issued on `Stream` so far: the
  // kernel's own prefetches and whatever that stream holds before them.
  auto LaunchWaits = [&](StreamHandle Stream, EventHandle &E) {
    if (!ensureEvent(Back, D, E))
      return;
    BackendStatus S = Back.recordEvent(D.Device, E, Stream);
    noteError(D, S);
    if (S.ok())
      noteError(D, Back.streamWaitEvent(D.Device, *Launch, E));
  };
  // A range of pooled blocks: populate and copy back on `Stream`.
  std::vector<uint32_t> CopyBlocks;
  auto copyRange = [&](const DeviceState::PrefetchRange &R, StreamHandle Stream) {
    CopyBlocks.clear();
    for (uint64_t B = R.Arena.Address / BB; B < (R.Arena.Address + R.Arena.Bytes + BB - 1) / BB;
         ++B)
      if (B < D.SlotOf.size() && D.SlotOf[B])
        CopyBlocks.push_back(static_cast<uint32_t>(B));
    copyIn(Back, D, CopyBlocks, Stream);
  };
  // The next piece of the range before it, with no wait between: one range.
  auto Append = [](std::vector<MemRange> &To, const DeviceState::PrefetchRange &R) {
    if (R.Continues)
      extendOrAppend(To, R.Pages);
    else
      To.push_back(R.Pages);
  };
  const uint64_t Limit = roomBlocks(D);
  dropDoneMarks(Back, D);
  std::vector<MemRange> &Late = D.LatePiece;
  Late.clear();
  std::vector<EventHandle> &LateWaits = D.LateWaits;
  LateWaits.clear();
  size_t LateDueNow = 0; // the first ranges of Late: the kernel's own
  size_t LateDueWaits = 0; // the first events of LateWaits: those the kernel's own need
  bool DueOnAction = false; // the kernel's own on the prefetch stream, not yet waited for
  for (const DeviceState::PrefetchRange &R : Ranges) {
    if (Wait && !R.DueNow && DueOnAction) {
      Issue(Piece, D.ActionStream); // the kernel's own, then its wait
      LaunchWaits(D.ActionStream, D.DueEvent);
      DueOnAction = false;
    }
    Occupied += R.Blocks;
    bool Leaving = false;
    for (uint64_t B = R.Arena.Address / BB;
         B < (R.Arena.Address + R.Arena.Bytes + BB - 1) / BB && B < D.LeftWith.size(); ++B)
      if (const Mark *M = D.LeftWith[B] ? findPendingMark(D, D.LeftWith[B]) : nullptr) {
        Leaving = true; // an event of 0: none to wait for
        if (M->Event && std::find(LateWaits.begin(), LateWaits.end(), M->Event) == LateWaits.end())
          LateWaits.push_back(M->Event);
      }
    if (Leaving && R.Copy) { // after its release, which copyIn waits for
      copyRange(R, D.LateStream);
      continue;
    }
    if (Leaving) {
      Append(Late, R);
      if (R.DueNow) { // the due ones come first: the entries so far
        LateDueNow = Late.size();
        LateDueWaits = LateWaits.size();
      }
      continue;
    }
    if (Occupied + D.PendingReleaseBlocks > Limit && anyReleasePending(D)) {
      Issue(Piece, D.ActionStream); // what fits goes without waiting
      waitForRoom(Back, D, Occupied);
    }
    DueOnAction |= R.DueNow;
    if (R.Copy) {
      Issue(Piece, D.ActionStream); // in order
      copyRange(R, D.ActionStream);
      continue;
    }
    Append(Piece, R);
  }
  Issue(Piece, D.ActionStream);
  if (Wait && DueOnAction) // every range was the kernel's own
    LaunchWaits(D.ActionStream, D.DueEvent);
  if (!Late.empty()) {
    // The late stream also keeps the room rule: it follows the prefetch stream.
    auto LateWait = [&](size_t From, size_t To) {
      for (size_t I = From; I < To; ++I)
        noteError(D, Back.streamWaitEvent(D.Device, D.LateStream, LateWaits[I]));
    };
    size_t Waited = 0;
    if (Wait && LateDueNow) {
      // The kernel's own first, after only the releases they wait for (they
      // come first in Late, and their marks first in LateWaits).
      LateWait(0, LateDueWaits);
      Waited = LateDueWaits;
      std::vector<MemRange> Later(Late.begin() + static_cast<long>(LateDueNow), Late.end());
      Late.resize(LateDueNow);
      Issue(Late, D.LateStream);
      LaunchWaits(D.LateStream, D.DueLateEvent);
      Late = std::move(Later);
    }
    LateWait(Waited, LateWaits.size());
    Issue(Late, D.LateStream);
  }
}

/// The resident blocks `R` (arena offsets) wholly covers leave the ledger,
/// with the call being built (D.Leaving: that call's mark).
void detail::markGone(Executor::DeviceState &D, const MemRange &R) {
  const uint64_t BB = D.blockBytes();
  const uint64_t First = (R.Address + BB - 1) / BB, Last = (R.Address + R.Bytes) / BB;
  for (uint64_t B = First; B < Last && B < D.Resident.size(); ++B)
    if (D.Resident[B]) {
      D.Resident[B] = 0;
      D.ResidentBlocks.fetch_sub(1);
      D.Leaving.push_back(static_cast<uint32_t>(B));
    }
}

void detail::flushEvictions(Backend &Back, DeviceState &D, bool Budget) {
  if (D.Ranges.empty()) {
    D.Leaving.clear();
    return;
  }
  BackendStatus S = Back.prefetchBatch(D.Device, D.Ranges, kHostLocation, D.ReleaseStream);
  noteError(D, S);
  if (!D.Discarded.empty())
    for (uint32_t B : D.Leaving) // evicted: its contents come back, not a populate
      if (B < D.Discarded.size())
        D.Discarded[B] = 0;
  markRelease(Back, D, D.ReleaseStream);
  if (S.ok()) {
    bump(D.C.EvictBatches);
    bump(D.C.EvictBytes, rangeBytes(D.Ranges));
    if (Budget)
      bump(D.C.BudgetEvictions, rangeBytes(D.Ranges));
  }
  D.Ranges.clear();
}

void detail::evictInCalls(Backend &Back, DeviceState &D, MemRange R, bool Budget) {
  const uint64_t BB = D.blockBytes();
  // Block by block: a call closes at the block that fills it.
  for (uint64_t Off = R.Address, End = R.Address + R.Bytes; Off < End;) {
    const uint64_t Cut = std::min(End, (Off / BB + 1) * BB);
    const MemRange Piece{Off, Cut - Off};
    Off = Cut;
    markGone(D, Piece); // its block, if wholly covered, leaves with this call
    // One range per run of adjacent pages, as the plan gave it.
    if (MemRange Pages = pagesAround(D, Piece); Pages.Bytes)
      extendOrAppend(D.Ranges, Pages);
    if (D.Leaving.size() >= format::kEvictionCallBlocks)
      flushEvictions(Back, D, Budget);
  }
}

namespace {
/// Discards `Pages` on `Stream` as one call marked with the blocks in
/// D.Leaving; new owners of those bytes wait for `After`, recorded after it
/// (`InFlight` counts it: see tryPlace). AllocMu and LaunchMu held.
void discardMarked(Backend &Back, DeviceState &D, const std::vector<MemRange> &Pages,
                   StreamHandle Stream, std::atomic<uint64_t> &InFlight, EventHandle &After) {
  BackendStatus S = Back.discardBatch(D.Device, Pages, Stream);
  if (S.ok() && !D.Discarded.empty()) {
    // Resident or not, their next prefetch maps empty pages: a populate.
    for (const MemRange &R : Pages) {
      const auto [First, End] = blocksOverlapping(D, R, D.Discarded.size());
      for (uint64_t B = First; B < End; ++B)
        D.Discarded[B] = 1;
    }
  }
  markRelease(Back, D, Stream);
  noteError(D, S);
  if (S.ok()) {
    bump(D.C.DiscardBatches);
    bump(D.C.DiscardBytes, rangeBytes(Pages));
  }
  InFlight.fetch_add(1, std::memory_order_release);
  if (ensureEvent(Back, D, After))
    noteError(D, Back.recordEvent(D.Device, After, Stream));
}
} // namespace

/// Launches a discard waits for its range to be freed before it becomes an
/// eviction instead: PyTorch frees a tensor just after the launch of its last
/// use returns, so a discard planned at that position usually finds the tensor
/// still allocated for a moment.
constexpr uint64_t kDiscardDeferralLaunches = 64;

/// Issues evictions and discards: `Evict` and `Discard` hold arena ranges.
/// Discard parts that overlap a live allocation are deferred (never
/// discarded while live); deferred parts past their deadline are evicted,
/// which keeps their contents. Only the whole pages inside a free part are
/// discarded (kManagedPageBytes): never a byte of a neighbour. Called with
/// LaunchMu held.
void detail::issueRanges(Backend &Back, DeviceState &D, std::vector<MemRange> Evict,
                         const std::vector<MemRange> &DiscardIn,
                         const std::vector<CopyOutRange> &CopyOut) {
  const uint64_t Now = D.C.Launches.load(std::memory_order_relaxed);
  // Read before the split: a free after this is seen by the next look.
  const uint64_t Frees = D.C.Frees.load(std::memory_order_acquire);
  dropFreedSlots(D); // before AllocMu: it takes it
  std::vector<MemRange> Discard;      // free parts, arena offsets
  std::vector<MemRange> DiscardPages; // their whole pages, addresses
  // Finding a range free, discarding it and recording the event its next
  // owner waits for (see tryPlace) are one step under AllocMu: an allocation
  // placed over the range in between would neither be seen live here nor
  // wait for the discard, which could then destroy its data.
  std::unique_lock<std::mutex> AllocLock(D.AllocMu);
  auto Split = [&](const MemRange &R, uint64_t Deadline) {
    uint64_t Cur = R.Address, End = R.Address + R.Bytes;
    auto It = D.Arena.upper_bound(Cur);
    if (It != D.Arena.begin())
      --It;
    for (; It != D.Arena.end() && It->first < End && Cur < End; ++It) {
      if (!It->second.Live || It->second.End <= Cur)
        continue;
      uint64_t LiveStart = std::max(It->first, Cur), LiveEnd = std::min(It->second.End, End);
      if (LiveStart > Cur)
        Discard.push_back({Cur, LiveStart - Cur});
      MemRange LivePart{LiveStart, LiveEnd - LiveStart};
      if (Now < Deadline) {
        D.Deferred.push_back({LivePart, Deadline});
      } else {
        Evict.push_back(LivePart);
        bump(D.C.DiscardsKeptLive, LivePart.Bytes);
      }
      Cur = LiveEnd;
    }
    if (Cur < End)
      Discard.push_back({Cur, End - Cur});
  };
  std::vector<Executor::DeviceState::DeferredDiscard> Old;
  Old.swap(D.Deferred);
  for (const auto &Def : Old)
    Split(Def.Range, Def.Deadline);
  for (const MemRange &R : DiscardIn)
    Split(R, Now + kDiscardDeferralLaunches);
  D.DeferredFreesSeen = Frees;
  D.DeferredDue = ~uint64_t{0};
  for (const auto &Def : D.Deferred)
    D.DeferredDue = std::min(D.DeferredDue, Def.Deadline);
  for (const MemRange &R : Discard)
    if (MemRange Pages = pagesInside(D, R); Pages.Bytes)
      DiscardPages.push_back(Pages);
  // Dead data in the pool: its slot goes too.
  if (D.CopyPath && D.PooledBlocks.load(std::memory_order_relaxed)) {
    const uint64_t BB = D.blockBytes();
    for (const MemRange &R : Discard)
      for (uint64_t B = (R.Address + BB - 1) / BB; B < (R.Address + R.Bytes) / BB; ++B)
        dropSlot(D, static_cast<uint32_t>(B));
  }
  const std::vector<CopyOutRange> Chosen =
      CopyOut.empty() ? std::vector<CopyOutRange>{} : chooseCopyOuts(D, CopyOut, Evict);
  if (DiscardPages.empty() && Chosen.empty())
    AllocLock.unlock(); // evictions keep the data: no allocation waits for them
  if (Evict.empty() && DiscardPages.empty() && Chosen.empty())
    return;
  orderAfterCompute(Back, D);
  // Copies first: a failed one is evicted with the rest. The copied blocks
  // are discarded after their copies, on the copy-out stream (the discard
  // stream never waits for a copy), a slice of format::kCopyOutSliceBlocks at a
  // time, each with its own release mark: the room comes free as the copies
  // land, not when the last of a long batch does. New owners of these bytes
  // wait for them (CopyOutEvent, tryPlace).
  const uint64_t BB = D.blockBytes();
  for (size_t From = 0; From < Chosen.size(); From += format::kCopyOutSliceBlocks) {
    const std::span<const CopyOutRange> Slice(
        Chosen.data() + From, std::min<size_t>(format::kCopyOutSliceBlocks, Chosen.size() - From));
    const std::vector<MemRange> Copied = issueCopyOuts(Back, D, Slice, Evict);
    if (Copied.empty())
      continue;
    D.Leaving.clear();
    for (const CopyOutRange &R : Slice)
      if (D.SlotOf[R.Arena.Address / BB])
        markGone(D, R.Arena);
    discardMarked(Back, D, Copied, D.CopyOutStream, D.CopyOutsInFlight, D.CopyOutEvent);
  }
  D.Ranges.clear();
  D.Leaving.clear();
  for (const MemRange &R : Evict)
    evictInCalls(Back, D, R, /*Budget=*/false);
  flushEvictions(Back, D, /*Budget=*/false);
  if (DiscardPages.empty())
    return;
  D.Leaving.clear();
  for (const MemRange &R : Discard)
    markGone(D, R);
  discardMarked(Back, D, DiscardPages, D.DiscardStream, D.DiscardsInFlight, D.DiscardEvent);
}

/// Evictions and discards of one list (ReleaseBefore or AfterLaunch of a position).
void detail::issueReleases(Backend &Back, DeviceState &D, const std::vector<PlanAction> &Actions) {
  if (Actions.empty())
    return;
  std::vector<MemRange> Evict, Discard;
  std::vector<CopyOutRange> CopyOut;
  for (const PlanAction &A : Actions) {
    uint64_t Slot = A.PoolOffset; // the ranges' slots lie one after another
    for (const MemRange &R : A.Ranges) {
      if (A.Kind == PlanActionKind::CopyOut)
        CopyOut.push_back({R, Slot});
      else
        (A.Kind == PlanActionKind::Evict ? Evict : Discard).push_back(R);
      Slot += R.Bytes;
    }
  }
  issueRanges(Back, D, std::move(Evict), Discard, CopyOut);
}


void detail::collectGuardTimings(Backend &Back, DeviceState &D) {
  while (!D.GuardTimings.empty()) {
    const DeviceState::GuardTiming T = D.GuardTimings.front();
    if (Back.queryEvent(D.Device, T.End) == EventState::Pending)
      return;
    uint64_t Ns = 0;
    if (Back.elapsedNs(D.Device, T.Start, T.End, Ns))
      bump(D.C.GuardWaitNs, Ns);
    D.SpareTimedEvents.push_back(T.Start);
    D.SpareTimedEvents.push_back(T.End);
    D.GuardTimings.pop_front();
  }
}

namespace {
/// At most this many guard waits are timed at once; later ones go untimed
/// until the GPU catches up (the wait time is then a lower bound).
constexpr size_t kMaxGuardTimings = 64;

/// Times what a launch's stream waits for between its construction and its
/// end (the guard's restores, copy-ins and waits on releases): an event
/// before and one after, on the launch's stream, read later. Only launches
/// the guard gives work pay for the two records.
class GuardTimer {
public:
  GuardTimer(Backend &B, DeviceState &Dev, StreamHandle S, bool Works)
      : Back(B), D(Dev), Launch(S) {
    collectGuardTimings(Back, D);
    if (!Works || D.GuardTimings.size() >= kMaxGuardTimings || !take(T.Start) || !take(T.End))
      return;
    if (!Back.recordEvent(D.Device, T.Start, Launch).ok())
      giveBack();
  }
  ~GuardTimer() {
    if (!T.End)
      return;
    if (Back.recordEvent(D.Device, T.End, Launch).ok())
      D.GuardTimings.push_back(T);
    else
      giveBack();
  }
  GuardTimer(const GuardTimer &) = delete;
  GuardTimer &operator=(const GuardTimer &) = delete;

private:
  bool take(EventHandle &E) {
    if ((E = takeSpareEvent(D.SpareTimedEvents)))
      return true;
    if (Back.createTimedEvent(D.Device, &E).ok() && E)
      return true;
    E = 0;
    giveBack();
    return false;
  }
  void giveBack() {
    for (EventHandle *E : {&T.Start, &T.End})
      if (*E)
        D.SpareTimedEvents.push_back(std::exchange(*E, 0));
  }

  Backend &Back;
  DeviceState &D;
  StreamHandle Launch;
  DeviceState::GuardTiming T{0, 0};
};
} // namespace

void detail::guardLaunch(Backend &Back, Executor::DeviceState &D, StreamHandle Launch,
                         std::span<const uint64_t> Words) {
  // ArenaBase and ArenaBytes are set before the plan is on: no lock for a
  // launch that names nothing in the arena (the pool's memory, host values).
  if (std::none_of(Words.begin(), Words.end(), [&](uint64_t W) {
        return W >= D.ArenaBase && W - D.ArenaBase < D.ArenaBytes;
      }))
    return;
  const uint64_t BB = D.blockBytes();
  dropFreedSlots(D);
  std::vector<uint32_t> &Need = D.Blocks; // scratch, as issueBefore's: refilled below
  Need.clear();
  std::vector<uint32_t> &Copy = D.CopyIns; // named blocks whose contents are in the pool
  Copy.clear();
  std::vector<uint32_t> Named; // to wait for their copy-ins in flight
  const bool CopyPath = D.CopyPath;
  uint64_t Incoming = 0;
  {
    std::lock_guard<std::mutex> Lock(D.AllocMu);
    for (uint64_t W : Words) {
      if (W < D.ArenaBase || W - D.ArenaBase >= D.ArenaBytes)
        continue;
      const uint64_t Off = W - D.ArenaBase;
      auto It = D.Arena.upper_bound(Off);
      if (It == D.Arena.begin())
        continue;
      --It;
      if (!It->second.Live || Off >= It->second.End)
        continue;
      // The whole allocation the word points into: a kernel may index
      // anywhere in a tensor it is handed.
      const uint64_t Last = std::min<uint64_t>((It->second.End + BB - 1) / BB, D.Resident.size());
      for (uint64_t B = It->first / BB; B < Last; ++B) {
        if (CopyPath) {
          Named.push_back(static_cast<uint32_t>(B));
          if (D.SlotOf[B]) { // only in the pool: never run the kernel before it is back
            if (std::find(Copy.begin(), Copy.end(), B) == Copy.end()) {
              Copy.push_back(static_cast<uint32_t>(B));
              Incoming += !D.Resident[B];
            }
            continue;
          }
        }
        if (D.NeededStamp[B] == D.Stamp)
          continue; // the position's own (issueBefore stamped it), or seen already
        D.NeededStamp[B] = D.Stamp;
        if (!D.Resident[B]) {
          ++Incoming;
          Need.push_back(static_cast<uint32_t>(B));
        }
      }
    }
  }
  if (Incoming)
    enforceBudget(Back, D, Incoming);
  // Timed only where the guard brings something back: a wait for the plan's
  // own copy-ins in flight is the plan's, not the guard's.
  GuardTimer Timer(Back, D, Launch, !Copy.empty() || !Need.empty());
  if (!Copy.empty()) {
    bump(D.C.GuardCopyInBytes, copyIn(Back, D, Copy, Launch));
    bump(D.C.GuardRestores);
  }
  if (CopyPath && !D.CopyInsPending.empty())
    waitForCopyIns(Back, D, Named, Launch);
  if (Need.empty())
    return;
  // A release of these blocks still in flight on another stream is not
  // ordered with a prefetch on this one: the launch's stream waits for it.
  std::vector<EventHandle> Waits;
  for (uint32_t B : Need)
    if (B < D.LeftWith.size() && D.LeftWith[B])
      if (const Mark *M = findPendingMark(D, D.LeftWith[B]);
          M && M->Event && std::find(Waits.begin(), Waits.end(), M->Event) == Waits.end())
        Waits.push_back(M->Event);
  for (EventHandle E : Waits)
    noteError(D, Back.streamWaitEvent(D.Device, Launch, E));
  std::sort(Need.begin(), Need.end());
  std::vector<MemRange> &Rs = D.Piece;
  Rs.clear();
  for (size_t I = 0; I < Need.size();) {
    size_t J = I;
    while (J + 1 < Need.size() && Need[J + 1] == Need[J] + 1)
      ++J;
    if (MemRange Pages = pagesAround(D, {uint64_t{Need[I]} * BB, uint64_t{J - I + 1} * BB});
        Pages.Bytes)
      Rs.push_back(Pages);
    I = J + 1;
  }
  // On the launch's own stream: the kernel, enqueued next, waits for it.
  BackendStatus S = Back.prefetchBatch(D.Device, Rs, D.Device, Launch);
  noteError(D, S);
  if (!S.ok())
    return; // the kernel faults them in, as without the guard
  for (uint32_t B : Need)
    D.Resident[B] = 1;
  const uint64_t Now = D.ResidentBlocks.fetch_add(Need.size()) + Need.size();
  if (Now > D.PeakResidentBlocks.load(std::memory_order_relaxed))
    D.PeakResidentBlocks.store(Now, std::memory_order_relaxed);
  bump(D.C.GuardRestores);
  bump(D.C.GuardRestoreBytes, rangeBytes(Rs));
  if (!Waits.empty())
    bump(D.C.GuardWaits);
}

} // namespace deepum::executor
