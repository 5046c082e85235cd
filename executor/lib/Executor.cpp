//===- Executor.cpp - Replays a plan inside the training process -----------===//
#include "deepum/executor/Executor.h"

#include "deepum/base/ByteSize.h"
#include "deepum/executor/Log.h"
#include "deepum/executor/Pool.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

namespace deepum::executor {

namespace {
using base::formatBytes;

template <typename T> void bump(std::atomic<T> &A, T V = 1) {
  A.fetch_add(V, std::memory_order_relaxed);
}

/// Allocation calls the sequence matcher looks ahead over when the live
/// sequence departs from the plan (allocations the plan expected but the
/// program did not make).
constexpr uint32_t kPlacementLookahead = 4;
/// Requests above 128 TiB exceed any machine's host and GPU memory together;
/// refusing them up front keeps every address computation far from 2^64.
constexpr uint64_t kMaxAllocationBytes = uint64_t{1} << 47;

struct Counters {
  std::atomic<uint64_t> Allocations{0}, Frees{0}, ArenaBytesInUse{0}, ArenaPeak{0},
      ArenaPlacements{0}, PlacementMisses{0}, PrefetchBatches{0}, PrefetchBytes{0}, EvictBatches{0},
      EvictBytes{0}, DiscardBatches{0}, DiscardBytes{0}, DiscardsKeptLive{0}, Advises{0},
      AdviseBytes{0}, BudgetEvictions{0}, BackendErrors{0}, Launches{0};
};

/// A byte range of the arena and who owns it. Freed ranges stay (until
/// overwritten) to remember the stream they were freed on: another stream may
/// reuse them only after an event recorded on that stream later has completed.
struct ArenaEntry {
  uint64_t End = 0;
  bool Live = false;
  StreamHandle Stream = 0;
  uint64_t FreeGeneration = 0; // the stream's event generation at the free
};

/// One event per stream, re-recorded as needed; a generation number says
/// which frees the latest record covers (everything before it on the stream).
struct StreamClock {
  StreamHandle Stream = 0;
  EventHandle Event = 0;
  uint64_t Generation = 0; // records made so far
  bool Dirty = false;      // launches since the last record
};
} // namespace

struct Executor::DeviceState {
  DeviceState(Backend &B, int Dev) : Device(Dev), Pool(B, Dev) {}
  const int Device;
  DevicePool Pool;
  Counters C;

  // --- guarded by AllocMu ---
  std::mutex AllocMu;
  std::shared_ptr<const CompiledPlan> Plan; // immutable once set
  std::atomic<bool> HasPlan{false};         // Plan is set (read without AllocMu)
  uintptr_t ArenaBase = 0;
  uint64_t ArenaBytes = 0;
  uint64_t ArenaMapped = 0; // ArenaBytes rounded up to kManagedPageBytes (what was allocated)
  std::map<uint64_t, ArenaEntry> Arena;
  std::vector<StreamClock> AllocClocks;
  uint32_t NextSequence = 0;
  bool AnyAllocation = false;
  std::atomic<bool> WrapPending{false};
  std::atomic<uint64_t> DiscardsInFlight{
      0};                       // discards issued, action-stream event not yet seen complete
  EventHandle DiscardEvent = 0; // recorded on the action stream after the latest discard

  // --- guarded by LaunchMu ---
  std::mutex LaunchMu;
  std::optional<PlanCursor> Cursor;
  std::atomic<bool> PlanOn{false};
  // Two streams, like the plan's two copy engines: prefetches on one,
  // evictions and discards on the other, so a release waiting for the compute
  // stream never holds back a later prefetch. A prefetch waits for the
  // releases of its own position only (ReleaseEvent): room is made first.
  StreamHandle ActionStream = 0;  // prefetches (host to device)
  StreamHandle ReleaseStream = 0; // evictions and discards
  EventHandle ReleaseEvent = 0;
  bool ReleasedSincePrefetch = false;
  std::vector<StreamClock> ComputeClocks;
  std::vector<uint8_t> Resident;
  std::vector<uint64_t> NeededStamp;
  uint64_t Stamp = 0;
  std::atomic<uint64_t> ResidentBlocks{0};
  std::atomic<uint64_t> PeakResidentBlocks{0}; // written under LaunchMu
  uint64_t Budget = 0;
  struct PendingAfter {
    uint32_t Position;
    std::thread::id Thread;
  };
  std::vector<PendingAfter> Pending;
  struct DeferredDiscard {
    MemRange Range;    // arena offsets
    uint64_t Deadline; // launch count after which it becomes an eviction
  };
  std::vector<DeferredDiscard> Deferred; // written under LaunchMu and AllocMu
  std::vector<MemRange> Ranges;          // scratch
  std::vector<uint32_t> Blocks;          // scratch
  uint32_t CurrentPosition = 0;
  std::atomic<bool> ErrorLogged{false};

  // --- guarded by StatusMu (read by reports) ---
  mutable std::mutex StatusMu;
  std::string PlanPath; // the plan configured or set (empty: none)
  std::string WhyNot;   // the first reason the plan is not replayed (empty: none known)

  void setPath(std::string Path) {
    std::lock_guard<std::mutex> Lock(StatusMu);
    PlanPath = std::move(Path);
  }
  /// Keeps the first reason: later ones follow from it.
  void setWhyNot(std::string Why) {
    std::lock_guard<std::mutex> Lock(StatusMu);
    if (WhyNot.empty())
      WhyNot = std::move(Why);
  }

  uint64_t blockBytes() const { return Plan ? Plan->UmBlockBytes : uint64_t{2} << 20; }
};

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
  BackendStatus S = Back.createStream(D.Device, &D.ActionStream);
  if (S.ok())
    S = Back.createStream(D.Device, &D.ReleaseStream);
  if (S.ok())
    S = Back.createEvent(D.Device, &D.ReleaseEvent);
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
  D.NextSequence = 0;
  D.Resident = std::move(Resident);
  D.NeededStamp = std::move(NeededStamp);
  D.Budget = Budget;
  D.Plan = std::move(Plan);
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

// ---------------------------------------------------------------------------
// Allocation

namespace {
StreamClock &clockFor(std::vector<StreamClock> &Clocks, StreamHandle S) {
  for (StreamClock &C : Clocks)
    if (C.Stream == S)
      return C;
  Clocks.push_back({S, 0, 0, false});
  return Clocks.back();
}
} // namespace

/// Places [Off, Off+Size) for `Stream` when nothing live overlaps it and every
/// freed range it overlaps is safe for `Stream` (same stream, or an event
/// recorded after the free has completed). Called with AllocMu held.
static bool tryPlace(Backend &Back, Executor::DeviceState &D, uint64_t Off, uint64_t Size,
                     StreamHandle Stream);

void *Executor::allocate(uint64_t Bytes, int Device, StreamHandle Stream) {
  if (Bytes == 0 || Bytes > kMaxAllocationBytes)
    return nullptr;
  DeviceState *D = deviceOrCreate(Device);
  if (!D)
    return nullptr;
  if (D->HasPlan.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> Lock(D->AllocMu);
    D->AnyAllocation = true;
    if (D->WrapPending.exchange(false) && !ExplicitSteps.load(std::memory_order_relaxed))
      D->NextSequence = D->Plan->FirstIterationSequence;
    const auto &Placements = D->Plan->Placements;
    for (uint32_t K = 0; K <= kPlacementLookahead; ++K) {
      auto It = Placements.find(D->NextSequence + K);
      if (It == Placements.end() || It->second.Size != Bytes)
        continue;
      const uint32_t Seq = D->NextSequence + K;
      D->NextSequence = Seq + 1;
      if (!tryPlace(Back, *D, It->second.Offset, Bytes, Stream))
        break; // the planned range is still in use: this call was the planned one, but falls back
      bump(D->C.Allocations);
      bump(D->C.ArenaPlacements);
      uint64_t Now = D->C.ArenaBytesInUse.fetch_add(Bytes) + Bytes;
      uint64_t Peak = D->C.ArenaPeak.load();
      while (Now > Peak && !D->C.ArenaPeak.compare_exchange_weak(Peak, Now)) {
      }
      return reinterpret_cast<void *>(D->ArenaBase + It->second.Offset);
    }
    bump(D->C.PlacementMisses);
  }
  void *P = D->Pool.allocate(Bytes, Stream);
  if (P)
    bump(D->C.Allocations);
  return P;
}

static bool tryPlace(Backend &Back, Executor::DeviceState &D, uint64_t Off, uint64_t Size,
                     StreamHandle Stream) {
  const uint64_t End = Off + Size;
  if (End > D.ArenaBytes)
    return false;
  auto First = D.Arena.upper_bound(Off);
  if (First != D.Arena.begin() && std::prev(First)->second.End > Off)
    First = std::prev(First);
  for (auto It = First; It != D.Arena.end() && It->first < End; ++It) {
    const ArenaEntry &E = It->second;
    if (E.Live)
      return false;
    if (E.Stream == Stream)
      continue;
    StreamClock &Clock = clockFor(D.AllocClocks, E.Stream);
    if (Clock.Generation > E.FreeGeneration &&
        Back.queryEvent(D.Device, Clock.Event) == EventState::Complete)
      continue;
    // Not known complete: record now (covering the free) so a later placement
    // can use the range; this one falls back to the pool.
    if (Clock.Generation <= E.FreeGeneration) {
      if (!Clock.Event && !Back.createEvent(D.Device, &Clock.Event).ok())
        return false;
      if (Back.recordEvent(D.Device, Clock.Event, E.Stream).ok())
        Clock.Generation++;
      if (Back.queryEvent(D.Device, Clock.Event) == EventState::Complete)
        continue;
    }
    return false;
  }
  // Free: drop the freed entries it covers, keeping the parts outside it.
  std::vector<std::pair<uint64_t, ArenaEntry>> Keep;
  for (auto It = First; It != D.Arena.end() && It->first < End;) {
    if (It->first < Off)
      Keep.push_back({It->first, {Off, false, It->second.Stream, It->second.FreeGeneration}});
    if (It->second.End > End)
      Keep.push_back({End, It->second});
    It = D.Arena.erase(It);
  }
  for (auto &[O, E] : Keep)
    D.Arena[O] = E;
  D.Arena[Off] = ArenaEntry{End, true, Stream, 0};
  // A discard still queued on the action stream may cover this range: the
  // new owner's kernels must not run before it (its contents would be lost).
  if (D.DiscardsInFlight.load(std::memory_order_acquire) != 0 && D.DiscardEvent) {
    if (Back.queryEvent(D.Device, D.DiscardEvent) == EventState::Complete)
      D.DiscardsInFlight.store(0, std::memory_order_release);
    else
      (void)Back.streamWaitEvent(D.Device, Stream, D.DiscardEvent);
  }
  return true;
}

void Executor::deallocate(void *Ptr, int Device, StreamHandle Stream) {
  if (!Ptr)
    return;
  DeviceState *D = device(Device);
  if (!D)
    return;
  const uintptr_t Addr = reinterpret_cast<uintptr_t>(Ptr);
  if (D->ArenaBase && Addr >= D->ArenaBase && Addr < D->ArenaBase + D->ArenaBytes) {
    std::lock_guard<std::mutex> Lock(D->AllocMu);
    auto It = D->Arena.find(Addr - D->ArenaBase);
    if (It == D->Arena.end() || !It->second.Live) {
      static std::atomic<bool> Once{false};
      DEEPUM_LOG_ONCE(Once, LogLevel::Warn, "device %d: free of an arena address not in use",
                      Device);
      return;
    }
    It->second.Live = false;
    It->second.Stream = Stream;
    It->second.FreeGeneration = clockFor(D->AllocClocks, Stream).Generation;
    bump(D->C.Frees);
    D->C.ArenaBytesInUse.fetch_sub(It->second.End - It->first);
    return;
  }
  if (D->Pool.deallocate(Ptr, Stream)) {
    bump(D->C.Frees);
    return;
  }
  static std::atomic<bool> Once{false};
  DEEPUM_LOG_ONCE(Once, LogLevel::Warn, "device %d: free of a pointer deepum did not allocate",
                  Device);
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
    if (D->Cursor)
      D->Cursor->markIteration();
  }
}

// ---------------------------------------------------------------------------
// Launches and actions

namespace {
void noteError(Executor::DeviceState &D, const BackendStatus &S) {
  if (S.ok())
    return;
  bump(D.C.BackendErrors);
  DEEPUM_LOG_ONCE(D.ErrorLogged, LogLevel::Warn,
                  "device %d: %s failed: %s (counted in backend_errors; deepum carries on, further "
                  "failures are not logged)",
                  D.Device, S.Call, S.Message.c_str());
}

uint64_t rangeBytes(const std::vector<MemRange> &Rs) {
  uint64_t B = 0;
  for (const MemRange &R : Rs)
    B += R.Bytes;
  return B;
}

MemRange toAddress(const Executor::DeviceState &D, const MemRange &ArenaRange) {
  uint64_t Off = ArenaRange.Address;
  uint64_t Bytes = std::min<uint64_t>(ArenaRange.Bytes, D.ArenaBytes - std::min(Off, D.ArenaBytes));
  return {D.ArenaBase + Off, Bytes};
}

/// The address range of arena range `R` for a prefetch or an eviction: every
/// page it touches, within the arena's allocation.
MemRange pagesAround(const Executor::DeviceState &D, const MemRange &R) {
  const MemRange A = toAddress(D, R);
  constexpr uint64_t P = kManagedPageBytes;
  const uint64_t Start = std::max<uint64_t>(A.Address / P * P, D.ArenaBase);
  const uint64_t End =
      std::min<uint64_t>((A.Address + A.Bytes + P - 1) / P * P, D.ArenaBase + D.ArenaMapped);
  return {Start, End > Start ? End - Start : 0};
}

/// The address range of arena range `R` for a discard: the whole pages inside
/// it, none of a neighbour's (Bytes = 0 when it holds no whole page).
MemRange pagesInside(const Executor::DeviceState &D, const MemRange &R) {
  const MemRange A = toAddress(D, R);
  constexpr uint64_t P = kManagedPageBytes;
  const uint64_t Start = (A.Address + P - 1) / P * P;
  const uint64_t End = (A.Address + A.Bytes) / P * P;
  return {Start, End > Start ? End - Start : 0};
}

/// Orders the action stream after everything enqueued so far on the compute
/// streams that launched since the last time (a discard or eviction never
/// overtakes a kernel still using the data).
void orderAfterCompute(Backend &Back, Executor::DeviceState &D) {
  for (StreamClock &C : D.ComputeClocks) {
    if (!C.Dirty)
      continue;
    if (!C.Event) {
      BackendStatus S = Back.createEvent(D.Device, &C.Event);
      noteError(D, S);
      if (!S.ok())
        continue;
    }
    BackendStatus S = Back.recordEvent(D.Device, C.Event, C.Stream);
    noteError(D, S);
    if (S.ok())
      noteError(D, Back.streamWaitEvent(D.Device, D.ReleaseStream, C.Event));
    C.Dirty = false;
  }
}
} // namespace

/// Next position (after `Pos`) at which arena block `B` is used, as a distance.
static uint64_t nextUseDistance(const CompiledPlan &P, uint32_t B, uint32_t Pos) {
  const auto Uses = P.blockPositions(B);
  if (Uses.empty())
    return ~uint64_t{0};
  auto It = std::upper_bound(Uses.begin(), Uses.end(), Pos);
  if (It != Uses.end())
    return *It - Pos;
  return Uses.front() + P.positions() - Pos; // next iteration
}

/// Keeps modelled residency + `Incoming` blocks under the budget by evicting
/// the resident blocks needed furthest in the future (Belady), never one
/// stamped as needed now. Called with LaunchMu held.
static void enforceBudget(Backend &Back, Executor::DeviceState &D, uint64_t Incoming) {
  if (!D.Budget)
    return;
  const uint64_t BlockBytes = D.blockBytes();
  const uint64_t Fallback = D.Pool.stats().BytesInUse; // unplanned memory is on the GPU too
  const uint64_t Limit = D.Budget > Fallback ? D.Budget - Fallback : 0;
  uint64_t Resident = (D.ResidentBlocks.load() + Incoming) * BlockBytes;
  if (Resident <= Limit)
    return;
  // Evict down to a low watermark (1/16 below the limit), not just to the
  // limit: one scan then makes room for many launches, which keeps the hook's
  // amortised cost low, and the driver is never pushed to the edge.
  const uint64_t LowWater = Limit - Limit / 16;
  uint64_t Need = (Resident - LowWater + BlockBytes - 1) / BlockBytes;
  std::vector<std::pair<uint64_t, uint32_t>> Victims; // (distance, block)
  for (uint32_t B = 0; B < D.Resident.size(); ++B)
    if (D.Resident[B] && D.NeededStamp[B] != D.Stamp)
      Victims.push_back({nextUseDistance(*D.Plan, B, D.CurrentPosition), B});
  if (Victims.empty())
    return;
  Need = std::min<uint64_t>(Need, Victims.size());
  std::partial_sort(Victims.begin(), Victims.begin() + static_cast<long>(Need), Victims.end(),
                    [](const auto &A, const auto &B) { return A.first > B.first; });
  D.Ranges.clear();
  for (uint64_t I = 0; I < Need; ++I) {
    uint32_t B = Victims[I].second;
    D.Resident[B] = 0;
    D.Ranges.push_back(pagesAround(D, {B * BlockBytes, BlockBytes}));
  }
  D.ResidentBlocks.fetch_sub(Need);
  std::sort(D.Ranges.begin(), D.Ranges.end(),
            [](const MemRange &A, const MemRange &B) { return A.Address < B.Address; });
  orderAfterCompute(Back, D);
  BackendStatus S = Back.prefetchBatch(D.Device, D.Ranges, kHostLocation, D.ReleaseStream);
  noteError(D, S);
  D.ReleasedSincePrefetch = true;
  if (S.ok()) {
    bump(D.C.EvictBatches);
    bump(D.C.EvictBytes, rangeBytes(D.Ranges));
    bump(D.C.BudgetEvictions, rangeBytes(D.Ranges));
  }
}

namespace {
void stampBlocks(Executor::DeviceState &D, uint64_t Off, uint64_t Bytes, uint64_t &Incoming) {
  const uint64_t BB = D.blockBytes();
  for (uint64_t B = Off / BB; B < (Off + Bytes + BB - 1) / BB && B < D.Resident.size(); ++B) {
    if (D.NeededStamp[B] == D.Stamp)
      continue;
    D.NeededStamp[B] = D.Stamp;
    if (!D.Resident[B]) {
      ++Incoming;
      D.Blocks.push_back(static_cast<uint32_t>(B));
    }
  }
}

} // namespace

/// Prefetches and advice of one position, before its launch runs.
static void issueRanges(Backend &Back, Executor::DeviceState &D, std::vector<MemRange> Evict,
                        const std::vector<MemRange> &DiscardIn);
static void issueReleases(Backend &Back, Executor::DeviceState &D,
                          const std::vector<PlanAction> &Actions);

static void issueBefore(Backend &Back, Executor::DeviceState &D, uint32_t Pos) {
  const CompiledPlan &P = *D.Plan;
  // The plan's issue order within a position: ADVISE, DISCARD, EVICT,
  // PREFETCH (room is made before it is used).
  for (const PlanAction &A : P.BeforeLaunch[Pos]) {
    if (A.Kind != PlanActionKind::Advise)
      continue;
    for (const MemRange &R : A.Ranges) {
      BackendStatus S = Back.advise(D.Device, toAddress(D, R), A.Advice);
      noteError(D, S);
      if (S.ok()) {
        bump(D.C.Advises);
        bump(D.C.AdviseBytes, toAddress(D, R).Bytes);
      }
    }
  }
  issueReleases(Back, D, P.ReleaseBefore[Pos]);
  D.CurrentPosition = Pos;
  ++D.Stamp;
  D.Blocks.clear();
  uint64_t Incoming = 0;
  const uint64_t BB = D.blockBytes();
  for (uint32_t B : P.PositionBlocks[Pos])
    stampBlocks(D, uint64_t{B} * BB, BB, Incoming);
  const auto &Actions = P.BeforeLaunch[Pos];
  for (const PlanAction &A : Actions)
    if (A.Kind == PlanActionKind::Prefetch)
      for (const MemRange &R : A.Ranges)
        stampBlocks(D, R.Address, R.Bytes, Incoming);
  if (Incoming)
    enforceBudget(Back, D, Incoming);
  // The kernel's own blocks become resident whether prefetched or faulted in.
  for (uint32_t B : D.Blocks)
    D.Resident[B] = 1;
  const uint64_t Now = D.ResidentBlocks.fetch_add(D.Blocks.size()) + D.Blocks.size();
  if (Now > D.PeakResidentBlocks.load(std::memory_order_relaxed))
    D.PeakResidentBlocks.store(Now, std::memory_order_relaxed);
  if (Actions.empty())
    return;
  D.Ranges.clear();
  for (const PlanAction &A : Actions) {
    if (A.Kind == PlanActionKind::Advise)
      continue; // issued first, above
    for (const MemRange &R : A.Ranges)
      if (MemRange Pages = pagesAround(D, R); Pages.Bytes)
        D.Ranges.push_back(Pages);
  }
  if (D.Ranges.empty())
    return;
  if (D.ReleasedSincePrefetch) {
    // Room first: this batch starts once the releases issued before it end.
    BackendStatus W = Back.recordEvent(D.Device, D.ReleaseEvent, D.ReleaseStream);
    noteError(D, W);
    if (W.ok())
      noteError(D, Back.streamWaitEvent(D.Device, D.ActionStream, D.ReleaseEvent));
    D.ReleasedSincePrefetch = false;
  }
  BackendStatus S = Back.prefetchBatch(D.Device, D.Ranges, D.Device, D.ActionStream);
  noteError(D, S);
  if (S.ok()) {
    bump(D.C.PrefetchBatches);
    bump(D.C.PrefetchBytes, rangeBytes(D.Ranges));
  }
}

/// Launches a discard waits for its range to be freed before it becomes an
/// eviction instead: PyTorch frees a tensor just after the launch of its last
/// use returns, so a discard planned at that position usually finds the tensor
/// still allocated for a moment.
constexpr uint64_t kDiscardDeferralLaunches = 64;

/// Issues evictions and discards: `Evict` and `Discard` hold arena ranges.
/// Discard parts that overlap a live allocation are deferred (never
/// discarded while live); deferred parts past their deadline are evicted,
/// which keeps their contents. Only the whole pages inside a free part are
/// discarded (kManagedPageBytes): never a byte of a neighbour. Called with
/// LaunchMu held.
static void issueRanges(Backend &Back, Executor::DeviceState &D, std::vector<MemRange> Evict,
                        const std::vector<MemRange> &DiscardIn) {
  const uint64_t BB = D.blockBytes();
  const uint64_t Now = D.C.Launches.load(std::memory_order_relaxed);
  std::vector<MemRange> Discard;      // free parts, arena offsets
  std::vector<MemRange> DiscardPages; // their whole pages, addresses
  // Finding a range free, discarding it and recording the event its next
  // owner waits for (see tryPlace) are one step under AllocMu: an allocation
  // placed over the range in between would neither be seen live here nor
  // wait for the discard, which could then destroy its data.
  std::unique_lock<std::mutex> AllocLock(D.AllocMu);
  auto Split = [&](const MemRange &R, uint64_t Deadline) {
    uint64_t Cur = R.Address, End = R.Address + R.Bytes;
    auto It = D.Arena.upper_bound(Cur);
    if (It != D.Arena.begin())
      --It;
    for (; It != D.Arena.end() && It->first < End && Cur < End; ++It) {
      if (!It->second.Live || It->second.End <= Cur)
        continue;
      uint64_t LiveStart = std::max(It->first, Cur), LiveEnd = std::min(It->second.End, End);
      if (LiveStart > Cur)
        Discard.push_back({Cur, LiveStart - Cur});
      MemRange LivePart{LiveStart, LiveEnd - LiveStart};
      if (Now < Deadline) {
        D.Deferred.push_back({LivePart, Deadline});
      } else {
        Evict.push_back(LivePart);
        bump(D.C.DiscardsKeptLive, LivePart.Bytes);
      }
      Cur = LiveEnd;
    }
    if (Cur < End)
      Discard.push_back({Cur, End - Cur});
  };
  std::vector<Executor::DeviceState::DeferredDiscard> Old;
  Old.swap(D.Deferred);
  for (const auto &Def : Old)
    Split(Def.Range, Def.Deadline);
  for (const MemRange &R : DiscardIn)
    Split(R, Now + kDiscardDeferralLaunches);
  for (const MemRange &R : Discard)
    if (MemRange Pages = pagesInside(D, R); Pages.Bytes)
      DiscardPages.push_back(Pages);
  if (DiscardPages.empty())
    AllocLock.unlock(); // evictions keep the data: no allocation waits for them
  if (Evict.empty() && DiscardPages.empty())
    return;
  orderAfterCompute(Back, D);
  auto MarkGone = [&](const MemRange &R) {
    // Only blocks wholly covered leave the GPU.
    uint64_t First = (R.Address + BB - 1) / BB, Last = (R.Address + R.Bytes) / BB;
    for (uint64_t B = First; B < Last && B < D.Resident.size(); ++B)
      if (D.Resident[B]) {
        D.Resident[B] = 0;
        D.ResidentBlocks.fetch_sub(1);
      }
  };
  D.Ranges.clear();
  for (const MemRange &R : Evict) {
    MarkGone(R);
    if (MemRange Pages = pagesAround(D, R); Pages.Bytes)
      D.Ranges.push_back(Pages);
  }
  if (!D.Ranges.empty()) {
    BackendStatus S = Back.prefetchBatch(D.Device, D.Ranges, kHostLocation, D.ReleaseStream);
    noteError(D, S);
    D.ReleasedSincePrefetch = true;
    if (S.ok()) {
      bump(D.C.EvictBatches);
      bump(D.C.EvictBytes, rangeBytes(D.Ranges));
    }
  }
  if (DiscardPages.empty())
    return;
  for (const MemRange &R : Discard)
    MarkGone(R);
  BackendStatus S = Back.discardBatch(D.Device, DiscardPages, D.ReleaseStream);
  D.ReleasedSincePrefetch = true;
  noteError(D, S);
  if (S.ok()) {
    bump(D.C.DiscardBatches);
    bump(D.C.DiscardBytes, rangeBytes(DiscardPages));
  }
  // New owners of these ranges wait for this event (see tryPlace).
  D.DiscardsInFlight.fetch_add(1, std::memory_order_release);
  if (!D.DiscardEvent)
    noteError(D, Back.createEvent(D.Device, &D.DiscardEvent));
  if (D.DiscardEvent)
    noteError(D, Back.recordEvent(D.Device, D.DiscardEvent, D.ReleaseStream));
}

/// Evictions and discards of one list (ReleaseBefore or AfterLaunch of a position).
static void issueReleases(Backend &Back, Executor::DeviceState &D,
                          const std::vector<PlanAction> &Actions) {
  if (Actions.empty())
    return;
  std::vector<MemRange> Evict, Discard;
  for (const PlanAction &A : Actions)
    for (const MemRange &R : A.Ranges)
      (A.Kind == PlanActionKind::Evict ? Evict : Discard).push_back(R);
  issueRanges(Back, D, std::move(Evict), Discard);
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
      log(LogLevel::Warn, "device %d: %s", Device, Cur.offReason().c_str());
      D->setWhyNot("plan turned off: " + Cur.offReason());
      D->PlanOn = false;
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
    issueBefore(Back, *D, Pos);
    if (!D->Plan->AfterLaunch[Pos].empty())
      D->Pending.push_back({Pos, std::this_thread::get_id()});
  }
}

void Executor::launchEnd(int Device, StreamHandle) {
  DeviceState *D = device(Device);
  if (!D || !D->PlanOn.load(std::memory_order_acquire))
    return;
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
  if (!D->Deferred.empty())
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
  Out.peak_bytes_in_use = PS.PeakBytesInUse + C.ArenaPeak.load();
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
  Out.plan_active = D->PlanOn.load() ? 1 : 0;
  Out.launch_tracking = Tracking ? 1 : 0;
  std::lock_guard<std::mutex> Lock(D->LaunchMu);
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


// ---------------------------------------------------------------------------
// Report

bool Executor::report(int Device, DeviceReport &Out) const {
  Out = DeviceReport{};
  if (!stats(Device, Out.Stats))
    return false;
  const DeviceState *D = device(Device);
  Out.Backend = Back.name();
  Out.UndecodedLaunches = Back.undecodedLaunches();
  Out.AdviseBytes = D->C.AdviseBytes.load();
  Out.PeakResidentBytes = D->PeakResidentBlocks.load() * D->blockBytes();
  Out.PlanLoaded = D->HasPlan.load(std::memory_order_acquire);
  if (Out.PlanLoaded) // Plan is immutable once HasPlan is set
    Out.ProfileFingerprint = D->Plan->ProfileFingerprint;
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
