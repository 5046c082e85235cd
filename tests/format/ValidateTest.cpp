//===- ValidateTest.cpp - Semantically invalid profiles and plans -----------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cmath>

using namespace deepum;
using namespace deepum::test;
using ::testing::HasSubstr;

namespace {

struct Fixture {
  ProfileBuilder B;
  uint64_t W, X;
  Fixture() {
    W = B.allocate(4 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
    X = B.allocate(1 << 20, 10, 3000);
    B.kernel("a", 1000, {{W, v1::ACCESS_MODE_READ}, {X, v1::ACCESS_MODE_WRITE}});
    B.kernel("b", 1000, {{X, v1::ACCESS_MODE_READ}});
    B.iteration(0, 2);
  }
};

TEST(Validate, AcceptsAValidProfile) {
  Fixture F;
  EXPECT_FALSE(bool(format::validateProfile(F.B.build())));
}

TEST(Validate, TheDevicesLinkRateIsFinite) {
  // Protobuf's JSON reads "NaN" and "Infinity" for a double: deepum-inspect
  // showed such a profile and deepum-plan took its link rate silently.
  for (double Rate : {std::nan(""), HUGE_VAL, -1.0}) {
    Fixture F;
    v1::Profile P = F.B.build();
    P.mutable_device()->set_link_bytes_per_second(Rate);
    EXPECT_THAT(errorText(format::validateProfile(P)),
                HasSubstr("device.link_bytes_per_second is "))
        << Rate;
  }
  Fixture F;
  v1::Profile P = F.B.build();
  P.mutable_device()->set_link_bytes_per_second(12345);
  std::string Json = format::toJson(P);
  const std::string Rate = "\"link_bytes_per_second\": 12345";
  ASSERT_NE(Json.find(Rate), std::string::npos) << Json;
  Json.replace(Json.find(Rate), Rate.size(), "\"link_bytes_per_second\": \"NaN\"");
  EXPECT_THAT(errorText(format::parseProfile(Json, "nan.profile.json", format::Encoding::Json)),
              HasSubstr("nan.profile.json: device.link_bytes_per_second is nan, not a finite rate"));
}

TEST(Validate, FreeBeforeAllocation) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.mutable_allocations(1)->set_free_time_ns(5);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("allocation 2 is freed at 5 ns"));
}

TEST(Validate, KernelEndsBeforeItStarts) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.mutable_kernels(1)->set_end_ns(P.kernels(1).start_ns() - 1);
  EXPECT_THAT(errorText(format::validateProfile(P)),
              HasSubstr("kernel 1 (b) ends before it starts"));
}

TEST(Validate, FaultStallWithinTheKernel) {
  Fixture F;
  v1::Profile P = F.B.build();
  const uint64_t Ns = P.kernels(1).end_ns() - P.kernels(1).start_ns();
  P.mutable_kernels(1)->set_fault_stall_ns(Ns); // all of it: allowed
  EXPECT_FALSE(bool(format::validateProfile(P)));
  P.mutable_kernels(1)->set_fault_stall_ns(Ns + 1);
  EXPECT_THAT(errorText(format::validateProfile(P)),
              HasSubstr("kernel 1 (b) waited " + std::to_string(Ns + 1) +
                        " ns on page faults but ran only " + std::to_string(Ns) + " ns"));
}

// Found by fuzz_simulator: a kernel ending near 2^64 ns made simulated time
// wrap, and a plan "beat" the lower bound.
TEST(Validate, KernelDurationsAreBounded) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.mutable_kernels(1)->set_end_ns(~uint64_t{0} - 125375);
  EXPECT_THAT(errorText(format::validateProfile(P)),
              HasSubstr("kernel 1 (b) runs 18446744073709"));
  P = F.B.build(); // two kernels each just under the cap: the sum is caught
  for (int K : {0, 1})
    P.mutable_kernels(K)->set_end_ns(P.kernels(K).start_ns() + format::kMaxProfileKernelNs - 10);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("more than 2^50 ns"));
  P = F.B.build();
  P.mutable_kernels(0)->set_end_ns(P.kernels(0).start_ns() + (uint64_t{1} << 40)); // 18 min
  EXPECT_FALSE(bool(format::validateProfile(P)));
}

// An allocation freed at the instant it was made (a clock that did not move)
// stayed live forever, and the reuse of its address made a valid profile
// invalid; found by recording on the CUDA stand-in.
TEST(Validate, AllocationFreedTheInstantItWasMadeIsNotLiveAfterwards) {
  ProfileBuilder B;
  uint64_t W = B.allocate(4 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t X = B.allocate(1 << 20, 10, 3000);
  B.kernel("a", 1000, {{W, v1::ACCESS_MODE_READ}, {X, v1::ACCESS_MODE_WRITE}});
  B.iteration(0, 1);
  v1::Profile P = B.build();
  // A second allocation at X's address, made and freed at X's free time + 1,
  // then a third at the same address right after.
  v1::Allocation *Z = P.add_allocations();
  *Z = P.allocations(1);
  Z->set_id(77);
  Z->set_alloc_time_ns(4000);
  Z->set_free_time_ns(4000);
  v1::Allocation *R = P.add_allocations();
  *R = P.allocations(1);
  R->set_id(78);
  R->set_alloc_time_ns(5000);
  R->set_free_time_ns(6000);
  EXPECT_FALSE(bool(format::validateProfile(P))) << errorText(format::validateProfile(P));
}

TEST(Validate, AccessOutsideEveryAllocation) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.mutable_kernels(0)->add_blocks()->set_block(P.kernels(0).blocks(0).block() + 1000);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("outside every allocation"));
}

TEST(Validate, TensorAccessBeyondItsAllocation) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.mutable_kernels(1)->mutable_tensors(0)->set_bytes(2 << 20);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("of allocation 2 of size"));
  P = F.B.build();
  P.mutable_kernels(1)->mutable_tensors(0)->set_allocation_id(99);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("allocation 99, which does not"));
}

TEST(Validate, OverlappingLiveAllocations) {
  Fixture F;
  v1::Profile P = F.B.build();
  v1::Allocation *A = P.add_allocations();
  *A = P.allocations(0);
  A->set_id(50);
  A->set_address(P.allocations(0).address() + 4096);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("overlaps live allocation"));
  // The same bytes reused after a free are fine.
  P = F.B.build();
  A = P.add_allocations();
  *A = P.allocations(1);
  A->set_id(51);
  A->set_alloc_time_ns(P.allocations(1).free_time_ns());
  A->set_freed(false);
  EXPECT_FALSE(bool(format::validateProfile(P)));
}

TEST(Validate, DuplicateIdsAndEmptyAllocations) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.mutable_allocations(1)->set_id(P.allocations(0).id());
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("appears twice"));
  P = F.B.build();
  P.mutable_allocations(1)->set_size_bytes(0);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("has size 0"));
}

TEST(Validate, IterationsMustCoverKernelsInOrder) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.mutable_iterations(0)->set_kernel_count(5);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("beyond the last kernel"));
  P = F.B.build();
  *P.add_iterations() = P.iterations(0);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("overlaps the previous"));
}

TEST(Validate, BlocksMustAscendAndBlockSizeMustBeSane) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.set_um_block_bytes(3000);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("um_block_bytes"));
  P = F.B.build();
  auto *K = P.mutable_kernels(0);
  ASSERT_GE(K->blocks_size(), 2);
  K->mutable_blocks()->SwapElements(0, 1);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("not strictly ascending"));
}

TEST(Validate, FaultsAndMigrations) {
  Fixture F;
  v1::Profile P = F.B.build();
  P.add_faults()->set_kernel_index(9);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("kernel 9, which does not exist"));
  P = F.B.build();
  v1::Migration *M = P.add_migrations();
  M->set_bytes(0);
  EXPECT_THAT(errorText(format::validateProfile(P)), HasSubstr("moves 0 bytes"));
}

v1::Plan smallPlan() {
  v1::Plan P;
  P.set_format_version(format::kPlanFormatVersion);
  P.mutable_metadata()->set_um_block_bytes(format::kUmBlockBytes);
  for (uint64_t Id : {11, 22}) {
    auto *E = P.add_execution_ids();
    E->set_execution_id(Id);
  }
  P.mutable_execution_ids(0)->add_successors()->set_execution_id(22);
  P.add_position_ids(11);
  P.add_position_ids(22);
  P.mutable_layout()->set_arena_bytes(8 << 20);
  auto *A = P.add_actions();
  A->set_kind(v1::ACTION_KIND_PREFETCH);
  A->set_position(0);
  A->set_due_position(1);
  auto *R = A->add_ranges();
  R->set_offset(2 << 20);
  R->set_bytes(2 << 20);
  return P;
}

TEST(Validate, Plans) {
  EXPECT_FALSE(bool(format::validatePlan(smallPlan())));
  v1::Plan P = smallPlan();
  P.set_format_version(2);
  EXPECT_THAT(errorText(format::validatePlan(P)), HasSubstr("unsupported plan format version 2"));
  P = smallPlan();
  P.mutable_actions(0)->set_due_position(2);
  EXPECT_THAT(errorText(format::validatePlan(P)), HasSubstr("beyond the iteration"));
  P = smallPlan();
  P.mutable_actions(0)->mutable_ranges(0)->set_offset(7 << 20);
  EXPECT_THAT(errorText(format::validatePlan(P)), HasSubstr("outside the arena"));
  P = smallPlan();
  P.add_position_ids(33);
  EXPECT_THAT(errorText(format::validatePlan(P)), HasSubstr("unknown execution id 21"));
  P = smallPlan();
  P.mutable_execution_ids(0)->mutable_successors(0)->set_execution_id(5);
  EXPECT_THAT(errorText(format::validatePlan(P)), HasSubstr("unknown successor"));
}

} // namespace
