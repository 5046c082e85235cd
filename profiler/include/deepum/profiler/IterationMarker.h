//===- deepum/profiler/IterationMarker.h - Callbacks to iteration marks -----===//
//
// Decides which profiler-API and NVTX callbacks are iteration marks. The
// injection library (profiler/cuda/Injection.cpp) translates each CUPTI
// callback into one of the plain calls below and applies the answer to the
// Recorder (MarkAction::Begin -> Recorder::beginIteration, End ->
// endIteration). No CUDA or CUPTI here, so every rule is unit-tested.
//
// Without a step range (--step-range not given):
//   - cudaProfilerStart begins an iteration when it returns, and
//     cudaProfilerStop ends one when it is entered (work launched before the
//     stop belongs to the iteration). The driver's cuProfilerStart/Stop do the
//     same, except inside a cudaProfilerStart/Stop on the same thread: the
//     runtime may or may not reach the driver's callbacks, so one call is one
//     mark whichever of the two fire.
//   - NVTX ranges are no marks.
// With a step range NAME:
//   - only NVTX ranges whose ASCII message is exactly NAME are marks (any
//     domain). A push or start of NAME begins an iteration; the pop or end
//     of that range ends it. Profiler start/stop calls are no marks.
//   - Push/pop ranges nest per thread (ThreadState): a pop ends an iteration
//     only when the push it closes was NAME, so other ranges inside or
//     around the step range are ignored. A pop with nothing pushed on its
//     thread is ignored.
//   - Start/end ranges are matched by range id, across threads. An end of
//     an id that no step start returned (another range's, or one already
//     ended) is ignored.
//   - Nothing is merged: a NAME range nested in another NAME range gives
//     begin, begin, end, end. The Recorder ends the open iteration at the
//     second begin and ignores the end that has no open iteration.
//   - A NAME that never appears gives no mark at all: the whole run is then
//     one iteration (Recorder).
//
// Thread-safe: the start/end ranges are shared under a mutex; everything
// per-thread lives in the caller's ThreadState (thread_local in Injection.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PROFILER_ITERATIONMARKER_H
#define DEEPUM_PROFILER_ITERATIONMARKER_H

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

namespace deepum::profiler {

/// Which API a profiler start/stop callback came from.
enum class ProfilerApi {
  Runtime, // cudaProfilerStart/cudaProfilerStop
  Driver,  // cuProfilerStart/cuProfilerStop
};

/// Where in the API call a callback fires.
enum class CallSite { Enter, Exit };

/// What a callback means for the recorder.
enum class MarkAction {
  None,
  Begin, // Recorder::beginIteration
  End,   // Recorder::endIteration
};

const char *markActionName(MarkAction A);

class IterationMarker {
public:
  /// One thread's state; keep one per thread (thread_local) and pass it to
  /// every call made on that thread.
  struct ThreadState {
    /// Open push/pop ranges on this thread, innermost last: whether each is the step range.
    std::vector<bool> Pushed;
    /// Between the enter and exit of a cudaProfilerStart/Stop on this thread.
    bool InsideRuntimeProfilerCall = false;
  };

  /// `StepRange` empty: marks come from profiler start/stop, not NVTX.
  explicit IterationMarker(std::string StepRange);

  const std::string &stepRange() const { return StepRange; }
  /// Whether NVTX ranges are the marks (then the NVTX callbacks are needed).
  bool usesRanges() const { return !StepRange.empty(); }

  /// cudaProfilerStart (Runtime) or cuProfilerStart (Driver).
  MarkAction profilerStart(ThreadState &T, ProfilerApi Api, CallSite Site);
  /// cudaProfilerStop (Runtime) or cuProfilerStop (Driver).
  MarkAction profilerStop(ThreadState &T, ProfilerApi Api, CallSite Site);

  /// nvtxRangePush/nvtxDomainRangePushEx; `Name` is null when the message is
  /// not ASCII (unicode, registered strings): then it is no step range.
  MarkAction rangePush(ThreadState &T, const char *Name);
  /// nvtxRangePop/nvtxDomainRangePop.
  MarkAction rangePop(ThreadState &T);
  /// nvtxRangeStart/nvtxDomainRangeStartEx returning `Id` (none when CUPTI
  /// gave no return value: such a range cannot be ended, so it is no mark).
  MarkAction rangeStart(const char *Name, std::optional<uint64_t> Id);
  /// nvtxRangeEnd/nvtxDomainRangeEnd of `Id`.
  MarkAction rangeEnd(uint64_t Id);

private:
  bool isStep(const char *Name) const;
  MarkAction profilerCall(ThreadState &T, ProfilerApi Api, CallSite Site, bool Start);

  const std::string StepRange;
  std::mutex Mu;
  /// Ids of step ranges started and not yet ended.
  std::unordered_set<uint64_t> OpenRanges;
};

} // namespace deepum::profiler

#endif // DEEPUM_PROFILER_ITERATIONMARKER_H
