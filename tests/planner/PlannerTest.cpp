//===- PlannerTest.cpp - deepum-plan: iterations, layout, schedules ---------===//
#include "Synthetic.h"

#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/format/IterationNotes.h"
#include "deepum/format/PlanWire.h"
#include "deepum/format/Roofline.h"
#include "deepum/planner/Planner.h"
#include "deepum/planner/Replay.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <limits>
#include <random>
#include <set>

using namespace deepum;
using namespace deepum::planner;
using namespace deepum::test;
using namespace deepum::v1;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;

PlanResult compile(const Profile &P, uint64_t Capacity, Strategy S = Strategy::Prefetch,
                   const std::string &Device = "v100-pcie-16gb",
                   std::optional<LayoutOrder> Layout = std::nullopt) {
  PlanOptions O;
  O.GpuMemoryBytes = Capacity;
  O.DeviceModel = Device;
  O.Strat = S;
  O.Layout = Layout;
  return takeOk(compilePlan(P, O));
}

/// Footprint of the reference iteration in bytes (distinct arena blocks).
uint64_t footprint(const Profile &P) { return compile(P, uint64_t{1} << 40).FootprintBytes; }

Trace traceOf(const Profile &P, LayoutOrder By = LayoutOrder::BySize) {
  auto A = takeOk(analyzeIterations(P));
  return takeOk(buildTrace(P, A, {}, By));
}

/// Every pair of allocations live at the same time occupies disjoint bytes.
void expectDisjoint(const Trace &T) {
  for (size_t I = 0; I < T.Allocations.size(); ++I)
    for (size_t J = I + 1; J < T.Allocations.size(); ++J) {
      const PlannedAllocation &X = T.Allocations[I], &Y = T.Allocations[J];
      if (!X.overlaps(Y))
        continue;
      bool Disjoint = X.Offset + X.Size <= Y.Offset || Y.Offset + Y.Size <= X.Offset;
      EXPECT_TRUE(Disjoint) << "allocations " << I << " and " << J << " overlap in the arena";
    }
}

TEST(PlannerIterations, MarksAndPeriodAgree) {
  SyntheticOptions O;
  O.RepeatedNames = true; // IDs recur inside the iteration: the period must not stop there
  Profile Marked = syntheticTraining(O);
  O.Marks = false;
  Profile Unmarked = syntheticTraining(O);
  auto A = takeOk(analyzeIterations(Marked));
  auto B = takeOk(analyzeIterations(Unmarked));
  EXPECT_TRUE(A.FromMarks);
  EXPECT_FALSE(B.FromMarks);
  ASSERT_EQ(A.Iterations.size(), 3u);
  ASSERT_EQ(B.Iterations.size(), 3u);
  for (size_t I = 0; I < 3; ++I) {
    EXPECT_EQ(A.Iterations[I].First, B.Iterations[I].First);
    EXPECT_EQ(A.Iterations[I].Count, B.Iterations[I].Count);
  }
  EXPECT_EQ(A.Reference, 2u);
}

TEST(PlannerIterations, NoiseIsIgnoredAndNamed) {
  SyntheticOptions O;
  O.ExtraKernel = true;
  O.CutShort = true;
  Profile P = syntheticTraining(O);
  auto A = takeOk(analyzeIterations(P));
  // Iteration 0 is the only clean one: extra kernels in 1, cut short in 2.
  // All three differ, so the last wins the tie... unless two agree. Here none
  // agree, so the reference is the last iteration with the modal sequence.
  EXPECT_EQ(A.Ignored.size(), 2u);
  O.Iterations = 4;
  P = syntheticTraining(O);
  A = takeOk(analyzeIterations(P));
  EXPECT_EQ(A.Reference, 2u) << "iterations 0 and 2 are the steady state";
  ASSERT_EQ(A.Ignored.size(), 2u);
  EXPECT_NE(A.Ignored[0].find("iteration 1: 1 extra kernels"), std::string::npos) << A.Ignored[0];
  EXPECT_NE(A.Ignored[1].find("iteration 3: 4 kernels fewer"), std::string::npos) << A.Ignored[1];
}

TEST(PlannerIterations, ContextTellsRepeatedKernelsApart) {
  std::vector<uint64_t> Ids = {1, 2, 3, 2, 4};
  EXPECT_NE(contextId(Ids, 1, 2), contextId(Ids, 3, 2));
  EXPECT_EQ(contextId(Ids, 1, 1), contextId(Ids, 3, 1));
  // Position 0's context wraps to the previous iteration's tail.
  std::vector<uint64_t> Tail = {4, 1};
  EXPECT_EQ(contextId(Ids, 0, 2), contextId(Tail, 1, 2));
  EXPECT_NE(sequenceFingerprint(Ids), sequenceFingerprint({1, 2, 3, 4, 2}));
}

TEST(PlannerLayout, ZhangExample) {
  // Three allocations: A [0,4) 4 MiB, B [2,6) 2 MiB, C [4,8) 4 MiB; A and C
  // do not overlap, so C reuses A's bytes and the arena is 6 MiB = peak live.
  std::vector<PlannedAllocation> As(3);
  As[0].Sequence = 0, As[0].Size = 4 * MiB, As[0].Live[0] = {0, 4};
  As[1].Sequence = 1, As[1].Size = 2 * MiB, As[1].Live[0] = {2, 6};
  As[2].Sequence = 2, As[2].Size = 4 * MiB, As[2].Live[0] = {4, 8};
  EXPECT_EQ(layoutPool(As), 6 * MiB);
  EXPECT_EQ(As[0].Offset, As[2].Offset);
  EXPECT_EQ(peakLiveBytes(As, 8), 6 * MiB);
}

TEST(PlannerLayout, BestFitFragmentsWhereLayoutDoesNot) {
  // Online best-fit: a small allocation made first sits where a large one
  // would later need contiguous room. The offline layout knows lifetimes.
  std::vector<PlannedAllocation> As(4);
  As[0].Sequence = 0, As[0].Size = 1 * MiB, As[0].Live[0] = {0, 10};
  As[1].Sequence = 1, As[1].Size = 4 * MiB, As[1].Live[0] = {1, 3};
  As[2].Sequence = 2, As[2].Size = 1 * MiB, As[2].Live[0] = {2, 10};
  As[3].Sequence = 3, As[3].Size = 5 * MiB, As[3].Live[0] = {4, 10};
  uint64_t Layout = layoutPool(As);
  uint64_t BestFit = bestFitPeakBytes(As, 10);
  EXPECT_EQ(peakLiveBytes(As, 10), 7 * MiB);
  EXPECT_EQ(Layout, 7 * MiB);
  EXPECT_GT(BestFit, Layout);
}

TEST(PlannerLayout, InAllocationOrderEarlierAllocationsArePlacedFirst) {
  // A small one made first and a large one made later: largest first puts
  // the large one lowest, in the order of allocation the small one is.
  std::vector<PlannedAllocation> Bs(2);
  Bs[0].Sequence = 0, Bs[0].Size = 1 * MiB, Bs[0].Live[0] = {0, 4};
  Bs[1].Sequence = 1, Bs[1].Size = 4 * MiB, Bs[1].Live[0] = {2, 6};
  std::vector<PlannedAllocation> BySize = Bs, ByBirth = Bs;
  EXPECT_EQ(layoutPool(BySize, LayoutOrder::BySize), 5 * MiB);
  EXPECT_EQ(BySize[1].Offset, 0u);
  EXPECT_EQ(BySize[0].Offset, 4 * MiB);
  EXPECT_EQ(layoutPool(ByBirth, LayoutOrder::ByBirth), 5 * MiB);
  EXPECT_EQ(ByBirth[0].Offset, 0u);
  EXPECT_EQ(ByBirth[1].Offset, 1 * MiB);
  // Those carried over from the previous iteration (live at tick 0) are
  // placed first whatever their allocation tick: W made at 5, wrapping to 2.
  std::vector<PlannedAllocation> Cs(2);
  Cs[0].Sequence = 0, Cs[0].Size = 2 * MiB, Cs[0].Live[0] = {1, 4};
  Cs[1].Sequence = 1, Cs[1].Size = 2 * MiB, Cs[1].Live[0] = {5, 6}, Cs[1].Live[1] = {0, 2};
  EXPECT_EQ(layoutPool(Cs, LayoutOrder::ByBirth), 4 * MiB);
  EXPECT_EQ(Cs[1].Offset, 0u);
  EXPECT_EQ(Cs[0].Offset, 2 * MiB);
}

TEST(PlannerLayout, WrappingLifetimesAndPersistentRegion) {
  Profile P = syntheticTraining();
  Trace T = traceOf(P);
  expectDisjoint(T);
  uint64_t Persistent = 0;
  for (const PlannedAllocation &PA : T.Allocations)
    if (PA.Persistent) {
      EXPECT_EQ(PA.Offset, Persistent) << "persistent allocations are packed first";
      Persistent += PA.Size;
    }
  EXPECT_EQ(Persistent, 8 * 3 * 6 * MiB);
  EXPECT_GE(T.Pool.LayoutBytes, T.Pool.PeakLiveBytes);
  EXPECT_LE(T.Pool.LayoutBytes, T.Pool.BestFitPeakBytes);
  EXPECT_LE(static_cast<double>(T.Pool.LayoutBytes),
            1.02 * static_cast<double>(T.Pool.PeakLiveBytes));
  EXPECT_EQ(T.Pool.ArenaBytes % T.BlockBytes, 0u);
}

TEST(PlannerLayout, PersistentPlacementsCarryTheirCallIndex) {
  Profile P = syntheticTraining();
  // The allocator numbers its calls; the profile keeps each allocation's.
  for (int I = 0; I < P.allocations_size(); ++I)
    P.mutable_allocations(I)->set_call_index(static_cast<uint64_t>(100 + 2 * I));
  PlanResult R = compile(P, footprint(P) / 2);
  Trace T = traceOf(P);
  std::map<uint64_t, uint64_t> CallOfId;
  for (const Allocation &A : P.allocations())
    CallOfId[A.id()] = A.call_index();
  size_t Persistent = 0;
  for (const Placement &Pl : R.Plan.layout().placements()) {
    const PlannedAllocation &PA = T.Allocations.at(Pl.sequence());
    if (Pl.persistent()) {
      ++Persistent;
      EXPECT_EQ(Pl.call_index(), CallOfId.at(PA.ProfileId)) << "placement " << Pl.sequence();
    } else {
      EXPECT_EQ(Pl.call_index(), 0u) << "a per-iteration placement is found by sequence";
    }
  }
  EXPECT_GT(Persistent, 0u);
  // The size of every profiled call up to the last persistent one: the
  // executor follows a replay whose calls depart from these
  // (CallAlignment). Calls the profile did not record (the odd ones here)
  // are 0.
  uint64_t Last = 0;
  for (const Placement &Pl : R.Plan.layout().placements())
    Last = std::max(Last, Pl.call_index());
  const auto &Sizes = R.Plan.layout().prologue_call_bytes();
  ASSERT_EQ(static_cast<uint64_t>(Sizes.size()), Last);
  std::map<uint64_t, uint64_t> SizeOfCall;
  for (const Allocation &A : P.allocations())
    SizeOfCall[A.call_index()] = A.size_bytes();
  for (uint64_t Call = 1; Call <= Last; ++Call) {
    auto It = SizeOfCall.find(Call);
    EXPECT_EQ(Sizes[static_cast<int>(Call - 1)], It == SizeOfCall.end() ? 0 : It->second)
        << "call " << Call;
  }
  EXPECT_FALSE(static_cast<bool>(format::validatePlan(R.Plan)));
  // All or nothing: a profile naming one call twice (corrupt or hostile), or
  // one persistent allocation without a call, gives a plan placing them all
  // by sequence, which passes the rules every reader applies.
  auto NoCallIndex = [](const Plan &Pl) {
    for (const Placement &X : Pl.layout().placements())
      if (X.call_index() != 0)
        return false;
    return true;
  };
  Profile Twice = P;
  Twice.mutable_allocations(1)->set_call_index(Twice.allocations(0).call_index());
  PlanResult R2 = compile(Twice, footprint(Twice) / 2);
  EXPECT_FALSE(static_cast<bool>(format::validatePlan(R2.Plan)));
  EXPECT_TRUE(NoCallIndex(R2.Plan));
  EXPECT_EQ(R2.Plan.layout().prologue_call_bytes_size(), 0);
  Profile Missing = P;
  Missing.mutable_allocations(0)->clear_call_index();
  EXPECT_TRUE(NoCallIndex(compile(Missing, footprint(Missing) / 2).Plan));
}

TEST(PlannerLayout, APlanOfThePreviousFormatIsReadAsItsPlannerMeantIt) {
  // Before placements carried lifetimes (format_version 1 all along),
  // deepum-plan wrote the same layout without live_begin, live_end,
  // wrap_end, ticks, call indices or the prologue's call sizes. Its
  // per-iteration placements share bytes where their lifetimes, known to the
  // planner only, do not meet; the readers once took them as live
  // throughout and refused the plan ("placements for allocations 5 and 7
  // overlap ...").
  Profile P = syntheticTraining();
  for (int I = 0; I < P.allocations_size(); ++I)
    P.mutable_allocations(I)->set_call_index(static_cast<uint64_t>(I + 1));
  Plan Old = compile(P, footprint(P) / 2).Plan;
  PoolLayout &L = *Old.mutable_layout();
  L.clear_ticks();
  L.clear_prologue_call_bytes();
  for (Placement &Pl : *L.mutable_placements()) {
    Pl.clear_live_begin();
    Pl.clear_live_end();
    Pl.clear_wrap_end();
    Pl.clear_call_index();
  }
  size_t Shared = 0;
  for (const Placement &A : L.placements())
    for (const Placement &B : L.placements())
      if (A.sequence() < B.sequence() && !A.persistent() && !B.persistent() &&
          A.offset() < B.offset() + B.size_bytes() && B.offset() < A.offset() + A.size_bytes())
        ++Shared;
  ASSERT_GT(Shared, 0u) << "the layout reuses no bytes: nothing to test";
  llvm::Error E = format::validatePlan(Old);
  EXPECT_FALSE(static_cast<bool>(E)) << llvm::toString(std::move(E));
  // The persistent placements are live throughout, so no placement may sit
  // on their bytes, with a lifetime or without.
  const Placement *Persistent = nullptr;
  for (const Placement &Pl : L.placements())
    if (Pl.persistent())
      Persistent = &Pl;
  ASSERT_NE(Persistent, nullptr);
  Plan OnPersistent = Old;
  for (Placement &Pl : *OnPersistent.mutable_layout()->mutable_placements())
    if (!Pl.persistent()) {
      Pl.set_offset(Persistent->offset());
      Pl.set_size_bytes(std::min(Pl.size_bytes(), Persistent->size_bytes()));
      break;
    }
  EXPECT_NE(errorText(format::validatePlan(OnPersistent)).find("overlap in the arena"),
            std::string::npos);
}

TEST(PlannerLayout, ACallRecordedManyTimesHasNoProfiledSize) {
  // A corrupt profile records one call of the prologue for 257 allocations
  // of the iterations: its size is not known (0), however many records
  // repeat it, while the persistent allocations keep theirs.
  SyntheticOptions O;
  O.Layers = 100;
  O.ParamBytes = 2ull << 20;
  O.ActivationBytes = 2ull << 20;
  Profile P = syntheticTraining(O);
  std::set<uint64_t> PersistentIds;
  for (const PlannedAllocation &PA : traceOf(P).Allocations)
    if (PA.Persistent)
      PersistentIds.insert(PA.ProfileId);
  int Repeats = 0;
  for (int I = 0; I < P.allocations_size(); ++I) {
    Allocation *A = P.mutable_allocations(I);
    if (PersistentIds.count(A->id()))
      A->set_call_index(static_cast<uint64_t>(1000 + I));
    else if (Repeats < 257) {
      A->set_call_index(1);
      ++Repeats;
    }
  }
  ASSERT_EQ(Repeats, 257) << "the profile needs 257 allocations of the iterations";
  PlanResult R = compile(P, footprint(P) / 2);
  const auto &Sizes = R.Plan.layout().prologue_call_bytes();
  ASSERT_GT(Sizes.size(), 1000);
  EXPECT_EQ(Sizes[0], 0u);
  for (const Placement &Pl : R.Plan.layout().placements()) {
    if (Pl.persistent()) {
      EXPECT_NE(Sizes[static_cast<int>(Pl.call_index() - 1)], 0u) << "call " << Pl.call_index();
    }
  }
  EXPECT_FALSE(static_cast<bool>(format::validatePlan(R.Plan)));
}

struct PropertyCase {
  const char *Name;
  SyntheticOptions Options;
};

class PlannerProperties : public ::testing::TestWithParam<int> {};

std::vector<PropertyCase> propertyCases() {
  std::vector<PropertyCase> Cases;
  Cases.push_back({"clean", {}});
  SyntheticOptions Noisy;
  Noisy.ExtraKernel = true;
  Noisy.CutShort = true;
  Noisy.TwoStreams = true;
  Noisy.Iterations = 4;
  Cases.push_back({"noisy", Noisy});
  SyntheticOptions Missing;
  Missing.MissingFaults = true;
  Cases.push_back({"missing-faults", Missing});
  SyntheticOptions Repeated;
  Repeated.RepeatedNames = true;
  Repeated.Marks = false;
  Repeated.Layers = 12;
  Cases.push_back({"unmarked", Repeated});
  return Cases;
}

TEST(PlannerLayout, BothOrdersAreDisjointAndThePlannerKeepsTheFaster) {
  for (const PropertyCase &Case : propertyCases()) {
    SCOPED_TRACE(Case.Name);
    Profile P = syntheticTraining(Case.Options);
    expectDisjoint(traceOf(P, LayoutOrder::BySize));
    expectDisjoint(traceOf(P, LayoutOrder::ByBirth));
    const uint64_t Capacity = footprint(P) / 2;
    for (const char *Device : {"v100-pcie-16gb", "h100-sxm"}) {
      SCOPED_TRACE(Device);
      PlanResult Auto = compile(P, Capacity, Strategy::Prefetch, Device);
      PlanResult Size = compile(P, Capacity, Strategy::Prefetch, Device, LayoutOrder::BySize);
      PlanResult Birth = compile(P, Capacity, Strategy::Prefetch, Device, LayoutOrder::ByBirth);
      EXPECT_EQ(Size.Pool.Order, LayoutOrder::BySize);
      EXPECT_EQ(Birth.Pool.Order, LayoutOrder::ByBirth);
      const PlanResult &Faster = Birth.Stats.PredictedIterationUs <
                                         Size.Stats.PredictedIterationUs * 0.9999
                                     ? Birth
                                     : Size;
      EXPECT_EQ(Auto.Pool.Order, Faster.Pool.Order);
      EXPECT_DOUBLE_EQ(Auto.Stats.PredictedIterationUs, Faster.Stats.PredictedIterationUs);
      EXPECT_EQ(Auto.Plan.layout().SerializeAsString(), Faster.Plan.layout().SerializeAsString());
      // Other strategies lay out largest first only.
      EXPECT_EQ(compile(P, Capacity, Strategy::Swap, Device).Pool.Order, LayoutOrder::BySize);
    }
  }
}

TEST(PlannerProperties, CapacityDiscardsAndFaults) {
  for (const PropertyCase &Case : propertyCases()) {
    Profile P = syntheticTraining(Case.Options);
    Trace T = traceOf(P);
    uint64_t Footprint = footprint(P);
    for (Strategy S : kStrategies)
      for (double Ratio : {1.25, 1.5, 2.0, 3.0}) {
        SCOPED_TRACE(std::string(Case.Name) + " " + strategyName(S).str() + " " +
                     std::to_string(Ratio));
        uint64_t Capacity = static_cast<uint64_t>(static_cast<double>(Footprint) / Ratio);
        PlanResult R = compile(P, Capacity, S);
        EXPECT_FALSE(static_cast<bool>(format::validatePlan(R.Plan)));
        EXPECT_EQ(unsafeDiscards(R.Plan, traceOf(P, R.Pool.Order)), 0u);
        ReplayReport Rep = replayPlan(R.Plan);
        if (S == Strategy::Prefetch) {
          EXPECT_EQ(Rep.OverCapacityPrefetches, 0u);
          EXPECT_LE(Rep.MaxResidentBlocks, Rep.CapacityBlocks);
          if (Rep.CapacityBlocks >= Rep.MaxWorkingSetBlocks) {
            EXPECT_EQ(Rep.SteadyStateFaults, 0u);
            EXPECT_EQ(Rep.SteadyStateDriverEvictions, 0u);
          }
        }
        if (S == Strategy::Demand) {
          // No actions; below the footprint, the cyclic iteration must fetch some block again.
          EXPECT_EQ(R.Plan.actions_size(), 0);
          EXPECT_GT(R.Stats.DemandFetches, 0u);
        }
        EXPECT_GE(R.Stats.PredictedIterationUs, R.Stats.ComputeUs);
      }
  }
}

TEST(PlannerTrace, OwnersLiveAtATickAreThoseAScanOfEveryOwnerFinds) {
  // Blocks reused by many allocations over the iteration, beside one that
  // lives through most of it: the walk back from the tick cannot stop early
  // (the long span might reach it), and past a few steps a tree of span ends
  // takes over. Every tick of every block is checked against a scan of all
  // owners, on random lifetimes, some wrapping around the iteration.
  std::mt19937 Rng(7);
  Trace T;
  T.BlockBytes = 2 * MiB;
  T.Blocks = 6;
  T.Ticks = 4000;
  T.BlockOwners.assign(T.Blocks, {});
  auto Add = [&](uint64_t Block, TickInterval A, TickInterval B) {
    PlannedAllocation PA;
    PA.Sequence = static_cast<uint32_t>(T.Allocations.size());
    PA.Live[0] = A;
    PA.Live[1] = B;
    T.BlockOwners[Block].push_back(PA.Sequence);
    T.Allocations.push_back(PA);
  };
  for (uint64_t B = 0; B < T.Blocks; ++B) {
    if (B % 2 == 0)
      Add(B, {5, T.Ticks - 5}, {}); // the long-lived owner
    if (B == 3)
      Add(B, {T.Ticks - 100, T.Ticks}, {0, T.Ticks - 200}); // wraps, nearly all of it
    unsigned Short = B == 5 ? 3 : 400;
    for (unsigned K = 0; K < Short; ++K) {
      uint32_t Begin = static_cast<uint32_t>(Rng() % T.Ticks);
      uint32_t Length = 1 + static_cast<uint32_t>(Rng() % 40);
      uint32_t End = std::min<uint32_t>(Begin + Length, T.Ticks);
      Add(B, {Begin, End}, Begin + Length > T.Ticks ? TickInterval{0, Begin + Length - T.Ticks}
                                                    : TickInterval{});
    }
  }
  T.indexOwners();
  size_t Found = 0;
  for (uint64_t B = 0; B < T.Blocks; ++B)
    for (uint32_t Tick = 0; Tick <= T.Ticks; ++Tick) {
      std::multiset<uint32_t> Expected, Got;
      for (uint32_t S : T.BlockOwners[B])
        for (const TickInterval &L : T.Allocations[S].Live)
          if (!L.empty() && L.Begin <= Tick && Tick < L.End)
            Expected.insert(S);
      T.forOwnersLiveAt(B, Tick, [&](uint32_t S) { Got.insert(S); });
      ASSERT_EQ(Got, Expected) << "block " << B << " tick " << Tick;
      Found += Got.size();
    }
  EXPECT_GT(Found, 3 * T.Ticks); // the long owners alone are live at most ticks
}

TEST(PlannerSchedule, DeadDataIsDiscardedNotWrittenBack) {
  Profile P = syntheticTraining();
  PlanResult R = compile(P, footprint(P) / 2);
  uint64_t Discards = 0;
  for (const Action &A : R.Plan.actions())
    if (A.kind() == ACTION_KIND_DISCARD)
      ++Discards;
  EXPECT_GT(Discards, 0u) << "freed activations must be dropped, not written back";
  EXPECT_LT(R.Stats.DirtyEvictions, R.Stats.Evictions + R.Stats.Discards);
}

TEST(PlannerSchedule, EverythingFitsMeansNoActionsAfterWarmup) {
  Profile P = syntheticTraining();
  PlanResult R = compile(P, footprint(P));
  EXPECT_EQ(R.Stats.Evictions, 0u);
  EXPECT_EQ(R.Stats.Discards, 0u);
  EXPECT_EQ(R.Stats.Prefetches, 0u);
  EXPECT_DOUBLE_EQ(R.Stats.PredictedIterationUs, R.Stats.ComputeUs);
}

TEST(PlannerSchedule, MoreMemoryNeverPredictsSlower) {
  Profile P = syntheticTraining();
  uint64_t F = footprint(P);
  double Prev = 1e300;
  for (double Ratio : {3.0, 2.0, 1.5, 1.25, 1.0}) {
    PlanResult R = compile(P, static_cast<uint64_t>(static_cast<double>(F) / Ratio));
    EXPECT_LE(R.Stats.PredictedIterationUs, Prev * 1.0001) << Ratio;
    Prev = R.Stats.PredictedIterationUs;
  }
}

/// Belady's MIN by brute force over `Rounds` rounds of the trace's cyclic
/// block sequence, each victim's next use found by scanning ahead: the
/// blocks the last round misses.
uint64_t bruteForceMinMisses(const Trace &T, uint64_t Capacity, int Rounds) {
  const uint32_t N = T.Positions;
  std::vector<std::set<uint64_t>> Seq(N);
  for (uint32_t P = 0; P < N; ++P)
    for (const BlockUse &BU : T.Uses[P])
      Seq[P].insert(BU.Block);
  auto distance = [&](uint64_t B, uint32_t P) -> uint64_t {
    for (uint64_t D = 1; D <= N; ++D)
      if (Seq[(P + D) % N].count(B))
        return D;
    return ~uint64_t{0};
  };
  std::set<uint64_t> Resident;
  uint64_t Misses = 0;
  for (int R = 0; R < Rounds; ++R) {
    Misses = 0;
    for (uint32_t P = 0; P < N; ++P) {
      for (uint64_t B : Seq[P])
        Misses += Resident.insert(B).second;
      while (Resident.size() > Capacity) {
        std::pair<uint64_t, uint64_t> Victim{0, 0};
        bool Found = false;
        for (uint64_t B : Resident)
          if (!Seq[P].count(B) && (!Found || std::make_pair(distance(B, P), B) > Victim)) {
            Victim = {distance(B, P), B};
            Found = true;
          }
        if (!Found)
          break;
        Resident.erase(Victim.second);
      }
    }
  }
  return Misses;
}

TEST(PlannerSchedule, DemandPlanHasNoActionsAndFaultsAsBeladysMin) {
  SyntheticOptions O;
  O.Layers = 6;
  Profile P = syntheticTraining(O);
  const uint64_t F = footprint(P);
  const Trace T = traceOf(P);
  for (uint64_t Div : {1, 2, 3}) {
    SCOPED_TRACE(Div);
    const uint64_t Capacity = F / Div;
    PlanResult R = compile(P, Capacity, Strategy::Demand);
    EXPECT_EQ(R.Plan.actions_size(), 0);
    EXPECT_EQ(R.Plan.metadata().strategy(), PLAN_STRATEGY_DEMAND);
    EXPECT_EQ(R.Stats.Prefetches, 0u);
    const uint64_t C = Capacity / T.BlockBytes;
    EXPECT_EQ(R.Stats.DemandFetches, bruteForceMinMisses(T, C, 8));
    if (Div == 1) {
      EXPECT_EQ(R.Stats.DemandFetches, 0u) << "everything fits: no fault after the first round";
      EXPECT_TRUE(R.Stats.Converged);
      EXPECT_DOUBLE_EQ(R.Stats.PredictedIterationUs, R.Stats.ComputeUs);
    } else {
      // Every block is used each iteration and at most C were resident.
      EXPECT_GE(R.Stats.DemandFetches, F / T.BlockBytes - C);
      EXPECT_GT(R.Stats.PredictedIterationUs, R.Stats.ComputeUs);
      // Faulting everything in costs more than the prefetch plan predicts.
      EXPECT_GT(R.Stats.PredictedIterationUs, compile(P, Capacity).Stats.PredictedIterationUs);
    }
    EXPECT_NE(R.Plan.metadata().summary().find("demand plan for"), std::string::npos)
        << R.Plan.metadata().summary();
  }
}

/// The synthetic training profile at half its footprint on v100-pcie-16gb,
/// and the prefetch schedule the unmeasured model (free populates) makes.
struct HalfFootprint {
  Profile P = syntheticTraining();
  Trace T = traceOf(P);
  uint64_t Capacity = footprint(P) / 2;
  CostModel M = takeOk(loadCostModel("v100-pcie-16gb"));
  Schedule Discarding = schedulePrefetch(T, M, Capacity);
};

TEST(PlannerSchedule, DearPopulatesKeepDeadContents) {
  // Where populating a discarded block costs more than writing it back and
  // copying it in, the planner keeps dead contents: no discard, no populate,
  // and a prediction no worse than the discarding schedule's under that cost.
  HalfFootprint H;
  ASSERT_GT(H.Discarding.Stats.Discards, 0u);
  ASSERT_GT(H.Discarding.Stats.Populates, 0u);
  // Dearer than writing the block back and copying it in.
  H.M.PopulateBlockUs = 2 * (H.M.writeBackUs(H.T.BlockBytes) + H.M.transferUs(H.T.BlockBytes));
  const Schedule Kept = schedulePrefetch(H.T, H.M, H.Capacity);
  EXPECT_EQ(Kept.Stats.Discards, 0u);
  EXPECT_EQ(Kept.Stats.Populates, 0u);
  for (const Action &A : Kept.Actions)
    EXPECT_NE(A.kind(), ACTION_KIND_DISCARD);
  EXPECT_LE(Kept.Stats.PredictedIterationUs,
            predictIterationUs(H.T, H.M, H.Discarding.Actions, H.Capacity) * 1.0001);
  // A cheap populate (the schedules keeping dead contents are tried, and
  // lose) leaves the schedule as it was.
  H.M.PopulateBlockUs = 1e-6;
  const Schedule Cheap = schedulePrefetch(H.T, H.M, H.Capacity);
  ASSERT_EQ(Cheap.Actions.size(), H.Discarding.Actions.size());
  for (size_t I = 0; I < Cheap.Actions.size(); ++I)
    EXPECT_EQ(Cheap.Actions[I].SerializeAsString(), H.Discarding.Actions[I].SerializeAsString())
        << "action " << I;
}

TEST(PlannerSchedule, APopulateLateForItsKernelCostsTheDiscardedFault) {
  // The replay charges a kernel that starts before its populate has arrived
  // the device's discarded-fault cost, as deepum-sim does.
  HalfFootprint H;
  ASSERT_GT(H.Discarding.Stats.Populates, 0u);
  H.M.PopulateBlockUs = 5000; // every populate late
  const double Waiting = predictIterationUs(H.T, H.M, H.Discarding.Actions, H.Capacity);
  H.M.DiscardedFaultBlockUs = 1e6;
  const double Faulting = predictIterationUs(H.T, H.M, H.Discarding.Actions, H.Capacity);
  EXPECT_GT(Faulting, Waiting + 1e6) << "at least one kernel must pay the fault";
}

TEST(PlannerSchedule, APopulateBesideTheCopyEngineLeavesItToTheFetches) {
  // Where a populate holds no copy engine (populates_hold_copy_engine false)
  // the cost model queues it apart from the fetches, as deepum-sim's engine
  // does: the same plan is predicted faster than with populates queued on
  // the copy engine, and no faster than with populates free.
  HalfFootprint H;
  ASSERT_GT(H.Discarding.Stats.Populates, 0u);
  H.M.PopulateBlockUs = H.M.transferUs(H.T.BlockBytes);
  const double Held = predictIterationUs(H.T, H.M, H.Discarding.Actions, H.Capacity);
  H.M.PopulatesHoldCopyEngine = false;
  const double Beside = predictIterationUs(H.T, H.M, H.Discarding.Actions, H.Capacity);
  H.M.PopulateBlockUs = 0;
  const double Free = predictIterationUs(H.T, H.M, H.Discarding.Actions, H.Capacity);
  EXPECT_LT(Beside, Held * 0.99);
  EXPECT_GE(Beside, Free * 0.9999);
}

TEST(PlannerSchedule, VictimKeysOrderAsTheirDoubles) {
  // The victim heap compares keys by keyOrderBits: its unsigned order must be
  // the doubles' order over every sign, exponent and the edges (infinities,
  // subnormals, -0 equal to +0), or the search picks other victims.
  using Lim = std::numeric_limits<double>;
  std::vector<double> Keys = {-Lim::infinity(), -Lim::max(),     -1e300, -2.5,
                              -1.0,             -Lim::min(),     -Lim::denorm_min(),
                              -0.0,             0.0,             Lim::denorm_min(),
                              Lim::min(),       1.0,             2.5,
                              1e300,            Lim::max(),      Lim::infinity()};
  std::mt19937_64 Rng(34);
  while (Keys.size() < 400) {
    const double K = std::bit_cast<double>(Rng());
    if (!std::isnan(K))
      Keys.push_back(K);
  }
  for (double A : Keys)
    for (double B : Keys) {
      ASSERT_EQ(A < B, keyOrderBits(A) < keyOrderBits(B)) << A << " vs " << B;
      ASSERT_EQ(A == B, keyOrderBits(A) == keyOrderBits(B)) << A << " vs " << B;
    }
}

TEST(PlannerSchedule, RecordedFaultStallIsNotCompute) {
  // Kernels recorded while faulting: the plan's clock is their compute time,
  // the duration less the recorded wait on faults.
  Profile P = syntheticTraining();
  const Trace Before = traceOf(P);
  for (Kernel &K : *P.mutable_kernels())
    K.set_fault_stall_ns((K.end_ns() - K.start_ns()) / 4);
  const Trace After = traceOf(P);
  ASSERT_EQ(Before.DurationUs.size(), After.DurationUs.size());
  for (size_t I = 0; I < After.DurationUs.size(); ++I) {
    const Kernel &K = P.kernels(static_cast<int>(After.FirstKernel + I));
    const uint64_t Ns = K.end_ns() - K.start_ns();
    EXPECT_NEAR(After.DurationUs[I], static_cast<double>(Ns - Ns / 4) / 1000.0, 1e-9);
    EXPECT_LT(After.DurationUs[I], Before.DurationUs[I]);
  }
}

TEST(PlannerSchedule, DurationsFollowTheTargetDevice) {
  // A profile recorded on a V100 with roofline inputs, planned for an H100:
  // the schedule's clock is the H100's roofline (as deepum-sim's
  // `--durations auto`), not the V100's measured durations.
  Profile P = syntheticTraining();
  P.mutable_device()->set_name("v100-pcie-16gb");
  for (Kernel &K : *P.mutable_kernels()) {
    K.set_flops(4e9);
    K.set_dram_bytes(1e8);
  }
  Trace T = traceOf(P);
  const uint64_t Everything = uint64_t{1} << 40;
  double Profiled = 0;
  for (double Us : T.DurationUs)
    Profiled += Us;
  // h100-pcie: 51 TFLOP/s x 0.75 and 2 TB/s x 0.8 (device-models.json):
  // 4e9 flops take 104.58 us (rounded up to whole ns), 1e8 bytes 62.5 us.
  const double H100Us = std::ceil(4e9 / (51e12 * 0.75) * 1e9) / 1000.0;
  PlanResult H = compile(P, Everything, Strategy::Prefetch, "h100-pcie");
  EXPECT_NEAR(H.Stats.ComputeUs, H100Us * static_cast<double>(T.Positions), 1e-6);
  // The device it was recorded on keeps the measured durations.
  PlanResult V = compile(P, Everything, Strategy::Prefetch, "v100-pcie-16gb");
  EXPECT_NEAR(V.Stats.ComputeUs, Profiled, 1e-6);
  // Without roofline inputs the measured durations stay too.
  Profile Q = syntheticTraining();
  Q.mutable_device()->set_name("v100-pcie-16gb");
  EXPECT_NEAR(compile(Q, Everything, Strategy::Prefetch, "h100-pcie").Stats.ComputeUs, Profiled,
              1e-6);
}

/// A trace of `Positions` kernels of no duration over `Blocks` 2 MiB blocks,
/// using none yet.
Trace emptyTrace(uint32_t Positions, uint64_t Blocks) {
  Trace T;
  T.Positions = Positions;
  T.BlockBytes = 2 * MiB;
  T.Blocks = Blocks;
  T.DurationUs.assign(Positions, 0.0);
  T.Uses.assign(Positions, {});
  return T;
}

/// An action at `Pos` over runs of 2 MiB blocks (first, count); advice sets
/// read-mostly, a prefetch is due at `Due`.
Action blockAction(uint32_t Pos, ActionKind Kind,
                   std::vector<std::pair<uint64_t, uint64_t>> Runs, uint32_t Due = 0) {
  Action A;
  A.set_position(Pos);
  A.set_kind(Kind);
  if (Kind == ACTION_KIND_PREFETCH)
    A.set_due_position(Due);
  if (Kind == ACTION_KIND_ADVISE)
    A.set_advice(ADVICE_SET_READ_MOSTLY);
  for (auto [First, Count] : Runs) {
    ArenaRange *R = A.add_ranges();
    R->set_offset(First * 2 * MiB);
    R->set_bytes(Count * 2 * MiB);
  }
  return A;
}

TEST(PlannerSchedule, TransferCallsCostTheHostAsDeepumSimChargesThem) {
  // Four kernels, each reading blocks 0-3, all resident after the first
  // iteration: the actions move nothing, so only their API calls cost time.
  Trace T = emptyTrace(4, 8);
  for (auto &Uses : T.Uses)
    for (uint64_t B = 0; B < 4; ++B)
      Uses.push_back({B, ACCESS_MODE_READ});
  std::vector<Action> Actions;
  auto Add = [&](uint32_t Pos, ActionKind Kind, std::vector<std::pair<uint64_t, uint64_t>> Blocks,
                 uint32_t Due = 0) { Actions.push_back(blockAction(Pos, Kind, Blocks, Due)); };
  Add(0, ACTION_KIND_ADVISE, {{0, 1}});              // not charged
  Add(1, ACTION_KIND_PREFETCH, {{0, 1}, {2, 1}}, 1); // one call, 2 ranges: 20 + 1
  Add(2, ACTION_KIND_DISCARD, {{7, 1}});             // 20 (never resident)
  Add(2, ACTION_KIND_EVICT, {{6, 1}});               // 20 (never resident)
  Add(2, ACTION_KIND_PREFETCH, {{1, 1}}, 2);         // 20
  // One batch call whose blocks 0-2 form one run across two actions: 20.
  Add(3, ACTION_KIND_PREFETCH, {{0, 2}}, 0);
  Add(3, ACTION_KIND_PREFETCH, {{2, 1}}, 3);
  normalizeActions(Actions);
  const uint64_t Memory = T.Blocks * T.BlockBytes;

  CostModel Free;
  ASSERT_EQ(Free.TransferCallUs, 0.0);
  CostModel Charged = Free;
  Charged.TransferCallUs = 20;
  Charged.TransferRangeUs = 1;
  const double CallsUs = (20 + 1) + 3 * 20 + 20;
  EXPECT_NEAR(predictIterationUs(T, Free, Actions, Memory), 0.0, 1e-9);
  EXPECT_NEAR(predictIterationUs(T, Charged, Actions, Memory), CallsUs, 1e-9);

  // Kernels of 10 us: a position's calls run while the previous kernel does,
  // and only what exceeds it delays the launch (deepum-sim: the kernel starts
  // at max(previous end, previous start + calls)).
  T.DurationUs.assign(4, 10.0);
  EXPECT_NEAR(predictIterationUs(T, Free, Actions, Memory), 40.0, 1e-9);
  EXPECT_NEAR(predictIterationUs(T, Charged, Actions, Memory), 10 + 21 + 60 + 20, 1e-9);
  // Calls shorter than the kernel before them are hidden.
  CostModel Cheap = Free;
  Cheap.TransferCallUs = 5;
  Cheap.TransferRangeUs = 1;
  EXPECT_NEAR(predictIterationUs(T, Cheap, Actions, Memory), 10 + 10 + 15 + 10, 1e-9);

  // The shipped device models set them; the planner reads them.
  CostModel V100 = takeOk(loadCostModel("v100-pcie-16gb"));
  EXPECT_EQ(V100.TransferCallUs, 20.0);
  EXPECT_EQ(V100.TransferRangeUs, 1.0);
}

TEST(PlannerSchedule, ABlockComesBackOnlyAfterItsOwnWriteBack) {
  // Kernel 0 writes blocks 0-3; position 1 evicts them (four write-backs in
  // one FIFO, block 3's last); kernel 2 reads block 3, prefetched at position
  // 2; position 3 prefetches 0-2 for the next iteration. The host holds block
  // 3's contents only when its write-back ends, so its fetch starts then:
  // the iteration is four write-backs and four fetches, not four fetches
  // (what the cost model said while it fetched a block still leaving).
  Trace T = emptyTrace(4, 8);
  for (uint64_t B = 0; B < 4; ++B)
    T.Uses[0].push_back({B, ACCESS_MODE_WRITE});
  T.Uses[2].push_back({3, ACCESS_MODE_READ});
  std::vector<Action> Actions = {blockAction(1, ACTION_KIND_EVICT, {{0, 4}}),
                                 blockAction(2, ACTION_KIND_PREFETCH, {{3, 1}}, 2),
                                 blockAction(3, ACTION_KIND_PREFETCH, {{0, 3}}, 0)};
  normalizeActions(Actions);
  CostModel M;
  M.LinkBytesPerSecond = 12e9;
  M.DeviceToHostBytesPerSecond = 6e9;
  const double Fetch = M.transferUs(T.BlockBytes), WriteBack = M.writeBackUs(T.BlockBytes);
  ASSERT_GT(WriteBack, Fetch);
  const uint64_t Memory = T.Blocks * T.BlockBytes;
  EXPECT_NEAR(predictIterationUs(T, M, Actions, Memory), 4 * WriteBack + 4 * Fetch, 1e-6);

  // libdeepum evicts in calls of at most kEvictionCallBlocks resident blocks:
  // twenty blocks the first kernel used, evicted at the next position, are
  // three calls, each charged (transfers and faults free here); the same
  // action on blocks that are not resident is one call.
  Trace Calls = emptyTrace(2, 24);
  for (uint64_t B = 0; B < 20; ++B)
    Calls.Uses[0].push_back({B, ACCESS_MODE_READ});
  const std::vector<Action> Evict = {blockAction(1, ACTION_KIND_EVICT, {{0, 20}})};
  ASSERT_EQ(format::kEvictionCallBlocks, 8u);
  CostModel Charged;
  Charged.LinkBytesPerSecond = Charged.DeviceToHostBytesPerSecond = 1e18;
  Charged.FaultBatchLatencyUs = 0;
  Charged.TransferCallUs = 20;
  const uint64_t All = Calls.Blocks * Calls.BlockBytes;
  EXPECT_NEAR(predictIterationUs(Calls, Charged, Evict, All), 3 * 20.0, 1e-3);
  Calls.Uses[0].clear();
  EXPECT_NEAR(predictIterationUs(Calls, Charged, Evict, All), 20.0, 1e-3);
}

TEST(PlannerSchedule, PopulatesLeaveTheRoomBesideALongKernelToFetches) {
  // Four blocks of memory, two long kernels, three short ones. Kernel 0
  // fills the memory: it reads block 4 and overwrites 5-7. Kernel 1 reads
  // block 0 and overwrites block 1, leaving two blocks free beside it for
  // 1000 us; kernel 2 reads block 0 again. Kernel 3 overwrites block 2 (a
  // populate: nothing crosses the link), kernel 4 reads block 3. Blocks 3
  // and 4 must come back every iteration, and both fit beside kernel 1.
  // Taking slots in need order, kernel 3's populate holds one of them, and
  // block 4 crosses after kernel 1 ends, on the critical path; the populate
  // can as well take block 1's memory, free when kernel 1 ends (vgg16 at 3x:
  // launch 149's populates beside launch 146 while the optimizer's fetches
  // waited).
  Trace T;
  T.Positions = 5;
  T.BlockBytes = 2 * MiB;
  T.Blocks = 8;
  T.Pool.ArenaBytes = T.Blocks * T.BlockBytes;
  T.DurationUs = {1000.0, 1000.0, 10.0, 10.0, 10.0};
  T.KernelTick = {1, 2, 3, 4, 5};
  T.Ticks = 6;
  PlannedAllocation Whole;
  Whole.Persistent = true;
  Whole.Size = T.Pool.ArenaBytes;
  Whole.Live[0] = {0, T.Ticks};
  T.Allocations = {Whole};
  T.BlockOwners.assign(T.Blocks, {0});
  T.indexOwners();
  T.Uses = {{{4, ACCESS_MODE_READ},
             {5, ACCESS_MODE_WRITE},
             {6, ACCESS_MODE_WRITE},
             {7, ACCESS_MODE_WRITE}},
            {{0, ACCESS_MODE_READ}, {1, ACCESS_MODE_WRITE}},
            {{0, ACCESS_MODE_READ}},
            {{2, ACCESS_MODE_WRITE}},
            {{3, ACCESS_MODE_READ}}};
  CostModel M;
  M.LinkBytesPerSecond = 20e9; // 105 us per block
  const uint64_t Memory = 4 * T.BlockBytes;
  const double BlockUs = M.transferUs(T.BlockBytes), ComputeUs = 2030;
  Schedule InNeedOrder = schedulePrefetchWith(T, M, Memory, 1024, false, false);
  Schedule Swapped = schedulePrefetchWith(T, M, Memory, 1024, false, true);
  // Block 0 can only cross once kernel 0 has ended; with blocks 3 and 4
  // under kernel 1, that is the only stall.
  EXPECT_NEAR(Swapped.Stats.PredictedIterationUs, ComputeUs + BlockUs, 1.0);
  EXPECT_GT(InNeedOrder.Stats.PredictedIterationUs, ComputeUs + 1.5 * BlockUs);
  // The planner keeps the faster schedule.
  EXPECT_NEAR(schedulePrefetch(T, M, Memory).Stats.PredictedIterationUs,
              Swapped.Stats.PredictedIterationUs, 1e-6);
}

TEST(PlannerSchedule, DeadFirstKeepsTheProperties) {
  // Each schedule the search chooses among must be valid on its own: the
  // dead-first variant and the margin-only ones respect capacity, never
  // discard data read again, and the search keeps the fastest.
  CostModel M = takeOk(loadCostModel("v100-pcie-16gb"));
  for (const PropertyCase &Case : propertyCases()) {
    Profile P = syntheticTraining(Case.Options);
    Trace T = traceOf(P);
    uint64_t Footprint = footprint(P);
    for (double Ratio : {1.5, 2.0, 3.0}) {
      uint64_t Capacity = static_cast<uint64_t>(static_cast<double>(Footprint) / Ratio);
      PlanResult R = compile(P, Capacity);
      // The schedules below are made on T's layout: the plan carries it.
      if (R.Pool.Order != T.Pool.Order)
        R = compile(P, Capacity, Strategy::Prefetch, "v100-pcie-16gb", T.Pool.Order);
      ASSERT_EQ(R.Pool.Order, T.Pool.Order);
      for (bool DeadFirst : {true, false})
        for (double Margin : {1.0, 256.0, 8192.0})
          for (bool Swap : {false, true}) {
            SCOPED_TRACE(std::string(Case.Name) + " ratio " + std::to_string(Ratio) + " margin " +
                         std::to_string(Margin) + (DeadFirst ? " dead-first" : "") +
                         (Swap ? " swapping populate slots" : ""));
            Schedule S = schedulePrefetchWith(T, M, Capacity, Margin, DeadFirst, Swap);
            Plan Variant = R.Plan;
            Variant.clear_actions();
            for (const Action &A : S.Actions)
              *Variant.add_actions() = A;
            EXPECT_FALSE(static_cast<bool>(format::validatePlan(Variant)));
            EXPECT_EQ(unsafeDiscards(Variant, T), 0u);
            ReplayReport Rep = replayPlan(Variant);
            EXPECT_EQ(Rep.OverCapacityPrefetches, 0u);
            EXPECT_LE(Rep.MaxResidentBlocks, Rep.CapacityBlocks);
            if (Rep.CapacityBlocks >= Rep.MaxWorkingSetBlocks) {
              EXPECT_EQ(Rep.SteadyStateFaults, 0u);
            }
            EXPECT_GE(S.Stats.PredictedIterationUs, S.Stats.ComputeUs);
            if (DeadFirst && Margin == 256.0 && !Swap) {
              EXPECT_LE(R.Stats.PredictedIterationUs, S.Stats.PredictedIterationUs * 1.0001);
            }
          }
    }
  }
}

TEST(PlannerPlan, TablesAndMetadata) {
  SyntheticOptions O;
  O.RepeatedNames = true;
  Profile P = syntheticTraining(O);
  PlanResult R = compile(P, footprint(P) / 2);
  const Plan &Pl = R.Plan;
  int N = Pl.position_ids_size();
  EXPECT_EQ(N, 1 + 8 + 1 + 8 + 8);
  EXPECT_EQ(Pl.block_chains_size(), N);
  EXPECT_EQ(Pl.position_contexts_size(), N);
  EXPECT_EQ(Pl.metadata().profile_fingerprint(),
            sequenceFingerprint(
                std::vector<uint64_t>(Pl.position_ids().begin(), Pl.position_ids().end())));
  EXPECT_EQ(Pl.metadata().device_model(), "v100-pcie-16gb");
  EXPECT_EQ(Pl.metadata().strategy(), PLAN_STRATEGY_PREFETCH);
  EXPECT_FALSE(Pl.metadata().summary().empty());
  // "fwd" recurs at 8 positions; its successors: itself 7 times and "loss" once per iteration.
  for (const ExecutionIdEntry &E : Pl.execution_ids()) {
    if (E.signature().rfind("fwd<<<", 0) != 0)
      continue;
    EXPECT_EQ(E.positions_size(), 8);
    ASSERT_EQ(E.successors_size(), 2);
    EXPECT_EQ(E.successors(0).count(), 7u * 3);
    EXPECT_EQ(E.successors(1).count(), 3u);
  }
  std::set<uint64_t> Contexts(Pl.position_contexts().begin(), Pl.position_contexts().end());
  EXPECT_GT(Contexts.size(), 8u) << "contexts tell repeated kernels apart";
  for (const BlockChain &C : Pl.block_chains())
    EXPECT_EQ(C.blocks_size(), C.modes_size());
}

TEST(PlannerPlan, IgnoredLinesNameTheNoise) {
  SyntheticOptions O;
  O.Iterations = 4;
  O.ExtraKernel = true;
  O.CutShort = true;
  O.TwoStreams = true;
  Profile P = syntheticTraining(O);
  PlanResult R = compile(P, footprint(P) / 2);
  std::string All;
  for (const std::string &L : R.Plan.metadata().ignored())
    All += L + "\n";
  EXPECT_NE(All.find("iteration 1: 1 extra kernels"), std::string::npos) << All;
  EXPECT_NE(All.find("iteration 3: 4 kernels fewer"), std::string::npos) << All;
  EXPECT_EQ(R.Plan.metadata().reference_iteration(), 2u);
  EXPECT_NE(R.Plan.metadata().summary().find("2 streams"), std::string::npos)
      << R.Plan.metadata().summary();
}

/// The plan of a profile whose reference iteration lost accesses has the
/// chains of the plan of the whole profile, and says it took them from the
/// other iterations.
void expectChainsRecovered(const Plan &Whole, const Plan &Recovered) {
  ASSERT_EQ(Whole.block_chains_size(), Recovered.block_chains_size());
  for (int I = 0; I < Whole.block_chains_size(); ++I) {
    std::set<uint64_t> Want(Whole.block_chains(I).blocks().begin(),
                            Whole.block_chains(I).blocks().end());
    std::set<uint64_t> Got(Recovered.block_chains(I).blocks().begin(),
                           Recovered.block_chains(I).blocks().end());
    EXPECT_EQ(Want, Got) << "position " << I;
  }
  bool Said = false;
  for (const std::string &L : Recovered.metadata().ignored())
    Said |= L.find("taken from the other iterations") != std::string::npos;
  EXPECT_TRUE(Said);
}

TEST(PlannerPlan, MissingFaultRecordsAreFilledFromOtherIterations) {
  SyntheticOptions O;
  O.BlocksOnly = true;
  Profile Clean = syntheticTraining(O);
  O.MissingFaultsInLast = true;
  Profile Missing = syntheticTraining(O);
  expectChainsRecovered(compile(Clean, footprint(Clean) / 2).Plan,
                        compile(Missing, footprint(Missing) / 2).Plan);
}

TEST(PlannerPlan, TensorAccessesMissingFromTheReferenceAreTakenFromOtherIterations) {
  // A real driver's access sets are a sample: the pages recorded for a
  // kernel differ from one iteration to the next (docs/results/gpu.md,
  // finding 12). The reference iteration (the last) loses every other
  // tensor access; the plan's access sets are still the whole profile's,
  // taken from the other iterations through their allocations' order.
  Profile Clean = syntheticTraining();
  Profile Missing = Clean;
  auto A = takeOk(analyzeIterations(Missing));
  const IterationSpan &Ref = A.Iterations[A.Reference];
  size_t Dropped = 0;
  for (uint32_t K = Ref.First; K < Ref.First + Ref.Count; ++K) {
    auto *Tensors = Missing.mutable_kernels(static_cast<int>(K))->mutable_tensors();
    for (int I = Tensors->size() - 1; I >= 0; I -= 2, ++Dropped)
      Tensors->DeleteSubrange(I, 1);
  }
  ASSERT_GT(Dropped, 0u);
  PlanResult Y = compile(Missing, footprint(Missing) / 2);
  expectChainsRecovered(compile(Clean, footprint(Clean) / 2).Plan, Y.Plan);
  // The reference alone would have missed them.
  Profile Alone = Missing;
  for (uint32_t K = 0; K < Ref.First; ++K)
    Alone.mutable_kernels(static_cast<int>(K))->clear_tensors();
  PlanResult Z = compile(Alone, footprint(Alone) / 2);
  uint64_t Uses = 0, AloneUses = 0;
  for (int I = 0; I < Y.Plan.block_chains_size(); ++I)
    Uses += static_cast<uint64_t>(Y.Plan.block_chains(I).blocks_size());
  for (int I = 0; I < Z.Plan.block_chains_size(); ++I)
    AloneUses += static_cast<uint64_t>(Z.Plan.block_chains(I).blocks_size());
  EXPECT_LT(AloneUses, Uses);
}

TEST(PlannerPlan, BlockMappingPastItsLimitIsRefused) {
  // Kernels without tensor data have their blocks mapped onto the
  // allocations live on them; a profile that needs more mapping than the
  // limits allow (very many allocations sharing the blocks of very many
  // launches) is refused in one line, before its memory grows.
  SyntheticOptions O;
  O.BlocksOnly = true;
  Profile P = syntheticTraining(O);
  auto A = takeOk(analyzeIterations(P));
  ASSERT_TRUE(static_cast<bool>(buildTrace(P, A)));
  TraceLimits Few;
  Few.BlockMappings = 10;
  std::string E = errorText(buildTrace(P, A, Few));
  EXPECT_NE(E.find("the kernels' block accesses map to more than 10 accesses of allocations, "
                   "the planner's limit"),
            std::string::npos)
      << E;
  EXPECT_EQ(E.find('\n'), std::string::npos) << E;
  Few = TraceLimits{};
  Few.BlockMappingScans = 10;
  E = errorText(buildTrace(P, A, Few));
  EXPECT_NE(E.find("more than 10 allocations scanned"), std::string::npos) << E;
}

TEST(PlannerPlan, IterationsPastTheSiblingLimitAreLeftOutAndSaid) {
  // The other iterations fill in block records missing from the reference
  // one; indexing each costs a scan of the allocations. Past the limit the
  // rest are not searched, and the trace says how many.
  SyntheticOptions O;
  O.BlocksOnly = true;
  O.Iterations = 5;
  Profile P = syntheticTraining(O);
  auto A = takeOk(analyzeIterations(P));
  auto Said = [](const Trace &T) {
    std::string All;
    for (const std::string &L : T.Ignored)
      All += L + "\n";
    return All;
  };
  const std::string None = Said(takeOk(buildTrace(P, A)));
  EXPECT_EQ(None.find("not searched"), std::string::npos) << None;
  TraceLimits Few;
  Few.SiblingWork = 1;
  const std::string All = Said(takeOk(buildTrace(P, A, Few)));
  EXPECT_NE(All.find("4 iterations with the same kernel sequence were not searched"),
            std::string::npos)
      << All;
  // Tensor accesses are taken from the siblings too, under the same limit.
  O.BlocksOnly = false;
  Profile Tensors = syntheticTraining(O);
  auto TA = takeOk(analyzeIterations(Tensors));
  EXPECT_EQ(Said(takeOk(buildTrace(Tensors, TA))).find("not searched"), std::string::npos);
  const std::string Limited = Said(takeOk(buildTrace(Tensors, TA, Few)));
  EXPECT_NE(Limited.find("4 iterations with the same kernel sequence were not searched"),
            std::string::npos)
      << Limited;
}

TEST(PlannerPlan, Deterministic) {
  Profile P = syntheticTraining();
  std::string A, B;
  ASSERT_TRUE(compile(P, footprint(P) / 2).Plan.SerializeToString(&A));
  ASSERT_TRUE(compile(P, footprint(P) / 2).Plan.SerializeToString(&B));
  EXPECT_EQ(A, B);
}

TEST(PlannerErrors, OneLineErrors) {
  Profile P = syntheticTraining();
  PlanOptions O;
  O.GpuMemoryBytes = 0;
  EXPECT_NE(errorText(compilePlan(P, O)).find("--gpu-memory must be positive"), std::string::npos);
  O.GpuMemoryBytes = 8 * MiB;
  O.DeviceModel = "no-such-gpu";
  std::string E = errorText(compilePlan(P, O));
  // The one device loader's message, as deepum-sim gives it.
  EXPECT_NE(E.find("unknown device model 'no-such-gpu' (known: v100-pcie-16gb"), std::string::npos)
      << E;
  O.DeviceModel.clear();
  O.DeviceFile = "lab.json";
  E = errorText(compilePlan(P, O));
  EXPECT_NE(E.find("--device-file lab.json: name the model to use with --device NAME"),
            std::string::npos)
      << E;
  O.DeviceFile.clear();
  EXPECT_NE(errorText(parseStrategy("lru")).find("unknown strategy 'lru'"), std::string::npos);
  Profile Empty = P;
  Empty.clear_kernels();
  Empty.clear_iterations();
  O.DeviceModel.clear();
  EXPECT_NE(errorText(compilePlan(Empty, O)).find("no kernels"), std::string::npos);

  PlanToolOptions T;
  T.Input = scratchDir("PlannerErrors") + "/missing.pb";
  T.Output = scratchDir("PlannerErrors") + "/out.plan.pb";
  T.GpuMemory = "lots";
  std::string Out, Err;
  llvm::raw_string_ostream OS(Out), ES(Err);
  EXPECT_NE(errorText(runPlan(T, OS, ES)).find("--gpu-memory"), std::string::npos);
  T.GpuMemory = "1GiB";
  T.Layout = "smallest-first";
  E = errorText(runPlan(T, OS, ES));
  EXPECT_NE(E.find("--layout: unknown order 'smallest-first' (auto, largest-first or "
                   "allocation-order)"),
            std::string::npos)
      << E;
  T.Layout = "auto";
  E = errorText(runPlan(T, OS, ES));
  EXPECT_NE(E.find("missing.pb"), std::string::npos) << E;
}

// A profile with nothing to plan gives one line saying why and what to do,
// never an empty plan (a profile of PyTorch's own caching allocator records
// no managed allocations; one without UM counters records no accesses).
TEST(PlannerErrors, NothingToPlanIsRefused) {
  PlanOptions O;
  O.GpuMemoryBytes = 64 * MiB;
  Profile NoAllocations = syntheticTraining();
  NoAllocations.clear_allocations();
  std::string E = errorText(compilePlan(NoAllocations, O));
  EXPECT_NE(E.find("records no allocations"), std::string::npos) << E;
  EXPECT_NE(E.find("deepum-profile"), std::string::npos) << E;

  SyntheticOptions One;
  One.Iterations = 1;
  One.Marks = false;
  E = errorText(compilePlan(syntheticTraining(One), O));
  EXPECT_NE(E.find("no complete iteration"), std::string::npos) << E;
  EXPECT_NE(E.find("--iterations"), std::string::npos) << E;
  One.Marks = true; // one marked iteration is a complete one
  EXPECT_TRUE(static_cast<bool>(compilePlan(syntheticTraining(One), O)));

  Profile NoAccesses = syntheticTraining();
  for (Kernel &K : *NoAccesses.mutable_kernels()) {
    K.clear_blocks();
    K.clear_tensors();
  }
  NoAccesses.clear_faults();
  NoAccesses.clear_migrations();
  NoAccesses.clear_um_events();
  E = errorText(compilePlan(NoAccesses, O));
  EXPECT_NE(E.find("records no memory accesses"), std::string::npos) << E;
  EXPECT_NE(E.find("--mode access-set"), std::string::npos) << E;
  EXPECT_EQ(E.find('\n'), std::string::npos) << E;

  // It records accesses, none the planner can use: it says what is missing.
  Profile Unattributed = NoAccesses;
  for (int I = 0; I < 64; ++I) {
    PageFault *F = Unattributed.add_faults();
    F->set_address(Unattributed.allocations(0).address() + 4096 * static_cast<uint64_t>(I));
    F->set_kernel_index(-1);
  }
  E = errorText(compilePlan(Unattributed, O));
  EXPECT_NE(E.find("records 64 page faults but none on its allocations in the kernels of "
                   "iteration"),
            std::string::npos)
      << E;
  EXPECT_NE(E.find("deepum-profile --iterations 3"), std::string::npos) << E;
  EXPECT_EQ(E.find("records no memory accesses"), std::string::npos) << E;

  // deepum-profile saw no mark and no period and recorded the whole run as
  // one iteration: not a complete iteration, as for any profile without one.
  Profile WholeRun = syntheticTraining(One);
  WholeRun.mutable_workload()->set_notes(format::kWholeRunNote);
  E = errorText(compilePlan(WholeRun, O));
  EXPECT_NE(E.find("no complete iteration: deepum-profile saw no iteration mark"),
            std::string::npos)
      << E;
  EXPECT_NE(E.find("--iterations 3"), std::string::npos) << E;
}

TEST(PlannerErrors, IterationsFoundByThePeriodAreSaidSo) {
  // deepum-profile writes the iterations it found from the kernel sequence's
  // period as Iteration records, and says so in the notes.
  PlanOptions O;
  O.GpuMemoryBytes = 64 * MiB;
  Profile P = syntheticTraining();
  P.mutable_workload()->set_notes(std::string(format::kIterationsByPeriodNote) +
                                  "2 iteration(s) found from the period of the kernel sequence, "
                                  "0 skipped, 2 recorded");
  PlanResult R = takeOk(compilePlan(P, O));
  EXPECT_NE(R.Plan.metadata().summary().find("iterations by period"), std::string::npos)
      << R.Plan.metadata().summary();
  P.mutable_workload()->clear_notes();
  R = takeOk(compilePlan(P, O));
  EXPECT_NE(R.Plan.metadata().summary().find("iterations by marks"), std::string::npos)
      << R.Plan.metadata().summary();
}

TEST(PlannerTool, WritesAPlanInspectCanRead) {
  std::string Dir = scratchDir("PlannerTool");
  Profile P = syntheticTraining();
  ASSERT_FALSE(static_cast<bool>(format::writeProfile(P, Dir + "/p.profile.pb.gz")));
  PlanToolOptions T;
  T.Input = Dir + "/p.profile.pb.gz";
  T.Output = Dir + "/p.plan.pb";
  T.GpuMemory = "96MiB";
  T.DeviceModel = "h100-pcie";
  std::string Out, Err;
  llvm::raw_string_ostream OS(Out), ES(Err);
  ASSERT_FALSE(static_cast<bool>(runPlan(T, OS, ES)));
  auto Plan = takeOk(format::readPlan(T.Output));
  EXPECT_EQ(Plan.metadata().gpu_memory_bytes(), 96 * MiB);
  EXPECT_EQ(Plan.metadata().device_model(), "h100-pcie");
  EXPECT_NE(OS.str().find("prefetch plan for synthetic"), std::string::npos) << OS.str();
}

class PlannerShipped : public ::testing::TestWithParam<std::string> {};

TEST_P(PlannerShipped, LayoutDiscardsCapacityFaults) {
  std::string Path = shippedProfilePath(GetParam());
  if (!llvm::sys::fs::exists(Path))
    GTEST_SKIP() << Path << " is not there yet";
  Profile P = takeOk(format::readProfile(Path));
  Trace T = traceOf(P);
  expectDisjoint(T);
  EXPECT_LE(T.Pool.LayoutBytes, T.Pool.BestFitPeakBytes);
  EXPECT_LE(static_cast<double>(T.Pool.LayoutBytes),
            1.02 * static_cast<double>(T.Pool.PeakLiveBytes));
  uint64_t F = footprint(P);
  for (double Ratio : {1.5, 3.0})
    for (Strategy S : {Strategy::Prefetch, Strategy::Swap}) {
      SCOPED_TRACE(std::to_string(Ratio) + (S == Strategy::Swap ? " swap" : " prefetch"));
      PlanResult R = compile(P, static_cast<uint64_t>(static_cast<double>(F) / Ratio), S);
      EXPECT_EQ(unsafeDiscards(R.Plan, R.Pool.Order == T.Pool.Order ? T : traceOf(P, R.Pool.Order)),
                0u);
      // Every allocation carried into the reference iteration is matched
      // (the "ignored: N allocations carried in" note no longer comes with
      // every profile).
      for (const std::string &L : R.Plan.metadata().ignored())
        EXPECT_EQ(L.find("carried in"), std::string::npos) << L;
      if (S == Strategy::Swap)
        continue;
      EXPECT_TRUE(R.Stats.Converged);
      ReplayReport Rep = replayPlan(R.Plan, 3);
      EXPECT_EQ(Rep.OverCapacityPrefetches, 0u);
      if (Rep.CapacityBlocks >= Rep.MaxWorkingSetBlocks) {
        EXPECT_LE(Rep.MaxResidentBlocks, Rep.CapacityBlocks);
        EXPECT_EQ(Rep.SteadyStateFaults, 0u);
      }
    }
}

// --- Hostile input: valid profiles at the edges of the format ------------------

/// Three iterations of `Body`, marked.
template <typename Fn> Profile threeIterations(ProfileBuilder &B, Fn Body) {
  for (int It = 0; It < 3; ++It) {
    uint32_t First = static_cast<uint32_t>(B.profile().kernels_size());
    Body();
    B.iteration(First, static_cast<uint32_t>(B.profile().kernels_size()) - First);
  }
  return B.build();
}

TEST(PlannerHostile, AllocationNear2To64BytesIsRefused) {
  // Valid: it ends exactly at the top of the address space. Only its first
  // 64 KiB is ever touched.
  ProfileBuilder B;
  const uint64_t Address = uint64_t{1} << 40;
  uint64_t H = B.allocate(UINT64_MAX - Address, 0, -1, ALLOCATION_ROLE_PARAMETER, Address);
  Profile P = threeIterations(B, [&] {
    B.kernel("k0", 100000, {{H, ACCESS_MODE_READ, 0, 64 << 10}});
    B.kernel("k1", 100000, {{H, ACCESS_MODE_WRITE, 0, 64 << 10}});
  });
  ASSERT_FALSE(format::validateProfile(P));
  PlanOptions O;
  O.GpuMemoryBytes = 8 * MiB;
  std::string E = errorText(compilePlan(P, O));
  EXPECT_NE(E.find("more than the planner's limit"), std::string::npos) << E;
  EXPECT_EQ(E.find('\n'), std::string::npos) << E;
}

TEST(PlannerHostile, SwapOnlyMovesBlocksTheKernelsTouch) {
  // A 6 MiB activation whose kernels touch only its first 64 KiB; the blocks
  // after it belong to a parameter that the kernel reading it back also reads.
  ProfileBuilder B("v100-pcie-16gb");
  uint64_t T = B.allocate(6 * MiB, 0, -1, ALLOCATION_ROLE_ACTIVATION);
  uint64_t W = B.allocate(2 * MiB, 0, -1, ALLOCATION_ROLE_PARAMETER);
  uint64_t X = B.allocate(64 << 10, 0, -1, ALLOCATION_ROLE_ACTIVATION);
  Profile P = threeIterations(B, [&] {
    B.kernel("produce", 1000000, {{T, ACCESS_MODE_WRITE, 0, 64 << 10}});
    // A temporary in the middle puts the peak there, inside the tensor's idle interval.
    uint64_t Y = B.allocate(2 * MiB, B.now());
    for (int I = 0; I < 3; ++I)
      B.kernel("middle", 1000000, {{X, ACCESS_MODE_READ_WRITE}, {Y, ACCESS_MODE_READ_WRITE}});
    B.profile().mutable_allocations(static_cast<int>(Y - 1))->set_freed(true);
    B.profile().mutable_allocations(static_cast<int>(Y - 1))->set_free_time_ns(B.now());
    B.kernel("last", 1000000, {{X, ACCESS_MODE_READ_WRITE}});
    B.kernel("consume", 1000000, {{T, ACCESS_MODE_READ, 0, 64 << 10}, {W, ACCESS_MODE_READ}});
  });
  ASSERT_FALSE(format::validateProfile(P));
  PlanResult R = compile(P, 4 * MiB, Strategy::Swap);
  const uint64_t BlockBytes = R.Plan.metadata().um_block_bytes();
  std::set<uint64_t> Touched;
  for (const BlockChain &C : R.Plan.block_chains())
    Touched.insert(C.blocks().begin(), C.blocks().end());
  ASSERT_FALSE(Touched.empty());
  for (const Action &A : R.Plan.actions())
    for (const ArenaRange &Rg : A.ranges())
      for (uint64_t Blk = Rg.offset() / BlockBytes;
           Blk <= (Rg.offset() + Rg.bytes() - 1) / BlockBytes; ++Blk)
        EXPECT_TRUE(Touched.count(Blk))
            << "action on arena block " << Blk << ", which no kernel uses";
}

TEST(PlannerHostile, AllocationIdsEqualToHashTableSentinels) {
  // 2^64-1 and 2^64-2 are llvm::DenseMap's empty and tombstone keys.
  Profile P = syntheticTraining();
  Profile Q = P;
  // Order-preserving (ids also order some ties): the last two get the sentinels.
  const uint64_t N = static_cast<uint64_t>(P.allocations_size());
  auto Remap = [N](uint64_t Id) { return UINT64_MAX - (N - Id); };
  for (Allocation &A : *Q.mutable_allocations())
    A.set_id(Remap(A.id()));
  for (Kernel &K : *Q.mutable_kernels())
    for (TensorAccess &T : *K.mutable_tensors())
      T.set_allocation_id(Remap(T.allocation_id()));
  ASSERT_FALSE(format::validateProfile(Q));
  for (Strategy S : kStrategies) {
    PlanResult X = compile(P, 40 * MiB, S), Y = compile(Q, 40 * MiB, S);
    EXPECT_EQ(X.Plan.layout().SerializeAsString(), Y.Plan.layout().SerializeAsString());
    ASSERT_EQ(X.Plan.actions_size(), Y.Plan.actions_size());
    for (int I = 0; I < X.Plan.actions_size(); ++I)
      EXPECT_EQ(X.Plan.actions(I).SerializeAsString(), Y.Plan.actions(I).SerializeAsString());
    ASSERT_EQ(X.Plan.block_chains_size(), Y.Plan.block_chains_size());
    for (int I = 0; I < X.Plan.block_chains_size(); ++I)
      EXPECT_EQ(X.Plan.block_chains(I).SerializeAsString(),
                Y.Plan.block_chains(I).SerializeAsString());
    // What the schedule predicts and counts (the demand strategy's whole output) too.
    EXPECT_EQ(X.Stats.PredictedIterationUs, Y.Stats.PredictedIterationUs);
    EXPECT_EQ(X.Stats.Prefetches, Y.Stats.Prefetches);
    EXPECT_EQ(X.Stats.DemandFetches, Y.Stats.DemandFetches);
  }
}

TEST(PlannerHostile, RooflineOfHugeOrInfiniteFlopsSaturates) {
  format::RooflineRates R{1e12, 1e12, 1e11, 0.5, 0.5, 5};
  Kernel K;
  K.set_name("aten::mm");
  K.set_flops(1e300);
  EXPECT_EQ(format::rooflineNs(K, R), format::kMaxRooflineNs);
  K.set_flops(std::numeric_limits<double>::infinity());
  EXPECT_EQ(format::rooflineNs(K, R), format::kMaxRooflineNs);
  K.set_flops(0);
  K.set_dram_bytes(1e300);
  EXPECT_EQ(format::rooflineNs(K, R), format::kMaxRooflineNs);
  K.set_dram_bytes(0);
  EXPECT_EQ(format::rooflineNs(K, R), 5000u); // the smallest kernel time
  K.set_flops(1e12);
  EXPECT_EQ(format::rooflineNs(K, R), 2000000000u);
  // Rates from a device-model file: tiny peaks give huge durations too.
  format::RooflineRates Tiny{1e-300, 1e-300, 1e-300, 0.5, 0.5, 0};
  EXPECT_EQ(format::rooflineNs(K, Tiny), format::kMaxRooflineNs);
  format::RooflineRates Infinite{1e12, 1e12, 1e11,
                                 0.5,  0.5,  std::numeric_limits<double>::infinity()};
  EXPECT_FALSE(Infinite.valid());
}

TEST(PlannerHostile, HugeFlopsAreRefusedOrSaturated) {
  Profile P = syntheticTraining();
  P.mutable_device()->set_name("some-other-gpu");
  for (Kernel &K : *P.mutable_kernels())
    K.set_flops(1e300);
  ASSERT_FALSE(format::validateProfile(P));
  // Planned for another device: durations come from the roofline.
  PlanResult R = compile(P, 40 * MiB);
  EXPECT_GT(R.Stats.ComputeUs, 0);
  Profile Bad = P;
  Bad.mutable_kernels(3)->set_flops(std::numeric_limits<double>::infinity());
  std::string E = errorText(format::validateProfile(Bad));
  EXPECT_NE(E.find("kernel 3"), std::string::npos) << E;
  EXPECT_NE(E.find("flops"), std::string::npos) << E;
  Bad.mutable_kernels(3)->set_flops(-1);
  EXPECT_NE(errorText(format::validateProfile(Bad)).find("flops"), std::string::npos);
  Bad.mutable_kernels(3)->set_flops(1);
  Bad.mutable_kernels(4)->set_dram_bytes(std::nan(""));
  EXPECT_NE(errorText(format::validateProfile(Bad)).find("dram_bytes"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(Models, PlannerShipped, ::testing::ValuesIn(shippedModels()), testNameOf);

} // namespace
