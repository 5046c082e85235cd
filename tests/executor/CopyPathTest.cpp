//===- CopyPathTest.cpp - Evicting through the copy engine, on real bytes --===//
//
// The fake backend with real host memory moves bytes when asked to copy and
// fills discarded pages with 0xFF: a block read while its contents are only in
// the pool reads poison. Every test checks the bytes a kernel would see.
//
//===----------------------------------------------------------------------===//
#include "ExecutorTestSupport.h"

#include "deepum/executor/Executor.h"

#include <cstring>

namespace {

using namespace deepum::executor;
using deepum::test::kBlock;
using deepum::test::kMiB;
using deepum::test::PlanBuilder;
namespace v1 = deepum::v1;

constexpr StreamHandle S1 = 0x101, S2 = 0x102;

deepum_stats_t statsOf(const Executor &E) {
  deepum_stats_t S{};
  EXPECT_TRUE(E.stats(0, S));
  return S;
}

/// Kernels 10 (writes allocation 0, blocks 0-1), 11, 12, 13 (reads it).
/// Allocation 0 is copied out before kernel 11 and, unless `CopyIn` is
/// false, copied back before kernel 13 (issued at 12). Allocation 1 (block
/// 2) is kernel 12's.
/// Kernels 10 and 13 use blocks 0-1 (13 unless `ChainAt13` is false), 12
/// block 2; blocks 0-1 are copied out before kernel 11 to pool offset 2
/// blocks and, unless `CopyIn` is false, back (issued at 12) for kernel 13.
PlanBuilder &withCopies(PlanBuilder &PB, bool CopyIn, bool ChainAt13) {
  PB.chain(0, {0, 1}).chain(2, {2});
  if (ChainAt13)
    PB.chain(3, {0, 1});
  PB.action(v1::ACTION_KIND_COPY_OUT, 1, 0, 2 * kBlock, 0);
  PB.proto().mutable_actions()->rbegin()->set_pool_offset(2 * kBlock);
  if (CopyIn)
    PB.action(v1::ACTION_KIND_COPY_IN, 2, 0, 2 * kBlock, 3);
  PB.proto().mutable_metadata()->set_copy_pool_bytes(4 * kBlock);
  return PB;
}

PlanBuilder copyPlan(bool CopyIn = true, bool ChainAt13 = true) {
  PlanBuilder PB({10, 11, 12, 13}, 8 * kBlock);
  PB.place(0, 2 * kBlock, 0).place(1, kBlock, 2 * kBlock);
  return withCopies(PB, CopyIn, ChainAt13);
}

struct Rig {
  explicit Rig(PlanBuilder PB, ExecutorConfig C = {}, FakeBackendOptions O = {.RealMemory = true})
      : B(O), E(B, C) {
    Ok = E.setPlan(0, PB.compiled(), 0);
    Base = E.arenaBase(0);
  }
  FakeBackend B;
  Executor E;
  bool Ok = false;
  uintptr_t Base = 0;
  void *A = nullptr, *Other = nullptr;
  /// Allocations 0 and 1 placed, allocation 0 filled with a pattern.
  void allocate() {
    A = E.allocate(2 * kBlock, 0, S1);
    Other = E.allocate(kBlock, 0, S1);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(A), Base);
    auto *P = static_cast<uint8_t *>(A);
    for (uint64_t I = 0; I < 2 * kBlock; ++I)
      P[I] = static_cast<uint8_t>(I * 131 + 7);
  }
  bool intact() const {
    const auto *P = static_cast<const uint8_t *>(A);
    for (uint64_t I = 0; I < 2 * kBlock; ++I)
      if (P[I] != static_cast<uint8_t>(I * 131 + 7))
        return false;
    return true;
  }
  bool poisoned() const {
    const auto *P = static_cast<const uint8_t *>(A);
    return P[0] == 0xFF && P[2 * kBlock - 1] == 0xFF;
  }
};

/// Kernels 10 and 11 of copyPlan() run (blocks 0-1 go to the pool) and the
/// events recorded so far complete; returns the number of calls by then.
uint64_t runIntoThePool(Rig &R) {
  R.allocate();
  R.B.launch(0, S1, 10, {R.Base});
  R.B.launch(0, S1, 11, {R.Base + 2 * kBlock});
  R.B.completeEvents();
  return R.B.calls().size();
}

/// Whether between calls `After` and `Before` of `All` an event is recorded
/// on stream `On` and stream `Waiter` then waits for it.
bool waitsFor(const std::vector<FakeCall> &All, size_t After, size_t Before, StreamHandle On,
              StreamHandle Waiter) {
  for (size_t I = After + 1; I < Before; ++I)
    if (All[I].Kind == FakeCallKind::RecordEvent && All[I].Stream == On)
      for (size_t J = I + 1; J < Before; ++J)
        if (All[J].Kind == FakeCallKind::StreamWaitEvent && All[J].Stream == Waiter &&
            All[J].Event == All[I].Event)
          return true;
  return false;
}

TEST(CopyPathTest, ACopiedOutAllocationIsPoisonOnTheGpuAndComesBackWhole) {
  Rig R(copyPlan());
  ASSERT_TRUE(R.Ok);
  R.allocate();
  R.B.launch(0, S1, 10, {R.Base});
  R.B.launch(0, S1, 11, {R.Base + 2 * kBlock});
  // Copied to the pool, then discarded: what a stray kernel would read now.
  EXPECT_TRUE(R.poisoned());
  auto S = statsOf(R.E);
  EXPECT_EQ(S.copy_pool_bytes, 4 * kBlock);
  EXPECT_EQ(S.copy_out_bytes, 2 * kBlock);
  EXPECT_EQ(S.pooled_bytes, 2 * kBlock);
  EXPECT_EQ(S.evict_bytes, 0u);
  // One copy of both blocks (adjacent blocks, adjacent slots), from the
  // arena into the pool at the plan's offset, on a stream of its own.
  auto Copies = R.B.calls(FakeCallKind::Copy);
  ASSERT_EQ(Copies.size(), 1u);
  EXPECT_EQ(Copies[0].Source, R.Base);
  EXPECT_EQ(Copies[0].Ranges[0].Bytes, 2 * kBlock);
  R.B.launch(0, S1, 12, {R.Base + 2 * kBlock});
  EXPECT_TRUE(R.intact()); // COPY_IN at 12, for 13
  R.B.launch(0, S1, 13, {R.Base});
  S = statsOf(R.E);
  EXPECT_EQ(S.copy_in_bytes, 2 * kBlock);
  EXPECT_EQ(S.pooled_bytes, 0u);
  EXPECT_EQ(S.peak_pooled_bytes, 2 * kBlock);
  EXPECT_EQ(S.guard_copy_in_bytes, 0u);
  EXPECT_EQ(S.backend_errors, 0u);
}

TEST(CopyPathTest, ThePlansCopyBackRunsOnAStreamOfItsOwnAfterItsPopulate) {
  // The plan's copy back: the populate on the prefetch stream, the copy on a
  // stream of its own that waits for an event recorded after the populate
  // (so the next populates do not queue behind the copy), and the kernel
  // that uses the blocks waits for an event recorded after the copy.
  Rig R(copyPlan(), {}, {.RealMemory = true, .EventsCompleteAtOnce = false});
  ASSERT_TRUE(R.Ok);
  const uint64_t From = runIntoThePool(R);
  R.B.launch(0, S1, 12, {R.Base + 2 * kBlock});
  R.B.launch(0, S1, 13, {R.Base});
  const std::vector<FakeCall> All = R.B.calls();
  size_t Populate = All.size(), Copy = All.size();
  for (size_t I = From; I < All.size(); ++I) {
    const FakeCall &C = All[I];
    if (C.Kind == FakeCallKind::Prefetch && C.Location == 0 && Populate == All.size())
      for (const MemRange &Rg : C.Ranges)
        if (Rg.Address <= R.Base && R.Base < Rg.Address + Rg.Bytes)
          Populate = I;
    if (C.Kind == FakeCallKind::Copy && C.Ranges[0].Address == R.Base)
      Copy = I;
  }
  ASSERT_LT(Populate, Copy) << "the populate, then the copy";
  ASSERT_LT(Copy, All.size());
  const StreamHandle PopulateStream = All[Populate].Stream, CopyStream = All[Copy].Stream;
  EXPECT_NE(CopyStream, PopulateStream);
  EXPECT_NE(CopyStream, S1);
  EXPECT_TRUE(waitsFor(All, Populate, Copy, PopulateStream, CopyStream))
      << "the copy's stream waits for the populate";
  // Kernel 13's stream waits for an event recorded after the copy on its stream.
  EXPECT_TRUE(waitsFor(All, Copy, All.size(), CopyStream, S1));
  EXPECT_TRUE(R.intact());
  EXPECT_EQ(statsOf(R.E).backend_errors, 0u);
}

TEST(CopyPathTest, ALongCopyOutFreesItsRoomSliceBySlice) {
  // 40 blocks copied out at one position: their discards go in slices of
  // format::kCopyOutSliceBlocks on the copy-out stream, each after its own
  // copies and followed by its own event (a release mark), so the room of
  // the first slice is free before the last slice's copies end.
  constexpr uint64_t N = 40;
  static_assert(N > deepum::format::kCopyOutSliceBlocks);
  PlanBuilder PB({10, 11, 12, 13}, (N + 8) * kBlock);
  PB.place(0, N * kBlock, 0);
  std::vector<uint64_t> All;
  for (uint64_t B = 0; B < N; ++B)
    All.push_back(B);
  PB.chain(0, All);
  PB.action(v1::ACTION_KIND_COPY_OUT, 1, 0, N * kBlock, 0);
  PB.proto().mutable_actions()->rbegin()->set_pool_offset(0);
  PB.proto().mutable_metadata()->set_copy_pool_bytes(N * kBlock);
  Rig R(PB);
  ASSERT_TRUE(R.Ok);
  void *A = R.E.allocate(N * kBlock, 0, S1);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(A), R.Base);
  R.B.launch(0, S1, 10, {R.Base});
  const uint64_t From = R.B.calls().size();
  R.B.launch(0, S1, 11);
  const std::vector<FakeCall> Calls = R.B.calls();
  std::vector<size_t> Discards;
  for (size_t I = From; I < Calls.size(); ++I)
    if (Calls[I].Kind == FakeCallKind::Discard)
      Discards.push_back(I);
  ASSERT_EQ(Discards.size(), 2u);
  auto Bytes = [&](size_t I) {
    uint64_t Sum = 0;
    for (const MemRange &Rg : Calls[I].Ranges)
      Sum += Rg.Bytes;
    return Sum;
  };
  EXPECT_EQ(Bytes(Discards[0]), deepum::format::kCopyOutSliceBlocks * kBlock);
  EXPECT_EQ(Bytes(Discards[0]) + Bytes(Discards[1]), N * kBlock);
  // The first slice: its copies, its discard, its event, then the second
  // slice's copies.
  const StreamHandle Out = Calls[Discards[0]].Stream;
  size_t FirstCopyAfter = Calls.size(), EventBetween = Calls.size();
  for (size_t I = Discards[0] + 1; I < Discards[1]; ++I) {
    if (Calls[I].Kind == FakeCallKind::RecordEvent && Calls[I].Stream == Out &&
        EventBetween == Calls.size())
      EventBetween = I;
    if (Calls[I].Kind == FakeCallKind::Copy && FirstCopyAfter == Calls.size())
      FirstCopyAfter = I;
  }
  EXPECT_LT(EventBetween, FirstCopyAfter) << "the first slice's mark before the next copies";
  EXPECT_LT(FirstCopyAfter, Discards[1]);
  EXPECT_EQ(statsOf(R.E).copy_out_bytes, N * kBlock);
  EXPECT_EQ(statsOf(R.E).backend_errors, 0u);
}

TEST(CopyPathTest, TheGuardCopiesBackWhatAKernelNamesAndThePlanForgot) {
  for (bool Guard : {true, false}) {
    ExecutorConfig C;
    C.LaunchGuard = Guard;
    // No COPY_IN, and kernel 13's access set does not list the blocks: a
    // plan from a profile that lost them.
    Rig R(copyPlan(/*CopyIn=*/false, /*ChainAt13=*/false), C);
    ASSERT_TRUE(R.Ok);
    R.allocate();
    R.B.launch(0, S1, 10, {R.Base});
    R.B.launch(0, S1, 11, {R.Base + 2 * kBlock});
    R.B.launch(0, S1, 12, {R.Base + 2 * kBlock});
    ASSERT_TRUE(R.poisoned());
    R.B.clearCalls();
    R.B.launch(0, S2, 13, {R.Base + kBlock + 8}); // a word inside allocation 0
    const auto S = statsOf(R.E);
    if (!Guard) { // the kernel reads poison: this is what the guard is for
      EXPECT_TRUE(R.poisoned());
      EXPECT_EQ(S.guard_copy_in_bytes, 0u);
      continue;
    }
    EXPECT_TRUE(R.intact());
    EXPECT_EQ(S.guard_copy_in_bytes, 2 * kBlock);
    EXPECT_EQ(S.pooled_bytes, 0u);
    // Populate, then the copy, both on the launch's own stream.
    auto Copies = R.B.calls(FakeCallKind::Copy);
    ASSERT_EQ(Copies.size(), 1u);
    EXPECT_EQ(Copies[0].Stream, S2);
    EXPECT_EQ(Copies[0].Ranges[0].Address, R.Base);
    auto Populates = R.B.calls(FakeCallKind::Prefetch);
    ASSERT_FALSE(Populates.empty());
    EXPECT_EQ(Populates[0].Stream, S2);
    EXPECT_LT(Populates[0].Sequence, Copies[0].Sequence);
  }
}

TEST(CopyPathTest, ALaunchWhoseArgumentsAreUnknownGetsEverythingBack) {
  Rig R(copyPlan(/*CopyIn=*/false, /*ChainAt13=*/false));
  ASSERT_TRUE(R.Ok);
  R.allocate();
  R.B.launch(0, S1, 10, {R.Base});
  R.B.launch(0, S1, 11, {R.Base + 2 * kBlock});
  ASSERT_TRUE(R.poisoned());
  R.B.launch(0, S1, 12); // no words: the backend could not read them
  EXPECT_TRUE(R.intact());
  const auto S = statsOf(R.E);
  EXPECT_EQ(S.blind_launches, 1u);
  EXPECT_EQ(S.pooled_bytes, 0u);
}

TEST(CopyPathTest, ALaunchWhoseArgumentsAreUnknownWaitsForTheCopyInsInFlight) {
  // The plan's copy back is issued at 12, for 13; kernel 12's arguments are
  // unknown, so it may read blocks 0-1: its stream waits for the copy's
  // event, though nothing is left in the pool.
  Rig R(copyPlan(), {}, {.RealMemory = true, .EventsCompleteAtOnce = false});
  ASSERT_TRUE(R.Ok);
  const uint64_t From = runIntoThePool(R);
  R.B.launch(0, S1, 12); // no words
  const std::vector<FakeCall> All = R.B.calls();
  size_t Copy = All.size();
  for (size_t I = From; I < All.size(); ++I)
    if (All[I].Kind == FakeCallKind::Copy && All[I].Ranges[0].Address == R.Base)
      Copy = I;
  ASSERT_LT(Copy, All.size());
  EXPECT_TRUE(waitsFor(All, Copy, All.size(), All[Copy].Stream, S1))
      << "a blind launch waits for the copy back in flight";
  EXPECT_EQ(statsOf(R.E).backend_errors, 0u);
}

TEST(CopyPathTest, OnlyBlocksHoldingALiveAllocationAreCopiedTheRestEvicted) {
  PlanBuilder PB = copyPlan(/*CopyIn=*/false);
  // Blocks 3-4 hold no allocation: the plan's copy-out of them is evicted.
  PB.action(v1::ACTION_KIND_COPY_OUT, 1, 3 * kBlock, 2 * kBlock, 0);
  PB.proto().mutable_actions()->rbegin()->set_pool_offset(0);
  PB.chain(1, {3, 4});
  Rig R(PB);
  ASSERT_TRUE(R.Ok);
  R.allocate();
  R.B.launch(0, S1, 10, {R.Base});
  R.B.launch(0, S1, 11, {R.Base + 2 * kBlock});
  const auto S = statsOf(R.E);
  EXPECT_EQ(S.copy_out_bytes, 2 * kBlock);
  EXPECT_EQ(S.copy_fallback_bytes, 2 * kBlock);
  EXPECT_EQ(S.evict_bytes, 2 * kBlock);
  EXPECT_TRUE(R.poisoned());
}

TEST(CopyPathTest, AFreeDropsTheSlotAndWhatIsWrittenThereAfterIsKept) {
  Rig R(copyPlan());
  ASSERT_TRUE(R.Ok);
  R.allocate();
  R.B.launch(0, S1, 10, {R.Base});
  R.B.launch(0, S1, 11, {R.Base + 2 * kBlock});
  ASSERT_EQ(statsOf(R.E).pooled_bytes, 2 * kBlock);
  // The program frees allocation 0 (the plan did not foresee it) and the
  // bytes are written again (a new owner's copy): the pool's old contents
  // must never come back over them.
  R.E.deallocate(R.A, 0, S1);
  std::memset(R.A, 0x5A, 2 * kBlock);
  R.B.launch(0, S1, 12, {R.Base + 2 * kBlock}); // COPY_IN for 13: nothing in the pool now
  R.B.launch(0, S1, 13, {R.Base});
  const auto *P = static_cast<const uint8_t *>(R.A);
  EXPECT_EQ(P[0], 0x5A);
  EXPECT_EQ(P[2 * kBlock - 1], 0x5A);
  const auto S = statsOf(R.E);
  EXPECT_EQ(S.copy_in_bytes, 0u);
  EXPECT_EQ(S.pooled_bytes, 0u);
}

/// Blocks 0-1 hold allocation 0 (A, 1.5 blocks) and allocation 1 (B, the
/// last half block); allocation 2 (block 2) is kernel 11's and 12's;
/// allocation 3 (C) is placed at B's bytes once B is freed. Blocks 0-1 are
/// copied out before kernel 11 and, unless `CopyIn` is false, back (COPY_IN
/// at 12) for kernel 13.
PlanBuilder sharedBlockPlan(bool CopyIn = true) {
  PlanBuilder PB({10, 11, 12, 13}, 8 * kBlock);
  const uint64_t Half = kBlock / 2;
  PB.place(0, 3 * Half, 0).place(1, Half, 3 * Half).place(2, kBlock, 2 * kBlock);
  PB.place(3, Half, 3 * Half);
  return withCopies(PB, CopyIn, /*ChainAt13=*/CopyIn);
}

// A block shared by two allocations is copied out whole. One of them is
// freed while the block is in the pool and a new allocation placed in its
// bytes is written (by a host copy, which no guard sees): the copy back
// leaves the new one's bytes alone. With nothing placed there the plan's copy
// back is whole blocks (a new owner placed from then on waits for it), the
// guard's only what the surviving allocation holds (nothing makes a new
// owner wait for a copy on a launch's stream). Freeing both drops the slot.
TEST(CopyPathTest, ABlockOfTwoAllocationsComesBackOnlyWhereItsOwnersStillLive) {
  const uint64_t Half = kBlock / 2;
  enum Case { Placed, FreedOnly, FreedOnlyGuard, BothFreed };
  for (Case K : {Placed, FreedOnly, FreedOnlyGuard, BothFreed}) {
    SCOPED_TRACE(K);
    PlanBuilder PB = sharedBlockPlan(/*CopyIn=*/K != FreedOnlyGuard);
    Rig R(PB);
    ASSERT_TRUE(R.Ok);
    auto *A = static_cast<uint8_t *>(R.E.allocate(3 * Half, 0, S1));
    auto *B = static_cast<uint8_t *>(R.E.allocate(Half, 0, S1));
    void *Other = R.E.allocate(kBlock, 0, S1);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(A), R.Base);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(B), R.Base + 3 * Half);
    ASSERT_EQ(reinterpret_cast<uintptr_t>(Other), R.Base + 2 * kBlock);
    for (uint64_t I = 0; I < 3 * Half; ++I)
      A[I] = static_cast<uint8_t>(I * 131 + 7);
    std::memset(B, 0x3C, Half);
    R.B.launch(0, S1, 10, {R.Base, R.Base + 3 * Half});
    R.B.launch(0, S1, 11, {R.Base + 2 * kBlock});
    auto S = statsOf(R.E);
    EXPECT_EQ(S.copy_out_bytes, 2 * kBlock); // the shared block too
    EXPECT_EQ(S.copy_fallback_bytes, 0u);
    EXPECT_EQ(S.pooled_bytes, 2 * kBlock);
    ASSERT_EQ(A[0], 0xFF);
    R.E.deallocate(B, 0, S1);
    if (K == BothFreed) {
      R.E.deallocate(A, 0, S1);
      R.B.launch(0, S1, 12, {R.Base + 2 * kBlock});
      S = statsOf(R.E);
      EXPECT_EQ(S.pooled_bytes, 0u); // block 0 with A's free, block 1 with its last owner's
      EXPECT_EQ(S.copy_in_bytes, 0u);
      continue;
    }
    uint8_t *C = nullptr;
    if (K == Placed) {
      C = static_cast<uint8_t *>(R.E.allocate(Half, 0, S1));
      ASSERT_EQ(C, B); // placed where B was
      std::memset(C, 0x5A, Half);
    }
    R.B.launch(0, S1, 12, {R.Base + 2 * kBlock}); // COPY_IN for 13 (not FreedOnlyGuard)
    R.B.launch(0, S1, 13, {R.Base});
    bool AIntact = true;
    for (uint64_t I = 0; I < 3 * Half; ++I)
      AIntact = AIntact && A[I] == static_cast<uint8_t>(I * 131 + 7);
    EXPECT_TRUE(AIntact);
    S = statsOf(R.E);
    EXPECT_EQ(S.pooled_bytes, 0u);
    EXPECT_EQ(S.backend_errors, 0u);
    switch (K) {
    case Placed:
      EXPECT_EQ(C[0], 0x5A);
      EXPECT_EQ(C[Half - 1], 0x5A);
      EXPECT_EQ(S.copy_in_bytes, 3 * Half);
      break;
    case FreedOnly:
      EXPECT_EQ(S.copy_in_bytes, 2 * kBlock);
      EXPECT_EQ(B[0], 0x3C); // B's dead bytes came back with the block
      break;
    case FreedOnlyGuard:
      EXPECT_EQ(S.guard_copy_in_bytes, 3 * Half);
      EXPECT_EQ(B[0], 0xFF); // the guard left them discarded
      break;
    case BothFreed:
      break;
    }
  }
}

// On the copy path a prefetch is a dependency, as a copy-in is: the kernel
// that uses a block populated ahead of it waits on its stream for an event
// recorded after the populate (a late populate of dead contents costs an
// H100 4 ms a block when a kernel writes the block first). Without the copy
// path (a backend that cannot show the guard a launch's arguments) the
// populate stays a hint: nothing waits for it.
TEST(CopyPathTest, AKernelWaitsForThePopulateOfItsDiscardedBlock) {
  for (const bool CopyPath : {true, false}) {
    // copyPlan's, and allocation 1 (block 2) dead before kernel 12 writes it
    // (the program freed it): discarded at 0, populated at 1 for 12.
    PlanBuilder PB({10, 11, 12, 13}, 8 * kBlock);
    PB.place(0, 2 * kBlock, 0).place(1, kBlock, 2 * kBlock).chain(0, {0, 1}).chain(2, {2});
    PB.chain(3, {0, 1});
    PB.action(v1::ACTION_KIND_DISCARD, 0, 2 * kBlock, kBlock, 0);
    PB.action(v1::ACTION_KIND_COPY_OUT, 1, 0, 2 * kBlock, 0);
    PB.proto().mutable_actions()->rbegin()->set_pool_offset(2 * kBlock);
    PB.action(v1::ACTION_KIND_PREFETCH, 1, 2 * kBlock, kBlock, 2);
    PB.action(v1::ACTION_KIND_COPY_IN, 2, 0, 2 * kBlock, 3);
    PB.proto().mutable_metadata()->set_copy_pool_bytes(4 * kBlock);
    FakeBackendOptions O{.RealMemory = true, .EventsCompleteAtOnce = false};
    O.ReportsArguments = CopyPath; // without arguments to guard by, no copy path
    Rig R(PB, {}, O);
    ASSERT_TRUE(R.Ok);
    R.allocate();
    R.B.launch(0, S1, 10, {R.Base});
    // Freed after 10: its discard, planned at 0, happens at the free.
    R.E.deallocate(R.Other, 0, S1);
    R.B.launch(0, S1, 11, {R.Base});
    const uintptr_t Block2 = R.Base + 2 * kBlock;
    uint64_t PopulateSeq = 0;
    StreamHandle PopulateStream = 0;
    for (const FakeCall &C : R.B.calls(FakeCallKind::Prefetch))
      for (const MemRange &Rg : C.Ranges)
        if (C.Location == 0 && Rg.Address <= Block2 && Block2 < Rg.Address + Rg.Bytes) {
          PopulateSeq = C.Sequence;
          PopulateStream = C.Stream;
        }
    ASSERT_NE(PopulateSeq, 0u) << CopyPath;
    // The event recorded right after it on its stream.
    EventHandle After = 0;
    for (const FakeCall &C : R.B.calls(FakeCallKind::RecordEvent))
      if (C.Stream == PopulateStream && C.Sequence > PopulateSeq && !After)
        After = C.Event;
    const uint64_t Before12 = R.B.calls().size();
    R.B.launch(0, S1, 12, {Block2});
    bool Waited = false;
    const std::vector<FakeCall> All = R.B.calls();
    for (size_t I = Before12; I < All.size(); ++I)
      Waited |= All[I].Kind == FakeCallKind::StreamWaitEvent && All[I].Stream == S1 &&
                All[I].Event == After && After;
    EXPECT_EQ(Waited, CopyPath) << CopyPath;
    EXPECT_EQ(statsOf(R.E).backend_errors, 0u);
  }
}

TEST(CopyPathTest, WithoutAPoolOrWithoutArgumentsCopyOutsEvict) {
  for (int Case : {0, 2}) {
    FakeBackendOptions O{.RealMemory = true};
    O.ReportsArguments = Case != 0; // a backend that cannot show them to the guard
    Rig R(copyPlan(), {}, O);
    ASSERT_TRUE(R.Ok);
    if (Case == 2) {
      // A copy that fails: the blocks go through Unified Memory instead.
      R.B.failNext(FakeCallKind::Copy, 1);
    }
    R.allocate();
    R.B.launch(0, S1, 10, {R.Base});
    R.B.launch(0, S1, 11, {R.Base + 2 * kBlock});
    const auto S = statsOf(R.E);
    EXPECT_EQ(S.copy_out_bytes, 0u) << Case;
    EXPECT_EQ(S.evict_bytes, 2 * kBlock) << Case;
    EXPECT_TRUE(R.intact()) << Case; // evicted, never discarded
    if (Case == 0) {
      EXPECT_EQ(S.copy_pool_bytes, 0u);
    }
    if (Case == 2) {
      EXPECT_EQ(S.copy_fallback_bytes, 2 * kBlock);
    }
  }
  // A pool the host cannot pin: the plan runs on the UVM path.
  FakeBackend B({.RealMemory = true});
  B.setPinnedLimit(kBlock);
  Executor E(B, {});
  ASSERT_TRUE(E.setPlan(0, copyPlan().compiled(), 0));
  EXPECT_EQ(statsOf(E).copy_pool_bytes, 0u);
  EXPECT_TRUE(E.planActive(0));
}

} // namespace
