//===- PoolTest.cpp - The stream-ordered managed-memory pool ---------------===//
#include "deepum/executor/Pool.h"
#include "deepum/executor/FakeBackend.h"

#include "gtest/gtest.h"

#include <set>

using namespace deepum::executor;

namespace {
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr StreamHandle S1 = 0x101, S2 = 0x102;

TEST(PoolTest, ZeroBytesAndNullFree) {
  FakeBackend B;
  DevicePool P(B, 0);
  EXPECT_EQ(P.allocate(0, S1), nullptr);
  EXPECT_TRUE(P.deallocate(nullptr, S1));
  EXPECT_EQ(P.stats().Allocations, 0u);
}

TEST(PoolTest, RoundsAndAligns) {
  FakeBackend B;
  DevicePool P(B, 0);
  void *A = P.allocate(1, S1);
  void *C = P.allocate(1000, S1);
  ASSERT_NE(A, nullptr);
  ASSERT_NE(C, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A) % kPoolRounding, 0u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(C) % kPoolRounding, 0u);
  EXPECT_EQ(P.blockSize(A), 512u);
  EXPECT_EQ(P.blockSize(C), 1024u);
  // Small requests share one 2 MiB segment (splitting).
  EXPECT_EQ(P.stats().Segments, 1u);
  EXPECT_EQ(P.stats().BytesReserved, 2 * kMiB);
}

TEST(PoolTest, SameStreamReuseIsImmediate) {
  FakeBackend B({.EventsCompleteAtOnce = false});
  DevicePool P(B, 0);
  void *A = P.allocate(4096, S1);
  ASSERT_TRUE(P.deallocate(A, S1));
  EXPECT_EQ(P.allocate(4096, S1), A);
  EXPECT_TRUE(B.calls(FakeCallKind::RecordEvent).empty());
}

TEST(PoolTest, CrossStreamReuseWaitsForEvent) {
  FakeBackend B({.EventsCompleteAtOnce = false});
  DevicePool P(B, 0);
  void *A = P.allocate(64 * kMiB, S1); // its own segment
  ASSERT_NE(A, nullptr);
  ASSERT_TRUE(P.deallocate(A, S1));
  // Another stream must not get A while S1's work may still use it.
  void *C = P.allocate(64 * kMiB, S2);
  ASSERT_NE(C, nullptr);
  EXPECT_NE(C, A);
  auto Records = B.calls(FakeCallKind::RecordEvent);
  ASSERT_EQ(Records.size(), 1u);
  EXPECT_EQ(Records[0].Stream, S1);
  // Once the event recorded on S1 completes, S2 may reuse A.
  B.completeEvents();
  ASSERT_TRUE(P.deallocate(C, S2));
  void *D = P.allocate(64 * kMiB, S2);
  EXPECT_TRUE(D == C || D == A);
  void *E = P.allocate(64 * kMiB, S2);
  EXPECT_TRUE(E == C || E == A);
  EXPECT_NE(D, E);
  EXPECT_GE(P.stats().CrossStreamReuses, 1u);
  EXPECT_EQ(P.stats().Segments, 2u);
}

TEST(PoolTest, CoalescesAdjacentFreeBlocks) {
  FakeBackend B;
  DevicePool P(B, 0);
  std::vector<void *> Quarters;
  for (int I = 0; I < 4; ++I)
    Quarters.push_back(P.allocate(kMiB / 2, S1));
  EXPECT_EQ(P.stats().Segments, 1u);
  for (void *Q : Quarters)
    ASSERT_TRUE(P.deallocate(Q, S1));
  // 1.5 MiB fits only in the merged segment.
  void *Big = P.allocate(3 * kMiB / 2, S1);
  EXPECT_EQ(Big, Quarters[0]);
  EXPECT_EQ(P.stats().Segments, 1u);
}

TEST(PoolTest, DoesNotCoalesceAcrossStreams) {
  FakeBackend B({.EventsCompleteAtOnce = false});
  DevicePool P(B, 0);
  void *A = P.allocate(kMiB / 2, S1);
  void *C = P.allocate(kMiB / 2, S1);
  void *D = P.allocate(kMiB, S1);
  ASSERT_TRUE(P.deallocate(A, S1));
  ASSERT_TRUE(P.deallocate(C, S2));
  ASSERT_TRUE(P.deallocate(D, S1));
  // A and C are adjacent but freed on different streams: a 1 MiB request on S1
  // must not get A (it would cover C, which S2 may still use).
  void *E = P.allocate(kMiB, S1);
  EXPECT_NE(E, A);
}

TEST(PoolTest, UnknownPointer) {
  FakeBackend B;
  DevicePool P(B, 0);
  int X = 0;
  EXPECT_FALSE(P.deallocate(&X, S1));
  void *A = P.allocate(100, S1);
  EXPECT_TRUE(P.deallocate(A, S1));
  EXPECT_FALSE(P.deallocate(A, S1)); // double free is refused, not corrupting
}

TEST(PoolTest, FailureIsReportedNotFatal) {
  FakeBackend B;
  B.setManagedLimit(4 * kMiB);
  DevicePool P(B, 0);
  EXPECT_EQ(P.allocate(64 * kMiB, S1), nullptr);
  EXPECT_EQ(P.stats().Failures, 1u);
  EXPECT_NE(P.allocate(kMiB / 4, S1), nullptr);
}

TEST(PoolTest, ReleasesCachedSegmentsUnderPressure) {
  FakeBackend B;
  B.setManagedLimit(64 * kMiB);
  DevicePool P(B, 0);
  void *A = P.allocate(40 * kMiB, S1);
  ASSERT_NE(A, nullptr);
  ASSERT_TRUE(P.deallocate(A, S1));
  // 50 MiB does not fit beside the cached 40 MiB segment: the pool gives it back first.
  void *C = P.allocate(50 * kMiB, S1);
  EXPECT_NE(C, nullptr);
  EXPECT_EQ(P.stats().Segments, 1u);
}

TEST(PoolTest, LiveBlocksNeverOverlap) {
  FakeBackend B;
  DevicePool P(B, 0);
  std::map<uintptr_t, uint64_t> Live;
  uint64_t Seed = 12345;
  auto Rand = [&] { return Seed = Seed * 6364136223846793005ULL + 1442695040888963407ULL; };
  std::vector<std::pair<void *, StreamHandle>> Held;
  for (int I = 0; I < 20000; ++I) {
    if (Held.empty() || Rand() % 3 != 0) {
      uint64_t Bytes = 1 + (Rand() >> 20) % (3 * kMiB);
      StreamHandle S = 0x100 + (Rand() >> 7) % 3;
      void *Ptr = P.allocate(Bytes, S);
      ASSERT_NE(Ptr, nullptr);
      uintptr_t A = reinterpret_cast<uintptr_t>(Ptr);
      auto It = Live.upper_bound(A);
      if (It != Live.end()) {
        ASSERT_LE(A + Bytes, It->first) << "overlaps the next live block";
      }
      if (It != Live.begin()) {
        ASSERT_LE(std::prev(It)->first + std::prev(It)->second, A) << "overlaps the previous";
      }
      Live[A] = Bytes;
      Held.push_back({Ptr, S});
    } else {
      size_t K = (Rand() >> 9) % Held.size();
      Live.erase(reinterpret_cast<uintptr_t>(Held[K].first));
      ASSERT_TRUE(P.deallocate(Held[K].first, Held[K].second));
      Held[K] = Held.back();
      Held.pop_back();
    }
  }
}

} // namespace
