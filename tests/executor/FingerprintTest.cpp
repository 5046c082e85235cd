//===- FingerprintTest.cpp - Plans checked against their profile's identity -===//
//
// A plan carries the fingerprint of the launch sequence it was profiled from
// (metadata.profile_fingerprint). The executor refuses a plan whose
// fingerprint is not that of its own positions, turns off a plan that no
// marked iteration of the program matches, keeps a plan that one matches, and
// replays an older plan without a fingerprint unchecked. Each refusal is one
// warning and an allocator that keeps working.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/Executor.h"
#include "deepum/executor/FakeBackend.h"
#include "deepum/executor/Log.h"
#include "deepum/format/Format.h"

#include "ExecutorTestSupport.h"
#include "TestSupport.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace deepum::executor;
using deepum::test::kBlock;
using deepum::test::PlanBuilder;
namespace v1 = deepum::v1;

namespace {
constexpr StreamHandle S1 = 0x101;

size_t occurrences(const std::string &Text, const std::string &What) {
  size_t N = 0;
  for (size_t At = Text.find(What); At != std::string::npos; At = Text.find(What, At + 1))
    ++N;
  return N;
}

std::string whyNot(const Executor &E) {
  DeviceReport R;
  EXPECT_TRUE(E.report(0, R));
  return R.WhyNot;
}

FingerprintCheck checkOf(const Executor &E) {
  DeviceReport R;
  EXPECT_TRUE(E.report(0, R));
  return R.Fingerprint;
}

/// One marked iteration of the program: its launches, then deepum_step.
void iteration(FakeBackend &B, Executor &E, const std::vector<uint64_t> &Ids) {
  for (uint64_t Id : Ids)
    B.launch(0, S1, Id);
  E.markIteration();
}

const std::vector<uint64_t> kPlanned = {10, 11, 12, 13, 14, 15};
// The same kernels with one more launched each iteration: the cursor copes
// (an inserted kernel), but this is not the program the plan was made for.
const std::vector<uint64_t> kOther = {10, 11, 12, 99, 13, 14, 15};

PlanBuilder planned() {
  PlanBuilder PB(kPlanned);
  PB.action(v1::ACTION_KIND_PREFETCH, 1, 0, kBlock, 2);
  return PB;
}

TEST(FingerprintTest, APlanForAnotherProfileIsRefusedAtLoadWithOneWarning) {
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  // The plan rules refuse such a file (below); a CompiledPlan made another
  // way is refused by the cursor.
  CompiledPlan Other = planned().compiled();
  Other.ProfileFingerprint = PlanBuilder::sequenceHash(kOther);
  LogCapture::start();
  EXPECT_FALSE(E.setPlan(0, Other, 0));
  std::string Log = LogCapture::stop();
  EXPECT_FALSE(E.planActive(0));
  EXPECT_EQ(occurrences(Log, "profile fingerprint"), 1u) << Log;
  EXPECT_NE(Log.find("training continues unplanned"), std::string::npos) << Log;
  EXPECT_EQ(whyNot(E).rfind("plan refused: the plan's profile fingerprint", 0), 0u) << whyNot(E);
  // Still the allocator, and nothing of the plan is issued.
  EXPECT_NE(E.allocate(4096, 0, S1), nullptr);
  iteration(B, E, kPlanned);
  EXPECT_EQ(B.calls(FakeCallKind::Prefetch).size(), 0u);
}

TEST(FingerprintTest, APlanFileForAnotherProfileIsRefusedOnceForAllDevices) {
  std::string Dir = deepum::test::scratchDir("FingerprintPlanFile");
  std::string Path = Dir + "/other.plan.pb";
  PlanBuilder PB = planned();
  PB.proto().mutable_metadata()->set_profile_fingerprint(PlanBuilder::sequenceHash(kOther));
  ASSERT_FALSE(static_cast<bool>(deepum::format::writePlan(PB.proto(), Path)));
  FakeBackend B({.Devices = 2});
  ExecutorConfig C;
  C.PlanPaths[kAllDevices] = Path;
  LogCapture::start();
  Executor E(B, C);
  std::string Log = LogCapture::stop();
  EXPECT_FALSE(E.planActive(0));
  EXPECT_FALSE(E.planActive(1));
  EXPECT_EQ(occurrences(Log, "profile fingerprint"), 1u) << Log;
  EXPECT_NE(whyNot(E).find("plan refused: " + Path + ": the plan's profile fingerprint"),
            std::string::npos)
      << whyNot(E);
}

TEST(FingerprintTest, ProgramThatNeverMatchesTurnsThePlanOffAfterTheMarkedIterations) {
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  ASSERT_TRUE(E.setPlan(0, planned().fingerprinted().compiled(), 0));
  const uint32_t Limit = CursorOptions{}.FingerprintIterations;
  ASSERT_GT(Limit, 1u);
  LogCapture::start();
  E.markIteration(); // the program's first mark: iterations are counted from here
  for (uint32_t I = 0; I + 1 < Limit; ++I)
    iteration(B, E, kOther);
  EXPECT_TRUE(E.planActive(0)) << "turned off before " << Limit << " iterations";
  EXPECT_EQ(checkOf(E), FingerprintCheck::Pending);
  EXPECT_GT(B.calls(FakeCallKind::Prefetch).size(), 0u);
  iteration(B, E, kOther);
  std::string Log = LogCapture::stop();
  const size_t PrefetchesWhileOn = B.calls(FakeCallKind::Prefetch).size();
  EXPECT_FALSE(E.planActive(0));
  EXPECT_EQ(checkOf(E), FingerprintCheck::Mismatch);
  EXPECT_EQ(occurrences(Log, "differs from the plan's profile fingerprint"), 1u) << Log;
  EXPECT_EQ(whyNot(E).rfind("plan turned off: the launch sequence of", 0), 0u) << whyNot(E);
  iteration(B, E, kPlanned);
  EXPECT_EQ(B.calls(FakeCallKind::Prefetch).size(), PrefetchesWhileOn)
      << "replayed after turning off";
  EXPECT_NE(E.allocate(4096, 0, S1), nullptr);
}

TEST(FingerprintTest, OneMatchingIterationConfirmsThePlanForGood) {
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  ASSERT_TRUE(E.setPlan(0, planned().fingerprinted().compiled(), 0));
  E.markIteration();
  iteration(B, E, kOther); // a warm-up iteration that differs
  EXPECT_EQ(checkOf(E), FingerprintCheck::Pending);
  iteration(B, E, kPlanned);
  EXPECT_EQ(checkOf(E), FingerprintCheck::Matched);
  for (uint32_t I = 0; I < 3 * CursorOptions{}.FingerprintIterations; ++I)
    iteration(B, E, kOther);
  EXPECT_TRUE(E.planActive(0)) << whyNot(E);
  std::string Json;
  ASSERT_TRUE(E.statsJson(0, Json));
  EXPECT_NE(Json.find("\"fingerprint_check\":\"matched\""), std::string::npos) << Json;
}

TEST(FingerprintTest, IterationsWithoutLaunchesAreNotCounted) {
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  ASSERT_TRUE(E.setPlan(0, planned().fingerprinted().compiled(), 0));
  for (uint32_t I = 0; I < 4 * CursorOptions{}.FingerprintIterations; ++I)
    E.markIteration();
  EXPECT_TRUE(E.planActive(0)) << whyNot(E);
  EXPECT_EQ(checkOf(E), FingerprintCheck::Pending);
}

TEST(FingerprintTest, AnOlderPlanWithoutAFingerprintIsReplayedUnchecked) {
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  PlanBuilder PB = planned();
  ASSERT_EQ(PB.proto().metadata().profile_fingerprint(), 0u);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  E.markIteration();
  for (uint32_t I = 0; I < 3 * CursorOptions{}.FingerprintIterations; ++I)
    iteration(B, E, kOther);
  EXPECT_TRUE(E.planActive(0)) << whyNot(E);
  EXPECT_EQ(checkOf(E), FingerprintCheck::None);
  EXPECT_GT(B.calls(FakeCallKind::Prefetch).size(), 0u);
}

} // namespace
