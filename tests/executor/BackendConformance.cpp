//===- BackendConformance.cpp - The contract every backend keeps -----------===//
//
// Value-parameterised over ConformanceTarget (BackendConformance.h); each
// test binary instantiates it for one backend. Nothing here knows which
// backend it runs on: the backend's own calls (managed memory, streams and
// events, migrations) and the executor over it (arena placements, the pool
// fallback, plan replay, the budget, running unplanned) must behave the same
// on all of them. The tests never read or write the memory they get (the
// simulator's addresses are not backed).
//
//===----------------------------------------------------------------------===//
#include "BackendConformance.h"

#include "ExecutorTestSupport.h"

#include "deepum/executor/Executor.h"

#include <algorithm>
#include <string>
#include <vector>

using namespace deepum::executor;
using deepum::test::BackendConformance;
using deepum::test::ConformanceTarget;
using deepum::test::kBlock;
using deepum::test::kMiB;
using deepum::test::PlanBuilder;
namespace v1 = deepum::v1;

namespace {

using Where = ConformanceTarget::Where;

bool disjoint(uintptr_t A, uint64_t ABytes, uintptr_t B, uint64_t BBytes) {
  return A + ABytes <= B || B + BBytes <= A;
}

deepum_stats_t statsOf(const Executor &E) {
  deepum_stats_t S{};
  EXPECT_TRUE(E.stats(0, S));
  return S;
}

std::string describe(const BackendStatus &S) { return std::string(S.Call) + ": " + S.Message; }

/// The executor configuration the suite uses on this target.
ExecutorConfig configFor(ConformanceTarget &T) {
  ExecutorConfig C;
  C.TrackLaunches = T.tracksLaunches();
  return C;
}

// --- The backend's own calls -------------------------------------------------

TEST_P(BackendConformance, ManagedAllocationsAreDistinctAndFreed) {
  void *A = nullptr, *B = nullptr;
  BackendStatus S = backend().allocateManaged(0, 4 * kMiB, &A);
  ASSERT_TRUE(S.ok()) << describe(S);
  S = backend().allocateManaged(0, 2 * kMiB, &B);
  ASSERT_TRUE(S.ok()) << describe(S);
  ASSERT_NE(A, nullptr);
  ASSERT_NE(B, nullptr);
  EXPECT_TRUE(
      disjoint(reinterpret_cast<uintptr_t>(A), 4 * kMiB, reinterpret_cast<uintptr_t>(B), 2 * kMiB));
  EXPECT_TRUE(backend().freeManaged(0, A).ok());
  EXPECT_TRUE(backend().freeManaged(0, B).ok());
}

TEST_P(BackendConformance, EventsRecordedOnAStreamComplete) {
  StreamHandle S1 = 0, S2 = 0;
  ASSERT_TRUE(backend().createStream(0, &S1).ok());
  ASSERT_TRUE(backend().createStream(0, &S2).ok());
  EventHandle E = 0;
  ASSERT_TRUE(backend().createEvent(0, &E).ok());
  EXPECT_TRUE(backend().recordEvent(0, E, S1).ok());
  EXPECT_TRUE(backend().streamWaitEvent(0, S2, E).ok());
  Target->synchronize();
  EXPECT_EQ(backend().queryEvent(0, E), EventState::Complete);
  EXPECT_TRUE(backend().destroyEvent(0, E).ok());
}

// The launch-time guard's wait time (guard.wait_ns) is read this way.
TEST_P(BackendConformance, TimedEventsMeasureTheWorkBetweenThem) {
  void *P = nullptr;
  ASSERT_TRUE(backend().allocateManaged(0, 64 * kMiB, &P).ok());
  StreamHandle S = 0;
  ASSERT_TRUE(backend().createStream(0, &S).ok());
  EventHandle Start = 0, End = 0;
  ASSERT_TRUE(backend().createTimedEvent(0, &Start).ok());
  ASSERT_TRUE(backend().createTimedEvent(0, &End).ok());
  ASSERT_TRUE(backend().recordEvent(0, Start, S).ok());
  const MemRange R{reinterpret_cast<uintptr_t>(P), 64 * kMiB};
  BackendStatus St = backend().prefetchBatch(0, {&R, 1}, 0, S);
  EXPECT_TRUE(St.ok()) << describe(St);
  ASSERT_TRUE(backend().recordEvent(0, End, S).ok());
  Target->synchronize();
  uint64_t Ns = 0;
  if (!Target->timesEvents()) {
    EXPECT_FALSE(backend().elapsedNs(0, Start, End, Ns));
  } else {
    ASSERT_TRUE(backend().elapsedNs(0, Start, End, Ns));
    // 64 MiB over any link there is takes more than 100 us.
    EXPECT_GT(Ns, 100'000u);
    EXPECT_LT(Ns, 1'000'000'000u);
  }
  EXPECT_TRUE(backend().destroyEvent(0, Start).ok());
  EXPECT_TRUE(backend().destroyEvent(0, End).ok());
  EXPECT_TRUE(backend().freeManaged(0, P).ok());
}

TEST_P(BackendConformance, MigrationsAndAdviceAreAcceptedAndMoveTheRange) {
  void *P = nullptr;
  ASSERT_TRUE(backend().allocateManaged(0, 4 * kMiB, &P).ok());
  StreamHandle S = 0;
  ASSERT_TRUE(backend().createStream(0, &S).ok());
  const MemRange R{reinterpret_cast<uintptr_t>(P), 4 * kMiB};
  BackendStatus St = backend().prefetchBatch(0, {&R, 1}, 0, S);
  EXPECT_TRUE(St.ok()) << describe(St);
  Target->synchronize();
  const Where OnDevice = Target->location(R.Address, R.Bytes);
  St = backend().prefetchBatch(0, {&R, 1}, kHostLocation, S);
  EXPECT_TRUE(St.ok()) << describe(St);
  Target->synchronize();
  const Where OnHost = Target->location(R.Address, R.Bytes);
  for (MemAdvice A : {MemAdvice::SetPreferredLocationDevice, MemAdvice::UnsetPreferredLocation,
                      MemAdvice::SetReadMostly, MemAdvice::UnsetReadMostly}) {
    St = backend().advise(0, R, A);
    EXPECT_TRUE(St.ok()) << describe(St);
  }
  St = backend().discardBatch(0, {&R, 1}, S);
  EXPECT_TRUE(St.ok()) << describe(St);
  Target->synchronize();
  EXPECT_TRUE(backend().freeManaged(0, P).ok());
  if (OnDevice == Where::Unknown && OnHost == Where::Unknown) {
    RecordProperty("location", "unknown to this backend: not checked");
    return;
  }
  EXPECT_EQ(OnDevice, Where::Device);
  EXPECT_EQ(OnHost, Where::Host);
}

// --- The executor over the backend -------------------------------------------

TEST_P(BackendConformance, PlannedAllocationsGoToTheirArenaOffsetsOthersToThePool) {
  Executor E(backend(), configFor(*Target));
  PlanBuilder PB({10, 11, 12, 13});
  PB.place(0, 1 * kMiB, 0).place(1, 3 * kMiB, kBlock);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  ASSERT_NE(Base, 0u);
  StreamHandle S = 0;
  ASSERT_TRUE(backend().createStream(0, &S).ok());
  void *A = E.allocate(1 * kMiB, 0, S);
  void *B = E.allocate(3 * kMiB, 0, S);
  void *C = E.allocate(5000, 0, S); // the plan has no allocation 2
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A), Base);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(B), Base + kBlock);
  ASSERT_NE(C, nullptr);
  EXPECT_TRUE(disjoint(reinterpret_cast<uintptr_t>(C), 5000, Base, 16 * kBlock));
  deepum_stats_t St = statsOf(E);
  EXPECT_EQ(St.allocations, 3u);
  EXPECT_EQ(St.arena_placements, 2u);
  EXPECT_GE(St.bytes_in_use, 4 * kMiB + 5000);
  EXPECT_GE(St.bytes_reserved, 16 * kBlock);
  E.deallocate(A, 0, S);
  E.deallocate(B, 0, S);
  E.deallocate(C, 0, S);
  St = statsOf(E);
  EXPECT_EQ(St.frees, 3u);
  EXPECT_EQ(St.bytes_in_use, 0u);
  EXPECT_EQ(St.backend_errors, 0u);
}

TEST_P(BackendConformance, ReplayIssuesEveryKindOfActionWhereThePlanSays) {
  Executor E(backend(), configFor(*Target));
  PlanBuilder PB({10, 11, 12, 13});
  PB.action(v1::ACTION_KIND_PREFETCH, 1, 0, kBlock, 2)
      .action(v1::ACTION_KIND_EVICT, 3, 0, kBlock, 2)
      .action(v1::ACTION_KIND_DISCARD, 3, 2 * kBlock, kBlock, 2)
      .chain(2, {0, 2})
      .fingerprinted();
  {
    auto *A = PB.proto().add_actions();
    A->set_kind(v1::ACTION_KIND_ADVISE);
    A->set_position(3);
    A->set_advice(v1::ADVICE_SET_READ_MOSTLY);
    auto *Rg = A->add_ranges();
    Rg->set_offset(4 * kBlock);
    Rg->set_bytes(kBlock);
  }
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  StreamHandle S = 0;
  ASSERT_TRUE(backend().createStream(0, &S).ok());

  Target->launch(E, S, 10);
  EXPECT_EQ(statsOf(E).prefetch_batches, 0u) << "prefetched before position 1";
  Target->launch(E, S, 11);
  Target->synchronize();
  const Where Fetched = Target->location(Base, kBlock);
  Target->launch(E, S, 12);
  Target->launch(E, S, 13);
  Target->synchronize();
  const Where Evicted = Target->location(Base, kBlock);

  const deepum_stats_t St = statsOf(E);
  EXPECT_EQ(St.plan_active, 1u);
  EXPECT_EQ(St.launches_matched, 4u);
  EXPECT_EQ(St.prefetch_batches, 1u);
  EXPECT_EQ(St.prefetch_bytes, kBlock);
  EXPECT_EQ(St.evict_batches, 1u);
  EXPECT_EQ(St.evict_bytes, kBlock);
  EXPECT_EQ(St.discard_batches, 1u);
  EXPECT_EQ(St.discard_bytes, kBlock);
  EXPECT_EQ(St.advises, 1u);
  EXPECT_EQ(St.backend_errors, 0u);
  if (Fetched == Where::Unknown) {
    RecordProperty("location", "unknown to this backend: not checked");
    return;
  }
  EXPECT_EQ(Fetched, Where::Device);
  EXPECT_EQ(Evicted, Where::Host);
}

TEST_P(BackendConformance, TheBudgetBoundsModelledResidency) {
  Executor E(backend(), configFor(*Target));
  PlanBuilder PB({10, 11, 12, 13, 14, 15});
  for (uint32_t P = 0; P < 6; ++P)
    PB.chain(P, {P});
  const uint64_t Budget = 3 * kBlock;
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), Budget));
  StreamHandle S = 0;
  ASSERT_TRUE(backend().createStream(0, &S).ok());
  for (int It = 0; It < 2; ++It)
    for (uint64_t Id = 10; Id <= 15; ++Id)
      Target->launch(E, S, Id);
  Target->synchronize();
  DeviceReport R;
  ASSERT_TRUE(E.report(0, R));
  EXPECT_EQ(R.Stats.budget_bytes, Budget);
  EXPECT_LE(R.PeakResidentBytes, Budget);
  EXPECT_GT(R.Stats.budget_evictions, 0u);
  EXPECT_LE(R.Stats.resident_bytes, Budget);
  EXPECT_EQ(R.Stats.backend_errors, 0u);
}

TEST_P(BackendConformance, WithoutAPlanItIsAPoolingAllocatorThatIssuesNothing) {
  Executor E(backend(), configFor(*Target));
  StreamHandle S = 0;
  ASSERT_TRUE(backend().createStream(0, &S).ok());
  const std::vector<uint64_t> Sizes = {512, 1 * kMiB, 30 * kMiB};
  std::vector<void *> Ptrs;
  for (uint64_t Bytes : Sizes) {
    Ptrs.push_back(E.allocate(Bytes, 0, S));
    ASSERT_NE(Ptrs.back(), nullptr) << Bytes;
  }
  for (size_t I = 0; I < Ptrs.size(); ++I)
    for (size_t J = I + 1; J < Ptrs.size(); ++J)
      EXPECT_TRUE(disjoint(reinterpret_cast<uintptr_t>(Ptrs[I]), Sizes[I],
                           reinterpret_cast<uintptr_t>(Ptrs[J]), Sizes[J]));
  Target->launch(E, S, 10);
  Target->launch(E, S, 11);
  DeviceReport R;
  ASSERT_TRUE(E.report(0, R));
  EXPECT_EQ(R.Stats.plan_active, 0u);
  EXPECT_EQ(R.WhyNot.rfind("no plan", 0), 0u) << R.WhyNot;
  EXPECT_EQ(R.Stats.prefetch_batches + R.Stats.evict_batches + R.Stats.discard_batches, 0u);
  for (size_t I = 0; I < Ptrs.size(); ++I)
    E.deallocate(Ptrs[I], 0, S);
  // Same stream, same size: the pool hands the block back without a new segment.
  const uint64_t Reserved = statsOf(E).bytes_reserved;
  void *Again = E.allocate(1 * kMiB, 0, S);
  EXPECT_NE(Again, nullptr);
  EXPECT_EQ(statsOf(E).bytes_reserved, Reserved);
  E.deallocate(Again, 0, S);
  const deepum_stats_t St = statsOf(E);
  EXPECT_EQ(St.frees, 4u);
  EXPECT_EQ(St.bytes_in_use, 0u);
  EXPECT_EQ(St.backend_errors, 0u);
}

TEST_P(BackendConformance, EmptyAndImpossibleRequestsAreRefusedQuietly) {
  Executor E(backend(), configFor(*Target));
  EXPECT_EQ(E.allocate(0, 0, 0), nullptr);
  EXPECT_EQ(E.allocate(uint64_t{1} << 60, 0, 0), nullptr);
  E.deallocate(nullptr, 0, 0);
  EXPECT_EQ(statsOf(E).allocations, 0u);
}

TEST_P(BackendConformance, APlanForAnotherProgramTurnsOffAndAllocationGoesOn) {
  Executor E(backend(), configFor(*Target));
  PlanBuilder PB({10, 11, 12, 13});
  PB.action(v1::ACTION_KIND_PREFETCH, 1, 0, kBlock, 2);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  StreamHandle S = 0;
  ASSERT_TRUE(backend().createStream(0, &S).ok());
  for (uint64_t Id = 1000; Id < 1200; ++Id)
    Target->launch(E, S, Id);
  DeviceReport R;
  ASSERT_TRUE(E.report(0, R));
  EXPECT_EQ(R.Stats.plan_active, 0u);
  EXPECT_EQ(R.WhyNot.rfind("plan turned off", 0), 0u) << R.WhyNot;
  EXPECT_EQ(R.Stats.prefetch_batches, 0u);
  void *P = E.allocate(4096, 0, S);
  EXPECT_NE(P, nullptr);
  E.deallocate(P, 0, S);
}

} // namespace
