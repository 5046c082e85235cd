//===- CApi.cpp - libdeepum's C ABI ----------------------------------------===//
//
// One process-wide executor over the CUDA backend, created at the first call
// (or by deepum_init) and deliberately never destroyed: PyTorch frees tensors
// from static destructors and atexit handlers, after ours would have run.
// No exception leaves these functions; a failure degrades to "no deepum"
// (allocation returns nullptr only when managed memory itself is exhausted).
//
// Under deepum-profile, allocations, frees and iteration ends are also
// reported to the profiler's recording interface (deepum/profiler/Hooks.h),
// found at run time in the injection library the driver loaded: libdeepum
// does not link the profiler, and without it the cost is one atomic load.
//
//===----------------------------------------------------------------------===//
#include "deepum/deepum.h"

#include "CApiBackend.h"

#include "deepum/executor/Executor.h"
#include "deepum/executor/Log.h"
#include "deepum/profiler/Hooks.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>

using namespace deepum::executor;

namespace {
std::atomic<Executor *> Global{nullptr};
std::mutex InitMu;

Executor *start(const char *PlanPath, bool &Created) {
  Created = false;
  if (Executor *E = Global.load(std::memory_order_acquire))
    return E;
  std::lock_guard<std::mutex> Lock(InitMu);
  if (Executor *E = Global.load(std::memory_order_acquire))
    return E;
  try {
    ExecutorConfig C = ExecutorConfig::fromEnvironment();
    if (PlanPath) {
      C.PlanPaths.clear();
      C.PlanPaths[kAllDevices] = PlanPath;
    }
    auto *E = new Executor(capiBackend(), std::move(C));
    Global.store(E, std::memory_order_release);
    Created = true;
    return E;
  } catch (...) {
    log(LogLevel::Error, "initialisation failed; allocations fall back to nothing");
    return nullptr;
  }
}

Executor *executor() {
  bool Created;
  return start(nullptr, Created);
}

// The profiler's hooks, looked up until found or given up on, then cached.
// The driver loads the injection library at cuInit, which our first
// allocation triggers, so a few calls before it find nothing: look again, up
// to kMaxProfilerLookups times. Without DEEPUM_PROFILER_LIBRARY (the launcher
// sets it) nothing is ever looked up.
constexpr unsigned kMaxProfilerLookups = 64;
std::atomic<const deepum_profiler_hooks *> ProfilerHooks{nullptr};
std::atomic<bool> ProfilerAbsent{false};
std::atomic<unsigned> ProfilerMisses{0};

const deepum_profiler_hooks *lookUpProfiler() {
  const char *Path = std::getenv("DEEPUM_PROFILER_LIBRARY");
  if (!Path || !*Path) {
    ProfilerAbsent.store(true, std::memory_order_relaxed);
    return nullptr;
  }
  if (const deepum_profiler_hooks *H = deepum_profiler_find_hooks()) {
    if (!ProfilerHooks.exchange(H, std::memory_order_acq_rel))
      log(LogLevel::Info, "reporting allocations and iterations to the profiler");
    return H;
  }
  if (ProfilerMisses.fetch_add(1, std::memory_order_relaxed) + 1 == kMaxProfilerLookups) {
    ProfilerAbsent.store(true, std::memory_order_relaxed);
    log(LogLevel::Warn, "DEEPUM_PROFILER_LIBRARY is set but its recording hooks were not "
                        "found; allocations are not reported to the profiler");
  }
  return nullptr;
}

const deepum_profiler_hooks *profiler() {
  if (const deepum_profiler_hooks *H = ProfilerHooks.load(std::memory_order_acquire))
    return H;
  if (ProfilerAbsent.load(std::memory_order_relaxed))
    return nullptr;
  try { // never let the lookup (or its log line) break the allocator
    return lookUpProfiler();
  } catch (...) {
    ProfilerAbsent.store(true, std::memory_order_relaxed);
    return nullptr;
  }
}
} // namespace

extern "C" {

int deepum_init(const char *plan_path) {
  bool Created = false;
  start(plan_path, Created);
  return Created ? 0 : -1;
}

void *deepum_malloc(ssize_t size, int device, void *stream) {
  if (size <= 0)
    return nullptr;
  void *Ptr = nullptr;
  try {
    if (Executor *E = executor())
      Ptr =
          E->allocate(static_cast<uint64_t>(size), device, reinterpret_cast<StreamHandle>(stream));
  } catch (...) {
    return nullptr;
  }
  if (Ptr) // after the memory is obtained (Hooks.h)
    if (const deepum_profiler_hooks *H = profiler())
      H->record_alloc(Ptr, static_cast<uint64_t>(size), reinterpret_cast<uint64_t>(stream));
  return Ptr;
}

void deepum_free(void *ptr, ssize_t, int device, void *stream) {
  if (!ptr)
    return;
  if (const deepum_profiler_hooks *H = profiler()) // before it is given back (Hooks.h)
    H->record_free(ptr);
  try {
    if (Executor *E = Global.load(std::memory_order_acquire))
      E->deallocate(ptr, device, reinterpret_cast<StreamHandle>(stream));
  } catch (...) {
  }
}

void deepum_step(void) {
  try {
    if (Executor *E = executor())
      E->markIteration();
  } catch (...) {
  }
  if (const deepum_profiler_hooks *H = profiler())
    H->step();
}

int deepum_get_stats(int device, deepum_stats_t *out, size_t out_size) {
  if (!out)
    return -1;
  Executor *E = Global.load(std::memory_order_acquire);
  deepum_stats_t S{};
  if (!E || !E->stats(device, S))
    return -1;
  std::memcpy(out, &S, out_size < sizeof S ? out_size : sizeof S);
  return 0;
}

} // extern "C"
