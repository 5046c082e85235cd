//===- Pool.cpp - Stream-ordered pool of managed memory --------------------===//
#include "deepum/executor/Pool.h"

#include "deepum/executor/Log.h"

#include <algorithm>
#include <cassert>

namespace deepum::executor {

namespace {
constexpr uint64_t kTwoMiB = uint64_t{2} << 20;
constexpr uint64_t roundUp(uint64_t V, uint64_t To) { return (V + To - 1) / To * To; }

uint64_t segmentSizeFor(uint64_t Size) {
  if (Size < kSmallRequest)
    return kTwoMiB;
  if (Size < kMediumRequest)
    return uint64_t{20} << 20;
  return roundUp(Size, kTwoMiB);
}
} // namespace

DevicePool::DevicePool(Backend &B, int Dev) : Back(B), Device(Dev) { LiveBlocks.reserve(4096); }

DevicePool::~DevicePool() {
  // Frees during shutdown: segments are returned only when the backend still
  // answers; a failing free is logged, not fatal.
  std::lock_guard<std::mutex> Lock(Mu);
  for (Block &B : BlockStore)
    if (B.SegmentHead && B.Size != 0) {
      BackendStatus S = Back.freeManaged(Device, reinterpret_cast<void *>(B.Addr));
      if (!S.ok())
        log(LogLevel::Debug, "pool: %s failed at exit: %s", S.Call, S.Message.c_str());
    }
  for (PendingBatch &P : Pending)
    (void)Back.destroyEvent(Device, P.Event);
  for (EventHandle E : SpareEvents)
    (void)Back.destroyEvent(Device, E);
}

DevicePool::Block *DevicePool::newBlock() {
  if (!SpareBlocks.empty()) {
    Block *B = SpareBlocks.back();
    SpareBlocks.pop_back();
    *B = Block{};
    return B;
  }
  return &BlockStore.emplace_back();
}

void DevicePool::recycle(Block *B) {
  B->Size = 0;
  B->SegmentHead = false;
  SpareBlocks.push_back(B);
}

DevicePool::FreeSet &DevicePool::binsFor(StreamHandle S) {
  if (LastBin < Bins.size() && Bins[LastBin].Stream == S)
    return Bins[LastBin].Free;
  for (size_t I = 0; I < Bins.size(); ++I)
    if (Bins[I].Stream == S) {
      LastBin = I;
      return Bins[I].Free;
    }
  Bins.push_back({S, {}});
  LastBin = Bins.size() - 1;
  return Bins.back().Free;
}

DevicePool::Block *DevicePool::takeFrom(FreeSet &Set, uint64_t Size) {
  Block Key;
  Key.Size = Size;
  auto It = Set.lower_bound(&Key);
  if (It == Set.end())
    return nullptr;
  Block *B = *It;
  // A small request does not carve up a large segment's block: that is how
  // caching allocators keep big blocks whole for big tensors.
  if (Size < kSmallRequest && B->Size >= kMediumRequest)
    return nullptr;
  Set.erase(It);
  return B;
}

DevicePool::Block *DevicePool::splitAndMark(Block *B, uint64_t Size, StreamHandle S) {
  if (B->Size - Size >= kPoolRounding) {
    Block *Rest = newBlock();
    Rest->Addr = B->Addr + Size;
    Rest->Size = B->Size - Size;
    Rest->Prev = B;
    Rest->Next = B->Next;
    if (B->Next)
      B->Next->Prev = Rest;
    B->Next = Rest;
    B->Size = Size;
    // The remainder keeps the free place of the block it came from.
    if (B->Place == Block::Where::AnyFree) {
      Rest->Place = Block::Where::AnyFree;
      AnyStream.insert(Rest);
    } else {
      Rest->Stream = B->Stream;
      Rest->Place = Block::Where::StreamFree;
      binsFor(Rest->Stream).insert(Rest);
    }
  }
  B->Place = Block::Where::Live;
  B->Stream = S;
  LiveBlocks.emplace(B->Addr, B);
  Stats.Allocations++;
  Stats.BytesInUse += B->Size;
  Stats.PeakBytesInUse = std::max(Stats.PeakBytesInUse, Stats.BytesInUse);
  return B;
}

void DevicePool::eraseFree(Block *B) {
  if (B->Place == Block::Where::StreamFree)
    binsFor(B->Stream).erase(B);
  else if (B->Place == Block::Where::AnyFree)
    AnyStream.erase(B);
}

void DevicePool::coalesce(FreeSet &Set, Block::Where Place) {
  // Merge runs of address-adjacent free blocks that share a free place (and,
  // for stream bins, a stream): merging across streams would break ordering.
  std::vector<Block *> Blocks(Set.begin(), Set.end());
  for (Block *B : Blocks) {
    if (B->Size == 0 || B->Place != Place)
      continue; // already merged into a neighbour
    Block *Head = B;
    while (Head->Prev && Head->Prev->Place == Place && Head->Prev->Stream == B->Stream &&
           !Head->SegmentHead)
      Head = Head->Prev;
    Block *Cur = Head;
    while (Cur->Next && Cur->Next->Place == Place && Cur->Next->Stream == B->Stream &&
           !Cur->Next->SegmentHead) {
      Block *N = Cur->Next;
      Set.erase(N);
      Set.erase(Cur);
      Cur->Size += N->Size;
      Cur->Next = N->Next;
      if (N->Next)
        N->Next->Prev = Cur;
      recycle(N);
      Set.insert(Cur);
    }
  }
}

void DevicePool::reclaimOtherStreams(StreamHandle S) {
  for (StreamBins &Bin : Bins) {
    if (Bin.Stream == S || Bin.Free.empty())
      continue;
    EventHandle E = 0;
    if (!SpareEvents.empty()) {
      E = SpareEvents.back();
      SpareEvents.pop_back();
    } else if (!Back.createEvent(Device, &E).ok()) {
      return;
    }
    // The event covers all work enqueued on Bin.Stream so far, including every
    // use of the blocks freed there.
    if (!Back.recordEvent(Device, E, Bin.Stream).ok()) {
      SpareEvents.push_back(E);
      continue;
    }
    PendingBatch Batch{E, {}};
    for (Block *B : Bin.Free) {
      B->Place = Block::Where::Pending;
      Batch.Blocks.push_back(B);
    }
    Bin.Free.clear();
    Pending.push_back(std::move(Batch));
  }
}

bool DevicePool::pollPending() {
  bool Moved = false;
  for (size_t I = 0; I < Pending.size();) {
    EventState St = Back.queryEvent(Device, Pending[I].Event);
    if (St == EventState::Pending) {
      ++I;
      continue;
    }
    // An event in error state leaves its blocks pending forever rather than
    // risking reuse of memory a failed stream may still touch.
    if (St == EventState::Complete) {
      for (Block *B : Pending[I].Blocks) {
        B->Place = Block::Where::AnyFree;
        B->Stream = 0;
        AnyStream.insert(B);
      }
      SpareEvents.push_back(Pending[I].Event);
      Moved = true;
    }
    Pending[I] = std::move(Pending.back());
    Pending.pop_back();
    if (St == EventState::Error)
      continue;
  }
  return Moved;
}

DevicePool::Block *DevicePool::grow(uint64_t Size, StreamHandle S) {
  uint64_t SegBytes = segmentSizeFor(Size);
  void *P = nullptr;
  BackendStatus St = Back.allocateManaged(Device, SegBytes, &P);
  if (!St.ok() || !P) {
    // Give cached memory back and try once more before failing the request.
    releaseCachedLocked();
    St = Back.allocateManaged(Device, SegBytes, &P);
    if (!St.ok() || !P) {
      // Said once per pool: a process without a usable GPU would otherwise log
      // every allocation. Stats.Failures counts them all.
      DEEPUM_LOG_ONCE(FailureLogged, LogLevel::Warn,
                      "pool: device %d: %s of %llu bytes failed: %s (further failures are counted, "
                      "not logged)",
                      Device, St.Call, static_cast<unsigned long long>(SegBytes),
                      St.Message.c_str());
      return nullptr;
    }
  }
  Block *B = newBlock();
  B->Addr = reinterpret_cast<uintptr_t>(P);
  B->Size = SegBytes;
  B->SegmentHead = true;
  B->Stream = S;
  B->Place = Block::Where::StreamFree;
  Stats.BytesReserved += SegBytes;
  Stats.Segments++;
  return B;
}

void *DevicePool::allocate(uint64_t Bytes, StreamHandle S) {
  if (Bytes == 0)
    return nullptr;
  const uint64_t Size = roundUp(Bytes, kPoolRounding);
  std::lock_guard<std::mutex> Lock(Mu);
  FreeSet &Own = binsFor(S);
  if (Block *B = takeFrom(Own, Size))
    return reinterpret_cast<void *>(splitAndMark(B, Size, S)->Addr);
  if (!Pending.empty())
    pollPending();
  if (Block *B = takeFrom(AnyStream, Size)) {
    Stats.CrossStreamReuses++;
    return reinterpret_cast<void *>(splitAndMark(B, Size, S)->Addr);
  }
  coalesce(binsFor(S), Block::Where::StreamFree);
  if (Block *B = takeFrom(binsFor(S), Size))
    return reinterpret_cast<void *>(splitAndMark(B, Size, S)->Addr);
  coalesce(AnyStream, Block::Where::AnyFree);
  if (Block *B = takeFrom(AnyStream, Size)) {
    Stats.CrossStreamReuses++;
    return reinterpret_cast<void *>(splitAndMark(B, Size, S)->Addr);
  }
  // Other streams' free blocks become reusable once an event says their work
  // is done; idle streams complete at once, busy ones serve later requests.
  reclaimOtherStreams(S);
  if (pollPending()) {
    coalesce(AnyStream, Block::Where::AnyFree);
    if (Block *B = takeFrom(AnyStream, Size)) {
      Stats.CrossStreamReuses++;
      return reinterpret_cast<void *>(splitAndMark(B, Size, S)->Addr);
    }
  }
  Block *B = grow(Size, S);
  if (!B) {
    Stats.Failures++;
    return nullptr;
  }
  return reinterpret_cast<void *>(splitAndMark(B, Size, S)->Addr);
}

bool DevicePool::deallocate(void *Ptr, StreamHandle S) {
  if (!Ptr)
    return true;
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = LiveBlocks.find(reinterpret_cast<uintptr_t>(Ptr));
  if (It == LiveBlocks.end())
    return false;
  Block *B = It->second;
  LiveBlocks.erase(It);
  Stats.Frees++;
  Stats.BytesInUse -= B->Size;
  B->Stream = S;
  B->Place = Block::Where::StreamFree;
  binsFor(S).insert(B);
  return true;
}

uint64_t DevicePool::blockSize(const void *Ptr) const {
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = LiveBlocks.find(reinterpret_cast<uintptr_t>(Ptr));
  return It == LiveBlocks.end() ? 0 : It->second->Size;
}

void DevicePool::releaseCached() {
  std::lock_guard<std::mutex> Lock(Mu);
  releaseCachedLocked();
}

void DevicePool::releaseCachedLocked() {
  pollPending();
  for (StreamBins &Bin : Bins)
    coalesce(Bin.Free, Block::Where::StreamFree);
  coalesce(AnyStream, Block::Where::AnyFree);
  std::vector<Block *> Whole;
  auto Collect = [&](FreeSet &Set) {
    for (Block *B : Set)
      if (B->SegmentHead && !B->Next)
        Whole.push_back(B);
  };
  for (StreamBins &Bin : Bins)
    Collect(Bin.Free);
  Collect(AnyStream);
  for (Block *B : Whole) {
    // cudaFree synchronises the device, so queued uses of the segment finish first.
    eraseFree(B);
    BackendStatus St = Back.freeManaged(Device, reinterpret_cast<void *>(B->Addr));
    if (!St.ok())
      log(LogLevel::Warn, "pool: %s failed: %s", St.Call, St.Message.c_str());
    Stats.BytesReserved -= B->Size;
    Stats.Segments--;
    recycle(B);
  }
}

PoolStats DevicePool::stats() const {
  std::lock_guard<std::mutex> Lock(Mu);
  return Stats;
}

} // namespace deepum::executor
