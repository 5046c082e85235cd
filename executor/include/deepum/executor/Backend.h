//===- deepum/executor/Backend.h - Everything the executor asks of a GPU ---===//
//
// All CUDA and CUPTI calls of the executor go through this one interface. Three
// implementations: CudaBackend (executor/cuda, the only code that includes
// CUDA headers), FakeBackend (records calls, hands out fake addresses; unit
// tests and benchmarks) and SimBackend (drives deepum-sim's engine).
//
// Every call reports failure as a BackendStatus and never throws: the executor
// counts and logs failures and carries on, because it must never break the
// training process it lives in.
//
// Handles are opaque integers: a stream is the cudaStream_t value (0 = the
// legacy default stream), an event is whatever the backend chooses.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_BACKEND_H
#define DEEPUM_EXECUTOR_BACKEND_H

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

namespace deepum::executor {

using StreamHandle = uintptr_t;
using EventHandle = uintptr_t;

/// Destination of a prefetch: a device ordinal, or the host.
inline constexpr int kHostLocation = -1;

struct BackendStatus {
  int Code = 0;          ///< 0 = success; otherwise the backend's error code.
  const char *Call = ""; ///< Name of the failing call, e.g. "cudaMemPrefetchBatchAsync".
  std::string Message;   ///< The backend's error string.
  bool ok() const { return Code == 0; }
  static BackendStatus success() { return {}; }
  static BackendStatus failure(int Code, const char *Call, std::string Message) {
    return {Code, Call, std::move(Message)};
  }
};

/// A byte range of managed memory.
struct MemRange {
  uintptr_t Address = 0;
  uint64_t Bytes = 0;
};

/// The page the executor rounds managed ranges to before they reach the
/// backend: discards inward (whole pages inside the range only, so a driver
/// that works in pages never touches a byte of a neighbour), prefetches and
/// evictions outward (every page the range touches). CUDA 13 documents no
/// alignment for cudaMemDiscardBatchAsync and rounds prefetch ranges to the
/// CPU page itself; Unified Memory migrates and keeps residency in 64 KiB GPU
/// pages (as the stand-in's model does), which is also the largest CPU page
/// of the hosts CUDA supports.
inline constexpr uint64_t kManagedPageBytes = uint64_t{64} << 10;

/// cudaMemAdvise advice, mirroring deepum.v1.Advice.
enum class MemAdvice {
  SetReadMostly,
  UnsetReadMostly,
  SetPreferredLocationDevice,
  SetPreferredLocationHost,
  UnsetPreferredLocation,
  SetAccessedByDevice,
  UnsetAccessedByDevice,
};

enum class EventState { Complete, Pending, Error };

/// Receives kernel launches observed by the backend (CUPTI callbacks on a GPU).
/// launchBegin runs before the launch is enqueued (API enter), launchEnd after
/// (API exit). A CUDA graph launch delivers all its kernels' execution IDs in
/// one launchBegin. Called on the launching thread, possibly concurrently.
class LaunchObserver {
public:
  virtual ~LaunchObserver() = default;
  virtual void launchBegin(int Device, StreamHandle Stream, const uint64_t *ExecutionIds,
                           size_t Count) = 0;
  virtual void launchEnd(int Device, StreamHandle Stream) = 0;
  /// The words of the launch just begun (deepum/cupti/KernelParams.h: every
  /// 8-byte-aligned word inside a parameter), when the backend could read its
  /// arguments: on the launching thread, after launchBegin, before the launch
  /// is enqueued. The memory they point into is what the kernel may touch.
  virtual void launchArguments(int Device, StreamHandle Stream, std::span<const uint64_t> Words) {
    (void)Device;
    (void)Stream;
    (void)Words;
  }
  /// The launch just begun carries arguments the backend could not read (no
  /// parameter layout, a graph's kernels): it may touch any memory. On the
  /// launching thread, before the launch is enqueued.
  virtual void launchArgumentsUnknown(int Device, StreamHandle Stream) {
    (void)Device;
    (void)Stream;
  }
  /// The host is about to wait for the whole device (cudaDeviceSynchronize):
  /// after it, it may read any managed memory. On the calling thread, before
  /// the wait begins.
  virtual void hostSynchronize(int Device) { (void)Device; }
};

class Backend {
public:
  virtual ~Backend() = default;

  /// Short name for logs: "cuda", "fake", "sim".
  virtual const char *name() const = 0;
  /// Devices visible to the process (0 when there is no GPU).
  virtual int deviceCount() = 0;
  /// Total memory of `Device`, bytes (0 when unknown).
  virtual uint64_t deviceMemoryBytes(int Device) = 0;

  /// cudaMallocManaged on `Device` (the current device is set as needed).
  virtual BackendStatus allocateManaged(int Device, uint64_t Bytes, void **Out) = 0;
  virtual BackendStatus freeManaged(int Device, void *Ptr) = 0;

  /// A non-blocking stream for the executor's own migrations.
  virtual BackendStatus createStream(int Device, StreamHandle *Out) = 0;
  virtual BackendStatus createEvent(int Device, EventHandle *Out) = 0;
  virtual BackendStatus destroyEvent(int Device, EventHandle Event) = 0;
  virtual BackendStatus recordEvent(int Device, EventHandle Event, StreamHandle Stream) = 0;
  /// `Stream` waits (on the GPU, not the CPU) until `Event` has completed.
  virtual BackendStatus streamWaitEvent(int Device, StreamHandle Stream, EventHandle Event) = 0;
  virtual EventState queryEvent(int Device, EventHandle Event) = 0;
  /// An event that can time the work between two records on one stream
  /// (the events above may not: timing makes a record dearer). Backends
  /// that cannot time hand out a plain event.
  virtual BackendStatus createTimedEvent(int Device, EventHandle *Out) {
    return createEvent(Device, Out);
  }
  /// GPU time between two completed timed events, ns: false while either is
  /// pending, or when the backend cannot time them.
  virtual bool elapsedNs(int Device, EventHandle Start, EventHandle End, uint64_t &Ns) {
    (void)Device, (void)Start, (void)End, (void)Ns;
    return false;
  }

  /// cudaMemPrefetchBatchAsync of `Ranges` to `Location` (device or host).
  virtual BackendStatus prefetchBatch(int Device, std::span<const MemRange> Ranges, int Location,
                                      StreamHandle Stream) = 0;
  /// cudaMemDiscardBatchAsync: contents become undefined, no write-back.
  virtual BackendStatus discardBatch(int Device, std::span<const MemRange> Ranges,
                                     StreamHandle Stream) = 0;
  virtual BackendStatus advise(int Device, MemRange Range, MemAdvice Advice) = 0;

  /// Page-locked host memory (cudaHostAlloc): the copy path's pool.
  virtual BackendStatus allocatePinned(int Device, uint64_t Bytes, void **Out) = 0;
  virtual BackendStatus freePinned(int Device, void *Ptr) = 0;
  /// cudaMemcpyAsync of `Bytes` from `Src` to `Dst` on `Stream`: between
  /// managed memory and the pinned pool, either way.
  virtual BackendStatus copyAsync(int Device, void *Dst, const void *Src, uint64_t Bytes,
                                  StreamHandle Stream) = 0;
  /// Whether every launch reaches the observer with its arguments
  /// (launchArguments) or as unreadable (launchArgumentsUnknown): what the
  /// copy path's safety rests on (docs/executor.md, "The copy path").
  virtual bool reportsLaunchArguments() const { return false; }

  /// Starts delivering launches to `Observer`. False (with `Why` set) when the
  /// backend cannot observe launches, e.g. the CUPTI subscriber is taken.
  virtual bool startLaunchTracking(LaunchObserver *Observer, std::string &Why) = 0;
  virtual void stopLaunchTracking() = 0;
  /// Launches the backend saw but could not decode into execution IDs (the
  /// executor never hears of them; reported in its statistics).
  virtual uint64_t undecodedLaunches() { return 0; }
};

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_BACKEND_H
