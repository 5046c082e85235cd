//===- EngineTest.cpp - The command interface the executor backend drives --===//
#include "SimTestSupport.h"
#include "TestSupport.h"

#include "deepum/sim/Engine.h"

#include "gtest/gtest.h"

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
