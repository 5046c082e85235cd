//===- deepum/profiler/HookTarget.h - Where the allocator's hooks lead ------===//
//
// The C table of deepum/profiler/Hooks.h is defined here, in the
// device-independent library, and forwards to one HookTarget: the injection
// library installs its profiler, tests install a recorder with a fake clock
// and call the C functions by hand, exactly as the allocator will.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PROFILER_HOOKTARGET_H
#define DEEPUM_PROFILER_HOOKTARGET_H

#include "deepum/profiler/Hooks.h"
#include "deepum/profiler/Recorder.h"

#include <cstdint>
#include <functional>

namespace deepum::profiler {

class HookTarget {
public:
  /// `Call`: the allocator's call count (Hooks.h, record_alloc_call); 0 = unknown.
  virtual void allocation(const void *Ptr, uint64_t Bytes, uint64_t Stream, uint64_t Call) = 0;
  virtual void release(const void *Ptr) = 0;
  virtual void step() = 0;

protected:
  ~HookTarget() = default;
};

/// Routes the hooks to `T`; null makes them do nothing (not profiling).
void setHookTarget(HookTarget *T);

/// The table deepum_profiler_get_hooks() returns.
const deepum_profiler_hooks *hookTable();

/// Allocation records into a Recorder, stamped by `Clock`; step() calls `OnStep`.
class RecorderHookTarget final : public HookTarget {
public:
  RecorderHookTarget(Recorder &Rec, std::function<uint64_t()> Now, std::function<void()> Step)
      : R(Rec), Clock(std::move(Now)), OnStep(std::move(Step)) {}
  void allocation(const void *Ptr, uint64_t Bytes, uint64_t Stream, uint64_t Call) override {
    R.addAllocation(reinterpret_cast<uint64_t>(Ptr), Bytes, Stream, Clock(),
                    AllocationSource::Allocator, Call);
  }
  void release(const void *Ptr) override {
    R.addFree(reinterpret_cast<uint64_t>(Ptr), Clock(), AllocationSource::Allocator);
  }
  void step() override { OnStep(); }

private:
  Recorder &R;
  std::function<uint64_t()> Clock;
  std::function<void()> OnStep;
};

} // namespace deepum::profiler

#endif // DEEPUM_PROFILER_HOOKTARGET_H
