//===- EngineTest.cpp - The command interface the executor backend drives --===//
#include "SimTestSupport.h"
#include "TestSupport.h"

#include "deepum/sim/Engine.h"

#include "gtest/gtest.h"
#include "llvm/Support/FormatVariadic.h"

using namespace deepum;
using namespace deepum::sim;
using namespace deepum::test;

namespace {
constexpr uint64_t Base = uint64_t{1} << 40; // block 524288
constexpr uint64_t Page = 64 * 1024;
} // namespace

TEST(SimEngine, PrefetchOverlapsComputeOnTheCopyEngine) {
  Engine E(handDevice(), 8 * MiB);
  // Cold: the kernel faults its block in (10 us + 2097.152 us), then runs 1 ms.
  ASSERT_FALSE(E.launchByAddress({{Base / (2 * MiB), 0, Access::Read}}, 1'000'000));
  EXPECT_EQ(E.stats().Faults, 32u);
  EXPECT_EQ(E.computeEndNs(), 10'000u + 2'097'152u + 1'000'000u);
  // The host is one launch ahead: a prefetch issued now starts when that
  // kernel started, and 2.1 ms outlast its 1 ms: the next kernel waits 1.1 ms.
  EXPECT_EQ(E.issueNs(), 10'000u + 2'097'152u);
  E.prefetchToDevice(Base + 2 * MiB, 2 * MiB);
  EXPECT_EQ(E.residentBytes(), 4 * MiB);
  llvm::Error Err = E.launchByAddress({{Base / (2 * MiB) + 1, 0, Access::Read}}, 1'000'000);
  ASSERT_FALSE(Err);
  EXPECT_EQ(E.stats().Faults, 32u); // no new faults
  EXPECT_EQ(E.stats().LatePrefetches, 1u);
  EXPECT_EQ(E.stats().PrefetchHits, 1u);
  EXPECT_EQ(E.computeEndNs(), 10'000u + 2 * 2'097'152u + 1'000'000u);
}

TEST(SimEngine, EvictWritesBackOnlyDirtyWholePages) {
  Engine E(handDevice(), 8 * MiB);
  uint32_t B = E.blockId(Base / (2 * MiB));
  E.prefetchToDevice(Base, 2 * MiB);
  ASSERT_FALSE(E.launch({{B, 0x0000000fu, Access::Write}}, 1000)); // writes pages 0-3
  // Evict [0, 2 MiB - 1 byte): the last page is only partly inside, stays.
  E.evictToHost(Base, 2 * MiB - 1);
  EXPECT_EQ(E.residentMask(B), 0x80000000u);
  EXPECT_EQ(E.stats().BytesDtoH, 4 * Page); // only the written pages
  EXPECT_EQ(E.residentBytes(), Page);
}

TEST(SimEngine, DiscardDropsContentsSoRefetchCopiesNothing) {
  Engine E(handDevice(), 8 * MiB);
  uint32_t B = E.blockId(Base / (2 * MiB));
  ASSERT_FALSE(E.launch({{B, 0xffffffffu, Access::Write}}, 1000));
  uint64_t In = E.stats().BytesHtoD;
  E.discard(Base, 2 * MiB);
  EXPECT_EQ(E.residentBytes(), 0u);
  EXPECT_EQ(E.stats().BytesDtoH, 0u);
  E.prefetchToDevice(Base, 2 * MiB); // populated on the GPU, nothing crosses
  EXPECT_EQ(E.stats().BytesHtoD, In);
  ASSERT_FALSE(E.launch({{B, 0xffffffffu, Access::Write}}, 1000));
  EXPECT_EQ(E.stats().LostReads, 0u);
}

TEST(SimEngine, PopulateHandsOutEmptyPagesOnlyWithoutFaultOrCopy) {
  // A device-memory pool's allocation: pages with no contents become
  // resident at once, nothing copied, no call, no fault when used. Pages
  // with contents (on the host here) are left alone: they must be copied.
  Engine E(handDevice(), 8 * MiB);
  uint32_t B = E.blockId(Base / (2 * MiB));
  ASSERT_FALSE(E.launch({{B, 0xffffffffu, Access::Write}}, 1000));
  E.evictToHost(Base, 1 * MiB);         // pages 0-15 written back: contents on the host
  E.discard(Base + 1 * MiB, 1 * MiB);   // pages 16-31 freed: no contents anywhere
  ASSERT_EQ(E.residentBytes(), 0u);
  const uint64_t In = E.stats().BytesHtoD, Faults = E.stats().Faults, Issue = E.issueNs();
  E.populatePages(B, 0xffffffffu);
  EXPECT_EQ(E.residentMask(B), 0xffff0000u) << "only the empty pages 16-31";
  EXPECT_EQ(E.issueNs(), Issue) << "no host call";
  ASSERT_FALSE(E.launch({{B, 0xffff0000u, Access::Write}}, 1000));
  EXPECT_EQ(E.stats().Faults, Faults);
  EXPECT_EQ(E.stats().BytesHtoD, In);
  EXPECT_EQ(E.stats().PrefetchHits, 0u) << "not a prefetch";
}

TEST(SimEngine, EvictionIsLeastRecentlyMigratedAndSkipsTheRunningKernel) {
  Engine E(handDevice(), 4 * MiB);
  uint32_t A = E.blockId(1), B = E.blockId(2), C = E.blockId(3);
  ASSERT_FALSE(E.launch({{A, ~0u, Access::Read}}, 1000));
  ASSERT_FALSE(E.launch({{B, ~0u, Access::Read}}, 1000));
  // A was migrated first but is used again now: migration order, not use
  // order, decides; A goes.
  ASSERT_FALSE(E.launch({{A, ~0u, Access::Read}}, 1000));
  ASSERT_FALSE(E.launch({{C, ~0u, Access::Read}}, 1000));
  EXPECT_TRUE(E.isResident(B, ~0u));
  EXPECT_TRUE(E.isResident(C, ~0u));
  EXPECT_FALSE(E.isResident(A, 1u));
  EXPECT_EQ(E.stats().Evictions, 1u);
}

TEST(SimEngine, ProtectedPrefetchFailsInsteadOfEvictingNeededBlocks) {
  Engine E(handDevice(), 2 * MiB);
  uint32_t A = E.blockId(1), B = E.blockId(2);
  E.prefetchPages(A, ~0u);
  E.beginProtection();
  E.protect(A, 0);
  E.protect(B, 1);
  EXPECT_FALSE(E.prefetchPages(B, ~0u, /*RespectProtection=*/true));
  EXPECT_TRUE(E.isResident(A, ~0u));
  EXPECT_TRUE(E.prefetchPages(B, ~0u, /*RespectProtection=*/false));
  EXPECT_FALSE(E.isResident(A, 1u));
}

TEST(SimEngine, ResidentNeverExceedsCapacityWhileEvictionsDrain) {
  Engine E(handDevice(), 4 * MiB);
  E.setCheckInvariants(true);
  for (uint64_t I = 0; I < 50; ++I) {
    uint32_t B = E.blockId(I % 5);
    ASSERT_FALSE(E.launch({{B, ~0u, I % 2 ? Access::Write : Access::Read}}, 50'000));
    E.prefetchPages(E.blockId((I + 1) % 5), ~0u);
    EXPECT_LE(E.residentBytes(), 4 * MiB);
  }
  EXPECT_EQ(E.stats().InvariantViolations, 0u);
  EXPECT_LE(E.stats().PeakResidentBytes, 4 * MiB);
}

TEST(SimEngine, RoomLeftOverFromAFreeStaysBusyUntilTheFreeEnds) {
  // Room for two blocks. A running kernel holds A and B; a discard of A
  // issued meanwhile frees its room only when the kernel ends. A prefetch
  // of half of C takes half of that room; the other half is still not free
  // before the kernel ends, so a prefetch of half of D issued next starts
  // its copy then too, and the kernel reading D waits for it.
  Engine E(handDevice(), 4 * MiB);
  E.setCheckInvariants(true);
  const uint32_t A = E.blockId(1), B = E.blockId(2), C = E.blockId(3), D = E.blockId(4);
  E.discardPages(C, ~0u); // C holds nothing: fetching it copies nothing
  ASSERT_FALSE(E.launch({{D, ~0u, Access::Write}}, 1'000'000));
  E.evictPages(D, ~0u); // D's contents now live on the host
  ASSERT_FALSE(E.launch({{A, ~0u, Access::Write}, {B, ~0u, Access::Write}}, 1'000'000));
  const uint64_t KernelEnd = E.computeEndNs();
  ASSERT_LT(E.issueNs(), KernelEnd); // the host issues while the kernel runs
  E.discardPages(A, ~0u);
  ASSERT_TRUE(E.prefetchPages(C, 0x0000ffffu)); // populated: nothing to copy
  ASSERT_TRUE(E.prefetchPages(D, 0x0000ffffu)); // 16 pages to copy
  EXPECT_EQ(E.copyEndNs(/*ToDevice=*/true), KernelEnd + 16 * 65'536u);
  ASSERT_FALSE(E.launch({{D, 0x0000ffffu, Access::Read}}, 1000));
  EXPECT_EQ(E.computeEndNs(), KernelEnd + 16 * 65'536u + 1000);
  EXPECT_EQ(E.stats().InvariantViolations, 0u);
}

TEST(SimEngine, ReadMostlyKeepsTheHostDuplicateWhenCleanPagesWouldBeCopied) {
  DeviceModel D = handDevice();
  D.EvictionCopiesClean = true; // a driver that copies every evicted page
  for (bool ReadMostly : {false, true}) {
    Engine E(D, 8 * MiB);
    if (ReadMostly)
      E.advise(v1::ADVICE_SET_READ_MOSTLY, Base, 2 * MiB);
    E.prefetchToDevice(Base, 2 * MiB);
    E.evictToHost(Base, 2 * MiB);
    EXPECT_EQ(E.stats().BytesDtoH, ReadMostly ? 0u : 2 * MiB) << ReadMostly;
    EXPECT_EQ(E.residentBytes(), 0u);
  }
}

// --- The driver's fault batches, API-call costs, clean evictions ------------

namespace {
/// handDevice with the driver's batch as it is: 256 entries of 4 KiB, 10 us
/// per batch and 5 us per 2 MiB VA block in it.
DeviceModel driverBatches() {
  DeviceModel D = handDevice();
  D.FaultBatchSize = 256;
  D.FaultBlockServiceUs = 5;
  return D;
}
} // namespace

TEST(SimEngine, DenseFaultsFillABatchWith16PagesOf16Entries) {
  // One dense 2 MiB block: 32 pages x 16 entries = 512 entries = 2 batches
  // of 16 pages. The density prefetcher does not fire in the first (16 of 32
  // pages is not more than 51%; each 1 MiB half it fills is all faulted).
  Engine E(driverBatches(), 8 * MiB);
  ASSERT_FALSE(E.launchByAddress({{Base / (2 * MiB), 0, Access::Read}}, 0));
  EXPECT_EQ(E.stats().FaultBatches, 2u);
  EXPECT_EQ(E.stats().FaultEntries, 512u);
  EXPECT_EQ(E.stats().Faults, 32u);
  // Each batch: 10 us + 1 block x 5 us, then 1 MiB over the link.
  EXPECT_EQ(E.computeEndNs(), 2 * (15'000u + 1'048'576u));
}

TEST(SimEngine, StridedFaultsFillABatchWith256PagesAcrossEightBlocks) {
  // One 4 KiB access per 64 KiB page (a 64 KiB-strided pattern) over 8
  // blocks: 256 pages raise 256 entries, one batch touching 8 VA blocks.
  Engine E(driverBatches(), 32 * MiB);
  std::vector<Engine::AddressUse> Uses;
  for (uint64_t K = 0; K < 8; ++K)
    Uses.push_back({Base / (2 * MiB) + K, 0, Access::Read, 1});
  ASSERT_FALSE(E.launchByAddress(Uses, 0));
  EXPECT_EQ(E.stats().FaultBatches, 1u);
  EXPECT_EQ(E.stats().FaultEntries, 256u);
  EXPECT_EQ(E.stats().Faults, 256u);
  // 10 us + 8 blocks x 5 us, then 16 MiB over the link.
  EXPECT_EQ(E.computeEndNs(), 50'000u + 8 * 2'097'152u);
  // The same pages touched densely take 16 batches.
  Engine Dense(driverBatches(), 32 * MiB);
  for (Engine::AddressUse &U : Uses)
    U.FaultEntriesPerPage = kDenseFaultEntries;
  ASSERT_FALSE(Dense.launchByAddress(Uses, 0));
  EXPECT_EQ(Dense.stats().FaultBatches, 16u);
}

namespace {
/// Streams ReadWrite kernels over `Blocks` blocks, one dense block each, on
/// `CapacityBytes` of GPU memory; returns the engine's end of compute.
uint64_t streamDirtyBlocks(const DeviceModel &D, uint64_t CapacityBytes, unsigned Blocks,
                           EngineStats *Stats = nullptr) {
  Engine E(D, CapacityBytes);
  E.setCheckInvariants(true);
  for (unsigned K = 0; K < Blocks; ++K)
    EXPECT_FALSE(E.launchByAddress({{Base / (2 * MiB) + K, 0, Access::ReadWrite}}, 100'000));
  EXPECT_EQ(E.stats().InvariantViolations, 0u);
  if (Stats)
    *Stats = E.stats();
  return E.computeEndNs();
}
} // namespace

TEST(SimEngine, AWriteBackShorterThanTheBatchServiceAddsNoTime) {
  // 3005 us of service per dense batch; a victim's write-back (2 MiB of
  // dirty pages) takes 2097 us and starts with the batch that needs its
  // room, so eviction is hidden: 8 blocks through 4 blocks of memory take
  // what they take with room for all of them.
  DeviceModel D = driverBatches();
  D.FaultBatchLatencyUs = 3000;
  EngineStats Tight;
  const uint64_t Oversubscribed = streamDirtyBlocks(D, 8 * MiB, 8, &Tight);
  EXPECT_EQ(Tight.Evictions, 4u);
  EXPECT_EQ(Tight.BytesDtoH, 8 * MiB);
  const uint64_t WithRoom = streamDirtyBlocks(D, 64 * MiB, 8);
  EXPECT_EQ(Oversubscribed, WithRoom);
  // Per block: two dense batches, each service then 1 MiB in, then 100 us.
  EXPECT_EQ(WithRoom, 8 * (2 * (3'005'000u + 1'048'576u) + 100'000u));
}

TEST(SimEngine, AWriteBackLongerThanTheBatchServiceKeepsTheCopyEngineBusy) {
  // One strided batch faults 8 blocks (50 us of service) into memory full of
  // 8 dirty blocks: 16 MiB must be written back on the one device-to-host
  // engine before the last block's room is there, and its 2 MiB come in
  // after: the service is hidden, the bytes are not.
  Engine E(driverBatches(), 16 * MiB);
  E.setCheckInvariants(true);
  for (uint64_t K = 0; K < 8; ++K)
    ASSERT_FALSE(E.launchByAddress({{Base / (2 * MiB) + K, 0, Access::Write, 1}}, 0));
  const uint64_t Before = E.computeEndNs();
  std::vector<Engine::AddressUse> Uses;
  for (uint64_t K = 8; K < 16; ++K)
    Uses.push_back({Base / (2 * MiB) + K, 0, Access::Read, 1});
  ASSERT_FALSE(E.launchByAddress(Uses, 0));
  EXPECT_EQ(E.stats().Evictions, 8u);
  EXPECT_EQ(E.stats().BytesDtoH, 16 * MiB);
  const uint64_t Took = E.computeEndNs() - Before;
  const uint64_t BlockNs = 2'097'152u;    // 2 MiB over the hand link
  EXPECT_GE(Took, 8 * BlockNs + BlockNs); // every write-back, then the last copy in
  // Block i comes in once the write-back of victim i has ended and the copy
  // of block i - 1 is done: the copies chain behind the write-backs.
  EXPECT_EQ(Took, 9 * BlockNs);
  EXPECT_EQ(E.stats().InvariantViolations, 0u);
}

TEST(SimEngine, EachTransferCallCostsTheHostAndABatchCallCostsOnce) {
  DeviceModel D = handDevice();
  D.TransferCallUs = 20;
  D.TransferRangeUs = 1;
  // Three single calls: 60 us of host time before the kernel can start.
  Engine E(D, 64 * MiB);
  for (uint64_t K = 0; K < 3; ++K)
    E.prefetchToDevice(Base + K * 2 * MiB, 2 * MiB);
  EXPECT_EQ(E.stats().HostCalls, 3u);
  EXPECT_EQ(E.stats().HostCallNs, 60'000u);
  EXPECT_EQ(E.issueNs(), 60'000u);
  ASSERT_FALSE(E.launchByAddress({}, 1'000));
  EXPECT_EQ(E.computeEndNs(), 61'000u); // the kernel waited for the host
  EXPECT_EQ(E.stats().StallNs, 60'000u);
  // The first transfer starts after its call: 20 us + 3 blocks over the link.
  ASSERT_FALSE(E.launchByAddress({{Base / (2 * MiB) + 2, 0, Access::Read}}, 0));
  EXPECT_EQ(E.computeEndNs(), 20'000u + 3 * 2'097'152u);
  // One batch call of three ranges: 20 + 2 x 1 us.
  Engine B(D, 64 * MiB);
  std::vector<Engine::Range> Ranges;
  for (uint64_t K = 0; K < 3; ++K)
    Ranges.push_back({Base + K * 2 * MiB, 2 * MiB});
  B.prefetchBatchToDevice(Ranges);
  EXPECT_EQ(B.stats().HostCalls, 1u);
  EXPECT_EQ(B.issueNs(), 22'000u);
  EXPECT_EQ(B.residentBytes(), 6 * MiB);
  B.discardBatch(Ranges);
  EXPECT_EQ(B.stats().HostCalls, 2u);
  EXPECT_EQ(B.issueNs(), 44'000u);
}

TEST(SimEngine, HostCallsShowOnTheTimeline) {
  DeviceModel D = handDevice();
  D.TransferCallUs = 20;
  format::TraceWriter W;
  Engine E(D, 8 * MiB);
  E.setTimeline(&W);
  E.prefetchToDevice(Base, 2 * MiB);
  std::string Json = llvm::formatv("{0}", W.finish()).str();
  EXPECT_NE(Json.find("\"api call\""), std::string::npos) << Json;
  EXPECT_NE(Json.find("\"host\""), std::string::npos) << Json;
}

TEST(SimEngine, DiscardsShowOnTheTimelineWithTheirBytes) {
  DeviceModel D = handDevice();
  format::TraceWriter W;
  Engine E(D, 8 * MiB);
  E.setTimeline(&W);
  E.prefetchToDevice(Base, 2 * MiB);
  E.discard(Base, 1 * MiB);           // half the block: 16 pages dropped
  E.discard(Base + 4 * MiB, 2 * MiB); // nothing resident there: no event
  llvm::json::Value V = W.finish();
  int Discards = 0;
  for (const llvm::json::Value &Ev : *V.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object *O = Ev.getAsObject();
    if (O->getString("name") != llvm::StringRef("discard"))
      continue;
    ++Discards;
    EXPECT_EQ(O->getString("ph"), llvm::StringRef("i"));
    EXPECT_EQ(O->getInteger("tid").getValueOr(-1), 6); // the "discards" lane
    EXPECT_EQ(O->getObject("args")->getInteger("bytes").getValueOr(-1), int64_t{1} * MiB);
  }
  EXPECT_EQ(Discards, 1);
}

TEST(SimEngine, CleanEvictionsAreCopiedByDefault) {
  // Stock UVM migrates every resident page of an evicted chunk to the host;
  // only read-mostly advice keeps a host duplicate.
  DeviceModel D; // the default model
  EXPECT_TRUE(D.EvictionCopiesClean);
  D.TransferCallUs = 0;
  Engine E(D, 8 * MiB);
  E.prefetchToDevice(Base, 2 * MiB); // clean: the host copy is current
  E.evictToHost(Base, 2 * MiB);
  EXPECT_EQ(E.stats().BytesDtoH, 2 * MiB);
}

TEST(SimEngine, EventLogRecordsFaultGroupsAndMigrationsWithTheirCauses) {
  Engine E(handDevice(), 4 * MiB); // two blocks fit
  std::vector<UmEvent> Log;
  // Off by default.
  ASSERT_FALSE(E.launchByAddress({{Base / (2 * MiB), 0, Access::Write}}, 1000)); // block 0, dirty
  E.setEventLog(&Log);
  EXPECT_TRUE(Log.empty());
  const EngineStats Before = E.stats();

  E.prefetchToDevice(Base + 2 * MiB, 2 * MiB); // block 1: a user prefetch
  ASSERT_EQ(Log.size(), 1u);
  EXPECT_EQ(Log[0].Type, UmEvent::Kind::MigrationHtoD);
  EXPECT_EQ(Log[0].Why, UmEvent::Cause::User);
  EXPECT_EQ(Log[0].Address, Base + 2 * MiB);
  EXPECT_EQ(Log[0].Bytes, 2 * MiB);
  EXPECT_LT(Log[0].StartNs, Log[0].EndNs);

  // Block 2, read: the GPU is full, so block 0 (least recently migrated,
  // written) is evicted and copied back, then block 2 is faulted in.
  ASSERT_FALSE(E.launchByAddress({{Base / (2 * MiB) + 2, 0x6u, Access::Read}}, 1000));
  std::vector<UmEvent> Faults, In, Out;
  for (const UmEvent &X : Log)
    (X.Type == UmEvent::Kind::GpuPageFault    ? Faults
     : X.Type == UmEvent::Kind::MigrationHtoD ? In
                                              : Out)
        .push_back(X);
  // One fault group per faulting page, as CUPTI reports them: pages 1 and 2.
  ASSERT_EQ(Faults.size(), 2u);
  EXPECT_EQ(Faults[0].Address, Base + 4 * MiB + Page);
  EXPECT_EQ(Faults[1].Address, Base + 4 * MiB + 2 * Page);
  for (const UmEvent &F : Faults) {
    EXPECT_EQ(F.Bytes, Page);
    EXPECT_EQ(F.Mode, Access::Read);
    EXPECT_EQ(F.StartNs, Faults[0].StartNs); // one batch
    EXPECT_EQ(F.EndNs, Faults[0].EndNs);
  }
  ASSERT_EQ(Out.size(), 1u);
  EXPECT_EQ(Out[0].Why, UmEvent::Cause::Eviction);
  EXPECT_EQ(Out[0].Address, Base);
  EXPECT_EQ(Out[0].Bytes, 2 * MiB);
  uint64_t Demand = 0, HtoD = 0;
  for (const UmEvent &X : In) {
    HtoD += X.Bytes;
    if (X.Why == UmEvent::Cause::Demand) {
      Demand += X.Bytes;
      EXPECT_EQ(X.Address, Base + 4 * MiB + Page);
      // The fault group spans its service: from the batch until the pages arrived.
      EXPECT_LE(Faults[0].StartNs, X.StartNs);
      EXPECT_LE(X.EndNs, Faults[0].EndNs);
    }
  }
  EXPECT_EQ(Demand, 2 * Page);
  // The log and the counters agree.
  EXPECT_EQ(HtoD, E.stats().BytesHtoD - Before.BytesHtoD);
  EXPECT_EQ(Out[0].Bytes, E.stats().BytesDtoH - Before.BytesDtoH);

  // Moving a written block back to the host is the user's migration.
  ASSERT_FALSE(E.launchByAddress({{Base / (2 * MiB) + 2, 0x6u, Access::Write}}, 1000));
  Log.clear();
  E.evictToHost(Base + 4 * MiB, 2 * MiB);
  ASSERT_FALSE(Log.empty());
  EXPECT_EQ(Log.back().Type, UmEvent::Kind::MigrationDtoH);
  EXPECT_EQ(Log.back().Why, UmEvent::Cause::User);
  E.setEventLog(nullptr);
  E.prefetchToDevice(Base + 4 * MiB, 2 * MiB);
  EXPECT_EQ(Log.back().Type, UmEvent::Kind::MigrationDtoH); // off again
}

// Each direction at its own rate: an H100 with driver 580 moved 47.8 GB/s
// host to device and 9.16 GB/s back (docs/results/gpu.md).
TEST(SimEngine, WriteBacksRunAtTheDeviceToHostRate) {
  DeviceModel D = handDevice();
  D.DeviceToHostBytesPerSecond = D.LinkBytesPerSecond / 4;
  Engine E(D, 8 * MiB);
  std::vector<UmEvent> Log;
  E.setEventLog(&Log);
  ASSERT_FALSE(E.launchByAddress({{Base / (2 * MiB), 0, Access::Write}}, 1000));
  uint64_t In = 0;
  for (const UmEvent &X : Log)
    if (X.Type == UmEvent::Kind::MigrationHtoD)
      In += X.EndNs - X.StartNs;
  Log.clear();
  E.evictToHost(Base, 2 * MiB);
  ASSERT_EQ(Log.size(), 1u);
  EXPECT_EQ(Log[0].Type, UmEvent::Kind::MigrationDtoH);
  EXPECT_EQ(Log[0].Bytes, 2 * MiB);
  // 2 MiB at a quarter of the link rate: four times the way in.
  EXPECT_EQ(Log[0].EndNs - Log[0].StartNs, 4 * 2'097'152u);
  EXPECT_EQ(In, 2'097'152u);
  // 0 keeps the link rate for both.
  EXPECT_EQ(handDevice().deviceToHostBytesPerSecond(), handDevice().LinkBytesPerSecond);
}

// Discarded data on an H100 with driver 580 (docs/results/gpu.md): a
// populate costs the copy stream 14 us a block, and a kernel that writes a
// discarded block before its populate has run pays 4 ms a block.
TEST(SimEngine, PopulatesOfDiscardedBlocksCostWhatTheDeviceSays) {
  for (double PopulateUs : {0.0, 500.0}) {
    SCOPED_TRACE(PopulateUs);
    DeviceModel D = handDevice();
    D.PopulateBlockUs = PopulateUs;
    Engine E(D, 8 * MiB);
    uint32_t B = E.blockId(Base / (2 * MiB));
    ASSERT_FALSE(E.launch({{B, 0xffffffffu, Access::Write}}, 1000));
    E.discard(Base, 2 * MiB);
    std::vector<UmEvent> Log;
    E.setEventLog(&Log);
    E.prefetchToDevice(Base, 2 * MiB);
    const uint64_t In = E.stats().BytesHtoD;
    uint64_t Busy = 0;
    for (const UmEvent &X : Log)
      if (X.Type == UmEvent::Kind::MigrationHtoD) {
        EXPECT_EQ(X.Bytes, 0u) << "a populate copies nothing";
        Busy += X.EndNs - X.StartNs;
      }
    EXPECT_EQ(Busy, static_cast<uint64_t>(PopulateUs * 1000));
    EXPECT_EQ(E.stats().BytesHtoD, In);
    EXPECT_EQ(E.residentMask(B), 0xffffffffu);
  }
}

TEST(SimEngine, AKernelBeforeItsPopulatePaysTheDiscardedFault) {
  // The populate ends 500 us after it is issued; the kernel is ready at
  // once. Without a discarded-fault cost it waits for the populate; with
  // one it faults on the discarded pages instead and pays that cost, unless
  // the populate is awaited (libdeepum's copy path: an event after its call,
  // waited for on the kernel's stream), when it waits as without the cost.
  struct Case {
    double FaultUs;
    bool Awaited;
  };
  for (const Case C : {Case{0.0, false}, Case{3000.0, false}, Case{3000.0, true}}) {
    SCOPED_TRACE(testing::Message() << C.FaultUs << (C.Awaited ? " awaited" : ""));
    DeviceModel D = handDevice();
    D.PopulateBlockUs = 500;
    D.DiscardedFaultBlockUs = C.FaultUs;
    Engine E(D, 8 * MiB);
    uint32_t B = E.blockId(Base / (2 * MiB));
    ASSERT_FALSE(E.launch({{B, 0xffffffffu, Access::Write}}, 1000));
    E.discard(Base, 2 * MiB);
    const uint64_t Issued = E.issueNs(), Ready = E.computeEndNs();
    E.prefetchToDevice(Base, 2 * MiB);
    if (C.Awaited)
      E.awaitPopulates({{Base, 2 * MiB}});
    ASSERT_GT(Issued + 500'000, Ready) << "the populate must be late for this test";
    ASSERT_FALSE(E.launch({{B, 0xffffffffu, Access::Write}}, 1000));
    if (C.FaultUs == 0 || C.Awaited)
      EXPECT_EQ(E.computeEndNs(), Issued + 500'000 + 1000);
    else
      EXPECT_EQ(E.computeEndNs(), Ready + 3'000'000 + 1000);
    if (C.Awaited) {
      // The block's next populate is a hint again until a wait says so.
      E.discard(Base, 2 * MiB);
      const uint64_t Ready2 = E.computeEndNs();
      E.prefetchToDevice(Base, 2 * MiB);
      ASSERT_FALSE(E.launch({{B, 0xffffffffu, Access::Write}}, 1000));
      EXPECT_EQ(E.computeEndNs(), Ready2 + 3'000'000 + 1000);
    }
    EXPECT_EQ(E.stats().LostReads, 0u);
  }
}

// The CUDA stand-in's host fault: a GPU-resident page goes back to the host
// after the last kernel using it, one fault's service and its copy; the
// host's clock waits for it. A page on the host costs nothing.
TEST(SimEngine, AHostFaultBringsThePageBackAndTheHostWaits) {
  DeviceModel D = handDevice();
  D.FaultBatchLatencyUs = 20;
  Engine E(D, 8 * MiB);
  std::vector<uint32_t> Changed;
  E.setResidencyLog(&Changed);
  uint32_t B = E.blockId(Base / (2 * MiB));
  ASSERT_FALSE(E.launch({{B, 0xffffffffu, Access::Write}}, 1000));
  const uint64_t KernelEnd = E.computeEndNs(), DtoH = E.stats().BytesDtoH;
  EXPECT_FALSE(Changed.empty()) << "the kernel's pages arrived";
  Changed.clear();
  EXPECT_TRUE(E.hostFault(Base + 3 * Engine::PageBytes + 17, /*Write=*/false));
  EXPECT_EQ(E.residentMask(B), 0xffffffffu & ~(1u << 3));
  EXPECT_EQ(E.stats().HostFaults, 1u);
  EXPECT_EQ(E.stats().BytesDtoH - DtoH, Engine::PageBytes); // dirty: written back
  EXPECT_GE(E.issueNs(), KernelEnd + 20'000) << "after the kernel, then the service";
  EXPECT_EQ(Changed, std::vector<uint32_t>{B});
  EXPECT_FALSE(E.hostFault(Base + 3 * Engine::PageBytes, /*Write=*/true)) << "on the host now";
  EXPECT_EQ(E.stats().HostFaults, 1u);
}

// The swapping systems' mechanism: cudaMemcpyAsync to pinned memory and
// back, at the explicit-copy rates, not Unified Memory's (on an H100 with
// driver 580, 55 GB/s out against 9.16: docs/results/gpu.md).
TEST(SimEngine, ExplicitCopiesRunAtTheCopyRates) {
  DeviceModel D = handDevice();
  D.DeviceToHostBytesPerSecond = D.LinkBytesPerSecond / 4;
  D.CopyDeviceToHostBytesPerSecond = D.LinkBytesPerSecond * 2;
  D.CopyHostToDeviceBytesPerSecond = D.LinkBytesPerSecond * 2;
  Engine E(D, 8 * MiB);
  std::vector<UmEvent> Log;
  E.setEventLog(&Log);
  const uint32_t B = E.blockId(Base / (2 * MiB));
  ASSERT_FALSE(E.launch({{B, ~0u, Access::Write}}, 1000));
  Log.clear();
  const uint64_t Faults = E.stats().Faults;
  E.copyOutPages(B, ~0u);
  EXPECT_EQ(E.residentBytes(), 0u);
  EXPECT_TRUE(Log.empty()) << "a copy is no Unified Memory migration";
  EXPECT_EQ(E.stats().BytesCopiedOut, 2 * MiB);
  // 2 MiB at twice the link rate, after the kernel that wrote it.
  EXPECT_EQ(E.copyEndNs(false), E.computeEndNs() + 2'097'152u / 2);
  E.copyInPages(B, ~0u);
  EXPECT_EQ(E.residentMask(B), ~0u);
  EXPECT_EQ(E.stats().BytesCopiedIn, 2 * MiB);
  EXPECT_EQ(E.copyEndNs(true), E.copyEndNs(false) + 2'097'152u / 2)
      << "the copy back waits for the contents to reach the host";
  // The kernel waits for its copy (a dependency on its stream); no fault.
  ASSERT_FALSE(E.launch({{B, ~0u, Access::Read}}, 1000));
  EXPECT_EQ(E.stats().Faults, Faults);
  EXPECT_EQ(E.computeEndNs(), E.copyEndNs(true) + 1000);
  // Copied out again unchanged: the pinned copy is current, nothing moves.
  E.copyOutPages(B, ~0u);
  EXPECT_EQ(E.stats().BytesCopiedOut, 2 * MiB);
  EXPECT_EQ(E.stats().LostReads, 0u);
}

// Whether explicit copies share Unified Memory's engines: shared, a copy
// queues behind an eviction of its direction; on engines of their own it
// runs beside it.
TEST(SimEngine, ExplicitCopiesShareUnifiedMemorysEnginesOrNot) {
  for (bool Share : {true, false}) {
    SCOPED_TRACE(Share ? "shared" : "own engines");
    DeviceModel D = handDevice();
    D.CopiesShareUmEngines = Share;
    Engine E(D, 8 * MiB);
    const uint32_t A = E.blockId(Base / (2 * MiB)), B = E.blockId(Base / (2 * MiB) + 1);
    ASSERT_FALSE(E.launch({{A, ~0u, Access::Write}, {B, ~0u, Access::Write}}, 1000));
    E.evictPages(A, ~0u);
    E.copyOutPages(B, ~0u);
    const uint64_t End = E.computeEndNs() + (Share ? 2 : 1) * 2'097'152u;
    EXPECT_EQ(E.copyEndNs(false), End);
  }
}

// Whether a populate holds the host-to-device copy engine: held, a copy back
// issued beside it (on another stream) starts when the populate ends; on the
// driver's queue of its own, the copy runs beside it and the populate ends
// on that queue, still counted in what the direction has queued.
TEST(SimEngine, APopulateHoldsTheCopyEngineOrRunsBesideACopy) {
  for (bool Hold : {true, false}) {
    SCOPED_TRACE(Hold ? "held" : "beside");
    DeviceModel D = handDevice();
    D.PopulateBlockUs = 500;
    D.PopulatesHoldCopyEngine = Hold;
    Engine E(D, 8 * MiB);
    const uint32_t A = E.blockId(Base / (2 * MiB));
    ASSERT_FALSE(E.launch({{A, ~0u, Access::Write}}, 1000));
    E.discardPages(A, ~0u);
    const uint64_t At = E.issueNs(); // the populate starts as the host issues it
    ASSERT_TRUE(E.prefetchPages(A, ~0u));
    const uint64_t PopulateEnd = At + 500'000u;
    const uint64_t CopyEnd = E.explicitCopy(/*ToDevice=*/true, 2 * MiB, At);
    const uint64_t CopyNs = 2'097'152u; // 2 MiB at the hand link's 1 GB/s
    EXPECT_EQ(CopyEnd, (Hold ? PopulateEnd : At) + CopyNs);
    EXPECT_EQ(E.copyEndNs(true), std::max(CopyEnd, PopulateEnd));
    // The kernel still waits for its populate either way.
    E.awaitPopulates({{Base, 2 * MiB}});
    ASSERT_FALSE(E.launch({{A, ~0u, Access::Write}}, 1000));
    EXPECT_GE(E.computeEndNs(), PopulateEnd + 1000);
  }
}

// A pool's memory is the pool's: populating it costs none of the driver's
// populate (14 us a block on an H100) and a kernel never pays the 4 ms of a
// fault on a discarded block for it.
TEST(SimEngine, PoolMemoryCostsNoDriverPopulate) {
  DeviceModel D = handDevice();
  D.PopulateBlockUs = 14;
  D.DiscardedFaultBlockUs = 4000;
  Engine E(D, 8 * MiB);
  const uint32_t B = E.blockId(Base / (2 * MiB));
  ASSERT_FALSE(E.launch({{B, ~0u, Access::Write}}, 1000));
  E.discardPages(B, ~0u);
  const uint64_t Before = E.computeEndNs();
  E.populatePages(B, ~0u);
  ASSERT_FALSE(E.launch({{B, ~0u, Access::Write}}, 1000));
  EXPECT_EQ(E.computeEndNs(), Before + 1000);
}
