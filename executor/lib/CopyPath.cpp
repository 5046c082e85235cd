//===- CopyPath.cpp - Evicting through the copy engine ---------------------===//
//
// The third way out of the GPU for an arena block, beside Unified Memory's
// eviction and the discard of dead data: COPY_OUT copies the block with
// cudaMemcpyAsync into a slot of a pinned host pool, then discards it on the
// GPU; a prefetch of a pooled block (COPY_IN, a PREFETCH, the launch-time
// guard, or a launch whose arguments are unknown) populates it and copies the
// slot back. The ledger keeps, per arena block, its slot while its contents
// are only in the pool. The safety argument is in docs/executor.md ("The copy
// path"): nothing may read a block whose contents are only in the pool.
//
// Streams: copy-outs go on a stream of their own, ordered after the compute
// streams like every release; the discard that follows waits for them on the
// discard stream (so new owners of the bytes wait for it, as for any
// discard). Copy-ins ahead of their kernel go on the copy-in stream, after
// the releases of the same blocks; copy-ins a launch needs now go on that
// launch's stream.
//
//===----------------------------------------------------------------------===//
#include "DeviceState.h"

#include "deepum/base/ByteSize.h"
#include "deepum/executor/Log.h"

#include <algorithm>
#include <mutex>

namespace deepum::executor {

using namespace detail;
using base::formatBytes;

namespace {
/// Appends [Address, Address + Bytes) to `To`, extending its last range when
/// this one continues it.
void appendRange(std::vector<MemRange> &To, uint64_t Address, uint64_t Bytes) {
  if (!To.empty() && To.back().Address + To.back().Bytes == Address)
    To.back().Bytes += Bytes;
  else
    To.push_back({Address, Bytes});
}

/// One copy between the arena and the pool: bytes adjacent on both sides,
/// for the blocks at [First, Last] of the caller's list.
struct CopyRun {
  uint64_t Arena, Pool, Bytes; // arena offset, pool offset
  size_t First, Last;
};

/// Adds bytes of the caller's block K (arena offset `Arena`, pool offset
/// `Pool`) to `Runs`, extending the last run when both sides continue it.
void addToRuns(std::vector<CopyRun> &Runs, uint64_t Arena, uint64_t Pool, uint64_t Bytes,
               size_t K) {
  if (!Runs.empty() && Runs.back().Arena + Runs.back().Bytes == Arena &&
      Runs.back().Pool + Runs.back().Bytes == Pool) {
    Runs.back().Bytes += Bytes;
    Runs.back().Last = K;
  } else {
    Runs.push_back({Arena, Pool, Bytes, K, K});
  }
}

void dropDoneCopyIns(Backend &Back, DeviceState &D) {
  while (!D.CopyInsPending.empty() &&
         (!D.CopyInsPending.front().Event ||
          Back.queryEvent(D.Device, D.CopyInsPending.front().Event) == EventState::Complete)) {
    if (D.CopyInsPending.front().Event)
      D.SpareEvents.push_back(D.CopyInsPending.front().Event);
    D.CopyInsPending.pop_front();
  }
}

/// The event of copy-in mark `Seq` while it may be pending, else 0.
EventHandle pendingCopyIn(const DeviceState &D, uint64_t Seq) {
  auto It = std::lower_bound(D.CopyInsPending.begin(), D.CopyInsPending.end(), Seq,
                             [](const DeviceState::CopyMark &M, uint64_t S) { return M.Seq < S; });
  return It != D.CopyInsPending.end() && It->Seq == Seq ? It->Event : 0;
}
} // namespace

bool detail::setUpCopyPath(Backend &Back, DeviceState &D, bool ReportsArguments) {
  const CompiledPlan &P = *D.Plan;
  if (!P.CopyPoolBytes)
    return false;
  auto Refuse = [&](const std::string &Why) {
    log(LogLevel::Warn, "device %d: %s; the plan's copy-outs evict through Unified Memory",
        D.Device, Why.c_str());
    return false;
  };
  if (!ReportsArguments)
    return Refuse(std::string("the ") + Back.name() +
                  " backend cannot show every launch's arguments to the launch-time guard");
  void *Pool = nullptr;
  BackendStatus S = Back.allocatePinned(D.Device, P.CopyPoolBytes, &Pool);
  if (!S.ok() || !Pool)
    return Refuse("cannot pin the plan's " + formatBytes(P.CopyPoolBytes) + " copy pool (" +
                  S.Call + ": " + S.Message + ")");
  for (StreamHandle *Stream : {&D.CopyOutStream, &D.CopyInStream})
    if (S.ok() && !*Stream)
      S = Back.createStream(D.Device, Stream);
  if (!S.ok()) {
    (void)Back.freePinned(D.Device, Pool);
    return Refuse(std::string("cannot create the copy path's streams (") + S.Call + ": " +
                  S.Message + ")");
  }
  const uint64_t BB = P.UmBlockBytes;
  D.PoolBase = reinterpret_cast<uintptr_t>(Pool);
  D.PoolBytes = P.CopyPoolBytes;
  D.SlotOf.assign(P.ArenaBlocks, 0);
  D.SlotSince.assign(P.ArenaBlocks, 0);
  D.CopiedInWith.assign(P.ArenaBlocks, 0);
  D.Discarded.assign(P.ArenaBlocks, 0);
  D.SlotOwner.assign(P.CopyPoolBytes / BB, 0);
  D.SlotReadBy.assign(P.CopyPoolBytes / BB, 0);
  D.CopyPath = true;
  log(LogLevel::Info, "device %d: copy path on, pool of %s pinned", D.Device,
      formatBytes(P.CopyPoolBytes).c_str());
  return true;
}

namespace {
/// Block `B` leaves the pool (copied back, or its contents dead): its slot is
/// free again. Returns the slot's index in pool blocks.
uint64_t releaseSlot(DeviceState &D, uint32_t B) {
  const uint64_t SlotBlock = (D.SlotOf[B] - 1) / D.blockBytes();
  D.SlotOwner[SlotBlock] = 0;
  D.SlotOf[B] = 0;
  D.PooledBlocks.fetch_sub(1);
  return SlotBlock;
}
} // namespace

void detail::dropSlot(DeviceState &D, uint32_t B) {
  if (B < D.SlotOf.size() && D.SlotOf[B])
    releaseSlot(D, B);
}

namespace {
/// The parts of pooled block `B` (arena offsets, ascending) that hold its
/// contents: the bytes of allocations placed before its copy-out and still
/// live. With `AllButNew`, everything but the bytes of live allocations
/// placed since (what a copy-in may write when every new owner placed from
/// then on waits for it). AllocMu held.
void heldParts(const DeviceState &D, uint32_t B, std::vector<MemRange> &Out,
               bool AllButNew = false) {
  Out.clear();
  const uint64_t BB = D.blockBytes(), Lo = uint64_t{B} * BB, Hi = Lo + BB;
  auto Add = [&](uint64_t From, uint64_t To) {
    if (From < To)
      appendRange(Out, From, To - From);
  };
  auto It = D.Arena.upper_bound(Lo);
  if (It != D.Arena.begin() && std::prev(It)->second.End > Lo)
    --It;
  uint64_t Reached = Lo; // AllButNew: copied up to here
  for (; It != D.Arena.end() && It->first < Hi; ++It) {
    const uint64_t From = std::max(It->first, Lo), To = std::min(It->second.End, Hi);
    const bool New = It->second.Placed >= D.SlotSince[B];
    if (!AllButNew) {
      if (It->second.Live && !New)
        Add(From, To);
    } else if (It->second.Live && New) {
      Add(Reached, From);
      Reached = To;
    }
  }
  if (AllButNew)
    Add(Reached, Hi);
}
} // namespace

void detail::dropFreedSlots(DeviceState &D) {
  if (!D.CopyPath || !D.PooledBlocks.load(std::memory_order_relaxed))
    return;
  const uint64_t BB = D.blockBytes();
  std::vector<uint32_t> Dead;
  {
    std::lock_guard<std::mutex> Lock(D.AllocMu);
    std::vector<MemRange> Parts;
    for (const MemRange &R : D.FreedWhilePooled)
      for (uint64_t B = R.Address / BB; B < (R.Address + R.Bytes + BB - 1) / BB; ++B) {
        if (B >= D.SlotOf.size() || !D.SlotOf[B])
          continue;
        // A block the freed range covers whole is dead; one it shares, when
        // nothing placed before the copy-out lives there any more.
        const bool Whole = R.Address <= B * BB && (B + 1) * BB <= R.Address + R.Bytes;
        if (!Whole) {
          if (!D.CopyTracksAllocations)
            continue;
          heldParts(D, static_cast<uint32_t>(B), Parts);
          if (!Parts.empty())
            continue;
        }
        Dead.push_back(static_cast<uint32_t>(B));
      }
    D.FreedWhilePooled.clear();
  }
  for (uint32_t B : Dead)
    dropSlot(D, B);
}

std::vector<CopyOutRange> detail::chooseCopyOuts(DeviceState &D,
                                                 const std::vector<CopyOutRange> &Ranges,
                                                 std::vector<MemRange> &Evict) {
  std::vector<CopyOutRange> Chosen;
  std::vector<MemRange> Parts;
  const uint64_t BB = D.blockBytes();
  for (const CopyOutRange &R : Ranges)
    for (uint64_t Off = 0; Off < R.Arena.Bytes; Off += BB) {
      const uint64_t Start = R.Arena.Address + Off, B = Start / BB;
      const uint64_t Slot = R.PoolOffset + Off, SlotBlock = Slot / BB;
      bool Ok = D.CopyPath && B < D.Resident.size() && D.Resident[B] && !D.SlotOf[B] &&
                SlotBlock < D.SlotOwner.size() && !D.SlotOwner[SlotBlock];
      if (Ok && D.CopyTracksAllocations) {
        // Holding a live allocation: the guard restores the block whenever a
        // launch names any allocation in it, and a copy-in writes back the
        // bytes of those placed before now (SlotSince) that still live.
        D.SlotSince[B] = D.PlaceSeq + 1;
        heldParts(D, static_cast<uint32_t>(B), Parts);
        Ok = !Parts.empty();
      }
      if (Ok) {
        Chosen.push_back({{Start, BB}, Slot});
        D.SlotOwner[SlotBlock] = static_cast<uint32_t>(B + 1); // taken now: no other range gets it
        continue;
      }
      Evict.push_back({Start, BB});
      if (D.CopyPath)
        bump(D.C.CopyFallbackBytes, BB);
    }
  return Chosen;
}

std::vector<MemRange> detail::issueCopyOuts(Backend &Back, DeviceState &D,
                                            std::span<const CopyOutRange> Chosen,
                                            std::vector<MemRange> &Evict) {
  std::vector<MemRange> Pages;
  if (Chosen.empty())
    return Pages;
  const uint64_t BB = D.blockBytes();
  dropDoneCopyIns(Back, D);
  // A slot last read by a copy-in still in flight is written only after it.
  std::vector<EventHandle> Waits;
  for (const CopyOutRange &R : Chosen)
    if (EventHandle E = pendingCopyIn(D, D.SlotReadBy[R.PoolOffset / BB]);
        E && std::find(Waits.begin(), Waits.end(), E) == Waits.end())
      Waits.push_back(E);
  for (EventHandle E : Waits)
    noteError(D, Back.streamWaitEvent(D.Device, D.CopyOutStream, E));
  // Chosen is in the plan's order; a run needs adjacent blocks and slots.
  std::vector<CopyRun> Runs;
  for (size_t K = 0; K < Chosen.size(); ++K)
    addToRuns(Runs, Chosen[K].Arena.Address, Chosen[K].PoolOffset, BB, K);
  for (const CopyRun &Run : Runs) {
    BackendStatus S = Back.copyAsync(D.Device, reinterpret_cast<void *>(D.PoolBase + Run.Pool),
                                     reinterpret_cast<const void *>(D.ArenaBase + Run.Arena),
                                     Run.Bytes, D.CopyOutStream);
    noteError(D, S);
    for (size_t K = Run.First; K <= Run.Last; ++K) {
      const uint64_t Slot = Chosen[K].PoolOffset, Arena = Chosen[K].Arena.Address;
      const uint32_t B = static_cast<uint32_t>(Arena / BB);
      if (!S.ok()) { // the contents stay on the GPU: Unified Memory evicts them
        D.SlotOwner[Slot / BB] = 0;
        Evict.push_back({Arena, BB});
        bump(D.C.CopyFallbackBytes, BB);
        continue;
      }
      D.SlotOf[B] = Slot + 1;
      D.CopiedInWith[B] = 0;
      const uint64_t Now = D.PooledBlocks.fetch_add(1) + 1;
      if (Now > D.PeakPooledBlocks.load(std::memory_order_relaxed))
        D.PeakPooledBlocks.store(Now, std::memory_order_relaxed);
      if (MemRange P = pagesAround(D, {Arena, BB}); P.Bytes)
        appendRange(Pages, P.Address, P.Bytes);
    }
    if (S.ok())
      bump(D.C.CopyOutBytes, Run.Bytes);
  }
  return Pages;
}

void detail::waitForAllCopyIns(Backend &Back, DeviceState &D, StreamHandle Stream) {
  dropDoneCopyIns(Back, D);
  EventHandle Last = 0;
  for (const DeviceState::CopyMark &M : D.CopyInsPending)
    if (M.Event && M.Event != Last) {
      noteError(D, Back.streamWaitEvent(D.Device, Stream, M.Event));
      Last = M.Event;
    }
}

void detail::waitForCopyIns(Backend &Back, DeviceState &D, std::span<const uint32_t> Blocks,
                            StreamHandle Stream) {
  if (D.CopyInsPending.empty())
    return;
  dropDoneCopyIns(Back, D);
  EventHandle Last = 0;
  for (uint32_t B : Blocks) {
    if (B >= D.CopiedInWith.size() || !D.CopiedInWith[B])
      continue;
    if (EventHandle E = pendingCopyIn(D, D.CopiedInWith[B]); E && E != Last) {
      noteError(D, Back.streamWaitEvent(D.Device, Stream, E));
      Last = E;
    }
    D.CopiedInWith[B] = 0; // this stream has waited; later kernels on it follow
  }
}

namespace {
/// An event after what `Stream` holds so far, for the kernels that use
/// blocks marked with `Seq` (CopiedInWith) to wait for.
void recordCopyMark(Backend &Back, DeviceState &D, StreamHandle Stream, uint64_t Seq) {
  EventHandle E = takeSpareEvent(D.SpareEvents);
  if (ensureEvent(Back, D, E) && !Back.recordEvent(D.Device, E, Stream).ok())
    E = 0; // untracked: waited for by nothing (the error is counted)
  D.CopyInsPending.push_back({E, Seq});
}
} // namespace

void detail::splitPopulates(DeviceState &D, std::vector<MemRange> &Ranges,
                            std::vector<MemRange> &Populates) {
  Populates.clear();
  if (!D.CopyPath || D.Discarded.empty())
    return;
  const uint64_t BB = D.blockBytes();
  auto Populated = [&](uint64_t Address) {
    const uint64_t B = (Address - D.ArenaBase) / BB;
    return B < D.Discarded.size() && D.Discarded[B];
  };
  std::vector<MemRange> Rest;
  for (const MemRange &R : Ranges) {
    if (R.Address < D.ArenaBase) {
      Rest.push_back(R);
      continue;
    }
    for (uint64_t At = R.Address, End = R.Address + R.Bytes; At < End;) {
      const uint64_t Cut = std::min(End, D.ArenaBase + ((At - D.ArenaBase) / BB + 1) * BB);
      appendRange(Populated(At) ? Populates : Rest, At, Cut - At);
      At = Cut;
    }
  }
  Ranges = std::move(Rest);
}

void detail::awaitPrefetches(Backend &Back, DeviceState &D, std::span<const MemRange> Pages,
                             StreamHandle Stream) {
  if (Pages.empty())
    return;
  const uint64_t Seq = D.NextCopySeq++;
  for (const MemRange &R : Pages) {
    const auto [First, End] = blocksOverlapping(D, R, D.CopiedInWith.size());
    for (uint64_t B = First; B < End; ++B) {
      D.CopiedInWith[B] = Seq;
      D.Discarded[B] = 0;
    }
  }
  recordCopyMark(Back, D, Stream, Seq);
}

uint64_t detail::copyIn(Backend &Back, DeviceState &D, std::vector<uint32_t> &Blocks,
                        StreamHandle Stream) {
  if (Blocks.empty())
    return 0;
  const uint64_t BB = D.blockBytes();
  std::sort(Blocks.begin(), Blocks.end());
  Blocks.erase(std::unique(Blocks.begin(), Blocks.end()), Blocks.end());
  // After the release that took them off (copy and discard), still pending.
  std::vector<EventHandle> Waits;
  for (uint32_t B : Blocks)
    if (B < D.LeftWith.size() && D.LeftWith[B])
      if (const DeviceState::ReleaseMark *M = findPendingMark(D, D.LeftWith[B]);
          M && M->Event && std::find(Waits.begin(), Waits.end(), M->Event) == Waits.end())
        Waits.push_back(M->Event);
  for (EventHandle E : Waits)
    noteError(D, Back.streamWaitEvent(D.Device, Stream, E));
  // Populate first (the pages are discarded), so that the copy writes GPU
  // memory; a copy into managed memory is correct either way.
  std::vector<MemRange> Pages;
  for (uint32_t B : Blocks)
    if (MemRange P = pagesAround(D, {uint64_t{B} * BB, BB}); P.Bytes)
      appendRange(Pages, P.Address, P.Bytes);
  noteError(D, Back.prefetchBatch(D.Device, Pages, D.Device, Stream));
  // The plan's copies go on a stream of their own once the populates are
  // done, so that the prefetch stream's next populates do not queue behind
  // them (where a populate holds no copy engine, the two run at once). The
  // kernels wait for the copies themselves (their marks), new owners for
  // CopyInEvent, recorded after them. Where the event fails, the copies stay
  // on `Stream`, in order behind the populates.
  StreamHandle CopyStream = Stream;
  if (Stream == D.ActionStream && D.CopyInStream && ensureEvent(Back, D, D.PopulatedEvent)) {
    BackendStatus R = Back.recordEvent(D.Device, D.PopulatedEvent, Stream);
    noteError(D, R);
    if (R.ok()) {
      BackendStatus W = Back.streamWaitEvent(D.Device, D.CopyInStream, D.PopulatedEvent);
      noteError(D, W);
      if (W.ok())
        CopyStream = D.CopyInStream;
    }
  }
  const uint64_t Seq = D.NextCopySeq++;
  // What each block writes back, as copies of adjacent bytes in both the
  // arena and the pool: whole blocks, or with CopyTracksAllocations never
  // the bytes of a live allocation placed since the copy-out (the program
  // may have written them where no guard sees). On the prefetch and late
  // streams every new owner placed from now on waits for the copy-in
  // (CopyInEvent, recorded below under the same hold of AllocMu): the rest
  // of the block is written back whole. On a launch's stream nothing makes
  // a new owner wait: only the parts that allocations placed before the
  // copy-out still hold are written.
  const bool NewOwnersWait = Stream == D.ActionStream || Stream == D.LateStream;
  std::unique_lock<std::mutex> AllocLock(D.AllocMu, std::defer_lock);
  if (D.CopyTracksAllocations || NewOwnersWait)
    AllocLock.lock();
  std::vector<CopyRun> Runs;
  std::vector<MemRange> Parts;
  for (size_t K = 0; K < Blocks.size(); ++K) {
    const uint32_t B = Blocks[K];
    const uint64_t Slot = D.SlotOf[B] - 1;
    if (D.CopyTracksAllocations)
      heldParts(D, B, Parts, /*AllButNew=*/NewOwnersWait);
    else
      Parts.assign(1, MemRange{uint64_t{B} * BB, BB});
    for (const MemRange &P : Parts)
      addToRuns(Runs, P.Address, Slot + (P.Address - uint64_t{B} * BB), P.Bytes, K);
  }
  std::vector<uint8_t> Failed(Blocks.size(), 0);
  uint64_t Brought = 0;
  for (const CopyRun &Run : Runs) {
    BackendStatus S =
        Back.copyAsync(D.Device, reinterpret_cast<void *>(D.ArenaBase + Run.Arena),
                       reinterpret_cast<const void *>(D.PoolBase + Run.Pool), Run.Bytes,
                       CopyStream);
    noteError(D, S);
    if (S.ok())
      Brought += Run.Bytes;
    else // the slots keep the contents; the next restore tries again
      std::fill(Failed.begin() + static_cast<std::ptrdiff_t>(Run.First),
                Failed.begin() + static_cast<std::ptrdiff_t>(Run.Last) + 1, 1);
  }
  for (size_t K = 0; K < Blocks.size(); ++K) {
    if (Failed[K])
      continue;
    const uint32_t B = Blocks[K];
    D.SlotReadBy[releaseSlot(D, B)] = Seq;
    D.CopiedInWith[B] = Seq;
    D.Discarded[B] = 0; // its contents came back
    if (!D.Resident[B]) {
      D.Resident[B] = 1;
      D.ResidentBlocks.fetch_add(1);
    }
  }
  bump(D.C.CopyInBytes, Brought);
  recordCopyMark(Back, D, CopyStream, Seq);
  if (NewOwnersWait) {
    // New owners of these bytes (a free the plan did not foresee) wait for it.
    EventHandle &After = Stream == D.ActionStream ? D.CopyInEvent : D.CopyInLateEvent;
    if (ensureEvent(Back, D, After) && Back.recordEvent(D.Device, After, CopyStream).ok())
      D.CopyInsInFlight.fetch_add(1, std::memory_order_release);
  }
  if (AllocLock.owns_lock())
    AllocLock.unlock();
  const uint64_t Now = D.ResidentBlocks.load();
  if (Now > D.PeakResidentBlocks.load(std::memory_order_relaxed))
    D.PeakResidentBlocks.store(Now, std::memory_order_relaxed);
  return Brought;
}

void detail::restoreAllPooled(Backend &Back, DeviceState &D, StreamHandle Stream, bool Launch) {
  if (Launch)
    bump(D.C.BlindLaunches);
  dropFreedSlots(D);
  if (!D.PooledBlocks.load(std::memory_order_relaxed))
    return;
  std::vector<uint32_t> &All = D.CopyIns;
  All.clear();
  for (uint32_t B = 0; B < D.SlotOf.size(); ++B)
    if (D.SlotOf[B])
      All.push_back(B);
  enforceBudget(Back, D, All.size());
  bump(Launch ? D.C.GuardCopyInBytes : D.C.RestoreAllBytes, copyIn(Back, D, All, Stream));
}

} // namespace deepum::executor
