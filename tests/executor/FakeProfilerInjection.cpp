//===- FakeProfilerInjection.cpp - The profiler's hooks, recorded -----------===//
//
// Stands in for libdeepum_profiler_injection.so in the C ABI's tests: exports
// deepum_profiler_get_hooks (deepum/profiler/Hooks.h) with a table that
// records every call, and fake_profiler_events() to read them back.
//
//===----------------------------------------------------------------------===//
#include "deepum/profiler/Hooks.h"

#include "FakeProfilerInjection.h"

#include <mutex>
#include <vector>

namespace {
std::mutex Mu;
std::vector<fake_profiler_event> Events;

void add(fake_profiler_event E) {
  std::lock_guard<std::mutex> Lock(Mu);
  Events.push_back(E);
}
/// Version 1's entry: a caller that has the call count must not use it.
void recordAlloc(const void *Ptr, uint64_t Bytes, uint64_t Stream) {
  add({FAKE_PROFILER_ALLOC, reinterpret_cast<uint64_t>(Ptr), Bytes, Stream, 0});
}
void recordAllocCall(const void *Ptr, uint64_t Bytes, uint64_t Stream, uint64_t Call) {
  add({FAKE_PROFILER_ALLOC, reinterpret_cast<uint64_t>(Ptr), Bytes, Stream, Call});
}
void recordFree(const void *Ptr) {
  add({FAKE_PROFILER_FREE, reinterpret_cast<uint64_t>(Ptr), 0, 0, 0});
}
void step() { add({FAKE_PROFILER_STEP, 0, 0, 0, 0}); }

const deepum_profiler_hooks Table = {DEEPUM_PROFILER_HOOKS_VERSION, recordAlloc, recordFree, step,
                                     recordAllocCall};
} // namespace

extern "C" {
__attribute__((visibility("default"))) const deepum_profiler_hooks *deepum_profiler_get_hooks() {
  return &Table;
}
__attribute__((visibility("default"))) size_t fake_profiler_events(fake_profiler_event *Out,
                                                                   size_t Max) {
  std::lock_guard<std::mutex> Lock(Mu);
  for (size_t I = 0; I < Events.size() && I < Max; ++I)
    Out[I] = Events[I];
  return Events.size();
}
}
