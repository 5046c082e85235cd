//===- Launches.cpp - The launch hook: where the program is in the plan -----===//
//
// launchBegin/launchEnd (the backend's LaunchObserver) and markIteration:
// each launch goes through the device's PlanCursor (position, resync,
// turning off); a matched position's actions are issued (Actions.cpp), those
// of positions the program skipped too, and the releases of the launch's own
// data wait for its launchEnd on the same thread.
//
// Locking: everything here runs under the device's LaunchMu (DeviceState.h);
// markIteration takes AllocMu for the allocation sequence first and releases
// it before taking LaunchMu. PlanOn is read without the lock first (the hook
// costs one atomic load when no plan is replayed) and again under it.
//
//===----------------------------------------------------------------------===//
#include "DeviceState.h"

#include "deepum/executor/Log.h"

#include <mutex>
#include <thread>

namespace deepum::executor {

using namespace detail;

/// The cursor turned off: say why, once, and stop replaying (the allocator
/// carries on). Whatever is in the copy path's pool comes back first, on
/// `Stream`. Called with LaunchMu held.
static void turnPlanOff(Backend &Back, Executor::DeviceState &D, StreamHandle Stream) {
  log(LogLevel::Warn, "device %d: %s", D.Device, D.Cursor->offReason().c_str());
  D.setWhyNot("plan turned off: " + D.Cursor->offReason());
  if (D.CopyPath)
    restoreAllPooled(Back, D, Stream, /*Launch=*/false);
  D.PlanOn = false;
}

void Executor::markIteration() {
  ExplicitSteps.store(true, std::memory_order_relaxed);
  for (int I = 0; I < kMaxDevices; ++I) {
    DeviceState *D = device(I);
    if (!D || !D->HasPlan.load(std::memory_order_acquire))
      continue;
    {
      std::lock_guard<std::mutex> Lock(D->AllocMu);
      D->NextSequence = D->Plan->FirstIterationSequence;
    }
    std::lock_guard<std::mutex> Lock(D->LaunchMu);
    if (!D->Cursor)
      continue;
    D->Cursor->markIteration();
    if (D->Cursor->takeOffNotice())
      turnPlanOff(Back, *D, D->ActionStream);
  }
}

void Executor::launchBegin(int Device, StreamHandle Stream, const uint64_t *Ids, size_t Count) {
  DeviceState *D = device(Device);
  if (!D)
    return;
  bump(D->C.Launches, static_cast<uint64_t>(Count));
  if (!D->PlanOn.load(std::memory_order_acquire))
    return;
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
  if (!D->PlanOn.load(std::memory_order_relaxed))
    return;
  clockFor(D->ComputeClocks, Stream).Dirty = true;
  PlanCursor &Cur = *D->Cursor;
  const uint32_t N = static_cast<uint32_t>(D->Plan->positions());
  for (size_t I = 0; I < Count; ++I) {
    uint32_t Skipped = 0;
    uint32_t Pos = Cur.advance(Ids[I], Skipped);
    if (Cur.takeOffNotice()) {
      turnPlanOff(Back, *D, Stream);
      return;
    }
    if (Cur.takeIterationWrap())
      D->WrapPending = true;
    if (Pos == PlanCursor::kNoPosition)
      continue;
    // Positions the program skipped still carry useful actions (a prefetch
    // for a later kernel, an eviction that makes room).
    for (uint32_t S = Skipped; S > 0; --S) {
      uint32_t Q = (Pos + N - S) % N;
      issueBefore(Back, *D, Q);
      if (!D->Plan->AfterLaunch[Q].empty())
        D->Pending.push_back({Q, std::this_thread::get_id()});
    }
    issueBefore(Back, *D, Pos, Stream);
    if (!D->Plan->AfterLaunch[Pos].empty())
      D->Pending.push_back({Pos, std::this_thread::get_id()});
  }
}

void Executor::launchArguments(int Device, StreamHandle Stream, std::span<const uint64_t> Words) {
  DeviceState *D = device(Device);
  if (!D || Words.empty() || !D->LaunchGuard || !D->HasPlan.load(std::memory_order_acquire))
    return;
  // After the plan turned off, copy-ins may still be in flight: a launch
  // naming their blocks waits for them.
  if (!D->PlanOn.load(std::memory_order_acquire) && !D->CopyPath)
    return;
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
  if (D->PlanOn.load(std::memory_order_relaxed) || !D->CopyInsPending.empty())
    guardLaunch(Back, *D, Stream, Words);
}

void Executor::hostSynchronize(int Device) {
  DeviceState *D = device(Device);
  if (!D || !D->HasPlan.load(std::memory_order_acquire) || !D->CopyPath ||
      !D->PooledBlocks.load(std::memory_order_acquire))
    return;
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
  // The host may read anything once the device is idle: nothing may be
  // left only in the pool. The wait covers the prefetch stream too.
  restoreAllPooled(Back, *D, D->ActionStream, /*Launch=*/false);
}

void Executor::launchArgumentsUnknown(int Device, StreamHandle Stream) {
  DeviceState *D = device(Device);
  if (!D || !D->LaunchGuard || !D->HasPlan.load(std::memory_order_acquire) || !D->CopyPath)
    return;
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
  // The kernel may touch anything: the copies back in flight (the plan's,
  // issued ahead of the kernels that need them, on streams of their own)
  // land first, then whatever is still only in the pool comes back.
  if (!D->CopyInsPending.empty())
    waitForAllCopyIns(Back, *D, Stream);
  if (D->PooledBlocks.load(std::memory_order_acquire))
    restoreAllPooled(Back, *D, Stream, /*Launch=*/true);
}

void Executor::launchEnd(int Device, StreamHandle Stream) {
  DeviceState *D = device(Device);
  if (!D || !D->PlanOn.load(std::memory_order_acquire))
    return;
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
  // The launch is enqueued now: releases issued from here on wait for it (the
  // ones before it were ordered after what had been enqueued then).
  clockFor(D->ComputeClocks, Stream).Dirty = true;
  if (!D->Deferred.empty() &&
      (D->C.Frees.load(std::memory_order_acquire) != D->DeferredFreesSeen ||
       D->C.Launches.load(std::memory_order_relaxed) >= D->DeferredDue))
    issueRanges(Back, *D, {}, {});
  if (D->Pending.empty())
    return;
  // Only this thread's launches are enqueued now; another thread's pending
  // actions wait for that thread's launchEnd.
  const std::thread::id Me = std::this_thread::get_id();
  size_t Kept = 0;
  for (size_t I = 0; I < D->Pending.size(); ++I) {
    if (D->Pending[I].Thread != Me) {
      D->Pending[Kept++] = D->Pending[I];
      continue;
    }
    issueReleases(Back, *D, D->Plan->AfterLaunch[D->Pending[I].Position]);
  }
  D->Pending.resize(Kept);
}

} // namespace deepum::executor
