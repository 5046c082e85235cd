//===- deepum/sim/Engine.h - One GPU under Unified Memory, step by step ----===//
//
// The mechanism under every policy of deepum-sim, and the simulator backend
// the executor drives. Time advances only as kernels are launched:
//
//  - The host is one launch ahead of the GPU: commands issued between
//    launch(k-1) and launch(k) are issued at the time kernel k-1 starts (the
//    moment the host observes launch k while k-1 runs).
//  - Commands (prefetchToDevice, evictToHost, discard, advise) go to a copy
//    engine per direction, in issue order (FIFO, like one CUDA stream each).
//    Demand faults are serviced ahead of queued prefetches: a prefetch that
//    has not started when a fault's migration is ready yields to it.
//  - launch(uses, duration) runs the kernel after the previous one, once every
//    64 KiB page it touches is resident: missing pages demand-fault, are
//    serviced in batches (fixed latency + transfer, density prefetcher), and
//    room is made by evicting 2 MiB chunks least-recently-migrated first.
//  - Memory freed by an eviction is reusable only when its write-back ends;
//    no page is evicted before the last kernel using it has finished.
//
// Blocks are 2 MiB UM blocks (address / 2 MiB). The dense interface works on
// interned block ids for speed (no hashing per access); the address interface
// is for the executor's backend.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_SIM_ENGINE_H
#define DEEPUM_SIM_ENGINE_H

#include "deepum/format/Perfetto.h"
#include "deepum/sim/Simulator.h"
#include "deepum/v1/plan.pb.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <queue>
#include <unordered_map>
#include <vector>

namespace deepum::sim {

/// How a kernel uses a block's pages.
enum class Access : uint8_t { Read, Write, ReadWrite };

/// 4 KiB pages per 64 KiB page: a dense access raises this many fault-buffer
/// entries for each missing 64 KiB page.
inline constexpr uint8_t kDenseFaultEntries = 16;

/// One kernel's use of one block (dense id), pages as a 32-bit mask.
struct BlockUse {
  uint32_t Block;
  uint32_t PageMask;
  Access Mode;
  /// 4 KiB pages the kernel touches in each touched 64 KiB page (1..16): the
  /// GPU writes one fault-buffer entry per faulting 4 KiB page, and a batch
  /// holds FaultBatchSize entries. 16 = dense (training tensors); 1 = one
  /// access per 64 KiB (a 64 KiB-strided pattern).
  uint8_t FaultEntriesPerPage = kDenseFaultEntries;
};

/// Counters since construction; Simulator takes differences at iteration bounds.
struct EngineStats {
  uint64_t Kernels = 0;
  uint64_t Faults = 0; // 64 KiB pages demand-faulted
  uint64_t FaultBatches = 0;
  uint64_t BytesHtoD = 0;
  uint64_t BytesDtoH = 0;
  uint64_t BytesPrefetched = 0;       // explicit prefetch commands and copies in
  uint64_t BytesDriverPrefetched = 0; // density prefetcher on faults
  uint64_t BytesDemand = 0;           // the faulted pages themselves
  uint64_t Evictions = 0;             // blocks that left the GPU entirely
  uint64_t BytesDiscarded = 0;
  uint64_t PrefetchHits = 0;
  uint64_t LatePrefetches = 0;
  uint64_t ThrashingEvents = 0;
  uint64_t ThrottledBatches = 0;
  uint64_t LostReads = 0; // pages read with no valid copy anywhere
  uint64_t LostContents = 0; // pages whose kept contents a launch reads, with no valid copy
  uint64_t InvariantViolations = 0;
  uint64_t StallNs = 0;           // compute lane idle between kernels
  uint64_t FaultEntries = 0;      // 4 KiB fault-buffer entries serviced
  uint64_t HostCalls = 0;         // transfer API calls (a batch call is one)
  uint64_t HostCallNs = 0;        // host time spent in them
  uint64_t PeakResidentBytes = 0; // resident + being evicted
  uint64_t PrefetchesYielded = 0; // queued prefetches pushed back by a fault
  uint64_t BytesPreEvicted = 0;   // resident bytes dropped by preEvictTo
  uint64_t BytesCopiedOut = 0;    // explicit copies to pinned host memory
  uint64_t BytesCopiedIn = 0;     // and back (in BytesDtoH, BytesHtoD and BytesPrefetched too)
  uint64_t HostFaults = 0;        // CPU touches of GPU-resident pages (hostFault)
};

/// Fills a result's steady-state figures with the per-iteration means of the
/// engine's counters between two snapshots over `Iterations` iterations.
inline void fillPerIteration(SimResult &R, const EngineStats &Before, const EngineStats &After,
                             unsigned Iterations) {
  const double N = Iterations;
  auto Per = [&](uint64_t EngineStats::*F) {
    return static_cast<double>(After.*F - Before.*F) / N;
  };
  R.StallUs = Per(&EngineStats::StallNs) / 1e3;
  R.Faults = Per(&EngineStats::Faults);
  R.FaultBatches = Per(&EngineStats::FaultBatches);
  R.BytesHtoD = Per(&EngineStats::BytesHtoD);
  R.BytesDtoH = Per(&EngineStats::BytesDtoH);
  R.BytesPrefetched = Per(&EngineStats::BytesPrefetched);
  R.BytesDriverPrefetched = Per(&EngineStats::BytesDriverPrefetched);
  R.BytesDemand = Per(&EngineStats::BytesDemand);
  R.Evictions = Per(&EngineStats::Evictions);
  R.BytesDiscarded = Per(&EngineStats::BytesDiscarded);
  R.PrefetchHits = Per(&EngineStats::PrefetchHits);
  R.LatePrefetches = Per(&EngineStats::LatePrefetches);
  R.ThrashingEvents = Per(&EngineStats::ThrashingEvents);
  R.ThrottledBatches = Per(&EngineStats::ThrottledBatches);
  R.LostReads = Per(&EngineStats::LostReads);
  R.LostContents = Per(&EngineStats::LostContents);
  R.PeakResidentBytes = After.PeakResidentBytes;
  R.BytesCopiedOut = Per(&EngineStats::BytesCopiedOut);
  R.BytesCopiedIn = Per(&EngineStats::BytesCopiedIn);
}

/// One Unified Memory event as CUPTI's Unified Memory counters report it
/// (CUpti_ActivityUnifiedMemoryCounter3), logged while Engine::setEventLog is
/// on: a demand fault group, a migration with its cause, a thrashing detection.
struct UmEvent {
  enum class Kind : uint8_t { GpuPageFault, MigrationHtoD, MigrationDtoH, Thrashing };
  /// Why a migration happened. Demand: the faulted pages (CUPTI's COHERENCE);
  /// DriverPrefetch: the density prefetcher (PREFETCH); User: a prefetch or
  /// evict command (USER); Eviction: room made for other pages (EVICTION).
  enum class Cause : uint8_t { None, Demand, DriverPrefetch, User, Eviction };
  Kind Type = Kind::GpuPageFault;
  Cause Why = Cause::None;
  Access Mode = Access::Read; ///< GpuPageFault: how the kernel touched the pages
  /// Virtual address of the first page involved (UM block x 2 MiB + page x 64 KiB;
  /// for dense blocks never named by address, the dense id stands for the block).
  uint64_t Address = 0;
  /// Migrations: bytes moved; faults: bytes of the faulted pages; thrashing: the block.
  uint64_t Bytes = 0;
  /// Migrations: on the copy engine; faults: the batch's service, from when
  /// the driver took it to when the pages arrived; thrashing: detection (both).
  uint64_t StartNs = 0, EndNs = 0;
};

class Engine {
public:
  Engine(const DeviceModel &Device, uint64_t CapacityBytes);

  /// Dense id of UM block `UmBlock` (address / 2 MiB), created on first use.
  uint32_t blockId(uint64_t UmBlock);
  uint32_t blockCount() const { return static_cast<uint32_t>(Resident.size()); }

  // --- Commands, by address (the executor backend) ---------------------------
  // Each single-range command is one API call; the Batch forms are one call
  // for many ranges (cudaMemPrefetchBatchAsync, cudaMemDiscardBatchAsync).
  // A call costs the host hostCallNs(ranges) before its transfers are issued
  // (see hostCall).
  /// cudaMemPrefetchAsync to the GPU: every 64 KiB page overlapping the range.
  void prefetchToDevice(uint64_t Address, uint64_t Bytes);
  /// cudaMemPrefetchAsync to the host: pages wholly inside the range leave the
  /// GPU; dirty ones are written back, clean ones dropped unless the device
  /// model copies clean evictions (stock UVM does, read-mostly pages aside).
  void evictToHost(uint64_t Address, uint64_t Bytes);
  /// cudaMemDiscardAsync: pages wholly inside the range lose their contents.
  void discard(uint64_t Address, uint64_t Bytes);
  struct Range {
    uint64_t Address;
    uint64_t Bytes;
  };
  /// cudaMemPrefetchBatchAsync to the GPU / to the host, and
  /// cudaMemDiscardBatchAsync: one call, many ranges.
  /// `NotBeforeNs`: the call's stream waits for earlier work (an event of
  /// another stream): its transfers and discards start no earlier, though
  /// the host issues the call now.
  void prefetchBatchToDevice(llvm::ArrayRef<Range> Ranges, uint64_t NotBeforeNs = 0);
  void evictBatchToHost(llvm::ArrayRef<Range> Ranges, uint64_t NotBeforeNs = 0);
  void discardBatch(llvm::ArrayRef<Range> Ranges, uint64_t NotBeforeNs = 0);
  /// cudaMemAdvise: read-mostly (the host duplicate of unwritten pages is
  /// kept: never copied back, even with eviction_copies_clean) and
  /// preferred-location device (evicted only when nothing else is left);
  /// accessed-by changes mappings only and is not modelled.
  void advise(deepum::v1::Advice A, uint64_t Address, uint64_t Bytes);
  /// A kernel touching UM blocks by address (block number, not dense id).
  struct AddressUse {
    uint64_t UmBlock;
    uint32_t PageMask;
    Access Mode;
    uint8_t FaultEntriesPerPage = kDenseFaultEntries;
  };
  llvm::Error launchByAddress(llvm::ArrayRef<AddressUse> Uses, uint64_t DurationNs);

  // --- Commands, dense -----------------------------------------------------------
  /// One host API call issuing `Ranges` ranges: the host is busy
  /// transfer_call_us + (Ranges - 1) x transfer_range_us, so the commands that
  /// follow are issued that much later, and the next kernel cannot start
  /// before the host has launched it. The dense commands below charge
  /// nothing themselves: a policy that issues API calls charges them here.
  void hostCall(unsigned Ranges = 1);
  /// The host blocks until `Ns` (a synchronization on work that ends then):
  /// what it issues next is issued no earlier.
  void hostWaitUntil(uint64_t Ns) { IssueNs = std::max(IssueNs, Ns); }
  uint64_t hostCallNs(unsigned Ranges) const;
  /// Fetches the missing pages of `Mask`. With `RespectProtection`, blocks
  /// protected since the last beginProtection() with a rank no greater than
  /// this block's (needed no later) are not evicted for room; then the
  /// prefetch may fail (false) for lack of room, and nothing is fetched.
  bool prefetchPages(uint32_t Block, uint32_t Mask, bool RespectProtection = false);
  /// Makes the pages of `Mask` that have no contents anywhere resident
  /// without a copy, a fault or a call: memory a device-memory pool hands out
  /// (the swapping systems' managers own their memory). Room is made as for
  /// a prefetch.
  /// Pool memory is the pool's: no driver populate (PopulateBlockUs), and a
  /// kernel never faults on it.
  void populatePages(uint32_t Block, uint32_t Mask);
  void evictPages(uint32_t Block, uint32_t Mask);
  /// The swapping systems' mechanism: cudaMemcpyAsync of the resident pages
  /// of `Mask` whose contents the host lacks (the pinned copy of a tensor
  /// unchanged since it was copied in is kept) to pinned memory, then the device
  /// memory goes back to the pool (copyOutPages); and back from pinned
  /// memory into pool memory, the kernel that uses it waiting for the copy
  /// on its stream (copyInPages, which makes room as a prefetch does). At the
  /// device model's explicit-copy rates, on the copy engines of Unified
  /// Memory's migrations or on engines of their own
  /// (DeviceModel::CopiesShareUmEngines). Like the other dense commands they
  /// charge no host call.
  void copyOutPages(uint32_t Block, uint32_t Mask);
  void copyInPages(uint32_t Block, uint32_t Mask);
  void discardPages(uint32_t Block, uint32_t Mask);
  /// The host overwrites the pages (e.g. the data loader fills an input
  /// batch): GPU copies are dropped without write-back; the host copy is current.
  void hostWritePages(uint32_t Block, uint32_t Mask);
  /// Proactive pre-eviction: evicts whole blocks, least recently migrated
  /// first, until at least `FreeBytes` of capacity is free or being freed
  /// (write-backs in flight count). Victims are never pinned by the running
  /// kernel, never protected since the last beginProtection() (needed soon),
  /// and never preferred-location-device. Returns the bytes evicted.
  uint64_t preEvictTo(uint64_t FreeBytes);
  void beginProtection() { ++ProtectEpoch; }
  /// Marks `Block` as needed soon; `Rank` orders the need (0 = first).
  void protect(uint32_t Block, uint32_t Rank) {
    if (Protect[Block] != ProtectEpoch || ProtectRank[Block] > Rank)
      ProtectRank[Block] = Rank;
    Protect[Block] = ProtectEpoch;
  }
  /// Runs a kernel after the previous one. Fails when its pages alone exceed
  /// capacity. `Name` labels it on the timeline.
  llvm::Error launch(llvm::ArrayRef<BlockUse> Uses, uint64_t DurationNs,
                     llvm::StringRef Name = "kernel");

  // --- Queries ---------------------------------------------------------------------
  uint64_t residentBytes() const { return ResidentPages * PageBytes; }
  uint64_t capacityBytes() const { return CapacityPages * PageBytes; }
  bool isResident(uint32_t Block, uint32_t Mask) const { return (Resident[Block] & Mask) == Mask; }
  /// Whether the 64 KiB page holding `Address` is on the GPU.
  bool residentAt(uint64_t Address) const {
    auto It = Ids.find(Address / (PageBytes * PagesPerBlock));
    return It != Ids.end() &&
           ((Resident[It->second] >> ((Address / PageBytes) % PagesPerBlock)) & 1);
  }
  uint32_t residentMask(uint32_t Block) const { return Resident[Block]; }
  /// The UM block (address / 2 MiB) of dense block `Block`.
  uint64_t umBlockOf(uint32_t Block) const { return UmBlockOf[Block]; }
  /// Resident pages of `Block` whose host copy is current too (read-mostly
  /// duplicates): the host may read them where they are.
  uint32_t hostDuplicateMask(uint32_t Block) const;
  /// Dense blocks whose residency, or whose duplicates, may have changed are
  /// appended to `Log` (null: off). The CUDA stand-in keeps the host's page
  /// protections in step with it.
  void setResidencyLog(std::vector<uint32_t> *Log) { ResidencyLog = Log; }
  /// The next kernels wait for the populates (prefetches of discarded pages)
  /// of `Ranges` still in flight, rather than faulting on them (a
  /// dependency: an event after the call, waited for by their stream).
  void awaitPopulates(llvm::ArrayRef<Range> Ranges);
  /// The CPU touches the 64 KiB page holding `Address` (the CUDA stand-in's
  /// host-side fault): a GPU-resident page goes back to the host as the
  /// driver's CPU fault handler sends it (after the last kernel using it,
  /// one fault's service, FaultBatchLatencyUs, then its write-back on the
  /// device-to-host engine), and the host waits until it is there.
  /// `Write` to a read-mostly duplicate: the GPU copy is dropped, nothing
  /// moves. A page not on the GPU, or a read of a duplicate, costs nothing.
  /// Returns whether the page was on the GPU.
  bool hostFault(uint64_t Address, bool Write);
  /// Counts the pages of Mask in Block with no valid copy anywhere as lost
  /// contents: the caller knows the launch about to run reads what they held.
  void expectContents(uint32_t Block, uint32_t Mask);
  /// Time the host issues commands now, ns.
  uint64_t issueNs() const { return IssueNs; }
  /// End of the last kernel, ns.
  uint64_t computeEndNs() const { return ComputeEndNs; }
  /// An explicit copy into GPU-resident managed pages of [Address, +Bytes)
  /// ends at `EndNs`: their contents arrive then (a kernel using them waits
  /// for it), and a populate of them is no longer pending (the copy, stream
  /// ordered after it, wrote them).
  void copiedInto(uint64_t Address, uint64_t Bytes, uint64_t EndNs);
  /// The next kernel starts no earlier than `Ns` (the end of an explicit
  /// copy its stream issued before it: the CUDA stand-in's stream order).
  void computeNotBefore(uint64_t Ns) { ComputeEndNs = std::max(ComputeEndNs, Ns); }
  /// An explicit copy (cudaMemcpy over the link): `Bytes` in one direction,
  /// on the copy engine of that direction that frees first (those of Unified
  /// Memory's migrations where the device model says copies share them), from
  /// `NotBeforeNs` and the host's issue time, at the device model's
  /// explicit-copy rate (`FromManaged`: GPU-resident managed memory read in
  /// place, its managed-to-host rate). Returns when it ends.
  uint64_t explicitCopy(bool ToDevice, uint64_t Bytes, uint64_t NotBeforeNs,
                        bool FromManaged = false);
  /// When the last transfer queued in that direction ends, ns (explicit
  /// copies on engines of their own, and populates on the driver's queue,
  /// included).
  uint64_t copyEndNs(bool ToDevice) const {
    uint64_t End = ToDevice ? PopulateFree : 0;
    for (const std::vector<uint64_t> *Lane :
         {ToDevice ? &HtoDFree : &DtoHFree, ToDevice ? &CopyHtoDFree : &CopyDtoHFree})
      for (uint64_t T : *Lane)
        End = std::max(End, T);
    return End;
  }
  const EngineStats &stats() const { return Stats; }
  /// Blocks (and pages) the last launched kernel demand-faulted on, in fault order.
  llvm::ArrayRef<BlockUse> lastFaults() const { return LastFaults; }

  /// Appends every fault group, migration and thrashing detection to `Log`
  /// while set (nullptr, the default: nothing is logged, at no cost).
  void setEventLog(std::vector<UmEvent> *Log) { Events = Log; }

  /// Records kernels, transfers, faults and the resident-bytes counter while set.
  void setTimeline(deepum::format::TraceWriter *W) { Timeline = W; }
  /// Checks, on every launch, that touched pages are resident for the whole
  /// kernel (arrived before it starts, no eviction starting before it ends)
  /// and that the GPU never holds more than its capacity; violations are
  /// counted in EngineStats::InvariantViolations.
  void setCheckInvariants(bool On) { CheckInvariants = On; }
  /// Conservation: the resident-page count equals the pages resident per
  /// block, and the eviction order lists exactly the blocks with resident
  /// pages. Returns the number of discrepancies (0 when sound). O(blocks).
  uint64_t verifyAccounting() const;

  static constexpr uint64_t PageBytes = 64 << 10;
  static constexpr uint32_t PagesPerBlock = 32;

private:
  /// Copy: an explicit copy into pool memory (copyInPages).
  enum class Cause { Demand, DriverPrefetch, User, Copy };
  uint64_t transferNs(uint64_t Bytes) const;     // host to device
  uint64_t transferDtoHNs(uint64_t Bytes) const; // device to host
  /// The copy engines explicit copies of each direction run on.
  std::vector<uint64_t> &copyLane(bool ToDevice) {
    if (Device.CopiesShareUmEngines)
      return ToDevice ? HtoDFree : DtoHFree;
    return ToDevice ? CopyHtoDFree : CopyDtoHFree;
  }
  /// Makes room for `Pages` pages no earlier than `AtNs`; returns when the room
  /// is free, or UINT64_MAX when it cannot be made.
  /// Victims protected with a rank <= `ProtectUpTo` are skipped (-1: none).
  uint64_t makeRoom(uint64_t Pages, uint64_t AtNs, int64_t ProtectUpTo);
  /// Moves pages `Mask` of `Block` (none resident) to the GPU starting no
  /// earlier than `AtNs`; returns the arrival time.
  uint64_t fetch(uint32_t Block, uint32_t Mask, uint64_t AtNs, uint64_t RoomNs, Cause C);
  /// `Copy`: by an explicit copy (copyOutPages) rather than UVM's eviction.
  /// `Why`: the cause CUPTI's migration record gives.
  void evict(uint32_t Block, uint32_t Mask, uint64_t AtNs,
             UmEvent::Cause Why = UmEvent::Cause::Eviction, bool Copy = false);
  /// Address of page `Page` of dense block `Block` (UmEvent::Address).
  uint64_t pageAddress(uint32_t Block, uint32_t Page) const;
  void logEvent(UmEvent::Kind K, UmEvent::Cause C, uint32_t Block, uint32_t Mask, uint64_t Bytes,
                uint64_t StartNs, uint64_t EndNs, Access Mode = Access::Read);
  /// Unmaps resident pages of `Mask` without a copy; returns those dropped.
  uint32_t dropPages(uint32_t Block, uint32_t Mask);
  uint32_t densityExpand(uint32_t Block, uint32_t Faulted) const;
  /// Latest arrival among pages `Mask` of `Block`.
  uint64_t arrivalOf(uint32_t Block, uint32_t Mask) const;
  uint64_t startOnLane(std::vector<uint64_t> &Lane, uint64_t AtNs, uint64_t DurNs, uint64_t &EndNs);
  /// A fault's migration (demand pages or the density prefetch) on the
  /// host-to-device engines: it starts after the transfers already running
  /// at `AtNs` and the fault work queued before it, ahead of every prefetch
  /// not yet started; those are pushed back (their pages arrive later).
  uint64_t startFaultHtoD(uint64_t AtNs, uint64_t DurNs, uint64_t &EndNs);
  /// Drops transfers that ended before the host's current time.
  void retireHtoD();
  void lrmRemove(uint32_t B);
  void lrmPushBack(uint32_t B);
  void notePeak();
  void counterEvent(uint64_t AtNs);

  // The steps of launch(), in order.
  /// Pins the kernel's blocks; fails when they exceed the GPU memory.
  llvm::Error pinKernelBlocks(llvm::ArrayRef<BlockUse> Uses);
  /// Splits the kernel's pages into present ones (PresentScratch, per use)
  /// and faulting ones (LastFaults); counts prefetch hits and lost reads.
  void collectFaults(llvm::ArrayRef<BlockUse> Uses);
  /// Services LastFaults in driver batches from `AtNs`; returns when the
  /// last batch's migrations are done.
  llvm::Expected<uint64_t> serviceFaults(uint64_t AtNs);
  struct FaultBatch {
    unsigned Entries = 0, Blocks = 0; // fault-buffer entries, VA blocks
    bool Throttled = false;
  };
  /// The next batch from LastFaults[I] (pages `Split` already serviced)
  /// into FaultScratch; advances I and Split.
  FaultBatch takeFaultBatch(size_t &I, uint32_t &Split);
  /// Migrates FaultScratch's pages once the batch is serviced at `T`;
  /// returns when they have arrived.
  llvm::Expected<uint64_t> migrateFaultBatch(uint64_t BatchStart, uint64_t T);
  /// `StartNs`, or later while pages present at `ReadyNs` are still in flight.
  uint64_t awaitPresentPages(llvm::ArrayRef<BlockUse> Uses, uint64_t ReadyNs, uint64_t StartNs);
  /// Runs the kernel from `StartNs`: its blocks' state, stall and timeline.
  void runKernel(llvm::ArrayRef<BlockUse> Uses, uint64_t StartNs, uint64_t DurationNs,
                 llvm::StringRef Name);

  DeviceModel Device;
  uint64_t CapacityPages;
  double NsPerByte, NsPerByteDtoH;
  double NsPerByteCopyHtoD, NsPerByteCopyDtoH; // explicit copies
  /// UM block -> dense id. Blocks come from files (plans name any uint64):
  /// not a DenseMap, which reserves 2^64-1 and 2^64-2.
  std::unordered_map<uint64_t, uint32_t> Ids;
  std::vector<uint32_t> Awaited; // per block: populating pages a kernel will wait for
  std::vector<uint32_t> *ResidencyLog = nullptr;
  void residencyChanged(uint32_t B) {
    if (ResidencyLog)
      ResidencyLog->push_back(B);
  }

  // Per dense block.
  std::vector<uint32_t> Resident;  // pages on the GPU
  std::vector<uint32_t> HostValid; // pages whose host copy is current
  std::vector<uint32_t> Valid;     // pages whose contents exist somewhere
  std::vector<uint32_t> Pinned;    // kernel sequence that pins the block
  std::vector<uint32_t> Protect, ProtectRank;
  std::vector<uint64_t> ArrivalNs;     // latest arrival of its resident pages
  std::vector<uint64_t> PageArrivalNs; // per page (block * 32 + page)
  std::vector<uint64_t> BusyUntilNs;   // end of the last kernel that used it
  std::vector<uint64_t> LastEvictNs;
  /// When the host holds the contents its last write-back copied: a fetch
  /// of them starts no earlier (the data must have left to come back).
  std::vector<uint64_t> HostReadyNs;
  std::vector<uint8_t> ThrashCount;
  std::vector<uint8_t> Flags; // Fl* below
  /// Pages whose last arrival is a prefetch of discarded contents (a
  /// populate): a kernel that starts before it ends faults on them.
  std::vector<uint32_t> Populating;
  std::vector<int32_t> LrmPrev, LrmNext;
  int32_t LrmHead = -1, LrmTail = -1;

  uint64_t ResidentPages = 0;
  /// Pages leaving the GPU, freed at their time (min-heap).
  using Pending = std::pair<uint64_t, uint64_t>;
  std::priority_queue<Pending, std::vector<Pending>, std::greater<Pending>> PendingFree;
  uint64_t PendingPages = 0;

  std::vector<uint64_t> HtoDFree, DtoHFree; // per copy engine: when its last transfer ends
  /// Engines of explicit copies when they do not share UM's.
  std::vector<uint64_t> CopyHtoDFree, CopyDtoHFree;
  /// The driver's queue of populates when they hold no copy engine
  /// (DeviceModel::PopulatesHoldCopyEngine false): when the last one ends.
  uint64_t PopulateFree = 0;
  /// Host-to-device transfers per engine that may still be running or
  /// queued, in start order: faults (never yield) and prefetches (yield to
  /// faults until they start). RetiredEnd: the latest end among those dropped.
  struct HtoDItem {
    uint64_t StartNs, EndNs;
    uint32_t Block, Mask;
    bool Prefetch;
    int64_t Event; // index in *Events of its migration record, -1 none
  };
  std::vector<std::deque<HtoDItem>> HtoDQueue;
  std::vector<uint64_t> HtoDRetiredEnd;
  uint64_t IssueNs = 0, ComputeEndNs = 0;
  /// While a batch command runs: the time its stream lets it start (0 outside).
  uint64_t FloorNs = 0;
  /// When a user command (prefetch, eviction, discard) may act: now, or later
  /// when its stream waits for other work.
  uint64_t userNs() const { return std::max(IssueNs, FloorNs); }
  // Starts above every Pinned entry so that no block is pinned before a launch.
  uint32_t KernelSeq = 1, ProtectEpoch = 1;
  std::vector<BlockUse> LastFaults, FaultScratch;
  /// awaitPresentPages: the blocks and pages of late populates faulted on.
  std::vector<std::pair<uint32_t, uint32_t>> DiscardedScratch;
  std::vector<uint32_t> PresentScratch;
  std::vector<uint32_t> VictimScratch;
  EngineStats Stats;
  deepum::format::TraceWriter *Timeline = nullptr;
  bool CheckInvariants = false;
  std::vector<UmEvent> *Events = nullptr;
  std::vector<uint64_t> UmBlockOf; // dense id -> UM block
};

} // namespace deepum::sim

#endif // DEEPUM_SIM_ENGINE_H
