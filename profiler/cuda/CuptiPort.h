//===- CuptiPort.h - The profiler's access to the process's CUPTI -----------===//
//
// CUPTI allows one callback subscriber and one pair of activity-buffer
// callbacks per process; the executor owns them
// (deepum/cupti/Subscriber.h) so that profiler and executor can share a
// process. This thin class is the profiler's only door to them: it forwards
// to the shared CuptiSubscriber (deepum/cupti/Subscriber.h) when the build has it
// (SharedCuptiPort.cpp), and otherwise subscribes itself (OwnCuptiPort.cpp)
// with the same semantics, so switching is one CMake decision.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PROFILER_CUDA_CUPTIPORT_H
#define DEEPUM_PROFILER_CUDA_CUPTIPORT_H

#include <cupti.h>

#include <string>

namespace deepum::profiler::cuda {

using CuptiHandler = void (*)(void *UserData, CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                              const void *Data);

class CuptiPort {
public:
  /// Subscribes once; false (with a reason) when the subscriber is taken or CUPTI is unusable.
  virtual bool acquire() = 0;
  virtual std::string unavailableReason() const = 0;
  /// Handler for one callback; false when it could not be enabled.
  virtual bool addHandler(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid, CuptiHandler H,
                          void *UserData) = 0;
  /// The process's activity-buffer callbacks; false when someone else has them.
  virtual bool registerActivityBuffers(CUpti_BuffersCallbackRequestFunc Request,
                                       CUpti_BuffersCallbackCompleteFunc Complete) = 0;
  virtual CUptiResult enableActivity(CUpti_ActivityKind Kind) = 0;
  virtual CUptiResult disableActivity(CUpti_ActivityKind Kind) = 0;
  /// Forced flush: incomplete buffers are delivered too.
  virtual CUptiResult flushActivity() = 0;

protected:
  ~CuptiPort() = default;
};

/// The process's port (the executor's subscriber or the profiler's own).
CuptiPort &processCuptiPort();

} // namespace deepum::profiler::cuda

#endif // DEEPUM_PROFILER_CUDA_CUPTIPORT_H
