//===- Engine.cpp - One GPU under Unified Memory, step by step -------------===//
#include "deepum/sim/Engine.h"

#include "deepum/format/Format.h"
#include "deepum/format/Units.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <bit>
#include <cassert>
#include <cmath>
#include <limits>

using namespace deepum::sim;
using deepum::format::kUmBlockBytes;

namespace {
constexpr uint64_t Never = std::numeric_limits<uint64_t>::max();
constexpr uint32_t AllPages = 0xffffffffu;
// Advice flags kept per block.
constexpr uint8_t FlReadMostly = 1;
constexpr uint8_t FlPreferDevice = 2;
constexpr uint8_t FlThrottled = 4;
constexpr uint8_t FlPrefetched = 8; // explicitly prefetched, not yet used by a kernel
// Trace lanes.
constexpr int Pid = 1;
constexpr int TidCompute = 1, TidHtoD = 2, TidDtoH = 3, TidFaults = 4, TidHost = 5, TidDiscards = 6,
              TidPopulates = 7;

unsigned pages(uint32_t Mask) { return static_cast<unsigned>(std::popcount(Mask)); }
bool writes(Access A) { return A != Access::Read; }
} // namespace

Engine::Engine(const DeviceModel &D, uint64_t CapacityBytes)
    : Device(D), CapacityPages(CapacityBytes / PageBytes),
      // Several engines per direction share the link: each runs at its share.
      NsPerByte(1e9 * std::max(1u, D.CopyEnginesPerDirection) /
                std::max(D.LinkBytesPerSecond, 1.0)),
      NsPerByteDtoH(1e9 * std::max(1u, D.CopyEnginesPerDirection) /
                    std::max(D.deviceToHostBytesPerSecond(), 1.0)),
      NsPerByteCopyHtoD(1e9 * std::max(1u, D.CopyEnginesPerDirection) /
                        std::max(D.copyHostToDeviceBytesPerSecond(), 1.0)),
      NsPerByteCopyDtoH(1e9 * std::max(1u, D.CopyEnginesPerDirection) /
                        std::max(D.copyDeviceToHostBytesPerSecond(), 1.0)),

      HtoDFree(std::max(1u, D.CopyEnginesPerDirection), 0),
      DtoHFree(std::max(1u, D.CopyEnginesPerDirection), 0),
      CopyHtoDFree(std::max(1u, D.CopyEnginesPerDirection), 0),
      CopyDtoHFree(std::max(1u, D.CopyEnginesPerDirection), 0),
      HtoDQueue(std::max(1u, D.CopyEnginesPerDirection)),
      HtoDRetiredEnd(std::max(1u, D.CopyEnginesPerDirection), 0) {}

uint32_t Engine::blockId(uint64_t UmBlock) {
  auto [It, New] = Ids.try_emplace(UmBlock, static_cast<uint32_t>(Resident.size()));
  if (New) {
    UmBlockOf.push_back(UmBlock);
    Resident.push_back(0);
    // Everything starts on the host with valid contents: the state after the
    // model was built and its first iteration touched every tensor.
    HostValid.push_back(AllPages);
    Valid.push_back(AllPages);
    Pinned.push_back(0);
    Protect.push_back(0);
    ProtectRank.push_back(0);
    ArrivalNs.push_back(0);
    PageArrivalNs.resize(PageArrivalNs.size() + PagesPerBlock, 0);
    BusyUntilNs.push_back(0);
    LastEvictNs.push_back(Never);
    HostReadyNs.push_back(0);
    ThrashCount.push_back(0);
    Flags.push_back(0);
    Populating.push_back(0);
    Awaited.push_back(0);
    LrmPrev.push_back(-1);
    LrmNext.push_back(-1);
  }
  return It->second;
}

uint64_t Engine::transferNs(uint64_t Bytes) const {
  return static_cast<uint64_t>(std::llround(static_cast<double>(Bytes) * NsPerByte));
}

uint64_t Engine::transferDtoHNs(uint64_t Bytes) const {
  return static_cast<uint64_t>(std::llround(static_cast<double>(Bytes) * NsPerByteDtoH));
}

uint64_t Engine::startOnLane(std::vector<uint64_t> &Lane, uint64_t AtNs, uint64_t DurNs,
                             uint64_t &EndNs) {
  // The engine that frees first takes the copy (one per direction by default).
  auto It = std::min_element(Lane.begin(), Lane.end());
  uint64_t Start = std::max(*It, AtNs);
  EndNs = Start + DurNs;
  *It = EndNs;
  return Start;
}

void Engine::retireHtoD() {
  // No fault is ready before the host's current time: what ended by then can
  // no longer be overtaken.
  for (size_t L = 0; L < HtoDQueue.size(); ++L) {
    std::deque<HtoDItem> &Q = HtoDQueue[L];
    while (!Q.empty() && Q.front().EndNs <= IssueNs) {
      HtoDRetiredEnd[L] = std::max(HtoDRetiredEnd[L], Q.front().EndNs);
      Q.pop_front();
    }
  }
}

uint64_t Engine::startFaultHtoD(uint64_t AtNs, uint64_t DurNs, uint64_t &EndNs) {
  // The driver services faults ahead of prefetch work it has queued: a
  // prefetch whose copy has not started by AtNs yields. Running copies and
  // earlier fault work are not interrupted. On each engine the queue ends
  // with the prefetches that have not started by AtNs; the fault goes before
  // them, on the engine where it starts first.
  retireHtoD();
  size_t BestLane = 0, BestAt = 0;
  uint64_t BestStart = Never;
  for (size_t L = 0; L < HtoDQueue.size(); ++L) {
    const std::deque<HtoDItem> &Q = HtoDQueue[L];
    size_t At = Q.size();
    while (At > 0 && Q[At - 1].Prefetch && Q[At - 1].StartNs > AtNs)
      --At;
    uint64_t Free = HtoDRetiredEnd[L];
    for (size_t I = 0; I < At; ++I)
      Free = std::max(Free, Q[I].EndNs);
    uint64_t Start = std::max(Free, AtNs);
    if (Start < BestStart) {
      BestStart = Start;
      BestLane = L;
      BestAt = At;
    }
  }
  std::deque<HtoDItem> &Q = HtoDQueue[BestLane];
  EndNs = BestStart + DurNs;
  Q.insert(Q.begin() + static_cast<std::ptrdiff_t>(BestAt),
           HtoDItem{BestStart, EndNs, 0, 0, /*Prefetch=*/false, -1});
  // The prefetches behind it move back as far as they overlap it (a gap
  // before one absorbs the delay); their pages arrive that much later.
  uint64_t T = EndNs;
  for (size_t J = BestAt + 1; J < Q.size() && Q[J].StartNs < T; ++J) {
    HtoDItem &It = Q[J];
    assert(It.Prefetch && "only queued prefetches yield");
    const uint64_t OldEnd = It.EndNs;
    It.EndNs += T - It.StartNs;
    It.StartNs = T;
    T = It.EndNs;
    ++Stats.PrefetchesYielded;
    bool Moved = false;
    for (uint32_t M = It.Mask & Resident[It.Block]; M; M &= M - 1) {
      uint64_t &Arr = PageArrivalNs[uint64_t{It.Block} * PagesPerBlock +
                                    static_cast<unsigned>(std::countr_zero(M))];
      if (Arr == OldEnd) {
        Arr = It.EndNs;
        Moved = true;
      }
    }
    if (Moved)
      ArrivalNs[It.Block] = std::max(ArrivalNs[It.Block], It.EndNs);
    if (Events && It.Event >= 0) {
      (*Events)[static_cast<size_t>(It.Event)].StartNs = It.StartNs;
      (*Events)[static_cast<size_t>(It.Event)].EndNs = It.EndNs;
    }
  }
  HtoDFree[BestLane] = std::max(HtoDFree[BestLane], Q.back().EndNs);
  return BestStart;
}

void Engine::lrmRemove(uint32_t B) {
  int32_t P = LrmPrev[B], N = LrmNext[B];
  (P >= 0 ? LrmNext[P] : LrmHead) = N;
  (N >= 0 ? LrmPrev[N] : LrmTail) = P;
  LrmPrev[B] = LrmNext[B] = -1;
}

void Engine::lrmPushBack(uint32_t B) {
  LrmPrev[B] = LrmTail;
  LrmNext[B] = -1;
  (LrmTail >= 0 ? LrmNext[LrmTail] : LrmHead) = static_cast<int32_t>(B);
  LrmTail = static_cast<int32_t>(B);
}

void Engine::notePeak() {
  uint64_t Used = (ResidentPages + PendingPages) * PageBytes;
  Stats.PeakResidentBytes = std::max(Stats.PeakResidentBytes, Used);
  if (ResidentPages + PendingPages > CapacityPages)
    ++Stats.InvariantViolations;
}

void Engine::counterEvent(uint64_t AtNs) {
  if (Timeline)
    Timeline->counter(Pid, "GPU memory", "resident (MiB)", AtNs,
                      deepum::format::toMiB(static_cast<double>(residentBytes())));
}

uint64_t Engine::pageAddress(uint32_t B, uint32_t Page) const {
  const uint64_t Block = B < UmBlockOf.size() ? UmBlockOf[B] : B;
  return Block * PagesPerBlock * PageBytes + uint64_t{Page} * PageBytes;
}

void Engine::logEvent(UmEvent::Kind K, UmEvent::Cause C, uint32_t B, uint32_t Mask, uint64_t Bytes,
                      uint64_t StartNs, uint64_t EndNs, Access Mode) {
  UmEvent E;
  E.Type = K;
  E.Why = C;
  E.Mode = Mode;
  E.Address = pageAddress(B, Mask ? static_cast<uint32_t>(std::countr_zero(Mask)) : 0);
  E.Bytes = Bytes;
  E.StartNs = StartNs;
  E.EndNs = EndNs;
  Events->push_back(E);
}

void Engine::evict(uint32_t B, uint32_t Mask, uint64_t AtNs, UmEvent::Cause Why, bool Copy) {
  uint32_t Out = Mask & Resident[B];
  if (!Out)
    return;
  // Dirty: the GPU holds the only current copy. Read-mostly pages keep their
  // host duplicate, so unwritten ones are never dirty.
  // (With eviction_copies_clean, only read-mostly duplicates are dropped.)
  // An explicit copy skips pages whose pinned copy is still current (a
  // tensor read since it was copied in): the swapping system knows it is
  // unchanged, as the driver does not.
  uint32_t Clean =
      Copy || !Device.EvictionCopiesClean || (Flags[B] & FlReadMostly) ? HostValid[B] : 0;
  uint32_t Dirty = Out & ~Clean;
  Dirty &= Valid[B]; // pages with no contents (discarded) need no copy
  // Never before the last kernel using the block ends or its pages arrive.
  uint64_t Ready = std::max({AtNs, BusyUntilNs[B], ArrivalNs[B]});
  if (CheckInvariants && Ready < BusyUntilNs[B])
    ++Stats.InvariantViolations;
  uint64_t Done = Ready;
  if (Dirty) {
    uint64_t Bytes = pages(Dirty) * PageBytes;
    const uint64_t Ns =
        Copy ? static_cast<uint64_t>(std::llround(static_cast<double>(Bytes) * NsPerByteCopyDtoH))
             : transferDtoHNs(Bytes);
    uint64_t Start = startOnLane(Copy ? copyLane(false) : DtoHFree, Ready, Ns, Done);
    HostReadyNs[B] = std::max(HostReadyNs[B], Done);
    Stats.BytesDtoH += Bytes;
    if (Copy)
      Stats.BytesCopiedOut += Bytes;
    // A copy is no migration: CUPTI's Unified Memory counters do not see it.
    if (Events && !Copy)
      logEvent(UmEvent::Kind::MigrationDtoH, Why, B, Dirty, Bytes, Start, Done);
    if (Timeline)
      Timeline->span(Pid, TidDtoH, Copy ? "copy out" : "evict", "dtoh", Start, Done - Start,
                     llvm::json::Object{{"block", static_cast<int64_t>(B)},
                                        {"bytes", static_cast<int64_t>(Bytes)}});
  }
  HostValid[B] |= Out & Valid[B];
  Resident[B] &= ~Out;
  residencyChanged(B);
  ResidentPages -= pages(Out);
  PendingFree.push({Done, pages(Out)});
  PendingPages += pages(Out);
  LastEvictNs[B] = Ready;
  if (!Resident[B]) {
    lrmRemove(B);
    ++Stats.Evictions;
    Flags[B] &= static_cast<uint8_t>(~FlPrefetched);
  }
  counterEvent(Done);
}

uint64_t Engine::makeRoom(uint64_t Need, uint64_t AtNs, int64_t ProtectUpTo) {
  if (Need > CapacityPages)
    return Never;
  uint64_t RoomNs = AtNs;
  // Evictions already finished by AtNs have given their memory back.
  while (!PendingFree.empty() && PendingFree.top().first <= AtNs) {
    PendingPages -= PendingFree.top().second;
    PendingFree.pop();
  }
  auto Free = [&] { return CapacityPages - ResidentPages - PendingPages; };
  // Choose victims first (so a failed protected prefetch evicts nothing), then
  // evict them: least recently migrated first; blocks the current kernel pins
  // are never chosen, preferred-location-device blocks only as a last resort.
  if (Free() + PendingPages < Need) {
    uint64_t Short = Need - Free() - PendingPages, Found = 0;
    std::vector<uint32_t> &Victims = VictimScratch;
    Victims.clear();
    // Pass 0: blocks nobody protects; 1: protected ones needed later than
    // the block being fetched; 2: preferred-location-device blocks.
    for (int Pass = 0; Pass < 3 && Found < Short; ++Pass)
      for (int32_t B = LrmHead; B >= 0 && Found < Short; B = LrmNext[B]) {
        if (Pinned[B] == KernelSeq)
          continue;
        bool Preferred = (Flags[B] & FlPreferDevice) != 0;
        bool Protected = ProtectUpTo >= 0 && Protect[B] == ProtectEpoch;
        if (Protected && ProtectRank[B] <= ProtectUpTo)
          continue;
        if ((Pass == 2) != Preferred || (!Preferred && (Pass == 1) != Protected))
          continue;
        Victims.push_back(static_cast<uint32_t>(B));
        Found += pages(Resident[B]);
      }
    if (Found < Short)
      return Never;
    for (uint32_t B : Victims)
      evict(B, AllPages, AtNs);
  }
  // Wait for write-backs in completion order until the room is there. What
  // the last one frees beyond the need stays pending until it ends: a later
  // request may not take it earlier.
  while (Free() < Need) {
    assert(!PendingFree.empty() && "room was accounted above");
    RoomNs = std::max(RoomNs, PendingFree.top().first);
    PendingPages -= PendingFree.top().second;
    PendingFree.pop();
    if (Free() > Need) {
      const uint64_t Left = Free() - Need;
      PendingFree.push({RoomNs, Left});
      PendingPages += Left;
    }
  }
  return RoomNs;
}

uint64_t Engine::fetch(uint32_t B, uint32_t Mask, uint64_t AtNs, uint64_t RoomNs, Cause C) {
  assert(!(Mask & Resident[B]) && "fetching resident pages");
  // Only pages whose contents live on the host cross the link; the rest
  // (never written, discarded) are populated on the GPU.
  uint32_t Copy = Mask & HostValid[B] & Valid[B];
  uint64_t Bytes = pages(Copy) * PageBytes;
  // Contents still being written back come back once they have reached the
  // host (a demand fault on them waits for the eviction in the driver; a
  // prefetch is issued after it by libdeepum).
  uint64_t Ready = std::max({AtNs, RoomNs, Copy ? HostReadyNs[B] : uint64_t{0}}), Done = Ready;
  // Discarded pages cost the driver time of their own to map again: on the
  // copy stream for a prefetch (a populate), added to the service of a
  // demand fault (Device.PopulateBlockUs, DiscardedFaultBlockUs; zero where
  // unmeasured).
  // Pool memory (an explicit copy's destination) is the pool's: no driver
  // work to map it.
  const uint32_t Discarded = C == Cause::Copy ? 0u : Mask & ~Valid[B];
  const double EmptyUs = Discarded ? (C == Cause::User ? Device.PopulateBlockUs
                                                        : Device.DiscardedFaultBlockUs) *
                                         pages(Discarded) / PagesPerBlock
                                   : 0.0;
  const uint64_t EmptyNs = static_cast<uint64_t>(std::llround(EmptyUs * 1e3));
  Populating[B] = (Populating[B] & ~Mask) | (C == Cause::User ? Discarded : 0u);
  Awaited[B] &= ~Mask; // a new populate: awaited once a wait says so
  if (C == Cause::Copy && Bytes) {
    // One cudaMemcpyAsync on the copy stream, FIFO behind what was issued on
    // those engines before it; it never yields to a fault's migration.
    std::vector<uint64_t> &Lane = copyLane(true);
    const size_t L = static_cast<size_t>(std::min_element(Lane.begin(), Lane.end()) - Lane.begin());
    if (Device.CopiesShareUmEngines)
      retireHtoD();
    uint64_t Start = startOnLane(
        Lane, Ready,
        static_cast<uint64_t>(std::llround(static_cast<double>(Bytes) * NsPerByteCopyHtoD)), Done);
    if (Device.CopiesShareUmEngines)
      HtoDQueue[L].push_back(HtoDItem{Start, Done, B, Mask, /*Prefetch=*/false, -1});
    Stats.BytesHtoD += Bytes;
    Stats.BytesPrefetched += Bytes;
    Stats.BytesCopiedIn += Bytes;
    if (Timeline)
      Timeline->span(Pid, TidHtoD, "copy in", "htod", Start, Done - Start,
                     llvm::json::Object{{"block", static_cast<int64_t>(B)},
                                        {"bytes", static_cast<int64_t>(Bytes)}});
  }
  if (C != Cause::User && C != Cause::Copy && !Bytes)
    Done = Ready + EmptyNs;
  if (C != Cause::Copy && (Bytes || (C == Cause::User && EmptyNs))) {
    uint64_t Setup =
        C == Cause::User ? static_cast<uint64_t>(std::llround(Device.TransferSetupUs * 1e3)) : 0;
    if (C == Cause::User)
      Setup += EmptyNs;
    uint64_t Start;
    // A populate (nothing crosses the link) on the driver's own queue where
    // the device model says it holds no copy engine.
    const bool OwnQueue = C == Cause::User && !Bytes && !Device.PopulatesHoldCopyEngine;
    if (OwnQueue) {
      Start = std::max(Ready, PopulateFree);
      Done = PopulateFree = Start + Setup;
    } else if (C == Cause::User) {
      // A prefetch queues behind everything issued before it (FIFO).
      retireHtoD();
      auto Lane = std::min_element(HtoDFree.begin(), HtoDFree.end());
      Start = startOnLane(HtoDFree, Ready, transferNs(Bytes) + Setup, Done);
      HtoDQueue[static_cast<size_t>(Lane - HtoDFree.begin())].push_back(
          HtoDItem{Start, Done, B, Mask, /*Prefetch=*/true,
                   Events ? static_cast<int64_t>(Events->size()) : -1});
    } else {
      Start = startFaultHtoD(Ready, transferNs(Bytes), Done);
      Done += EmptyNs; // the driver's work, not the copy engine's
    }
    Stats.BytesHtoD += Bytes;
    if (Events)
      logEvent(UmEvent::Kind::MigrationHtoD,
               C == Cause::User             ? UmEvent::Cause::User
               : C == Cause::DriverPrefetch ? UmEvent::Cause::DriverPrefetch
                                            : UmEvent::Cause::Demand,
               B, Copy, Bytes, Start, Done);
    if (Timeline)
      Timeline->span(Pid, OwnQueue ? TidPopulates : TidHtoD,
                     C == Cause::User ? "prefetch" : "fault", "htod", Start,
                     Done - Start,
                     llvm::json::Object{{"block", static_cast<int64_t>(B)},
                                        {"bytes", static_cast<int64_t>(Bytes)}});
  }
  if (C == Cause::User)
    Stats.BytesPrefetched += Bytes;
  else if (C == Cause::DriverPrefetch)
    Stats.BytesDriverPrefetched += Bytes;
  else if (C == Cause::Demand)
    Stats.BytesDemand += Bytes;
  // Thrashing: the block comes back soon after it left (the driver's
  // detection: an explicit copy is none of its business).
  if (C == Cause::Copy)
    LastEvictNs[B] = Never;
  if (LastEvictNs[B] != Never && Ready >= LastEvictNs[B] &&
      static_cast<double>(Ready - LastEvictNs[B]) < Device.ThrashingLapseUs * 1e3) {
    ++Stats.ThrashingEvents;
    if (Events)
      logEvent(UmEvent::Kind::Thrashing, UmEvent::Cause::None, B, 0, PagesPerBlock * PageBytes,
               Ready, Ready);
    if (++ThrashCount[B] >= Device.ThrashingThreshold)
      Flags[B] |= FlThrottled;
    LastEvictNs[B] = Never;
  } else if (LastEvictNs[B] != Never) {
    ThrashCount[B] = 0;
    Flags[B] &= static_cast<uint8_t>(~FlThrottled);
    LastEvictNs[B] = Never;
  }
  if (Resident[B])
    lrmRemove(B);
  lrmPushBack(B); // most recently migrated
  Resident[B] |= Mask;
  residencyChanged(B);
  ResidentPages += pages(Mask);
  ArrivalNs[B] = std::max(ArrivalNs[B], Done);
  for (uint32_t M = Mask; M; M &= M - 1)
    PageArrivalNs[uint64_t{B} * PagesPerBlock + static_cast<unsigned>(std::countr_zero(M))] = Done;
  notePeak();
  counterEvent(Ready);
  return Done;
}

uint64_t Engine::arrivalOf(uint32_t B, uint32_t Mask) const {
  uint64_t Latest = 0;
  for (uint32_t M = Mask; M; M &= M - 1)
    Latest = std::max(
        Latest,
        PageArrivalNs[uint64_t{B} * PagesPerBlock + static_cast<unsigned>(std::countr_zero(M))]);
  return Latest;
}

uint32_t Engine::densityExpand(uint32_t B, uint32_t Faulted) const {
  // The driver's tree prefetcher (uvm_perf_prefetch): leaves are the 32 big
  // pages of the 2 MiB block; for each faulted page, the largest enclosing
  // aligned region more than `threshold` occupied (resident or faulting) is
  // fetched whole. Never crosses the block.
  uint32_t Occupied = Resident[B] | Faulted, Out = Faulted;
  for (unsigned Size = 2; Size <= PagesPerBlock; Size *= 2) {
    uint32_t RegionMask = Size == 32 ? AllPages : ((1u << Size) - 1);
    for (unsigned First = 0; First < PagesPerBlock; First += Size) {
      uint32_t Region = RegionMask << First;
      if (!(Faulted & Region))
        continue;
      if (pages(Occupied & Region) > Device.PrefetchThreshold * Size)
        Out |= Region;
    }
  }
  return Out & ~Resident[B];
}

bool Engine::prefetchPages(uint32_t B, uint32_t Mask, bool RespectProtection) {
  uint32_t Missing = Mask & ~Resident[B];
  if (!Missing)
    return true;
  int64_t UpTo = -1;
  if (RespectProtection)
    UpTo = Protect[B] == ProtectEpoch ? ProtectRank[B] : std::numeric_limits<int64_t>::max();
  uint64_t RoomNs = makeRoom(pages(Missing), userNs(), UpTo);
  if (RoomNs == Never)
    return false;
  fetch(B, Missing, userNs(), RoomNs, Cause::User);
  Flags[B] |= FlPrefetched;
  return true;
}

void Engine::populatePages(uint32_t B, uint32_t Mask) {
  const uint32_t Empty = Mask & ~Valid[B] & ~Resident[B];
  if (!Empty)
    return;
  const uint64_t RoomNs = makeRoom(pages(Empty), IssueNs, /*ProtectUpTo=*/-1);
  if (RoomNs != Never)
    fetch(B, Empty, IssueNs, RoomNs, Cause::Copy); // nothing to copy
}

uint64_t Engine::explicitCopy(bool ToDevice, uint64_t Bytes, uint64_t NotBeforeNs,
                              bool FromManaged) {
  std::vector<uint64_t> &Lane = copyLane(ToDevice);
  auto It = std::min_element(Lane.begin(), Lane.end());
  const double Rate = ToDevice      ? Device.copyHostToDeviceBytesPerSecond()
                      : FromManaged ? Device.copyManagedToHostBytesPerSecond()
                                    : Device.copyDeviceToHostBytesPerSecond();
  // Several engines per direction share the link: each runs at its share.
  const double NsPerB = 1e9 * std::max(1u, Device.CopyEnginesPerDirection) / std::max(Rate, 1.0);
  const uint64_t Start = std::max({*It, NotBeforeNs, IssueNs});
  *It = Start + static_cast<uint64_t>(std::llround(static_cast<double>(Bytes) * NsPerB));
  (ToDevice ? Stats.BytesCopiedIn : Stats.BytesCopiedOut) += Bytes;
  (ToDevice ? Stats.BytesHtoD : Stats.BytesDtoH) += Bytes;
  if (Timeline)
    Timeline->span(Pid, ToDevice ? TidHtoD : TidDtoH, ToDevice ? "copy in" : "copy out",
                   ToDevice ? "htod" : "dtoh", Start, *It - Start,
                   llvm::json::Object{{"bytes", static_cast<int64_t>(Bytes)}});
  return *It;
}

void Engine::copyOutPages(uint32_t B, uint32_t Mask) {
  evict(B, Mask, userNs(), UmEvent::Cause::User, /*Copy=*/true);
}

void Engine::copyInPages(uint32_t B, uint32_t Mask) {
  const uint32_t Missing = Mask & ~Resident[B];
  if (!Missing)
    return;
  const uint64_t RoomNs = makeRoom(pages(Missing), userNs(), /*ProtectUpTo=*/-1);
  if (RoomNs == Never)
    return;
  fetch(B, Missing, userNs(), RoomNs, Cause::Copy);
  Flags[B] |= FlPrefetched;
}

uint64_t Engine::preEvictTo(uint64_t FreeBytes) {
  const uint64_t Want = std::min<uint64_t>(FreeBytes / PageBytes, CapacityPages);
  uint64_t Have = CapacityPages - ResidentPages; // free now or once write-backs end
  uint64_t Evicted = 0;
  for (int32_t B = LrmHead; B >= 0 && Have < Want;) {
    const int32_t Next = LrmNext[B];
    if (Pinned[B] != KernelSeq && Protect[B] != ProtectEpoch && !(Flags[B] & FlPreferDevice)) {
      const uint64_t Out = pages(Resident[B]);
      evict(static_cast<uint32_t>(B), AllPages, IssueNs);
      Have += Out;
      Evicted += Out;
    }
    B = Next;
  }
  Stats.BytesPreEvicted += Evicted * PageBytes;
  return Evicted * PageBytes;
}

void Engine::evictPages(uint32_t B, uint32_t Mask) {
  evict(B, Mask, userNs(), UmEvent::Cause::User);
}

uint32_t Engine::hostDuplicateMask(uint32_t B) const {
  return (Flags[B] & FlReadMostly) ? Resident[B] & HostValid[B] : 0;
}

bool Engine::hostFault(uint64_t Address, bool Write) {
  auto It = Ids.find(Address / (PageBytes * PagesPerBlock));
  if (It == Ids.end())
    return false;
  const uint32_t B = It->second;
  const uint32_t Mask = uint32_t{1} << ((Address / PageBytes) % PagesPerBlock);
  if (!(Resident[B] & Mask))
    return false;
  const bool Duplicate = hostDuplicateMask(B) & Mask;
  if (Duplicate && !Write)
    return true;
  ++Stats.HostFaults;
  // Work runs in issue order here: the touch comes after the last kernel
  // using the page and after the page arrived; the driver's service follows.
  const uint64_t AtNs = std::max({userNs(), BusyUntilNs[B], ArrivalNs[B]}) +
                        static_cast<uint64_t>(std::llround(Device.FaultBatchLatencyUs * 1e3));
  uint64_t DoneNs = AtNs;
  if (Duplicate) {
    // The host's copy is current: the GPU's is invalidated, nothing moves.
    dropPages(B, Mask);
  } else {
    evict(B, Mask, AtNs, UmEvent::Cause::Demand);
    DoneNs = std::max(DoneNs, HostReadyNs[B]);
  }
  hostWaitUntil(DoneNs);
  return true;
}

uint32_t Engine::dropPages(uint32_t B, uint32_t Mask) {
  uint32_t Dropped = Mask & Resident[B];
  if (!Dropped)
    return 0;
  // Unmapped without a copy once the last kernel using it is done.
  uint64_t Ready = std::max({userNs(), BusyUntilNs[B], ArrivalNs[B]});
  if (CheckInvariants && Ready < BusyUntilNs[B])
    ++Stats.InvariantViolations;
  Resident[B] &= ~Dropped;
  residencyChanged(B);
  ResidentPages -= pages(Dropped);
  PendingFree.push({Ready, pages(Dropped)});
  PendingPages += pages(Dropped);
  if (!Resident[B]) {
    lrmRemove(B);
    Flags[B] &= static_cast<uint8_t>(~FlPrefetched);
  }
  counterEvent(Ready);
  return Dropped;
}

void Engine::discardPages(uint32_t B, uint32_t Mask) {
  const uint64_t Bytes = pages(dropPages(B, Mask)) * PageBytes;
  Stats.BytesDiscarded += Bytes;
  if (Timeline && Bytes)
    Timeline->instant(Pid, TidDiscards, "discard", "discard",
                      std::max({userNs(), BusyUntilNs[B], ArrivalNs[B]}),
                      llvm::json::Object{{"block", static_cast<int64_t>(B)},
                                         {"bytes", static_cast<int64_t>(Bytes)}});
  Valid[B] &= ~Mask;
  HostValid[B] &= ~Mask;
}

void Engine::expectContents(uint32_t Block, uint32_t Mask) {
  Stats.LostContents += pages(Mask & ~Valid[Block]);
}

void Engine::hostWritePages(uint32_t B, uint32_t Mask) {
  dropPages(B, Mask);
  Valid[B] |= Mask;
  HostValid[B] |= Mask;
}

llvm::Error Engine::pinKernelBlocks(llvm::ArrayRef<BlockUse> Uses) {
  // Pinned == KernelSeq from here until the next launch: the kernel's blocks
  // are never victims of its own faults, nor of prefetches issued while it runs.
  ++KernelSeq;
  uint64_t Need = 0;
  for (const BlockUse &U : Uses) {
    Pinned[U.Block] = KernelSeq;
    Need += pages(U.PageMask);
  }
  if (Need > CapacityPages)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("kernel {0} touches {1}, more than the GPU memory simulated ({2})",
                      Stats.Kernels, deepum::format::formatBytes(Need * PageBytes),
                      deepum::format::formatBytes(CapacityPages * PageBytes))
            .str());
  return llvm::Error::success();
}

void Engine::collectFaults(llvm::ArrayRef<BlockUse> Uses) {
  LastFaults.clear();
  PresentScratch.clear();
  for (const BlockUse &U : Uses) {
    uint32_t B = U.Block;
    uint32_t Present = U.PageMask & Resident[B];
    PresentScratch.push_back(Present);
    if (Present) {
      if (Flags[B] & FlPrefetched) {
        ++Stats.PrefetchHits;
        Flags[B] &= static_cast<uint8_t>(~FlPrefetched);
      }
    }
    if (uint32_t Miss = U.PageMask & ~Resident[B])
      LastFaults.push_back({B, Miss, U.Mode, U.FaultEntriesPerPage});
    // Only pure reads: a block's READ_WRITE merges tensors, and may cover
    // pages that are only overwritten.
    if (U.Mode == Access::Read)
      Stats.LostReads += pages(U.PageMask & ~Valid[B]);
  }
}

// Demand faults: the kernel starts, faults, and the driver services the
// faults in batches. The GPU writes one fault-buffer entry per faulting
// 4 KiB page; the driver fetches up to FaultBatchSize (256) entries per
// batch (uvm_perf_fault_batch_count), groups them by 2 MiB VA block and
// services block by block, growing each fault to its 64 KiB big page
// (uvm_perf_prefetch.c grow_fault_granularity) before the density
// prefetcher. A dense 64 KiB page raises 16 entries, so a batch of dense
// faults covers 16 pages (1 MiB); a 64 KiB-strided pattern, 256 pages.
// Each batch costs the fixed latency plus the per-block service, then its
// migrations, then the GPU replays. Victims evicted for the batch are
// written back from the batch's start, beside the service; a migration
// waits for the later of the service and the write-back freeing its room.
// A page whose entries straddle the batch's end is serviced in it whole
// (its first entry was fetched).

Engine::FaultBatch Engine::takeFaultBatch(size_t &I, uint32_t &Split) {
  FaultBatch Batch;
  FaultScratch.clear();
  while (I < LastFaults.size() && Batch.Entries < Device.FaultBatchSize) {
    const BlockUse &F = LastFaults[I];
    const unsigned Entries = std::clamp<unsigned>(F.FaultEntriesPerPage, 1, kDenseFaultEntries);
    uint32_t Left = F.PageMask & ~Split;
    uint32_t Take = 0;
    for (uint32_t M = Left; M && Batch.Entries < Device.FaultBatchSize; M &= M - 1) {
      Take |= M & -M;
      Batch.Entries += Entries;
    }
    FaultScratch.push_back({F.Block, Take, F.Mode, F.FaultEntriesPerPage});
    ++Batch.Blocks;
    Batch.Throttled |= (Flags[F.Block] & FlThrottled) != 0;
    if ((Split | Take) == F.PageMask) {
      ++I;
      Split = 0;
    } else {
      Split |= Take;
    }
  }
  return Batch;
}

llvm::Expected<uint64_t> Engine::migrateFaultBatch(uint64_t BatchStart, uint64_t T) {
  uint64_t BatchDone = T;
  for (const BlockUse &F : FaultScratch) {
    uint32_t Faulted = F.PageMask & ~Resident[F.Block]; // may have come with an earlier batch
    // CUPTI reports a fault group per faulting page: every page of the
    // batch, absent when the kernel started. Pages an earlier batch brought
    // (the density prefetch) were raised all the same: the driver fetches
    // and replays their entries in this batch, but nothing moves.
    if (Events)
      for (uint32_t M = F.PageMask; M; M &= M - 1)
        logEvent(UmEvent::Kind::GpuPageFault, UmEvent::Cause::None, F.Block, M & -M, PageBytes,
                 BatchStart, 0, F.Mode);
    if (!Faulted)
      continue;
    Stats.Faults += pages(Faulted);
    uint32_t All = densityExpand(F.Block, Faulted);
    // Room is made while the batch is serviced: a victim's write-back starts
    // with the service (on the device-to-host engine, behind what it already
    // carries) and the migrations wait for the later of the two.
    uint64_t RoomNs = makeRoom(pages(All), BatchStart, /*ProtectUpTo=*/-1);
    if (RoomNs == Never) { // no room for the density prefetch: the faulted pages alone
      All = Faulted;
      RoomNs = makeRoom(pages(All), BatchStart, -1);
    }
    if (RoomNs == Never) // the kernel's own blocks hold pages it does not touch
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("kernel {0}: no room for its pages in {1} of GPU memory", Stats.Kernels,
                        deepum::format::formatBytes(CapacityPages * PageBytes))
              .str());
    uint64_t Done = fetch(F.Block, Faulted, T, RoomNs, Cause::Demand);
    if (uint32_t Extra = All & ~Faulted)
      Done = std::max(Done, fetch(F.Block, Extra, T, RoomNs, Cause::DriverPrefetch));
    BatchDone = std::max(BatchDone, Done);
  }
  return BatchDone;
}

llvm::Expected<uint64_t> Engine::serviceFaults(uint64_t AtNs) {
  uint64_t T = AtNs;
  size_t I = 0;
  uint32_t Split = 0; // pages of LastFaults[I] already serviced
  while (I < LastFaults.size()) {
    uint64_t BatchStart = T;
    const FaultBatch Batch = takeFaultBatch(I, Split);
    Stats.FaultEntries += Batch.Entries;
    T += static_cast<uint64_t>(std::llround(
        (Device.FaultBatchLatencyUs + Batch.Blocks * Device.FaultBlockServiceUs) * 1e3));
    if (Batch.Throttled) {
      T += static_cast<uint64_t>(std::llround(Device.ThrottleNapUs * 1e3));
      ++Stats.ThrottledBatches;
    }
    const size_t FirstEvent = Events ? Events->size() : 0;
    llvm::Expected<uint64_t> BatchDone = migrateFaultBatch(BatchStart, T);
    if (!BatchDone)
      return BatchDone.takeError();
    ++Stats.FaultBatches;
    if (Events)
      for (size_t Ev = FirstEvent; Ev < Events->size(); ++Ev)
        if ((*Events)[Ev].Type == UmEvent::Kind::GpuPageFault)
          (*Events)[Ev].EndNs = *BatchDone;
    if (Timeline)
      Timeline->span(Pid, TidFaults, "fault batch", "fault", BatchStart, *BatchDone - BatchStart,
                     llvm::json::Object{{"entries", static_cast<int64_t>(Batch.Entries)},
                                        {"blocks", static_cast<int64_t>(Batch.Blocks)}});
    T = *BatchDone;
  }
  return T;
}

uint64_t Engine::awaitPresentPages(llvm::ArrayRef<BlockUse> Uses, uint64_t ReadyNs,
                                   uint64_t StartNs) {
  // Pages present at the launch may still be in flight (a prefetch, pushed
  // back by the faults above if it had not started). The kernel waits only
  // for the pages it touches (the block's latest arrival bounds them: the
  // per-page scan is needed only when that is late). A populate of discarded
  // pages still queued is not waited for: the kernel faults on the discarded
  // pages, which costs the driver DiscardedFaultBlockUs a block (measured on
  // an H100 at 4 ms: far more than the populate itself).
  uint64_t DiscardedNs = 0;
  for (size_t U = 0; U < Uses.size(); ++U) {
    const uint32_t B = Uses[U].Block, Present = PresentScratch[U];
    if (!Present)
      continue;
    if (uint64_t Late = ArrivalNs[B] > ReadyNs ? arrivalOf(B, Present) : 0; Late > ReadyNs) {
      ++Stats.LatePrefetches;
      const uint32_t Empty = Present & Populating[B] & ~Awaited[B];
      if (Empty && Device.DiscardedFaultBlockUs > 0 && arrivalOf(B, Empty) > ReadyNs) {
        DiscardedNs += static_cast<uint64_t>(
            std::llround(Device.DiscardedFaultBlockUs * 1e3 * pages(Empty) / PagesPerBlock));
        DiscardedScratch.push_back({B, Empty});
        // The other pages the kernel touches are waited for as before.
        if (uint32_t Rest = Present & ~Empty)
          StartNs = std::max(StartNs, arrivalOf(B, Rest));
        continue;
      }
      StartNs = std::max(StartNs, Late);
    }
  }
  if (DiscardedScratch.empty())
    return StartNs;
  // The faults made the populated pages resident: the populate, when it
  // runs, finds them there. Only those pages arrive now.
  StartNs += DiscardedNs;
  for (auto [B, Empty] : DiscardedScratch) {
    uint64_t Latest = 0;
    for (unsigned P = 0; P < PagesPerBlock; ++P) {
      uint64_t &At = PageArrivalNs[uint64_t{B} * PagesPerBlock + P];
      if (Empty >> P & 1)
        At = std::min(At, StartNs);
      if (Resident[B] >> P & 1)
        Latest = std::max(Latest, At);
    }
    ArrivalNs[B] = Latest;
    Populating[B] &= ~Empty;
  }
  DiscardedScratch.clear();
  return StartNs;
}

void Engine::runKernel(llvm::ArrayRef<BlockUse> Uses, uint64_t StartNs, uint64_t DurationNs,
                       llvm::StringRef Name) {
  const uint64_t EndNs = StartNs + DurationNs;
  for (const BlockUse &U : Uses) {
    uint32_t B = U.Block;
    if (CheckInvariants &&
        ((Resident[B] & U.PageMask) != U.PageMask || arrivalOf(B, U.PageMask) > StartNs))
      ++Stats.InvariantViolations;
    BusyUntilNs[B] = std::max(BusyUntilNs[B], EndNs);
    if (writes(U.Mode)) {
      if (HostValid[B] & U.PageMask & Resident[B])
        residencyChanged(B); // a duplicate the host could read is gone
      HostValid[B] &= ~U.PageMask;
      Valid[B] |= U.PageMask;
    }
  }
  if (CheckInvariants && ResidentPages + PendingPages > CapacityPages)
    ++Stats.InvariantViolations;
  if (Timeline)
    Timeline->span(Pid, TidCompute, Name, "compute", StartNs, DurationNs,
                   llvm::json::Object{{"index", static_cast<int64_t>(Stats.Kernels)}});
  Stats.StallNs += StartNs - ComputeEndNs; // idle, waiting for the host or for pages
  ++Stats.Kernels;
  IssueNs = StartNs; // the host observes the next launch while this kernel runs
  ComputeEndNs = EndNs;
}

llvm::Error Engine::launch(llvm::ArrayRef<BlockUse> Uses, uint64_t DurationNs,
                           llvm::StringRef Name) {
  if (llvm::Error E = pinKernelBlocks(Uses))
    return E;
  // The kernel runs after the previous one, and after the host has launched
  // it: API calls issued before this launch may hold the host past the
  // previous kernel's end.
  const uint64_t ReadyNs = std::max(ComputeEndNs, IssueNs);
  collectFaults(Uses);
  llvm::Expected<uint64_t> FaultsDoneNs = serviceFaults(ReadyNs);
  if (!FaultsDoneNs)
    return FaultsDoneNs.takeError();
  const uint64_t StartNs = awaitPresentPages(Uses, ReadyNs, std::max(ReadyNs, *FaultsDoneNs));
  runKernel(Uses, StartNs, DurationNs, Name);
  return llvm::Error::success();
}

uint64_t Engine::verifyAccounting() const {
  uint64_t Bad = 0, Pages = 0, Listed = 0, WithPages = 0;
  for (uint32_t R : Resident) {
    Pages += pages(R);
    WithPages += R != 0;
  }
  for (int32_t B = LrmHead; B >= 0; B = LrmNext[B]) {
    ++Listed;
    Bad += Resident[B] == 0;
    if (Listed > Resident.size()) // a cycle
      return Bad + 1;
  }
  Bad += Pages != ResidentPages;
  Bad += Listed != WithPages;
  Bad += ResidentPages + PendingPages > CapacityPages;
  return Bad;
}

// --- Address interface --------------------------------------------------------

namespace {
/// Calls F(block, mask) for every UM block the byte range overlaps; `Whole`
/// keeps only pages entirely inside the range.
template <typename Fn> void forPages(uint64_t Address, uint64_t Bytes, bool Whole, Fn F) {
  if (!Bytes)
    return;
  const uint64_t PageBytes = Engine::PageBytes;
  uint64_t First = Address / PageBytes, Last = (Address + Bytes - 1) / PageBytes;
  if (Whole) {
    First = (Address + PageBytes - 1) / PageBytes;
    if ((Address + Bytes) % PageBytes != 0) {
      if ((Address + Bytes) / PageBytes == 0)
        return;
      Last = (Address + Bytes) / PageBytes - 1;
    }
    if (First > Last)
      return;
  }
  for (uint64_t P = First; P <= Last;) {
    uint64_t Block = P / Engine::PagesPerBlock;
    uint64_t End = std::min(Last, (Block + 1) * Engine::PagesPerBlock - 1);
    unsigned Lo = static_cast<unsigned>(P % Engine::PagesPerBlock);
    unsigned Hi = static_cast<unsigned>(End % Engine::PagesPerBlock);
    uint32_t Mask = (Hi == 31 ? AllPages : ((1u << (Hi + 1)) - 1)) & ~((1u << Lo) - 1);
    F(Block, Mask);
    P = End + 1;
  }
}
} // namespace

uint64_t Engine::hostCallNs(unsigned Ranges) const {
  double Us = Device.TransferCallUs + (Ranges > 1 ? (Ranges - 1) * Device.TransferRangeUs : 0.0);
  return Us > 0 ? static_cast<uint64_t>(std::llround(Us * 1e3)) : 0;
}

void Engine::hostCall(unsigned Ranges) {
  ++Stats.HostCalls;
  const uint64_t Ns = hostCallNs(Ranges);
  if (!Ns)
    return;
  if (Timeline)
    Timeline->span(Pid, TidHost, "api call", "host", IssueNs, Ns,
                   llvm::json::Object{{"ranges", static_cast<int64_t>(Ranges)}});
  IssueNs += Ns;
  Stats.HostCallNs += Ns;
}

void Engine::prefetchBatchToDevice(llvm::ArrayRef<Range> Ranges, uint64_t NotBeforeNs) {
  if (Ranges.empty())
    return;
  hostCall(static_cast<unsigned>(Ranges.size()));
  FloorNs = NotBeforeNs;
  auto Reset = llvm::make_scope_exit([&] { FloorNs = 0; });
  for (const Range &R : Ranges)
    forPages(R.Address, R.Bytes, false,
             [&](uint64_t Block, uint32_t Mask) { prefetchPages(blockId(Block), Mask); });
}

void Engine::evictBatchToHost(llvm::ArrayRef<Range> Ranges, uint64_t NotBeforeNs) {
  if (Ranges.empty())
    return;
  hostCall(static_cast<unsigned>(Ranges.size()));
  FloorNs = NotBeforeNs;
  auto Reset = llvm::make_scope_exit([&] { FloorNs = 0; });
  for (const Range &R : Ranges)
    forPages(R.Address, R.Bytes, true,
             [&](uint64_t Block, uint32_t Mask) { evictPages(blockId(Block), Mask); });
}

void Engine::copiedInto(uint64_t Address, uint64_t Bytes, uint64_t EndNs) {
  forPages(Address, Bytes, false, [&](uint64_t Block, uint32_t Mask) {
    auto It = Ids.find(Block);
    if (It == Ids.end())
      return;
    const uint32_t B = It->second, In = Mask & Resident[B];
    Populating[B] &= ~In;
    Valid[B] |= In;
    for (uint32_t M = In; M; M &= M - 1) {
      uint64_t &At =
          PageArrivalNs[uint64_t{B} * PagesPerBlock + static_cast<unsigned>(std::countr_zero(M))];
      At = std::max(At, EndNs);
    }
    if (In)
      ArrivalNs[B] = std::max(ArrivalNs[B], EndNs);
  });
}

void Engine::discardBatch(llvm::ArrayRef<Range> Ranges, uint64_t NotBeforeNs) {
  if (Ranges.empty())
    return;
  hostCall(static_cast<unsigned>(Ranges.size()));
  FloorNs = NotBeforeNs;
  auto Reset = llvm::make_scope_exit([&] { FloorNs = 0; });
  for (const Range &R : Ranges)
    forPages(R.Address, R.Bytes, true,
             [&](uint64_t Block, uint32_t Mask) { discardPages(blockId(Block), Mask); });
}

void Engine::prefetchToDevice(uint64_t Address, uint64_t Bytes) {
  hostCall(1);
  forPages(Address, Bytes, false,
           [&](uint64_t Block, uint32_t Mask) { prefetchPages(blockId(Block), Mask); });
}

void Engine::awaitPopulates(llvm::ArrayRef<Range> Ranges) {
  for (const Range &R : Ranges)
    forPages(R.Address, R.Bytes, false, [&](uint64_t Block, uint32_t Mask) {
      if (auto It = Ids.find(Block); It != Ids.end())
        Awaited[It->second] |= Mask & Populating[It->second];
    });
}

void Engine::evictToHost(uint64_t Address, uint64_t Bytes) {
  hostCall(1);
  forPages(Address, Bytes, true,
           [&](uint64_t Block, uint32_t Mask) { evictPages(blockId(Block), Mask); });
}

void Engine::discard(uint64_t Address, uint64_t Bytes) {
  hostCall(1);
  forPages(Address, Bytes, true,
           [&](uint64_t Block, uint32_t Mask) { discardPages(blockId(Block), Mask); });
}

void Engine::advise(deepum::v1::Advice A, uint64_t Address, uint64_t Bytes) {
  forPages(Address, Bytes, false, [&](uint64_t Block, uint32_t) {
    uint32_t B = blockId(Block);
    switch (A) {
    case deepum::v1::ADVICE_SET_READ_MOSTLY:
      Flags[B] |= FlReadMostly;
      residencyChanged(B);
      break;
    case deepum::v1::ADVICE_UNSET_READ_MOSTLY:
      Flags[B] &= static_cast<uint8_t>(~FlReadMostly);
      residencyChanged(B);
      break;
    case deepum::v1::ADVICE_SET_PREFERRED_LOCATION_DEVICE:
      Flags[B] |= FlPreferDevice;
      break;
    case deepum::v1::ADVICE_SET_PREFERRED_LOCATION_HOST:
    case deepum::v1::ADVICE_UNSET_PREFERRED_LOCATION:
      Flags[B] &= static_cast<uint8_t>(~FlPreferDevice);
      break;
    default: // accessed-by: mappings only, no migration effect modelled
      break;
    }
  });
}

llvm::Error Engine::launchByAddress(llvm::ArrayRef<AddressUse> Uses, uint64_t DurationNs) {
  std::vector<BlockUse> Dense;
  Dense.reserve(Uses.size());
  for (const AddressUse &U : Uses)
    Dense.push_back(
        {blockId(U.UmBlock), U.PageMask ? U.PageMask : AllPages, U.Mode, U.FaultEntriesPerPage});
  return launch(Dense, DurationNs);
}
