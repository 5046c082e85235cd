//===- SimToolTest.cpp - deepum-sim's options, outputs and errors -----------===//
#include "SimTestSupport.h"
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/sim/Engine.h"
#include "deepum/sim/Policy.h"
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
  EXPECT_EQ(Names, (std::vector<std::string>{"um", "deepum", "swap-layer", "swap-opt", "offload", "ideal"}));
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

namespace {
/// A stand-in for the executor's plan policy: counts what the loop tells it.
struct CountingPolicy final : SimPolicy {
  int *Observed, *Ended;
  CountingPolicy(int *O, int *E) : Observed(O), Ended(E) {}
  void launchObserved(Engine &, uint32_t) override { ++*Observed; }
  void kernelEnded(Engine &, uint32_t) override { ++*Ended; }
};
} // namespace

TEST(SimTool, PlanPolicyIsInjectedAndRunsInTheOneLoop) {
  // The executor's replay reaches runSim only through PlanPolicy (this
  // library does not link the executor); a stand-in shows what it receives
  // and that the loop every policy runs in drives it launch by launch.
  std::string Dir = scratchDir("SimTool.PlanPolicy");
  SimToolOptions O;
  O.ProfilePath = writeTinyProfile(Dir);
  O.PlanPath = writeTinyPlan(Dir);
  O.Policy = "plan";
  O.Json = true;
  O.Iterations = 3;
  O.Warmup = 0;
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  EXPECT_NE(errorText(runSim(O, OS)).find("no plan replay"), std::string::npos);

  int Made = 0, Observed = 0, Ended = 0;
  O.PlanPolicy = [&](const v1::Plan &Pl,
                     const SimOptions &S) -> llvm::Expected<std::unique_ptr<SimPolicy>> {
    ++Made;
    EXPECT_EQ(Pl.position_ids_size(), 3);
    EXPECT_EQ(S.Pol, Policy::Plan);
    return std::make_unique<CountingPolicy>(&Observed, &Ended);
  };
  llvm::Expected<llvm::json::Value> V = llvm::json::parse(runOk(O));
  ASSERT_TRUE(bool(V));
  const llvm::json::Object &R = *V->getAsObject();
  EXPECT_EQ(R.getString("policy"), llvm::StringRef("plan"));
  EXPECT_EQ(R.get("plan_replay"), nullptr); // one replay: nothing to name
  EXPECT_EQ(Made, 1);
  EXPECT_EQ(Observed, 3 * 3); // 3 launches x 3 iterations
  EXPECT_EQ(Ended, 3 * 3);
  // Issuing nothing, the stand-in leaves everything to demand paging: the
  // plan's 3 arena blocks fault in once (cold start, measured), then fit.
  EXPECT_EQ(R.getNumber("faults").getValueOr(0), 3.0 * 32 / 3);

  // --compare runs the plan row through it too; the timeline records it.
  O.Compare = true;
  O.Json = false;
  EXPECT_NE(runOk(O).find("plan "), std::string::npos);
  EXPECT_EQ(Made, 2);
  O.Compare = false;
  O.PerfettoOut = Dir + "/trace.json";
  runOk(O);
  EXPECT_EQ(Made, 3);
  EXPECT_TRUE(llvm::sys::fs::exists(O.PerfettoOut));
}

TEST(SimTool, TheReportWarnsOfAMeanThatIsNotASteadyState) {
  auto report = [](unsigned Iterations, unsigned RepeatsEvery) {
    SimResult R;
    R.MeasuredIterations = Iterations;
    R.RepeatsEvery = RepeatsEvery;
    R.IterationSpreadUs = 1500;
    std::string Text;
    llvm::raw_string_ostream OS(Text);
    print(OS, R);
    return OS.str();
  };
  EXPECT_NE(report(3, 0).find("warning: the 3 measured iterations differ and do not repeat"),
            std::string::npos);
  EXPECT_NE(report(5, 2).find("repeat every 2 iterations"), std::string::npos);
  EXPECT_NE(report(5, 2).find("measure a multiple of 2"), std::string::npos);
  EXPECT_EQ(report(4, 2).find("warning"), std::string::npos);
  EXPECT_EQ(report(4, 1).find("warning"), std::string::npos);
  EXPECT_EQ(report(1, 0).find("warning"), std::string::npos); // one iteration shows nothing
  // The JSON carries both.
  SimResult R;
  R.RepeatsEvery = 2;
  R.IterationSpreadUs = 1500;
  llvm::json::Value V = toJson(R);
  EXPECT_EQ(V.getAsObject()->getInteger("repeats_every").getValueOr(-1), 2);
  EXPECT_EQ(V.getAsObject()->getNumber("iteration_spread_us").getValueOr(-1), 1500.0);
}
