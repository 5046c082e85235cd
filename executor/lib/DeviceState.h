//===- DeviceState.h - One device's executor state (private) ----*- C++ -*-===//
//
// The state Executor keeps per device, shared by the files that do its jobs:
//
//   Executor.cpp       configuration, devices, loading and setting plans
//   Arena.cpp          allocation: plan placements in the arena, else the pool
//   Launches.cpp       the launch hook: plan cursor, resync, iteration marks
//   Actions.cpp        issuing the plan's actions (advice, prefetch, evict, discard)
//   CopyPath.cpp       copy-outs to the pinned pool and copy-ins from it
//   Budget.cpp         the capacity budget: Belady eviction of modelled residency
//   ExecutorStats.cpp  counters, the report and its JSON
//   Pool.cpp           the stream-ordered pool of managed memory (DevicePool)
//
// Locking rule, per device:
//
// - AllocMu guards the arena: Arena (live and freed ranges), AllocClocks,
//   NextSequence, CallAlign, AnyAllocation, DiscardEvent. Plan, ArenaBase, ArenaBytes and
//   ArenaMapped are written once, before HasPlan is published (or under both
//   locks in setPlan), and read without a lock after it.
// - LaunchMu guards the replay: Cursor, ActionStream, ReleaseStream,
//   DiscardStream, LateStream, EvictionsPending, DiscardsPending,
//   PendingReleaseBlocks, NextMarkSeq, LeftWith, SpareEvents, ComputeClocks,
//   Resident, NeededStamp, Stamp, Budget, Pending, CurrentPosition, the copy
//   path's ledger (SlotOf, SlotOwner, SlotReadBy, CopiedInWith,
//   CopyInsPending, CopyOutStream, CopyInStream, PopulatedEvent) and the scratch
//   vectors.
// - CopyOutEvent, CopyInEvent, CopyInLateEvent and FreedWhilePooled are
//   written with both held
//   (a new owner of arena bytes waits for the copy-ins in flight, as for the
//   discards; a free records what the ledger must drop).
// - Deferred (discards waiting for their range to be freed) is written with
//   both held.
// - Lock order: LaunchMu, then AllocMu (a discard checks the arena under
//   AllocMu while the hook holds LaunchMu). AllocMu is never held while
//   LaunchMu is taken.
// - Leaves: the pool's own mutex (DevicePool) and StatusMu (plan path and
//   why_not) are taken under either lock and take nothing themselves.
// - Lock-free: Counters, HasPlan, PlanOn, WrapPending, DiscardsInFlight,
//   ResidentBlocks and PeakResidentBlocks are atomics (the resident counts
//   are written under LaunchMu, read by reports without it).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_LIB_DEVICESTATE_H
#define DEEPUM_EXECUTOR_LIB_DEVICESTATE_H

#include "CallAlignment.h"

#include "deepum/executor/Executor.h"
#include "deepum/executor/Pool.h"

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace deepum::executor {

namespace detail {
template <typename T> void bump(std::atomic<T> &A, T V = 1) {
  A.fetch_add(V, std::memory_order_relaxed);
}

struct Counters {
  // PeakInUse: the most bytes the pool's live blocks and the arena's live
  // placements held together, taken at one time (an allocation), not the sum
  // of two peaks reached at different times.
  std::atomic<uint64_t> Allocations{0}, Frees{0}, ArenaBytesInUse{0}, ArenaPeak{0}, PeakInUse{0},
      ArenaPlacements{0}, PlacementMisses{0}, PrefetchBatches{0}, PrefetchBytes{0}, EvictBatches{0},
      EvictBytes{0}, DiscardBatches{0}, DiscardBytes{0}, DiscardsKeptLive{0}, Advises{0},
      AdviseBytes{0}, BudgetEvictions{0}, BackendErrors{0}, Launches{0}, GuardRestores{0},
      GuardRestoreBytes{0}, GuardWaits{0}, CopyOutBytes{0}, CopyInBytes{0}, CopyFallbackBytes{0},
      GuardCopyInBytes{0}, BlindLaunches{0}, RestoreAllBytes{0}, GuardWaitNs{0};
};

/// A byte range of the arena and who owns it. Freed ranges stay (until
/// overwritten) to remember the stream they were freed on: another stream may
/// reuse them only after an event recorded on that stream later has completed.
struct ArenaEntry {
  uint64_t End = 0;
  bool Live = false;
  StreamHandle Stream = 0;
  uint64_t FreeGeneration = 0; // the stream's event generation at the free
  uint64_t Placed = 0;         // DeviceState::PlaceSeq when it was placed
};

/// One event per stream, re-recorded as needed; a generation number says
/// which frees the latest record covers (everything before it on the stream).
struct StreamClock {
  StreamHandle Stream = 0;
  EventHandle Event = 0;
  uint64_t Generation = 0; // records made so far
  bool Dirty = false;      // launches since the last record
};
} // namespace detail

struct Executor::DeviceState {
  using Counters = detail::Counters;
  using ArenaEntry = detail::ArenaEntry;
  using StreamClock = detail::StreamClock;

  DeviceState(Backend &B, int Dev) : Device(Dev), Pool(B, Dev) {}
  const int Device;
  DevicePool Pool;
  Counters C;

  // --- guarded by AllocMu ---
  std::mutex AllocMu;
  std::shared_ptr<const CompiledPlan> Plan; // immutable once set
  std::atomic<bool> HasPlan{false};         // Plan is set (read without AllocMu)
  uintptr_t ArenaBase = 0;
  uint64_t ArenaBytes = 0;
  uint64_t ArenaMapped = 0; // ArenaBytes rounded up to kManagedPageBytes (what was allocated)
  std::map<uint64_t, ArenaEntry> Arena;
  uint64_t PlaceSeq = 0; // placements in the arena so far (ArenaEntry::Placed)
  std::vector<StreamClock> AllocClocks;
  uint32_t NextSequence = 0;
  detail::CallAlignment CallAlign; // live allocation calls against the profiled ones
  bool AnyAllocation = false;
  std::atomic<bool> WrapPending{false};
  std::atomic<uint64_t> DiscardsInFlight{
      0};                       // discards issued, DiscardEvent not yet seen complete
  EventHandle DiscardEvent = 0; // recorded on the discard stream after the latest discard
  std::atomic<uint64_t> CopyOutsInFlight{0}; // as DiscardsInFlight, for CopyOutEvent
  EventHandle CopyOutEvent = 0; // recorded on CopyOutStream after the latest copy-out's discard
  std::atomic<uint64_t> CopyInsInFlight{0}; // as DiscardsInFlight, for the two below
  EventHandle CopyInEvent = 0;     // recorded on CopyInStream after the latest copy-in there
  EventHandle CopyInLateEvent = 0; // the same on LateStream
  /// Arena ranges freed while blocks were in the pool: the ledger drops
  /// their slots before it next looks at one (their contents are dead).
  std::vector<MemRange> FreedWhilePooled;

  // --- guarded by LaunchMu ---
  std::mutex LaunchMu;
  std::optional<PlanCursor> Cursor;
  std::atomic<bool> PlanOn{false};
  // Separate streams for prefetches and releases, like the plan's copy
  // engines, so a release waiting for the compute stream never holds back a
  // later prefetch. A prefetch waits for releases only as far as it needs
  // their room (waitForRoom): each release call is marked with an event and
  // the blocks it takes off the GPU, and a prefetch call waits for the oldest
  // marks until the blocks still leaving fit under the budget beside
  // everything resident, its own blocks included.
  // Discards have a stream of their own: behind write-backs that move at a
  // fifth of the fetch rate (an H100, docs/results/gpu.md) the room a discard
  // frees at once would come late.
  StreamHandle ActionStream = 0;  // prefetches (host to device)
  StreamHandle ReleaseStream = 0; // evictions
  StreamHandle DiscardStream = 0; // discards
  StreamHandle LateStream = 0;    // prefetches of blocks whose own release is pending
  struct ReleaseMark {
    EventHandle Event; // recorded on its stream after the batch (0: none could be)
    uint64_t Blocks;   // blocks the batch took off the GPU
    uint64_t Seq;      // issue order over both streams (from 1)
  };
  // Each in issue order, one stream's each: evictions, discards, and the
  // copy path's copy-outs with their discards (CopyOutStream).
  std::deque<ReleaseMark> EvictionsPending, DiscardsPending, CopiesPending;
  uint64_t PendingReleaseBlocks = 0;    // their blocks
  uint64_t NextMarkSeq = 1;
  /// Per arena block, the mark of the release that last took it off the GPU
  /// (0: none): a prefetch of it goes on the late stream after that mark while
  /// it is pending, whatever the room (migrations on two streams are not
  /// ordered).
  std::vector<uint64_t> LeftWith;
  std::vector<uint32_t> Leaving;        // scratch: blocks of the release being marked
  std::vector<EventHandle> SpareEvents; // marks' events, free for reuse
  /// The guard's waits being timed (Actions.cpp, GuardTimer): events
  /// recorded on a launch's stream before and after what the launch waits
  /// for, read once complete into C.GuardWaitNs.
  struct GuardTiming {
    EventHandle Start, End;
  };
  std::deque<GuardTiming> GuardTimings;
  std::vector<EventHandle> SpareTimedEvents;
  std::vector<StreamClock> ComputeClocks;
  std::vector<uint8_t> Resident;
  std::vector<uint64_t> NeededStamp;
  uint64_t Stamp = 0;
  /// Per arena block, the position of its next use (past the plan's length:
  /// the next iteration; ~0: never used), as found by the budget's last scan
  /// in epoch NextUseEpoch[B] (Budget.cpp). Within an epoch the position
  /// only moves forward, so an entry stays right until the position reaches it.
  std::vector<uint64_t> NextUseAt;
  std::vector<uint32_t> NextUseEpoch;
  uint32_t UseEpoch = 1;
  uint32_t LastScanPosition = 0;
  std::vector<std::pair<uint64_t, uint32_t>> Victims; // scratch of the budget's scan
  std::atomic<uint64_t> ResidentBlocks{0};
  std::atomic<uint64_t> PeakResidentBlocks{0}; // written under LaunchMu
  uint64_t Budget = 0;
  struct PendingAfter {
    uint32_t Position;
    std::thread::id Thread;
  };
  std::vector<PendingAfter> Pending;
  struct DeferredDiscard {
    MemRange Range;    // arena offsets
    uint64_t Deadline; // launch count after which it becomes an eviction
  };
  std::vector<DeferredDiscard> Deferred; // written under LaunchMu and AllocMu
  /// When Deferred needs a look again (launchEnd): a free since the frees
  /// counted at the last look (C.Frees), or the launch count reaching the
  /// first deadline. Until then every range in it is still live.
  uint64_t DeferredFreesSeen = 0;
  uint64_t DeferredDue = ~uint64_t{0};
  std::vector<MemRange> Ranges;          // scratch
  std::vector<uint32_t> Blocks;          // scratch
  /// One prefetch range of a position (issueBefore's scratch).
  struct PrefetchRange {
    MemRange Pages;      // page-rounded addresses
    MemRange Arena;      // arena offsets
    uint64_t Blocks = 0; // blocks it brings that were not resident
    bool DueNow = false; // its kernel is the position's own
    bool Copy = false;   // pooled blocks: copied back (the copy path)
    bool Continues = false; // the next piece of the plan range before it
  };
  std::vector<PrefetchRange> Prefetches; // scratch: a position's prefetch ranges
  std::vector<MemRange> LatePiece;       // scratch: ranges for the late stream
  std::vector<EventHandle> LateWaits;    // scratch: the marks they wait for
  std::vector<MemRange> Piece;           // scratch: one prefetch call's ranges
  std::vector<MemRange> PopulatePiece;   // scratch: its populates (the copy path)
  /// ExecutorConfig::KernelsWaitForTheirPrefetches, and the events the
  /// launching stream waits for (on the prefetch and late streams).
  bool KernelsWaitForTheirPrefetches = false;
  /// ExecutorConfig::LaunchGuard.
  bool LaunchGuard = true;

  // --- the copy path (CopyPath.cpp): guarded by LaunchMu ---
  /// The pool is allocated and every launch's arguments reach the guard:
  /// COPY_OUT copies out. Otherwise COPY_OUT evicts through Unified Memory.
  bool CopyPath = false;
  /// ExecutorConfig::CopyTracksAllocations.
  bool CopyTracksAllocations = true;
  uintptr_t PoolBase = 0;
  uint64_t PoolBytes = 0;
  /// Per arena block: its pool offset + 1 while its contents are only in the
  /// pool (0: not in the pool).
  std::vector<uint64_t> SlotOf;
  /// Per arena block in the pool: PlaceSeq + 1 at its copy-out. A copy-in
  /// writes back the bytes of allocations placed before it (ArenaEntry::Placed
  /// below it) and still live, with CopyTracksAllocations. Written and read
  /// with both locks held.
  std::vector<uint64_t> SlotSince;
  /// Per pool block: the arena block + 1 whose contents it holds (0: free).
  std::vector<uint32_t> SlotOwner;
  /// Per pool block: the copy-in mark that last read it (a copy-out into it
  /// waits for that mark).
  std::vector<uint64_t> SlotReadBy;
  /// Per arena block: the copy-in mark that brought it back, until a kernel
  /// using it has waited for it (0: none).
  std::vector<uint64_t> CopiedInWith;
  /// Per arena block: discarded by libdeepum since it last left otherwise or
  /// came back (its next prefetch is a populate, which kernels wait for).
  std::vector<uint8_t> Discarded;
  struct CopyMark {
    EventHandle Event; // recorded after the copy-in batch (0: none could be)
    uint64_t Seq;
  };
  std::deque<CopyMark> CopyInsPending; // in Seq order
  uint64_t NextCopySeq = 1;
  std::atomic<uint64_t> PooledBlocks{0}; // written under LaunchMu
  std::atomic<uint64_t> PeakPooledBlocks{0};
  StreamHandle CopyOutStream = 0; // copy-outs and their discards, after the compute streams
  // The copies of the plan's copy-ins, each after its populate on
  // ActionStream (PopulatedEvent): the next populates do not wait for them.
  StreamHandle CopyInStream = 0;
  EventHandle PopulatedEvent = 0;
  std::vector<uint32_t> CopyIns;  // scratch: pooled blocks a position brings back
  EventHandle DueEvent = 0, DueLateEvent = 0;
  uint32_t CurrentPosition = 0;
  std::atomic<bool> ErrorLogged{false};

  // --- guarded by StatusMu (read by reports) ---
  mutable std::mutex StatusMu;
  std::string PlanPath; // the plan configured or set (empty: none)
  std::string WhyNot;   // the first reason the plan is not replayed (empty: none known)

  void setPath(std::string Path) {
    std::lock_guard<std::mutex> Lock(StatusMu);
    PlanPath = std::move(Path);
  }
  /// Keeps the first reason: later ones follow from it.
  void setWhyNot(std::string Why) {
    std::lock_guard<std::mutex> Lock(StatusMu);
    if (WhyNot.empty())
      WhyNot = std::move(Why);
  }

  uint64_t blockBytes() const { return Plan ? Plan->UmBlockBytes : uint64_t{2} << 20; }
};

namespace detail {
using DeviceState = Executor::DeviceState;

// Arena.cpp
/// The clock of stream `S` in `Clocks`, added when new.
StreamClock &clockFor(std::vector<StreamClock> &Clocks, StreamHandle S);

// Actions.cpp
/// Counts a failed backend call and logs the first.
void noteError(DeviceState &D, const BackendStatus &S);
/// An event of `Spares` (SpareEvents, SpareTimedEvents) free for reuse, taken
/// out of it (0: none; the caller makes one).
EventHandle takeSpareEvent(std::vector<EventHandle> &Spares);
/// Creates event `E` when it is 0 (a failure counted, `E` left 0); whether
/// there is one.
bool ensureEvent(Backend &Back, DeviceState &D, EventHandle &E);
uint64_t rangeBytes(const std::vector<MemRange> &Rs);
/// The address range of arena range `R` for a prefetch or an eviction: every
/// page it touches, within the arena's allocation.
MemRange pagesAround(const DeviceState &D, const MemRange &R);
/// The arena blocks [first, end) that address range `Pages` (in the arena)
/// overlaps, end at most `Limit`.
std::pair<uint64_t, uint64_t> blocksOverlapping(const DeviceState &D, const MemRange &Pages,
                                                uint64_t Limit);
/// Orders the release and discard streams after the compute streams that
/// launched since.
void orderAfterCompute(Backend &Back, DeviceState &D);
/// Marks a release batch just issued on `Stream` (the release or the discard
/// stream) that took the blocks in D.Leaving off the GPU (waitForRoom's
/// ledger; each block remembers the mark). Drops the marks the host already
/// sees complete. LaunchMu held.
void markRelease(Backend &Back, DeviceState &D, StreamHandle Stream);
/// The release mark `Seq` while it is pending, else null.
const DeviceState::ReleaseMark *findPendingMark(const DeviceState &D, uint64_t Seq);
/// The resident blocks arena range `R` wholly covers leave the ledger with
/// the release call being built (D.Leaving). LaunchMu held.
void markGone(DeviceState &D, const MemRange &R);
/// Evicts a range (page-rounded, in arena offsets) as part of the calls
/// being built in D.Ranges / D.Leaving: its wholly covered resident blocks
/// leave the ledger; a call goes out, with its mark, whenever it holds
/// format::kEvictionCallBlocks of them, so that a prefetch waiting for room
/// waits only for the calls that make it. `Budget`: counted as the budget's.
/// flushEvictions sends the last call. LaunchMu held.
void evictInCalls(Backend &Back, DeviceState &D, MemRange R, bool Budget);
void flushEvictions(Backend &Back, DeviceState &D, bool Budget);
/// Makes the prefetch stream wait for release marks, oldest first, until the
/// blocks still leaving fit under the budget beside `Occupied` blocks (those
/// resident and those the next prefetch call brings). Marks whose events the
/// host sees complete are dropped without a wait. Without a budget it waits
/// for every release. LaunchMu held.
void waitForRoom(Backend &Back, DeviceState &D, uint64_t Occupied);
/// Advice, releases of earlier data and prefetches of one position, before
/// its launch runs. LaunchMu held.
/// The actions before the launch at Pos; `Launch`, the stream it is enqueued
/// on when Pos is the launch itself (none for a position the program skipped).
void issueBefore(Backend &Back, DeviceState &D, uint32_t Pos,
                 std::optional<StreamHandle> Launch = std::nullopt);
/// A range to copy out and the pool offset of its slot.
struct CopyOutRange {
  MemRange Arena;
  uint64_t PoolOffset;
};
/// Evictions, copy-outs and discards (arena ranges); takes AllocMu. LaunchMu held.
void issueRanges(Backend &Back, DeviceState &D, std::vector<MemRange> Evict,
                 const std::vector<MemRange> &DiscardIn,
                 const std::vector<CopyOutRange> &CopyOut = {});
/// Evictions and discards of one list (ReleaseBefore or AfterLaunch of a position).
void issueReleases(Backend &Back, DeviceState &D, const std::vector<PlanAction> &Actions);

/// The launch-time guard: the arena blocks of the live allocations `Words`
/// point into that are not resident in the model (the plan evicted them, or
/// never brought them) are brought back on the launch's own stream, after any
/// release of them still in flight, so the kernel waits for them instead of
/// faulting. LaunchMu held; takes AllocMu.
void guardLaunch(Backend &Back, DeviceState &D, StreamHandle Launch,
                 std::span<const uint64_t> Words);
/// Adds the guard's completed timed waits to C.GuardWaitNs. LaunchMu held.
void collectGuardTimings(Backend &Back, DeviceState &D);

// CopyPath.cpp
/// Sets up the copy path for a plan with a pool (LaunchMu and AllocMu held,
/// the arena allocated): the pinned pool, the ledger, the streams; false,
/// with one line said, when any cannot be had: then COPY_OUT evicts.
bool setUpCopyPath(Backend &Back, DeviceState &D, bool ReportsArguments);
/// Drops the slots of blocks whose contents died with the ranges freed
/// since: those wholly inside a freed range and, with CopyTracksAllocations,
/// those no allocation placed before their copy-out still holds. Takes
/// AllocMu. LaunchMu held.
void dropFreedSlots(DeviceState &D);
/// Drops the slot of block `B` (contents dead). LaunchMu held.
void dropSlot(DeviceState &D, uint32_t B);
/// Chooses which of `Ranges` (whole blocks) copy out now: blocks resident in
/// the model, not in the pool, whose slot is free and, with
/// CopyTracksAllocations, holding a live allocation. The others join
/// `Evict`. AllocMu and LaunchMu held.
std::vector<CopyOutRange> chooseCopyOuts(DeviceState &D, const std::vector<CopyOutRange> &Ranges,
                                         std::vector<MemRange> &Evict);
/// Issues the copies of `Chosen` on the copy-out stream (after the copy-ins
/// that last read their slots); the blocks copied take their slots and leave
/// the ledger (D.Leaving); a failed copy's blocks join `Evict`. Returns the
/// blocks' whole pages, for the discard that follows on the copy-out stream,
/// after the copies. LaunchMu held.
std::vector<MemRange> issueCopyOuts(Backend &Back, DeviceState &D,
                                    std::span<const CopyOutRange> Chosen,
                                    std::vector<MemRange> &Evict);
/// Copies pooled blocks `Blocks` back on `Stream` (populate, then copy),
/// after the releases of them still pending; they become resident in the
/// model (the caller made the room). With CopyTracksAllocations only the
/// bytes of allocations placed before the copy-out and still live are
/// written back (AllocMu taken). On the prefetch or late stream, new
/// owners of arena bytes wait for it (CopyInEvent, CopyInLateEvent). Returns
/// the bytes copied back (a failed copy leaves its blocks in the pool).
/// LaunchMu held.
uint64_t copyIn(Backend &Back, DeviceState &D, std::vector<uint32_t> &Blocks, StreamHandle Stream);
/// On the copy path a populate (the prefetch of a block libdeepum
/// discarded) is a dependency, as a copy-in is: moves the populated blocks'
/// runs of `Ranges` (arena addresses) to `Populates`, for a call of their own
/// that the next kernel using one of them waits for (awaitPrefetches). A
/// populate of dead contents is then never faulted on before it lands (on an
/// H100 that costs the driver 4 ms a block, docs/planner.md). LaunchMu held.
void splitPopulates(DeviceState &D, std::vector<MemRange> &Ranges,
                    std::vector<MemRange> &Populates);
/// The populates `Pages` were just issued on `Stream`: the next kernel using
/// one of their blocks waits for what `Stream` holds so far. LaunchMu held.
void awaitPrefetches(Backend &Back, DeviceState &D, std::span<const MemRange> Pages,
                     StreamHandle Stream);
/// Makes `Stream` wait for every copy-in (and awaited prefetch) not known
/// complete: a launch that may touch anything. LaunchMu held.
void waitForAllCopyIns(Backend &Back, DeviceState &D, StreamHandle Stream);
/// Makes `Stream` wait for the copy-ins (and awaited prefetches) that
/// brought back any of `Blocks` and are not known complete. LaunchMu held.
void waitForCopyIns(Backend &Back, DeviceState &D, std::span<const uint32_t> Blocks,
                    StreamHandle Stream);
/// Every pooled block comes back on `Stream`: before a launch whose
/// arguments are unknown (`Launch`, counted as blind), before the host
/// synchronizes the device, or as the plan turns off. LaunchMu held.
void restoreAllPooled(Backend &Back, DeviceState &D, StreamHandle Stream, bool Launch);

// Budget.cpp
/// Keeps modelled residency + `Incoming` blocks under the budget. LaunchMu held.
void enforceBudget(Backend &Back, DeviceState &D, uint64_t Incoming);
} // namespace detail

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_LIB_DEVICESTATE_H
