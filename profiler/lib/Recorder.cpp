//===- Recorder.cpp - Iteration windows, fault attribution, access sets ------===//
#include "deepum/profiler/Recorder.h"

#include "deepum/format/Format.h"
#include "deepum/format/IterationNotes.h"
#include "deepum/format/Signature.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>

using namespace deepum::v1;
using namespace llvm;

namespace deepum::profiler {

static constexpr uint64_t kBlockBytes = format::kUmBlockBytes;
static constexpr uint64_t kPageBytes = format::kUmPageBytes;
static constexpr uint64_t kPagesPerBlock = kBlockBytes / kPageBytes;
static_assert(kPagesPerBlock == 32, "BlockAccess.page_mask is 32 bits, one per 64 KiB page");

Recorder::Recorder(RecorderOptions O) : Opts(std::move(O)) {}

//===-- Records ------------------------------------------------------------===//

bool Recorder::keepLocked(uint64_t TimeNs) const {
  // Before the window opens everything is kept (pruned at each skipped
  // iteration's end); after it opens, only what lies inside it.
  if (WindowBegin && TimeNs < *WindowBegin)
    return false;
  if (State == RecorderState::Done && !Recorded.empty() && TimeNs > Recorded.back().End)
    return false;
  return true;
}

void Recorder::addKernel(KernelRecord K) {
  std::lock_guard<std::mutex> L(Mu);
  if (keepLocked(K.StartNs))
    Kernels.push_back(std::move(K));
}

void Recorder::addTransfer(TransferRecord T) {
  std::lock_guard<std::mutex> L(Mu);
  if (keepLocked(T.StartNs))
    Transfers.push_back(T);
}

void Recorder::noteMaybeOnGpuLocked(uint64_t Address, uint64_t Bytes) {
  if (!Opts.AccessSetMode || Bytes == 0)
    return;
  for (uint64_t B = Address / kBlockBytes, Last = (Address + Bytes - 1) / kBlockBytes; B <= Last; ++B)
    MaybeOnGpu.insert(B);
}

bool Recorder::dropUmRecordLocked() {
  if (Opts.DropUmRecords <= 0)
    return false;
  // splitmix64: a fixed sequence, so a test sees the same records dropped
  // for the same order of arrival.
  uint64_t Z = (DropState += 0x9e3779b97f4a7c15ull);
  Z = (Z ^ (Z >> 30)) * 0xbf58476d1ce4e5b9ull;
  Z = (Z ^ (Z >> 27)) * 0x94d049bb133111ebull;
  Z ^= Z >> 31;
  return static_cast<double>(Z >> 11) * 0x1.0p-53 < Opts.DropUmRecords;
}

void Recorder::addFault(FaultRecord F) {
  std::lock_guard<std::mutex> L(Mu);
  noteMaybeOnGpuLocked(F.Address, 1);
  if (keepLocked(F.TimeNs) && !dropUmRecordLocked())
    Faults.push_back(F);
}

void Recorder::addMigration(MigrationRecord M) {
  std::lock_guard<std::mutex> L(Mu);
  if (M.Direction == MIGRATION_DIRECTION_HOST_TO_DEVICE)
    noteMaybeOnGpuLocked(M.Address, M.Bytes);
  if (M.Bytes != 0 && keepLocked(M.StartNs) &&
      !(M.Direction == MIGRATION_DIRECTION_HOST_TO_DEVICE && dropUmRecordLocked()))
    Migrations.push_back(M);
}

void Recorder::addLaunchArguments(uint64_t CorrelationId, uint64_t TimeNs, bool LayoutKnown,
                                  llvm::ArrayRef<uint64_t> Values) {
  std::lock_guard<std::mutex> L(Mu);
  if (!keepLocked(TimeNs))
    return;
  LaunchArguments &A = Arguments[CorrelationId];
  A.TimeNs = TimeNs;
  A.LayoutKnown = LayoutKnown;
  A.Serials.clear();
  if (!LayoutKnown)
    return;
  auto Holder = [&](const std::map<uint64_t, size_t> &Live, uint64_t V) -> const Allocation * {
    auto It = Live.upper_bound(V);
    if (It == Live.begin())
      return nullptr;
    const Allocation &Al = Allocations[std::prev(It)->second];
    return V - Al.Address < Al.Bytes ? &Al : nullptr;
  };
  for (uint64_t V : Values) {
    const Allocation *Al = Holder(LiveAllocator, V);
    if (!Al)
      Al = Holder(LiveDriver, V);
    if (Al)
      A.Serials.push_back(Al->Serial);
  }
  llvm::sort(A.Serials);
  A.Serials.erase(std::unique(A.Serials.begin(), A.Serials.end()), A.Serials.end());
}

void Recorder::addUmEvent(UmEventRecord E) {
  std::lock_guard<std::mutex> L(Mu);
  if (keepLocked(E.TimeNs))
    UmEvents.push_back(E);
}

void Recorder::addDevice(DeviceRecord D) {
  std::lock_guard<std::mutex> L(Mu);
  Devices[D.Ordinal] = std::move(D);
}

void Recorder::addLink(LinkRecord Lk) {
  std::lock_guard<std::mutex> L(Mu);
  Links[Lk.Ordinal] = Lk;
}

void Recorder::addDroppedRecords(uint64_t Count) {
  std::lock_guard<std::mutex> L(Mu);
  DroppedRecords += Count;
}

void Recorder::addAllocation(uint64_t Address, uint64_t Bytes, uint64_t Stream, uint64_t TimeNs,
                             AllocationSource Source, uint64_t Call) {
  if (Bytes == 0)
    return; // a zero-byte request occupies nothing and no kernel can touch it
  std::lock_guard<std::mutex> L(Mu);
  noteMaybeOnGpuLocked(Address, Bytes);
  auto &Live = Source == AllocationSource::Allocator ? LiveAllocator : LiveDriver;
  auto It = Live.find(Address);
  if (It != Live.end()) {
    Allocations[It->second].FreeNs = TimeNs;
    Live.erase(It);
  }
  Live[Address] = Allocations.size();
  Allocations.push_back({Address, Bytes, Stream, TimeNs, std::nullopt, Source, Call, NextSerial++});
}

void Recorder::addFree(uint64_t Address, uint64_t TimeNs, AllocationSource Source) {
  std::lock_guard<std::mutex> L(Mu);
  auto &Live = Source == AllocationSource::Allocator ? LiveAllocator : LiveDriver;
  auto It = Live.find(Address);
  if (It == Live.end()) {
    ++UnknownFrees;
    return;
  }
  Allocation &A = Allocations[It->second];
  A.FreeNs = std::max(TimeNs, A.AllocNs);
  Live.erase(It);
}

void Recorder::setVersions(uint32_t Driver, uint32_t Runtime) {
  std::lock_guard<std::mutex> L(Mu);
  DriverVersion = Driver;
  RuntimeVersion = Runtime;
}

void Recorder::setConcurrentManagedAccess(bool Supported) {
  std::lock_guard<std::mutex> L(Mu);
  ConcurrentManagedAccess = Supported;
}

void Recorder::setUmCounters(bool Enabled, std::string WhyNot) {
  std::lock_guard<std::mutex> L(Mu);
  UmCountersEnabled = Enabled;
  UmCountersWhyNot = Enabled ? "" : std::move(WhyNot);
}

void Recorder::noteError(std::string Message) {
  std::lock_guard<std::mutex> L(Mu);
  if (FirstError.empty())
    FirstError = std::move(Message);
}

std::string Recorder::firstError() const {
  std::lock_guard<std::mutex> L(Mu);
  return FirstError;
}

//===-- Iteration marks ----------------------------------------------------===//

void Recorder::setOrigin(uint64_t TimeNs) {
  std::lock_guard<std::mutex> L(Mu);
  Origin = TimeNs;
}

void Recorder::pruneBeforeLocked(uint64_t T) {
  auto Drop = [T](auto &V, auto TimeOf) {
    llvm::erase_if(V, [&](const auto &R) { return TimeOf(R) < T; });
  };
  Drop(Kernels, [](const KernelRecord &K) { return K.StartNs; });
  Drop(Transfers, [](const TransferRecord &R) { return R.StartNs; });
  Drop(Faults, [](const FaultRecord &F) { return F.TimeNs; });
  Drop(Migrations, [](const MigrationRecord &M) { return M.StartNs; });
  Drop(UmEvents, [](const UmEventRecord &E) { return E.TimeNs; });
  for (auto It = Arguments.begin(); It != Arguments.end();)
    It = It->second.TimeNs < T ? Arguments.erase(It) : std::next(It);
  // Allocations freed before T can matter to no recorded kernel. Indices in
  // the live maps change, so they are rebuilt.
  std::vector<Allocation> Kept;
  Kept.reserve(Allocations.size());
  for (const Allocation &A : Allocations)
    if (!A.FreeNs || *A.FreeNs >= T)
      Kept.push_back(A);
  Allocations = std::move(Kept);
  LiveAllocator.clear();
  LiveDriver.clear();
  for (size_t I = 0; I < Allocations.size(); ++I)
    if (!Allocations[I].FreeNs)
      (Allocations[I].Source == AllocationSource::Allocator ? LiveAllocator
                                                            : LiveDriver)[Allocations[I].Address] =
          I;
}

MarkEffect Recorder::beginLocked(uint64_t T) {
  MarkEffect E;
  if (State == RecorderState::Done)
    return E;
  SawMark = true;
  if (InIteration) {
    // A begin without an end (a second NVTX push, cudaProfilerStart twice):
    // the open iteration ends here.
    MarkEffect Ended = endLocked(T);
    if (State == RecorderState::Done)
      return Ended;
    E = Ended;
  }
  InIteration = true;
  CurrentBegin = T;
  if (State == RecorderState::Skipping && Seen >= Opts.Skip) {
    State = RecorderState::Recording;
    WindowBegin = T;
    pruneBeforeLocked(T);
    E.RecordingStarted = true;
  }
  return E;
}

MarkEffect Recorder::endLocked(uint64_t T) {
  MarkEffect E;
  if (State == RecorderState::Done || !InIteration)
    return E; // an end without a begin says nothing about any iteration
  InIteration = false;
  ++Seen;
  if (State == RecorderState::Skipping) {
    // Nothing before the end of a skipped iteration can be recorded.
    pruneBeforeLocked(T);
    return E;
  }
  Recorded.push_back({CurrentBegin, std::max(T, CurrentBegin)});
  E.IterationRecorded = true;
  if (Recorded.size() >= Opts.Iterations) {
    State = RecorderState::Done;
    E.RecordingFinished = true;
  }
  return E;
}

void Recorder::rangeMarkLocked() {
  if (SawRangeMark)
    return;
  SawRangeMark = true;
  if (!SawStepMark || State == RecorderState::Done)
    return;
  // The program marks its iterations itself: what deepum_step() counted so
  // far (an optimizer hook's marks) no longer counts, --skip starts here.
  State = RecorderState::Skipping;
  InIteration = false;
  Seen = 0;
  Recorded.clear();
  WindowBegin.reset();
}

MarkEffect Recorder::beginIteration(uint64_t T) {
  std::lock_guard<std::mutex> L(Mu);
  rangeMarkLocked();
  return beginLocked(T);
}

MarkEffect Recorder::endIteration(uint64_t T) {
  std::lock_guard<std::mutex> L(Mu);
  rangeMarkLocked();
  return endLocked(T);
}

MarkEffect Recorder::step(uint64_t T) {
  std::lock_guard<std::mutex> L(Mu);
  if (SawRangeMark)
    return {}; // begin/end marks win
  SawStepMark = true;
  if (!InIteration && !SawMark) {
    // The first deepum_step() ends the iteration that began with the run.
    MarkEffect Opened = beginLocked(Origin);
    (void)Opened;
  }
  MarkEffect Ended = endLocked(T);
  if (Ended.RecordingFinished)
    return Ended;
  MarkEffect Began = beginLocked(T);
  Began.IterationRecorded |= Ended.IterationRecorded;
  return Began;
}

RecorderState Recorder::state() const {
  std::lock_guard<std::mutex> L(Mu);
  return State;
}

bool Recorder::accessSetActive() const {
  std::lock_guard<std::mutex> L(Mu);
  if (!Opts.AccessSetMode)
    return false;
  return State == RecorderState::Recording || (State == RecorderState::Skipping && !SawMark);
}

uint32_t Recorder::recordedIterations() const {
  std::lock_guard<std::mutex> L(Mu);
  return static_cast<uint32_t>(Recorded.size());
}

uint32_t Recorder::seenIterations() const {
  std::lock_guard<std::mutex> L(Mu);
  return Seen;
}

std::vector<std::pair<uint64_t, uint64_t>> Recorder::takeRangesToSendHome() {
  std::lock_guard<std::mutex> L(Mu);
  std::vector<std::pair<uint64_t, uint64_t>> Ranges;
  for (uint64_t B : std::exchange(MaybeOnGpu, {})) {
    uint64_t Begin = B * kBlockBytes, End = Begin + kBlockBytes;
    for (const auto *Live : {&LiveDriver, &LiveAllocator}) {
      // Live allocations of one source do not overlap: start at the last one
      // beginning at or before Begin and walk up to End.
      auto It = Live->upper_bound(Begin);
      if (It != Live->begin())
        --It;
      for (; It != Live->end() && It->first < End; ++It) {
        const Allocation &A = Allocations[It->second];
        uint64_t Lo = std::max(Begin, A.Address), Hi = std::min(End, A.Address + A.Bytes);
        if (Lo < Hi)
          Ranges.emplace_back(Lo, Hi);
      }
    }
  }
  std::sort(Ranges.begin(), Ranges.end());
  Ranges.erase(std::unique(Ranges.begin(), Ranges.end()), Ranges.end());
  return Ranges;
}

//===-- Iterations from the period -----------------------------------------===//

std::vector<size_t> periodIterationEnds(ArrayRef<uint64_t> Ids) {
  const size_t L = Ids.size();
  // For each candidate period P: the length of the run's end that repeats
  // with period P (P plus the kernels equal to the one P before, counted
  // back from the last).
  size_t Longest = 0;
  std::vector<std::pair<size_t, size_t>> Candidates; // period, periodic end length
  for (size_t P = 1; 2 * P <= L; ++P) {
    size_t Same = 0;
    while (Same + P < L && Ids[L - 1 - Same] == Ids[L - 1 - Same - P])
      ++Same;
    if (Same < P)
      continue; // fewer than two whole periods end the run
    Candidates.emplace_back(P, Same + P);
    Longest = std::max(Longest, Same + P);
  }
  // A repeated layer at the very end repeats over a short stretch only; the
  // iteration's period covers (nearly) the whole steady state.
  size_t Period = 0, Periodic = 0;
  for (auto [P, Len] : Candidates)
    if (2 * Len >= Longest) {
      Period = P;
      Periodic = Len;
      break;
    }
  // A few equal kernels closing an unperiodic run are no iterations.
  if (Period == 0 || 4 * Periodic < L)
    return {};
  const size_t PeriodicBegin = L - Periodic;

  std::vector<size_t> Ends;
  for (size_t Gram = 1;; Gram = std::min(2 * Gram, Period)) {
    ArrayRef<uint64_t> Close = Ids.take_back(Gram);
    Ends.clear();
    for (size_t E = Gram; E <= L; ++E)
      if (Ids.slice(E - Gram, Gram) == Close)
        Ends.push_back(E);
    // Inside the periodic end, the closing kernels must occur exactly at the
    // period's multiples; elsewhere they recur inside an iteration.
    bool Exact = true;
    for (size_t E : Ends)
      if (E >= PeriodicBegin + Gram && (L - E) % Period != 0)
        Exact = false;
    if (Exact || Gram == Period)
      break;
  }
  std::vector<size_t> Kept;
  for (size_t E : Ends)
    if (Kept.empty() ? E > 0 : E - Kept.back() >= (Period + 1) / 2)
      Kept.push_back(E);
  if (Kept.empty() || Kept.back() != L)
    Kept.push_back(L); // the last end is the run's end by construction
  return Kept;
}

//===-- Building the profile -----------------------------------------------===//

namespace {

/// Fault access type -> access mode. A write fault proves the kernel wrote
/// somewhere in the page, not that it overwrote all of it before reading, so
/// it is READ_WRITE, never WRITE: WRITE would let a plan discard live data.
AccessMode modeOfFault(FaultAccess A) {
  switch (A) {
  case FAULT_ACCESS_READ:
  case FAULT_ACCESS_PREFETCH: // a prefetch instruction reads
    return ACCESS_MODE_READ;
  case FAULT_ACCESS_WRITE:
  case FAULT_ACCESS_ATOMIC:
    return ACCESS_MODE_READ_WRITE;
  default:
    return ACCESS_MODE_UNSPECIFIED;
  }
}

AccessMode mergeMode(AccessMode A, AccessMode B) {
  if (A == B)
    return A;
  if (A == ACCESS_MODE_READ_WRITE || B == ACCESS_MODE_READ_WRITE)
    return ACCESS_MODE_READ_WRITE;
  if (A == ACCESS_MODE_UNSPECIFIED || B == ACCESS_MODE_UNSPECIFIED)
    return ACCESS_MODE_UNSPECIFIED; // direction unknown: treated as read-write downstream
  return ACCESS_MODE_READ_WRITE;    // READ with WRITE
}

struct PageUse {
  uint64_t Page; // address / 64 KiB
  uint64_t AllocationId;
  AccessMode Mode;
};

} // namespace

double pcieBytesPerSecond(uint32_t Generation, uint32_t Width) {
  // Per-lane payload rate after line encoding (8b/10b for gen 1-2, 128b/130b
  // for gen 3-5, FLIT for gen 6), bytes per second.
  static constexpr double kLaneBytesPerSecond[] = {0,      250e6,  500e6, 984.6e6,
                                                   1969e6, 3938e6, 7563e6};
  if (Generation == 0 || Generation >= std::size(kLaneBytesPerSecond))
    return 0;
  return kLaneBytesPerSecond[Generation] * Width;
}

uint32_t Recorder::mainDeviceLocked(uint64_t Begin, uint64_t End) const {
  std::map<uint32_t, uint64_t> PerDevice;
  for (const KernelRecord &K : Kernels)
    if (K.StartNs >= Begin && K.StartNs <= End)
      ++PerDevice[K.Device];
  uint32_t Ordinal = Devices.empty() ? 0 : Devices.begin()->first;
  uint64_t Most = 0;
  for (auto [Dev, N] : PerDevice)
    if (N > Most) {
      Most = N;
      Ordinal = Dev;
    }
  return Ordinal;
}

std::vector<Recorder::Window> Recorder::periodWindowsLocked(std::string &Note) const {
  uint32_t Device = mainDeviceLocked(0, std::numeric_limits<uint64_t>::max());
  std::vector<const KernelRecord *> Ks;
  for (const KernelRecord &K : Kernels)
    if (K.Device == Device)
      Ks.push_back(&K);
  std::stable_sort(Ks.begin(), Ks.end(), [](const KernelRecord *A, const KernelRecord *B) {
    if (A->StartNs != B->StartNs)
      return A->StartNs < B->StartNs;
    return A->CorrelationId < B->CorrelationId;
  });
  std::vector<uint64_t> Ids;
  Ids.reserve(Ks.size());
  for (const KernelRecord *K : Ks)
    Ids.push_back(format::executionId(K->Name, {K->GridX, K->GridY, K->GridZ, K->BlockX,
                                                K->BlockY, K->BlockZ, K->SharedMemoryBytes}));
  std::vector<size_t> Ends = periodIterationEnds(Ids);
  if (Ends.size() < 2)
    return {};
  const size_t Found = Ends.size();
  // --skip and --iterations count the iterations found; when the run had
  // too few, the last ones are kept and the note says so.
  size_t First = Opts.Skip, Count = Opts.Iterations;
  if (First >= Found) {
    Count = std::min<size_t>(Count, Found);
    First = Found - Count;
  } else {
    Count = std::min<size_t>(Count, Found - First);
  }
  std::vector<Window> Ws;
  for (size_t I = First; I < First + Count; ++I) {
    size_t Begin = I == 0 ? 0 : Ends[I - 1], End = Ends[I];
    uint64_t BeginNs = Ks[Begin]->StartNs, EndNs = 0;
    if (End < Ks.size()) {
      EndNs = Ks[End]->StartNs > BeginNs ? Ks[End]->StartNs - 1 : BeginNs;
    } else {
      for (size_t K = Begin; K < End; ++K)
        EndNs = std::max({EndNs, Ks[K]->EndNs, Ks[K]->StartNs});
    }
    Ws.push_back({BeginNs, EndNs});
  }
  Note = format::kIterationsByPeriodNote +
         formatv("{0} iteration(s) found from the period of the kernel sequence, {1} skipped, "
                 "{2} recorded",
                 Found, First, Count)
             .str();
  if (First != Opts.Skip || Count != Opts.Iterations)
    Note += formatv(" (--skip {0} --iterations {1} asked for more)", Opts.Skip, Opts.Iterations)
                .str();
  return Ws;
}

/// The steps of buildProfile over what they share: the recorded window, the
/// profile being filled, the kernels and allocations it keeps, and what the
/// fault attribution finds for each kernel. Runs under the recorder's lock.
class Recorder::ProfileBuilder {
public:
  ProfileBuilder(const Recorder &Rec, const std::vector<Window> &Windows, bool IsWholeRun)
      : R(Rec), Iters(Windows), WholeRun(IsWholeRun), WinBegin(Windows.front().Begin),
        WinEnd(Windows.back().End) {}

  void addHeader();
  void selectKernels();
  void addDevice();
  void addAllocations();
  void addKernels();
  void addIterations();
  void attributeFaults();
  void attributeMigrations();
  void addFaultStalls();
  void addAccessSets();
  void addArguments();
  void addMigrations();
  void addUmEvents();
  void addRecording(const std::string &PeriodNote);

  Profile &profile() { return P; }

private:
  bool inWindow(uint64_t T) const { return T >= WinBegin && T <= WinEnd; }
  int64_t allocationAt(uint64_t Addr, uint64_t T);
  int64_t kernelAt(uint64_t T) const;
  /// The migrations inside the window by start time (stable), sorted once
  /// for attributeMigrations and addMigrations.
  const std::vector<const MigrationRecord *> &migrationsInWindow();
  /// Kernel K waited on the UM driver over [Begin, End], clipped to it.
  void addStall(int64_t K, uint64_t Begin, uint64_t End);

  const Recorder &R;
  const std::vector<Window> &Iters;
  const bool WholeRun;
  const uint64_t WinBegin, WinEnd;
  Profile P;

  std::vector<const KernelRecord *> Ks;
  uint32_t DeviceOrdinal = 0;
  uint64_t OtherDeviceKernels = 0;
  uint32_t EmptyIterations = 0;

  std::vector<const Allocation *> As;
  // Faults are mapped to allocations by a sweep in time order over a map of
  // the allocations live at that moment: addresses are reused, and a pool can
  // hand the same address out once per iteration, so a search over all
  // allocations would be quadratic.
  struct LiveEvent {
    uint64_t Time;
    int Order; // at equal times: allocations, then faults, then frees
    size_t Index;
  };
  std::vector<LiveEvent> LiveEvents;
  std::optional<std::vector<const MigrationRecord *>> InWindowMigrations;
  size_t NextEvent = 0;
  std::map<uint64_t, size_t> LiveByAddress;

  // PrefixEnd[i] = latest end among kernels 0..i: no kernel before i+1 can
  // contain a time later than PrefixEnd[i].
  std::vector<uint64_t> PrefixEnd;
  uint64_t Unattributed = 0, OutsideAllocations = 0;
  std::vector<std::vector<PageUse>> Uses;
  // Per kernel, the service intervals of its fault groups, clipped to it.
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> Stalls;
};

void Recorder::ProfileBuilder::addHeader() {
  P.set_format_version(format::kProfileFormatVersion);
  P.set_producer(R.Opts.Producer);
  P.set_um_block_bytes(kBlockBytes);
  P.set_access_source(R.Opts.AccessSetMode ? ACCESS_SOURCE_MEASURED_ACCESS_SET
                                           : ACCESS_SOURCE_MEASURED_FAULTS);
}

/// Kernels: the device that ran most of them is the profile's device.
void Recorder::ProfileBuilder::selectKernels() {
  DeviceOrdinal = R.mainDeviceLocked(WinBegin, WinEnd);
  for (const KernelRecord &K : R.Kernels) {
    if (!inWindow(K.StartNs))
      continue;
    if (K.Device != DeviceOrdinal) {
      ++OtherDeviceKernels;
      continue;
    }
    Ks.push_back(&K);
  }
  std::stable_sort(Ks.begin(), Ks.end(), [](const KernelRecord *A, const KernelRecord *B) {
    if (A->StartNs != B->StartNs)
      return A->StartNs < B->StartNs;
    return A->CorrelationId < B->CorrelationId;
  });
}

void Recorder::ProfileBuilder::addDevice() {
  Device *D = P.mutable_device();
  D->set_ordinal(DeviceOrdinal);
  if (auto It = R.Devices.find(DeviceOrdinal); It != R.Devices.end()) {
    D->set_name(It->second.Name);
    D->set_memory_bytes(It->second.MemoryBytes);
    D->set_compute_capability(It->second.ComputeCapability);
  }
  if (auto It = R.Links.find(DeviceOrdinal); It != R.Links.end() && It->second.Generation != 0) {
    D->set_link(formatv("pcie{0}x{1}", It->second.Generation, It->second.Width).str());
    D->set_link_bytes_per_second(pcieBytesPerSecond(It->second.Generation, It->second.Width));
  }
  D->set_concurrent_managed_access(R.ConcurrentManagedAccess);
  D->set_driver_version(R.DriverVersion);
  D->set_runtime_version(R.RuntimeVersion);
}

/// Allocations live in the window. A pooling allocator reports its tensors
/// and the driver sees the pool: drop driver allocations that contain
/// allocator ones. Also orders their allocations and frees for the sweep.
void Recorder::ProfileBuilder::addAllocations() {
  std::vector<std::pair<uint64_t, uint64_t>> AllocatorRanges;
  for (const Allocation &A : R.Allocations)
    if (A.Source == AllocationSource::Allocator)
      AllocatorRanges.emplace_back(A.Address, A.Address + A.Bytes);
  std::sort(AllocatorRanges.begin(), AllocatorRanges.end());
  auto OverlapsAllocator = [&](uint64_t Begin, uint64_t End) {
    auto It = std::lower_bound(AllocatorRanges.begin(), AllocatorRanges.end(),
                               std::make_pair(End, uint64_t{0}));
    // Any allocator range starting before End that ends after Begin.
    for (auto I = AllocatorRanges.begin(); I != It; ++I)
      if (I->second > Begin)
        return true;
    return false;
  };
  for (const Allocation &A : R.Allocations) {
    if (A.AllocNs > WinEnd || (A.FreeNs && *A.FreeNs < WinBegin))
      continue;
    if (A.Source == AllocationSource::Driver && !AllocatorRanges.empty() &&
        OverlapsAllocator(A.Address, A.Address + A.Bytes))
      continue;
    As.push_back(&A);
  }
  std::stable_sort(As.begin(), As.end(), [](const Allocation *X, const Allocation *Y) {
    if (X->AllocNs != Y->AllocNs)
      return X->AllocNs < Y->AllocNs;
    return X->Address < Y->Address;
  });
  for (size_t I = 0; I < As.size(); ++I) {
    v1::Allocation *PA = P.add_allocations();
    PA->set_id(I + 1);
    PA->set_size_bytes(As[I]->Bytes);
    PA->set_stream(As[I]->Stream);
    PA->set_address(As[I]->Address);
    PA->set_alloc_time_ns(As[I]->AllocNs);
    if (As[I]->Call)
      PA->set_call_index(As[I]->Call);
    if (As[I]->FreeNs && *As[I]->FreeNs <= WinEnd) {
      PA->set_freed(true);
      PA->set_free_time_ns(*As[I]->FreeNs);
    }
  }
  LiveEvents.reserve(As.size() * 2);
  for (size_t I = 0; I < As.size(); ++I) {
    LiveEvents.push_back({As[I]->AllocNs, 0, I});
    if (As[I]->FreeNs)
      LiveEvents.push_back({*As[I]->FreeNs, 2, I});
  }
  std::sort(LiveEvents.begin(), LiveEvents.end(), [](const LiveEvent &X, const LiveEvent &Y) {
    return std::tie(X.Time, X.Order, X.Index) < std::tie(Y.Time, Y.Order, Y.Index);
  });
}

/// Index into As of the allocation holding Addr at time T, or -1. Faults
/// must be asked for in time order.
int64_t Recorder::ProfileBuilder::allocationAt(uint64_t Addr, uint64_t T) {
  for (; NextEvent < LiveEvents.size(); ++NextEvent) {
    const LiveEvent &E = LiveEvents[NextEvent];
    if (E.Time > T || (E.Time == T && E.Order > 1))
      break;
    const Allocation *A = As[E.Index];
    if (E.Order == 0) {
      LiveByAddress[A->Address] = E.Index;
      continue;
    }
    auto It = LiveByAddress.find(A->Address);
    if (It != LiveByAddress.end() && It->second == E.Index)
      LiveByAddress.erase(It);
  }
  auto It = LiveByAddress.upper_bound(Addr);
  if (It == LiveByAddress.begin())
    return -1;
  --It;
  const Allocation *A = As[It->second];
  return Addr < A->Address + A->Bytes ? static_cast<int64_t>(It->second) : -1;
}

void Recorder::ProfileBuilder::addKernels() {
  for (const KernelRecord *K : Ks) {
    Kernel *PK = P.add_kernels();
    PK->set_name(K->Name);
    PK->mutable_grid()->set_x(K->GridX);
    PK->mutable_grid()->set_y(K->GridY);
    PK->mutable_grid()->set_z(K->GridZ);
    PK->mutable_block()->set_x(K->BlockX);
    PK->mutable_block()->set_y(K->BlockY);
    PK->mutable_block()->set_z(K->BlockZ);
    PK->set_shared_memory_bytes(K->SharedMemoryBytes);
    PK->set_stream(K->Stream);
    PK->set_start_ns(K->StartNs);
    PK->set_end_ns(std::max(K->EndNs, K->StartNs));
    PK->set_correlation_id(K->CorrelationId);
  }
}

/// Iterations: kernels that start inside each recorded window.
void Recorder::ProfileBuilder::addIterations() {
  uint32_t Emitted = 0;
  for (const Window &W : Iters) {
    auto First = std::lower_bound(Ks.begin(), Ks.end(), W.Begin,
                                  [](const KernelRecord *K, uint64_t T) { return K->StartNs < T; });
    auto Last = std::upper_bound(Ks.begin(), Ks.end(), W.End,
                                 [](uint64_t T, const KernelRecord *K) { return T < K->StartNs; });
    if (First == Last) {
      ++EmptyIterations;
      continue;
    }
    Iteration *PI = P.add_iterations();
    PI->set_index(Emitted++);
    PI->set_first_kernel(static_cast<uint32_t>(First - Ks.begin()));
    PI->set_kernel_count(static_cast<uint32_t>(Last - First));
    PI->set_start_ns(WholeRun ? (*First)->StartNs : W.Begin);
    uint64_t End = WholeRun ? 0 : W.End;
    for (auto It = First; It != Last; ++It)
      End = std::max(End, (*It)->EndNs);
    PI->set_end_ns(std::max(End, PI->start_ns()));
  }
}

/// Index into Ks of the one kernel running at T, or -1 (none, or several).
int64_t Recorder::ProfileBuilder::kernelAt(uint64_t T) const {
  auto It = std::upper_bound(Ks.begin(), Ks.end(), T,
                             [](uint64_t V, const KernelRecord *K) { return V < K->StartNs; });
  // Walk back over the kernels started by T while one of them may still
  // run at T; with serialised kernels this looks at one kernel.
  // A kernel ending at T yields to one running at T: serialised kernels run
  // back to back, and a fault at the boundary is the starting kernel's.
  int64_t Found = -1;
  bool FoundEnds = false;
  for (size_t I = static_cast<size_t>(It - Ks.begin()); I-- > 0 && PrefixEnd[I] >= T;) {
    if (Ks[I]->EndNs < T)
      continue;
    const bool Ends = Ks[I]->EndNs == T && Ks[I]->StartNs < T;
    if (Found >= 0) {
      if (Ends && !FoundEnds)
        continue;
      if (!Ends && FoundEnds) {
        Found = static_cast<int64_t>(I);
        FoundEnds = false;
        continue;
      }
      return -1; // two kernels were running: no single answer
    }
    Found = static_cast<int64_t>(I);
    FoundEnds = Ends;
  }
  return Found;
}

void Recorder::ProfileBuilder::addStall(int64_t K, uint64_t Begin, uint64_t End) {
  const KernelRecord &Kr = *Ks[static_cast<size_t>(K)];
  const uint64_t From = std::max(Begin, Kr.StartNs);
  const uint64_t To = std::min(std::max(End, Begin), std::max(Kr.EndNs, Kr.StartNs));
  if (From < To)
    Stalls[static_cast<size_t>(K)].push_back({From, To});
}

/// Faults, attributed by time to a kernel and by address to an allocation:
/// each kernel's pages and fault-service intervals.
void Recorder::ProfileBuilder::attributeFaults() {
  PrefixEnd.resize(Ks.size());
  for (size_t I = 0; I < Ks.size(); ++I)
    PrefixEnd[I] = std::max(I ? PrefixEnd[I - 1] : 0, Ks[I]->EndNs);
  std::vector<const FaultRecord *> Fs;
  for (const FaultRecord &F : R.Faults)
    if (inWindow(F.TimeNs))
      Fs.push_back(&F);
  std::stable_sort(Fs.begin(), Fs.end(), [](const FaultRecord *A, const FaultRecord *B) {
    return A->TimeNs < B->TimeNs;
  });
  Uses.resize(Ks.size());
  Stalls.resize(Ks.size());
  for (const FaultRecord *F : Fs) {
    int64_t K = kernelAt(F->TimeNs);
    PageFault *PF = P.add_faults();
    PF->set_address(F->Address);
    PF->set_time_ns(F->TimeNs);
    PF->set_access(F->Access);
    PF->set_kernel_index(K);
    if (K < 0) {
      ++Unattributed;
      continue;
    }
    addStall(K, F->TimeNs, F->EndNs);
    int64_t A = allocationAt(F->Address, F->TimeNs);
    if (A < 0) {
      // Memory the allocator did not report (a library's own cudaMalloc, say):
      // a block outside every allocation would make the profile invalid.
      ++OutsideAllocations;
      continue;
    }
    Uses[K].push_back(
        {F->Address / kPageBytes, static_cast<uint64_t>(A) + 1, modeOfFault(F->Access)});
  }
}

/// Host-to-device migrations the driver made while a kernel ran (a fault's,
/// or its prefetcher's, which stays inside the faulting 2 MiB block): pages
/// of the kernel's blocks that a real driver may report no fault for (on an
/// H100 with driver 580, a kernel touching every 64 KiB page of 8 blocks
/// faulted visibly on 4 of them). Explicit prefetches (cause USER, or none
/// given) are the program's, not the kernel's. Pages no fault describes get
/// UNSPECIFIED: the direction is unknown (read-write downstream). The time
/// they moved counts in the kernel's fault stall.
void Recorder::ProfileBuilder::attributeMigrations() {
  std::vector<std::vector<uint64_t>> Faulted(Ks.size());
  for (size_t K = 0; K < Ks.size(); ++K) {
    for (const PageUse &U : Uses[K])
      Faulted[K].push_back(U.Page);
    llvm::sort(Faulted[K]);
  }
  // allocationAt sweeps forward in time: start it again for this pass.
  NextEvent = 0;
  LiveByAddress.clear();
  for (const MigrationRecord *M : migrationsInWindow()) {
    if (M->Direction != MIGRATION_DIRECTION_HOST_TO_DEVICE || M->Cause == MIGRATION_CAUSE_USER ||
        M->Cause == MIGRATION_CAUSE_UNSPECIFIED)
      continue;
    int64_t K = kernelAt(M->StartNs);
    if (K < 0)
      continue;
    // The kernel waits for its pages while they move: stall, like a fault's
    // service (the driver reports faults for only some of the pages).
    addStall(K, M->StartNs, M->EndNs);
    const auto &FaultedPages = Faulted[static_cast<size_t>(K)];
    for (uint64_t Page = M->Address / kPageBytes, Last = (M->Address + M->Bytes - 1) / kPageBytes;
         Page <= Last; ++Page) {
      if (std::binary_search(FaultedPages.begin(), FaultedPages.end(), Page))
        continue;
      int64_t A = allocationAt(std::max(Page * kPageBytes, M->Address), M->StartNs);
      if (A >= 0)
        Uses[static_cast<size_t>(K)].push_back(
            {Page, static_cast<uint64_t>(A) + 1, ACCESS_MODE_UNSPECIFIED});
    }
  }
}

/// Fault stall: the union of each kernel's fault-service intervals.
void Recorder::ProfileBuilder::addFaultStalls() {
  for (size_t K = 0; K < Ks.size(); ++K) {
    auto &S = Stalls[K];
    if (S.empty())
      continue;
    std::sort(S.begin(), S.end());
    uint64_t Stall = 0, RunBegin = S.front().first, RunEnd = S.front().second;
    for (const auto &[From, To] : S) {
      if (From > RunEnd) {
        Stall += RunEnd - RunBegin;
        RunBegin = From;
      }
      RunEnd = std::max(RunEnd, To);
    }
    Stall += RunEnd - RunBegin;
    P.mutable_kernels(static_cast<int>(K))->set_fault_stall_ns(Stall);
  }
}

/// Access sets: per kernel, blocks with page masks, and runs of pages per allocation.
void Recorder::ProfileBuilder::addAccessSets() {
  for (size_t K = 0; K < Ks.size(); ++K) {
    auto &U = Uses[K];
    if (U.empty())
      continue;
    std::sort(U.begin(), U.end(), [](const PageUse &X, const PageUse &Y) {
      return std::tie(X.AllocationId, X.Page) < std::tie(Y.AllocationId, Y.Page);
    });
    Kernel *PK = P.mutable_kernels(static_cast<int>(K));
    std::map<uint64_t, std::pair<uint32_t, AccessMode>> Blocks;
    for (const PageUse &Use : U) {
      auto [It, New] = Blocks.try_emplace(Use.Page / kPagesPerBlock, 0u, Use.Mode);
      It->second.first |= uint32_t{1} << (Use.Page % kPagesPerBlock);
      if (!New)
        It->second.second = mergeMode(It->second.second, Use.Mode);
    }
    for (auto &[Block, MaskMode] : Blocks) {
      BlockAccess *B = PK->add_blocks();
      B->set_block(Block);
      B->set_page_mask(MaskMode.first);
      B->set_mode(MaskMode.second);
    }
    // Contiguous runs of touched pages within one allocation, clipped to it.
    for (size_t I = 0; I < U.size();) {
      size_t J = I;
      AccessMode Mode = U[I].Mode;
      while (J + 1 < U.size() && U[J + 1].AllocationId == U[I].AllocationId &&
             U[J + 1].Page <= U[J].Page + 1) {
        ++J;
        Mode = mergeMode(Mode, U[J].Mode);
      }
      const v1::Allocation &PA = P.allocations(static_cast<int>(U[I].AllocationId - 1));
      uint64_t Begin = std::max(U[I].Page * kPageBytes, PA.address());
      uint64_t End = std::min((U[J].Page + 1) * kPageBytes, PA.address() + PA.size_bytes());
      TensorAccess *T = PK->add_tensors();
      T->set_allocation_id(U[I].AllocationId);
      T->set_offset(Begin - PA.address());
      T->set_bytes(End - Begin);
      T->set_mode(Mode);
      I = J + 1;
    }
  }
}

/// What each kernel's arguments named (Recorder::addLaunchArguments, by the
/// launch's correlation id), and the allocations it touched without naming
/// them: those of its faults and migrations outside the named ones.
void Recorder::ProfileBuilder::addArguments() {
  if (R.Arguments.empty())
    return;
  std::unordered_map<uint64_t, uint64_t> IdOfSerial;
  for (size_t I = 0; I < As.size(); ++I)
    IdOfSerial.emplace(As[I]->Serial, I + 1);
  for (size_t K = 0; K < Ks.size(); ++K) {
    auto It = R.Arguments.find(Ks[K]->CorrelationId);
    if (Ks[K]->CorrelationId == 0 || It == R.Arguments.end())
      continue;
    Kernel *PK = P.mutable_kernels(static_cast<int>(K));
    if (!It->second.LayoutKnown) {
      PK->set_arguments(KERNEL_ARGUMENTS_NO_LAYOUT);
      continue;
    }
    PK->set_arguments(KERNEL_ARGUMENTS_SCANNED);
    std::vector<uint64_t> Named;
    for (uint64_t Serial : It->second.Serials)
      if (auto Id = IdOfSerial.find(Serial); Id != IdOfSerial.end())
        Named.push_back(Id->second);
    llvm::sort(Named);
    Named.erase(std::unique(Named.begin(), Named.end()), Named.end());
    std::vector<uint64_t> Indirect;
    for (const PageUse &U : Uses[K])
      if (!std::binary_search(Named.begin(), Named.end(), U.AllocationId))
        Indirect.push_back(U.AllocationId);
    llvm::sort(Indirect);
    Indirect.erase(std::unique(Indirect.begin(), Indirect.end()), Indirect.end());
    for (uint64_t Id : Named)
      PK->add_named_allocations(Id);
    for (uint64_t Id : Indirect)
      PK->add_indirect_allocations(Id);
  }
}

const std::vector<const MigrationRecord *> &Recorder::ProfileBuilder::migrationsInWindow() {
  if (!InWindowMigrations) {
    std::vector<const MigrationRecord *> Ms;
    for (const MigrationRecord &M : R.Migrations)
      if (inWindow(M.StartNs))
        Ms.push_back(&M);
    std::stable_sort(Ms.begin(), Ms.end(), [](const MigrationRecord *A, const MigrationRecord *B) {
      return A->StartNs < B->StartNs;
    });
    InWindowMigrations = std::move(Ms);
  }
  return *InWindowMigrations;
}

void Recorder::ProfileBuilder::addMigrations() {
  for (const MigrationRecord *M : migrationsInWindow()) {
    if (M->Direction == MIGRATION_DIRECTION_UNSPECIFIED)
      continue; // device-to-device: the schema (and the planner) knows host links only
    Migration *PM = P.add_migrations();
    PM->set_address(M->Address);
    PM->set_bytes(M->Bytes);
    PM->set_direction(M->Direction);
    PM->set_cause(M->Cause);
    PM->set_start_ns(M->StartNs);
    PM->set_end_ns(std::max(M->EndNs, M->StartNs));
  }
}

void Recorder::ProfileBuilder::addUmEvents() {
  std::vector<const UmEventRecord *> Es;
  for (const UmEventRecord &E : R.UmEvents)
    if (inWindow(E.TimeNs))
      Es.push_back(&E);
  std::stable_sort(Es.begin(), Es.end(), [](const UmEventRecord *A, const UmEventRecord *B) {
    return A->TimeNs < B->TimeNs;
  });
  for (const UmEventRecord *E : Es) {
    UmEvent *PE = P.add_um_events();
    PE->set_kind(E->Kind);
    PE->set_address(E->Address);
    PE->set_bytes(E->Bytes);
    PE->set_time_ns(E->TimeNs);
  }
}

/// The recording's statistics, and what the schema has no field for in the
/// notes, for people to read.
void Recorder::ProfileBuilder::addRecording(const std::string &PeriodNote) {
  RecordingStats *S = P.mutable_recording();
  S->set_dropped_records(R.DroppedRecords);
  S->set_um_counters_enabled(R.UmCountersEnabled);
  S->set_um_counters_error(R.UmCountersWhyNot);
  S->set_unattributed_faults(Unattributed);

  std::vector<std::string> Notes;
  if (WholeRun)
    Notes.push_back(format::kWholeRunNote);
  if (!PeriodNote.empty())
    Notes.push_back(PeriodNote);
  uint64_t Copies = 0, CopyBytes = 0, Sets = 0, SetBytes = 0;
  for (const TransferRecord &T : R.Transfers) {
    if (!inWindow(T.StartNs))
      continue;
    (T.What == TransferRecord::Memcpy ? Copies : Sets) += 1;
    (T.What == TransferRecord::Memcpy ? CopyBytes : SetBytes) += T.Bytes;
  }
  if (Copies || Sets)
    Notes.push_back(
        formatv("{0} memcpy ({1} bytes), {2} memset ({3} bytes)", Copies, CopyBytes, Sets, SetBytes)
            .str());
  if (OutsideAllocations)
    Notes.push_back(
        formatv("{0} attributed fault(s) outside every recorded allocation", OutsideAllocations)
            .str());
  if (EmptyIterations)
    Notes.push_back(formatv("{0} iteration(s) without kernels left out", EmptyIterations).str());
  if (OtherDeviceKernels)
    Notes.push_back(formatv("{0} kernel(s) on other devices left out (one device per profile)",
                            OtherDeviceKernels)
                        .str());
  if (R.UnknownFrees)
    Notes.push_back(formatv("{0} free(s) of unknown addresses ignored", R.UnknownFrees).str());
  if (!R.FirstError.empty())
    Notes.push_back("first error: " + R.FirstError);
  std::string Joined;
  for (const std::string &N : Notes)
    Joined += (Joined.empty() ? "" : "; ") + N;
  P.mutable_workload()->set_notes(Joined);
}

Expected<Profile> Recorder::buildProfile() const {
  std::lock_guard<std::mutex> L(Mu);

  // The window of complete recorded iterations.
  std::vector<Window> Iters = Recorded;
  bool WholeRun = false;
  std::string PeriodNote;
  if (Iters.empty()) {
    if (SawMark)
      return createStringError(
          inconvertibleErrorCode(),
          "no complete iteration was recorded: %u iteration(s) ended, %u skipped (--skip %u)", Seen,
          std::min(Seen, Opts.Skip), Opts.Skip);
    Iters = periodWindowsLocked(PeriodNote);
    if (Iters.empty()) {
      WholeRun = true;
      Iters.push_back({0, std::numeric_limits<uint64_t>::max()});
    }
  }

  ProfileBuilder Builder(*this, Iters, WholeRun);
  Builder.addHeader();
  Builder.selectKernels();
  Builder.addDevice();
  Builder.addAllocations();
  Builder.addKernels();
  Builder.addIterations();
  Builder.attributeFaults();
  Builder.attributeMigrations();
  Builder.addFaultStalls();
  Builder.addAccessSets();
  Builder.addArguments();
  Builder.addMigrations();
  Builder.addUmEvents();
  Builder.addRecording(PeriodNote);
  Profile &P = Builder.profile();

  if (P.iterations_size() == 0 && !WholeRun)
    return createStringError(inconvertibleErrorCode(),
                             "the %u recorded iteration(s) ran no kernel on the GPU",
                             static_cast<unsigned>(Iters.size()));
  if (Error E = format::validateProfile(P))
    return createStringError(inconvertibleErrorCode(), "the recorded profile is invalid: %s",
                             toString(std::move(E)).c_str());
  return std::move(P);
}

std::string describeProfile(const Profile &P) {
  uint64_t Attributed = 0;
  for (const PageFault &F : P.faults())
    Attributed += F.kernel_index() >= 0;
  std::string S = formatv("{0} iteration(s), {1} kernel(s), {2} allocation(s), {3} fault(s) "
                          "({4} attributed), {5} migration(s)",
                          P.iterations_size(), P.kernels_size(), P.allocations_size(),
                          P.faults_size(), Attributed, P.migrations_size())
                      .str();
  uint64_t Scanned = 0, NoLayout = 0;
  for (const Kernel &K : P.kernels()) {
    Scanned += K.arguments() == KERNEL_ARGUMENTS_SCANNED;
    NoLayout += K.arguments() == KERNEL_ARGUMENTS_NO_LAYOUT;
  }
  if (Scanned + NoLayout)
    S += formatv("; arguments read for {0} kernel(s){1}", Scanned,
                 NoLayout ? formatv(", not for {0} (no parameter layout)", NoLayout).str() : "")
             .str();
  if (P.recording().dropped_records())
    S += formatv("; {0} record(s) dropped by CUPTI", P.recording().dropped_records()).str();
  if (!P.recording().um_counters_enabled())
    S += "; kernels only (no UM counters" + (P.recording().um_counters_error().empty()
                                                 ? std::string(")")
                                                 : ": " + P.recording().um_counters_error() + ")");
  return S;
}

} // namespace deepum::profiler
