//===- HookTarget.cpp - The allocator's hooks, routed to one target ---------===//
#include "deepum/profiler/HookTarget.h"

#include <atomic>

namespace deepum::profiler {
namespace {

std::atomic<HookTarget *> Target{nullptr};

void hookAllocCall(const void *Ptr, uint64_t Bytes, uint64_t Stream, uint64_t Call) {
  if (HookTarget *T = Target.load(std::memory_order_acquire))
    T->allocation(Ptr, Bytes, Stream, Call);
}
void hookAlloc(const void *Ptr, uint64_t Bytes, uint64_t Stream) {
  hookAllocCall(Ptr, Bytes, Stream, 0); // version 1: no call count
}
void hookFree(const void *Ptr) {
  if (HookTarget *T = Target.load(std::memory_order_acquire))
    T->release(Ptr);
}
void hookStep() {
  if (HookTarget *T = Target.load(std::memory_order_acquire))
    T->step();
}

const deepum_profiler_hooks Table = {DEEPUM_PROFILER_HOOKS_VERSION, hookAlloc, hookFree, hookStep,
                                     hookAllocCall};

} // namespace

void setHookTarget(HookTarget *T) { Target.store(T, std::memory_order_release); }

const deepum_profiler_hooks *hookTable() { return &Table; }

} // namespace deepum::profiler
