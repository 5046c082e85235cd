//===- SimToolTest.cpp - deepum-sim's options, outputs and errors -----------===//
#include "SimTestSupport.h"
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/sim/SimTool.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <limits>

using namespace deepum;
using namespace deepum::sim;
using namespace deepum::test;

namespace {
std::string writeTinyProfile(const std::string &Dir) {
  ProfileBuilder B("v100-pcie-16gb");
  uint64_t A = B.allocate(8 * MiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t C = B.allocate(8 * MiB, 0, -1, v1::ALLOCATION_ROLE_ACTIVATION);
  B.kernel("k0", 1'000'000, {{A, v1::ACCESS_MODE_READ}});
  B.kernel("k1", 1'000'000, {{C, v1::ACCESS_MODE_WRITE}});
  B.kernel("k2", 1'000'000, {{C, v1::ACCESS_MODE_READ}});
  B.iteration(0, 3);
  std::string Path = Dir + "/tiny.profile.pb";
  EXPECT_FALSE(format::writeProfile(B.build(), Path));
  return Path;
}
} // namespace

TEST(SimTool, CompareJsonHasEveryPolicyAndATimeline) {
  std::string Dir = scratchDir("SimTool.Compare");
  SimToolOptions O;
  O.ProfilePath = writeTinyProfile(Dir);
  O.GpuMemory = "12MiB";
  O.Compare = true;
  O.Json = true;
  O.Check = true;
  O.PerfettoOut = Dir + "/trace.json";
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  if (llvm::Error E = runSim(O, OS))
    FAIL() << llvm::toString(std::move(E));
  OS.flush();
  llvm::Expected<llvm::json::Value> V = llvm::json::parse(Out);
  ASSERT_TRUE(bool(V)) << llvm::toString(V.takeError());
  const llvm::json::Array *A = V->getAsArray();
  ASSERT_TRUE(A);
  std::vector<std::string> Names;
  for (const llvm::json::Value &R : *A)
    Names.push_back(R.getAsObject()->getString("policy")->str());
  EXPECT_EQ(Names, (std::vector<std::string>{"um", "deepum", "swap-layer", "swap-opt", "ideal"}));
  // One timeline per policy, named after it; none at the name given.
  EXPECT_FALSE(llvm::sys::fs::exists(O.PerfettoOut));
  for (const std::string &N : Names) {
    std::string Path = Dir + "/trace." + N + ".json";
    auto Buf = llvm::MemoryBuffer::getFile(Path);
    ASSERT_TRUE(bool(Buf)) << Path;
    llvm::Expected<llvm::json::Value> T = llvm::json::parse((*Buf)->getBuffer());
    ASSERT_TRUE(bool(T)) << Path << ": " << llvm::toString(T.takeError());
    // The process is named after the policy it shows.
    bool Named = false;
    for (const llvm::json::Value &E : *T->getAsObject()->getArray("traceEvents")) {
      const llvm::json::Object *Ev = E.getAsObject();
      if (Ev->getString("name") == llvm::StringRef("process_name"))
        Named = Ev->getObject("args")->getString("name")->contains("(" + N + ",");
    }
    EXPECT_TRUE(Named) << Path;
  }
}

TEST(SimTool, TimelinePathsOfCompare) {
  std::string Dir = scratchDir("SimTool.TimelinePath");
  EXPECT_EQ(timelinePath("out/t.json", "um"), "out/t.um.json");
  EXPECT_EQ(timelinePath("t", "swap-opt"), "t.swap-opt.json");
  EXPECT_EQ(timelinePath("runs/", "plan"), "runs/plan.json");
  EXPECT_EQ(timelinePath(Dir, "deepum"), Dir + "/deepum.json");
  // A directory named with a slash is created; '-' cannot hold several.
  SimToolOptions O;
  O.ProfilePath = writeTinyProfile(Dir);
  O.GpuMemory = "12MiB";
  O.Compare = true;
  O.PerfettoOut = Dir + "/timelines/";
  ASSERT_FALSE(bool(runSim(O, llvm::nulls())));
  EXPECT_TRUE(llvm::sys::fs::exists(Dir + "/timelines/ideal.json"));
  O.PerfettoOut = "-";
  EXPECT_NE(errorText(runSim(O, llvm::nulls())).find("not '-'"), std::string::npos);
}

TEST(SimTool, OversubscriptionSetsCapacityFromTheFootprint) {
  std::string Dir = scratchDir("SimTool.Ratio");
  SimToolOptions O;
  O.ProfilePath = writeTinyProfile(Dir);
  O.Oversubscription = 2; // footprint 16 MiB -> 8 MiB
  O.Json = true;
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  if (llvm::Error E = runSim(O, OS))
    FAIL() << llvm::toString(std::move(E));
  OS.flush();
  llvm::Expected<llvm::json::Value> V = llvm::json::parse(Out);
  ASSERT_TRUE(bool(V));
  EXPECT_EQ(V->getAsObject()->getInteger("gpu_memory_bytes"), int64_t(8 * MiB));
  EXPECT_EQ(V->getAsObject()->getInteger("footprint_bytes"), int64_t(16 * MiB));
}

TEST(SimTool, OversubscriptionOutOfRangeIsRefused) {
  std::string Dir = scratchDir("SimTool.RatioRange");
  SimToolOptions O;
  O.ProfilePath = writeTinyProfile(Dir);
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  // 16 MiB / 1e-300 is far beyond 2^64 bytes.
  O.Oversubscription = 1e-300;
  std::string E = errorText(runSim(O, OS));
  EXPECT_NE(E.find("--oversubscription"), std::string::npos) << E;
  EXPECT_EQ(E.find('\n'), std::string::npos) << E;
  O.Oversubscription = std::numeric_limits<double>::infinity();
  E = errorText(runSim(O, OS));
  EXPECT_NE(E.find("--oversubscription"), std::string::npos) << E;
  // 16 MiB / 1e30 leaves no GPU memory at all.
  O.Oversubscription = 1e30;
  E = errorText(runSim(O, OS));
  EXPECT_NE(E.find("--oversubscription"), std::string::npos) << E;
}

TEST(SimTool, ErrorsAreOneLine) {
  std::string Dir = scratchDir("SimTool.Errors");
  SimToolOptions O;
  O.ProfilePath = writeTinyProfile(Dir);
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  O.GpuMemory = "lots";
  EXPECT_NE(errorText(runSim(O, OS)).find("--gpu-memory"), std::string::npos);
  O.GpuMemory = "64MiB";
  O.Policy = "magic";
  EXPECT_NE(errorText(runSim(O, OS)).find("unknown policy 'magic'"), std::string::npos);
  O.Policy = "um";
  O.Durations = "guess";
  EXPECT_NE(errorText(runSim(O, OS)).find("--durations"), std::string::npos);
  O.Durations = "auto";
  O.GpuMemory = "0";
  EXPECT_NE(errorText(runSim(O, OS)).find("--gpu-memory must be more than 0"), std::string::npos);
  O.GpuMemory = "64MiB";
  O.Oversubscription = 2;
  EXPECT_NE(errorText(runSim(O, OS)).find("not both"), std::string::npos);
  O.GpuMemory = "";
  O.Oversubscription = -2;
  EXPECT_NE(errorText(runSim(O, OS)).find("positive ratio"), std::string::npos);
  O.Oversubscription = 0;
  O.ProfilePath = Dir + "/missing.pb";
  EXPECT_NE(errorText(runSim(O, OS)).find("missing.pb"), std::string::npos);
}

namespace {
/// A plan for the tiny profile: position k touches arena block k, no actions.
std::string writeTinyPlan(const std::string &Dir) {
  v1::Plan Pl;
  Pl.set_format_version(format::kPlanFormatVersion);
  Pl.mutable_metadata()->set_gpu_memory_bytes(12 * MiB);
  Pl.mutable_metadata()->set_um_block_bytes(2 * MiB);
  Pl.mutable_layout()->set_arena_bytes(3 * 2 * MiB); // chains name blocks inside the arena
  for (uint32_t K = 0; K < 3; ++K) {
    uint64_t Id = builderId("k" + std::to_string(K)); // the tiny profile's kernels
    Pl.add_position_ids(Id);
    v1::ExecutionIdEntry *E = Pl.add_execution_ids();
    E->set_execution_id(Id);
    E->add_positions(K);
    v1::BlockChain *C = Pl.add_block_chains();
    C->set_execution_id(Id);
    C->set_position(K);
    C->add_blocks(K);
    C->add_modes(v1::ACCESS_MODE_READ);
  }
  std::string Path = Dir + "/tiny.plan.pb";
  EXPECT_FALSE(format::writePlan(Pl, Path));
  return Path;
}

std::string runOk(const SimToolOptions &O) {
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  if (llvm::Error E = runSim(O, OS))
    ADD_FAILURE() << llvm::toString(std::move(E));
  return OS.str();
}
} // namespace

TEST(SimTool, PlanReplayIsInjectedAndNamed) {
  // The executor's replay reaches runSim only through ExecutorReplay (this
  // library does not link the executor): a stand-in shows what it receives,
  // what of its result is kept, and that the output says which replay ran.
  std::string Dir = scratchDir("SimTool.PlanReplay");
  SimToolOptions O;
  O.ProfilePath = writeTinyProfile(Dir);
  O.PlanPath = writeTinyPlan(Dir);
  O.Policy = "plan";
  O.Json = true;
  auto Obj = [](const std::string &Out) {
    llvm::Expected<llvm::json::Value> V = llvm::json::parse(Out);
    EXPECT_TRUE(bool(V)) << Out;
    return V ? *V->getAsObject() : llvm::json::Object();
  };
  // No replay injected: "auto" is the native one.
  llvm::json::Object Native = Obj(runOk(O));
  EXPECT_EQ(Native.getString("plan_replay"), llvm::StringRef("native"));
  const double IdealUs = Native.getNumber("ideal_us").getValueOr(0);
  ASSERT_GT(IdealUs, 0);

  int Calls = 0;
  bool GotTimeline = false;
  O.ExecutorReplay = [&](const v1::Profile &, const v1::Plan &Pl, const SimOptions &S, SimResult &R,
                         format::TraceWriter *Timeline) {
    ++Calls;
    GotTimeline = Timeline != nullptr;
    EXPECT_EQ(Pl.position_ids_size(), 3);
    EXPECT_EQ(S.Pol, Policy::Plan);
    EXPECT_EQ(R.PlanReplay, "native"); // the native result comes in
    R.IterationUs = 2 * R.IdealUs;
    R.SlowdownOverIdeal = 2;
    R.PlanReplay = "executor";
    return llvm::Error::success();
  };
  llvm::json::Object Exec = Obj(runOk(O));
  EXPECT_EQ(Calls, 1);
  EXPECT_EQ(Exec.getString("plan_replay"), llvm::StringRef("executor"));
  EXPECT_EQ(Exec.getNumber("iteration_us").getValueOr(0), 2 * IdealUs);
  EXPECT_EQ(Exec.getNumber("ideal_us").getValueOr(0), IdealUs); // kept from the native run

  O.PlanReplay = "native";
  EXPECT_EQ(Obj(runOk(O)).getString("plan_replay"), llvm::StringRef("native"));
  EXPECT_EQ(Calls, 1);

  O.PlanReplay = "executor";
  O.Json = false;
  EXPECT_NE(runOk(O).find("policy plan (executor replay)"), std::string::npos);
  EXPECT_NE(runOk([&] {
              SimToolOptions C = O;
              C.Compare = true;
              return C;
            }())
                .find("plan/executor"),
            std::string::npos);
  EXPECT_EQ(Calls, 3); // --compare replays only the plan row with it

  // --perfetto hands the executor replay the timeline (the executor's events,
  // not the native replay's, are what it shows).
  EXPECT_FALSE(GotTimeline);
  O.PerfettoOut = Dir + "/trace.json";
  runOk(O);
  EXPECT_EQ(Calls, 4);
  EXPECT_TRUE(GotTimeline);
  EXPECT_TRUE(llvm::sys::fs::exists(O.PerfettoOut));
}
