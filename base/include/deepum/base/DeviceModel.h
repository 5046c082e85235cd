//===- deepum/base/DeviceModel.h - One GPU and its host link ---------------===//
//
// The one device model of deepum: the simulator runs on it, the planner's
// cost model reads it, and every tool selects it the same way: `--device
// NAME` picks a built-in model, `--device-file FILE` overrides its fields
// (or adds a model). The format is device-models.json's, schema
// "deepum-device-models/1": {"models": [{"name": ..., field: value, ...}]};
// simulator/devices/device-models.json holds the built-in models, each number
// with its source, and is compiled in so the tools run from anywhere.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_BASE_DEVICEMODEL_H
#define DEEPUM_BASE_DEVICEMODEL_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace deepum::base {

/// One GPU and its host link. Every field is documented with its source in
/// simulator/devices/device-models.json and docs/simulator.md.
struct DeviceModel {
  std::string Name;
  /// Total device memory, bytes (informational: the capacity simulated is
  /// SimOptions::GpuMemoryBytes).
  uint64_t MemoryBytes = 0;
  std::string Link;
  /// Achieved host-to-device bandwidth (prefetches, fault migrations), bytes
  /// per second.
  double LinkBytesPerSecond = 12e9;
  /// Achieved device-to-host bandwidth (evictions, write-backs), bytes per
  /// second; 0 = LinkBytesPerSecond. Measured on an H100 with driver 580 at a
  /// fifth of the other direction (docs/results/gpu.md).
  double DeviceToHostBytesPerSecond = 0;
  double deviceToHostBytesPerSecond() const {
    return DeviceToHostBytesPerSecond > 0 ? DeviceToHostBytesPerSecond : LinkBytesPerSecond;
  }
  /// Explicit copies (cudaMemcpyAsync) between device memory and pinned host
  /// memory, bytes per second, as the swapping systems move data (vDNN, LMS,
  /// Capuchin, save_on_cpu): pinned host to device, device to pinned host,
  /// and GPU-resident managed memory to pinned host (read in place). 0 = the
  /// Unified Memory rate of that direction (LinkBytesPerSecond,
  /// deviceToHostBytesPerSecond()). On an H100 with driver 580 the copies out
  /// run at 55 and 52 GB/s, UVM's eviction at 9-16 (docs/results/gpu.md).
  double CopyHostToDeviceBytesPerSecond = 0;
  double CopyDeviceToHostBytesPerSecond = 0;
  double CopyManagedToHostBytesPerSecond = 0;
  double copyHostToDeviceBytesPerSecond() const {
    return CopyHostToDeviceBytesPerSecond > 0 ? CopyHostToDeviceBytesPerSecond
                                              : LinkBytesPerSecond;
  }
  double copyDeviceToHostBytesPerSecond() const {
    return CopyDeviceToHostBytesPerSecond > 0 ? CopyDeviceToHostBytesPerSecond
                                              : deviceToHostBytesPerSecond();
  }
  double copyManagedToHostBytesPerSecond() const {
    return CopyManagedToHostBytesPerSecond > 0 ? CopyManagedToHostBytesPerSecond
                                               : copyDeviceToHostBytesPerSecond();
  }
  /// The fastest legal path in each direction, whichever mechanism takes it:
  /// what the lower bounds charge.
  double fastestHostToDeviceBytesPerSecond() const {
    return std::max(LinkBytesPerSecond, copyHostToDeviceBytesPerSecond());
  }
  double fastestDeviceToHostBytesPerSecond() const {
    return std::max({deviceToHostBytesPerSecond(), copyDeviceToHostBytesPerSecond(),
                     copyManagedToHostBytesPerSecond()});
  }
  /// Whether explicit copies queue on the same copy engines as Unified
  /// Memory's migrations of their direction (true) or run on engines of their
  /// own beside them (false).
  bool CopiesShareUmEngines = true;
  /// Whether a populate (a prefetch of discarded pages: the driver maps and
  /// zeroes GPU memory, nothing crosses the link) holds the host-to-device
  /// copy engine, so that an explicit copy issued beside it on another stream
  /// waits for it (true), or runs beside it (false; the populate then takes
  /// the driver's time on a queue of its own).
  bool PopulatesHoldCopyEngine = true;
  /// Fixed cost of servicing one fault batch (fetch, sort, replay), us.
  double FaultBatchLatencyUs = 20;
  /// Cost per 2 MiB VA block a batch touches (populate: host unmap, GPU
  /// chunk, map), us: the driver services a batch block by block.
  double FaultBlockServiceUs = 25;
  /// A prefetch to the GPU of a block whose contents were discarded (a
  /// populate: nothing crosses the link), us per 2 MiB block on the copy
  /// stream; and a demand fault on such a block, beyond a fault's service.
  /// Zero where unmeasured. On an H100 with driver 580: 14 us and 4 ms, the
  /// fault far more than copying the block (docs/results/gpu.md).
  double PopulateBlockUs = 0;
  double DiscardedFaultBlockUs = 0;
  /// Fault-buffer entries (one per faulting 4 KiB page) per batch.
  unsigned FaultBatchSize = 256;
  /// Copy engines per direction shared by prefetches, faults and evictions.
  unsigned CopyEnginesPerDirection = 1;
  /// Fixed copy-engine cost of one explicit transfer (per block), us.
  double TransferSetupUs = 0;
  /// Host time of one transfer API call (cudaMemPrefetchAsync, a batch call,
  /// cudaMemDiscardAsync), us, and of each range after the first in a batch call.
  double TransferCallUs = 20;
  double TransferRangeUs = 1;
  /// Density prefetcher: a region is fetched whole once more than this
  /// fraction of it is resident or faulting (uvm_perf_prefetch_threshold).
  double PrefetchThreshold = 0.51;
  /// Two migrations of a block within this many us count as thrashing.
  double ThrashingLapseUs = 500;
  /// Thrashing events on a block before the driver throttles it.
  unsigned ThrashingThreshold = 3;
  /// Delay added to a fault batch touching a throttled block, us.
  double ThrottleNapUs = 500;
  /// Whether evicting a page whose host copy is still valid copies it anyway.
  bool EvictionCopiesClean = true;
  /// Roofline, as the CPU tracer uses it: derived profiles carry each
  /// kernel's FLOPs and DRAM bytes, so their durations can be recomputed for
  /// another device (see SimOptions::Durations).
  double MatmulFlopsPerSecond = 0;
  double VectorFlopsPerSecond = 0;
  double DramBytesPerSecond = 0;
  double MatmulEfficiency = 0.75;
  double MemoryEfficiency = 0.8;
  double KernelMinUs = 0;
};

/// A device file larger than this is refused before it is read (the
/// built-in file is some 30 KiB).
inline constexpr uint64_t kMaxDeviceFileBytes = uint64_t{1} << 20;

/// The device model `Name` from the built-in models, with any fields of the
/// model of the same name in `DeviceFile` (same schema) replacing the
/// built-in ones. A model only present in the file is accepted when it sets
/// link_bytes_per_second and fault_batch_latency_us. Unknown fields, values
/// of the wrong type and unknown names are errors naming the file.
llvm::Expected<DeviceModel> loadDeviceModel(llvm::StringRef Name, llvm::StringRef DeviceFile = "");
/// Names of the built-in device models, in file order.
std::vector<std::string> deviceModelNames();
/// The text of device-models.json as built.
llvm::StringRef builtinDeviceModelsJson();

} // namespace deepum::base

#endif // DEEPUM_BASE_DEVICEMODEL_H
