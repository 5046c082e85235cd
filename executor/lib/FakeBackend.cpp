//===- FakeBackend.cpp - A recording backend for tests --------------------===//
#include "deepum/executor/FakeBackend.h"

#include <cstdlib>
#include <cstring>

namespace deepum::executor {

FakeBackend::FakeBackend(FakeBackendOptions O) : Opts(O) {}

FakeBackend::~FakeBackend() {
  if (Opts.RealMemory) {
    for (auto &[Addr, Bytes] : Allocations)
      std::free(reinterpret_cast<void *>(Addr));
    for (auto &[Addr, Bytes] : Pinned)
      std::free(reinterpret_cast<void *>(Addr));
  }
}

bool FakeBackend::shouldFail(FakeCallKind Kind) {
  if (!HasFailures.load(std::memory_order_relaxed))
    return false;
  auto It = Failures.find(Kind);
  if (It == Failures.end() || It->second == 0)
    return false;
  --It->second;
  return true;
}

BackendStatus FakeBackend::record(FakeCall C) {
  static const char *Names[] = {"cudaMallocManaged",        "cudaFree",
                                "cudaStreamCreate",         "cudaEventRecord",
                                "cudaStreamWaitEvent",      "cudaMemPrefetchBatchAsync",
                                "cudaMemDiscardBatchAsync", "cudaMemAdvise",
                                "cudaHostAlloc",            "cudaMemcpyAsync"};
  std::lock_guard<std::mutex> Lock(Mu);
  if (shouldFail(C.Kind))
    return BackendStatus::failure(2, Names[static_cast<int>(C.Kind)], "injected failure");
  C.Sequence = Sequence++;
  if (Opts.Record)
    Log.push_back(std::move(C));
  return BackendStatus::success();
}

uintptr_t FakeBackend::obtain(uint64_t Bytes) {
  // 2 MiB aligned, as managed allocations are.
  constexpr uint64_t Align = uint64_t{2} << 20;
  const uint64_t Rounded = (Bytes + Align - 1) / Align * Align;
  if (Opts.RealMemory)
    return reinterpret_cast<uintptr_t>(std::aligned_alloc(Align, Rounded));
  const uintptr_t Addr = NextAddress;
  NextAddress += Rounded;
  return Addr;
}

BackendStatus FakeBackend::allocateManaged(int Device, uint64_t Bytes, void **Out) {
  *Out = nullptr;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    if (shouldFail(FakeCallKind::AllocateManaged) || ManagedBytes.load() + Bytes > ManagedLimit)
      return BackendStatus::failure(2, "cudaMallocManaged", "out of memory");
    const uintptr_t Addr = obtain(Bytes);
    if (!Addr)
      return BackendStatus::failure(2, "cudaMallocManaged", "out of host memory");
    Allocations[Addr] = Bytes;
    ManagedBytes += Bytes;
    *Out = reinterpret_cast<void *>(Addr);
  }
  FakeCall C;
  C.Kind = FakeCallKind::AllocateManaged;
  C.Device = Device;
  C.Ranges.push_back({reinterpret_cast<uintptr_t>(*Out), Bytes});
  (void)record(std::move(C));
  return BackendStatus::success();
}

BackendStatus FakeBackend::freeManaged(int Device, void *Ptr) {
  {
    std::lock_guard<std::mutex> Lock(Mu);
    auto It = Allocations.find(reinterpret_cast<uintptr_t>(Ptr));
    if (It == Allocations.end())
      return BackendStatus::failure(1, "cudaFree", "invalid argument");
    ManagedBytes -= It->second;
    if (Opts.RealMemory)
      std::free(Ptr);
    Allocations.erase(It);
  }
  FakeCall C;
  C.Kind = FakeCallKind::FreeManaged;
  C.Device = Device;
  C.Ranges.push_back({reinterpret_cast<uintptr_t>(Ptr), 0});
  return record(std::move(C));
}

BackendStatus FakeBackend::createStream(int Device, StreamHandle *Out) {
  {
    std::lock_guard<std::mutex> Lock(Mu);
    *Out = 0x5000 + NextHandle++;
  }
  FakeCall C;
  C.Kind = FakeCallKind::CreateStream;
  C.Device = Device;
  C.Stream = *Out;
  return record(std::move(C));
}

BackendStatus FakeBackend::createEvent(int, EventHandle *Out) {
  std::lock_guard<std::mutex> Lock(Mu);
  *Out = 0x9000 + NextHandle++;
  Events[*Out] = true;
  return BackendStatus::success();
}

BackendStatus FakeBackend::destroyEvent(int, EventHandle Event) {
  std::lock_guard<std::mutex> Lock(Mu);
  Events.erase(Event);
  return BackendStatus::success();
}

BackendStatus FakeBackend::recordEvent(int Device, EventHandle Event, StreamHandle Stream) {
  FakeCall C;
  C.Kind = FakeCallKind::RecordEvent;
  C.Device = Device;
  C.Event = Event;
  C.Stream = Stream;
  BackendStatus S = record(std::move(C));
  if (S.ok()) {
    std::lock_guard<std::mutex> Lock(Mu);
    Events[Event] = Opts.EventsCompleteAtOnce;
  }
  return S;
}

BackendStatus FakeBackend::streamWaitEvent(int Device, StreamHandle Stream, EventHandle Event) {
  FakeCall C;
  C.Kind = FakeCallKind::StreamWaitEvent;
  C.Device = Device;
  C.Event = Event;
  C.Stream = Stream;
  return record(std::move(C));
}

EventState FakeBackend::queryEvent(int, EventHandle Event) {
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = Events.find(Event);
  if (It == Events.end())
    return EventState::Error;
  return It->second ? EventState::Complete : EventState::Pending;
}

BackendStatus FakeBackend::prefetchBatch(int Device, std::span<const MemRange> Ranges, int Location,
                                         StreamHandle Stream) {
  FakeCall C;
  C.Kind = FakeCallKind::Prefetch;
  C.Device = Device;
  C.Ranges.assign(Ranges.begin(), Ranges.end());
  C.Location = Location;
  C.Stream = Stream;
  return record(std::move(C));
}

BackendStatus FakeBackend::discardBatch(int Device, std::span<const MemRange> Ranges,
                                        StreamHandle Stream) {
  FakeCall C;
  C.Kind = FakeCallKind::Discard;
  C.Device = Device;
  C.Ranges.assign(Ranges.begin(), Ranges.end());
  C.Stream = Stream;
  BackendStatus S = record(std::move(C));
  if (S.ok() && Opts.RealMemory)
    for (const MemRange &R : Ranges)
      std::memset(reinterpret_cast<void *>(R.Address), 0xFF, R.Bytes);
  return S;
}

BackendStatus FakeBackend::allocatePinned(int Device, uint64_t Bytes, void **Out) {
  *Out = nullptr;
  {
    std::lock_guard<std::mutex> Lock(Mu);
    if (shouldFail(FakeCallKind::AllocatePinned) || PinnedBytes + Bytes > PinnedLimit)
      return BackendStatus::failure(2, "cudaHostAlloc", "out of memory");
    const uintptr_t Addr = obtain(Bytes);
    if (!Addr)
      return BackendStatus::failure(2, "cudaHostAlloc", "out of host memory");
    Pinned[Addr] = Bytes;
    PinnedBytes += Bytes;
    *Out = reinterpret_cast<void *>(Addr);
  }
  FakeCall C;
  C.Kind = FakeCallKind::AllocatePinned;
  C.Device = Device;
  C.Ranges.push_back({reinterpret_cast<uintptr_t>(*Out), Bytes});
  (void)record(std::move(C));
  return BackendStatus::success();
}

BackendStatus FakeBackend::freePinned(int, void *Ptr) {
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = Pinned.find(reinterpret_cast<uintptr_t>(Ptr));
  if (It == Pinned.end())
    return BackendStatus::failure(1, "cudaFreeHost", "invalid argument");
  PinnedBytes -= It->second;
  if (Opts.RealMemory)
    std::free(Ptr);
  Pinned.erase(It);
  return BackendStatus::success();
}

BackendStatus FakeBackend::copyAsync(int Device, void *Dst, const void *Src, uint64_t Bytes,
                                     StreamHandle Stream) {
  FakeCall C;
  C.Kind = FakeCallKind::Copy;
  C.Device = Device;
  C.Ranges.push_back({reinterpret_cast<uintptr_t>(Dst), Bytes});
  C.Source = reinterpret_cast<uintptr_t>(Src);
  C.Stream = Stream;
  BackendStatus S = record(std::move(C));
  if (S.ok() && Opts.RealMemory)
    std::memcpy(Dst, Src, Bytes);
  return S;
}

BackendStatus FakeBackend::advise(int Device, MemRange Range, MemAdvice Advice) {
  FakeCall C;
  C.Kind = FakeCallKind::Advise;
  C.Device = Device;
  C.Ranges.push_back(Range);
  C.Advice = Advice;
  return record(std::move(C));
}

bool FakeBackend::startLaunchTracking(LaunchObserver *O, std::string &Why) {
  if (!RefuseWhy.empty()) {
    Why = RefuseWhy;
    return false;
  }
  Observer = O;
  return true;
}

void FakeBackend::stopLaunchTracking() { Observer = nullptr; }

void FakeBackend::launch(int Device, StreamHandle Stream, uint64_t Id,
                         const std::vector<uint64_t> &Words) {
  if (!Observer)
    return;
  Observer->launchBegin(Device, Stream, &Id, 1);
  if (!Words.empty())
    Observer->launchArguments(Device, Stream, Words);
  else if (Opts.ReportsArguments)
    Observer->launchArgumentsUnknown(Device, Stream);
  Observer->launchEnd(Device, Stream);
}

void FakeBackend::launchGraph(int Device, StreamHandle Stream, const std::vector<uint64_t> &Ids) {
  if (!Observer)
    return;
  Observer->launchBegin(Device, Stream, Ids.data(), Ids.size());
  if (Opts.ReportsArguments)
    Observer->launchArgumentsUnknown(Device, Stream);
  Observer->launchEnd(Device, Stream);
}

void FakeBackend::completeEvents() {
  std::lock_guard<std::mutex> Lock(Mu);
  for (auto &[E, Done] : Events)
    Done = true;
}

void FakeBackend::failNext(FakeCallKind Kind, int Count) {
  std::lock_guard<std::mutex> Lock(Mu);
  Failures[Kind] += Count;
  HasFailures = true;
}

std::vector<FakeCall> FakeBackend::calls() const {
  std::lock_guard<std::mutex> Lock(Mu);
  return Log;
}

std::vector<FakeCall> FakeBackend::calls(FakeCallKind Kind) const {
  std::lock_guard<std::mutex> Lock(Mu);
  std::vector<FakeCall> Out;
  for (const FakeCall &C : Log)
    if (C.Kind == Kind)
      Out.push_back(C);
  return Out;
}

void FakeBackend::clearCalls() {
  std::lock_guard<std::mutex> Lock(Mu);
  Log.clear();
}

} // namespace deepum::executor
