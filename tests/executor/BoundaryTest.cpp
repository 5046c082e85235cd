//===- BoundaryTest.cpp - Ranges and ordering where the executor meets CUDA -===//
//
// What reaches the backend: discards rounded inward to whole managed pages
// (never a byte of a live neighbour), prefetches and evictions rounded
// outward (whole pages, inside the arena's allocation); and a block freed
// and placed again while a discard of it is being issued is ordered after
// that discard.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/Executor.h"
#include "deepum/executor/FakeBackend.h"

#include "ExecutorTestSupport.h"

#include "gtest/gtest.h"

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

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

/// Runs `OnDiscard` (once) while a discard call is in progress.
class HookedDiscardBackend : public deepum::test::ForwardingBackend {
public:
  HookedDiscardBackend() : ForwardingBackend({.EventsCompleteAtOnce = false}) {}
  BackendStatus discardBatch(int D, std::span<const MemRange> R, StreamHandle S) override {
    BackendStatus St = Inner.discardBatch(D, R, S);
    if (OnDiscard) {
      auto F = std::move(OnDiscard);
      OnDiscard = nullptr;
      F();
    }
    return St;
  }
  std::function<void()> OnDiscard;
};

TEST(BoundaryTest, ABlockPlacedWhileItsDiscardIsIssuedWaitsForTheDiscard) {
  // Tensor X (sequence 0) is used by launch 11 and freed just after that launch
  // is queued; the discard of its range comes with launch 11's end. Tensor Y
  // (sequence 1) has the same planned range and is allocated, on another
  // thread, while that discard is being issued. Y's stream must wait for an
  // event recorded after the discard, or the discard could destroy Y's data.
  HookedDiscardBackend B;
  Executor E(B, ExecutorConfig{});
  PlanBuilder PB({10, 11});
  PB.place(0, kBlock, 0).place(1, kBlock, 0).action(v1::ACTION_KIND_DISCARD, 1, 0, kBlock, 1);
  PB.proto().mutable_layout()->set_ticks(4);
  auto *Pls = PB.proto().mutable_layout()->mutable_placements();
  Pls->Mutable(0)->set_live_begin(0); // X, then Y: the same bytes, one after the other
  Pls->Mutable(0)->set_live_end(2);
  Pls->Mutable(1)->set_live_begin(2);
  Pls->Mutable(1)->set_live_end(4);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  E.markIteration();
  void *X = E.allocate(kBlock, 0, S1);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(X), Base);
  B.Inner.launch(0, S1, 10);

  std::atomic<void *> Y{nullptr};
  std::atomic<bool> Placed{false};
  std::thread Other;
  B.OnDiscard = [&] {
    Other = std::thread([&] {
      Y = E.allocate(kBlock, 0, S1);
      Placed = true;
    });
    // Give the other thread its chance to place Y in the middle of the discard.
    for (int I = 0; I < 300 && !Placed; ++I)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  uint64_t Id = 11;
  E.launchBegin(0, S1, &Id, 1);
  E.deallocate(X, 0, S1); // right after the launch is queued
  E.launchEnd(0, S1);     // its discard: Y is placed meanwhile
  ASSERT_TRUE(Other.joinable()) << "no discard was issued";
  Other.join();
  ASSERT_EQ(reinterpret_cast<uintptr_t>(Y.load()), Base) << "Y was not placed over X's range";

  const auto Calls = B.Inner.calls();
  uint64_t DiscardSeq = 0;
  StreamHandle Release = 0;
  for (const FakeCall &C : Calls)
    if (C.Kind == FakeCallKind::Discard) {
      DiscardSeq = C.Sequence;
      Release = C.Stream;
    }
  bool Ordered = false;
  for (const FakeCall &Wait : Calls) {
    if (Wait.Kind != FakeCallKind::StreamWaitEvent || Wait.Stream != S1)
      continue;
    // The latest record of that event before the wait must follow the discard.
    uint64_t RecordSeq = 0;
    for (const FakeCall &Rec : Calls)
      if (Rec.Kind == FakeCallKind::RecordEvent && Rec.Event == Wait.Event &&
          Rec.Sequence < Wait.Sequence && Rec.Stream == Release)
        RecordSeq = Rec.Sequence;
    Ordered |= RecordSeq > DiscardSeq;
  }
  EXPECT_TRUE(Ordered) << "Y's stream does not wait for the discard of its range";
}

} // namespace
