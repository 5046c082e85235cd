//===- deepum/profiler/Records.h - What the profiler records ----------------===//
//
// The profiler's own types for what CUPTI reports. CUPTI activity records are
// translated into these in exactly one place (profiler/cuda/CuptiRecords.cpp);
// everything after that boundary — iteration windows, fault attribution,
// access sets, the written profile — is plain C++ tested without a GPU.
//
// All times are nanoseconds on CUPTI's clock (cuptiGetTimestamp), which is the
// clock of every activity record; allocation and iteration marks are stamped
// with the same clock so one profile has one time base.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PROFILER_RECORDS_H
#define DEEPUM_PROFILER_RECORDS_H

#include "deepum/v1/profile.pb.h"

#include <cstdint>
#include <string>

namespace deepum::profiler {

struct KernelRecord {
  std::string Name;
  uint32_t GridX = 1, GridY = 1, GridZ = 1;
  uint32_t BlockX = 1, BlockY = 1, BlockZ = 1;
  /// Dynamic shared memory per block: part of the launch signature (static
  /// shared memory is a property of the kernel, already named by Name).
  uint32_t SharedMemoryBytes = 0;
  /// CUPTI's stream id: stable within a run, unlike the handle, and the only
  /// stream identity an activity record carries.
  uint64_t Stream = 0;
  uint32_t Device = 0;
  uint64_t StartNs = 0, EndNs = 0;
  uint64_t CorrelationId = 0;
};

/// A memcpy or memset executed by the GPU. The profile schema has no place for
/// them; they are summarised in the workload notes and explain faults that
/// land outside every kernel.
struct TransferRecord {
  enum Kind { Memcpy, Memset } What = Memcpy;
  uint64_t Bytes = 0;
  uint64_t StartNs = 0, EndNs = 0;
  uint32_t Device = 0;
  uint64_t Stream = 0;
  uint64_t CorrelationId = 0;
};

struct FaultRecord {
  uint64_t Address = 0;
  /// When the driver started servicing the fault: the faulting kernel is
  /// stalled on it, so this lies inside that kernel's execution.
  uint64_t TimeNs = 0;
  /// When its fault group's service ended (>= TimeNs): the pages had arrived.
  uint64_t EndNs = 0;
  deepum::v1::FaultAccess Access = deepum::v1::FAULT_ACCESS_UNSPECIFIED;
  uint32_t Device = 0;
};

struct MigrationRecord {
  uint64_t Address = 0;
  uint64_t Bytes = 0;
  deepum::v1::MigrationDirection Direction = deepum::v1::MIGRATION_DIRECTION_UNSPECIFIED;
  deepum::v1::MigrationCause Cause = deepum::v1::MIGRATION_CAUSE_UNSPECIFIED;
  uint64_t StartNs = 0, EndNs = 0;
};

struct UmEventRecord {
  deepum::v1::UmEventKind Kind = deepum::v1::UM_EVENT_KIND_UNSPECIFIED;
  uint64_t Address = 0;
  uint64_t Bytes = 0;
  uint64_t TimeNs = 0;
};

struct DeviceRecord {
  uint32_t Ordinal = 0;
  std::string Name;
  uint64_t MemoryBytes = 0;
  /// major * 10 + minor.
  uint32_t ComputeCapability = 0;
  bool MigEnabled = false;
};

/// The PCIe link of a GPU (CUPTI_ACTIVITY_KIND_PCIE).
struct LinkRecord {
  uint32_t Ordinal = 0;
  uint32_t Generation = 0;
  uint32_t Width = 0;
};

/// Where an allocation record came from. The allocator reports the tensors it
/// hands out; the driver callbacks see cuMemAllocManaged, which for a pooling
/// allocator is the pool itself. When both exist the allocator's finer view wins.
enum class AllocationSource { Allocator, Driver };

/// Receives translated records. The Recorder implements it; tests implement it
/// to look at what the CUPTI boundary produced.
class RecordSink {
public:
  virtual ~RecordSink() = default;
  virtual void addKernel(KernelRecord K) = 0;
  virtual void addTransfer(TransferRecord T) = 0;
  virtual void addFault(FaultRecord F) = 0;
  virtual void addMigration(MigrationRecord M) = 0;
  virtual void addUmEvent(UmEventRecord E) = 0;
  virtual void addDevice(DeviceRecord D) = 0;
  virtual void addLink(LinkRecord L) = 0;
  /// Records CUPTI could not store for lack of buffer space.
  virtual void addDroppedRecords(uint64_t Count) = 0;
};

} // namespace deepum::profiler

#endif // DEEPUM_PROFILER_RECORDS_H
