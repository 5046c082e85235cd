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
// deepum_stats_json reports, as one JSON object, what each device did and
// whether its plan is replayed (and if not, why). With DEEPUM_STATS=path set
// when deepum starts, the same report (every device) is written to that path
// at exit: from an atexit handler, which makes no CUDA call (the runtime may
// be torn down by then), writes a temporary file and renames it over the path.
//
//===----------------------------------------------------------------------===//
#include "deepum/deepum.h"

#include "CApiBackend.h"

#include "deepum/executor/Executor.h"
#include "deepum/executor/Log.h"
#include "deepum/profiler/Hooks.h"

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

#include <unistd.h>

using namespace deepum::executor;

namespace {
std::atomic<Executor *> Global{nullptr};
std::mutex InitMu;

// DEEPUM_STATS as read at start (never freed: the exit handler needs it after
// static destructors may have run), and the process that registered the
// handler (a forked child that exits through atexit must not overwrite it).
const char *StatsPath = nullptr;
pid_t StatsPid = 0;

void writeStatsAtExit() {
  try {
    Executor *E = Global.load(std::memory_order_acquire);
    if (!E || !StatsPath || getpid() != StatsPid)
      return;
    std::string Json;
    if (!E->statsJson(kAllDevices, Json))
      return;
    Json += '\n';
    const std::string Tmp = std::string(StatsPath) + ".tmp." + std::to_string(getpid());
    std::FILE *F = std::fopen(Tmp.c_str(), "w");
    bool Ok = F && std::fwrite(Json.data(), 1, Json.size(), F) == Json.size();
    int Err = errno;
    if (F && std::fclose(F) != 0 && Ok) {
      Ok = false;
      Err = errno;
    }
    if (Ok && std::rename(Tmp.c_str(), StatsPath) != 0) {
      Ok = false;
      Err = errno;
    }
    if (!Ok) {
      if (F)
        std::remove(Tmp.c_str());
      log(LogLevel::Warn, "DEEPUM_STATS: cannot write %s: %s", StatsPath, std::strerror(Err));
    }
  } catch (...) {
  }
}

void registerStatsAtExit() {
  const char *Path = std::getenv("DEEPUM_STATS");
  if (!Path || !*Path)
    return;
  StatsPath = strdup(Path);
  StatsPid = getpid();
  if (!StatsPath || std::atexit(writeStatsAtExit) != 0)
    log(LogLevel::Warn, "DEEPUM_STATS: cannot arrange the report at exit; it is not written");
}

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
    registerStatsAtExit();
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
  uint64_t Call = 0;
  try {
    if (Executor *E = executor())
      Ptr = E->allocate(static_cast<uint64_t>(size), device, reinterpret_cast<StreamHandle>(stream),
                        &Call);
  } catch (...) {
    return nullptr;
  }
  if (Ptr) { // after the memory is obtained (Hooks.h)
    if (const deepum_profiler_hooks *H = profiler()) {
      if (H->version >= 2 && H->record_alloc_call)
        H->record_alloc_call(Ptr, static_cast<uint64_t>(size), reinterpret_cast<uint64_t>(stream),
                             Call);
      else
        H->record_alloc(Ptr, static_cast<uint64_t>(size), reinterpret_cast<uint64_t>(stream));
    }
  }
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

int deepum_stats_json(int device, char *buf, size_t size) {
  try {
    Executor *E = Global.load(std::memory_order_acquire);
    std::string Json;
    if (!E || !E->statsJson(device, Json) || Json.size() > 0x7fffffff)
      return -1;
    if (buf && size > 0) {
      size_t N = Json.size() < size - 1 ? Json.size() : size - 1;
      std::memcpy(buf, Json.data(), N);
      buf[N] = '\0';
    }
    return static_cast<int>(Json.size());
  } catch (...) {
    return -1;
  }
}

} // extern "C"
