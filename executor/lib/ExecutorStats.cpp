//===- ExecutorStats.cpp - Counters and the report (deepum_stats_json) ------===//
//
// deepum_stats_t, DeviceReport and the JSON report of docs/executor.md.
// Makes no backend call that reaches the GPU: safe at exit.
//
// Locking: counters are atomics read without a lock; the cursor's counts and
// the budget are read under the device's LaunchMu, the plan path and why_not
// under StatusMu (DeviceState.h); never both at once.
//
//===----------------------------------------------------------------------===//
#include "DeviceState.h"

#include <cstdio>
#include <mutex>
#include <string>

namespace deepum::executor {

using namespace detail;

bool Executor::stats(int Device, deepum_stats_t &Out) const {
  DeviceState *D = device(Device);
  if (!D)
    return false;
  Out = deepum_stats_t{};
  PoolStats PS = D->Pool.stats();
  const Counters &C = D->C;
  Out.allocations = C.Allocations.load();
  Out.frees = C.Frees.load();
  Out.bytes_in_use = PS.BytesInUse + C.ArenaBytesInUse.load();
  Out.peak_bytes_in_use = C.PeakInUse.load();
  Out.bytes_reserved = PS.BytesReserved + D->ArenaBytes;
  Out.arena_placements = C.ArenaPlacements.load();
  Out.placement_misses = C.PlacementMisses.load();
  Out.launches = C.Launches.load();
  Out.prefetch_batches = C.PrefetchBatches.load();
  Out.prefetch_bytes = C.PrefetchBytes.load();
  Out.evict_batches = C.EvictBatches.load();
  Out.evict_bytes = C.EvictBytes.load();
  Out.discard_batches = C.DiscardBatches.load();
  Out.discard_bytes = C.DiscardBytes.load();
  Out.discards_kept_live = C.DiscardsKeptLive.load();
  Out.advises = C.Advises.load();
  Out.budget_evictions = C.BudgetEvictions.load();
  Out.resident_bytes = D->ResidentBlocks.load() * D->blockBytes();
  Out.backend_errors = C.BackendErrors.load();
  Out.guard_restores = C.GuardRestores.load();
  Out.guard_restore_bytes = C.GuardRestoreBytes.load();
  Out.guard_waits = C.GuardWaits.load();
  Out.copy_pool_bytes = D->CopyPath ? D->PoolBytes : 0;
  Out.copy_out_bytes = C.CopyOutBytes.load();
  Out.copy_in_bytes = C.CopyInBytes.load();
  Out.copy_fallback_bytes = C.CopyFallbackBytes.load();
  Out.guard_copy_in_bytes = C.GuardCopyInBytes.load();
  Out.pooled_bytes = D->PooledBlocks.load() * D->blockBytes();
  Out.peak_pooled_bytes = D->PeakPooledBlocks.load() * D->blockBytes();
  Out.blind_launches = C.BlindLaunches.load();
  Out.copy_restore_all_bytes = C.RestoreAllBytes.load();
  Out.plan_active = D->PlanOn.load() ? 1 : 0;
  Out.launch_tracking = Tracking ? 1 : 0;
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
  collectGuardTimings(Back, *D);
  Out.guard_wait_ns = C.GuardWaitNs.load();
  Out.budget_bytes = D->Budget;
  if (D->Cursor) {
    const CursorStats &CS = D->Cursor->stats();
    Out.launches_matched = CS.Matched;
    Out.launches_inserted = CS.Inserted;
    Out.positions_missing = CS.Missing;
    Out.resyncs = CS.Resyncs;
    Out.iterations = CS.Iterations;
  }
  return true;
}

bool Executor::report(int Device, DeviceReport &Out) const {
  Out = DeviceReport{};
  if (!stats(Device, Out.Stats))
    return false;
  DeviceState *D = device(Device);
  Out.Backend = Back.name();
  Out.UndecodedLaunches = Back.undecodedLaunches();
  Out.AdviseBytes = D->C.AdviseBytes.load();
  Out.PeakResidentBytes = D->PeakResidentBlocks.load() * D->blockBytes();
  Out.PlanLoaded = D->HasPlan.load(std::memory_order_acquire);
  if (Out.PlanLoaded) // Plan is immutable once HasPlan is set
    Out.ProfileFingerprint = D->Plan->ProfileFingerprint;
  {
    std::lock_guard<std::mutex> Lock(D->LaunchMu);
    if (D->Cursor)
      Out.Fingerprint = D->Cursor->fingerprint();
  }
  std::string Why;
  {
    std::lock_guard<std::mutex> Lock(D->StatusMu);
    Out.PlanPath = D->PlanPath;
    Why = D->WhyNot;
  }
  if (Out.Stats.plan_active)
    return true;
  if (!Why.empty())
    Out.WhyNot = std::move(Why);
  else if (Out.PlanPath.empty())
    Out.WhyNot = "no plan: DEEPUM_PLAN names none for device " + std::to_string(Device);
  else if (!Config.TrackLaunches)
    Out.WhyNot = "launch tracking is off in the configuration";
  else if (!Tracking)
    Out.WhyNot = "launch tracking unavailable: " + TrackingWhy;
  else
    Out.WhyNot = "plan not replayed";
  return true;
}

namespace {
void jsonString(std::string &O, const std::string &S) {
  O += '"';
  for (unsigned char Ch : S) {
    if (Ch == '"' || Ch == '\\') {
      O += '\\';
      O += static_cast<char>(Ch);
    } else if (Ch < 0x20) {
      char Buf[8];
      std::snprintf(Buf, sizeof Buf, "\\u%04x", Ch);
      O += Buf;
    } else {
      O += static_cast<char>(Ch);
    }
  }
  O += '"';
}

/// Appends `"Key":Value`, with a comma unless it opens an object.
void jsonKey(std::string &O, const char *Key) {
  if (!O.empty() && O.back() != '{')
    O += ',';
  O += '"';
  O += Key;
  O += "\":";
}
void jsonField(std::string &O, const char *Key, uint64_t V) {
  jsonKey(O, Key);
  O += std::to_string(V);
}
void jsonField(std::string &O, const char *Key, bool V) {
  jsonKey(O, Key);
  O += V ? "true" : "false";
}
void jsonField(std::string &O, const char *Key, const std::string &V) {
  jsonKey(O, Key);
  jsonString(O, V);
}
void jsonNull(std::string &O, const char *Key) {
  jsonKey(O, Key);
  O += "null";
}

const char *fingerprintCheckName(FingerprintCheck F) {
  switch (F) {
  case FingerprintCheck::None:
    return "none";
  case FingerprintCheck::Pending:
    return "pending";
  case FingerprintCheck::Matched:
    return "matched";
  case FingerprintCheck::Mismatch:
    return "mismatch";
  }
  return "none";
}

void deviceJson(std::string &O, int Device, const DeviceReport &R) {
  const deepum_stats_t &S = R.Stats;
  O += '{';
  jsonField(O, "schema", uint64_t{1});
  jsonField(O, "device", static_cast<uint64_t>(Device));
  jsonField(O, "backend", std::string(R.Backend));
  if (R.PlanPath.empty()) {
    jsonNull(O, "plan");
  } else {
    jsonKey(O, "plan");
    O += '{';
    jsonField(O, "path", R.PlanPath);
    jsonField(O, "loaded", R.PlanLoaded);
    if (R.PlanLoaded && R.ProfileFingerprint) {
      char Buf[24];
      std::snprintf(Buf, sizeof Buf, "%016llx",
                    static_cast<unsigned long long>(R.ProfileFingerprint));
      jsonField(O, "profile_fingerprint", std::string(Buf));
    } else {
      jsonNull(O, "profile_fingerprint");
    }
    jsonField(O, "fingerprint_check", std::string(fingerprintCheckName(R.Fingerprint)));
    O += '}';
  }
  jsonField(O, "active", S.plan_active != 0);
  if (R.WhyNot.empty())
    jsonNull(O, "why_not");
  else
    jsonField(O, "why_not", R.WhyNot);
  jsonField(O, "launch_tracking", S.launch_tracking != 0);
  jsonKey(O, "launches");
  O += '{';
  jsonField(O, "seen", S.launches);
  jsonField(O, "matched", S.launches_matched);
  jsonField(O, "undecoded", R.UndecodedLaunches);
  jsonField(O, "inserted", S.launches_inserted);
  jsonField(O, "positions_missing", S.positions_missing);
  O += '}';
  jsonField(O, "resyncs", S.resyncs);
  jsonField(O, "iterations", S.iterations);
  auto Calls = [&](const char *Key, uint64_t N, uint64_t Bytes) {
    jsonKey(O, Key);
    O += '{';
    jsonField(O, "calls", N);
    jsonField(O, "bytes", Bytes);
    O += '}';
  };
  Calls("prefetch", S.prefetch_batches, S.prefetch_bytes);
  Calls("evict", S.evict_batches, S.evict_bytes);
  Calls("discard", S.discard_batches, S.discard_bytes);
  Calls("advise", S.advises, R.AdviseBytes);
  jsonField(O, "discards_kept_live_bytes", S.discards_kept_live);
  jsonField(O, "budget_eviction_bytes", S.budget_evictions);
  jsonField(O, "backend_errors", S.backend_errors);
  jsonKey(O, "guard");
  O += '{';
  jsonField(O, "restores", S.guard_restores);
  jsonField(O, "bytes", S.guard_restore_bytes);
  jsonField(O, "waits", S.guard_waits);
  jsonField(O, "copy_in_bytes", S.guard_copy_in_bytes);
  jsonField(O, "wait_ns", S.guard_wait_ns);
  jsonField(O, "blind_launches", S.blind_launches);
  O += '}';
  jsonKey(O, "copy");
  O += '{';
  jsonField(O, "pool_bytes", S.copy_pool_bytes);
  jsonField(O, "out_bytes", S.copy_out_bytes);
  jsonField(O, "in_bytes", S.copy_in_bytes);
  jsonField(O, "fallback_bytes", S.copy_fallback_bytes);
  jsonField(O, "pooled_bytes", S.pooled_bytes);
  jsonField(O, "peak_pooled_bytes", S.peak_pooled_bytes);
  jsonField(O, "restore_all_bytes", S.copy_restore_all_bytes);
  O += '}';
  jsonField(O, "budget_bytes", S.budget_bytes);
  jsonField(O, "resident_bytes", S.resident_bytes);
  jsonField(O, "peak_resident_bytes", R.PeakResidentBytes);
  jsonKey(O, "memory");
  O += '{';
  jsonField(O, "allocations", S.allocations);
  jsonField(O, "frees", S.frees);
  jsonField(O, "bytes_in_use", S.bytes_in_use);
  jsonField(O, "peak_bytes_in_use", S.peak_bytes_in_use);
  jsonField(O, "bytes_reserved", S.bytes_reserved);
  jsonField(O, "arena_placements", S.arena_placements);
  jsonField(O, "placement_misses", S.placement_misses);
  O += '}';
  O += '}';
}
} // namespace

bool Executor::statsJson(int Device, std::string &Out) const {
  Out.clear();
  DeviceReport R;
  if (Device != kAllDevices) {
    if (!report(Device, R))
      return false;
    deviceJson(Out, Device, R);
    return true;
  }
  Out = "{\"schema\":1,\"devices\":[";
  bool First = true;
  for (int I = 0; I < kMaxDevices; ++I) {
    if (!report(I, R))
      continue;
    if (!First)
      Out += ',';
    First = false;
    std::string One;
    deviceJson(One, I, R);
    Out += One;
  }
  Out += "]}";
  return true;
}

} // namespace deepum::executor
