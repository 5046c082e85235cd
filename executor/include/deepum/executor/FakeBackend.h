//===- deepum/executor/FakeBackend.h - A recording backend for tests ------===//
//
// Hands out fake (or, on request, real host) memory, completes events at once
// or when the test says, records every call, fails calls on request, and lets a
// test play kernel launches into the executor. No GPU, no CUDA headers.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_FAKEBACKEND_H
#define DEEPUM_EXECUTOR_FAKEBACKEND_H

#include "deepum/executor/Backend.h"

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace deepum::executor {

enum class FakeCallKind {
  AllocateManaged,
  FreeManaged,
  CreateStream,
  RecordEvent,
  StreamWaitEvent,
  Prefetch,
  Discard,
  Advise,
  AllocatePinned,
  Copy,
};

struct FakeCall {
  FakeCallKind Kind = FakeCallKind::AllocateManaged;
  int Device = 0;
  std::vector<MemRange> Ranges;
  int Location = 0; ///< Prefetch destination.
  StreamHandle Stream = 0;
  EventHandle Event = 0;
  MemAdvice Advice = MemAdvice::SetReadMostly;
  uint64_t Sequence = 0; ///< Global call order.
  uintptr_t Source = 0;  ///< Copy: where from (Ranges[0]: where to, and how many bytes).
};

struct FakeBackendOptions {
  int Devices = 1;
  uint64_t DeviceMemoryBytes = uint64_t{16} << 30;
  /// Back allocations with real host memory (tests that write into blocks).
  bool RealMemory = false;
  /// Keep a log of calls (off for benchmarks).
  bool Record = true;
  /// Events complete when recorded; otherwise only via completeEvents().
  bool EventsCompleteAtOnce = true;
  /// reportsLaunchArguments(): launch() hands the observer its words, or
  /// says they are unknown when it has none.
  bool ReportsArguments = true;
};

class FakeBackend final : public Backend {
public:
  explicit FakeBackend(FakeBackendOptions O = {});
  ~FakeBackend() override;

  const char *name() const override { return "fake"; }
  int deviceCount() override { return Opts.Devices; }
  uint64_t deviceMemoryBytes(int) override { return Opts.DeviceMemoryBytes; }
  BackendStatus allocateManaged(int Device, uint64_t Bytes, void **Out) override;
  BackendStatus freeManaged(int Device, void *Ptr) override;
  BackendStatus createStream(int Device, StreamHandle *Out) override;
  BackendStatus createEvent(int Device, EventHandle *Out) override;
  BackendStatus destroyEvent(int Device, EventHandle Event) override;
  BackendStatus recordEvent(int Device, EventHandle Event, StreamHandle Stream) override;
  BackendStatus streamWaitEvent(int Device, StreamHandle Stream, EventHandle Event) override;
  EventState queryEvent(int Device, EventHandle Event) override;
  BackendStatus prefetchBatch(int Device, std::span<const MemRange> Ranges, int Location,
                              StreamHandle Stream) override;
  BackendStatus discardBatch(int Device, std::span<const MemRange> Ranges,
                             StreamHandle Stream) override;
  BackendStatus advise(int Device, MemRange Range, MemAdvice Advice) override;
  /// With RealMemory, copies move the bytes at once and discards fill the
  /// whole pages with 0xFF (as the CUDA stand-in does): a read of discarded
  /// data shows.
  BackendStatus allocatePinned(int Device, uint64_t Bytes, void **Out) override;
  BackendStatus freePinned(int Device, void *Ptr) override;
  BackendStatus copyAsync(int Device, void *Dst, const void *Src, uint64_t Bytes,
                          StreamHandle Stream) override;
  bool reportsLaunchArguments() const override { return Opts.ReportsArguments; }
  bool startLaunchTracking(LaunchObserver *Observer, std::string &Why) override;
  void stopLaunchTracking() override;

  // --- test controls ---
  /// Plays one kernel launch (begin then end) into the tracking observer;
  /// with `Words`, its arguments' words between the two, as the CUDA backend
  /// hands them (launchArguments); without, the arguments are unknown
  /// (launchArgumentsUnknown) when ReportsArguments is set.
  void launch(int Device, StreamHandle Stream, uint64_t ExecutionId,
              const std::vector<uint64_t> &Words = {});
  /// Plays a graph launch: several kernels in one begin.
  void launchGraph(int Device, StreamHandle Stream, const std::vector<uint64_t> &Ids);
  /// Completes every recorded event (EventsCompleteAtOnce = false).
  void completeEvents();
  /// The next `Count` calls of `Kind` fail.
  void failNext(FakeCallKind Kind, int Count);
  /// Launch tracking is refused with this reason (the CUPTI-subscriber-taken case).
  void refuseTracking(std::string Why) { RefuseWhy = std::move(Why); }
  /// Allocations fail beyond this many bytes in total.
  void setManagedLimit(uint64_t Bytes) { ManagedLimit = Bytes; }
  /// Pinned allocations fail beyond this many bytes in total.
  void setPinnedLimit(uint64_t Bytes) { PinnedLimit = Bytes; }

  std::vector<FakeCall> calls() const;
  std::vector<FakeCall> calls(FakeCallKind Kind) const;
  void clearCalls();
  uint64_t managedBytes() const { return ManagedBytes.load(); }
  LaunchObserver *observer() const { return Observer; }

private:
  BackendStatus record(FakeCall C);
  /// Memory for an allocation of `Bytes`: real (RealMemory) or a fake
  /// address, 2 MiB aligned; 0 when the host has none. Mu held.
  uintptr_t obtain(uint64_t Bytes);
  bool shouldFail(FakeCallKind Kind);

  FakeBackendOptions Opts;
  mutable std::mutex Mu;
  std::vector<FakeCall> Log;
  std::map<FakeCallKind, int> Failures;
  std::map<EventHandle, bool> Events; // handle -> complete
  std::map<uintptr_t, uint64_t> Allocations;
  std::atomic<uint64_t> ManagedBytes{0};
  uint64_t ManagedLimit = ~uint64_t{0};
  uint64_t PinnedLimit = ~uint64_t{0};
  uint64_t PinnedBytes = 0;
  std::map<uintptr_t, uint64_t> Pinned;
  uint64_t NextAddress = uint64_t{1} << 44;
  uint64_t NextHandle = 1;
  uint64_t Sequence = 0;
  std::atomic<bool> HasFailures{false};
  LaunchObserver *Observer = nullptr;
  std::string RefuseWhy;
};

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_FAKEBACKEND_H
