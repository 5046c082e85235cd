//===- SimulatorTest.cpp - Tiny traces computed by hand, every policy ------===//
#include "JsonKeys.h"
#include "SimTestSupport.h"
#include "TestSupport.h"
#include "Workload.h"

#include "deepum/executor/sim/SimBackend.h"
#include "deepum/format/Format.h"
#include "deepum/sim/Simulator.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <map>
#include <set>

using namespace deepum;
using namespace deepum::sim;
using namespace deepum::test;
using deepum::v1::ACCESS_MODE_READ;
using deepum::v1::ACCESS_MODE_WRITE;

namespace {

SimOptions opts(Policy P, uint64_t Capacity, unsigned Iterations = 2, unsigned Warmup = 2) {
  SimOptions O;
  O.Device = handDevice();
  O.GpuMemoryBytes = Capacity;
  O.Pol = P;
  O.Iterations = Iterations;
  O.WarmupIterations = Warmup;
  O.CheckInvariants = true;
  O.PlanPolicy = executor::sim::executorPlanPolicy; // the plan's one replay
  // The timings computed by hand here keep the host one launch ahead across
  // the iteration mark; SimDeepUm.TheHostWaitingAtTheIterationsEnd... shows
  // the wait.
  O.HostWaitsEachIteration = false;
  return O;
}

SimResult run(const v1::Profile &P, const SimOptions &O) {
  SimResult R = takeOk(simulate(P, O));
  EXPECT_EQ(R.InvariantViolations, 0u);
  return R;
}

/// Every baseline policy at `Capacity`, in steady state (ten warm-up
/// iterations, twelve measured: whole repeats of a cycle of up to four),
/// takes at least `BoundUs`.
void expectNoPolicyBelow(const v1::Profile &P, uint64_t Capacity, double BoundUs) {
  for (Policy Pol : {Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt})
    EXPECT_GE(run(P, opts(Pol, Capacity, 12, 10)).IterationUs, BoundUs * (1 - 1e-9)) << int(Pol);
}

/// `N` parameters of one 2 MiB block each, live for the whole profile.
std::vector<uint64_t> parameterBlocks(ProfileBuilder &B, int N) {
  std::vector<uint64_t> T;
  for (int I = 0; I < N; ++I)
    T.push_back(B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER));
  return T;
}

/// One 2 MiB tensor read by one 100 us kernel.
v1::Profile oneBlock() {
  ProfileBuilder B;
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("k", 100'000, {{A, ACCESS_MODE_READ}});
  B.iteration(0, 1);
  return B.build();
}

/// Kernels k0 reads A, k1 reads (or writes) B, each 100 us; 2 MiB tensors.
v1::Profile twoBlocks(v1::AccessMode SecondMode) {
  ProfileBuilder B;
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t C = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("k0", 100'000, {{A, ACCESS_MODE_READ}});
  B.kernel("k1", 100'000, {{C, SecondMode}});
  B.iteration(0, 2);
  return B.build();
}

/// Three kernels of one name, each reading its own 2 MiB tensor for 5 ms.
v1::Profile threeCycle() {
  ProfileBuilder B;
  std::vector<uint64_t> T;
  for (int I = 0; I < 3; ++I)
    T.push_back(B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER));
  for (int I = 0; I < 3; ++I)
    B.kernel("gemm", 5'000'000, {{T[I], ACCESS_MODE_READ}});
  B.iteration(0, 3);
  return B.build();
}

} // namespace

TEST(SimUm, ColdFirstIterationFaultsOnceThenFits) {
  v1::Profile P = oneBlock();
  // No warm-up: the cold iteration is measured. One batch of 32 faults:
  // 10 us latency + 2097.152 us transfer, then the 100 us kernel.
  SimResult Cold = run(P, opts(Policy::Um, 4 * MiB, 1, 0));
  EXPECT_NEAR(Cold.IterationUs, 10 + BlockUs + 100, 1e-6);
  EXPECT_EQ(Cold.Faults, 32);
  EXPECT_EQ(Cold.FaultBatches, 1);
  EXPECT_EQ(Cold.BytesHtoD, 2.0 * MiB);
  EXPECT_EQ(Cold.BytesDemand, 2.0 * MiB);
  // Warm-up excluded: steady state is compute alone.
  SimResult Warm = run(P, opts(Policy::Um, 4 * MiB, 3, 1));
  EXPECT_NEAR(Warm.IterationUs, 100, 1e-6);
  EXPECT_EQ(Warm.Faults, 0);
  EXPECT_EQ(Warm.StallUs, 0);
  EXPECT_NEAR(Warm.IdealUs, 100, 1e-9);
}

TEST(SimUm, CleanChunksAreDroppedNotWrittenBack) {
  // Capacity of one block, two read-only blocks: each kernel faults its block
  // in (10 us + transfer) after the other one is dropped without a copy.
  SimResult R = run(twoBlocks(ACCESS_MODE_READ), opts(Policy::Um, 2 * MiB));
  EXPECT_NEAR(R.IterationUs, 2 * (10 + BlockUs + 100), 1e-6);
  EXPECT_EQ(R.Faults, 64);
  EXPECT_EQ(R.FaultBatches, 2);
  EXPECT_EQ(R.Evictions, 2);
  EXPECT_EQ(R.BytesHtoD, 4.0 * MiB);
  EXPECT_EQ(R.BytesDtoH, 0);
  EXPECT_NEAR(R.StallUs, 2 * (10 + BlockUs), 1e-6);
  // Bound: 4 MiB must be on the GPU, 2 MiB can stay: 2 MiB per iteration.
  EXPECT_NEAR(R.BoundUs, BlockUs, 1e-6);
  EXPECT_NEAR(R.IdealUs, 200, 1e-9);
  EXPECT_EQ(R.PeakResidentBytes, 2 * MiB);
}

TEST(SimUm, DirtyChunksAreWrittenBackBeforeTheirRoomIsReused) {
  // k1 writes B: before k0's A can come in, B's write-back must finish
  // (one DtoH), and the driver migrates B back in although k1 overwrites it.
  // The write-back starts with k0's batch service (10 us) and outlasts it.
  SimResult R = run(twoBlocks(ACCESS_MODE_WRITE), opts(Policy::Um, 2 * MiB));
  EXPECT_NEAR(R.IterationUs, (std::max(10.0, BlockUs) + BlockUs + 100) + (10 + BlockUs + 100),
              1e-6);
  EXPECT_EQ(R.BytesDtoH, 2.0 * MiB);
  EXPECT_EQ(R.BytesHtoD, 4.0 * MiB);
  // The bound sees B is dead at its first use: only A must come in, and only
  // what does not fit stays out; nothing written is read in the next iteration.
  EXPECT_NEAR(R.BoundUs, 0, 1e-9);
}

TEST(SimUm, DensityPrefetcherFetchesTheRestPastHalf) {
  for (unsigned Touched : {16u, 17u}) {
    ProfileBuilder B;
    uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
    B.kernel("k", 100'000, {{A, ACCESS_MODE_READ, 0, Touched * 64 * 1024}});
    B.iteration(0, 1);
    SimResult R = run(B.build(), opts(Policy::Um, 4 * MiB, 1, 0));
    EXPECT_EQ(R.Faults, Touched);
    // 16 pages: the lower half is a full 1 MiB region, the block 50% (not
    // more than 51%): nothing extra. 17 pages: 53% of the block: the other 15.
    double Extra = Touched == 17 ? 15 * 64 * 1024 : 0;
    EXPECT_EQ(R.BytesDriverPrefetched, Extra) << Touched;
    EXPECT_NEAR(R.IterationUs, 10 + (Touched * 64 * 1024 + Extra) / 1e3 + 100, 1e-6);
  }
}

TEST(SimUm, FaultsAreServicedInBatchesOf256) {
  // One kernel reads 10 blocks (320 pages): a batch of 256 (8 blocks), then 64.
  ProfileBuilder B;
  uint64_t A = B.allocate(20 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("k", 100'000, {{A, ACCESS_MODE_READ}});
  B.iteration(0, 1);
  SimResult R = run(B.build(), opts(Policy::Um, 64 * MiB, 1, 0));
  EXPECT_EQ(R.FaultBatches, 2);
  EXPECT_EQ(R.Faults, 320);
  EXPECT_NEAR(R.IterationUs, 10 + 8 * BlockUs + 10 + 2 * BlockUs + 100, 1e-6);
}

TEST(SimUm, ThrottlesAfterRepeatedThrashing) {
  // Capacity of one block, two blocks used back to back with 100 us kernels:
  // every migration follows the block's eviction within 500 us.
  SimOptions O = opts(Policy::Um, 2 * MiB, 4, 4);
  O.Device.ThrashingLapseUs = 5000;
  O.Device.ThrottleNapUs = 1000;
  SimResult R = run(twoBlocks(ACCESS_MODE_READ), O);
  EXPECT_EQ(R.ThrashingEvents, 2);
  EXPECT_EQ(R.ThrottledBatches, 2);
  EXPECT_NEAR(R.IterationUs, 2 * (10 + 1000 + BlockUs + 100), 1e-6);
}

TEST(SimIdeal, IsComputeAlone) {
  SimResult R = run(twoBlocks(ACCESS_MODE_WRITE), opts(Policy::Ideal, 2 * MiB));
  EXPECT_NEAR(R.IterationUs, 200, 1e-9);
  EXPECT_EQ(R.Faults, 0);
  EXPECT_EQ(R.BytesHtoD, 0);
}

TEST(SimDeepUm, LearnsChainsAndPrefetchesAheadOfTheKernel) {
  // Three blocks, room for two, 5 ms kernels. Plain UM faults every block in:
  // 10 us + transfer per kernel.
  v1::Profile P = threeCycle();
  SimResult Um = run(P, opts(Policy::Um, 4 * MiB));
  EXPECT_NEAR(Um.IterationUs, 3 * (10 + BlockUs + 5000), 1e-6);
  // DeepUM: after the warm-up its tables know each launch's block and
  // successor; when launch k is observed (k-1 running), k's block is fetched
  // in place of k+1's (needed later), and arrives in 2 ms < 5 ms.
  SimResult D = run(P, opts(Policy::DeepUm, 4 * MiB));
  EXPECT_NEAR(D.IterationUs, 15000, 1e-6);
  EXPECT_EQ(D.Faults, 0);
  EXPECT_EQ(D.PrefetchHits, 3);
  EXPECT_EQ(D.BytesPrefetched, 6.0 * MiB);
  EXPECT_EQ(D.BytesDtoH, 0);
}

TEST(SimDeepUm, TheHostWaitingAtTheIterationsEndDelaysTheFirstLaunchsPrefetch) {
  // The same three 5 ms kernels, the host reading the loss at each
  // iteration's end (deepum-sim's default): launch 0 is seen only when the
  // last kernel has ended, so the block DeepUM fetches for it arrives a
  // transfer after that, and the iteration is that much longer. Launches 1
  // and 2 are seen while their predecessors run, as before.
  v1::Profile P = threeCycle();
  SimOptions O = opts(Policy::DeepUm, 4 * MiB);
  O.HostWaitsEachIteration = true;
  SimResult D = run(P, O);
  EXPECT_NEAR(D.IterationUs, 15000 + BlockUs, 1e-6);
  EXPECT_EQ(D.Faults, 0);
  EXPECT_EQ(D.PrefetchHits, 3);
  EXPECT_EQ(D.LatePrefetches, 1);
}

TEST(SimDeepUm, ExecutionIdsIncludeTheArguments) {
  // Same kernel name and configuration, different tensors: different IDs.
  auto W = takeOk(sim::detail::workloadFromProfile(threeCycle()));
  ASSERT_EQ(W.LaunchIds.size(), 3u);
  EXPECT_NE(W.LaunchIds[0], W.LaunchIds[1]);
  EXPECT_NE(W.LaunchIds[1], W.LaunchIds[2]);
}

TEST(SimDeepUm, InvalidatesBlocksOfFreedAllocations) {
  // k0 writes a temporary T, k1 reads it, then T is freed; k2 reads a
  // parameter. With room for two blocks, UM writes T back when evicting it;
  // DeepUM drops it at the free.
  ProfileBuilder B;
  uint64_t W0 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t W1 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t T = B.allocate(2 * MiB, 1, 250'000, v1::ALLOCATION_ROLE_ACTIVATION);
  B.kernel("k0", 100'000, {{T, ACCESS_MODE_WRITE}, {W0, ACCESS_MODE_READ}});
  B.kernel("k1", 100'000, {{T, ACCESS_MODE_READ}});
  B.kernel("k2", 100'000, {{W1, ACCESS_MODE_READ}});
  B.iteration(0, 3);
  v1::Profile P = B.build();
  // T lives in the iteration only from t=1: allocated after k0 started? No:
  // k0 starts at 0, so the allocation at 1 is observed with launch 1; the free
  // at 250 us (during k2) is observed with the next launch (position 0).
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  ASSERT_EQ(Wl.dead(0).size(), 1u);
  SimResult Um = run(P, opts(Policy::Um, 4 * MiB));
  SimResult D = run(P, opts(Policy::DeepUm, 4 * MiB));
  EXPECT_GT(Um.BytesDtoH, 0);
  EXPECT_EQ(D.BytesDtoH, 0);
  EXPECT_EQ(D.BytesDiscarded, 2.0 * MiB);
  EXPECT_EQ(D.LostReads, 0);
  EXPECT_LE(D.IterationUs, Um.IterationUs);
}

TEST(SimDeepUm, AnAllocationMadeAndFreedBetweenTwoLaunchesKillsNoBlock) {
  // W (a parameter, pages 0-15 of a block) is read by every kernel; Z shares
  // W's block (pages 16-31) and is made and freed between k0 and k1, never
  // used. Frees are applied before allocations at a boundary, so Z's free
  // would take the block's live count through zero: W's block must not die.
  ProfileBuilder B;
  uint64_t W = B.allocate(1 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  const uint64_t ZAddress = B.profile().allocations(0).address() + 1 * MiB;
  for (int It = 0; It < 3; ++It) {
    const uint64_t T0 = B.now();
    B.allocate(1 * MiB, T0 + 100'001, static_cast<int64_t>(T0 + 100'002),
               v1::ALLOCATION_ROLE_WORKSPACE, ZAddress);
    B.kernel("k0", 100'000, {{W, ACCESS_MODE_READ}});
    B.kernel("k1", 100'000, {{W, ACCESS_MODE_READ}});
    B.iteration(static_cast<uint32_t>(It * 2), 2);
  }
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  EXPECT_TRUE(Wl.dead(0).empty());
  EXPECT_TRUE(Wl.dead(1).empty());
  SimResult D = run(P, opts(Policy::DeepUm, 4 * MiB));
  EXPECT_EQ(D.BytesDiscarded, 0);
  EXPECT_EQ(D.LostReads, 0);
}

TEST(SimSwapLayer, SwapsActivationOutAfterForwardAndBackBeforeBackward) {
  // X is written by k0 (forward) and read by k11 (backward); Y appears at k6
  // (the peak of live activations, the turn). Lookahead 2: X goes out at
  // position 1 (written back: dirty) and comes back at position 9.
  ProfileBuilder B;
  uint64_t X = B.allocate(2 * MiB, 0, 60'000'000, v1::ALLOCATION_ROLE_ACTIVATION);
  uint64_t Y = B.allocate(2 * MiB, 29'999'999, 60'000'000, v1::ALLOCATION_ROLE_ACTIVATION);
  for (int K = 0; K < 12; ++K) {
    if (K == 0)
      B.kernel("fwd", 5'000'000, {{X, ACCESS_MODE_WRITE}});
    else if (K == 6)
      B.kernel("mid", 5'000'000, {{Y, ACCESS_MODE_WRITE}});
    else if (K == 7)
      B.kernel("mid2", 5'000'000, {{Y, ACCESS_MODE_READ}});
    else if (K == 11)
      B.kernel("bwd", 5'000'000, {{X, ACCESS_MODE_READ}});
    else
      B.kernel("other", 5'000'000, std::vector<ProfileBuilder::Use>{});
  }
  B.iteration(0, 12);
  v1::Profile P = B.build();
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  sim::detail::Schedule S = sim::detail::swapLayerSchedule(Wl, 2);
  ASSERT_EQ(S.Cmds.size(), 2u);
  ASSERT_EQ(S.at(1).size(), 1u);
  EXPECT_EQ(S.at(1)[0].Kind, sim::detail::CmdKind::Evict);
  ASSERT_EQ(S.at(9).size(), 1u);
  EXPECT_EQ(S.at(9)[0].Kind, sim::detail::CmdKind::Prefetch);

  SimOptions O = opts(Policy::SwapLayer, 8 * MiB);
  O.Lookahead = 2;
  SimResult R = run(P, O);
  // Both copies overlap 5 ms kernels, one block each way. X and Y are freed
  // at the end of the iteration and handed out again from the swapping
  // system's device-memory pool: k0 and k6 find them on the GPU, with no
  // fault and nothing copied (on Unified Memory they would fault: one batch
  // each, 10 us).
  EXPECT_NEAR(R.IterationUs, 60000, 1e-6);
  EXPECT_EQ(R.Faults, 0);
  EXPECT_EQ(R.BytesDemand, 0);
  EXPECT_EQ(R.BytesDtoH, 2.0 * MiB);
  EXPECT_EQ(R.BytesPrefetched, 2.0 * MiB);
  EXPECT_EQ(R.PrefetchHits, 1);
}

TEST(SimSwapOpt, ChoosesUntilThePeakFitsAndTimesSwapsToNeverStall) {
  // Three persistent 2 MiB tensors, room for two; 5 ms kernels: k0 writes
  // A, k1 reads B, k2 reads C, k3 reads A. Load is 6 MiB everywhere; the
  // first peak is position 0, spanned by B's idle interval (1 -> 5) and C's
  // (2 -> 6): equal in every ranking, so the earlier object, B, is chosen.
  // Then position 1 peaks: A's (0 -> 3) and C's intervals span it; C is
  // absent longer (3 kernels vs 2) and larger in size x absence: C wins.
  ProfileBuilder B;
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t Bt = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t C = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("k0", 5'000'000, {{A, ACCESS_MODE_WRITE}});
  B.kernel("k1", 5'000'000, {{Bt, ACCESS_MODE_READ}});
  B.kernel("k2", 5'000'000, {{C, ACCESS_MODE_READ}});
  B.kernel("k3", 5'000'000, {{A, ACCESS_MODE_READ}});
  B.iteration(0, 4);
  v1::Profile P = B.build();
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  sim::detail::Schedule S = sim::detail::swapOptSchedule(Wl, 4 * MiB, handDevice());
  // B: out at 2, back at 5 = 1 (issued while k0 runs: 5 ms cover 2.1 ms +
  // 10 us); C: out at 3, back at 6 = 2.
  auto Has = [&](uint32_t Pos, sim::detail::CmdKind K, uint32_t Block) {
    for (const auto &Cmd : S.at(Pos))
      if (Cmd.Kind == K && Cmd.Block == Block)
        return true;
    return false;
  };
  uint32_t BBlock = Wl.uses(1)[0].Block, CBlock = Wl.uses(2)[0].Block;
  EXPECT_TRUE(Has(2, sim::detail::CmdKind::Evict, BBlock));
  EXPECT_TRUE(Has(1, sim::detail::CmdKind::Prefetch, BBlock));
  EXPECT_TRUE(Has(3, sim::detail::CmdKind::Evict, CBlock));
  EXPECT_TRUE(Has(2, sim::detail::CmdKind::Prefetch, CBlock));
  EXPECT_EQ(S.Cmds.size(), 4u);

  // The load is exactly the capacity: when launch 2 is observed (k1 running),
  // C can only start once B's room is free at the end of k1: k2 waits for
  // one transfer, once per iteration.
  SimResult R = run(P, opts(Policy::SwapOpt, 4 * MiB));
  EXPECT_NEAR(R.IterationUs, 20000 + BlockUs, 1e-6);
  EXPECT_EQ(R.LatePrefetches, 1);
  EXPECT_EQ(R.Faults, 0);
  EXPECT_EQ(R.BytesHtoD, 4.0 * MiB);
  EXPECT_EQ(R.BytesDtoH, 0); // B and C are only read: dropped
  SimResult Um = run(P, opts(Policy::Um, 4 * MiB));
  EXPECT_GT(Um.IterationUs, R.IterationUs);
}

namespace {
/// `Objects` swap objects over `Kernels` launches, each live over a stretch
/// of them: some from before the iteration, some past its end, some wrapping
/// around it (made late, freed early in the next), some never freed.
sim::detail::Workload stretchedObjects(uint32_t Objects, uint32_t Kernels) {
  sim::detail::Workload W;
  W.Kernels = Kernels;
  for (uint32_t I = 0; I < Objects; ++I) {
    sim::detail::SwapObject O;
    O.Bytes = (I % 7 + 1) * MiB;
    O.Activation = I % 3 != 0;
    const int64_t A = (int64_t{I} * 7919) % Kernels, F = (int64_t{I} * 104729 + 13) % Kernels;
    switch (I % 4) {
    case 0: // made and freed within the iteration, or wrapping when F < A
      O.AllocPos = A;
      O.FreePos = F;
      break;
    case 1: // carried in, freed within
      O.FreePos = F;
      break;
    case 2: // made within, lives on
      O.AllocPos = A;
      break;
    default: // persistent
      break;
    }
    W.Objects.push_back(O);
  }
  return W;
}
} // namespace

TEST(SimSwapOpt, TheLoadCostsObjectsPlusLaunchesNotTheirProduct) {
  // swap-layer and swap-opt weigh every position by the bytes live there.
  // Counted object by object and position by position it took objects x
  // launches steps: 10^8 on a profile of 10k of each, the quadratic step of
  // deepum-sim --compare on large profiles. Steps: 8x the workload, at most
  // about 8x the work; the load itself as each object's liveness says.
  auto Activation = [](const sim::detail::SwapObject &O) { return O.Activation; };
  uint64_t Small = 0, Large = 0;
  for (uint32_t Scale : {1u, 8u}) {
    const uint32_t N = 500 * Scale;
    sim::detail::Workload W = stretchedObjects(N, N);
    uint64_t Steps = 0;
    std::vector<int64_t> Load = sim::detail::liveBytes(W, Activation, &Steps);
    (Scale == 1 ? Small : Large) = Steps;
    EXPECT_LE(Steps, 2u * (W.Objects.size() + W.Kernels));
    ASSERT_EQ(Load.size(), W.Kernels);
    for (uint32_t P = 0; P < W.Kernels; P += 97) {
      int64_t Want = 0;
      for (const sim::detail::SwapObject &O : W.Objects) {
        const bool Wraps = O.AllocPos >= 0 && O.FreePos >= 0 && O.FreePos < O.AllocPos;
        const bool Made = O.AllocPos < 0 || P >= O.AllocPos;
        const bool NotFreed = O.FreePos < 0 || P < O.FreePos;
        if (O.Activation && (Wraps ? (Made || NotFreed) : (Made && NotFreed)))
          Want += static_cast<int64_t>(O.Bytes);
      }
      EXPECT_EQ(Load[P], Want) << "position " << P;
    }
  }
  EXPECT_LE(Large, 9 * Small);
}

namespace {
/// threeCycle with a kernel name per layer: the executor, which replays
/// plans, tells launches apart by their execution IDs.
v1::Profile threeLayers() {
  ProfileBuilder B;
  std::vector<uint64_t> T;
  for (int I = 0; I < 3; ++I)
    T.push_back(B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER));
  for (int I = 0; I < 3; ++I)
    B.kernel("gemm" + std::to_string(I), 5'000'000, {{T[I], ACCESS_MODE_READ}});
  B.iteration(0, 3);
  return B.build();
}

/// The three-layer trace as a plan in arena space: block k for launch k;
/// at position k prefetch block k+1 and evict block k-1.
v1::Plan cyclePlan(bool DiscardInsteadOfEvict = false) {
  v1::Plan Pl;
  Pl.set_format_version(format::kPlanFormatVersion);
  Pl.mutable_metadata()->set_gpu_memory_bytes(4 * MiB);
  Pl.mutable_metadata()->set_um_block_bytes(2 * MiB);
  Pl.mutable_layout()->set_arena_bytes(3 * 2 * MiB);
  for (uint32_t K = 0; K < 3; ++K) {
    const uint64_t Id = builderId("gemm" + std::to_string(K)); // threeLayers' kernels
    v1::ExecutionIdEntry *E = Pl.add_execution_ids(); // what the executor finds launches by
    E->set_execution_id(Id);
    E->add_positions(K);
    Pl.add_position_ids(Id);
    v1::BlockChain *C = Pl.add_block_chains();
    C->set_execution_id(Id);
    C->set_position(K);
    C->add_blocks(K);
    C->add_modes(ACCESS_MODE_READ);
  }
  for (uint32_t K = 0; K < 3; ++K) {
    v1::Action *E = Pl.add_actions();
    E->set_kind(DiscardInsteadOfEvict ? v1::ACTION_KIND_DISCARD : v1::ACTION_KIND_EVICT);
    E->set_position(K);
    v1::ArenaRange *R = E->add_ranges();
    R->set_offset(((K + 2) % 3) * 2 * MiB);
    R->set_bytes(2 * MiB);
    v1::Action *A = Pl.add_actions();
    A->set_kind(v1::ACTION_KIND_PREFETCH);
    A->set_position(K);
    R = A->add_ranges();
    R->set_offset(((K + 1) % 3) * 2 * MiB);
    R->set_bytes(2 * MiB);
  }
  return Pl;
}
} // namespace

TEST(SimPlan, ReplaysActionsInArenaSpace) {
  v1::Profile P = threeLayers();
  v1::Plan Pl = cyclePlan();
  SimOptions O = opts(Policy::Plan, 0); // capacity from the plan: 4 MiB
  O.Plan = &Pl;
  SimResult R = run(P, O);
  EXPECT_EQ(R.GpuMemoryBytes, 4 * MiB);
  // Position k is observed while k-1 runs: k+1's block has 2 launches (10 ms)
  // to arrive; the eviction of k-1's block waits for k-1 to finish.
  EXPECT_NEAR(R.IterationUs, 15000, 1e-6);
  EXPECT_EQ(R.Faults, 0);
  EXPECT_EQ(R.BytesPrefetched, 6.0 * MiB);
  EXPECT_EQ(R.PrefetchHits, 3);
  EXPECT_EQ(R.LostReads, 0);
}

TEST(SimPlan, DiscardingLiveDataIsReportedAsLostReads) {
  v1::Profile P = threeLayers();
  v1::Plan Pl = cyclePlan(/*DiscardInsteadOfEvict=*/true);
  SimOptions O = opts(Policy::Plan, 0);
  O.Plan = &Pl;
  SimResult R = run(P, O);
  EXPECT_GT(R.LostReads, 0);
  EXPECT_EQ(R.BytesHtoD, 0); // nothing valid left to copy
}

TEST(SimPlan, AReleaseOfThePreviousIterationGoesBeforeThePrefetchThatReusesItsBlock) {
  // gemm2 overwrites block 2 every iteration. At position 0 the plan discards
  // it (last used at position 2, of the previous iteration: due 2 > 0) and
  // maps it again ahead of gemm2. Both go before launch 0, in plan order; a
  // discard issued after launch 0 would drop the block just prefetched, and
  // gemm2 would fault on it every iteration.
  ProfileBuilder B;
  std::vector<uint64_t> T;
  for (int I = 0; I < 3; ++I)
    T.push_back(B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER));
  B.kernel("gemm0", 5'000'000, {{T[0], ACCESS_MODE_READ}});
  B.kernel("gemm1", 5'000'000, {{T[1], ACCESS_MODE_READ}});
  B.kernel("gemm2", 5'000'000, {{T[2], ACCESS_MODE_WRITE}});
  B.iteration(0, 3);
  v1::Profile P = B.build();
  v1::Plan Pl = cyclePlan();
  Pl.clear_actions();
  Pl.mutable_block_chains(2)->set_modes(0, ACCESS_MODE_WRITE);
  Pl.mutable_metadata()->set_gpu_memory_bytes(6 * MiB); // everything fits
  for (v1::ActionKind Kind : {v1::ACTION_KIND_DISCARD, v1::ACTION_KIND_PREFETCH}) {
    v1::Action *A = Pl.add_actions();
    A->set_kind(Kind);
    A->set_position(0);
    A->set_due_position(2);
    v1::ArenaRange *R = A->add_ranges();
    R->set_offset(2 * 2 * MiB);
    R->set_bytes(2 * MiB);
  }
  SimOptions O = opts(Policy::Plan, 0);
  O.Plan = &Pl;
  SimResult R = run(P, O);
  EXPECT_EQ(R.Faults, 0);
  EXPECT_EQ(R.BytesDiscarded, 2.0 * MiB); // once per iteration, before the prefetch
  EXPECT_EQ(R.BytesHtoD, 0);              // dead contents are mapped, never copied
  EXPECT_NEAR(R.IterationUs, 15000, 1e-6);
}

TEST(SimLoop, EveryPolicyRunsInTheOneLoopAndReportsOneType) {
  // The same kernels under every policy, the plan's included: the loop's
  // figures that do not depend on the policy agree, and each policy's time
  // respects them.
  v1::Profile P = threeLayers();
  v1::Plan Pl = cyclePlan();
  std::vector<SimResult> Rs;
  for (Policy Pol : {Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt, Policy::Plan,
                     Policy::Ideal}) {
    SCOPED_TRACE(policyName(Pol).str());
    SimOptions O = opts(Pol, 4 * MiB, 3, 2);
    O.Plan = &Pl;
    Rs.push_back(run(P, O));
    const SimResult &R = Rs.back();
    EXPECT_EQ(R.PolicyName, policyName(Pol).str());
    EXPECT_EQ(R.KernelsPerIteration, 3u);
    EXPECT_EQ(R.MeasuredIterations, 3u);
    EXPECT_EQ(R.GpuMemoryBytes, 4 * MiB);
    EXPECT_EQ(R.IdealUs, Rs.front().IdealUs);
    EXPECT_EQ(R.BoundUs, Rs.front().BoundUs);
    EXPECT_EQ(R.CutBoundUs, Rs.front().CutBoundUs);
    EXPECT_GE(R.IterationUs, R.LowerBoundUs * (1 - 1e-9));
    EXPECT_NEAR(R.SlowdownOverIdeal, R.IterationUs / R.IdealUs, 1e-12);
  }
  EXPECT_EQ(Rs.back().IterationUs, Rs.back().IdealUs); // ideal moves nothing
  EXPECT_EQ(Rs.back().BytesHtoD, 0);
  EXPECT_LT(Rs[4].IterationUs, Rs[0].IterationUs); // the plan beats the driver alone
}

TEST(SimPlan, PlanForOtherKernelsNamesBothFiles) {
  v1::Profile P = twoBlocks(ACCESS_MODE_READ);
  v1::Plan Pl = cyclePlan();
  SimOptions O = opts(Policy::Plan, 0);
  O.Plan = &Pl;
  O.PlanName = "x.plan.pb";
  O.ProfileName = "y.profile.pb";
  std::string E = errorText(simulate(P, O));
  EXPECT_NE(E.find("x.plan.pb"), std::string::npos) << E;
  EXPECT_NE(E.find("y.profile.pb"), std::string::npos) << E;
  EXPECT_NE(E.find("no run of 3 kernels"), std::string::npos) << E;
}

// --- Hostile input: valid profiles and plans at the edges of the format -------

namespace {
const Policy kEveryProfilePolicy[] = {Policy::Um, Policy::DeepUm, Policy::SwapLayer,
                                      Policy::SwapOpt, Policy::Ideal};
}

TEST(SimHostile, AllocationNear2To64BytesIsSimulatedByTheBlocksUsed) {
  // Valid: it ends exactly at the top of the address space. Only its first
  // 64 KiB is touched; an input batch so that host writes are derived too.
  ProfileBuilder B;
  const uint64_t Address = uint64_t{1} << 40;
  uint64_t H = B.allocate(UINT64_MAX - Address, 0, -1, v1::ALLOCATION_ROLE_INPUT, Address);
  B.kernel("k0", 100'000, {{H, ACCESS_MODE_READ, 0, 64 << 10}});
  B.kernel("k1", 100'000, {{H, ACCESS_MODE_WRITE, 0, 64 << 10}});
  B.iteration(0, 2);
  v1::Profile P = B.build();
  ASSERT_FALSE(format::validateProfile(P));
  for (Policy Pol : kEveryProfilePolicy) {
    SCOPED_TRACE(policyName(Pol).str());
    SimResult R = run(P, opts(Pol, 4 * MiB));
    EXPECT_GT(R.IterationUs, 0);
  }
}

TEST(SimHostile, AllocationIdsEqualToHashTableSentinels) {
  // 2^64-1 and 2^64-2 are llvm::DenseMap's empty and tombstone keys.
  ProfileBuilder B;
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t C = B.allocate(4 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION);
  uint64_t D = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION);
  B.kernel("k0", 100'000, {{A, ACCESS_MODE_READ}, {C, ACCESS_MODE_WRITE}});
  B.kernel("k1", 100'000, {{C, ACCESS_MODE_READ}, {D, ACCESS_MODE_WRITE}});
  B.kernel("k2", 100'000, {{D, ACCESS_MODE_READ}, {A, ACCESS_MODE_READ}});
  B.iteration(0, 3);
  v1::Profile P = B.build(), Q = P;
  // Order-preserving (ids also order some ties): the last two get the sentinels.
  const uint64_t N = static_cast<uint64_t>(P.allocations_size());
  auto Remap = [N](uint64_t Id) { return UINT64_MAX - (N - Id); };
  for (v1::Allocation &Al : *Q.mutable_allocations())
    Al.set_id(Remap(Al.id()));
  for (v1::Kernel &K : *Q.mutable_kernels())
    for (v1::TensorAccess &T : *K.mutable_tensors())
      T.set_allocation_id(Remap(T.allocation_id()));
  ASSERT_FALSE(format::validateProfile(Q));
  for (Policy Pol : kEveryProfilePolicy) {
    SCOPED_TRACE(policyName(Pol).str());
    SimResult X = run(P, opts(Pol, 6 * MiB)), Y = run(Q, opts(Pol, 6 * MiB));
    EXPECT_EQ(X.IterationUs, Y.IterationUs);
    EXPECT_EQ(X.Faults, Y.Faults);
    EXPECT_EQ(X.BytesHtoD, Y.BytesHtoD);
    EXPECT_EQ(X.BytesDtoH, Y.BytesDtoH);
    EXPECT_EQ(X.BytesDiscarded, Y.BytesDiscarded);
  }
}

TEST(SimHostile, PlanBlocksEqualToHashTableSentinels) {
  // Block chains naming arena blocks 2^64-1 and 2^64-2 (DenseMap's reserved
  // keys), far past the plan's arena: the executor, which replays plans,
  // refuses them by name; nothing reaches a map keyed by block.
  v1::Profile P = threeLayers();
  auto withBlocks = [](uint64_t Base) {
    v1::Plan Pl = cyclePlan();
    for (v1::BlockChain &C : *Pl.mutable_block_chains())
      C.set_blocks(0, Base - C.position());
    return Pl;
  };
  for (uint64_t Base : {uint64_t{1002}, UINT64_MAX}) {
    v1::Plan X = withBlocks(Base);
    SimOptions O = opts(Policy::Plan, 0);
    O.Plan = &X;
    std::string E = errorText(simulate(P, O));
    EXPECT_NE(E.find("names block " + std::to_string(Base)), std::string::npos) << E;
    EXPECT_EQ(E.find('\n'), std::string::npos) << E;
  }
}

TEST(SimHostile, EngineAddressesOfSentinelBlocks) {
  Engine E(handDevice(), 8 * MiB);
  const uint64_t Top = UINT64_MAX / (2 * MiB); // the highest UM block
  uint32_t A = E.blockId(UINT64_MAX), B = E.blockId(UINT64_MAX - 1), C = E.blockId(Top);
  EXPECT_NE(A, B);
  EXPECT_NE(A, C);
  EXPECT_EQ(E.blockId(UINT64_MAX), A);
  EXPECT_EQ(E.blockId(UINT64_MAX - 1), B);
}

TEST(SimErrors, KernelLargerThanCapacity) {
  std::string E = errorText(simulate(twoBlocks(ACCESS_MODE_READ), opts(Policy::Um, 1 * MiB)));
  EXPECT_NE(E.find("more than the GPU memory"), std::string::npos) << E;
}

TEST(SimOutput, JsonHasTheStableKeys) {
  SimResult R = run(oneBlock(), opts(Policy::Um, 4 * MiB));
  llvm::json::Value V = toJson(R);
  const llvm::json::Object *O = V.getAsObject();
  ASSERT_TRUE(O);
  for (const char *K : {"policy", "device", "gpu_memory_bytes", "iteration_us", "ideal_us",
                        "bound_us", "stall_us", "faults", "fault_batches", "bytes_htod",
                        "bytes_dtoh", "evictions", "prefetch_hits", "bound_or_ideal_us"})
    EXPECT_TRUE(O->get(K)) << K;
  EXPECT_EQ(O->getString("policy"), llvm::StringRef("um"));
}

// deepum-sim --json's field names per schema version (docs/tools.md).
TEST(SimOutput, JsonFieldsArePinnedPerSchemaVersion) {
  const std::map<int64_t, std::set<std::string>> Pinned = {
      {1,
       {"schema", "policy", "device", "model", "gpu_memory_bytes", "footprint_bytes",
        "iterations", "warmup_iterations", "kernels_per_iteration", "durations",
        "profile_device", "iteration_us", "repeats_every", "iteration_spread_us", "ideal_us",
        "bound_us", "bound_or_ideal_us", "cut_bound_us", "lower_bound_us",
        "bounds_compute_only", "stall_us", "slowdown", "faults", "fault_batches", "bytes_htod",
        "bytes_dtoh", "bytes_prefetched", "bytes_driver_prefetched", "bytes_demand",
        "evictions", "bytes_discarded", "prefetch_hits", "late_prefetches", "thrashing_events",
        "throttled_batches", "lost_reads", "lost_contents", "peak_resident_bytes",
        "invariant_violations", "bytes_copied_out", "bytes_copied_in", "policy_peak_bytes"}}};
  deepum::test::expectPinnedKeys(toJson(run(oneBlock(), opts(Policy::Um, 4 * MiB))), Pinned, {},
                                 "deepum-sim --json");
}

TEST(SimOutput, TimelineHasComputeCopyAndResidentLanes) {
  format::TraceWriter T;
  SimOptions O = opts(Policy::Um, 2 * MiB, /*Iterations=*/2, /*Warmup=*/1);
  takeOk(simulate(twoBlocks(ACCESS_MODE_WRITE), O, &T));
  llvm::json::Value V = T.finish();
  std::map<int64_t, std::string> Lanes;
  std::vector<std::string> Iterations;
  std::set<std::string> Names, CounterTracks;
  for (const llvm::json::Value &Ev : *V.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object *E = Ev.getAsObject();
    llvm::StringRef Ph = *E->getString("ph"), Name = *E->getString("name");
    Names.insert(Name.str());
    if (Ph == "M" && Name == "thread_name")
      Lanes[*E->getInteger("tid")] = E->getObject("args")->getString("name")->str();
    if (Ph == "X" && E->getString("cat") == llvm::StringRef("iteration")) {
      Iterations.push_back(Name.str());
      EXPECT_GT(*E->getNumber("dur"), 0);
      EXPECT_EQ(Lanes[*E->getInteger("tid")], "iterations");
    }
    if (Ph == "C")
      for (const auto &KV : *E->getObject("args"))
        CounterTracks.insert((Name + " " + KV.first.str()).str()); // as Perfetto names it
  }
  for (const char *S : {"k0", "fault batch", "evict"})
    EXPECT_TRUE(Names.count(S)) << S;
  std::set<std::string> LaneNames;
  for (const auto &L : Lanes)
    LaneNames.insert(L.second);
  for (const char *S : {"compute", "copy engine HtoD", "copy engine DtoH", "iterations"})
    EXPECT_TRUE(LaneNames.count(S)) << S;
  // One slice per simulated iteration, warm-up marked; the details are the last's.
  EXPECT_EQ(Iterations,
            (std::vector<std::string>{"iteration 0 (warm-up)", "iteration 1", "iteration 2"}));
  // Counters carry their unit and never repeat their name.
  EXPECT_EQ(CounterTracks, (std::set<std::string>{"GPU memory resident (MiB)"}));
}

TEST(SimDurations, RooflineOfAnotherDeviceReplacesRecordedDurations) {
  ProfileBuilder B("v100-pcie-16gb");
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("aten::mm", 100'000, {{A, ACCESS_MODE_READ}});
  B.kernel("aten::add", 100'000, {{A, ACCESS_MODE_READ}});
  B.iteration(0, 2);
  v1::Profile P = B.build();
  P.mutable_kernels(0)->set_flops(1e9);      // matmul: 1e9 / (1e12 x 0.5) = 2 ms
  P.mutable_kernels(1)->set_dram_bytes(5e5); // memory: 5e5 / (1e9 x 0.5) = 1 ms
  SimOptions O = opts(Policy::Ideal, 4 * MiB);
  O.Device.MatmulFlopsPerSecond = 1e12;
  O.Device.VectorFlopsPerSecond = 1e11;
  O.Device.DramBytesPerSecond = 1e9;
  O.Device.MatmulEfficiency = 0.5;
  O.Device.MemoryEfficiency = 0.5;
  O.Device.KernelMinUs = 3;
  SimResult R = run(P, O);
  EXPECT_EQ(R.Durations, "roofline");
  EXPECT_NEAR(R.IdealUs, 3000, 1e-9);
  O.Durations = SimOptions::DurationSource::Profile;
  R = run(P, O);
  EXPECT_EQ(R.Durations, "profile");
  EXPECT_NEAR(R.IdealUs, 200, 1e-9);
  // Same device as recorded: durations stay.
  O.Durations = SimOptions::DurationSource::Auto;
  O.Device.Name = "v100-pcie-16gb";
  EXPECT_NEAR(run(P, O).IdealUs, 200, 1e-9);
}

TEST(SimDurations, RecordedFaultStallIsNotCompute) {
  // A profile recorded while the kernels faulted: the simulator models the
  // paging itself, so the recorded wait on faults must not count as compute
  // (or the faults would be paid twice).
  ProfileBuilder B;
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("aten::mm", 100'000, {{A, ACCESS_MODE_READ}});
  B.kernel("aten::add", 100'000, {{A, ACCESS_MODE_READ}});
  B.iteration(0, 2);
  v1::Profile P = B.build();
  P.mutable_kernels(0)->set_fault_stall_ns(60'000);
  SimOptions O = opts(Policy::Ideal, 4 * MiB);
  O.Durations = SimOptions::DurationSource::Profile;
  EXPECT_NEAR(run(P, O).IdealUs, 140, 1e-9);
  EXPECT_NEAR(run(P, opts(Policy::Um, 4 * MiB)).IterationUs, 140, 1e-9); // resident after warm-up
}

TEST(SimBound, CountsPagesReadNextAtTensorGranularity) {
  // X (pages 0-15) and Y (pages 16-31) share a block; k0 reads X and
  // overwrites Y (the block's mode is READ_WRITE), k1 reads Z (a block).
  // Room for one block. Live at every boundary: X (read next) and Z, not Y
  // (overwritten next): 3 MiB, 2 MiB fit: 1 MiB per iteration.
  ProfileBuilder B;
  uint64_t X = B.allocate(1 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t Y = B.allocate(1 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION,
                          B.profile().allocations(0).address() + 1 * MiB);
  uint64_t Z = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER,
                          B.profile().allocations(0).address() + 2 * MiB);
  B.kernel("k0", 100'000, {{X, ACCESS_MODE_READ}, {Y, ACCESS_MODE_WRITE}});
  B.kernel("k1", 100'000, {{Z, ACCESS_MODE_READ}});
  B.iteration(0, 2);
  v1::Profile P = B.build();
  ASSERT_EQ(P.kernels(0).blocks(0).mode(), v1::ACCESS_MODE_READ_WRITE);
  SimResult R = run(P, opts(Policy::Ideal, 2 * MiB));
  EXPECT_NEAR(R.BoundUs, BlockUs / 2, 1e-6);
  // Every policy is above it.
  for (Policy Pol : {Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt})
    EXPECT_GE(run(P, opts(Pol, 2 * MiB)).IterationUs, std::max(R.IdealUs, R.BoundUs)) << int(Pol);
}

TEST(SimBound, MemoryAllocatedAnewIsNotReadOfOldContents) {
  // Tensors written and freed, their memory reused by others, every access
  // READ_WRITE (what deepum-profile records). Two addresses, A and B: X at
  // A over k0-k1, Z at B over k2-k3, Y at A over k4-k5, V at B over k6-k7;
  // 100 us kernels, room for one block. Blind to lifetimes, both blocks look
  // live at every boundary (each next use "reads"): 2 MiB would have to come
  // in per iteration. In truth at most one block holds live contents at any
  // boundary, nothing has to move, and deepum (which drops dead blocks)
  // beats the blind figure.
  ProfileBuilder B;
  const uint64_t A = uint64_t{1} << 40, Bb = A + 2 * MiB;
  for (int It = 0; It < 3; ++It) {
    std::vector<uint64_t> Ids;
    const uint64_t T0 = B.now();
    for (int T = 0; T < 4; ++T) // X, Z, Y, V: each over two kernels
      Ids.push_back(B.allocate(2 * MiB, T0 + T * 200'000,
                               static_cast<int64_t>(T0 + T * 200'000 + 199'999),
                               v1::ALLOCATION_ROLE_ACTIVATION, T % 2 ? Bb : A));
    for (int K = 0; K < 8; ++K)
      B.kernel("k" + std::to_string(K), 100'000, {{Ids[K / 2], v1::ACCESS_MODE_READ_WRITE}});
    B.iteration(static_cast<uint32_t>(It * 8), 8);
  }
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  // The first use of each tensor is fresh, the second is not.
  for (uint32_t K = 0; K < 8; ++K) {
    ASSERT_EQ(Wl.UseBegin[K + 1] - Wl.UseBegin[K], 1u);
    EXPECT_EQ(Wl.FreshMasks[Wl.UseBegin[K]], K % 2 == 0 ? ~uint32_t{0} : 0u) << "k" << K;
  }
  EXPECT_EQ(sim::detail::transferBoundBytes(Wl, 2 * MiB),
            std::make_pair(uint64_t{0}, uint64_t{0}));
  EXPECT_NEAR(sim::detail::cutBoundNs(Wl, 2 * MiB, 1e9, 1e9), 800'000, 1e-6);
  Wl.FreshMasks.clear(); // blind to lifetimes: the old, unsound figure
  EXPECT_EQ(sim::detail::transferBoundBytes(Wl, 2 * MiB).first, 2 * MiB);
  SimResult D = run(P, opts(Policy::DeepUm, 2 * MiB));
  EXPECT_NEAR(D.LowerBoundUs, 800, 1e-9);
  EXPECT_GE(D.IterationUs, D.LowerBoundUs * (1 - 1e-9));
  EXPECT_LT(D.IterationUs, BlockUs) << "deepum moves no dead block";
}

TEST(SimBound, MemoryNobodyWroteSinceItWasAllocatedHoldsNothingToKeep) {
  // Per iteration, X (2 MiB) is allocated before k0 and freed as k2 ends;
  // k0 and k2 read it, nothing writes it; k1 reads the parameters W and Y
  // (2 MiB each). Room for two blocks. k2's read is not X's first since it
  // was allocated, yet it reads nothing anyone produced: every policy may
  // populate X anew (the engine copies no page nobody wrote). Counting that
  // read as live charged a fetch of X to the bounds that no policy pays.
  ProfileBuilder B;
  const uint64_t W = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  const uint64_t Y = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  for (int It = 0; It < 3; ++It) {
    const uint64_t T0 = B.now();
    const uint64_t X = B.allocate(2 * MiB, T0, static_cast<int64_t>(T0 + 299'999),
                                  v1::ALLOCATION_ROLE_ACTIVATION, uint64_t{1} << 41);
    B.kernel("k0", 100'000, {{X, v1::ACCESS_MODE_READ}});
    B.kernel("k1", 100'000, {{W, v1::ACCESS_MODE_READ}, {Y, v1::ACCESS_MODE_READ}});
    B.kernel("k2", 100'000, {{X, v1::ACCESS_MODE_READ}});
    B.iteration(static_cast<uint32_t>(It * 3), 3);
  }
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  EXPECT_EQ(Wl.FreshMasks[Wl.UseBegin[2]], ~uint32_t{0}) << "k2 reads memory nobody wrote";
  SimResult R = run(P, opts(Policy::Ideal, 4 * MiB));
  for (Policy Pol : {Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt})
    EXPECT_GE(run(P, opts(Pol, 4 * MiB)).IterationUs, R.LowerBoundUs * (1 - 1e-9)) << int(Pol);
}

TEST(SimBound, CountsTheBytesOfDataNotThePagesTheyLieOn) {
  // Four parameters of 32 KiB, each alone in a 64 KiB page of one block at
  // the profile's addresses; k0 reads P0 and P1, k1 reads P2 and P3. A plan
  // lays them out anew and may pack two to a page: what must cross is data,
  // 128 KiB live at every boundary, not 256 KiB of pages. Room for 64 KiB:
  // 64 KiB per iteration (BlockUs / 32), where pages would say 192 KiB.
  constexpr uint64_t KiB = 1024;
  ProfileBuilder B;
  const uint64_t Base = uint64_t{1} << 40;
  std::vector<uint64_t> Ps;
  for (uint64_t I = 0; I < 4; ++I)
    Ps.push_back(B.allocate(32 * KiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER, Base + I * 64 * KiB));
  for (uint32_t It = 0; It < 3; ++It) {
    B.kernel("k0", 100'000, {{Ps[0], ACCESS_MODE_READ}, {Ps[1], ACCESS_MODE_READ}});
    B.kernel("k1", 100'000, {{Ps[2], ACCESS_MODE_READ}, {Ps[3], ACCESS_MODE_READ}});
    B.iteration(It * 2, 2);
  }
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  ASSERT_TRUE(Wl.Data);
  EXPECT_EQ(sim::detail::heldPages(Wl), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(sim::detail::heldBytes(*Wl.Data), (std::vector<int64_t>{64 * KiB, 64 * KiB}));
  EXPECT_EQ(sim::detail::transferBoundBytes(Wl, 64 * KiB).first, 192 * KiB) << "pages";
  EXPECT_EQ(sim::detail::transferBoundBytes(*Wl.Data, 64 * KiB).first, 64 * KiB) << "data";
  SimResult R = run(P, opts(Policy::Ideal, 64 * KiB));
  EXPECT_NEAR(R.BoundUs, BlockUs / 32, 1e-6);
}

TEST(SimBound, ReadsOnlyPartOfAPieceCountNothingToKeep) {
  // k0 writes X (64 KiB, one page), k1 reads only its first 16 KiB, k2 reads
  // all of it. Another layout may spread X's bytes over two pages, and what
  // k1 needs of X is 16 KiB of them: the bounds count a read of a piece only
  // where the kernel reads the whole piece, so k1's is not counted, k2's is.
  constexpr uint64_t KiB = 1024;
  ProfileBuilder B;
  const uint64_t X = B.allocate(64 * KiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  for (uint32_t It = 0; It < 3; ++It) {
    B.kernel("k0", 100'000, {{X, ACCESS_MODE_WRITE}});
    B.kernel("k1", 100'000, {{X, ACCESS_MODE_READ, 0, 16 * KiB}});
    B.kernel("k2", 100'000, {{X, ACCESS_MODE_READ}});
    B.iteration(It * 3, 3);
  }
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  const sim::detail::Workload &D = *Wl.Data;
  for (uint32_t K = 0; K < 3; ++K)
    ASSERT_EQ(D.UseBegin[K + 1] - D.UseBegin[K], 1u) << "k" << K;
  EXPECT_EQ(D.WriteMasks[D.UseBegin[0]], 1u);
  EXPECT_EQ(D.ReadMasks[D.UseBegin[1]], 0u) << "16 KiB of a 64 KiB piece";
  EXPECT_EQ(D.ReadMasks[D.UseBegin[2]], 1u);
  EXPECT_EQ(sim::detail::heldBytes(D), (std::vector<int64_t>{64 * KiB, 16 * KiB, 64 * KiB}));
  EXPECT_EQ(Wl.ReadMasks[Wl.UseBegin[1]], 1u) << "pages: any byte read reads the page";
}

TEST(SimBound, MemoryHandedOnBeforeItsLastUseKeepsEachAllocationsLifetime) {
  // The caching allocator frees X when its last use, k1, is queued, and hands
  // its memory (same address, same size) to Y as k2 is queued: X's free is
  // stamped at k2's start, like Y's allocation. k2 writes Y, k3 reads it,
  // and k3's read is of contents k2 produced, whatever X's free observed after
  // Y's allocation says of the memory. (Counted by address, Y's read was
  // taken for a read of memory allocated anew: the bounds of gpt2-medium at
  // 2x fell by 42%.)
  ProfileBuilder B;
  const uint64_t Addr = uint64_t{1} << 41;
  for (uint32_t It = 0; It < 3; ++It) {
    const uint64_t T0 = B.now();
    const uint64_t X = B.allocate(2 * MiB, T0, static_cast<int64_t>(T0 + 200'000),
                                  v1::ALLOCATION_ROLE_ACTIVATION, Addr);
    const uint64_t Y = B.allocate(2 * MiB, T0 + 200'000, static_cast<int64_t>(T0 + 399'999),
                                  v1::ALLOCATION_ROLE_ACTIVATION, Addr);
    B.kernel("k0", 100'000, {{X, ACCESS_MODE_WRITE}});
    B.kernel("k1", 100'000, {{X, ACCESS_MODE_READ}});
    B.kernel("k2", 100'000, {{Y, ACCESS_MODE_WRITE}});
    B.kernel("k3", 100'000, {{Y, ACCESS_MODE_READ}});
    B.iteration(It * 4, 4);
  }
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  const sim::detail::Workload &D = *Wl.Data;
  for (uint32_t K : {1u, 3u}) {
    ASSERT_EQ(D.UseBegin[K + 1] - D.UseBegin[K], 1u) << "k" << K;
    EXPECT_EQ(D.boundReads(D.UseBegin[K]), ~uint32_t{0}) << "k" << K << " reads live contents";
    EXPECT_EQ(Wl.boundReads(Wl.UseBegin[K]), ~uint32_t{0}) << "k" << K << ", pages";
  }
}

TEST(SimBound, AnAllocationHoldsNothingBeforeItIsMade) {
  // Each iteration allocates X as k1 is queued and frees it during the next
  // iteration's k0; k1 reads and writes X (READ_WRITE), k2 reads it. The
  // last iteration's X is never freed within the profile, so no free of it
  // ends its contents: its allocation does. k1's read is of memory made
  // anew (nothing to keep across the iteration boundary), k2's is of what k1
  // wrote.
  ProfileBuilder B;
  const uint64_t W = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  for (uint32_t It = 0; It < 3; ++It) {
    const uint64_t T0 = B.now();
    const int64_t Free = It < 2 ? static_cast<int64_t>(T0 + 350'000) : -1;
    const uint64_t X = B.allocate(2 * MiB, T0 + 100'000, Free, v1::ALLOCATION_ROLE_ACTIVATION,
                                  uint64_t{1} << 41);
    B.kernel("k0", 100'000, {{W, ACCESS_MODE_READ}});
    B.kernel("k1", 100'000, {{X, v1::ACCESS_MODE_READ_WRITE}});
    B.kernel("k2", 100'000, {{X, ACCESS_MODE_READ}});
    B.iteration(It * 3, 3);
  }
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  auto Wl = takeOk(sim::detail::workloadFromProfile(P));
  const sim::detail::Workload &D = *Wl.Data;
  for (uint32_t K : {1u, 2u})
    ASSERT_EQ(D.UseBegin[K + 1] - D.UseBegin[K], 1u) << "k" << K;
  EXPECT_EQ(D.boundReads(D.UseBegin[1]), 0u) << "k1 reads memory made anew";
  EXPECT_EQ(D.boundReads(D.UseBegin[2]), ~uint32_t{0}) << "k2 reads what k1 wrote";
  EXPECT_EQ(Wl.boundReads(Wl.UseBegin[1]), 0u) << "pages agree";
}

/// A profile of `Kernels` block-only launches (no tensor data) over one UM
/// block that 16,384 live allocations of 128 bytes share: the data workload
/// has a piece per allocation, which every launch touches.
v1::Profile sharedBlockProfile(uint32_t Kernels) {
  ProfileBuilder B;
  const uint64_t Base = uint64_t{1} << 40;
  for (uint64_t I = 0; I < 16384; ++I)
    B.allocate(128, 0, -1, v1::ALLOCATION_ROLE_PARAMETER, Base + I * 128);
  v1::Profile P = B.build();
  for (uint32_t K = 0; K < Kernels; ++K) {
    v1::Kernel *Kr = P.add_kernels();
    Kr->set_name("k");
    Kr->set_start_ns(uint64_t{K} * 10'000);
    Kr->set_end_ns(uint64_t{K} * 10'000 + 10'000);
    v1::BlockAccess *A = Kr->add_blocks();
    A->set_block(Base / MiB / 2);
    A->set_mode(v1::ACCESS_MODE_READ_WRITE);
  }
  return P;
}

TEST(SimBound, AProfileTooCostlyToCountHasComputeBounds) {
  // 16,384 pieces under each of 1,200 launches: about 80,000 steps a launch,
  // 98 M in all, past the budget for a profile of this size (2^26 + 256 x
  // 17,584 = 71.6 M). The bounds give up and count compute only; 200
  // launches (16 M steps) are counted.
  v1::Profile Small = sharedBlockProfile(200);
  if (llvm::Error E = format::validateProfile(Small))
    FAIL() << llvm::toString(std::move(E));
  auto Counted = takeOk(sim::detail::workloadFromProfile(Small));
  EXPECT_TRUE(Counted.Data);
  EXPECT_FALSE(Counted.DataOverBudget);
  ASSERT_EQ(Counted.Data->UseBegin.size(), 201u);
  EXPECT_EQ(Counted.Data->UseBegin[1], 16384u) << "a use per allocation's piece";

  v1::Profile Large = sharedBlockProfile(1200);
  SimResult R = run(Large, opts(Policy::Um, 2 * MiB, 1, 1));
  EXPECT_TRUE(R.BoundsComputeOnly);
  EXPECT_EQ(R.BoundUs, 0);
  EXPECT_EQ(R.CutBoundUs, R.IdealUs);
  EXPECT_EQ(R.LowerBoundUs, R.IdealUs);
  EXPECT_GE(R.IterationUs, R.LowerBoundUs);
  llvm::json::Value V = toJson(R);
  EXPECT_EQ(V.getAsObject()->getBoolean("bounds_compute_only"), true);
  std::string Text, Table;
  llvm::raw_string_ostream TS(Text), CS(Table);
  print(TS, R);
  printComparison(CS, {R});
  EXPECT_NE(Text.find("(bounds: compute only;"), std::string::npos) << Text;
  EXPECT_NE(Table.find("(bounds: compute only;"), std::string::npos) << Table;
}

TEST(SimWorkload, RefusesAProfileWhoseAllocationsLieOverTooManyBlocks) {
  // 1,000 launches over 20 blocks each, 20,000 in all, and 1,000
  // allocations made one after another during the iteration, each over all
  // of them: about 40 M visits of used blocks (two events each), past the
  // limit of 2^24 (the profile is 190 KB). The profile is refused at once,
  // in one line, rather than flattened for seconds into gigabytes (before
  // the limit: 16.7 s, 2.7 GB). The same allocations made before the
  // iteration are no events of it, and cost nothing.
  auto Spread = [](bool InIteration) {
    v1::Profile P = ProfileBuilder().build();
    const uint64_t Base = uint64_t{1} << 40, Step = 100'000;
    for (uint64_t I = 0; I < 1000; ++I) {
      v1::Allocation *A = P.add_allocations();
      A->set_id(I + 1);
      A->set_address(Base);
      A->set_size_bytes(20'000 * 2 * MiB);
      A->set_alloc_time_ns(InIteration ? I * Step + 1 : I);
      if (I + 1 < 1000) {
        A->set_freed(true);
        A->set_free_time_ns(InIteration ? (I + 1) * Step + 1 : I + 1);
      }
      v1::Kernel *Kr = P.add_kernels();
      Kr->set_name("k");
      Kr->set_start_ns(I * Step + 10'000);
      Kr->set_end_ns(I * Step + 11'000);
      for (uint64_t B = 0; B < 20; ++B) {
        v1::BlockAccess *U = Kr->add_blocks();
        U->set_block(Base / MiB / 2 + I * 20 + B);
        U->set_mode(v1::ACCESS_MODE_READ);
      }
    }
    return P;
  };
  v1::Profile P = Spread(true);
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  const std::string Text = errorText(sim::detail::workloadFromProfile(P));
  EXPECT_NE(Text.find("lie over more than 16777216 of the iteration's used blocks, the "
                      "simulator's limit"),
            std::string::npos)
      << Text;
  SimOptions O = opts(Policy::Um, uint64_t{64} << 30);
  O.ProfileName = "hostile.pb";
  const std::string Sim = errorText(simulate(P, O));
  EXPECT_EQ(Sim.rfind("hostile.pb: its allocations and tensor accesses lie over", 0), 0u) << Sim;
  EXPECT_EQ(Sim.find('\n'), std::string::npos);
  v1::Profile Before = Spread(false);
  if (llvm::Error E = format::validateProfile(Before))
    FAIL() << llvm::toString(std::move(E));
  EXPECT_TRUE(takeOk(sim::detail::workloadFromProfile(Before)).Data);
}

TEST(SimBound, CutBoundSeparatesWriteBacksFromFetches) {
  // Forward/backward in miniature: k0 writes A, k1 writes B, k2 reads B, k3
  // reads A; 100 us each, 2 MiB tensors, room for one block. Before k2 both
  // A and B are needed later but only one fits: the other was written back
  // before k2 (2 MiB DtoH since k0) and comes back after it (2 MiB HtoD).
  // Those two transfers cannot overlap each other, while the total-bytes
  // bound only sees 2 MiB each way, overlapped. Nor can they overlap
  // compute: A fills the GPU until k0 ends and B must be there when k1
  // starts, so A is written back between the two; B fills it until k2 ends
  // and A must be there when k3 starts. T >= 400 us + 2 x BlockUs.
  ProfileBuilder B;
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION);
  uint64_t C = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION);
  B.kernel("k0", 100'000, {{A, ACCESS_MODE_WRITE}});
  B.kernel("k1", 100'000, {{C, ACCESS_MODE_WRITE}});
  B.kernel("k2", 100'000, {{C, ACCESS_MODE_READ}});
  B.kernel("k3", 100'000, {{A, ACCESS_MODE_READ}});
  B.iteration(0, 4);
  v1::Profile P = B.build();
  SimResult R = run(P, opts(Policy::Ideal, 2 * MiB));
  EXPECT_NEAR(R.IdealUs, 400, 1e-9);
  EXPECT_NEAR(R.CutBoundUs, 400 + 2 * BlockUs, 1e-6);
  EXPECT_NEAR(R.LowerBoundUs, 400 + 2 * BlockUs, 1e-6);
  EXPECT_LT(R.BoundUs, R.CutBoundUs);
  for (Policy Pol : {Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt})
    EXPECT_GE(run(P, opts(Pol, 2 * MiB)).IterationUs, R.CutBoundUs * (1 - 1e-9)) << int(Pol);
  // With room for both, nothing must move: the cut bound is compute alone.
  EXPECT_NEAR(run(P, opts(Policy::Ideal, 4 * MiB)).CutBoundUs, 400, 1e-9);
}

TEST(SimBound, CutBoundKeepsThePagesOfTheLaunchJustEnded) {
  // k0 writes A, k1 reads the parameters W1 and W2, k2 reads A; 2 MiB each,
  // 10 us each, room for two blocks. As k1 ends, W1 and W2 are on the GPU
  // (a launch keeps its pages; both are read again next iteration), so A
  // is not: it was written back after k0 and comes back before k2, in
  // series, each in the gap between two launches (A fills the GPU beside
  // k1's pages neither before k1 nor after it): T >= 30 us + 2 x BlockUs.
  // A cut free to keep any two pages keeps A (it spares both directions)
  // and sees one fetch.
  ProfileBuilder B;
  uint64_t W1 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t W2 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION);
  for (int It = 0; It < 3; ++It) {
    B.kernel("k0", 10'000, {{A, ACCESS_MODE_WRITE}});
    B.kernel("k1", 10'000, {{W1, ACCESS_MODE_READ}, {W2, ACCESS_MODE_READ}});
    B.kernel("k2", 10'000, {{A, ACCESS_MODE_READ}});
    B.iteration(static_cast<uint32_t>(It * 3), 3);
  }
  v1::Profile P = B.build();
  SimResult R = run(P, opts(Policy::Ideal, 4 * MiB));
  EXPECT_NEAR(R.CutBoundUs, 30 + 2 * BlockUs, 1e-6);
  for (Policy Pol : {Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt})
    EXPECT_GE(run(P, opts(Pol, 4 * MiB)).IterationUs, R.CutBoundUs * (1 - 1e-9)) << int(Pol);
  // With room for all three, nothing must move.
  EXPECT_NEAR(run(P, opts(Policy::Ideal, 6 * MiB)).CutBoundUs, 30, 1e-9);
}

TEST(SimBound, CutBoundCountsThePagesOfTheLaunchJustEndedThatNothingReadsAgain) {
  // As above, but k1 writes two temporaries freed as it ends: nothing reads
  // them again, yet as k1 ends they fill the GPU, so A is not there: written
  // back after k0, fetched before k2, each between two launches.
  ProfileBuilder B;
  uint64_t A = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION);
  for (int It = 0; It < 3; ++It) {
    const uint64_t T0 = B.now();
    const int64_t Free = static_cast<int64_t>(T0 + 19'999);
    uint64_t T1 = B.allocate(2 * MiB, T0 + 10'000, Free, v1::ALLOCATION_ROLE_ACTIVATION,
                             uint64_t{1} << 41);
    uint64_t T2 = B.allocate(2 * MiB, T0 + 10'000, Free, v1::ALLOCATION_ROLE_ACTIVATION,
                             (uint64_t{1} << 41) + 2 * MiB);
    B.kernel("k0", 10'000, {{A, ACCESS_MODE_WRITE}});
    B.kernel("k1", 10'000, {{T1, ACCESS_MODE_WRITE}, {T2, ACCESS_MODE_WRITE}});
    B.kernel("k2", 10'000, {{A, ACCESS_MODE_READ}});
    B.iteration(static_cast<uint32_t>(It * 3), 3);
  }
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    FAIL() << llvm::toString(std::move(E));
  SimResult R = run(P, opts(Policy::Ideal, 4 * MiB));
  EXPECT_NEAR(R.CutBoundUs, 30 + 2 * BlockUs, 1e-6);
  expectNoPolicyBelow(P, 4 * MiB, R.CutBoundUs);
}

TEST(SimBound, CutBoundCountsOnlyPagesCertainlyWritten) {
  // A and B share a block; k0 reads A and overwrites B, k1 reads A. A is
  // never written: nothing needs writing back however small the GPU is.
  // With room for half of A, half of A must cross between k0's end and
  // k1's start, where nothing computes: 200 us + BlockUs / 4. Counting A as
  // written (its block is READ_WRITE) would add the same again before
  // boundary 1.
  ProfileBuilder B;
  uint64_t A = B.allocate(1 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t C = B.allocate(1 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION,
                          B.profile().allocations(0).address() + 1 * MiB);
  B.kernel("k0", 100'000, {{A, ACCESS_MODE_READ}, {C, ACCESS_MODE_WRITE}});
  B.kernel("k1", 100'000, {{A, ACCESS_MODE_READ}});
  B.iteration(0, 2);
  v1::Profile P = B.build();
  ASSERT_EQ(P.kernels(0).blocks(0).mode(), v1::ACCESS_MODE_READ_WRITE);
  SimResult R = run(P, opts(Policy::Ideal, MiB / 2));
  EXPECT_NEAR(R.CutBoundUs, 200 + BlockUs / 4, 1e-6);
}

TEST(SimBound, StallsAddUpOverAWindowOfLaunches) {
  // Room for three blocks. k0 reads A, B, C; k1 (10 us) reads A; k2 reads
  // D, E, F; all are read again next iteration. A, B, C fill the GPU until
  // k0 ends and D, E, F fill it when k2 starts, so all three of D, E, F
  // cross between k0's end and k2's start, where only k1's 10 us compute:
  // 3 x BlockUs - 10 us of stall. Gap by gap, only one of them is forced
  // (A is held through k1). Then A, B, C come back after k2: 3 x BlockUs.
  ProfileBuilder B;
  const std::vector<uint64_t> T = parameterBlocks(B, 6);
  for (int It = 0; It < 3; ++It) {
    B.kernel("k0", 10'000,
             {{T[0], ACCESS_MODE_READ}, {T[1], ACCESS_MODE_READ}, {T[2], ACCESS_MODE_READ}});
    B.kernel("k1", 10'000, {{T[0], ACCESS_MODE_READ}});
    B.kernel("k2", 10'000,
             {{T[3], ACCESS_MODE_READ}, {T[4], ACCESS_MODE_READ}, {T[5], ACCESS_MODE_READ}});
    B.iteration(static_cast<uint32_t>(It * 3), 3);
  }
  v1::Profile P = B.build();
  SimResult R = run(P, opts(Policy::Ideal, 6 * MiB));
  EXPECT_NEAR(R.CutBoundUs, 20 + 6 * BlockUs, 1e-6);
  expectNoPolicyBelow(P, 6 * MiB, R.CutBoundUs);
}

/// Four steps of a three-layer training step: fwd_i (300 us) reads W_i and
/// A_{i-1} and writes A_i; bwd_i (600 us; i = 2, 1, 0) reads W_i and A_i and
/// accumulates the gradient G; opt (200 us) reads G and updates W_0..2. A_i
/// is allocated as fwd_i starts and freed as bwd_i ends (`Lifetimes`), at
/// one address each step or, `Moving`, 6 MiB higher every other step; or it
/// lives for the whole profile. The profile marks as its iteration the seven
/// launches of the third step from launch `First` on (0: forward, 3:
/// backward, 6: the optimizer).
v1::Profile trainingStep(uint32_t First, bool Lifetimes, bool Moving = false) {
  ProfileBuilder B;
  const std::vector<uint64_t> W = parameterBlocks(B, 3);
  const uint64_t G = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_GRADIENT);
  const uint64_t Base = uint64_t{1} << 41;
  std::vector<uint64_t> Whole; // the activations living for the whole profile
  for (int I = 0; I < 3 && !Lifetimes; ++I)
    Whole.push_back(B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION, Base + 2 * MiB * I));
  for (int Step = 0; Step < 4; ++Step) {
    const uint64_t T0 = B.now();
    std::vector<uint64_t> A = Whole;
    for (int I = 0; I < 3 && Lifetimes; ++I)
      A.push_back(B.allocate(2 * MiB, T0 + 300'000 * I,
                             static_cast<int64_t>(T0 + 900'000 + 600'000 * (3 - I)) - 1,
                             v1::ALLOCATION_ROLE_ACTIVATION,
                             Base + 2 * MiB * I + (Moving && Step % 2 ? 6 * MiB : 0)));
    for (int I = 0; I < 3; ++I) {
      std::vector<ProfileBuilder::Use> Uses = {{W[I], ACCESS_MODE_READ}, {A[I], ACCESS_MODE_WRITE}};
      if (I > 0)
        Uses.push_back({A[I - 1], ACCESS_MODE_READ});
      B.kernel("fwd" + std::to_string(I), 300'000, Uses);
    }
    for (int I = 2; I >= 0; --I)
      B.kernel("bwd" + std::to_string(I), 600'000,
               {{W[I], ACCESS_MODE_READ}, {A[I], ACCESS_MODE_READ},
                {G, v1::ACCESS_MODE_READ_WRITE}});
    B.kernel("opt", 200'000,
             {{G, ACCESS_MODE_READ},
              {W[0], v1::ACCESS_MODE_READ_WRITE},
              {W[1], v1::ACCESS_MODE_READ_WRITE},
              {W[2], v1::ACCESS_MODE_READ_WRITE}});
  }
  B.iteration(14 + First, 7);
  v1::Profile P = B.build();
  if (llvm::Error E = format::validateProfile(P))
    ADD_FAILURE() << llvm::toString(std::move(E));
  return P;
}

TEST(SimBound, CutBoundDoesNotDependOnWhereTheProfileMarksTheIteration) {
  // The GPU repeats the step; where the profile says it starts is no
  // boundary of the steady state. The stalls between launches are a path
  // around the cycle: one that had to start at the marked first launch
  // could not count the window of launches across the mark, and the bound
  // was 13,783 us marked from the forward pass, 16,080 us from the backward.
  const uint64_t Room = 8 * MiB; // four of seven blocks
  auto cut = [&](uint32_t First, bool Lifetimes) {
    return run(trainingStep(First, Lifetimes), opts(Policy::Ideal, Room)).CutBoundUs;
  };
  const double Cut = cut(0, false);
  EXPECT_NEAR(Cut, 16'080.064, 1e-3);
  for (uint32_t First = 1; First < 7; ++First)
    EXPECT_NEAR(cut(First, false), Cut, 1e-6 * Cut) << "iteration marked from launch " << First;
  expectNoPolicyBelow(trainingStep(0, false), Room, Cut);
  expectNoPolicyBelow(trainingStep(3, false), Room, Cut);
  // With the activations' lifetimes, the same at every mark. Marked inside
  // the step, A_0 (and A_1, A_2) are made in one iteration and freed in the
  // next; the one carried in is the previous iteration's instance of the one
  // made, and the bounds count the two as one piece of data: the planner
  // pairs them (same size, in order) and the profile put them at the same
  // address (docs/simulator.md, "Data, not pages"). Unpaired, their reads
  // after the mark counted as fresh and `cut` fell to 10,089 - 12,186 us.
  for (uint32_t First = 0; First < 7; ++First) {
    EXPECT_NEAR(cut(First, true), Cut, 1e-6 * Cut) << "iteration marked from launch " << First;
    expectNoPolicyBelow(trainingStep(First, true), Room, Cut);
  }
  // Where the allocator moves them every other step, the two are not at one
  // address: at the profile's addresses the one carried in is dead memory
  // once freed, and its reads in the replayed iteration read nothing kept.
  // Not paired: the bound is lower, and still no policy runs below it.
  for (uint32_t First = 1; First < 6; ++First) {
    const double Lower = run(trainingStep(First, true, true), opts(Policy::Ideal, Room)).CutBoundUs;
    EXPECT_LT(Lower, Cut - 1000) << "iteration marked from launch " << First;
    expectNoPolicyBelow(trainingStep(First, true, true), Room, Lower);
  }
}

TEST(SimBound, ATensorLivingAcrossTheMarkIsOneTensor) {
  // A step of three launches: a (100 us) writes X, b (1 ms) reads the
  // parameters P1 and P2, c (100 us) reads and updates X. X is made as a
  // starts and freed as c ends, at one address each step. Room for two of
  // the three blocks: X must leave the GPU while b runs and come back for c.
  // Marked from b or c, the iteration's X is made in it and freed in the
  // next, and the X that c reads is the previous iteration's: the planner
  // pairs the two, the profile put them at one address, and the bounds
  // count one tensor. Unpaired, c's read counted as fresh and `cut` was
  // 3297 us instead of 5394 at those marks. swap-opt sees one object too.
  ProfileBuilder B;
  const std::vector<uint64_t> W = parameterBlocks(B, 2);
  const uint64_t XAddress = uint64_t{1} << 41;
  for (int Step = 0; Step < 4; ++Step) {
    const uint64_t T0 = B.now();
    const uint64_t X = B.allocate(2 * MiB, T0, static_cast<int64_t>(T0 + 1'200'000) - 1,
                                  v1::ALLOCATION_ROLE_ACTIVATION, XAddress);
    B.kernel("a", 100'000, {{X, ACCESS_MODE_WRITE}});
    B.kernel("b", 1'000'000, {{W[0], ACCESS_MODE_READ}, {W[1], ACCESS_MODE_READ}});
    B.kernel("c", 100'000, {{X, v1::ACCESS_MODE_READ_WRITE}});
  }
  for (uint32_t First = 0; First < 3; ++First) {
    SCOPED_TRACE("iteration marked from launch " + std::to_string(First));
    v1::Profile P = B.build();
    P.clear_iterations();
    v1::Iteration *I = P.add_iterations();
    I->set_first_kernel(6 + First);
    I->set_kernel_count(3);
    I->set_start_ns(P.kernels(static_cast<int>(6 + First)).start_ns());
    I->set_end_ns(P.kernels(static_cast<int>(8 + First)).end_ns());
    ASSERT_FALSE(bool(format::validateProfile(P)));
    // One swap object for X, its page range once, used by a and by c.
    auto Wl = takeOk(sim::detail::workloadFromProfile(P));
    size_t Activations = 0;
    for (const sim::detail::SwapObject &O : Wl.Objects)
      if (O.Activation) {
        ++Activations;
        EXPECT_EQ(O.Whole.size(), 1u);
        EXPECT_EQ(O.Uses.size(), 2u);
      }
    EXPECT_EQ(Activations, 1u);
    const SimResult Swap = run(P, opts(Policy::SwapOpt, 4 * MiB, 12, 10));
    EXPECT_GE(Swap.BytesDtoH, 2.0 * MiB);
    EXPECT_GE(Swap.BytesHtoD, 2.0 * MiB);
    const SimResult Ideal = run(P, opts(Policy::Ideal, 4 * MiB));
    EXPECT_NEAR(Ideal.CutBoundUs, 1200 + 2 * BlockUs, 1e-6);
    EXPECT_GE(Swap.IterationUs, Ideal.CutBoundUs * (1 - 1e-9));
  }
}

TEST(SimBound, FetchesDueByALongLaunchCannotHideBehindIt) {
  // Room for two blocks. k0 (10 us) reads A and B; k1 (1000 us) reads C
  // and D; k2 (10 us) reads A. C and D cross after k0 ends (A and B fill
  // the GPU until then) and before k1 starts: k1's 1000 us hide nothing
  // of them. A and B cross after k1 ends (C and D fill the GPU until then)
  // and before k0 starts, beside k2's 10 us only: T >= 1020 us + 4 x BlockUs
  // - 10 us. A cut that lets fetches overlap all compute after a boundary
  // sees far less.
  ProfileBuilder B;
  const std::vector<uint64_t> T = parameterBlocks(B, 4);
  for (int It = 0; It < 3; ++It) {
    B.kernel("k0", 10'000, {{T[0], ACCESS_MODE_READ}, {T[1], ACCESS_MODE_READ}});
    B.kernel("k1", 1'000'000, {{T[2], ACCESS_MODE_READ}, {T[3], ACCESS_MODE_READ}});
    B.kernel("k2", 10'000, {{T[0], ACCESS_MODE_READ}});
    B.iteration(static_cast<uint32_t>(It * 3), 3);
  }
  v1::Profile P = B.build();
  SimResult R = run(P, opts(Policy::Ideal, 4 * MiB));
  EXPECT_NEAR(R.CutBoundUs, 1010 + 4 * BlockUs, 1e-6);
  expectNoPolicyBelow(P, 4 * MiB, R.CutBoundUs);
}

namespace {

/// k0 (k0Us long) reads parameter W0, k1 and k2 (100 us) read W1 and W2, k3
/// (100 us) reads X, an input batch the data loader rewrites at position 0
/// of every iteration (its GPU copy is dropped there): with room for
/// everything, X is the only block that must cross the link each iteration.
v1::Profile inputAtTheEnd(uint64_t K0Us) {
  ProfileBuilder B;
  uint64_t W0 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t W1 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t W2 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t X = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_INPUT);
  B.kernel("k0", K0Us * 1000, {{W0, ACCESS_MODE_READ}});
  B.kernel("k1", 100'000, {{W1, ACCESS_MODE_READ}});
  B.kernel("k2", 100'000, {{W2, ACCESS_MODE_READ}});
  B.kernel("k3", 100'000, {{X, ACCESS_MODE_READ}});
  B.iteration(0, 4);
  return B.build();
}

/// Four kernels, each reading its own 2 MiB parameter for `Us` microseconds.
v1::Profile fourCycle(uint64_t Us) {
  ProfileBuilder B;
  const std::vector<uint64_t> T = parameterBlocks(B, 4);
  for (int I = 0; I < 4; ++I)
    B.kernel("k" + std::to_string(I), Us * 1000, {{T[static_cast<size_t>(I)], ACCESS_MODE_READ}});
  B.iteration(0, 4);
  return B.build();
}

} // namespace

TEST(SimDeepUm, LookaheadDecidesHowEarlyTheNextBlocksPrefetchStarts) {
  // inputAtTheEnd(1000): ideal 1000 + 3 x 100 = 1300 us. X is learned in
  // k3's chain (it faults in the cold iteration); afterwards it is the only
  // transfer. Commands for position p are issued when kernel p-1 starts
  // (S_{p-1}); the window at p is the chains of launches p .. p+L, so X is
  // prefetched at the first position p >= 0 with p + L >= 3, and arrives
  // BlockUs (2097.152 us) later. k3 is ready (k2 ends) at
  //   L=0: issued at S2, ready S2 + 100           -> stall BlockUs - 100
  //   L=1: issued at S1, ready S1 + 200           -> stall BlockUs - 200
  //   L=2: issued at S0, ready S0 + 1200          -> stall BlockUs - 1200
  //   L=3: issued at position 0, i.e. when the previous iteration's k3
  //        starts (right after the data loader's write), ready 1300 us
  //        later (that k3, then k0 .. k2)          -> stall BlockUs - 1300
  //   L=8: the window stops at the full cycle (back to launch 0): as L=3.
  // The prefetch is in flight when k3 needs it in every case: one late hit.
  v1::Profile P = inputAtTheEnd(1000);
  SimResult Um = run(P, opts(Policy::Um, 64 * MiB));
  // UM: X faults each iteration: 10 us + the transfer, after k2.
  EXPECT_NEAR(Um.IterationUs, 1300 + 10 + BlockUs, 1e-6);
  EXPECT_EQ(Um.Faults, 32);
  const std::pair<unsigned, double> Cases[] = {{0, BlockUs - 100},
                                               {1, BlockUs - 200},
                                               {2, BlockUs - 1200},
                                               {3, BlockUs - 1300},
                                               {8, BlockUs - 1300}};
  for (auto [L, Stall] : Cases) {
    SimOptions O = opts(Policy::DeepUm, 64 * MiB);
    O.Lookahead = L;
    SimResult D = run(P, O);
    EXPECT_NEAR(D.StallUs, Stall, 1e-6) << L;
    EXPECT_NEAR(D.IterationUs, 1300 + Stall, 1e-6) << L;
    EXPECT_EQ(D.Faults, 0) << L;
    EXPECT_EQ(D.FaultBatches, 0) << L;
    EXPECT_EQ(D.BytesPrefetched, 2.0 * MiB) << L;
    EXPECT_EQ(D.BytesHtoD, 2.0 * MiB) << L;
    EXPECT_EQ(D.PrefetchHits, 1) << L;
    EXPECT_EQ(D.LatePrefetches, 1) << L;
    EXPECT_EQ(D.Evictions, 0) << L;
    // Even the weakest lookahead beats the driver: no fault latency, and the
    // copy overlaps k2.
    EXPECT_LT(D.IterationUs, Um.IterationUs) << L;
  }
  // A long enough k0 hides the copy entirely once the lookahead reaches k3
  // from position 1 (issued at S0; k3 is ready 2200 us later > BlockUs):
  // L=1 still stalls BlockUs - 200, L=2 does not stall at all.
  v1::Profile Long = inputAtTheEnd(2000);
  for (auto [L, Stall] : {std::pair<unsigned, double>{1, BlockUs - 200}, {2, 0.0}}) {
    SimOptions O = opts(Policy::DeepUm, 64 * MiB);
    O.Lookahead = L;
    SimResult D = run(Long, O);
    EXPECT_NEAR(D.IterationUs, 2300 + Stall, 1e-6) << L;
    EXPECT_EQ(D.LatePrefetches, Stall > 0 ? 1 : 0) << L;
    EXPECT_EQ(D.PrefetchHits, 1) << L;
  }
}

TEST(SimDeepUm, PreEvictsAheadOfTheFaultThatWouldNeedTheRoom) {
  // Four blocks A0..A3 in a cycle of 5 ms kernels, room for three.
  // UM: every kernel faults its block in (10 us + transfer) after dropping
  // the least recently migrated one (clean: no copy).
  v1::Profile P = fourCycle(5000);
  SimResult Um = run(P, opts(Policy::Um, 6 * MiB));
  EXPECT_NEAR(Um.IterationUs, 4 * (10 + BlockUs + 5000), 1e-6);
  EXPECT_EQ(Um.Faults, 128);
  EXPECT_EQ(Um.Evictions, 4);
  EXPECT_NEAR(Um.StallUs, 4 * (10 + BlockUs), 1e-6);
  // DeepUM (lookahead 8: the window is the whole cycle, ranks 0..3 from
  // position p). Steady state before position p (issued when k_{p-1}
  // starts): resident A_{p-2}, A_{p-1}, A_p, least recently migrated first.
  // A_p is there; A_{p+1} (rank 1) is not: the GPU is full, so room is made
  // now: A_{p-1} is pinned by the running kernel, A_p is needed before
  // A_{p+1}; A_{p-2} = A_{p+2} (rank 2, least recently migrated) is dropped
  // and A_{p+1} fetched, arriving BlockUs < 5 ms later: before k_p even
  // starts, a kernel ahead of k_{p+1}. A_{p+2} (rank 2) then finds no room
  // (only the pinned A_{p+3} is needed later): prefetching stops. One
  // eviction and one 2 MiB prefetch per kernel, no fault, no stall, nothing
  // written back.
  SimResult D = run(P, opts(Policy::DeepUm, 6 * MiB));
  EXPECT_NEAR(D.IterationUs, 20000, 1e-6);
  EXPECT_EQ(D.Faults, 0);
  EXPECT_EQ(D.FaultBatches, 0);
  EXPECT_EQ(D.StallUs, 0);
  EXPECT_EQ(D.Evictions, 4);
  EXPECT_EQ(D.BytesPrefetched, 8.0 * MiB);
  EXPECT_EQ(D.BytesHtoD, 8.0 * MiB);
  EXPECT_EQ(D.BytesDtoH, 0);
  EXPECT_EQ(D.PrefetchHits, 4);
  EXPECT_EQ(D.LatePrefetches, 0);
  EXPECT_EQ(D.PeakResidentBytes, 6 * MiB);
  // Same traffic as the driver, none of its stalls.
  EXPECT_EQ(D.BytesHtoD, Um.BytesHtoD);
  EXPECT_NEAR(Um.IterationUs - D.IterationUs, 4 * (10 + BlockUs), 1e-6);
}

TEST(SimDeepUm, PreEvictionVictimIsTheLeastRecentlyMigrated) {
  // The prefetcher and the engine driven by hand over fourCycle(5 ms), room
  // for three blocks, lookahead 8, so that residency can be inspected after
  // each observation.
  v1::Profile P = fourCycle(5000);
  auto W = takeOk(sim::detail::workloadFromProfile(P));
  ASSERT_EQ(W.Kernels, 4u);
  Engine E(handDevice(), 6 * MiB);
  for (uint64_t B : W.UmBlocks)
    (void)E.blockId(B);
  sim::detail::DeepUmPrefetcher D(W, 8);
  uint32_t A[4];
  for (uint32_t K = 0; K < 4; ++K) {
    ASSERT_EQ(W.uses(K).size(), 1u);
    A[K] = W.uses(K)[0].Block;
  }
  auto Resident = [&](uint32_t K) { return E.residentMask(A[K % 4]) != 0; };
  auto Launch = [&](uint32_t K) {
    llvm::Error Err = E.launch(W.uses(K), W.DurationNs[K]);
    ASSERT_FALSE(Err) << llvm::toString(std::move(Err));
    D.afterLaunch(E, K);
  };
  // Cold iteration: nothing known, every kernel faults; k3's fault drops A0
  // (least recently migrated). Migration order now A1, A2, A3.
  for (uint32_t K = 0; K < 4; ++K) {
    D.beforeLaunch(E, K);
    Launch(K);
  }
  EXPECT_EQ(E.stats().Faults, 128u);
  EXPECT_EQ(E.stats().Evictions, 1u);
  EXPECT_FALSE(Resident(0));
  // Launch 0 observed (k3 running, A3 pinned). A0 (rank 0) needs room; of A1
  // (rank 1) and A2 (rank 2), both needed after A0, the least recently
  // migrated is A1: it is dropped, although it is needed sooner than A2.
  // Then A1 (rank 1) is fetched back in the room of A2 (the only one needed
  // later), and A2 (rank 2) finds no room. A furthest-need victim choice
  // would have dropped A2 and moved 2 MiB; LRM moves 4 MiB and drops two.
  EngineStats S0 = E.stats();
  D.beforeLaunch(E, 0);
  EXPECT_EQ(E.stats().Evictions - S0.Evictions, 2u);
  EXPECT_EQ(E.stats().BytesPrefetched - S0.BytesPrefetched, 4 * MiB);
  EXPECT_EQ(E.stats().Faults, S0.Faults);
  EXPECT_TRUE(Resident(3));
  EXPECT_TRUE(Resident(0));
  EXPECT_TRUE(Resident(1));
  EXPECT_FALSE(Resident(2));
  Launch(0);
  // From here, before observing launch p: resident A_{p-2}, A_{p-1}, A_p in
  // migration order. The victim is A_{p-2} = A_{p+2} (migrated earliest), in
  // favour of A_{p+1}, needed two launches after the one observed being
  // issued; it is resident before k_p starts. No fault ever again.
  for (uint32_t Step = 1; Step < 12; ++Step) {
    uint32_t Pos = Step % 4;
    EXPECT_TRUE(Resident(Pos + 2)) << Step; // A_{p-2}
    EXPECT_FALSE(Resident(Pos + 1)) << Step;
    EngineStats Before = E.stats();
    D.beforeLaunch(E, Pos);
    EXPECT_EQ(E.stats().Evictions - Before.Evictions, 1u) << Step;
    EXPECT_EQ(E.stats().BytesPrefetched - Before.BytesPrefetched, 2 * MiB) << Step;
    EXPECT_FALSE(Resident(Pos + 2)) << Step;
    EXPECT_TRUE(Resident(Pos + 1)) << Step;
    EXPECT_TRUE(Resident(Pos)) << Step;
    EXPECT_TRUE(Resident(Pos + 3)) << Step; // A_{p-1}: pinned by the running kernel
    EXPECT_EQ(E.residentBytes(), 6 * MiB) << Step;
    uint64_t IssuedNs = E.issueNs();
    Launch(Pos);
    // k_p started 5 ms after the issue, with nothing to wait for.
    EXPECT_EQ(E.computeEndNs() - IssuedNs, 10'000'000u) << Step;
    EXPECT_EQ(E.stats().Faults, S0.Faults) << Step;
  }
  EXPECT_EQ(E.stats().BytesDtoH, 0u);
  EXPECT_EQ(E.stats().InvariantViolations, 0u);
  EXPECT_EQ(E.verifyAccounting(), 0u);
}

// --- DeepUM as strong as its paper: fault priority, tail frees, watermark ------

TEST(SimDeepUm, FaultsOvertakePrefetchesNotYetStarted) {
  // Four 2 MiB prefetches queued at t = 0 keep the copy engine busy for four
  // transfers (8.4 ms). A kernel then faults on another block: its batch is
  // taken at 10 us, when the first prefetch is running. The fault's copy
  // waits for that one only; the three not started yield, each arriving one
  // transfer later. Without priority the fault would start at 4 transfers.
  Engine E(handDevice(), 64 * MiB);
  const uint64_t T = 2'097'152; // one block over the hand link, ns
  uint32_t P[4];
  for (uint32_t I = 0; I < 4; ++I) {
    P[I] = E.blockId(100 + I);
    ASSERT_TRUE(E.prefetchPages(P[I], ~0u));
  }
  EXPECT_EQ(E.copyEndNs(/*ToDevice=*/true), 4 * T);
  uint32_t X = E.blockId(200);
  ASSERT_FALSE(E.launch({{X, ~0u, Access::Read}}, 1'000'000));
  EXPECT_EQ(E.stats().Faults, 32u);
  EXPECT_EQ(E.stats().PrefetchesYielded, 3u);
  EXPECT_EQ(E.computeEndNs(), 2 * T + 1'000'000); // fault copy [T, 2T], then the kernel
  EXPECT_EQ(E.copyEndNs(true), 5 * T);
  // The last prefetch now arrives at 5 T: a kernel reading it waits for it.
  ASSERT_FALSE(E.launch({{P[3], ~0u, Access::Read}}, 1'000'000));
  EXPECT_EQ(E.stats().LatePrefetches, 1u);
  EXPECT_EQ(E.stats().PrefetchHits, 1u);
  EXPECT_EQ(E.computeEndNs(), 5 * T + 1'000'000);
  // The first one was running when the fault came and kept its slot.
  ASSERT_FALSE(E.launch({{P[0], ~0u, Access::Read}}, 1'000'000));
  EXPECT_EQ(E.computeEndNs(), 5 * T + 2'000'000);
  EXPECT_EQ(E.stats().Faults, 32u);
  EXPECT_EQ(E.verifyAccounting(), 0u);
}

TEST(SimDeepUm, FaultsWaitForEarlierFaultsAndStartedPrefetches) {
  // A prefetch queued after the faults of a kernel were serviced does not
  // delay them; and one that has started by the time a fault is ready is not
  // interrupted: the fault waits for its end.
  Engine E(handDevice(), 64 * MiB);
  const uint64_t T = 2'097'152;
  uint32_t A = E.blockId(1), B = E.blockId(2), C = E.blockId(3);
  ASSERT_FALSE(E.launch({{A, ~0u, Access::Read}}, 5'000'000)); // fault: [10 us, 10 us + T]
  const uint64_t Start0 = 10'000 + T;
  EXPECT_EQ(E.computeEndNs(), Start0 + 5'000'000);
  ASSERT_TRUE(E.prefetchPages(B, ~0u)); // issued at Start0: [Start0, Start0 + T]
  ASSERT_FALSE(E.launch({{C, ~0u, Access::Read}}, 1'000));
  // C's batch is taken when A's kernel ends (Start0 + 5 ms), after B's copy.
  EXPECT_EQ(E.stats().PrefetchesYielded, 0u);
  EXPECT_EQ(E.computeEndNs(), Start0 + 5'000'000 + 10'000 + T + 1'000);
}

namespace {
/// k0 writes a temporary T, k1 reads it, k2 reads a parameter; T is freed
/// after the last kernel, before the iteration's end mark (the end of the
/// step), or before the next launch. Room for three blocks.
v1::Profile tailFree(bool NextLaunchAfterGap) {
  ProfileBuilder B;
  uint64_t W0 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t W1 = B.allocate(2 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t T = B.allocate(2 * MiB, 0, 350'000, v1::ALLOCATION_ROLE_ACTIVATION);
  // Torn down long after the iteration's end: not one of its frees.
  uint64_t W2 = B.allocate(2 * MiB, 0, 900'000'000, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("k0", 100'000, {{T, ACCESS_MODE_WRITE}, {W0, ACCESS_MODE_READ}});
  B.kernel("k1", 100'000, {{T, ACCESS_MODE_READ}});
  B.kernel("k2", 100'000, {{W1, ACCESS_MODE_READ}, {W2, ACCESS_MODE_READ}});
  B.iteration(0, 3);
  v1::Profile P = B.build();
  if (NextLaunchAfterGap) {
    // A further launch at 400 us (outside the iteration): T's free at 350 us
    // falls in the gap before it.
    v1::Kernel *K = P.add_kernels();
    *K = P.kernels(2);
    K->set_start_ns(400'000);
    K->set_end_ns(500'000);
  } else {
    P.mutable_iterations(0)->set_end_ns(400'000);
  }
  return P;
}
} // namespace

TEST(SimDeepUm, SeesFreesAfterTheIterationsLastKernel) {
  for (bool Gap : {false, true}) {
    SCOPED_TRACE(Gap ? "next launch after a gap" : "iteration end mark");
    v1::Profile P = tailFree(Gap);
    auto Wl = takeOk(sim::detail::workloadFromProfile(P));
    // Observed with the next iteration's first launch (position 3 wraps to 0).
    ASSERT_EQ(Wl.dead(0).size(), 1u);
    EXPECT_EQ(Wl.UmBlocks[Wl.dead(0)[0]], Wl.UmBlocks[Wl.uses(1)[0].Block]);
    for (uint32_t K = 1; K < 3; ++K)
      EXPECT_TRUE(Wl.dead(K).empty()) << K;
    SimResult Um = run(P, opts(Policy::Um, 6 * MiB));
    SimResult D = run(P, opts(Policy::DeepUm, 6 * MiB));
    EXPECT_GT(Um.BytesDtoH, 0);
    EXPECT_EQ(D.BytesDtoH, 0); // T is dropped, never written back
    EXPECT_EQ(D.BytesDiscarded, 2.0 * MiB);
    EXPECT_EQ(D.LostReads, 0);
    EXPECT_LT(D.IterationUs, Um.IterationUs);
  }
}

TEST(SimDeepUm, WatermarkPreEvictsLeastRecentlyMigratedOutsideTheWindow) {
  // Four blocks, room for four: A, B, C, D faulted in that order (D's kernel
  // last, so D is pinned). Keeping 4 MiB free evicts the least recently
  // migrated blocks that are neither pinned nor protected: C is protected,
  // so A and B go. Write-backs in flight count as free: a second call
  // evicts nothing.
  Engine E(handDevice(), 8 * MiB);
  uint32_t B[4];
  for (uint32_t I = 0; I < 4; ++I) {
    B[I] = E.blockId(10 + I);
    ASSERT_FALSE(E.launch({{B[I], ~0u, Access::Write}}, 1'000));
  }
  EXPECT_EQ(E.residentBytes(), 8 * MiB);
  E.beginProtection();
  E.protect(B[2], 0);
  EXPECT_EQ(E.preEvictTo(4 * MiB), 4 * MiB);
  EXPECT_FALSE(E.isResident(B[0], 1u));
  EXPECT_FALSE(E.isResident(B[1], 1u));
  EXPECT_TRUE(E.isResident(B[2], ~0u));
  EXPECT_TRUE(E.isResident(B[3], ~0u));
  EXPECT_EQ(E.stats().BytesDtoH, 4 * MiB); // dirty: written back
  EXPECT_EQ(E.preEvictTo(4 * MiB), 0u);
  // Asking for more than what is evictable stops at what is.
  EXPECT_EQ(E.preEvictTo(8 * MiB), 0u);
  EXPECT_EQ(E.stats().BytesPreEvicted, 4 * MiB);
  EXPECT_EQ(E.verifyAccounting(), 0u);
}

TEST(SimDeepUm, WatermarkKeepsRoomFreeWhenThePrefetcherRuns) {
  // fourCycle(5 ms) with room for all four blocks: without a watermark DeepUM
  // moves nothing after the cold iteration. Lookahead 1 (window: launches p
  // and p+1) and a watermark of half the capacity: after observing p, the
  // blocks outside the window are pre-evicted down to the watermark, except
  // A_{p-1}, pinned by the running kernel: A_{p+2} goes, and is prefetched
  // back when p+1 is observed, a kernel ahead (2.1 ms < 5 ms). One eviction
  // and one 2 MiB prefetch per kernel, never a fault, never a stall.
  v1::Profile P = fourCycle(5000);
  SimOptions O = opts(Policy::DeepUm, 8 * MiB);
  O.Lookahead = 8;
  O.DeepUmLookahead = 1;
  SimResult Plain = run(P, O);
  EXPECT_EQ(Plain.Evictions, 0);
  EXPECT_EQ(Plain.BytesHtoD, 0);
  O.DeepUmWatermark = 0.5;
  SimResult D = run(P, O);
  EXPECT_EQ(D.Faults, 0);
  EXPECT_EQ(D.Evictions, 4);
  EXPECT_EQ(D.BytesPrefetched, 8.0 * MiB);
  EXPECT_EQ(D.LatePrefetches, 0);
  EXPECT_NEAR(D.IterationUs, 20000, 1e-6);
  EXPECT_EQ(D.PeakResidentBytes, 8 * MiB);
}

TEST(SimDeepUm, ItsOwnLookaheadOverridesTheSharedOne) {
  // inputAtTheEnd(1000) stalls BlockUs - 200 with lookahead 1 and
  // BlockUs - 1300 with 3 or more (LookaheadDecidesHowEarly... above).
  v1::Profile P = inputAtTheEnd(1000);
  SimOptions O = opts(Policy::DeepUm, 64 * MiB);
  O.Lookahead = 8;
  O.DeepUmLookahead = 1;
  EXPECT_NEAR(run(P, O).StallUs, BlockUs - 200, 1e-6);
  O.Lookahead = 1;
  O.DeepUmLookahead = 3;
  EXPECT_NEAR(run(P, O).StallUs, BlockUs - 1300, 1e-6);
}

TEST(SimDeepUm, TuningFindsTheShortestLookaheadThatHidesTheCopy) {
  // inputAtTheEnd(1000): lookahead 1 stalls BlockUs - 200, 2 stalls
  // BlockUs - 1200, 3 and more BlockUs - 1300 (the cycle's whole compute).
  // The search tries every lookahead 1 .. 256 (4 is the first of the
  // fastest), then the three watermarks at 4 (64 MiB leaves them nothing to
  // do: no better). The best is 4, at least as good as the default of 8.
  v1::Profile P = inputAtTheEnd(1000);
  SimOptions O = opts(Policy::Um, 64 * MiB);
  DeepUmTuning T = takeOk(tuneDeepUm(P, O));
  ASSERT_EQ(T.Tried.size(), 12u);
  const unsigned Order[] = {1, 2, 4, 8, 16, 32, 64, 128, 256, 4, 4, 4};
  for (size_t I = 0; I < T.Tried.size(); ++I)
    EXPECT_EQ(T.Tried[I].first.Lookahead, Order[I]) << I;
  EXPECT_EQ(T.Tried[9].first.Watermark, 0.05);
  EXPECT_NEAR(T.Tried[0].second, 1300 + BlockUs - 200, 1e-6);
  EXPECT_EQ(T.Best.Lookahead, 4u);
  EXPECT_EQ(T.Best.Watermark, 0);
  EXPECT_EQ(T.Result.PolicyName, "deepum");
  EXPECT_EQ(T.Result.MeasuredIterations, O.Iterations);
  EXPECT_NEAR(T.Result.StallUs, BlockUs - 1300, 1e-6);
  O.Pol = Policy::DeepUm;
  EXPECT_LE(T.Result.IterationUs, run(P, O).IterationUs);
}
