//===- CuptiRecords.cpp - CUPTI activity records -> profiler records --------===//
//
// Record layouts are CUDA 13's: CUpti_ActivityKernel10, CUpti_ActivityMemcpy6,
// CUpti_ActivityMemset4, CUpti_ActivityUnifiedMemoryCounter3,
// CUpti_ActivityDevice5, CUpti_ActivityPcie. A newer CUPTI that bumps one of
// them must be handled here and nowhere else.
//
//===----------------------------------------------------------------------===//
#include "deepum/profiler/cuda/CuptiRecords.h"

#include <cupti_activity.h>
#include <cupti_result.h>

#include <algorithm>

using namespace deepum::v1;

namespace deepum::profiler::cuda {

namespace {

uint32_t dim(int32_t V) { return V > 0 ? static_cast<uint32_t>(V) : 0; }

FaultAccess faultAccess(uint32_t Flags) {
  switch (Flags) {
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ:
    return FAULT_ACCESS_READ;
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE:
    return FAULT_ACCESS_WRITE;
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_ATOMIC:
    return FAULT_ACCESS_ATOMIC;
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_PREFETCH:
    return FAULT_ACCESS_PREFETCH;
  default:
    return FAULT_ACCESS_UNSPECIFIED;
  }
}

MigrationCause migrationCause(uint32_t Flags) {
  switch (Flags) {
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER:
    return MIGRATION_CAUSE_USER;
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE:
    return MIGRATION_CAUSE_COHERENCE;
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH:
    return MIGRATION_CAUSE_PREFETCH;
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION:
    return MIGRATION_CAUSE_EVICTION;
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_ACCESS_COUNTERS:
    return MIGRATION_CAUSE_ACCESS_COUNTERS;
  default:
    return MIGRATION_CAUSE_UNSPECIFIED;
  }
}

void translateKernel(const CUpti_ActivityKernel10 &R, RecordSink &Sink) {
  KernelRecord K;
  K.Name = R.name ? R.name : "<unnamed kernel>";
  K.GridX = dim(R.gridX);
  K.GridY = dim(R.gridY);
  K.GridZ = dim(R.gridZ);
  K.BlockX = dim(R.blockX);
  K.BlockY = dim(R.blockY);
  K.BlockZ = dim(R.blockZ);
  K.SharedMemoryBytes = dim(R.dynamicSharedMemory);
  K.Stream = R.streamId;
  K.Device = R.deviceId;
  K.StartNs = R.start;
  K.EndNs = std::max(R.end, R.start);
  K.CorrelationId = R.correlationId;
  Sink.addKernel(std::move(K));
}

void translateUm(const CUpti_ActivityUnifiedMemoryCounter3 &R, RecordSink &Sink) {
  switch (R.counterKind) {
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT: {
    FaultRecord F;
    F.Address = R.address;
    F.TimeNs = R.start; // when the driver began servicing it; the kernel is stalled then
    F.EndNs = std::max(R.end, R.start);
    F.Access = faultAccess(R.flags);
    F.Device = R.srcId;
    Sink.addFault(F);
    return;
  }
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD:
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH: {
    MigrationRecord M;
    M.Address = R.address;
    M.Bytes = R.value;
    M.Direction = R.counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD
                      ? MIGRATION_DIRECTION_HOST_TO_DEVICE
                      : MIGRATION_DIRECTION_DEVICE_TO_HOST;
    M.Cause = migrationCause(R.flags);
    M.StartNs = R.start;
    M.EndNs = std::max(R.end, R.start);
    Sink.addMigration(M);
    return;
  }
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING:
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING:
  case CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP: {
    UmEventRecord E;
    E.Kind = R.counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING
                 ? UM_EVENT_KIND_THRASHING
             : R.counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING
                 ? UM_EVENT_KIND_THROTTLING
                 : UM_EVENT_KIND_REMOTE_MAP;
    E.Address = R.address;
    // `value` is the region's size for thrashing and remote map; for
    // throttling CUPTI documents no meaning for it.
    E.Bytes = R.counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING ? 0 : R.value;
    E.TimeNs = R.start;
    Sink.addUmEvent(E);
    return;
  }
  default:
    // CPU page faults say nothing about kernels; device-to-device copies
    // have no place in a one-GPU profile.
    return;
  }
}

} // namespace

bool translateActivity(const void *Record, RecordSink &Sink) {
  const auto *A = static_cast<const CUpti_Activity *>(Record);
  switch (A->kind) {
  case CUPTI_ACTIVITY_KIND_KERNEL:
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    translateKernel(*reinterpret_cast<const CUpti_ActivityKernel10 *>(A), Sink);
    return true;
  case CUPTI_ACTIVITY_KIND_MEMCPY: {
    const auto &R = *reinterpret_cast<const CUpti_ActivityMemcpy6 *>(A);
    Sink.addTransfer({TransferRecord::Memcpy, R.bytes, R.start, std::max(R.end, R.start),
                      R.deviceId, R.streamId, R.correlationId});
    return true;
  }
  case CUPTI_ACTIVITY_KIND_MEMSET: {
    const auto &R = *reinterpret_cast<const CUpti_ActivityMemset4 *>(A);
    Sink.addTransfer({TransferRecord::Memset, R.bytes, R.start, std::max(R.end, R.start),
                      R.deviceId, R.streamId, R.correlationId});
    return true;
  }
  case CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER:
    translateUm(*reinterpret_cast<const CUpti_ActivityUnifiedMemoryCounter3 *>(A), Sink);
    return true;
  case CUPTI_ACTIVITY_KIND_DEVICE: {
    const auto &R = *reinterpret_cast<const CUpti_ActivityDevice5 *>(A);
    DeviceRecord D;
    D.Ordinal = R.id;
    D.Name = R.name ? R.name : "";
    D.MemoryBytes = R.globalMemorySize;
    D.ComputeCapability = R.computeCapabilityMajor * 10 + R.computeCapabilityMinor;
    D.MigEnabled = R.isMigEnabled != 0;
    Sink.addDevice(std::move(D));
    return true;
  }
  case CUPTI_ACTIVITY_KIND_PCIE: {
    const auto &R = *reinterpret_cast<const CUpti_ActivityPcie *>(A);
    if (R.type != CUPTI_PCIE_DEVICE_TYPE_GPU)
      return true; // bridges: the GPU's own record names its link
    Sink.addLink({static_cast<uint32_t>(R.id.devId), R.pcieGeneration, R.linkWidth});
    return true;
  }
  default:
    return false;
  }
}

BufferStats drainBuffer(NextRecordFn Next, uint64_t Dropped, RecordSink &Sink) {
  BufferStats S;
  for (const void *R = Next(nullptr); R; R = Next(R)) {
    ++S.Records;
    S.Translated += translateActivity(R, Sink);
  }
  S.Dropped = Dropped;
  if (Dropped)
    Sink.addDroppedRecords(Dropped);
  return S;
}

std::string umCounterRefusal(int Result) {
  std::string Why;
  switch (static_cast<CUptiResult>(Result)) {
  case CUPTI_SUCCESS:
    return "";
  case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED:
    Why = "this platform (operating system or CPU architecture) does not support them";
    break;
  case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE:
    Why = "this GPU does not support them";
    break;
  case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES:
    Why = "the visible GPUs lack peer-to-peer access; make one GPU visible "
          "(CUDA_VISIBLE_DEVICES)";
    break;
  case CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS:
    Why = "the program runs under MPS, which does not allow them";
    break;
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
    Why = "the GPU is virtualised (vGPU) and its host does not allow them";
    break;
  case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
    Why = "the GPU is a MIG instance, which does not allow them";
    break;
  case CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED:
    Why = "the GPU is in confidential-computing mode, which does not allow them";
    break;
  case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    Why = "profiling is restricted to administrators "
          "(nvidia driver option NVreg_RestrictProfilingToAdminUsers)";
    break;
  case CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED:
    Why = "WSL does not support them";
    break;
  case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED:
  case CUPTI_ERROR_NOT_SUPPORTED:
    Why = "CUPTI does not support them on this device";
    break;
  default:
    Why = "CUPTI error " + std::to_string(Result);
    break;
  }
  return "Unified Memory counters refused: " + Why + "; recording kernels only";
}

std::string noConcurrentManagedAccessReason() {
  return "Unified Memory counters not recorded: the device lacks concurrentManagedAccess, so "
         "GPU page faults do not happen (managed memory migrates at launch); recording kernels "
         "only";
}

std::string withoutCallbacks() {
  return "recording without callbacks: no cudaProfilerStart/Stop or NVTX iteration marks, no "
         "managed allocations seen by the driver, no access-set mode; deepum_step() marks, "
         "kernels and UM counters are still recorded";
}

std::string subscriberRefusal(int Result) {
  if (Result == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED)
    return "the process's one CUPTI callback subscriber is taken by another tool (torch.profiler, "
           "Nsight Systems, compute-sanitizer...); " +
           withoutCallbacks();
  return "cannot subscribe to CUPTI callbacks (CUPTI error " + std::to_string(Result) + "); " +
         withoutCallbacks();
}

} // namespace deepum::profiler::cuda
