//===- ExecutorTest.cpp - Placements, actions, ordering, budget, failures --===//
#include "deepum/executor/Executor.h"
#include "deepum/executor/FakeBackend.h"
#include "deepum/executor/Log.h"

#include "ExecutorTestSupport.h"
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/format/PlanWire.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <fstream>
#include <numeric>

using namespace deepum::executor;
using deepum::test::kBlock;
using deepum::test::kMiB;
using deepum::test::PlanBuilder;
namespace v1 = deepum::v1;

namespace {
constexpr StreamHandle S1 = 0x101, S2 = 0x102;

deepum_stats_t statsOf(const Executor &E, int Device = 0) {
  deepum_stats_t S{};
  EXPECT_TRUE(E.stats(Device, S));
  return S;
}

ExecutorConfig noPlan() { return ExecutorConfig{}; }

TEST(ExecutorTest, WithoutPlanIsAPool) {
  FakeBackend B;
  Executor E(B, noPlan());
  void *A = E.allocate(1000, 0, S1);
  ASSERT_NE(A, nullptr);
  E.deallocate(A, 0, S1);
  EXPECT_EQ(E.allocate(1000, 0, S1), A);
  auto S = statsOf(E);
  EXPECT_EQ(S.allocations, 2u);
  EXPECT_EQ(S.frees, 1u);
  EXPECT_EQ(S.plan_active, 0u);
  EXPECT_EQ(S.launch_tracking, 1u);
  EXPECT_EQ(E.allocate(0, 0, S1), nullptr);
  EXPECT_EQ(E.allocate(10, kMaxDevices, S1), nullptr);
}

TEST(ExecutorTest, PlacesPlannedAllocationsEveryIteration) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({1, 2, 3});
  PB.place(0, 4 * kMiB, 0, true).place(1, kMiB, 4 * kMiB).place(2, 3 * kMiB, 6 * kMiB);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  ASSERT_NE(Base, 0u);
  void *Weights = E.allocate(4 * kMiB, 0, S1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Weights), Base);
  for (int It = 0; It < 3; ++It) {
    E.markIteration();
    void *A = E.allocate(kMiB, 0, S1);
    void *C = E.allocate(3 * kMiB, 0, S1);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(A), Base + 4 * kMiB);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(C), Base + 6 * kMiB);
    E.deallocate(A, 0, S1);
    E.deallocate(C, 0, S1);
  }
  auto S = statsOf(E);
  EXPECT_EQ(S.arena_placements, 7u);
  EXPECT_EQ(S.placement_misses, 0u);
  EXPECT_EQ(S.bytes_in_use, 4 * kMiB);
}

TEST(ExecutorTest, FallsBackWhenTheSequenceDeparts) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({1});
  PB.place(0, kMiB, 0).place(1, 2 * kMiB, 2 * kMiB).place(2, kMiB, 4 * kMiB);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  E.markIteration();
  void *A = E.allocate(kMiB, 0, S1); // seq 0: planned
  void *X = E.allocate(777, 0, S1);  // inserted: not planned
  void *C = E.allocate(kMiB, 0, S1); // seq 1 missing (2 MiB): found by lookahead as seq 2
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A), Base);
  EXPECT_FALSE(reinterpret_cast<uintptr_t>(X) >= Base &&
               reinterpret_cast<uintptr_t>(X) < Base + 16 * kBlock);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(C), Base + 4 * kMiB);
  EXPECT_EQ(statsOf(E).placement_misses, 1u);
}

/// What a first training step allocates, as in GPT-2 (bench/gpu/results,
/// call10): weights, then activations freed within the step interleaved with
/// the gradients and optimizer states that stay, all of one size. Calls 1, 3
/// and 5 stay; 2 and 4 are freed before the first iteration mark.
struct FirstStep {
  void *Weight, *Grad, *State;
};
FirstStep runFirstStep(Executor &E) {
  FirstStep F;
  F.Weight = E.allocate(4 * kMiB, 0, S1);     // call 1
  void *Act1 = E.allocate(4 * kMiB, 0, S1);   // call 2: freed in the step
  F.Grad = E.allocate(4 * kMiB, 0, S1);       // call 3
  void *Act2 = E.allocate(4 * kMiB, 0, S1);   // call 4: freed in the step
  E.deallocate(Act1, 0, S1);
  F.State = E.allocate(4 * kMiB, 0, S1);      // call 5
  E.deallocate(Act2, 0, S1);
  E.markIteration();
  return F;
}

PlanBuilder firstStepPlan(bool WithCalls) {
  PlanBuilder PB({1, 2});
  PB.place(0, 4 * kMiB, 0, true, WithCalls ? 1 : 0)
      .place(1, 4 * kMiB, 4 * kMiB, true, WithCalls ? 3 : 0)
      .place(2, 4 * kMiB, 8 * kMiB, true, WithCalls ? 5 : 0)
      .place(3, 4 * kMiB, 12 * kMiB);
  return PB;
}

TEST(ExecutorTest, PlacesWhatTheFirstStepKeepsByCallNotBySize) {
  FakeBackend B;
  Executor E(B, noPlan());
  ASSERT_TRUE(E.setPlan(0, firstStepPlan(true).compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  FirstStep F = runFirstStep(E);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(F.Weight), Base);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(F.Grad), Base + 4 * kMiB);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(F.State), Base + 8 * kMiB);
  // The iteration's own allocation still finds its placement.
  void *Act = E.allocate(4 * kMiB, 0, S1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Act), Base + 12 * kMiB);
  auto S = statsOf(E);
  EXPECT_EQ(S.arena_placements, 4u);
  EXPECT_EQ(S.placement_misses, 0u); // the activations were never planned: no miss
  // Sizes alone are ambiguous: without the call indices the first step's
  // first activation takes the gradient's placement, and the gradient and
  // the optimizer state stay outside the arena for the whole run.
  FakeBackend B2;
  Executor E2(B2, noPlan());
  ASSERT_TRUE(E2.setPlan(0, firstStepPlan(false).compiled(), 0));
  FirstStep G = runFirstStep(E2);
  const uintptr_t Base2 = E2.arenaBase(0);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(G.Weight), Base2);
  EXPECT_NE(reinterpret_cast<uintptr_t>(G.Grad), Base2 + 4 * kMiB);
  EXPECT_NE(reinterpret_cast<uintptr_t>(G.State), Base2 + 8 * kMiB);
}

/// Persistent allocations of distinct sizes with an activation among them,
/// as profiled (calls 1-9); with `Sizes`, the plan lists every call's size.
PlanBuilder departingPlan(bool Sizes) {
  const std::vector<uint64_t> MiBs = {1, 2, 3, 5, 1, 2, 3, 6, 7}; // call 4: the activation
  PlanBuilder PB({1, 2});
  uint64_t Offset = 0;
  uint32_t Seq = 0;
  std::vector<uint64_t> Bytes;
  for (size_t I = 0; I < MiBs.size(); ++I) {
    Bytes.push_back(MiBs[I] * kMiB);
    if (I == 3)
      continue;
    PB.place(Seq++, MiBs[I] * kMiB, Offset, true, I + 1);
    Offset += MiBs[I] * kMiB;
  }
  if (Sizes)
    PB.prologueCalls(Bytes);
  return PB;
}

TEST(ExecutorTest, CallsThatDepartFromTheProfiledOnesAreFollowedBySize) {
  // The replay makes one call more before everything (an autotuner's 8 MiB
  // workspace, say). From there each call index names the profiled call
  // before it. With the profiled sizes in the plan, the first call departs,
  // the next six agree at one call's offset, and from the seventh on the
  // allocations find their placements again; the ones between go to the
  // pool. Without the sizes every placement is missed.
  for (bool Sizes : {true, false}) {
    SCOPED_TRACE(Sizes ? "with the profiled sizes" : "without them");
    FakeBackend B;
    Executor E(B, noPlan());
    ASSERT_TRUE(E.setPlan(0, departingPlan(Sizes).compiled(), 0));
    const uintptr_t Base = E.arenaBase(0);
    void *Workspace = E.allocate(8 * kMiB, 0, S1); // the call the profile did not make
    std::vector<void *> Got;
    for (uint64_t MiB : {1, 2, 3, 5, 1, 2, 3, 6, 7})
      Got.push_back(E.allocate(MiB * kMiB, 0, S1));
    auto InArena = [&](void *P) {
      return reinterpret_cast<uintptr_t>(P) >= Base &&
             reinterpret_cast<uintptr_t>(P) < Base + 16 * kBlock;
    };
    EXPECT_FALSE(InArena(Workspace));
    EXPECT_FALSE(InArena(Got[3])); // the activation, never planned
    if (Sizes) {
      for (size_t I : {0, 1, 2, 4})
        EXPECT_FALSE(InArena(Got[I])) << I; // while the six calls were confirming
      EXPECT_EQ(reinterpret_cast<uintptr_t>(Got[5]), Base + 7 * kMiB); // G1: after W 1+2+3 and G0 1
      EXPECT_EQ(reinterpret_cast<uintptr_t>(Got[6]), Base + 9 * kMiB); // G2
      EXPECT_EQ(reinterpret_cast<uintptr_t>(Got[7]), Base + 12 * kMiB); // S0
      EXPECT_EQ(reinterpret_cast<uintptr_t>(Got[8]), Base + 18 * kMiB); // S1
      EXPECT_EQ(statsOf(E).arena_placements, 4u);
    } else {
      for (void *P : Got)
        EXPECT_FALSE(InArena(P));
      EXPECT_EQ(statsOf(E).arena_placements, 0u);
    }
  }
}

TEST(ExecutorTest, TheIterationAfterThePrologueStartsAtItsFirstPlacementWithoutAMark) {
  // The launch sequence alone marks iterations (no deepum_step): once the
  // last persistent call is past, the next call is the iteration's first.
  FakeBackendOptions Two;
  Two.Devices = 2;
  FakeBackend B(Two);
  Executor E(B, noPlan());
  ASSERT_TRUE(E.setPlan(0, firstStepPlan(true).compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  for (int Call = 1; Call <= 5; ++Call)
    (void)E.allocate(4 * kMiB, 0, S1);
  void *Act = E.allocate(4 * kMiB, 0, S1); // call 6: sequence 3
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Act), Base + 12 * kMiB);
  // Calls count on every device: the profiler records one sequence per process.
  uint64_t Call = 0;
  void *Other = E.allocate(kMiB, 1, S1, &Call);
  EXPECT_NE(Other, nullptr);
  EXPECT_EQ(Call, 7u);
}

TEST(ExecutorTest, AFirstStepThatDepartsFromTheProfileFallsBackCallByCall) {
  FakeBackend B;
  Executor E(B, noPlan());
  ASSERT_TRUE(E.setPlan(0, firstStepPlan(true).compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  void *Weight = E.allocate(4 * kMiB, 0, S1);   // call 1, as profiled
  void *Other = E.allocate(kMiB, 0, S1);        // call 2, a size the profile did not see
  void *Grad = E.allocate(2 * kMiB, 0, S1);     // call 3: planned as 4 MiB, so not placed
  void *State = E.allocate(4 * kMiB, 0, S1);    // call 4: not a planned call
  void *Late = E.allocate(4 * kMiB, 0, S1);     // call 5: planned, placed
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Weight), Base);
  for (void *P : {Other, Grad, State}) {
    ASSERT_NE(P, nullptr);
    EXPECT_FALSE(reinterpret_cast<uintptr_t>(P) >= Base &&
                 reinterpret_cast<uintptr_t>(P) < Base + 16 * kBlock);
  }
  EXPECT_EQ(reinterpret_cast<uintptr_t>(Late), Base + 8 * kMiB);
  EXPECT_EQ(statsOf(E).placement_misses, 1u); // call 3 only
}

/// createStream fails once, at its Nth call; counts every call.
class StreamFailingBackend : public deepum::test::ForwardingBackend {
public:
  explicit StreamFailingBackend(int At) : FailAt(At) {}
  BackendStatus createStream(int D, StreamHandle *O) override {
    if (++Calls == FailAt)
      return BackendStatus::failure(2, "cudaStreamCreateWithFlags", "out of memory");
    return ForwardingBackend::createStream(D, O);
  }
  int FailAt, Calls = 0;
};

TEST(ExecutorTest, AStreamThatCannotBeMadeTurnsThePlanOffAndARetryMakesOnlyTheMissingOnes) {
  StreamFailingBackend B(3); // the discard stream
  Executor E(B, noPlan());
  PlanBuilder PB({1, 2});
  PB.place(0, kMiB, 0);
  EXPECT_FALSE(E.setPlan(0, PB.compiled(), 0));
  EXPECT_EQ(B.Calls, 3);
  void *P = E.allocate(kMiB, 0, S1); // training goes on, unplanned
  EXPECT_NE(P, nullptr);
  E.deallocate(P, 0, S1);
  // Again: the two streams made before are used, not made anew.
  EXPECT_TRUE(E.setPlan(0, PB.compiled(), 0));
  EXPECT_EQ(B.Calls, 5);
}

TEST(ExecutorTest, NeverPlacesOverLiveData) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({1});
  PB.place(0, 2 * kMiB, 0);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  E.markIteration();
  void *A = E.allocate(2 * kMiB, 0, S1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A), Base);
  // The program kept A past the iteration: the next iteration's seq 0 must not get it.
  E.markIteration();
  void *C = E.allocate(2 * kMiB, 0, S1);
  EXPECT_NE(C, A);
  EXPECT_NE(C, nullptr);
}

TEST(ExecutorTest, ArenaReuseAcrossStreamsWaitsForEvent) {
  FakeBackend B({.EventsCompleteAtOnce = false});
  Executor E(B, noPlan());
  PlanBuilder PB({1});
  PB.place(0, 2 * kMiB, 0);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  E.markIteration();
  void *A = E.allocate(2 * kMiB, 0, S1);
  E.deallocate(A, 0, S1);
  E.markIteration();
  void *C = E.allocate(2 * kMiB, 0, S2); // S1 may still use the range
  EXPECT_NE(reinterpret_cast<uintptr_t>(C), Base);
  E.deallocate(C, 0, S2);
  B.completeEvents();
  E.markIteration();
  void *D = E.allocate(2 * kMiB, 0, S2);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(D), Base);
}

TEST(ExecutorTest, IssuesActionsAtTheirPositions) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11, 12, 13});
  PB.action(v1::ACTION_KIND_PREFETCH, 0, 2 * kBlock, kBlock, 2)
      .action(v1::ACTION_KIND_PREFETCH, 0, 4 * kBlock, kBlock, 3)
      .action(v1::ACTION_KIND_EVICT, 2, 2 * kBlock, kBlock, 2)
      .action(v1::ACTION_KIND_DISCARD, 3, 4 * kBlock, kBlock, 3);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  B.clearCalls();
  B.launch(0, S1, 10);
  auto Prefetches = B.calls(FakeCallKind::Prefetch);
  ASSERT_EQ(Prefetches.size(), 1u); // one batch for the position
  ASSERT_EQ(Prefetches[0].Ranges.size(), 2u);
  EXPECT_EQ(Prefetches[0].Ranges[0].Address, Base + 2 * kBlock);
  EXPECT_EQ(Prefetches[0].Location, 0);
  const StreamHandle Action = Prefetches[0].Stream;
  EXPECT_NE(Action, S1);
  B.launch(0, S1, 11);
  B.clearCalls();
  B.launch(0, S1, 12);
  // The eviction is ordered after the compute stream: record on it, and the
  // release and discard streams wait (not the prefetch stream: a waiting
  // release must not hold back later prefetches); evict on the release
  // stream, then its mark: an event there that a later prefetch needing its
  // room waits for.
  auto Calls = B.calls();
  ASSERT_EQ(Calls.size(), 5u);
  EXPECT_EQ(Calls[0].Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ(Calls[0].Stream, S1);
  EXPECT_EQ(Calls[1].Kind, FakeCallKind::StreamWaitEvent);
  EXPECT_EQ(Calls[2].Kind, FakeCallKind::StreamWaitEvent);
  const StreamHandle Release = Calls[1].Stream, Discard = Calls[2].Stream;
  for (StreamHandle S : {Release, Discard}) {
    EXPECT_NE(S, Action);
    EXPECT_NE(S, S1);
  }
  EXPECT_NE(Release, Discard);
  EXPECT_EQ(Calls[1].Event, Calls[0].Event);
  EXPECT_EQ(Calls[2].Event, Calls[0].Event);
  EXPECT_EQ(Calls[3].Kind, FakeCallKind::Prefetch);
  EXPECT_EQ(Calls[3].Location, kHostLocation);
  EXPECT_EQ(Calls[3].Stream, Release);
  EXPECT_EQ(Calls[4].Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ(Calls[4].Stream, Release);
  B.clearCalls();
  B.launch(0, S1, 13);
  // The discard goes on its own stream: behind no write-back.
  auto Discards = B.calls(FakeCallKind::Discard);
  ASSERT_EQ(Discards.size(), 1u);
  EXPECT_EQ(Discards[0].Ranges[0].Address, Base + 4 * kBlock);
  EXPECT_EQ(Discards[0].Stream, Discard);
  auto S = statsOf(E);
  EXPECT_EQ(S.launches_matched, 4u);
  EXPECT_EQ(S.prefetch_batches, 1u);
  EXPECT_EQ(S.evict_batches, 1u);
  EXPECT_EQ(S.discard_batches, 1u);
  EXPECT_EQ(S.iterations, 1u);
}

/// The first call of kind `K` to location `Location` (a prefetch's), or of
/// kind `K` when `Location` is kAnyLocation.
constexpr int kAnyLocation = -2;
std::vector<FakeCall>::const_iterator firstCall(const std::vector<FakeCall> &Calls,
                                                FakeCallKind K, int Location = kAnyLocation) {
  return std::find_if(Calls.begin(), Calls.end(), [&](const FakeCall &C) {
    return C.Kind == K && (Location == kAnyLocation || C.Location == Location);
  });
}

/// Positions 10, 11, 12 touching blocks 0, 1 and 2; at position 2 block 0
/// leaves (last used by position 0) and block 2 is prefetched. Releases go
/// before the launch and its prefetch; what the prefetch waits for depends on
/// the budget. Returns the backend calls of launch 12's hook.
std::vector<FakeCall> releaseThenPrefetch(uint64_t BudgetBlocks, bool EventsComplete = false) {
  FakeBackend B({.EventsCompleteAtOnce = EventsComplete});
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11, 12});
  PB.chain(0, {0})
      .chain(1, {1})
      .chain(2, {2})
      .action(v1::ACTION_KIND_PREFETCH, 2, 2 * kBlock, kBlock, 2)
      .action(v1::ACTION_KIND_EVICT, 2, 0, kBlock, 0);
  EXPECT_TRUE(E.setPlan(0, PB.compiled(), BudgetBlocks * kBlock));
  B.launch(0, S1, 10);
  B.launch(0, S1, 11);
  B.clearCalls();
  uint64_t Id = 12;
  E.launchBegin(0, S1, &Id, 1); // the plan: "issue when launch 2 is observed, before it runs"
  std::vector<FakeCall> Calls = B.calls();
  E.launchEnd(0, S1);
  return Calls;
}

TEST(ExecutorTest, APrefetchWaitsForTheReleasesWhoseRoomItNeeds) {
  // Budget of two blocks: block 1 stays and block 2 comes in, so block 0 must
  // have left first. The release and discard streams wait for the compute
  // stream; evict, mark (an event); then the prefetch stream waits for that mark.
  auto Calls = releaseThenPrefetch(2);
  ASSERT_EQ(Calls.size(), 7u);
  EXPECT_EQ(Calls[0].Kind, FakeCallKind::RecordEvent); // on the compute stream
  EXPECT_EQ(Calls[0].Stream, S1);
  EXPECT_EQ(Calls[1].Kind, FakeCallKind::StreamWaitEvent);
  EXPECT_EQ(Calls[2].Kind, FakeCallKind::StreamWaitEvent);
  const StreamHandle Release = Calls[1].Stream;
  EXPECT_EQ(Calls[3].Kind, FakeCallKind::Prefetch);
  EXPECT_EQ(Calls[3].Location, kHostLocation);
  EXPECT_EQ(Calls[3].Stream, Release);
  EXPECT_EQ(Calls[4].Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ(Calls[4].Stream, Release);
  EXPECT_EQ(Calls[5].Kind, FakeCallKind::StreamWaitEvent);
  EXPECT_EQ(Calls[5].Event, Calls[4].Event);
  EXPECT_EQ(Calls[6].Kind, FakeCallKind::Prefetch);
  EXPECT_EQ(Calls[6].Location, 0);
  EXPECT_EQ(Calls[6].Stream, Calls[5].Stream);
  EXPECT_NE(Calls[6].Stream, Release);
}

TEST(ExecutorTest, APrefetchWithRoomBesideTheLeavingBlocksDoesNotWait) {
  // Budget of three blocks: blocks 1 and 2 fit beside block 0 still leaving,
  // so the prefetch does not wait behind its write-back (libdeepum made every
  // prefetch wait for all earlier releases; on an H100 write-backs move at a
  // fifth of the fetch rate, docs/results/gpu.md).
  auto Calls = releaseThenPrefetch(3);
  ASSERT_EQ(Calls.size(), 6u);
  EXPECT_EQ(Calls[3].Kind, FakeCallKind::Prefetch);
  EXPECT_EQ(Calls[3].Location, kHostLocation);
  EXPECT_EQ(Calls[4].Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ(Calls[5].Kind, FakeCallKind::Prefetch);
  EXPECT_EQ(Calls[5].Location, 0);
  for (const FakeCall &C : Calls)
    EXPECT_FALSE(C.Kind == FakeCallKind::StreamWaitEvent && C.Stream == Calls[5].Stream);
}

/// PB's plan for launches 10, 11 and 12 set with a budget of `BudgetBlocks`;
/// the first two played, then the backend calls of the third.
std::vector<FakeCall> callsOfTheThirdLaunch(FakeBackend &B, Executor &E, PlanBuilder &PB,
                                            uint64_t BudgetBlocks) {
  EXPECT_TRUE(E.setPlan(0, PB.compiled(), BudgetBlocks * kBlock));
  B.launch(0, S1, 10);
  B.launch(0, S1, 11);
  B.clearCalls();
  B.launch(0, S1, 12);
  return B.calls();
}

TEST(ExecutorTest, EvictionsGoInCallsOfAFewBlocksAndAPrefetchWaitsOnlyForThoseItNeeds) {
  // Launch 10 uses twenty blocks, launch 11 one more; at launch 12 the twenty
  // leave (one range of the plan) and another block comes in, with a budget
  // of 21 blocks. The twenty go in calls of at most kEvictionCallBlocks
  // blocks, each with its mark, wherever the range starts; the prefetch
  // needs one block of room, which the first call makes: it waits for that
  // call's mark only (with one call for the twenty it waited for all of them
  // to be written back).
  ASSERT_EQ(deepum::format::kEvictionCallBlocks, 8u);
  for (uint64_t Start : {uint64_t{0}, uint64_t{5}}) {
    SCOPED_TRACE(Start);
    FakeBackend B({.EventsCompleteAtOnce = false});
    Executor E(B, noPlan());
    std::vector<uint64_t> First(20);
    std::iota(First.begin(), First.end(), Start);
    PlanBuilder PB({10, 11, 12}, 32 * kBlock);
    PB.chain(0, First)
        .chain(1, {Start + 20})
        .chain(2, {Start + 21})
        .action(v1::ACTION_KIND_PREFETCH, 2, (Start + 21) * kBlock, kBlock, 2)
        .action(v1::ACTION_KIND_EVICT, 2, Start * kBlock, 20 * kBlock, 0);
    const std::vector<FakeCall> Calls = callsOfTheThirdLaunch(B, E, PB, 21);
    std::vector<uint64_t> EvictedBlocks;
    std::vector<EventHandle> Marks;
    uint64_t Next = 0; // the calls cover the range in order, without a gap
    for (size_t I = 0; I < Calls.size(); ++I)
      if (Calls[I].Kind == FakeCallKind::Prefetch && Calls[I].Location == kHostLocation) {
        uint64_t Bytes = 0;
        for (const MemRange &R : Calls[I].Ranges) {
          if (Next) {
            EXPECT_EQ(R.Address, Next);
          }
          Next = R.Address + R.Bytes;
          Bytes += R.Bytes;
        }
        EXPECT_EQ(Calls[I].Ranges.size(), 1u); // one range: the blocks are adjacent
        EvictedBlocks.push_back(Bytes / kBlock);
        ASSERT_LT(I + 1, Calls.size());
        EXPECT_EQ(Calls[I + 1].Kind, FakeCallKind::RecordEvent); // the call's mark
        EXPECT_EQ(Calls[I + 1].Stream, Calls[I].Stream);
        Marks.push_back(Calls[I + 1].Event);
      }
    EXPECT_EQ(EvictedBlocks, (std::vector<uint64_t>{8, 8, 4}));
    auto Fetch = firstCall(Calls, FakeCallKind::Prefetch, 0);
    ASSERT_NE(Fetch, Calls.end());
    ASSERT_EQ(Marks.size(), 3u);
    std::vector<EventHandle> Waited;
    for (auto It = Calls.begin(); It != Fetch; ++It)
      if (It->Kind == FakeCallKind::StreamWaitEvent && It->Stream == Fetch->Stream)
        Waited.push_back(It->Event);
    EXPECT_EQ(Waited, (std::vector<EventHandle>{Marks[0]}));
  }
}

TEST(ExecutorTest, ALongPrefetchGoesAsItsRoomComesFree) {
  // Launch 10 uses 24 blocks, launch 11 one more; at launch 12 the 24 leave
  // (in calls of kEvictionCallBlocks, each with its mark) and 24 others come
  // in as one range of the plan. With a budget of 25 blocks each piece of
  // kPrefetchRoomBlocks waits only for the mark that makes its room, so the
  // first blocks arrive while the last are still written back (one call that
  // waited for all three marks held them behind the last write-back). With
  // room for all, the range is one range of one call, as the plan gave it.
  ASSERT_EQ(deepum::format::kEvictionCallBlocks, 8u);
  ASSERT_EQ(deepum::format::kPrefetchRoomBlocks, 8u);
  for (uint64_t Budget : {uint64_t{25}, uint64_t{49}}) {
    SCOPED_TRACE(Budget);
    FakeBackend B({.EventsCompleteAtOnce = false});
    Executor E(B, noPlan());
    std::vector<uint64_t> Leaving(24), Coming(24);
    std::iota(Leaving.begin(), Leaving.end(), 0);
    std::iota(Coming.begin(), Coming.end(), 32); // pieces are aligned in the arena
    PlanBuilder PB({10, 11, 12}, 64 * kBlock);
    PB.chain(0, Leaving)
        .chain(1, {24})
        .chain(2, Coming)
        .action(v1::ACTION_KIND_PREFETCH, 2, 32 * kBlock, 24 * kBlock, 2)
        .action(v1::ACTION_KIND_EVICT, 2, 0, 24 * kBlock, 0);
    const std::vector<FakeCall> Calls = callsOfTheThirdLaunch(B, E, PB, Budget);
    std::vector<EventHandle> Marks;
    for (size_t I = 0; I + 1 < Calls.size(); ++I)
      if (Calls[I].Kind == FakeCallKind::Prefetch && Calls[I].Location == kHostLocation)
        Marks.push_back(Calls[I + 1].Event);
    ASSERT_EQ(Marks.size(), 3u);
    // Each fetch call: its blocks, and the marks its stream waited for before it.
    std::vector<uint64_t> Blocks;
    std::vector<std::vector<EventHandle>> Waited;
    std::vector<EventHandle> SoFar;
    uint64_t Next = 32 * kBlock;
    for (const FakeCall &C : Calls) {
      if (C.Kind == FakeCallKind::StreamWaitEvent &&
          std::find(Marks.begin(), Marks.end(), C.Event) != Marks.end())
        SoFar.push_back(C.Event);
      if (C.Kind != FakeCallKind::Prefetch || C.Location != 0)
        continue;
      ASSERT_EQ(C.Ranges.size(), 1u);
      EXPECT_EQ(C.Ranges[0].Address - E.arenaBase(0), Next) << "in order, without a gap";
      Next += C.Ranges[0].Bytes;
      Blocks.push_back(C.Ranges[0].Bytes / kBlock);
      Waited.push_back(SoFar);
    }
    EXPECT_EQ(Next, 56 * kBlock);
    if (Budget == 49) {
      EXPECT_EQ(Blocks, (std::vector<uint64_t>{24}));
      EXPECT_EQ(Waited, (std::vector<std::vector<EventHandle>>{{}}));
      continue;
    }
    EXPECT_EQ(Blocks, (std::vector<uint64_t>{8, 8, 8}));
    EXPECT_EQ(Waited, (std::vector<std::vector<EventHandle>>{
                          {Marks[0]}, {Marks[0], Marks[1]}, {Marks[0], Marks[1], Marks[2]}}));
  }
}

/// Positions 10 and 11; at 11 two prefetches: block 1 for launch 11 itself
/// and block 2 for a later one. Returns launch 11's hook calls.
std::vector<FakeCall> ownAndLaterPrefetch(bool Wait) {
  FakeBackend B;
  ExecutorConfig C = noPlan();
  C.KernelsWaitForTheirPrefetches = Wait;
  Executor E(B, C);
  PlanBuilder PB({10, 11, 12});
  PB.chain(0, {0})
      .chain(1, {1})
      .chain(2, {2})
      .action(v1::ACTION_KIND_PREFETCH, 1, 2 * kBlock, kBlock, 2) // later first, in the plan
      .action(v1::ACTION_KIND_PREFETCH, 1, kBlock, kBlock, 1);
  EXPECT_TRUE(E.setPlan(0, PB.compiled(), 0));
  B.launch(0, S1, 10);
  B.clearCalls();
  uint64_t Id = 11;
  E.launchBegin(0, S1, &Id, 1);
  std::vector<FakeCall> Calls = B.calls();
  E.launchEnd(0, S1);
  return Calls;
}

TEST(ExecutorTest, AKernelWaitsForItsOwnPrefetchesOnlyWhenAsked) {
  // Asked: the kernel's own block goes first, alone, then the launching
  // stream waits for it; the later block follows, not waited for.
  auto Calls = ownAndLaterPrefetch(true);
  ASSERT_EQ(Calls.size(), 4u);
  EXPECT_EQ(Calls[0].Kind, FakeCallKind::Prefetch);
  ASSERT_EQ(Calls[0].Ranges.size(), 1u);
  const StreamHandle Action = Calls[0].Stream;
  EXPECT_EQ(Calls[1].Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ(Calls[1].Stream, Action);
  EXPECT_EQ(Calls[2].Kind, FakeCallKind::StreamWaitEvent);
  EXPECT_EQ(Calls[2].Stream, S1);
  EXPECT_EQ(Calls[2].Event, Calls[1].Event);
  EXPECT_EQ(Calls[3].Kind, FakeCallKind::Prefetch);
  ASSERT_EQ(Calls[3].Ranges.size(), 1u);
  EXPECT_LT(Calls[0].Ranges[0].Address, Calls[3].Ranges[0].Address); // block 1, then block 2
  // Not asked (the default): one call of both, and the kernel does not wait.
  Calls = ownAndLaterPrefetch(false);
  ASSERT_EQ(Calls.size(), 1u);
  EXPECT_EQ(Calls[0].Kind, FakeCallKind::Prefetch);
  EXPECT_EQ(Calls[0].Ranges.size(), 2u);
}

TEST(ExecutorTest, AKernelOnTheDefaultStreamWaitsForItsOwnPrefetchesToo) {
  // Every prefetch of the position is the kernel's own, and the kernel is on
  // stream 0 (PyTorch's default): one call, then the default stream waits.
  FakeBackend B;
  ExecutorConfig C = noPlan();
  C.KernelsWaitForTheirPrefetches = true;
  Executor E(B, C);
  PlanBuilder PB({10, 11});
  PB.chain(0, {0}).chain(1, {1}).action(v1::ACTION_KIND_PREFETCH, 1, kBlock, kBlock, 1);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  B.launch(0, 0, 10);
  B.clearCalls();
  uint64_t Id = 11;
  E.launchBegin(0, 0, &Id, 1);
  const auto Calls = B.calls();
  E.launchEnd(0, 0);
  ASSERT_EQ(Calls.size(), 3u);
  EXPECT_EQ(Calls[0].Kind, FakeCallKind::Prefetch);
  EXPECT_EQ(Calls[1].Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ(Calls[1].Stream, Calls[0].Stream);
  EXPECT_EQ(Calls[2].Kind, FakeCallKind::StreamWaitEvent);
  EXPECT_EQ(Calls[2].Stream, StreamHandle{0});
  EXPECT_EQ(Calls[2].Event, Calls[1].Event);
}

TEST(ExecutorTest, DiscardIsIssuedOnlyAfterTheLaunchIsEnqueued) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11});
  PB.action(v1::ACTION_KIND_DISCARD, 1, 0, kBlock, 1);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  B.launch(0, S1, 10);
  B.clearCalls();
  // Launch-begin alone (kernel not yet enqueued) must not discard.
  uint64_t Id = 11;
  E.launchBegin(0, S1, &Id, 1);
  EXPECT_TRUE(B.calls(FakeCallKind::Discard).empty());
  E.launchEnd(0, S1);
  EXPECT_EQ(B.calls(FakeCallKind::Discard).size(), 1u);
}

TEST(ExecutorTest, NeverDiscardsLiveData) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11});
  PB.place(0, kBlock, kBlock).action(v1::ACTION_KIND_DISCARD, 1, 0, 3 * kBlock, 1);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  E.markIteration();
  void *Live = E.allocate(kBlock, 0, S1); // the program keeps this tensor alive
  ASSERT_EQ(reinterpret_cast<uintptr_t>(Live), Base + kBlock);
  for (int I = 0; I < 50; ++I) {
    B.launch(0, S1, 10);
    B.launch(0, S1, 11);
  }
  for (const FakeCall &C : B.calls(FakeCallKind::Discard))
    for (const MemRange &R : C.Ranges)
      EXPECT_TRUE(R.Address + R.Bytes <= Base + kBlock || R.Address >= Base + 2 * kBlock)
          << "discarded live data";
  // Still live long after the planned discard: evicted instead (contents kept).
  bool EvictedLive = false;
  for (const FakeCall &C : B.calls(FakeCallKind::Prefetch))
    for (const MemRange &R : C.Ranges)
      EvictedLive |= C.Location == kHostLocation && R.Address == Base + kBlock;
  EXPECT_TRUE(EvictedLive);
  EXPECT_GE(statsOf(E).discards_kept_live, kBlock);
}

TEST(ExecutorTest, DiscardOfAStillAllocatedTensorWaitsForItsFree) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11, 12});
  PB.place(0, kBlock, 0).action(v1::ACTION_KIND_DISCARD, 1, 0, kBlock, 1);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  E.markIteration();
  void *T = E.allocate(kBlock, 0, S1);
  B.launch(0, S1, 10);
  B.launch(0, S1, 11); // last use; PyTorch frees the tensor only after this returns
  EXPECT_TRUE(B.calls(FakeCallKind::Discard).empty());
  E.deallocate(T, 0, S1);
  B.launch(0, S1, 12);
  auto D = B.calls(FakeCallKind::Discard);
  ASSERT_EQ(D.size(), 1u);
  EXPECT_EQ(D[0].Ranges[0].Address, E.arenaBase(0));
  EXPECT_EQ(statsOf(E).discards_kept_live, 0u);
}

TEST(ExecutorTest, NewOwnerWaitsForAnInFlightDiscard) {
  FakeBackend B({.EventsCompleteAtOnce = false});
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11});
  PB.place(0, kBlock, 0).action(v1::ACTION_KIND_DISCARD, 0, 0, kBlock, 0);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  B.launch(0, S1, 10); // discard of block 0 queued on the action stream
  B.clearCalls();
  E.markIteration();
  void *A = E.allocate(kBlock, 0, S1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A), E.arenaBase(0));
  auto Waits = B.calls(FakeCallKind::StreamWaitEvent);
  ASSERT_EQ(Waits.size(), 1u);
  EXPECT_EQ(Waits[0].Stream, S1);
}

TEST(ExecutorTest, KeepsResidencyUnderTheBudget) {
  FakeBackend B;
  Executor E(B, noPlan());
  // Six positions each touching their own block; budget of three blocks.
  PlanBuilder PB({1, 2, 3, 4, 5, 6});
  for (uint32_t P = 0; P < 6; ++P)
    PB.chain(P, {P});
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 3 * kBlock));
  for (int It = 0; It < 3; ++It)
    for (uint64_t Id = 1; Id <= 6; ++Id) {
      B.launch(0, S1, Id);
      EXPECT_LE(statsOf(E).resident_bytes, 3 * kBlock);
    }
  auto S = statsOf(E);
  EXPECT_GT(S.budget_evictions, 0u);
  EXPECT_EQ(S.budget_bytes, 3 * kBlock);
  // Belady: after position 3 (block 3), block 0 (needed first next iteration)
  // is kept over blocks 1 and 2.
  auto Resident = E.residentBlocks(0);
  EXPECT_TRUE(Resident[5]);
}

TEST(ExecutorTest, FailingCallsAreCountedAndLoggedOnce) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11});
  PB.action(v1::ACTION_KIND_PREFETCH, 0, 0, kBlock, 1);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  B.failNext(FakeCallKind::Prefetch, 3);
  LogCapture::start();
  for (int I = 0; I < 4; ++I) {
    B.launch(0, S1, 10);
    B.launch(0, S1, 11);
  }
  std::string Log = LogCapture::stop();
  auto S = statsOf(E);
  EXPECT_EQ(S.backend_errors, 3u);
  EXPECT_EQ(S.prefetch_batches, 1u);
  EXPECT_EQ(S.plan_active, 1u);
  size_t First = Log.find("cudaMemPrefetchBatchAsync failed");
  ASSERT_NE(First, std::string::npos) << Log;
  EXPECT_EQ(Log.find("cudaMemPrefetchBatchAsync failed", First + 1), std::string::npos);
}

TEST(ExecutorTest, BadPlanFileWarnsOnceAndRunsUnplanned) {
  std::string Dir = deepum::test::scratchDir("ExecutorBadPlan");
  std::string Path = Dir + "/bad.plan.pb";
  std::ofstream(Path) << "this is not a plan";
  FakeBackend B({.Devices = 2});
  ExecutorConfig C;
  C.PlanPaths[kAllDevices] = Path;
  LogCapture::start();
  Executor E(B, C);
  std::string Log = LogCapture::stop();
  EXPECT_FALSE(E.planActive(0));
  size_t First = Log.find("not using plan");
  ASSERT_NE(First, std::string::npos) << Log;
  EXPECT_EQ(Log.find("not using plan", First + 1), std::string::npos) << "warned twice: " << Log;
  EXPECT_NE(E.allocate(4096, 0, S1), nullptr);
}

TEST(ExecutorTest, LoadsAPlanFileFromConfiguration) {
  std::string Dir = deepum::test::scratchDir("ExecutorPlanFile");
  std::string Path = Dir + "/good.plan.pb";
  PlanBuilder PB({10, 11});
  PB.proto().mutable_metadata()->set_producer("test");
  if (auto Err = deepum::format::writePlan(PB.proto(), Path))
    GTEST_SKIP() << "the format library refuses this hand-made plan: "
                 << llvm::toString(std::move(Err));
  FakeBackend B;
  ExecutorConfig C;
  C.PlanPaths[0] = Path;
  Executor E(B, C);
  EXPECT_TRUE(E.planActive(0));
  EXPECT_NE(E.arenaBase(0), 0u);
}

TEST(ExecutorTest, SubscriberTakenKeepsWorkingAsAllocator) {
  FakeBackend B;
  B.refuseTracking("another tool holds the CUPTI subscriber");
  LogCapture::start();
  Executor E(B, noPlan());
  std::string Log = LogCapture::stop();
  EXPECT_NE(Log.find("cannot be observed"), std::string::npos);
  EXPECT_FALSE(E.launchTracking());
  void *A = E.allocate(1 << 20, 0, S1);
  EXPECT_NE(A, nullptr);
  EXPECT_EQ(statsOf(E).launch_tracking, 0u);
}

TEST(ExecutorTest, PlanForAnotherModelTurnsReplayOffOnce) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11, 12});
  PB.action(v1::ACTION_KIND_PREFETCH, 0, 0, kBlock, 0);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  LogCapture::start();
  for (uint64_t I = 0; I < 300; ++I)
    B.launch(0, S1, 5000 + I % 40);
  std::string Log = LogCapture::stop();
  EXPECT_FALSE(E.planActive(0));
  size_t First = Log.find("different model");
  ASSERT_NE(First, std::string::npos);
  EXPECT_EQ(Log.find("different model", First + 1), std::string::npos);
  EXPECT_NE(E.allocate(100, 0, S1), nullptr);
}

TEST(ExecutorTest, SeveralDevicesHaveTheirOwnPlans) {
  FakeBackend B({.Devices = 2});
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11});
  PB.place(0, kMiB, 0).action(v1::ACTION_KIND_PREFETCH, 0, 0, kBlock, 0);
  ASSERT_TRUE(E.setPlan(1, PB.compiled(), 8 * kBlock));
  EXPECT_FALSE(E.planActive(0));
  EXPECT_TRUE(E.planActive(1));
  E.markIteration();
  void *A0 = E.allocate(kMiB, 0, S1);
  void *A1 = E.allocate(kMiB, 1, S1);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A1), E.arenaBase(1));
  EXPECT_NE(A0, A1);
  B.clearCalls();
  B.launch(0, S1, 10);
  EXPECT_TRUE(B.calls(FakeCallKind::Prefetch).empty());
  B.launch(1, S1, 10);
  auto P = B.calls(FakeCallKind::Prefetch);
  ASSERT_EQ(P.size(), 1u);
  EXPECT_EQ(P[0].Device, 1);
  EXPECT_EQ(P[0].Location, 1);
  EXPECT_EQ(statsOf(E, 1).budget_bytes, 8 * kBlock);
  EXPECT_EQ(statsOf(E, 0).budget_bytes, 0u);
}

TEST(ExecutorTest, GraphLaunchReportsAllItsKernels) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11, 12});
  PB.action(v1::ACTION_KIND_PREFETCH, 2, 0, kBlock, 2);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  B.launchGraph(0, S1, {10, 11, 12});
  auto S = statsOf(E);
  EXPECT_EQ(S.launches_matched, 3u);
  EXPECT_EQ(S.prefetch_batches, 1u);
}

TEST(ExecutorTest, SkippedPositionsStillIssueTheirActions) {
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11, 12, 13});
  PB.action(v1::ACTION_KIND_PREFETCH, 2, 0, kBlock, 3);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  B.launch(0, S1, 10);
  B.launch(0, S1, 11);
  B.launch(0, S1, 13); // 12 did not happen
  EXPECT_EQ(statsOf(E).prefetch_batches, 1u);
  EXPECT_EQ(statsOf(E).positions_missing, 1u);
}

} // namespace

namespace {

/// Block 0 is evicted before position 1 and fetched again for position 2,
/// with room to spare; launches 10 and 11 run. Returns launch 11's calls.
std::vector<FakeCall> evictThenFetchAgain(FakeBackend &B, Executor &E) {
  PlanBuilder PB({10, 11, 12});
  PB.chain(0, {0})
      .chain(2, {0})
      .action(v1::ACTION_KIND_EVICT, 1, 0, kBlock, 0)
      .action(v1::ACTION_KIND_PREFETCH, 2, 0, kBlock, 2);
  EXPECT_TRUE(E.setPlan(0, PB.compiled(), 10 * kBlock));
  B.launch(0, S1, 10);
  B.clearCalls();
  B.launch(0, S1, 11);
  return B.calls();
}

TEST(ExecutorTest, AFetchOfABlockStillLeavingWaitsForItsReleaseWhateverTheRoom) {
  // Migrations on two streams are not ordered, so the fetch waits for the
  // eviction's mark: otherwise the write-back could run after it and send
  // the block back to the host just before its use.
  FakeBackend B({.EventsCompleteAtOnce = false});
  Executor E(B, noPlan());
  const auto Evicted = evictThenFetchAgain(B, E);
  auto Evict = firstCall(Evicted, FakeCallKind::Prefetch, kHostLocation);
  ASSERT_NE(Evict, Evicted.end());
  ASSERT_NE(Evict + 1, Evicted.end());
  const FakeCall Mark = *(Evict + 1);
  EXPECT_EQ(Mark.Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ(Mark.Stream, Evict->Stream);
  B.clearCalls();
  B.launch(0, S1, 12);
  const auto Calls = B.calls();
  auto Fetch = firstCall(Calls, FakeCallKind::Prefetch, 0);
  ASSERT_NE(Fetch, Calls.end());
  ASSERT_NE(Fetch, Calls.begin());
  const FakeCall Wait = *(Fetch - 1);
  EXPECT_EQ(Wait.Kind, FakeCallKind::StreamWaitEvent);
  EXPECT_EQ(Wait.Stream, Fetch->Stream);
  EXPECT_EQ(Wait.Event, Mark.Event);
}

TEST(ExecutorTest, AKernelAskedToWaitWaitsForItsOwnFetchOnTheLateStream) {
  // As above, the kernel at position 2 waiting for its own prefetches: the
  // fetch of a block still leaving goes on the late stream, and the
  // launching stream waits for an event recorded there after it.
  FakeBackend B({.EventsCompleteAtOnce = false});
  ExecutorConfig C = noPlan();
  C.KernelsWaitForTheirPrefetches = true;
  Executor E(B, C);
  evictThenFetchAgain(B, E);
  B.clearCalls();
  uint64_t Id = 12;
  E.launchBegin(0, S1, &Id, 1);
  const auto Calls = B.calls();
  E.launchEnd(0, S1);
  auto Fetch = firstCall(Calls, FakeCallKind::Prefetch, 0);
  ASSERT_NE(Fetch, Calls.end());
  ASSERT_GE(Calls.end() - Fetch, 3);
  EXPECT_EQ((Fetch + 1)->Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ((Fetch + 1)->Stream, Fetch->Stream);
  EXPECT_EQ((Fetch + 2)->Kind, FakeCallKind::StreamWaitEvent);
  EXPECT_EQ((Fetch + 2)->Stream, S1);
  EXPECT_EQ((Fetch + 2)->Event, (Fetch + 1)->Event);
}

/// What launch 13 issues when blocks left at launches 11 and 12 come back on
/// the late stream: the marks of the evictions before it (in order), its
/// calls, and the late stream (0 when nothing went there).
struct LateFetches {
  std::vector<EventHandle> Marks;
  std::vector<FakeCall> Calls;
  StreamHandle Stream = 0;
};
LateFetches lateFetchesOfLaunch13(FakeBackend &B, Executor &E, PlanBuilder &PB,
                                  uint64_t BudgetBlocks) {
  LateFetches L;
  EXPECT_TRUE(E.setPlan(0, PB.compiled(), BudgetBlocks * kBlock));
  B.launch(0, S1, 10);
  B.clearCalls();
  B.launch(0, S1, 11);
  B.launch(0, S1, 12);
  const std::vector<FakeCall> Before = B.calls();
  for (auto It = Before.begin(); It != Before.end(); ++It)
    if (It->Kind == FakeCallKind::Prefetch && It->Location == kHostLocation &&
        std::next(It) != Before.end())
      L.Marks.push_back(std::next(It)->Event);
  B.clearCalls();
  uint64_t Id = 13;
  E.launchBegin(0, S1, &Id, 1);
  L.Calls = B.calls();
  E.launchEnd(0, S1);
  for (const FakeCall &Cl : L.Calls)
    if (Cl.Kind == FakeCallKind::Prefetch && Cl.Location == 0)
      L.Stream = Cl.Stream;
  return L;
}

TEST(ExecutorTest, AKernelAskedToWaitWaitsOnlyForTheReleasesOfItsOwnLateFetches) {
  // Blocks 0 and 1 leave at positions 1 and 2 (two marks); at position 3
  // both come back on the late stream, block 0 for the kernel itself and
  // block 1 for position 4. The kernel's own fetch goes after block 0's mark
  // only, and the kernel waits for it; block 1's fetch then waits for its
  // own mark. (The due-now call used to wait for both marks.)
  FakeBackend B({.EventsCompleteAtOnce = false});
  ExecutorConfig C = noPlan();
  C.KernelsWaitForTheirPrefetches = true;
  Executor E(B, C);
  PlanBuilder PB({10, 11, 12, 13, 14});
  PB.chain(0, {0, 1})
      .chain(3, {0})
      .chain(4, {1})
      .action(v1::ACTION_KIND_EVICT, 1, 0, kBlock, 0)
      .action(v1::ACTION_KIND_EVICT, 2, kBlock, kBlock, 0)
      .action(v1::ACTION_KIND_PREFETCH, 3, 0, kBlock, 3)
      .action(v1::ACTION_KIND_PREFETCH, 3, kBlock, kBlock, 4);
  const LateFetches L = lateFetchesOfLaunch13(B, E, PB, 10);
  const std::vector<EventHandle> &Marks = L.Marks; // of the two evictions, in order
  ASSERT_EQ(Marks.size(), 2u);
  const std::vector<FakeCall> &Calls = L.Calls;
  const StreamHandle LateStream = L.Stream;
  ASSERT_NE(LateStream, StreamHandle{0});
  std::vector<uint64_t> Fetched;
  std::vector<std::string> Order;
  for (const FakeCall &Cl : Calls) {
    if (Cl.Stream != LateStream)
      continue;
    if (Cl.Kind == FakeCallKind::StreamWaitEvent)
      Order.push_back(Cl.Event == Marks[0] ? "wait 0" : Cl.Event == Marks[1] ? "wait 1" : "wait ?");
    else if (Cl.Kind == FakeCallKind::Prefetch) {
      Order.push_back("fetch");
      Fetched.push_back(Cl.Ranges.front().Address);
    }
  }
  EXPECT_EQ(Order, (std::vector<std::string>{"wait 0", "fetch", "wait 1", "fetch"}));
  ASSERT_EQ(Fetched.size(), 2u);
  EXPECT_EQ(Fetched[1] - Fetched[0], kBlock); // block 0 first, then block 1
}

TEST(ExecutorTest, ALongLateFetchForTheKernelStaysOneCallBeforeItsWait) {
  // Blocks 0-15 leave at position 1 (two eviction calls, two marks), block
  // 16 at position 2; at position 3 all come back on the late stream, 0-15
  // for the kernel itself (two pieces of kPrefetchRoomBlocks, one range
  // again) and 16 for position 4. The kernel's own call holds blocks 0-15
  // alone, after their two marks; block 16 goes after it, after its own mark
  // (counting the pieces, not the ranges they made, put block 16 into the
  // kernel's call).
  ASSERT_EQ(deepum::format::kPrefetchRoomBlocks, 8u);
  FakeBackend B({.EventsCompleteAtOnce = false});
  ExecutorConfig C = noPlan();
  C.KernelsWaitForTheirPrefetches = true;
  Executor E(B, C);
  std::vector<uint64_t> Long(16), All(17);
  std::iota(Long.begin(), Long.end(), 0);
  std::iota(All.begin(), All.end(), 0);
  PlanBuilder PB({10, 11, 12, 13, 14}, 32 * kBlock);
  PB.chain(0, All)
      .chain(3, Long)
      .chain(4, {16})
      .action(v1::ACTION_KIND_EVICT, 1, 0, 16 * kBlock, 0)
      .action(v1::ACTION_KIND_EVICT, 2, 16 * kBlock, kBlock, 0)
      .action(v1::ACTION_KIND_PREFETCH, 3, 0, 16 * kBlock, 3)
      .action(v1::ACTION_KIND_PREFETCH, 3, 16 * kBlock, kBlock, 4);
  const LateFetches L = lateFetchesOfLaunch13(B, E, PB, 20);
  const std::vector<EventHandle> &Marks = L.Marks; // of the three eviction calls, in order
  ASSERT_EQ(Marks.size(), 3u);
  const std::vector<FakeCall> &Calls = L.Calls;
  const StreamHandle LateStream = L.Stream;
  ASSERT_NE(LateStream, StreamHandle{0});
  std::vector<std::string> Order;
  std::vector<std::vector<MemRange>> Fetched;
  for (const FakeCall &Cl : Calls) {
    if (Cl.Stream != LateStream)
      continue;
    if (Cl.Kind == FakeCallKind::StreamWaitEvent) {
      const auto M = std::find(Marks.begin(), Marks.end(), Cl.Event);
      Order.push_back(M == Marks.end() ? "wait ?" : "wait " + std::to_string(M - Marks.begin()));
    } else if (Cl.Kind == FakeCallKind::Prefetch) {
      Order.push_back("fetch");
      Fetched.push_back(Cl.Ranges);
    }
  }
  EXPECT_EQ(Order, (std::vector<std::string>{"wait 0", "wait 1", "fetch", "wait 2", "fetch"}));
  ASSERT_EQ(Fetched.size(), 2u);
  const uintptr_t Base = E.arenaBase(0);
  ASSERT_EQ(Fetched[0].size(), 1u); // the two pieces, one range
  EXPECT_EQ(Fetched[0][0].Address, Base);
  EXPECT_EQ(Fetched[0][0].Bytes, 16 * kBlock);
  ASSERT_EQ(Fetched[1].size(), 1u);
  EXPECT_EQ(Fetched[1][0].Address, Base + 16 * kBlock);
  EXPECT_EQ(Fetched[1][0].Bytes, kBlock);
  // The kernel waits for an event recorded on the late stream between the two calls.
  bool Waits = false;
  for (size_t I = 0, Fetch = 0; I < Calls.size(); ++I) {
    Fetch += Calls[I].Kind == FakeCallKind::Prefetch && Calls[I].Stream == LateStream;
    if (Fetch == 1 && Calls[I].Kind == FakeCallKind::RecordEvent && Calls[I].Stream == LateStream)
      for (size_t J = I + 1; J < Calls.size(); ++J)
        Waits |= Calls[J].Kind == FakeCallKind::StreamWaitEvent && Calls[J].Stream == S1 &&
                 Calls[J].Event == Calls[I].Event;
  }
  EXPECT_TRUE(Waits);
}

TEST(ExecutorTest, MarksTheHostSeesCompleteAreNotWaitedFor) {
  // The budget of two blocks of releaseThenPrefetch, but every event complete
  // as soon as it is recorded: the ledger drops the eviction's mark, and the
  // prefetch stream waits for nothing.
  const auto Calls = releaseThenPrefetch(2, /*EventsComplete=*/true);
  auto Fetch = firstCall(Calls, FakeCallKind::Prefetch, 0);
  ASSERT_NE(Fetch, Calls.end());
  for (const FakeCall &C : Calls)
    EXPECT_FALSE(C.Kind == FakeCallKind::StreamWaitEvent && C.Stream == Fetch->Stream);
}

TEST(ExecutorTest, ReleasesAfterALaunchWaitForThatLaunch) {
  // A discard of the launch's own data goes after the launch is enqueued, and
  // its stream waits for an event recorded on the compute stream then: the
  // discard never overtakes the kernel still using the data.
  FakeBackend B;
  Executor E(B, noPlan());
  PlanBuilder PB({10, 11});
  PB.chain(0, {0}).action(v1::ACTION_KIND_DISCARD, 0, 0, kBlock, 0);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  uint64_t Id = 10;
  E.launchBegin(0, S1, &Id, 1);
  B.clearCalls();
  E.launchEnd(0, S1);
  const auto Calls = B.calls();
  auto Discard = firstCall(Calls, FakeCallKind::Discard);
  ASSERT_NE(Discard, Calls.end());
  ASSERT_GE(Discard - Calls.begin(), 2);
  EXPECT_EQ(Calls[0].Kind, FakeCallKind::RecordEvent);
  EXPECT_EQ(Calls[0].Stream, S1);
  bool DiscardStreamWaits = false;
  for (auto It = Calls.begin(); It != Discard; ++It)
    DiscardStreamWaits |= It->Kind == FakeCallKind::StreamWaitEvent &&
                          It->Stream == Discard->Stream && It->Event == Calls[0].Event;
  EXPECT_TRUE(DiscardStreamWaits);
}

} // namespace

namespace {

// The launch-time guard: a launch whose arguments name an allocation of the
// arena the plan took off the GPU gets it back first, on its own stream, the
// whole allocation; words outside the arena, or in freed ranges, name nothing;
// with the guard off the kernel is left to fault.
TEST(ExecutorTest, TheLaunchGuardBringsBackWhatTheArgumentsNameAndThePlanLeftOut) {
  for (bool Guard : {true, false}) {
    FakeBackend B;
    ExecutorConfig C;
    C.LaunchGuard = Guard;
    Executor E(B, C);
    PlanBuilder PB({10, 11, 12});
    // Allocation 0 is blocks 0-1; allocation 1 block 2. Kernel 10 uses
    // allocation 0, which is evicted before kernel 11; kernel 12's plan
    // entry does not list it (a plan built from a sample of the faults).
    PB.place(0, 2 * kBlock, 0).place(1, kBlock, 2 * kBlock).chain(0, {0, 1});
    PB.action(v1::ACTION_KIND_EVICT, 1, 0, 2 * kBlock).chain(2, {2});
    ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
    const uintptr_t Base = E.arenaBase(0);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(E.allocate(2 * kBlock, 0, S1)), Base);
    void *Freed = E.allocate(kBlock, 0, S1);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(Freed), Base + 2 * kBlock);
    E.deallocate(Freed, 0, S1);
    B.launch(0, S1, 10);
    B.launch(0, S1, 11);
    ASSERT_FALSE(E.residentBlocks(0)[0]);
    ASSERT_FALSE(E.residentBlocks(0)[1]);
    B.clearCalls();
    // A word inside allocation 0 (its second block), a small integer, one
    // in the freed allocation, one past the arena.
    B.launch(0, S2, 12, {Base + kBlock + 100, 42, Base + 2 * kBlock + 8, Base + 64 * kMiB});
    const auto Prefetches = B.calls(FakeCallKind::Prefetch);
    const auto S = statsOf(E);
    if (!Guard) {
      EXPECT_TRUE(Prefetches.empty());
      EXPECT_EQ(S.guard_restores, 0u);
      EXPECT_FALSE(E.residentBlocks(0)[0]);
      continue;
    }
    ASSERT_EQ(Prefetches.size(), 1u);
    EXPECT_EQ(Prefetches[0].Stream, S2); // the launch's own stream: the kernel waits
    ASSERT_EQ(Prefetches[0].Ranges.size(), 1u);
    EXPECT_EQ(Prefetches[0].Ranges[0].Address, Base);
    EXPECT_EQ(Prefetches[0].Ranges[0].Bytes, 2 * kBlock);
    EXPECT_EQ(S.guard_restores, 1u);
    EXPECT_EQ(S.guard_restore_bytes, 2 * kBlock);
    EXPECT_TRUE(E.residentBlocks(0)[0]);
    EXPECT_TRUE(E.residentBlocks(0)[1]);
    // The next kernel in the plan names it too: it is its own, resident now,
    // and the guard brings nothing.
    B.clearCalls();
    B.launch(0, S2, 10, {Base});
    EXPECT_TRUE(B.calls(FakeCallKind::Prefetch).empty());
    EXPECT_EQ(statsOf(E).guard_restores, 1u);
  }
}

} // namespace
