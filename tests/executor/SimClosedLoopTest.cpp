//===- SimClosedLoopTest.cpp - Executor + simulator = deepum-sim --policy plan ===//
//
// The executor's own code (cursor, releases before prefetches, budget) drives
// the simulator's engine through SimBackend: it is deepum-sim's plan policy,
// in the loop every policy runs in. Its results must respect the lower
// bounds, match every launch, lose no data, and land where the planner's own
// timed replay predicts.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/sim/SimBackend.h"

#include "ExecutorTestSupport.h"
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/format/Signature.h"
#include "deepum/sim/SimTool.h"
#include "deepum/sim/Simulator.h"
#ifdef DEEPUM_HAVE_PLANNER
#include "deepum/planner/Planner.h"
#endif

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "gtest/gtest.h"

#include <cmath>
#include <algorithm>
#include <fstream>
#include <string>
#include <tuple>

using namespace deepum::executor;
using deepum::test::kBlock;
namespace v1 = deepum::v1;

namespace {

#ifdef DEEPUM_HAVE_PLANNER
/// Half the profile's footprint, in whole UM blocks: the capacity these tests plan for.
uint64_t halfFootprint(const v1::Profile &P) {
  return deepum::sim::footprintBytes(P) / 2 / kBlock * kBlock;
}

/// deepum-plan's library on `P` for `Device` at half its footprint.
llvm::Expected<deepum::planner::PlanResult> planAtHalf(const v1::Profile &P,
                                                       const std::string &Device) {
  deepum::planner::PlanOptions PO;
  PO.DeviceModel = Device;
  PO.GpuMemoryBytes = halfFootprint(P);
  return deepum::planner::compilePlan(P, PO);
}
#endif

/// A profile whose steady iteration has `K` kernels of `DurNs` each.
v1::Profile timingProfile(uint32_t K, uint64_t DurNs) {
  deepum::test::ProfileBuilder PB("v100-pcie-16gb");
  uint64_t A = PB.allocate(2 * kBlock);
  for (int It = 0; It < 2; ++It)
    for (uint32_t I = 0; I < K; ++I)
      PB.kernel("k" + std::to_string(I), DurNs, {{A, v1::ACCESS_MODE_READ}});
  PB.iteration(K, K);
  return PB.build();
}

/// A layer-by-layer plan: position p touches weight block p and activation
/// blocks; weights are prefetched two positions ahead and evicted after use;
/// activations are discarded once dead. 24 blocks of data, 10 of capacity.
v1::Plan layeredPlan(uint32_t K, bool PrefetchActivations = false) {
  // The execution IDs of timingProfile's kernels: the simulator replays the
  // profile's kernels whose IDs are the plan's launch sequence.
  std::vector<uint64_t> Ids;
  for (uint32_t P = 0; P < K; ++P)
    Ids.push_back(deepum::format::executionId("k" + std::to_string(P), {1, 1, 1, 256, 1, 1, 0}));
  deepum::test::PlanBuilder PB(Ids, 24 * kBlock);
  PB.capacity(10 * kBlock);
  auto Weight = [&](uint32_t P) { return uint64_t(P % 12); };
  auto Act = [&](uint32_t P) { return uint64_t(12 + P % 12); };
  for (uint32_t P = 0; P < K; ++P) {
    PB.chain(P, {Weight(P), Act(P), Act(P + 1)});
    uint32_t Ahead = (P + 2) % K;
    PB.action(v1::ACTION_KIND_PREFETCH, P, Weight(Ahead) * kBlock, kBlock, Ahead);
    if (PrefetchActivations)
      PB.action(v1::ACTION_KIND_PREFETCH, P, Act(Ahead + 1) * kBlock, kBlock, Ahead);
    if (P >= 1) {
      PB.action(v1::ACTION_KIND_EVICT, P, Weight(P - 1) * kBlock, kBlock, P - 1);
      PB.action(v1::ACTION_KIND_DISCARD, P, Act(P - 1) * kBlock, kBlock, P - 1);
    }
  }
  return PB.proto();
}

/// The executor replays `Plan` on `Profile`; checks what holds for any sound
/// plan and returns the result.
deepum::sim::SimResult replayChecked(const v1::Profile &Profile, const v1::Plan &Plan,
                                     const char *What, const char *DeviceName = "v100-pcie-16gb",
                                     bool HostWaits = true) {
  SCOPED_TRACE(What);
  auto Device = deepum::sim::loadDeviceModel(DeviceName);
  EXPECT_TRUE(static_cast<bool>(Device)) << llvm::toString(Device.takeError());
  if (!Device)
    return {};
  deepum::sim::SimOptions O;
  O.Device = *Device;
  O.HostWaitsEachIteration = HostWaits;
  O.Iterations = 6;
  O.WarmupIterations = 2;
  O.CheckInvariants = true;
  deepum_stats_t Stats{};
  auto Mine = sim::replayPlan(Profile, Plan, O, &Stats);
  EXPECT_TRUE(static_cast<bool>(Mine)) << llvm::toString(Mine.takeError());
  if (!Mine)
    return {};
  EXPECT_EQ(Mine->PolicyName, "plan");
  EXPECT_GE(Mine->IterationUs, Mine->LowerBoundUs * (1 - 1e-9));
  EXPECT_EQ(Mine->LostReads, 0);
  EXPECT_EQ(Mine->InvariantViolations, 0u);
  EXPECT_EQ(Stats.backend_errors, 0u);
  // Every launch of the measured iterations was found in the plan.
  EXPECT_GE(Stats.launches_matched, uint64_t{O.Iterations} * Mine->KernelsPerIteration);
  GTEST_LOG_(INFO) << What << ": executor " << Mine->IterationUs << " us/iter (ideal "
                   << Mine->IdealUs << "), " << Mine->Faults << " faults";
  return *Mine;
}

TEST(SimClosedLoopTest, LayeredPlanFaultsOnlyOnWhatItDoesNotPrefetch) {
  // Activations are not prefetched: each position's second activation block
  // (written, then read by the next kernel) was discarded a position earlier
  // and is populated on demand, without a copy. Weights always arrive ahead.
  constexpr uint32_t K = 24;
  deepum::sim::SimResult R = replayChecked(timingProfile(K, 400'000), layeredPlan(K), "layered");
  EXPECT_GT(R.Faults, 0);
  // At most one weight block per position (less when it is still resident).
  EXPECT_GT(R.BytesPrefetched, 0);
  EXPECT_LE(R.BytesPrefetched, double(K) * kBlock);
}

TEST(SimClosedLoopTest, FaultFreePlanStaysFaultFree) {
  // Every block arrives two positions ahead and 2 MiB crosses the link in far
  // less than a 400 us kernel: no faults, and the iteration is compute alone
  // while the host stays ahead of the GPU. When it waits at each iteration's
  // end, the first position's calls (one prefetch call of two ranges) are
  // made after that wait, before the first launch.
  constexpr uint32_t K = 24;
  const v1::Profile Profile = timingProfile(K, 400'000);
  const v1::Plan Plan = layeredPlan(K, /*PrefetchActivations=*/true);
  deepum::sim::SimResult R = replayChecked(Profile, Plan, "fault-free", "v100-pcie-16gb", false);
  EXPECT_EQ(R.Faults, 0) << "demand faults where the plan promised none";
  EXPECT_NEAR(R.IterationUs, R.IdealUs, 1e-6 * R.IdealUs);
  deepum::sim::SimResult Waiting = replayChecked(Profile, Plan, "fault-free, host waits");
  EXPECT_EQ(Waiting.Faults, 0);
  EXPECT_NEAR(Waiting.IterationUs, R.IdealUs + 20 + 1, 1e-6 * R.IdealUs);
}

TEST(SimClosedLoopTest, RooflineDurationsOnAnotherDevice) {
  // A V100 profile simulated on an H100: both replays recompute the kernels'
  // durations with the H100's roofline (SimOptions::Durations, auto).
#ifndef DEEPUM_HAVE_PLANNER
  GTEST_SKIP() << "built without the planner library";
#else
  std::string ProfilePath = deepum::test::shippedProfilePath("resnet50");
  if (!std::ifstream(ProfilePath))
    FAIL() << ProfilePath << " is missing (regenerate with `make profiles`)";
  auto Profile = deepum::format::readProfile(ProfilePath);
  ASSERT_TRUE(static_cast<bool>(Profile)) << llvm::toString(Profile.takeError());
  auto H100 = deepum::sim::loadDeviceModel("h100-sxm");
  ASSERT_TRUE(static_cast<bool>(H100)) << llvm::toString(H100.takeError());
  bool Roofline = false;
  ASSERT_TRUE(static_cast<bool>(deepum::sim::kernelDurations(
      *Profile, *H100, deepum::sim::SimOptions::DurationSource::Auto, &Roofline)));
  ASSERT_TRUE(Roofline) << "test premise: the profile's durations are recomputed on an H100";
  auto Planned = planAtHalf(*Profile, "h100-sxm");
  ASSERT_TRUE(static_cast<bool>(Planned)) << llvm::toString(Planned.takeError());
  deepum::sim::SimResult R =
      replayChecked(*Profile, Planned->Plan, "resnet50 on h100-sxm", "h100-sxm");
  EXPECT_EQ(R.Durations, "roofline");
  EXPECT_EQ(R.Faults, 0);
#endif
}

TEST(SimClosedLoopTest, ShippedModels) {
  // Real models: the shipped profiles, planned by deepum-plan's library at
  // half their footprint, replayed by the executor.
#ifndef DEEPUM_HAVE_PLANNER
  GTEST_SKIP() << "built without the planner library";
#else
  int Seen = 0;
  for (const std::string &Model : deepum::test::shippedModels()) {
    std::string ProfilePath = deepum::test::shippedProfilePath(Model);
    if (!std::ifstream(ProfilePath))
      continue;
    auto Profile = deepum::format::readProfile(ProfilePath);
    ASSERT_TRUE(static_cast<bool>(Profile)) << llvm::toString(Profile.takeError());
    auto Planned = planAtHalf(*Profile, "v100-pcie-16gb");
    ASSERT_TRUE(static_cast<bool>(Planned)) << Model << ": " << llvm::toString(Planned.takeError());
    EXPECT_EQ(replayChecked(*Profile, Planned->Plan, Model.c_str()).Faults, 0) << Model;
    // libdeepum's own wire decoder reads the real plan as protobuf does.
    std::string Bytes, Error;
    ASSERT_TRUE(Planned->Plan.SerializeToString(&Bytes));
    RawPlan Raw;
    CompiledPlan Mine, Theirs;
    ASSERT_TRUE(decodePlan(Bytes, Raw, Error) && compileRawPlan(Raw, Model, Mine, Error)) << Error;
    ASSERT_TRUE(deepum::executor::compilePlan(Planned->Plan, Model, Theirs, Error)) << Error;
    EXPECT_EQ(Mine.PositionIds, Theirs.PositionIds);
    EXPECT_EQ(Mine.IdPositions, Theirs.IdPositions);
    EXPECT_EQ(Mine.ContextPositions, Theirs.ContextPositions);
    EXPECT_EQ(Mine.PositionBlocks, Theirs.PositionBlocks);
    EXPECT_EQ(Mine.ArenaBytes, Theirs.ArenaBytes);
    EXPECT_EQ(Mine.Placements.size(), Theirs.Placements.size());
    size_t MineActions = 0, TheirActions = 0;
    for (size_t Q = 0; Q < Mine.positions(); ++Q) {
      MineActions +=
          Mine.BeforeLaunch[Q].size() + Mine.ReleaseBefore[Q].size() + Mine.AfterLaunch[Q].size();
      TheirActions += Theirs.BeforeLaunch[Q].size() + Theirs.ReleaseBefore[Q].size() +
                      Theirs.AfterLaunch[Q].size();
    }
    EXPECT_EQ(MineActions, TheirActions);
    EXPECT_GT(Mine.ContextLength, 0u);
    ++Seen;
  }
  if (!Seen)
    FAIL() << "no shipped profiles in tests/data";
#endif
}

TEST(SimClosedLoopTest, DemandPlanIsTheFaultBaselineAPrefetchPlanRemoves) {
  // A demand plan (no actions: the executor's budget evicts by Belady's MIN)
  // at half the footprint faults on every block it lacks, within the budget;
  // the prefetch plan at the same budget leaves none of those faults. The
  // GPU runs (bench/gpu/run.sh) hold the same pair against each other.
#ifndef DEEPUM_HAVE_PLANNER
  GTEST_SKIP() << "built without the planner library";
#else
  int Seen = 0;
  for (const std::string &Model : {std::string("resnet50"), std::string("gpt2-medium")}) {
    std::string ProfilePath = deepum::test::shippedProfilePath(Model);
    if (!std::ifstream(ProfilePath))
      continue;
    auto Profile = deepum::format::readProfile(ProfilePath);
    ASSERT_TRUE(static_cast<bool>(Profile)) << llvm::toString(Profile.takeError());
    deepum::planner::PlanOptions PO;
    PO.DeviceModel = "h100-sxm";
    PO.GpuMemoryBytes = halfFootprint(*Profile);
    PO.Strat = deepum::planner::Strategy::Demand;
    auto Demand = deepum::planner::compilePlan(*Profile, PO);
    ASSERT_TRUE(static_cast<bool>(Demand)) << Model << ": " << llvm::toString(Demand.takeError());
    EXPECT_GT(Demand->Stats.DemandFetches, 0u);
    PO.Strat = deepum::planner::Strategy::Prefetch;
    auto Prefetch = deepum::planner::compilePlan(*Profile, PO);
    ASSERT_TRUE(static_cast<bool>(Prefetch)) << Model << ": " << llvm::toString(Prefetch.takeError());
    deepum::sim::SimResult D = replayChecked(*Profile, Demand->Plan, (Model + " demand").c_str(),
                                             "h100-sxm");
    deepum::sim::SimResult F = replayChecked(*Profile, Prefetch->Plan,
                                             (Model + " prefetch").c_str(), "h100-sxm");
    EXPECT_GT(D.Faults, 0) << Model;
    EXPECT_EQ(D.BytesPrefetched, 0) << Model << ": a demand plan prefetches nothing to the GPU";
    EXPECT_LE(D.PeakResidentBytes, PO.GpuMemoryBytes) << Model;
    EXPECT_EQ(F.Faults, 0) << Model;
    EXPECT_GT(D.IterationUs, F.IterationUs) << Model;
    ++Seen;
  }
  if (!Seen)
    FAIL() << "no shipped profiles in tests/data";
#endif
}

#ifdef DEEPUM_HAVE_PLANNER
/// deepum-sim's tool logic (runSim) with --json, the plan policy as
/// tools/deepum-sim.cpp injects it.
llvm::json::Array runSimJson(const std::string &Profile, const std::string &Plan,
                             uint64_t GpuMemoryBytes, bool Compare) {
  deepum::sim::SimToolOptions O;
  O.ProfilePath = Profile;
  O.PlanPath = Plan;
  O.Policy = "plan";
  O.PlanPolicy = sim::executorPlanPolicy;
  O.GpuMemory = std::to_string(GpuMemoryBytes); // every row at the plan's capacity
  O.Iterations = 4;
  O.Warmup = 2;
  O.Json = true;
  O.Compare = Compare;
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  llvm::Error E = deepum::sim::runSim(O, OS);
  EXPECT_FALSE(static_cast<bool>(E)) << llvm::toString(std::move(E));
  llvm::Expected<llvm::json::Value> V = llvm::json::parse(OS.str());
  if (!V) {
    ADD_FAILURE() << llvm::toString(V.takeError()) << "\n" << Out;
    return {};
  }
  if (llvm::json::Array *A = V->getAsArray())
    return std::move(*A);
  return llvm::json::Array{std::move(*V)};
}
#endif

TEST(SimClosedLoopTest, DeepumSimToolRunsTheExecutor) {
  // deepum-sim --policy plan on a shipped profile with a plan from the
  // planner's library is the executor's replay; --compare's plan row is the
  // same run, judged against the same bounds as the baselines.
#ifndef DEEPUM_HAVE_PLANNER
  GTEST_SKIP() << "built without the planner library";
#else
  std::string ProfilePath = deepum::test::shippedProfilePath("resnet50");
  if (!std::ifstream(ProfilePath))
    FAIL() << ProfilePath << " is missing (regenerate with `make profiles`)";
  auto Profile = deepum::format::readProfile(ProfilePath);
  ASSERT_TRUE(static_cast<bool>(Profile)) << llvm::toString(Profile.takeError());
  auto Planned = planAtHalf(*Profile, "v100-pcie-16gb");
  ASSERT_TRUE(static_cast<bool>(Planned)) << llvm::toString(Planned.takeError());
  std::string PlanPath = deepum::test::scratchDir("sim-tool-executor-replay") + "/resnet50.plan.pb";
  ASSERT_FALSE(static_cast<bool>(deepum::format::writePlan(Planned->Plan, PlanPath)));
  const uint64_t Capacity = halfFootprint(*Profile);

  llvm::json::Array One = runSimJson(ProfilePath, PlanPath, Capacity, /*Compare=*/false);
  llvm::json::Array All = runSimJson(ProfilePath, PlanPath, Capacity, /*Compare=*/true);
  ASSERT_EQ(One.size(), 1u);
  const llvm::json::Object &Exec = *One[0].getAsObject();
  auto Num = [](const llvm::json::Object &O, llvm::StringRef K) {
    return O.getNumber(K).getValueOr(-1);
  };
  auto Row = [&](llvm::StringRef Policy) -> const llvm::json::Object * {
    for (const llvm::json::Value &R : All)
      if (R.getAsObject()->getString("policy") == Policy)
        return R.getAsObject();
    ADD_FAILURE() << "no " << Policy.str() << " row in --compare";
    return nullptr;
  };
  const llvm::json::Object *Plan = Row("plan"), *Um = Row("um");
  ASSERT_TRUE(Plan && Um);
  EXPECT_EQ(Exec.get("plan_replay"), nullptr);

  // The library's replay and the tool's are one run.
  deepum::sim::SimOptions O;
  O.Device = *deepum::sim::loadDeviceModel("v100-pcie-16gb");
  O.Iterations = 4;
  O.WarmupIterations = 2;
  O.PlanName = PlanPath;
  O.GpuMemoryBytes = Capacity;
  auto Lib = sim::replayPlan(*Profile, Planned->Plan, O);
  ASSERT_TRUE(static_cast<bool>(Lib)) << llvm::toString(Lib.takeError());
  const double ExecUs = Num(Exec, "iteration_us");
  EXPECT_EQ(ExecUs, Lib->IterationUs);
  EXPECT_EQ(Num(Exec, "faults"), Lib->Faults);
  EXPECT_EQ(Num(*Plan, "iteration_us"), ExecUs);
  // Ideal and bounds: the profile's, as every baseline's (the footprint is
  // the plan's arena blocks, packed tighter than the profile's UM blocks).
  for (llvm::StringRef K : {"ideal_us", "bound_us", "cut_bound_us", "gpu_memory_bytes"})
    EXPECT_EQ(Num(Exec, K), Num(*Um, K)) << K.str();
  EXPECT_NEAR(Num(Exec, "slowdown"), ExecUs / Num(Exec, "ideal_us"), 1e-9);
  EXPECT_LT(ExecUs, Num(*Um, "iteration_us"));
  EXPECT_EQ(Num(Exec, "lost_reads"), 0);
#endif
}

#ifdef DEEPUM_HAVE_PLANNER
TEST(SimClosedLoopTest, PlanTimelineIsTheExecutorReplays) {
  // deepum-sim --policy plan --perfetto: the timeline of the executor's
  // replay, with an iteration slice per simulated iteration, the plan's
  // discards and the resident-MiB counter.
#ifndef DEEPUM_HAVE_PLANNER
  GTEST_SKIP() << "built without the planner library";
#else
  std::string ProfilePath = deepum::test::shippedProfilePath("resnet50");
  auto Profile = deepum::format::readProfile(ProfilePath);
  ASSERT_TRUE(static_cast<bool>(Profile)) << llvm::toString(Profile.takeError());
  auto Planned = planAtHalf(*Profile, "v100-pcie-16gb");
  ASSERT_TRUE(static_cast<bool>(Planned)) << llvm::toString(Planned.takeError());
  std::string Dir = deepum::test::scratchDir("sim-tool-plan-timeline");
  std::string PlanPath = Dir + "/resnet50.plan.pb";
  ASSERT_FALSE(static_cast<bool>(deepum::format::writePlan(Planned->Plan, PlanPath)));

  deepum::sim::SimToolOptions O;
  O.ProfilePath = ProfilePath;
  O.PlanPath = PlanPath;
  O.Policy = "plan";
  O.PlanPolicy = sim::executorPlanPolicy;
  O.Iterations = 2;
  O.Warmup = 1;
  O.PerfettoOut = Dir + "/plan.json";
  llvm::Error E = deepum::sim::runSim(O, llvm::nulls());
  ASSERT_FALSE(static_cast<bool>(E)) << llvm::toString(std::move(E));
  auto Buf = llvm::MemoryBuffer::getFile(O.PerfettoOut);
  ASSERT_TRUE(static_cast<bool>(Buf));
  llvm::Expected<llvm::json::Value> V = llvm::json::parse((*Buf)->getBuffer());
  ASSERT_TRUE(static_cast<bool>(V)) << llvm::toString(V.takeError());
  int Iterations = 0, Discards = 0, Compute = 0, Resident = 0;
  std::string Process;
  for (const llvm::json::Value &Ev : *V->getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object *Obj = Ev.getAsObject();
    llvm::StringRef Name = *Obj->getString("name");
    if (Name == "process_name")
      Process = Obj->getObject("args")->getString("name")->str();
    Iterations += Obj->getString("cat") == llvm::StringRef("iteration");
    Discards += Name == "discard";
    Compute += Obj->getString("cat") == llvm::StringRef("compute");
    Resident += Name == "GPU memory" && Obj->getObject("args")->getNumber("resident (MiB)");
  }
  EXPECT_NE(Process.find("plan"), std::string::npos) << Process;
  EXPECT_EQ(Iterations, 3);
  EXPECT_GT(Discards, 0);
  EXPECT_EQ(Compute, Planned->Plan.position_ids_size()); // the last iteration, in detail
  EXPECT_GT(Resident, 0);
#endif
}

/// One device model, with or without the copy path: six tests, so that a
/// parallel ctest spreads the 48 plans and replays (the longest test under
/// the sanitizers when it was one).
class PlannersPrediction : public ::testing::TestWithParam<std::tuple<std::string, bool>> {};

TEST_P(PlannersPrediction, ExecutorMatchesIt) {
  // The planner predicts each plan's iteration time with its own timed replay
  // (metadata.predicted_iteration_us); the executor's code driving the
  // simulator, whose streams and events order its transfers as CUDA's do,
  // must land within 1% of it, with no demand faults, for every shipped model
  // at 2x oversubscription on the three device models. Two things had kept them
  // 1.4-3.8% apart once the simulator ordered streams: the planner fetched a
  // block back before its own write-back had reached the host (vgg16 on
  // v100-pcie-16gb, a 46 ms stall), and a prefetch waited for a whole
  // position's evictions where it needed the room of a few (resnet50).
  // Plans with the copy path (COPY_OUT, COPY_IN) are held to the same 1%: they
  // were 9% apart (gpt2-medium on h100-pcie) while the executor released the
  // room of a position's copy-outs only when the last copy of the batch had
  // ended; in slices (format::kCopyOutSliceBlocks) the room frees as the
  // planner predicts. On h100-sxm bart-large's copy plan (1.2%) and vgg16's
  // Unified Memory plan (1.1%) stayed apart while a long prefetch range
  // waited for all of its room at once; in pieces
  // (format::kPrefetchRoomBlocks) each waits only for its own.
  const auto [Device, CopyPath] = GetParam();
  for (const std::string &Model : deepum::test::shippedModels()) {
    SCOPED_TRACE(Model + " on " + Device + (CopyPath ? " (copy path)" : ""));
    auto Profile = deepum::format::readProfile(deepum::test::shippedProfilePath(Model));
    ASSERT_TRUE(static_cast<bool>(Profile)) << llvm::toString(Profile.takeError());
    deepum::sim::SimOptions O;
    auto D = deepum::sim::loadDeviceModel(Device);
    ASSERT_TRUE(static_cast<bool>(D)) << llvm::toString(D.takeError());
    O.Device = *D;
    O.GpuMemoryBytes = deepum::sim::footprintBytes(*Profile) / 2;
    O.Iterations = 3;
    deepum::planner::PlanOptions PO;
    PO.DeviceModel = Device;
    PO.GpuMemoryBytes = O.GpuMemoryBytes;
    PO.CopyPath = CopyPath;
    auto Planned = deepum::planner::compilePlan(*Profile, PO);
    ASSERT_TRUE(static_cast<bool>(Planned)) << llvm::toString(Planned.takeError());
    double Predicted = Planned->Plan.metadata().predicted_iteration_us();
    ASSERT_GT(Predicted, 0);
    deepum_stats_t Stats{};
    auto Replayed = sim::replayPlan(*Profile, Planned->Plan, O, &Stats);
    ASSERT_TRUE(static_cast<bool>(Replayed)) << llvm::toString(Replayed.takeError());
    const bool Copies = Planned->Plan.metadata().copy_pool_bytes() > 0;
    // Every copy-out the plan asks for finds its slot free: the planner's
    // slots hold at run time (a slot it handed out twice at once would
    // send blocks through Unified Memory instead).
    EXPECT_EQ(Stats.copy_fallback_bytes, 0u);
    EXPECT_EQ(Stats.copy_out_bytes > 0, Copies);
    EXPECT_NEAR(Replayed->IterationUs, Predicted, 0.01 * Predicted);
    EXPECT_EQ(Copies, CopyPath && Planned->Stats.CopyOuts > 0);
    EXPECT_EQ(Replayed->Faults, 0);
    EXPECT_EQ(Replayed->LostReads, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    SimClosedLoopTest, PlannersPrediction,
    ::testing::Combine(::testing::Values(std::string("v100-pcie-16gb"), std::string("h100-pcie"),
                                         std::string("h100-sxm")),
                       ::testing::Bool()),
    [](const ::testing::TestParamInfo<std::tuple<std::string, bool>> &I) {
      std::string Name = std::get<0>(I.param);
      std::replace(Name.begin(), Name.end(), '-', '_');
      return Name + (std::get<1>(I.param) ? "_copy_path" : "_uvm");
    });
#endif

} // namespace

namespace {

TEST(SimBackendStreams, APrefetchWaitingForAnEvictionsEventStartsWhenItsWriteBackEnds) {
  // The executor's ordering as deepum-sim replays it: an event recorded on the
  // release stream after an eviction stands for its write-back; the prefetch
  // stream waits for it, so its copy starts when the write-back ends, not when
  // issued. A stream that does not wait starts at once, and the host sees the
  // event pending until its time comes.
  auto Device = deepum::sim::loadDeviceModel("v100-pcie-16gb");
  ASSERT_TRUE(static_cast<bool>(Device)) << llvm::toString(Device.takeError());
  Device->TransferCallUs = 0;
  Device->TransferRangeUs = 0;
  const uint64_t CopyNs = static_cast<uint64_t>(kBlock * 1e9 / Device->LinkBytesPerSecond);
  for (bool Wait : {true, false}) {
    SCOPED_TRACE(Wait ? "waiting" : "not waiting");
    deepum::sim::Engine E(*Device, 8 * kBlock);
    sim::SimBackend B(E);
    void *Base = nullptr;
    ASSERT_TRUE(B.allocateManaged(0, 4 * kBlock, &Base).ok());
    const uint64_t A = reinterpret_cast<uintptr_t>(Base);
    StreamHandle Release = 0, Action = 0;
    EventHandle Ev = 0;
    ASSERT_TRUE(B.createStream(0, &Release).ok());
    ASSERT_TRUE(B.createStream(0, &Action).ok());
    ASSERT_TRUE(B.createEvent(0, &Ev).ok());
    MemRange First{A, kBlock}, Second{A + kBlock, kBlock};
    ASSERT_TRUE(B.prefetchBatch(0, {&First, 1}, 0, Action).ok()); // block 0 on the GPU
    const uint64_t Resident = E.copyEndNs(/*ToDevice=*/true); // one block's copy
    EXPECT_NEAR(static_cast<double>(Resident), static_cast<double>(CopyNs), 1);
    ASSERT_TRUE(B.prefetchBatch(0, {&First, 1}, kHostLocation, Release).ok()); // written back
    const uint64_t WrittenBack = E.copyEndNs(/*ToDevice=*/false);
    EXPECT_GT(WrittenBack, Resident);
    ASSERT_TRUE(B.recordEvent(0, Ev, Release).ok());
    EXPECT_EQ(B.queryEvent(0, Ev), EventState::Pending);
    if (Wait) {
      ASSERT_TRUE(B.streamWaitEvent(0, Action, Ev).ok());
    }
    ASSERT_TRUE(B.prefetchBatch(0, {&Second, 1}, 0, Action).ok());
    // FIFO on the host-to-device engine: after block 0's copy, or after the write-back.
    EXPECT_EQ(E.copyEndNs(/*ToDevice=*/true), (Wait ? WrittenBack : Resident) + Resident);
    // Complete for the host once its clock reaches the write-back's end.
    E.hostWaitUntil(WrittenBack - 1);
    EXPECT_EQ(B.queryEvent(0, Ev), EventState::Pending);
    E.hostWaitUntil(WrittenBack);
    EXPECT_EQ(B.queryEvent(0, Ev), EventState::Complete);
  }
}

} // namespace
