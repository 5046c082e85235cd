//===- CApi.cpp - libdeepum's C ABI ----------------------------------------===//
//
// One process-wide executor over the CUDA backend, created at the first call
// (or by deepum_init) and deliberately never destroyed: PyTorch frees tensors
// from static destructors and atexit handlers, after ours would have run.
// No exception leaves these functions; a failure degrades to "no deepum"
// (allocation returns nullptr only when managed memory itself is exhausted).
//
//===----------------------------------------------------------------------===//
#include "deepum/deepum.h"

#include "deepum/executor/Executor.h"
#include "deepum/executor/Log.h"
#include "deepum/executor/cuda/CudaBackend.h"

#include <atomic>
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
    static Backend *B = cuda::createCudaBackend().release();
    auto *E = new Executor(*B, std::move(C));
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
  try {
    Executor *E = executor();
    return E ? E->allocate(static_cast<uint64_t>(size), device,
                           reinterpret_cast<StreamHandle>(stream))
             : nullptr;
  } catch (...) {
    return nullptr;
  }
}

void deepum_free(void *ptr, ssize_t, int device, void *stream) {
  if (!ptr)
    return;
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
