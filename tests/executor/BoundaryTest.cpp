//===- BoundaryTest.cpp - Ranges and ordering where the executor meets CUDA -===//
//
// What reaches the backend: discards rounded inward to whole managed pages
// (never a byte of a live neighbour), prefetches and evictions rounded
// outward (whole pages, inside the arena's allocation).
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/Executor.h"
#include "deepum/executor/FakeBackend.h"

#include "ExecutorTestSupport.h"

#include "gtest/gtest.h"

using namespace deepum::executor;
using deepum::test::kBlock;
using deepum::test::PlanBuilder;
namespace v1 = deepum::v1;

namespace {
constexpr StreamHandle S1 = 0x101;
constexpr uint64_t kPage = kManagedPageBytes;

bool overlaps(const MemRange &R, uintptr_t Start, uintptr_t End) {
  return R.Address < End && Start < R.Address + R.Bytes;
}

bool wholePages(const MemRange &R) { return R.Address % kPage == 0 && R.Bytes % kPage == 0; }

/// All ranges of the calls of `Kind`.
std::vector<MemRange> rangesOf(const FakeBackend &B, FakeCallKind Kind, int Location = 0) {
  std::vector<MemRange> Out;
  for (const FakeCall &C : B.calls(Kind))
    if (Kind != FakeCallKind::Prefetch || C.Location == Location)
      Out.insert(Out.end(), C.Ranges.begin(), C.Ranges.end());
  return Out;
}

TEST(BoundaryTest, DiscardBetweenLiveNeighboursKeepsToWholePagesInside) {
  // Left | dead | right, packed at 512-byte boundaries that are not pages.
  constexpr uint64_t LeftEnd = 100 * 1024 + 512, DeadEnd = LeftEnd + 300 * 1024,
                     RightEnd = DeadEnd + 64 * 1024 + 512;
  static_assert(LeftEnd % kPage != 0 && DeadEnd % kPage != 0 && RightEnd % kPage != 0);
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  PlanBuilder PB({10, 11});
  PB.place(0, LeftEnd, 0)
      .place(1, DeadEnd - LeftEnd, LeftEnd)
      .place(2, RightEnd - DeadEnd, DeadEnd)
      .action(v1::ACTION_KIND_DISCARD, 1, 0, RightEnd, 1); // all three; two are live
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  ASSERT_EQ(Base % kPage, 0u);
  E.markIteration();
  void *Left = E.allocate(LeftEnd, 0, S1);
  void *Dead = E.allocate(DeadEnd - LeftEnd, 0, S1);
  void *Right = E.allocate(RightEnd - DeadEnd, 0, S1);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(Left), Base);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(Dead), Base + LeftEnd);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(Right), Base + DeadEnd);
  E.deallocate(Dead, 0, S1);
  B.launch(0, S1, 10);
  B.launch(0, S1, 11);

  std::vector<MemRange> Discarded = rangesOf(B, FakeCallKind::Discard);
  ASSERT_FALSE(Discarded.empty());
  uint64_t Bytes = 0;
  for (const MemRange &R : Discarded) {
    EXPECT_TRUE(wholePages(R)) << std::hex << R.Address << " + " << R.Bytes;
    EXPECT_FALSE(overlaps(R, Base, Base + LeftEnd)) << "discarded a byte of the left tensor";
    EXPECT_FALSE(overlaps(R, Base + DeadEnd, Base + RightEnd))
        << "discarded a byte of the right tensor";
    Bytes += R.Bytes;
  }
  // Every whole page of the dead tensor, and nothing else.
  const uint64_t First = (LeftEnd + kPage - 1) / kPage * kPage, Last = DeadEnd / kPage * kPage;
  EXPECT_EQ(Bytes, Last - First);
  EXPECT_EQ(Discarded.front().Address, Base + First);
  deepum_stats_t S{};
  ASSERT_TRUE(E.stats(0, S));
  EXPECT_EQ(S.discard_bytes, Last - First);
}

TEST(BoundaryTest, ADiscardSmallerThanAPageIsNotIssued) {
  // A dead 20000-byte tensor between two live ones: no whole page of its own.
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  PlanBuilder PB({10, 11});
  PB.place(0, 40000, 0).place(1, 20000, 40000).place(2, 40000, 60000).action(
      v1::ACTION_KIND_DISCARD, 1, 40000, 20000, 1);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  E.markIteration();
  void *Left = E.allocate(40000, 0, S1);
  void *Dead = E.allocate(20000, 0, S1);
  void *Right = E.allocate(40000, 0, S1);
  ASSERT_TRUE(Left && Dead && Right);
  E.deallocate(Dead, 0, S1);
  B.launch(0, S1, 10);
  B.launch(0, S1, 11);
  EXPECT_TRUE(B.calls(FakeCallKind::Discard).empty());
  deepum_stats_t S{};
  ASSERT_TRUE(E.stats(0, S));
  EXPECT_EQ(S.discard_bytes, 0u);
  EXPECT_EQ(S.backend_errors, 0u);
}

TEST(BoundaryTest, PrefetchesAndEvictionsCoverWholePagesInsideTheArena) {
  const uint64_t Arena = 4 * kBlock - 1000; // not a whole number of pages
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  PlanBuilder PB({10, 11, 12}, Arena);
  PB.action(v1::ACTION_KIND_PREFETCH, 0, 100, 1000, 0)
      .action(v1::ACTION_KIND_PREFETCH, 0, Arena - 500, 500, 0) // the arena's last bytes
      .action(v1::ACTION_KIND_EVICT, 1, 70000, 200000, 0);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  auto Allocations = B.calls(FakeCallKind::AllocateManaged);
  ASSERT_EQ(Allocations.size(), 1u);
  B.launch(0, S1, 10);
  B.launch(0, S1, 11);

  std::vector<MemRange> In = rangesOf(B, FakeCallKind::Prefetch, 0);
  ASSERT_EQ(In.size(), 2u);
  EXPECT_EQ(In[0].Address, Base);
  EXPECT_EQ(In[0].Bytes, kPage);
  EXPECT_EQ(In[1].Address, Base + (Arena - 500) / kPage * kPage);
  EXPECT_EQ(In[1].Address + In[1].Bytes, Base + (Arena + kPage - 1) / kPage * kPage);
  std::vector<MemRange> Out = rangesOf(B, FakeCallKind::Prefetch, kHostLocation);
  ASSERT_EQ(Out.size(), 1u);
  EXPECT_EQ(Out[0].Address, Base + 70000 / kPage * kPage);
  EXPECT_EQ(Out[0].Address + Out[0].Bytes, Base + (270000 + kPage - 1) / kPage * kPage);
  for (const MemRange &R : In)
    EXPECT_TRUE(wholePages(R));
  for (const MemRange &R : Out)
    EXPECT_TRUE(wholePages(R));
  deepum_stats_t S{};
  ASSERT_TRUE(E.stats(0, S));
  EXPECT_EQ(S.prefetch_bytes, In[0].Bytes + In[1].Bytes);
  EXPECT_EQ(S.evict_bytes, Out[0].Bytes);
}

} // namespace
