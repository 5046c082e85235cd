//===- deepum/cupti/Subscriber.h - The process's one CUPTI subscriber ------===//
//
// CUPTI allows one callback subscriber per process. The executor (launch
// tracking) and the profiler (kernel, UM-counter and allocation recording)
// both need one, and may run in the same process, so neither calls
// cuptiSubscribe itself: both register handlers with this object, which
// subscribes once and dispatches each callback to every handler registered
// for that (domain, callback ID).
//
// When another tool (torch.profiler, Nsight Systems/Compute,
// compute-sanitizer) already holds the subscriber, acquire() fails, the
// reason is kept, and the caller degrades (the executor keeps working as a
// plain allocator; the profiler records nothing). Nothing here aborts.
//
// The subscriber is a component of its own (cupti/), below both the profiler
// and the executor, so that neither depends on the other for it.
//
// One instance per process, even across shared objects: libdeepum.so and the
// profiler's injection library each contain this code, with their symbols
// hidden. The first to hold the subscriber exports a C function table
// (deepum_cupti_v1, in each library's version script); every other copy finds
// it with dlopen(RTLD_NOLOAD) on the known libraries (works for libraries
// loaded RTLD_LOCAL, as PyTorch and the CUDA driver load them) and forwards
// every call to it instead of subscribing a second time.
//
// Activity buffers are process-wide too (cuptiActivityRegisterCallbacks
// takes one pair); registerActivityBuffers() hands them to the first caller
// only, so two components cannot silently steal each other's records.
//
// Thread safety: every member may be called from any thread. Handlers run on
// the thread that made the CUDA call, possibly concurrently; a handler must not
// add or remove handlers from inside a callback.
//
// Contract with the profiler (stable): this header's names and semantics.
// Kernel names handed to the executor's launch hook are CUpti_CallbackData::
// symbolName (the mangled name), which is also what CUpti_ActivityKernel*::name
// reports; profiles must record that same string for execution IDs to match.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_CUPTI_SUBSCRIBER_H
#define DEEPUM_CUPTI_SUBSCRIBER_H

#include <cupti.h>

#include <cstdint>
#include <string>

namespace deepum::cupti {

/// A callback handler: `Data` points to CUpti_CallbackData (API domains),
/// CUpti_ResourceData (resource domain), CUpti_SynchronizeData, ... exactly as
/// CUPTI passes it; valid only during the call.
using CuptiHandler = void (*)(void *UserData, CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                              const void *Data);

/// Handle for removing a handler; 0 is never a valid handle.
using CuptiHandlerId = uint64_t;

struct CuptiTableV1;

class CuptiSubscriber {
public:
  /// The process-wide instance (constructed on first use, never destroyed so
  /// callbacks arriving during exit find it alive).
  static CuptiSubscriber &instance();

  /// Subscribes on first call; later calls return the first result. False
  /// when CUPTI is unusable (another subscriber, no driver, CUPTI missing);
  /// unavailableReason() then says why in one line.
  bool acquire();
  bool available() const;
  std::string unavailableReason() const;

  /// Adds `Handler` for one callback ID of `Domain` and enables that callback
  /// in CUPTI. Returns 0 (and registers nothing) when the subscriber is not
  /// available or enabling failed.
  CuptiHandlerId addHandler(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                            CuptiHandler Handler, void *UserData);
  /// Adds `Handler` for every callback of `Domain` (e.g. the resource domain).
  CuptiHandlerId addDomainHandler(CUpti_CallbackDomain Domain, CuptiHandler Handler,
                                  void *UserData);
  /// Removes a handler. The CUPTI callback stays enabled (cheap; other
  /// handlers may share it). After return the handler is no longer called.
  void removeHandler(CuptiHandlerId Id);

  /// Registers the activity-buffer callbacks; true for the first caller only.
  bool registerActivityBuffers(CUpti_BuffersCallbackRequestFunc Request,
                               CUpti_BuffersCallbackCompleteFunc Complete);
  /// cuptiActivityEnable / cuptiActivityDisable, logged on failure.
  CUptiResult enableActivity(CUpti_ActivityKind Kind);
  CUptiResult disableActivity(CUpti_ActivityKind Kind);
  /// cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED).
  CUptiResult flushActivity();

  /// True when this copy itself subscribed (not forwarding to a peer library).
  bool holdsSubscriber() const;

  CuptiSubscriber(const CuptiSubscriber &) = delete;
  CuptiSubscriber &operator=(const CuptiSubscriber &) = delete;

  struct State; // implementation detail (public only for the C callback)

private:
  CuptiSubscriber() = default;
  ~CuptiSubscriber() = default;
  State &state() const;
  bool localAcquire();
  const CuptiTableV1 *peer() const;
};

/// The cross-library table (C ABI, append-only). `Size` is sizeof the table.
struct CuptiTableV1 {
  uint32_t Size;
  int (*Acquire)();
  int (*Available)();
  /// Writes the reason into Buf (NUL-terminated, truncated).
  void (*UnavailableReason)(char *Buf, size_t Len);
  uint64_t (*AddHandler)(int Domain, uint32_t Cbid, CuptiHandler Handler, void *UserData);
  void (*RemoveHandler)(uint64_t Id);
  int (*RegisterActivityBuffers)(CUpti_BuffersCallbackRequestFunc,
                                 CUpti_BuffersCallbackCompleteFunc);
  int (*EnableActivity)(int Kind);
  int (*DisableActivity)(int Kind);
  int (*FlushActivity)();
};

/// Libraries probed for a peer table (sonames), in order.
inline constexpr const char *kCuptiPeerLibraries[] = {"libdeepum.so.0", "libdeepum.so",
                                                      "libdeepum_profiler_injection.so"};

} // namespace deepum::cupti

extern "C" {
/// This library's table (exported from shared libraries that contain Subscriber.cpp).
const deepum::cupti::CuptiTableV1 *deepum_cupti_v1(void);
}

#endif // DEEPUM_CUPTI_SUBSCRIBER_H
