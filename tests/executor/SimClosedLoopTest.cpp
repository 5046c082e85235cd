//===- SimClosedLoopTest.cpp - Executor + simulator = deepum-sim --policy plan ===//
//
// The executor's own code (cursor, releases before prefetches, budget) drives
// the simulator's engine through SimBackend; deepum-sim replays the same plan
// itself. Steady-state results must agree within 2%, with no demand faults
// where the simulator's replay has none.
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
#include <fstream>

using namespace deepum::executor;
using deepum::test::kBlock;
namespace v1 = deepum::v1;

namespace {

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

void compare(const v1::Profile &Profile, const v1::Plan &Plan, const char *What,
             const char *DeviceName = "v100-pcie-16gb") {
  auto Device = deepum::sim::loadDeviceModel(DeviceName);
  ASSERT_TRUE(static_cast<bool>(Device)) << llvm::toString(Device.takeError());
  deepum::sim::SimOptions O;
  O.Device = *Device;
  O.Pol = deepum::sim::Policy::Plan;
  O.Plan = &Plan;
  O.Iterations = 6;
  O.WarmupIterations = 2;
  auto Theirs = deepum::sim::simulate(Profile, O);
  ASSERT_TRUE(static_cast<bool>(Theirs)) << llvm::toString(Theirs.takeError());
  auto Mine = sim::replayPlan(Profile, Plan, O);
  ASSERT_TRUE(static_cast<bool>(Mine)) << llvm::toString(Mine.takeError());
  SCOPED_TRACE(What);
  EXPECT_NEAR(Mine->IterationUs, Theirs->IterationUs, 0.02 * Theirs->IterationUs)
      << "executor " << Mine->IterationUs << " us, deepum-sim " << Theirs->IterationUs << " us";
  if (Theirs->Faults == 0)
    EXPECT_EQ(Mine->Faults, 0) << "demand faults where the plan promised none";
  else
    EXPECT_NEAR(Mine->Faults, Theirs->Faults, 0.02 * Theirs->Faults + 1);
  EXPECT_EQ(Mine->LostReads, 0);
  EXPECT_EQ(Mine->BackendErrors, 0u);
  EXPECT_GT(Mine->LaunchesMatched, 0u);
  GTEST_LOG_(INFO) << What << ": executor " << Mine->IterationUs << " us/iter, " << Mine->Faults
                   << " faults; deepum-sim " << Theirs->IterationUs << " us/iter, "
                   << Theirs->Faults << " faults";
}

TEST(SimClosedLoopTest, LayeredPlanMatchesTheSimulatorsReplay) {
  constexpr uint32_t K = 24;
  compare(timingProfile(K, 400'000), layeredPlan(K), "layered");
}

TEST(SimClosedLoopTest, FaultFreePlanStaysFaultFree) {
  constexpr uint32_t K = 24;
  v1::Profile Profile = timingProfile(K, 400'000);
  v1::Plan Plan = layeredPlan(K, /*PrefetchActivations=*/true);
  // The premise: deepum-sim's own replay of this plan has no demand faults.
  auto Device = deepum::sim::loadDeviceModel("v100-pcie-16gb");
  ASSERT_TRUE(static_cast<bool>(Device)) << llvm::toString(Device.takeError());
  deepum::sim::SimOptions O;
  O.Device = *Device;
  O.Pol = deepum::sim::Policy::Plan;
  O.Plan = &Plan;
  auto Theirs = deepum::sim::simulate(Profile, O);
  ASSERT_TRUE(static_cast<bool>(Theirs)) << llvm::toString(Theirs.takeError());
  ASSERT_EQ(Theirs->Faults, 0) << "test premise: the plan should be fault-free";
  compare(Profile, Plan, "fault-free layered");
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
  deepum::planner::PlanOptions PO;
  PO.DeviceModel = "h100-sxm";
  PO.GpuMemoryBytes = deepum::sim::footprintBytes(*Profile) / 2 / kBlock * kBlock;
  auto Planned = deepum::planner::compilePlan(*Profile, PO);
  ASSERT_TRUE(static_cast<bool>(Planned)) << llvm::toString(Planned.takeError());
  compare(*Profile, Planned->Plan, "resnet50 on h100-sxm", "h100-sxm");
#endif
}

TEST(SimClosedLoopTest, ShippedModels) {
  // Real models: the shipped profiles, planned by deepum-plan's library at
  // half their footprint, replayed both ways.
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
    deepum::planner::PlanOptions PO;
    PO.DeviceModel = "v100-pcie-16gb";
    PO.GpuMemoryBytes = deepum::sim::footprintBytes(*Profile) / 2 / kBlock * kBlock;
    auto Planned = deepum::planner::compilePlan(*Profile, PO);
    ASSERT_TRUE(static_cast<bool>(Planned)) << Model << ": " << llvm::toString(Planned.takeError());
    compare(*Profile, Planned->Plan, Model.c_str());
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

#ifdef DEEPUM_HAVE_PLANNER
/// deepum-sim's tool logic (runSim) with --json and the given replay.
llvm::json::Object runSimJson(const std::string &Profile, const std::string &Plan,
                              const std::string &Replay, bool Compare = false) {
  deepum::sim::SimToolOptions O;
  O.ProfilePath = Profile;
  O.PlanPath = Plan;
  O.Policy = "plan";
  O.PlanReplay = Replay;
  O.ExecutorReplay = sim::replayPlanInto; // as tools/deepum-sim.cpp sets it
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
  if (Compare) { // the plan's row
    for (llvm::json::Value &Row : *V->getAsArray())
      if (Row.getAsObject()->getString("policy") == llvm::StringRef("plan"))
        return std::move(*Row.getAsObject());
    ADD_FAILURE() << "no plan row in --compare\n" << Out;
    return {};
  }
  return std::move(*V->getAsObject());
}
#endif

TEST(SimClosedLoopTest, DeepumSimToolRunsTheExecutorReplay) {
  // deepum-sim --policy plan on a shipped profile with a plan from the
  // planner's library: --plan-replay executor (the default) and native agree,
  // and the JSON says which one ran.
#ifndef DEEPUM_HAVE_PLANNER
  GTEST_SKIP() << "built without the planner library";
#else
  std::string ProfilePath = deepum::test::shippedProfilePath("resnet50");
  if (!std::ifstream(ProfilePath))
    FAIL() << ProfilePath << " is missing (regenerate with `make profiles`)";
  auto Profile = deepum::format::readProfile(ProfilePath);
  ASSERT_TRUE(static_cast<bool>(Profile)) << llvm::toString(Profile.takeError());
  deepum::planner::PlanOptions PO;
  PO.DeviceModel = "v100-pcie-16gb";
  PO.GpuMemoryBytes = deepum::sim::footprintBytes(*Profile) / 2 / kBlock * kBlock;
  auto Planned = deepum::planner::compilePlan(*Profile, PO);
  ASSERT_TRUE(static_cast<bool>(Planned)) << llvm::toString(Planned.takeError());
  std::string PlanPath = deepum::test::scratchDir("sim-tool-executor-replay") + "/resnet50.plan.pb";
  ASSERT_FALSE(static_cast<bool>(deepum::format::writePlan(Planned->Plan, PlanPath)));

  llvm::json::Object Exec = runSimJson(ProfilePath, PlanPath, "executor");
  llvm::json::Object Native = runSimJson(ProfilePath, PlanPath, "native");
  llvm::json::Object Auto = runSimJson(ProfilePath, PlanPath, "auto");
  EXPECT_EQ(Exec.getString("plan_replay"), llvm::StringRef("executor"));
  EXPECT_EQ(Native.getString("plan_replay"), llvm::StringRef("native"));
  EXPECT_EQ(Auto.getString("plan_replay"), llvm::StringRef("executor"));
  auto Num = [](const llvm::json::Object &O, llvm::StringRef K) {
    return O.getNumber(K).getValueOr(-1);
  };
  const double ExecUs = Num(Exec, "iteration_us"), NativeUs = Num(Native, "iteration_us");
  ASSERT_GT(NativeUs, 0);
  EXPECT_NEAR(ExecUs, NativeUs, 0.02 * NativeUs);
  // Measured by the executor replay, each within 2% of the native replay's.
  for (llvm::StringRef K : {"bytes_htod", "bytes_dtoh", "bytes_prefetched"})
    EXPECT_NEAR(Num(Exec, K), Num(Native, K), 0.02 * Num(Native, K) + 1) << K.str();
  EXPECT_NEAR(Num(Exec, "faults"), Num(Native, "faults"), 0.02 * Num(Native, "faults") + 1);
  EXPECT_EQ(Num(Exec, "lost_reads"), 0);
  // Not measured by the executor: the native computation's, identical.
  for (llvm::StringRef K : {"ideal_us", "bound_us", "footprint_bytes", "gpu_memory_bytes"})
    EXPECT_EQ(Num(Exec, K), Num(Native, K)) << K.str();
  EXPECT_NEAR(Num(Exec, "slowdown"), ExecUs / Num(Exec, "ideal_us"), 1e-9);
  // --compare's plan row comes from the same replay.
  llvm::json::Object Row = runSimJson(ProfilePath, PlanPath, "executor", /*Compare=*/true);
  EXPECT_EQ(Row.getString("plan_replay"), llvm::StringRef("executor"));
  EXPECT_EQ(Num(Row, "iteration_us"), ExecUs);
  GTEST_LOG_(INFO) << "resnet50 at half its footprint: deepum-sim executor replay " << ExecUs
                   << " us/iter, " << Num(Exec, "faults") << " faults; native " << NativeUs
                   << " us/iter, " << Num(Native, "faults") << " faults ("
                   << (ExecUs / NativeUs - 1) * 100 << "%)";
#endif
}

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
  deepum::planner::PlanOptions PO;
  PO.DeviceModel = "v100-pcie-16gb";
  PO.GpuMemoryBytes = deepum::sim::footprintBytes(*Profile) / 2 / kBlock * kBlock;
  auto Planned = deepum::planner::compilePlan(*Profile, PO);
  ASSERT_TRUE(static_cast<bool>(Planned)) << llvm::toString(Planned.takeError());
  std::string Dir = deepum::test::scratchDir("sim-tool-plan-timeline");
  std::string PlanPath = Dir + "/resnet50.plan.pb";
  ASSERT_FALSE(static_cast<bool>(deepum::format::writePlan(Planned->Plan, PlanPath)));

  deepum::sim::SimToolOptions O;
  O.ProfilePath = ProfilePath;
  O.PlanPath = PlanPath;
  O.Policy = "plan";
  O.PlanReplay = "executor";
  O.ExecutorReplay = sim::replayPlanInto;
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
  EXPECT_NE(Process.find("executor replay"), std::string::npos) << Process;
  EXPECT_EQ(Iterations, 3);
  EXPECT_GT(Discards, 0);
  EXPECT_EQ(Compute, Planned->Plan.position_ids_size()); // the last iteration, in detail
  EXPECT_GT(Resident, 0);
#endif
}

TEST(SimClosedLoopTest, ExecutorReplayMustBeLinkedIn) {
  deepum::sim::SimToolOptions O;
  O.ProfilePath = deepum::test::shippedProfilePath("resnet50");
  O.PlanReplay = "executor"; // and no ExecutorReplay
  llvm::Error E = deepum::sim::runSim(O, llvm::nulls());
  ASSERT_TRUE(static_cast<bool>(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("no executor replay"), std::string::npos);
  O.PlanReplay = "sideways";
  O.ExecutorReplay = sim::replayPlanInto;
  E = deepum::sim::runSim(O, llvm::nulls());
  ASSERT_TRUE(static_cast<bool>(E));
  EXPECT_NE(llvm::toString(std::move(E)).find("--plan-replay must be"), std::string::npos);
}

#ifdef DEEPUM_HAVE_PLANNER
TEST(SimClosedLoopTest, ExecutorMatchesThePlannersPrediction) {
  // The planner predicts each plan's iteration time with its own timed replay
  // (metadata.predicted_iteration_us); the executor's code driving the
  // simulator must land within 2% of it, with no demand faults, for every
  // shipped model at 2x oversubscription on both device models.
  for (const char *Device : {"v100-pcie-16gb", "h100-pcie"}) {
    for (const std::string &Model : deepum::test::shippedModels()) {
      SCOPED_TRACE(Model + " on " + Device);
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
      auto Planned = deepum::planner::compilePlan(*Profile, PO);
      ASSERT_TRUE(static_cast<bool>(Planned)) << llvm::toString(Planned.takeError());
      double Predicted = Planned->Plan.metadata().predicted_iteration_us();
      ASSERT_GT(Predicted, 0);
      auto Replayed = sim::replayPlan(*Profile, Planned->Plan, O);
      ASSERT_TRUE(static_cast<bool>(Replayed)) << llvm::toString(Replayed.takeError());
      EXPECT_NEAR(Replayed->IterationUs, Predicted, 0.02 * Predicted);
      EXPECT_EQ(Replayed->Faults, 0);
      EXPECT_EQ(Replayed->LostReads, 0);
    }
  }
}
#endif

} // namespace
