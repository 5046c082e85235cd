//===- SimToolTest.cpp - deepum-sim's options, outputs and errors -----------===//
#include "SimTestSupport.h"
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/sim/SimTool.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

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
  EXPECT_TRUE(llvm::sys::fs::exists(O.PerfettoOut));
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
  O.ProfilePath = Dir + "/missing.pb";
  EXPECT_NE(errorText(runSim(O, OS)).find("missing.pb"), std::string::npos);
}
