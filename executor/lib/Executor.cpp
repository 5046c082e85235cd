//===- Executor.cpp - Replays a plan inside the training process ------------===//
//
// Configuration, the devices, and loading or setting a device's plan. The
// other jobs live beside it (DeviceState.h lists them and the locking rule).
//
// Locking: a device is created under a process-wide creation mutex and its
// plan loaded before it is published (no other thread sees it yet); setPlan
// takes LaunchMu, then AllocMu, like every path that holds both.
//
//===----------------------------------------------------------------------===//
#include "DeviceState.h"

#include "deepum/base/ByteSize.h"
#include "deepum/executor/Log.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>

namespace deepum::executor {

using namespace detail;

namespace {
using base::formatBytes;
} // namespace

// ---------------------------------------------------------------------------
// Configuration

std::string ExecutorConfig::planFor(int Device) const {
  if (auto It = PlanPaths.find(Device); It != PlanPaths.end())
    return It->second;
  if (auto It = PlanPaths.find(kAllDevices); It != PlanPaths.end())
    return It->second;
  return {};
}

uint64_t ExecutorConfig::budgetFor(int Device, uint64_t PlanCapacity) const {
  if (auto It = BudgetBytes.find(Device); It != BudgetBytes.end())
    return It->second;
  if (auto It = BudgetBytes.find(kAllDevices); It != BudgetBytes.end())
    return It->second;
  return PlanCapacity;
}

namespace {
/// Splits "0=a,1=b" into (device, value) pairs; a value without "N=" applies to all.
std::vector<std::pair<int, std::string>> perDevice(const std::string &Text, std::string &Warnings,
                                                   const char *Var) {
  std::vector<std::pair<int, std::string>> Out;
  auto IsPerDevice = [](const std::string &T) {
    size_t Eq = T.find('=');
    return Eq != std::string::npos && Eq > 0 &&
           std::all_of(T.begin(), T.begin() + static_cast<long>(Eq),
                       [](char Ch) { return Ch >= '0' && Ch <= '9'; });
  };
  if (!IsPerDevice(Text)) {
    if (!Text.empty())
      Out.push_back({kAllDevices, Text});
    return Out;
  }
  size_t Start = 0;
  while (Start <= Text.size()) {
    size_t Comma = Text.find(',', Start);
    std::string Part =
        Text.substr(Start, Comma == std::string::npos ? std::string::npos : Comma - Start);
    if (!Part.empty()) {
      if (!IsPerDevice(Part)) {
        Warnings += std::string(Var) + ": ignoring \"" + Part + "\" (expected DEVICE=VALUE)\n";
      } else {
        size_t Eq = Part.find('=');
        int Dev = std::atoi(Part.substr(0, Eq).c_str());
        if (Dev >= kMaxDevices)
          Warnings += std::string(Var) + ": ignoring device " + std::to_string(Dev) + "\n";
        else
          Out.push_back({Dev, Part.substr(Eq + 1)});
      }
    }
    if (Comma == std::string::npos)
      break;
    Start = Comma + 1;
  }
  return Out;
}
} // namespace

ExecutorConfig ExecutorConfig::parse(const char *Plan, const char *GpuMemory,
                                     std::string &Warnings) {
  ExecutorConfig C;
  if (Plan)
    for (auto &[Dev, Path] : perDevice(Plan, Warnings, "DEEPUM_PLAN"))
      C.PlanPaths[Dev] = Path;
  if (GpuMemory)
    for (auto &[Dev, Text] : perDevice(GpuMemory, Warnings, "DEEPUM_GPU_MEMORY")) {
      std::optional<uint64_t> Bytes = base::parseByteSize(Text);
      if (!Bytes) {
        Warnings += "DEEPUM_GPU_MEMORY: cannot read \"" + Text + "\" as a size (" +
                    base::kByteSizeExamples + ")\n";
        continue;
      }
      C.BudgetBytes[Dev] = *Bytes;
    }
  return C;
}

ExecutorConfig ExecutorConfig::fromEnvironment() {
  if (const char *L = std::getenv("DEEPUM_LOG"))
    configureLog(L);
  std::string Warnings;
  ExecutorConfig C = parse(std::getenv("DEEPUM_PLAN"), std::getenv("DEEPUM_GPU_MEMORY"), Warnings);
  if (const char *W = std::getenv("DEEPUM_KERNEL_WAITS_FOR_PREFETCH"); W && *W) {
    const std::string V = W;
    if (V == "1" || V == "0")
      C.KernelsWaitForTheirPrefetches = V == "1";
    else
      Warnings += "DEEPUM_KERNEL_WAITS_FOR_PREFETCH='" + V + "' is neither 0 nor 1; ignored\n";
  }
  if (const char *G = std::getenv("DEEPUM_TEST_NO_LAUNCH_GUARD"); G && std::string(G) == "1")
    C.LaunchGuard = false;
  if (!Warnings.empty()) {
    Warnings.pop_back();
    log(LogLevel::Warn, "%s", Warnings.c_str());
  }
  return C;
}

// ---------------------------------------------------------------------------
// Setup

Executor::Executor(Backend &B, ExecutorConfig Cfg) : Back(B), Config(std::move(Cfg)) {
  int Count = std::min(Back.deviceCount(), kMaxDevices);
  for (int D = 0; D < Count; ++D)
    deviceOrCreate(D);
  if (Config.TrackLaunches) {
    std::string Why;
    Tracking = Back.startLaunchTracking(this, Why);
    if (!Tracking) {
      TrackingWhy = Why;
      log(LogLevel::Warn,
          "kernel launches cannot be observed (%s); deepum works as an allocator "
          "only, plans are not replayed",
          Why.c_str());
      for (int D = 0; D < kMaxDevices; ++D)
        if (DeviceState *S = device(D))
          S->PlanOn = false;
    }
  }
}

Executor::~Executor() {
  if (Tracking)
    Back.stopLaunchTracking();
  for (auto &Slot : Devices) {
    DeviceState *D = Slot.exchange(nullptr);
    if (!D)
      continue;
    if (D->ArenaBase)
      (void)Back.freeManaged(D->Device, reinterpret_cast<void *>(D->ArenaBase));
    delete D;
  }
}

Executor::DeviceState *Executor::device(int Device) const {
  if (Device < 0 || Device >= kMaxDevices)
    return nullptr;
  return Devices[static_cast<size_t>(Device)].load(std::memory_order_acquire);
}

Executor::DeviceState *Executor::deviceOrCreate(int Device) {
  if (DeviceState *D = device(Device))
    return D;
  if (Device < 0 || Device >= kMaxDevices)
    return nullptr;
  static std::mutex CreateMu;
  std::lock_guard<std::mutex> Lock(CreateMu);
  if (DeviceState *D = device(Device))
    return D;
  auto *D = new DeviceState(Back, Device);
  D->KernelsWaitForTheirPrefetches = Config.KernelsWaitForTheirPrefetches;
  D->LaunchGuard = Config.LaunchGuard;
  D->CopyTracksAllocations = Config.CopyTracksAllocations;
  loadPlanFor(*D);
  Devices[static_cast<size_t>(Device)].store(D, std::memory_order_release);
  return D;
}

void Executor::loadPlanFor(DeviceState &D) {
  std::string Path = Config.planFor(D.Device);
  if (Path.empty()) {
    uint64_t Budget = Config.budgetFor(D.Device, 0);
    if (Budget)
      log(LogLevel::Warn,
          "device %d: DEEPUM_GPU_MEMORY without a plan is not enforced (the executor needs a "
          "plan to know what to evict)",
          D.Device);
    return;
  }
  D.setPath(Path);
  // One read per file: devices sharing a plan share the result, and a bad
  // file is reported once, not once per device.
  // Whatever happens here (a bad file, no memory for its tables, a backend
  // that throws), the outcome is stored: the file is read once, and a
  // failure means one warning and a device that runs unplanned.
  auto Cached = PlanCache.find(Path);
  if (Cached == PlanCache.end()) {
    std::shared_ptr<CompiledPlan> CP;
    std::string Error;
    try {
      CP = std::make_shared<CompiledPlan>();
      // The plan rules (format::checkRawPlan) include the profile
      // fingerprint: this verdict is deepum-inspect's.
      if (!readCompiledPlan(Path, *CP, Error))
        CP.reset();
    } catch (const std::exception &E) {
      CP.reset();
      Error = Path + ": " + E.what();
    } catch (...) {
      CP.reset();
      Error = Path + ": unexpected failure";
    }
    if (!CP) {
      log(LogLevel::Warn, "not using plan: %s; training continues unplanned", Error.c_str());
      PlanErrors[Path] = Error;
    }
    Cached = PlanCache.emplace(Path, std::move(CP)).first;
  }
  if (!Cached->second) {
    D.setWhyNot("plan refused: " + PlanErrors[Path]);
    return;
  }
  try {
    CompiledPlan CP = *Cached->second;
    uint64_t Budget = Config.budgetFor(D.Device, CP.GpuMemoryBytes);
    // Called before the state is published: no other thread sees D yet.
    (void)setPlanLocked(D, std::move(CP), Budget);
  } catch (...) {
    log(LogLevel::Warn, "device %d: cannot set up plan %s (out of memory?); training continues "
                        "unplanned", D.Device, Path.c_str());
    D.HasPlan.store(false, std::memory_order_release);
    D.PlanOn.store(false, std::memory_order_release);
    D.setWhyNot("cannot set up the plan (out of memory?)");
  }
}

bool Executor::setPlanLocked(DeviceState &D, CompiledPlan CP, uint64_t Budget) {
  // Everything that allocates host memory first: if it throws, no arena is
  // left behind and D is untouched.
  auto Plan = std::make_shared<const CompiledPlan>(std::move(CP));
  std::vector<uint8_t> Resident(Plan->ArenaBlocks, 0);
  std::vector<uint64_t> NeededStamp(Plan->ArenaBlocks, 0);
  D.Cursor.emplace(*Plan, Config.Cursor);
  if (D.Cursor->fingerprint() == FingerprintCheck::Mismatch) {
    log(LogLevel::Warn, "device %d: not replaying %s: %s; training continues unplanned", D.Device,
        Plan->Source.c_str(), D.Cursor->offReason().c_str());
    D.setWhyNot("plan refused: " + D.Cursor->offReason());
    D.Cursor.reset();
    return false;
  }
  void *Arena = nullptr;
  // Whole pages, so that ranges rounded out to pages stay inside the allocation.
  const uint64_t Mapped =
      (Plan->ArenaBytes + kManagedPageBytes - 1) / kManagedPageBytes * kManagedPageBytes;
  if (Plan->ArenaBytes) {
    BackendStatus S = Back.allocateManaged(D.Device, Mapped, &Arena);
    if (!S.ok() || !Arena) {
      log(LogLevel::Warn,
          "device %d: cannot allocate the plan's %s arena (%s: %s); training "
          "continues unplanned",
          D.Device, formatBytes(Plan->ArenaBytes).c_str(), S.Call, S.Message.c_str());
      D.Cursor.reset();
      D.setWhyNot("cannot allocate the plan's " + formatBytes(Plan->ArenaBytes) + " arena (" +
                  S.Call + ": " + S.Message + ")");
      return false;
    }
  }
  // Streams made by an earlier attempt are kept and used again (the backend
  // destroys none): a failure part-way leaves at most these four per device.
  BackendStatus S;
  for (StreamHandle *Stream : {&D.ActionStream, &D.ReleaseStream, &D.DiscardStream, &D.LateStream})
    if (S.ok() && !*Stream)
      S = Back.createStream(D.Device, Stream);
  if (!S.ok()) {
    log(LogLevel::Warn,
        "device %d: cannot create the action stream (%s: %s); training "
        "continues unplanned",
        D.Device, S.Call, S.Message.c_str());
    if (Arena)
      (void)Back.freeManaged(D.Device, Arena);
    D.Cursor.reset();
    D.setWhyNot(std::string("cannot create the action streams (") + S.Call + ": " + S.Message +
                ")");
    return false;
  }
  D.ArenaBase = reinterpret_cast<uintptr_t>(Arena);
  D.ArenaBytes = Plan->ArenaBytes;
  D.ArenaMapped = Mapped;
  // Persistent placements with call indices are found by call, not by sequence.
  D.NextSequence = Plan->PrologueEnd != 0 ? Plan->FirstIterationSequence : 0;
  D.CallAlign = {};
  D.Resident = std::move(Resident);
  D.NeededStamp = std::move(NeededStamp);
  D.NextUseAt.assign(D.Resident.size(), 0);
  D.NextUseEpoch.assign(D.Resident.size(), 0);
  D.UseEpoch = 1;
  D.LastScanPosition = 0;
  D.LeftWith.assign(D.Resident.size(), 0);
  D.Budget = Budget;
  D.Plan = std::move(Plan);
  D.CopyPath = false;
  if (D.Plan->CopyPoolBytes)
    (void)setUpCopyPath(Back, D, Back.reportsLaunchArguments());
  D.HasPlan.store(true, std::memory_order_release);
  D.PlanOn.store(true, std::memory_order_release);
  {
    std::lock_guard<std::mutex> Lock(D.StatusMu);
    D.PlanPath = D.Plan->Source;
    D.WhyNot.clear();
  }
  log(LogLevel::Info, "device %d: replaying %s (%zu positions, %s arena, budget %s)", D.Device,
      D.Plan->Source.c_str(), D.Plan->positions(), formatBytes(D.ArenaBytes).c_str(),
      D.Budget ? formatBytes(D.Budget).c_str() : "none");
  return true;
}

bool Executor::setPlan(int Device, CompiledPlan Plan, uint64_t Budget) {
  DeviceState *D = deviceOrCreate(Device);
  if (!D)
    return false;
  std::lock_guard<std::mutex> L1(D->LaunchMu);
  std::lock_guard<std::mutex> L2(D->AllocMu);
  if (D->Plan || D->AnyAllocation)
    return false;
  bool Ok = setPlanLocked(*D, std::move(Plan), Budget);
  if (Ok && !Tracking && Config.TrackLaunches)
    D->PlanOn = false;
  return Ok;
}

uintptr_t Executor::arenaBase(int Device) const {
  DeviceState *D = device(Device);
  return D ? D->ArenaBase : 0;
}

bool Executor::planActive(int Device) const {
  DeviceState *D = device(Device);
  return D && D->PlanOn.load();
}

std::vector<bool> Executor::residentBlocks(int Device) const {
  DeviceState *D = device(Device);
  if (!D)
    return {};
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
  return std::vector<bool>(D->Resident.begin(), D->Resident.end());
}

} // namespace deepum::executor
