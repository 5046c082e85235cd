//===- CuptiRecordsTest.cpp - Hand-built CUPTI records through the boundary -===//
//
// No GPU: the records are built here, field by field, as CUPTI would deliver
// them, and go through the same translation and drain code as in the
// injection library. The resulting profile must validate, and be readable
// by deepum-inspect.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/profiler/Recorder.h"
#include "deepum/profiler/cuda/CuptiRecords.h"
#include "deepum/tools/Inspect.h"

#include <cupti_activity.h>
#include <cupti_result.h>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <variant>

using namespace deepum;
using namespace deepum::profiler;
using namespace deepum::profiler::cuda;
using namespace deepum::test;
using ::testing::HasSubstr;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t Base = uint64_t{1} << 40;

CUpti_ActivityKernel10 kernelRecord(const char *Name, uint64_t Start, uint64_t End,
                                    uint32_t Correlation) {
  CUpti_ActivityKernel10 K = {};
  K.kind = CUPTI_ACTIVITY_KIND_KERNEL;
  K.name = Name;
  K.start = Start;
  K.end = End;
  K.gridX = 80;
  K.gridY = 2;
  K.gridZ = 1;
  K.blockX = 256;
  K.blockY = 1;
  K.blockZ = 1;
  K.staticSharedMemory = 1024; // part of the kernel, not of the launch
  K.dynamicSharedMemory = 4096;
  K.streamId = 7;
  K.deviceId = 0;
  K.correlationId = Correlation;
  return K;
}

CUpti_ActivityUnifiedMemoryCounter3 umRecord(CUpti_ActivityUnifiedMemoryCounterKind Kind,
                                             uint64_t Address, uint64_t Value, uint64_t Start,
                                             uint64_t End, uint32_t Flags) {
  CUpti_ActivityUnifiedMemoryCounter3 U = {};
  U.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
  U.counterKind = Kind;
  U.address = Address;
  U.value = Value;
  U.start = Start;
  U.end = End;
  U.flags = Flags;
  return U;
}

/// A buffer of heterogeneous records, walked like cuptiActivityGetNextRecord does.
class HandBuffer {
public:
  template <typename R> void add(const R &Rec) { Records.emplace_back(Rec); }
  BufferStats drain(uint64_t Dropped, RecordSink &Sink) {
    size_t I = 0;
    return drainBuffer(
        [&](const void *) -> const void * {
          if (I == Records.size())
            return nullptr;
          return std::visit([](const auto &R) -> const void * { return &R; }, Records[I++]);
        },
        Dropped, Sink);
  }

private:
  std::vector<std::variant<CUpti_ActivityKernel10, CUpti_ActivityMemcpy6, CUpti_ActivityMemset4,
                           CUpti_ActivityUnifiedMemoryCounter3, CUpti_ActivityDevice5,
                           CUpti_ActivityPcie, CUpti_ActivityAPI>>
      Records;
};

/// Remembers what the boundary produced.
struct CollectingSink : RecordSink {
  std::vector<KernelRecord> Kernels;
  std::vector<TransferRecord> Transfers;
  std::vector<FaultRecord> Faults;
  std::vector<MigrationRecord> Migrations;
  std::vector<UmEventRecord> Events;
  std::vector<DeviceRecord> Devices;
  std::vector<LinkRecord> Links;
  uint64_t Dropped = 0;
  void addKernel(KernelRecord K) override { Kernels.push_back(K); }
  void addTransfer(TransferRecord T) override { Transfers.push_back(T); }
  void addFault(FaultRecord F) override { Faults.push_back(F); }
  void addMigration(MigrationRecord M) override { Migrations.push_back(M); }
  void addUmEvent(UmEventRecord E) override { Events.push_back(E); }
  void addDevice(DeviceRecord D) override { Devices.push_back(D); }
  void addLink(LinkRecord L) override { Links.push_back(L); }
  void addDroppedRecords(uint64_t N) override { Dropped += N; }
};

TEST(CuptiRecords, KernelFieldsAreTranslated) {
  CollectingSink S;
  CUpti_ActivityKernel10 K = kernelRecord("_Z4gemmPfS_", 100, 200, 42);
  ASSERT_TRUE(translateActivity(&K, S));
  ASSERT_EQ(S.Kernels.size(), 1u);
  const KernelRecord &R = S.Kernels[0];
  EXPECT_EQ(R.Name, "_Z4gemmPfS_"); // mangled, as the executor's launch hook sees it
  EXPECT_EQ(R.GridX, 80u);
  EXPECT_EQ(R.GridY, 2u);
  EXPECT_EQ(R.BlockX, 256u);
  EXPECT_EQ(R.SharedMemoryBytes, 4096u);
  EXPECT_EQ(R.Stream, 7u);
  EXPECT_EQ(R.StartNs, 100u);
  EXPECT_EQ(R.EndNs, 200u);
  EXPECT_EQ(R.CorrelationId, 42u);

  K.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  K.name = nullptr;
  ASSERT_TRUE(translateActivity(&K, S));
  EXPECT_EQ(S.Kernels[1].Name, "<unnamed kernel>");
}

TEST(CuptiRecords, UnifiedMemoryCountersAreTranslated) {
  CollectingSink S;
  auto F = umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, Base + 5, 1, 150,
                    160, CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE);
  F.srcId = 0;
  auto H = umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, Base, 64 << 10,
                    160, 170, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE);
  auto D = umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH, Base, 2 * MiB,
                    300, 320, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION);
  auto U = umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, Base, 4096, 400,
                    410, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER);
  auto T =
      umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING, Base, 64 << 10, 500, 0, 0);
  auto Th = umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING, Base, 99, 510, 520, 0);
  auto Rm = umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP, Base, 64 << 10, 530, 0,
                     CUPTI_ACTIVITY_UNIFIED_MEMORY_REMOTE_MAP_CAUSE_THRASHING);
  auto Cpu =
      umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT, Base, 1, 540, 0, 0);
  for (auto *R : {&F, &H, &D, &U, &T, &Th, &Rm, &Cpu})
    EXPECT_TRUE(translateActivity(R, S));

  ASSERT_EQ(S.Faults.size(), 1u);
  EXPECT_EQ(S.Faults[0].Address, Base + 5);
  EXPECT_EQ(S.Faults[0].TimeNs, 150u); // when servicing began, not when the replay was queued
  EXPECT_EQ(S.Faults[0].Access, v1::FAULT_ACCESS_WRITE);
  ASSERT_EQ(S.Migrations.size(), 3u);
  EXPECT_EQ(S.Migrations[0].Direction, v1::MIGRATION_DIRECTION_HOST_TO_DEVICE);
  EXPECT_EQ(S.Migrations[0].Cause, v1::MIGRATION_CAUSE_COHERENCE);
  EXPECT_EQ(S.Migrations[0].Bytes, 64u << 10);
  EXPECT_EQ(S.Migrations[1].Direction, v1::MIGRATION_DIRECTION_DEVICE_TO_HOST);
  EXPECT_EQ(S.Migrations[1].Cause, v1::MIGRATION_CAUSE_EVICTION);
  EXPECT_EQ(S.Migrations[2].Cause, v1::MIGRATION_CAUSE_USER);
  ASSERT_EQ(S.Events.size(), 3u);
  EXPECT_EQ(S.Events[0].Kind, v1::UM_EVENT_KIND_THRASHING);
  EXPECT_EQ(S.Events[0].Bytes, 64u << 10);
  EXPECT_EQ(S.Events[1].Kind, v1::UM_EVENT_KIND_THROTTLING);
  EXPECT_EQ(S.Events[1].Bytes, 0u); // `value` means nothing for throttling
  EXPECT_EQ(S.Events[2].Kind, v1::UM_EVENT_KIND_REMOTE_MAP);
}

TEST(CuptiRecords, FaultAccessTypes) {
  CollectingSink S;
  for (uint32_t A : {CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_UNKNOWN,
                     CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ,
                     CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE,
                     CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_ATOMIC,
                     CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_PREFETCH}) {
    auto F = umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, Base, 1, 1, 2, A);
    translateActivity(&F, S);
  }
  ASSERT_EQ(S.Faults.size(), 5u);
  EXPECT_EQ(S.Faults[0].Access, v1::FAULT_ACCESS_UNSPECIFIED);
  EXPECT_EQ(S.Faults[1].Access, v1::FAULT_ACCESS_READ);
  EXPECT_EQ(S.Faults[2].Access, v1::FAULT_ACCESS_WRITE);
  EXPECT_EQ(S.Faults[3].Access, v1::FAULT_ACCESS_ATOMIC);
  EXPECT_EQ(S.Faults[4].Access, v1::FAULT_ACCESS_PREFETCH);
}

TEST(CuptiRecords, TransfersDevicesAndLinks) {
  CollectingSink S;
  CUpti_ActivityMemcpy6 C = {};
  C.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  C.bytes = 1000;
  C.start = 10;
  C.end = 20;
  CUpti_ActivityMemset4 M = {};
  M.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  M.bytes = 2000;
  M.start = 30;
  M.end = 25; // end before start: clamped, never an invalid record
  CUpti_ActivityDevice5 D = {};
  D.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  D.id = 0;
  D.name = "NVIDIA H100 80GB HBM3";
  D.globalMemorySize = uint64_t{80} << 30;
  D.computeCapabilityMajor = 9;
  D.computeCapabilityMinor = 0;
  D.isMigEnabled = 1;
  CUpti_ActivityPcie P = {};
  P.kind = CUPTI_ACTIVITY_KIND_PCIE;
  P.type = CUPTI_PCIE_DEVICE_TYPE_GPU;
  P.id.devId = 0;
  P.pcieGeneration = 5;
  P.linkWidth = 16;
  CUpti_ActivityPcie Bridge = P;
  Bridge.type = CUPTI_PCIE_DEVICE_TYPE_BRIDGE;
  for (const void *R : {(const void *)&C, (const void *)&M, (const void *)&D, (const void *)&P,
                        (const void *)&Bridge})
    EXPECT_TRUE(translateActivity(R, S));
  ASSERT_EQ(S.Transfers.size(), 2u);
  EXPECT_EQ(S.Transfers[0].What, TransferRecord::Memcpy);
  EXPECT_EQ(S.Transfers[1].What, TransferRecord::Memset);
  EXPECT_EQ(S.Transfers[1].EndNs, 30u);
  ASSERT_EQ(S.Devices.size(), 1u);
  EXPECT_EQ(S.Devices[0].ComputeCapability, 90u);
  EXPECT_TRUE(S.Devices[0].MigEnabled);
  ASSERT_EQ(S.Links.size(), 1u); // the bridge is skipped
  EXPECT_EQ(S.Links[0].Generation, 5u);

  CUpti_ActivityAPI Api = {};
  Api.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  EXPECT_FALSE(translateActivity(&Api, S)); // not used: skipped
}

TEST(CuptiRecords, DrainCountsRecordsAndDroppedOnes) {
  CollectingSink S;
  HandBuffer B;
  B.add(kernelRecord("k", 1, 2, 1));
  CUpti_ActivityAPI Api = {};
  Api.kind = CUPTI_ACTIVITY_KIND_DRIVER;
  B.add(Api);
  B.add(umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, Base, 1, 1, 2, 1));
  BufferStats St = B.drain(/*Dropped=*/12, S);
  EXPECT_EQ(St.Records, 3u);
  EXPECT_EQ(St.Translated, 2u);
  EXPECT_EQ(St.Dropped, 12u);
  EXPECT_EQ(S.Dropped, 12u);
}

TEST(CuptiRecords, RefusalsNameTheirReason) {
  EXPECT_EQ(umCounterRefusal(CUPTI_SUCCESS), "");
  EXPECT_THAT(umCounterRefusal(CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED),
              HasSubstr("virtualised"));
  EXPECT_THAT(umCounterRefusal(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED), HasSubstr("MIG"));
  EXPECT_THAT(umCounterRefusal(CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED),
              HasSubstr("confidential-computing"));
  EXPECT_THAT(umCounterRefusal(CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES),
              HasSubstr("CUDA_VISIBLE_DEVICES"));
  EXPECT_THAT(umCounterRefusal(9999), HasSubstr("CUPTI error 9999"));
  EXPECT_THAT(umCounterRefusal(CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED),
              HasSubstr("recording kernels only"));
  EXPECT_THAT(noConcurrentManagedAccessReason(), HasSubstr("concurrentManagedAccess"));
  EXPECT_THAT(subscriberRefusal(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
              HasSubstr("taken by another tool"));
  EXPECT_THAT(subscriberRefusal(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED),
              HasSubstr("deepum_step() marks, kernels and UM counters are still recorded"));
}

/// Two iterations of a small training step, as CUPTI would report them.
v1::Profile recordTwoIterations(bool AccessSet) {
  RecorderOptions O;
  O.Skip = 1;
  O.Iterations = 2;
  O.AccessSetMode = AccessSet;
  Recorder R(O);
  R.setOrigin(0);
  R.setUmCounters(true);
  R.addDevice({0, "test-gpu", uint64_t{16} << 30, 70, false});
  R.setConcurrentManagedAccess(true);
  // Weights, activations, gradients.
  R.addAllocation(Base, 4 * MiB, 0, 1, AllocationSource::Allocator);
  R.addAllocation(Base + 4 * MiB, 2 * MiB, 0, 2, AllocationSource::Allocator);
  R.addAllocation(Base + 6 * MiB, 4 * MiB, 0, 3, AllocationSource::Allocator);
  uint32_t Corr = 1;
  for (uint64_t It = 0; It < 3; ++It) {
    uint64_t T = It * 1000;
    HandBuffer B;
    B.add(kernelRecord("fwd", T + 100, T + 200, Corr++));
    B.add(kernelRecord("bwd", T + 300, T + 400, Corr++));
    B.add(umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, Base + 10, 1, T + 110,
                   T + 115, CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ));
    B.add(umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, Base + 4 * MiB, 1,
                   T + 120, T + 125, CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE));
    B.add(umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD, Base, 2 * MiB,
                   T + 111, T + 119, CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE));
    B.add(umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, Base + 6 * MiB, 1,
                   T + 310, T + 315, CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE));
    B.add(umRecord(CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, Base + 4 * MiB + 1, 1,
                   T + 320, T + 325, CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ));
    B.drain(It == 2 ? 5 : 0, R);
    R.step(T + 1000);
  }
  return takeOk(R.buildProfile());
}

TEST(CuptiRecords, ProfileFromHandBuiltRecordsValidatesAndInspects) {
  v1::Profile P = recordTwoIterations(/*AccessSet=*/false);
  ASSERT_FALSE(bool(format::validateProfile(P)));
  ASSERT_EQ(P.iterations_size(), 2);
  ASSERT_EQ(P.kernels_size(), 4);
  EXPECT_EQ(P.recording().dropped_records(), 5u);
  EXPECT_EQ(P.recording().unattributed_faults(), 0u);
  EXPECT_EQ(P.migrations_size(), 2);
  // The same kernel in both iterations has the same access set.
  for (int K : {0, 2}) {
    ASSERT_EQ(P.kernels(K).blocks_size(), 2);
    // Block 0: one read fault, and the whole block migrated for it; the
    // pages no fault describes are of unknown direction.
    EXPECT_EQ(P.kernels(K).blocks(0).page_mask(), 0xffffffffu);
    EXPECT_EQ(P.kernels(K).blocks(0).mode(), v1::ACCESS_MODE_UNSPECIFIED);
    EXPECT_EQ(P.kernels(K).blocks(1).mode(), v1::ACCESS_MODE_READ_WRITE);
  }
  ASSERT_EQ(P.kernels(1).blocks_size(), 2);

  std::string Path = scratchDir("CuptiRecords.Inspect") + "/hand.profile.pb";
  ASSERT_FALSE(bool(format::writeProfile(P, Path)));
  v1::Profile Back = takeOk(format::readProfile(Path));
  EXPECT_EQ(Back.kernels_size(), 4);
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  tools::InspectOptions IO;
  IO.Input = Path;
  ASSERT_FALSE(bool(tools::runInspect(IO, OS)));
  EXPECT_THAT(OS.str(), HasSubstr("kernels            4 (2 per iteration"));
}

TEST(CuptiRecords, AccessSetProfileIsMarkedAsSuch) {
  v1::Profile P = recordTwoIterations(/*AccessSet=*/true);
  EXPECT_EQ(P.access_source(), v1::ACCESS_SOURCE_MEASURED_ACCESS_SET);
  ASSERT_FALSE(bool(format::validateProfile(P)));
}

} // namespace
