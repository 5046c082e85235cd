// detail::CallAlignment: a replay's allocation calls against the profiled
// ones (executor/lib/CallAlignment.h).
#include "CallAlignment.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <vector>

namespace {

using deepum::executor::detail::CallAlignment;

/// Feeds `Live` (sizes of calls 1, 2, ...) and returns the profiled index
/// each stands for where it may be placed, 0 where not.
std::vector<uint64_t> follow(const std::vector<uint64_t> &Profiled,
                             const std::vector<uint64_t> &Live) {
  CallAlignment A;
  std::vector<uint64_t> Out;
  for (size_t I = 0; I < Live.size(); ++I) {
    const CallAlignment::Where W = A.observe(Profiled, I + 1, Live[I]);
    Out.push_back(W.Aligned ? W.Call : 0);
  }
  return Out;
}

// Distinct sizes: each profiled call is told apart by what follows it.
const std::vector<uint64_t> kProfiled = {10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120};

TEST(CallAlignment, TheSameCallsStandForThemselves) {
  EXPECT_EQ(follow(kProfiled, kProfiled),
            (std::vector<uint64_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}));
}

TEST(CallAlignment, OneCallMoreIsFollowedOnceTheNextCallsAgree) {
  // An extra call of 7 bytes after the second: it departs; placement waits
  // until kConfirm calls agree at offset +1, then the calls stand for the
  // profiled ones one earlier.
  std::vector<uint64_t> Live = {10, 20, 7, 30, 40, 50, 60, 70, 80, 90, 100};
  const auto Got = follow(kProfiled, Live);
  ASSERT_EQ(CallAlignment::kConfirm, 6u);
  // Calls 3..7 wait (the extra call is in the last six until call 8).
  EXPECT_EQ(Got, (std::vector<uint64_t>{1, 2, 0, 0, 0, 0, 0, 0, 8, 9, 10}));
}

TEST(CallAlignment, OneCallFewerIsFollowedToo) {
  std::vector<uint64_t> Live = {10, 20, 40, 50, 60, 70, 80, 90, 100, 110};
  // Call 3 (40 bytes) departs from the profiled 30; six calls later (from
  // call 8, 90 bytes) they agree at offset -1.
  EXPECT_EQ(follow(kProfiled, Live), (std::vector<uint64_t>{1, 2, 0, 0, 0, 0, 0, 9, 10, 11}));
}

TEST(CallAlignment, RunsOfEqualSizesAreNotGuessed) {
  // Transient buffers and gradients of one size: every offset agrees, so
  // after the departure nothing is placed by call (an activation could take
  // a gradient's place); the first distinct size singles the offset out.
  std::vector<uint64_t> Profiled = {5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 1, 2, 3, 4, 6, 7};
  std::vector<uint64_t> Live = {9, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 1, 2, 3, 4, 6, 7};
  const auto Got = follow(Profiled, Live);
  for (size_t I = 0; I < 11; ++I)
    EXPECT_EQ(Got[I], 0u) << "call " << I + 1;
  // Call 12 (1 byte): the last six, 5 5 5 5 5 1, agree only at offset +1.
  EXPECT_EQ(Got[11], 11u);
  EXPECT_EQ(Got[16], 16u);
}

TEST(CallAlignment, UnknownSizesProveNothing) {
  // The profile did not record calls 4-9 (0): the calls after a departure
  // cannot agree there, so placement waits until six known ones do.
  std::vector<uint64_t> Profiled = {10, 20, 30, 0, 0, 0, 0, 0, 0, 100, 110, 120, 130, 140, 150, 160};
  std::vector<uint64_t> Live = {10, 20, 31, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 140, 150};
  const auto Got = follow(Profiled, Live);
  EXPECT_EQ(Got[1], 2u);
  for (size_t I = 2; I < 14; ++I)
    EXPECT_EQ(Got[I], 0u) << "call " << I + 1;
  EXPECT_EQ(Got[14], 15u); // 100 .. 150 agree at offset 0
}

TEST(CallAlignment, WithoutProfiledSizesCallsAreExact) {
  CallAlignment A;
  for (uint64_t Call = 1; Call <= 20; ++Call) {
    const CallAlignment::Where W = A.observe({}, Call, Call * 3);
    EXPECT_TRUE(W.Aligned);
    EXPECT_EQ(W.Call, Call);
  }
}

TEST(CallAlignment, CallsBeyondTheListKeepTheirOffset) {
  // Past the profiled list nothing is compared: a realigned offset carries on.
  std::vector<uint64_t> Live = {10, 20, 7, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 999, 998};
  const auto Got = follow(kProfiled, Live);
  EXPECT_EQ(Got[13], 13u);
  EXPECT_EQ(Got[14], 14u);
}

} // namespace
