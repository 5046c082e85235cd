//===- PlanCursorTest.cpp - Following the program through the plan ---------===//
#include "deepum/executor/PlanCursor.h"
#include "deepum/base/Hash.h"

#include "ExecutorTestSupport.h"

#include "gtest/gtest.h"

using namespace deepum::executor;
using deepum::test::PlanBuilder;

namespace {

std::vector<uint64_t> iota(uint64_t First, size_t N) {
  std::vector<uint64_t> V;
  for (size_t I = 0; I < N; ++I)
    V.push_back(First + I);
  return V;
}

TEST(PlanCursorTest, FollowsExactIterations) {
  CompiledPlan P = PlanBuilder(iota(100, 10)).compiled();
  PlanCursor C(P);
  uint32_t Skipped;
  for (int It = 0; It < 3; ++It)
    for (uint32_t I = 0; I < 10; ++I)
      EXPECT_EQ(C.advance(100 + I, Skipped), I);
  EXPECT_EQ(C.stats().Matched, 30u);
  EXPECT_EQ(C.stats().Iterations, 3u);
  EXPECT_EQ(C.stats().Resyncs, 1u); // the initial search
}

TEST(PlanCursorTest, StartsMidIteration) {
  CompiledPlan P = PlanBuilder(iota(100, 10)).compiled();
  PlanCursor C(P);
  uint32_t Skipped;
  EXPECT_EQ(C.advance(105, Skipped), 5u);
  EXPECT_EQ(C.advance(106, Skipped), 6u);
  EXPECT_EQ(C.state(), PlanCursor::State::Synced);
}

TEST(PlanCursorTest, ToleratesMissingKernels) {
  CompiledPlan P = PlanBuilder(iota(100, 10)).compiled();
  PlanCursor C(P);
  uint32_t Skipped;
  EXPECT_EQ(C.advance(100, Skipped), 0u);
  EXPECT_EQ(C.advance(101, Skipped), 1u);
  EXPECT_EQ(C.advance(104, Skipped), 4u); // 102 and 103 did not happen
  EXPECT_EQ(Skipped, 2u);
  EXPECT_EQ(C.stats().Missing, 2u);
  EXPECT_EQ(C.advance(105, Skipped), 5u);
}

TEST(PlanCursorTest, ToleratesInsertedKernels) {
  CompiledPlan P = PlanBuilder(iota(100, 10)).compiled();
  PlanCursor C(P);
  uint32_t Skipped;
  EXPECT_EQ(C.advance(100, Skipped), 0u);
  EXPECT_EQ(C.advance(999, Skipped), PlanCursor::kNoPosition);
  EXPECT_EQ(C.advance(998, Skipped), PlanCursor::kNoPosition);
  EXPECT_EQ(C.advance(101, Skipped), 1u);
  EXPECT_EQ(C.stats().Inserted, 2u);
  EXPECT_EQ(C.state(), PlanCursor::State::Synced);
}

TEST(PlanCursorTest, ResyncsThroughCorrelationTable) {
  // A transformer-like sequence: repeated layers make positions ambiguous.
  std::vector<uint64_t> Ids = {1, 7, 8, 9, 7, 8, 9, 7, 8, 9, 2, 3};
  CompiledPlan P = PlanBuilder(Ids).compiled();
  PlanCursor C(P, {.LostAfter = 3});
  uint32_t Skipped;
  for (uint64_t Id : Ids)
    C.advance(Id, Skipped);
  EXPECT_EQ(C.expected(), 0u);
  // Lost in the middle: three unknown launches.
  C.advance(1, Skipped);
  C.advance(7, Skipped);
  for (int I = 0; I < 3; ++I)
    C.advance(500 + I, Skipped);
  EXPECT_EQ(C.state(), PlanCursor::State::Searching);
  // 8, 9, 7, 8, 9 are ambiguous (several layers); 2 occurs once.
  for (uint64_t Id : {8, 9, 7, 8, 9})
    EXPECT_EQ(C.advance(Id, Skipped), PlanCursor::kNoPosition);
  EXPECT_EQ(C.advance(2, Skipped), 10u);
  EXPECT_EQ(C.state(), PlanCursor::State::Synced);
  EXPECT_EQ(C.advance(3, Skipped), 11u);
  EXPECT_EQ(C.stats().Resyncs, 2u);
}

TEST(PlanCursorTest, AmbiguityResolvedBySuccessors) {
  // 5 occurs twice, followed by different kernels.
  CompiledPlan P = PlanBuilder({5, 6, 5, 7}).compiled();
  PlanCursor C(P);
  uint32_t Skipped;
  EXPECT_EQ(C.advance(5, Skipped), PlanCursor::kNoPosition);
  EXPECT_EQ(C.advance(7, Skipped), 3u);
}

TEST(PlanCursorTest, DetectsPlanForAnotherModelWithin100Launches) {
  CompiledPlan P = PlanBuilder(iota(100, 50)).compiled();
  PlanCursor C(P);
  uint32_t Skipped;
  int Launches = 0;
  while (!C.off() && Launches < 1000)
    C.advance(100000 + (Launches++ % 37), Skipped);
  EXPECT_TRUE(C.off());
  EXPECT_LE(Launches, 100);
  EXPECT_NE(C.offReason().find("different model"), std::string::npos) << C.offReason();
  EXPECT_TRUE(C.takeOffNotice());
  EXPECT_FALSE(C.takeOffNotice()); // said once
}

TEST(PlanCursorTest, TurnsOffAfterSustainedMismatch) {
  CompiledPlan P = PlanBuilder(iota(100, 10)).compiled();
  PlanCursor C(P, {.OffAfterSearching = 50});
  uint32_t Skipped;
  for (int It = 0; It < 20; ++It)
    for (uint32_t I = 0; I < 10; ++I)
      C.advance(100 + I, Skipped);
  EXPECT_FALSE(C.off());
  int Launches = 0;
  while (!C.off() && Launches < 1000)
    C.advance(7000 + Launches++, Skipped);
  EXPECT_TRUE(C.off());
  EXPECT_NE(C.offReason().find("lost the plan"), std::string::npos);
  EXPECT_EQ(C.advance(100, Skipped), PlanCursor::kNoPosition); // stays off
}

TEST(PlanCursorTest, MarkIterationRestartsAtZero) {
  CompiledPlan P = PlanBuilder({4, 4, 4, 5}).compiled();
  PlanCursor C(P);
  uint32_t Skipped;
  C.markIteration();
  EXPECT_EQ(C.advance(4, Skipped), 0u);
  EXPECT_EQ(C.advance(4, Skipped), 1u);
  C.markIteration(); // the program's iteration ended early
  EXPECT_EQ(C.advance(4, Skipped), 0u);
}

TEST(PlanCursorTest, ReportsWraps) {
  CompiledPlan P = PlanBuilder({1, 2}).compiled();
  PlanCursor C(P);
  uint32_t Skipped;
  C.advance(1, Skipped);
  EXPECT_FALSE(C.takeIterationWrap());
  C.advance(2, Skipped);
  EXPECT_TRUE(C.takeIterationWrap());
  EXPECT_FALSE(C.takeIterationWrap());
}

} // namespace

namespace {

/// The planner's contextId: position P's ID, then P-1's, ..., wrapping.
uint64_t contextOf(const std::vector<uint64_t> &Ids, size_t P, unsigned L) {
  uint64_t H = deepum::base::kFnvOffset;
  for (unsigned K = 0; K < L && K < Ids.size(); ++K)
    H = deepum::base::fnv1aId(Ids[(P + Ids.size() - K) % Ids.size()], H);
  return H;
}

TEST(PlanCursorTest, ContextIdsResyncInsideRepeatedLayers) {
  // Layers 7 8 9 repeat; each layer's last kernel differs (40+i), so a
  // context of 4 IDs names every position while one ID alone does not.
  std::vector<uint64_t> Ids = {1, 7, 8, 9, 41, 7, 8, 9, 42, 7, 8, 9, 43, 2};
  PlanBuilder PB(Ids);
  PB.proto().mutable_metadata()->set_context_length(4);
  for (size_t P = 0; P < Ids.size(); ++P)
    PB.proto().add_position_contexts(contextOf(Ids, P, 4));
  CompiledPlan P = PB.compiled();
  ASSERT_EQ(P.ContextLength, 4u);
  PlanCursor C(P, {.LostAfter = 2});
  uint32_t Skipped;
  for (uint64_t Id : Ids)
    C.advance(Id, Skipped);
  // Lost, then found again: unique IDs resync as before when contexts exist.
  C.advance(900, Skipped);
  C.advance(901, Skipped);
  ASSERT_EQ(C.state(), PlanCursor::State::Searching);
  EXPECT_EQ(C.advance(41, Skipped), 4u); // 41 is unique in the plan
  C.advance(902, Skipped);
  C.advance(903, Skipped);
  ASSERT_EQ(C.state(), PlanCursor::State::Searching);
  EXPECT_EQ(C.advance(42, Skipped), 8u);
  // Synced launches keep the context ring current: after a loss the first
  // clean window of 4 IDs names the position, here inside a repeated layer
  // where the ID alone (9) occurs three times.
  C.advance(904, Skipped);
  C.advance(905, Skipped);
  ASSERT_EQ(C.state(), PlanCursor::State::Searching);
  C.advance(43, Skipped); // unique: position 12
  C.advance(906, Skipped);
  C.advance(907, Skipped);
  ASSERT_EQ(C.state(), PlanCursor::State::Searching);
  EXPECT_EQ(C.advance(7, Skipped), PlanCursor::kNoPosition);
  EXPECT_EQ(C.advance(8, Skipped), PlanCursor::kNoPosition);
  EXPECT_EQ(C.advance(9, Skipped), PlanCursor::kNoPosition); // still 3 candidates
  EXPECT_EQ(C.advance(43, Skipped), 12u);
}

} // namespace
