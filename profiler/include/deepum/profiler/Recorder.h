//===- deepum/profiler/Recorder.h - Records in, a profile out ---------------===//
//
// The device-independent heart of deepum-profile. It receives translated CUPTI
// records, allocation records and iteration marks, keeps what falls inside
// the recorded iterations, and builds the profile: kernels grouped into
// iterations, every fault attributed to the kernel running when the driver
// serviced it, and from those faults each kernel's access set (2 MiB UM
// blocks with 64 KiB page masks, and allocation byte ranges).
//
// Iteration marks come from deepum_step() (end of one iteration, start of the
// next), from NVTX ranges (begin/end) and from cudaProfilerStart/Stop
// (begin/end). The first `Skip` iterations are ignored; after `Iterations`
// more, recording is finished and later records are discarded.
//
// Begin/end marks win over deepum_step(), which a Python program under
// deepum-profile calls at every optimizer step without being asked: from the
// first begin or end mark on, deepum_step() marks nothing, and what it had
// counted is forgotten (--skip counts from that mark) unless recording had
// already finished.
//
// Without any mark the iterations are found when the profile is built, from
// the period of the kernel sequence (periodIterationEnds): the run must end
// with at least two identical iterations. `Skip` and `Iterations` then count
// those, and --mode access-set sends blocks home from the start of the run,
// since any iteration may be the one recorded. A sequence without a period is
// one iteration, with a note saying so.
//
// Records are kept by *time*, not by arrival: CUPTI delivers buffers late, so
// a kernel of a recorded iteration may arrive after its end mark.
//
// Thread-safe: CUPTI delivers buffers on its own thread while the program's
// threads mark iterations and allocate.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PROFILER_RECORDER_H
#define DEEPUM_PROFILER_RECORDER_H

#include "deepum/profiler/Records.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace deepum::profiler {

struct RecorderOptions {
  /// Iterations to record after the skipped ones (>= 1).
  uint32_t Iterations = 1;
  /// Iterations to ignore first (warm-up, allocator growth, autotuning).
  uint32_t Skip = 0;
  /// The program runs under --mode access-set: every block a kernel touches faults.
  bool AccessSetMode = false;
  /// Written into Profile.producer.
  std::string Producer = "deepum-profile 1";
  /// Test-only (DEEPUM_TEST_DROP_UM_RECORDS): this fraction of the page
  /// fault and host-to-device migration records is dropped at random (a fixed
  /// seed), as a driver that reports only some of a kernel's accesses would.
  double DropUmRecords = 0;
};

enum class RecorderState {
  /// Before the first recorded iteration begins.
  Skipping,
  /// Inside the recorded window.
  Recording,
  /// All requested iterations recorded; later records are discarded.
  Done,
};

/// What an iteration mark changed; the caller checkpoints or stops on it.
struct MarkEffect {
  /// The recorded window opened at this mark.
  bool RecordingStarted = false;
  /// A recorded iteration completed at this mark.
  bool IterationRecorded = false;
  /// The last requested iteration completed: stop recording, write the profile.
  bool RecordingFinished = false;
};

class Recorder final : public RecordSink {
public:
  explicit Recorder(RecorderOptions Opts);

  // RecordSink: CUPTI's records, already translated.
  void addKernel(KernelRecord K) override;
  void addTransfer(TransferRecord T) override;
  void addFault(FaultRecord F) override;
  void addMigration(MigrationRecord M) override;
  void addUmEvent(UmEventRecord E) override;
  void addDevice(DeviceRecord D) override;
  void addLink(LinkRecord L) override;
  void addDroppedRecords(uint64_t Count) override;

  /// An allocation of `Bytes` at `Address`. A second allocation at a live
  /// address closes the first (its free was missed). `Call`: the allocator's
  /// count of allocation calls (Hooks.h, record_alloc_call); 0 = unknown.
  void addAllocation(uint64_t Address, uint64_t Bytes, uint64_t Stream, uint64_t TimeNs,
                     AllocationSource Source, uint64_t Call = 0);
  /// A free of the allocation at `Address`; unknown addresses are counted and ignored.
  void addFree(uint64_t Address, uint64_t TimeNs, AllocationSource Source);
  /// A launch's arguments, read at its launch call: `CorrelationId` is the
  /// call's (the kernel record carries it). With `LayoutKnown`, `Values` are
  /// every 8-byte-aligned value of the kernel's parameter buffer, and each
  /// that points into an allocation live now names it (the allocator's
  /// tensors before the driver's pools); without, the kernel names nothing.
  void addLaunchArguments(uint64_t CorrelationId, uint64_t TimeNs, bool LayoutKnown,
                          llvm::ArrayRef<uint64_t> Values);

  void setVersions(uint32_t Driver, uint32_t Runtime);
  void setConcurrentManagedAccess(bool Supported);
  /// Whether UM counters are being recorded and, if not, the one-line reason.
  void setUmCounters(bool Enabled, std::string WhyNot = "");
  /// Keeps the first error (a failed CUPTI call, say); reported with the profile.
  void noteError(std::string Message);
  std::string firstError() const;

  /// Where the run started, for a first deepum_step() with no earlier mark.
  void setOrigin(uint64_t TimeNs);

  MarkEffect beginIteration(uint64_t TimeNs);
  MarkEffect endIteration(uint64_t TimeNs);
  /// deepum_step(): the end of one iteration and the start of the next.
  MarkEffect step(uint64_t TimeNs);

  RecorderState state() const;
  /// --mode access-set: whether the kernel just launched must send the blocks
  /// it faulted on home. Inside the recorded window, and before any mark
  /// (without marks the iterations are only known at the end).
  bool accessSetActive() const;
  /// Complete iterations inside the recorded window.
  uint32_t recordedIterations() const;
  /// Complete iterations seen, skipped ones included.
  uint32_t seenIterations() const;

  /// --mode access-set: the byte ranges to send back to the host so that the
  /// next kernel faults on everything it touches, and forgets them. They are
  /// the 2 MiB blocks that may have come to the GPU since the last call: those
  /// of every fault and every host-to-device migration recorded since (in the
  /// order records arrive, so a record the driver reports late is sent home
  /// at the next call, not lost), and those of every allocation made since
  /// (a kernel's first touch populates memory on the GPU without a
  /// migration, and a real driver reports faults for only some of the pages
  /// it populates). Each block is clipped to every live allocation
  /// overlapping it, of either source: the driver's cover the allocator's
  /// freed tensors, whose pages must go home too or the memory's next tensor
  /// never faults. The driver's prefetcher never crosses a 2 MiB block, so
  /// whole blocks cover all it brought in. Sorted, without duplicates.
  std::vector<std::pair<uint64_t, uint64_t>> takeRangesToSendHome();

  /// The profile of every complete recorded iteration — after a crash or an
  /// early exit, the ones completed so far. With no mark at all the
  /// iterations come from the period of the kernel sequence, or the whole run
  /// is one. Fails when marks were seen but none was recorded.
  llvm::Expected<deepum::v1::Profile> buildProfile() const;

private:
  struct Allocation {
    uint64_t Address, Bytes, Stream, AllocNs;
    std::optional<uint64_t> FreeNs;
    AllocationSource Source;
    uint64_t Call = 0;
    /// Which allocation this is, for good: indices change when records are pruned.
    uint64_t Serial = 0;
  };
  /// What one launch's arguments named (addLaunchArguments).
  struct LaunchArguments {
    uint64_t TimeNs = 0;
    bool LayoutKnown = false;
    /// Allocation::Serial of each allocation named, ascending.
    std::vector<uint64_t> Serials;
  };
  struct Window {
    uint64_t Begin, End;
  };
  /// buildProfile's steps (Recorder.cpp).
  class ProfileBuilder;

  bool keepLocked(uint64_t TimeNs) const;
  /// The device that ran most kernels starting in [Begin, End].
  uint32_t mainDeviceLocked(uint64_t Begin, uint64_t End) const;
  /// Without marks: the windows of the iterations --skip and --iterations
  /// select among those the period gives, and a note; empty without a period.
  std::vector<Window> periodWindowsLocked(std::string &Note) const;
  void pruneBeforeLocked(uint64_t TimeNs);
  /// --mode access-set: the blocks of [Address, Address + Bytes) may be on the GPU.
  void noteMaybeOnGpuLocked(uint64_t Address, uint64_t Bytes);
  MarkEffect beginLocked(uint64_t TimeNs);
  /// A begin or end mark: the first one discards what deepum_step() counted.
  void rangeMarkLocked();
  MarkEffect endLocked(uint64_t TimeNs);

  const RecorderOptions Opts;
  mutable std::mutex Mu;

  std::vector<KernelRecord> Kernels;
  std::vector<TransferRecord> Transfers;
  std::vector<FaultRecord> Faults;
  std::vector<MigrationRecord> Migrations;
  std::vector<UmEventRecord> UmEvents;
  std::vector<Allocation> Allocations;
  /// Address -> index into Allocations of the live allocation there, per source.
  std::map<uint64_t, size_t> LiveAllocator, LiveDriver;
  uint64_t NextSerial = 1;
  /// The arguments of each launch, by correlation id.
  std::map<uint64_t, LaunchArguments> Arguments;
  /// DropUmRecords' random state.
  uint64_t DropState = 0x9e3779b97f4a7c15ull;
  /// Whether the next UM record is dropped (DropUmRecords).
  bool dropUmRecordLocked();
  /// --mode access-set: blocks that may be on the GPU since the last
  /// takeRangesToSendHome (not pruned with the records).
  std::set<uint64_t> MaybeOnGpu;
  uint64_t UnknownFrees = 0;

  std::map<uint32_t, DeviceRecord> Devices;
  std::map<uint32_t, LinkRecord> Links;
  uint32_t DriverVersion = 0, RuntimeVersion = 0;
  bool ConcurrentManagedAccess = false;
  bool UmCountersEnabled = false;
  std::string UmCountersWhyNot;
  std::string FirstError;
  uint64_t DroppedRecords = 0;

  RecorderState State = RecorderState::Skipping;
  bool SawMark = false;
  /// deepum_step() marks were seen / begin-end marks (profiler API, NVTX) were seen.
  bool SawStepMark = false, SawRangeMark = false;
  bool InIteration = false;
  uint64_t Origin = 0;
  uint64_t CurrentBegin = 0;
  uint32_t Seen = 0;
  /// The recorded iterations, in order.
  std::vector<Window> Recorded;
  /// Start of the recorded window, once it has opened.
  std::optional<uint64_t> WindowBegin;
};

/// Where the iterations of an unmarked kernel sequence (execution IDs, in
/// launch order) end: the exclusive end index of each, the last being
/// Ids.size(). The period is the smallest one of which the run ends with two
/// or more whole repetitions covering at least half the longest such
/// repetition and a quarter of the run; an iteration ends where the kernels that close the last one
/// occur (lengthened until, inside the periodic end, they occur once per
/// period), ends closer than half a period apart merged. Kernels before the
/// first such end make the first iteration (warm-up included). Empty when
/// the sequence has no period.
std::vector<size_t> periodIterationEnds(llvm::ArrayRef<uint64_t> Ids);

/// One line for stderr: iterations, kernels, faults, dropped records.
std::string describeProfile(const deepum::v1::Profile &P);

/// Host link speed per direction of a PCIe link, bytes per second; 0 if unknown.
double pcieBytesPerSecond(uint32_t Generation, uint32_t Width);

} // namespace deepum::profiler

#endif // DEEPUM_PROFILER_RECORDER_H
