//===- ComputeTest.cpp - Kernel compute times from a natural profile -------===//
#include "TestSupport.h"

#include "deepum/format/Compute.h"
#include "deepum/format/Signature.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace deepum;
using ::testing::HasSubstr;

namespace {

/// ITERATIONS iterations of the kernels NAMES, each kernel lasting its
/// duration in DURATIONS (ns), back to back, with a recorded stall of 1 ns.
v1::Profile profileOf(int Iterations, const std::vector<std::string> &Names,
                      const std::vector<uint64_t> &Durations) {
  v1::Profile P;
  uint64_t T = 1000;
  for (int I = 0; I < Iterations; ++I) {
    v1::Iteration *It = P.add_iterations();
    It->set_index(static_cast<uint32_t>(I));
    It->set_first_kernel(static_cast<uint32_t>(P.kernels_size()));
    It->set_kernel_count(static_cast<uint32_t>(Names.size()));
    It->set_start_ns(T);
    for (size_t J = 0; J < Names.size(); ++J) {
      v1::Kernel *K = P.add_kernels();
      K->set_name(Names[J]);
      K->mutable_grid()->set_x(4);
      K->mutable_block()->set_x(128);
      K->set_start_ns(T);
      K->set_end_ns(T + Durations[J]);
      K->set_fault_stall_ns(1);
      T += Durations[J] + 10;
    }
    It->set_end_ns(T);
  }
  return P;
}

TEST(Compute, NaturalDurationsBecomeComputeAndTheRestStall) {
  // Access-set: every kernel waits on its faults; the records saw 1 ns of it.
  v1::Profile P = profileOf(2, {"fwd", "bwd", "step"}, {5000, 9000, 300});
  // Natural, last iteration: fwd 40, bwd 70, and step longer than recorded.
  v1::Profile N = profileOf(3, {"fwd", "bwd", "step"}, {40, 70, 500});
  N.mutable_kernels(6)->set_end_ns(N.kernels(6).start_ns() + 41);
  llvm::Expected<uint64_t> Set = format::takeComputeTimes(P, N);
  ASSERT_TRUE(static_cast<bool>(Set)) << llvm::toString(Set.takeError());
  EXPECT_EQ(*Set, 6u);
  for (int I : {0, 3}) {
    EXPECT_EQ(format::computeNs(P.kernels(I)), 41u) << "from the natural profile's last iteration";
    EXPECT_EQ(P.kernels(I).fault_stall_ns(), 5000u - 41);
    EXPECT_EQ(format::computeNs(P.kernels(I + 1)), 70u);
    // Never more compute than the recorded duration: no stall then.
    EXPECT_EQ(P.kernels(I + 2).fault_stall_ns(), 0u);
    EXPECT_EQ(format::computeNs(P.kernels(I + 2)), 300u);
  }
}

TEST(Compute, AProfileOfAnotherProgramIsRefusedAndNothingChanges) {
  const v1::Profile P = profileOf(2, {"fwd", "bwd", "step"}, {5000, 9000, 300});
  v1::Profile Q = P;
  EXPECT_THAT(test::errorText(format::takeComputeTimes(Q, profileOf(1, {"fwd", "bwd"}, {1, 2}))),
              HasSubstr("iteration 0 has 3 kernels, the natural profile's 2"));
  v1::Profile Other = profileOf(1, {"fwd", "bwd", "step"}, {1, 2, 3});
  Other.mutable_kernels(2)->set_name("adam");
  EXPECT_THAT(test::errorText(format::takeComputeTimes(Q, Other)),
              HasSubstr("kernel 2 of iteration 0 is step, the natural profile's is adam"));
  // The same name with another launch shape is another kernel too.
  v1::Profile Shape = profileOf(1, {"fwd", "bwd", "step"}, {1, 2, 3});
  Shape.mutable_kernels(1)->mutable_grid()->set_x(8);
  EXPECT_THAT(test::errorText(format::takeComputeTimes(Q, Shape)), HasSubstr("kernel 1"));
  EXPECT_THAT(test::errorText(format::takeComputeTimes(Q, v1::Profile())),
              HasSubstr("no iteration"));
  EXPECT_EQ(Q.SerializeAsString(), P.SerializeAsString());
}

} // namespace
