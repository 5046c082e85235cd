//===- SummaryTest.cpp - Summaries computed by hand -------------------------===//
#include "JsonKeys.h"
#include "TestSupport.h"

#include "deepum/format/Summary.h"

#include "gtest/gtest.h"

using namespace deepum;
using namespace deepum::test;

namespace {

TEST(Summary, HandComputedProfile) {
  ProfileBuilder B;
  // Parameter: 3 MiB -> 2 blocks; activations 1 MiB each, the second reusing nothing.
  uint64_t W = B.allocate(3 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t X = B.allocate(1 << 20, 0, 2500);
  uint64_t Y = B.allocate(1 << 20, 1000, 3000);
  B.kernel("gemm", 1000, {{W, v1::ACCESS_MODE_READ}, {X, v1::ACCESS_MODE_WRITE}});
  B.kernel("relu", 1000, {{X, v1::ACCESS_MODE_READ}, {Y, v1::ACCESS_MODE_WRITE}});
  B.kernel("gemm", 1000, {{W, v1::ACCESS_MODE_READ}, {Y, v1::ACCESS_MODE_READ}});
  B.iteration(0, 3);
  v1::Profile P = B.build();
  auto *M = P.add_migrations();
  M->set_direction(v1::MIGRATION_DIRECTION_HOST_TO_DEVICE);
  M->set_cause(v1::MIGRATION_CAUSE_COHERENCE);
  M->set_bytes(65536);
  *P.add_migrations() = *M;

  format::ProfileSummary S = format::summarize(P);
  EXPECT_EQ(S.Kernels, 3u);
  EXPECT_EQ(S.KernelsPerIteration, 3u);
  EXPECT_EQ(S.Iterations, 1u);
  EXPECT_EQ(S.DistinctSignatures, 2u);
  EXPECT_EQ(S.Allocations, 3u);
  // Blocks: W has 2, X 1, Y 1 -> 4 blocks of 2 MiB.
  EXPECT_EQ(S.FootprintBytes, 4u * (2u << 20));
  // The largest working set: the first and last kernels touch W's 2 blocks and one more.
  EXPECT_EQ(S.MaxKernelWorkingSetBytes, 3u * (2u << 20));
  // Live: W + X from t=0, Y joins at t=1000 -> 5 MiB peak.
  EXPECT_EQ(S.PeakLiveBytes, 5u << 20);
  EXPECT_EQ(S.PersistentBytes, 3u << 20);
  EXPECT_EQ(S.PeakLiveBytesByRole["parameter"], 3u << 20);
  EXPECT_EQ(S.PeakLiveBytesByRole["activation"], 2u << 20);
  EXPECT_EQ(S.BlockAccesses, 2u + 1u + 1u + 1u + 2u + 1u);
  EXPECT_EQ(S.Migrations["htod"]["coherence"].Count, 2u);
  EXPECT_EQ(S.Migrations["htod"]["coherence"].Bytes, 131072u);
  EXPECT_DOUBLE_EQ(S.IterationNs, 3000.0);

  llvm::json::Value J = format::toJson(S);
  const llvm::json::Object *O = J.getAsObject();
  ASSERT_NE(O, nullptr);
  EXPECT_EQ(O->get("peak_live_bytes")->getAsUINT64(), llvm::Optional<uint64_t>(uint64_t{5} << 20));
  EXPECT_EQ(O->getString("kind"), llvm::Optional<llvm::StringRef>("profile"));
  EXPECT_EQ(O->getInteger("schema"), llvm::Optional<int64_t>(format::kSummarySchema));
}

// deepum-inspect --json's field names per schema version (docs/tools.md).
// Schema 1 never had "bytes_by_role": the field was renamed
// peak_live_bytes_by_role, with its meaning (the most of a role live at once,
// not a sum over the profile), on 2026-11-23 at 15:59 (c09f20d), before the
// outputs carried "schema" at all (c36e20f, 18:44); a document without
// "schema" is of that unversioned past.
TEST(Summary, JsonFieldsArePinnedPerSchemaVersion) {
  const std::map<int64_t, std::set<std::string>> Profile = {
      {1,
       {"schema", "kind", "producer", "device", "device.name", "device.memory_bytes", "model",
        "batch_size", "sequence_length", "access_source", "iterations", "kernels",
        "kernels_per_iteration", "distinct_signatures", "allocations", "footprint_bytes",
        "max_kernel_working_set_bytes", "peak_live_bytes", "persistent_bytes",
        "peak_live_bytes_by_role", "iteration_us", "block_accesses", "faults", "um_events",
        "dropped_records", "migrations"}}};
  const std::map<int64_t, std::set<std::string>> Plan = {
      {1,
       {"schema", "kind", "producer", "model", "device_model", "strategy", "gpu_memory_bytes",
        "profile_fingerprint", "positions", "execution_ids", "block_chains", "actions",
        "arena_bytes", "peak_live_bytes", "best_fit_peak_bytes", "placements",
        "predicted_iteration_us", "ignored"}}};
  ProfileBuilder B;
  uint64_t W = B.allocate(3 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("gemm", 1000, {{W, v1::ACCESS_MODE_READ}});
  B.iteration(0, 1);
  v1::Profile P = B.build();
  auto *M = P.add_migrations();
  M->set_direction(v1::MIGRATION_DIRECTION_HOST_TO_DEVICE);
  M->set_cause(v1::MIGRATION_CAUSE_COHERENCE);
  M->set_bytes(65536);
  // Maps keyed by data (roles, directions, action kinds) are pinned by name only.
  expectPinnedKeys(format::toJson(format::summarize(P)), Profile,
                   {"peak_live_bytes_by_role", "migrations"}, "deepum-inspect --json (profile)");
  v1::Plan Pl;
  Pl.mutable_metadata()->set_model("m");
  expectPinnedKeys(format::toJson(format::summarize(Pl)), Plan, {"actions"},
                   "deepum-inspect --json (plan)");
}

TEST(Summary, FootprintIsTheLastIterationsBlocks) {
  // Each iteration's activation is placed afresh: counting the blocks of every
  // iteration would give 2 + 1 + 1 blocks; the footprint is one iteration's, 2 + 1.
  ProfileBuilder B;
  uint64_t W = B.allocate(3 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t X0 = B.allocate(1 << 20, 0, 1500);
  B.kernel("fwd", 1000, {{W, v1::ACCESS_MODE_READ}, {X0, v1::ACCESS_MODE_WRITE}});
  B.iteration(0, 1);
  uint64_t X1 = B.allocate(1 << 20, 2000, 3500);
  B.kernel("fwd", 1000, {{W, v1::ACCESS_MODE_READ}, {X1, v1::ACCESS_MODE_WRITE}});
  B.iteration(1, 1);
  format::ProfileSummary S = format::summarize(B.build());
  EXPECT_EQ(S.FootprintBytes, 3u * (2u << 20));
  EXPECT_EQ(S.MaxKernelWorkingSetBytes, 3u * (2u << 20));
}

TEST(Summary, PeakTreatsSimultaneousFreeBeforeAllocation) {
  ProfileBuilder B;
  B.allocate(1 << 20, 0, 1000);
  B.allocate(1 << 20, 1000, 2000);
  EXPECT_EQ(format::summarize(B.build()).PeakLiveBytes, 1u << 20);
}

TEST(Summary, BytesByRoleArePeaksNotSums) {
  // Three iterations' activations, one after another, and a parameter: the
  // activations peak at 2 MiB however many iterations the profile holds.
  ProfileBuilder B;
  B.allocate(1 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  for (int It = 0; It < 3; ++It) {
    B.allocate(1 << 20, It * 1000, It * 1000 + 900);
    B.allocate(1 << 20, It * 1000 + 100, It * 1000 + 800);
  }
  format::ProfileSummary S = format::summarize(B.build());
  EXPECT_EQ(S.PeakLiveBytesByRole["activation"], 2u << 20);
  EXPECT_EQ(S.PeakLiveBytesByRole["parameter"], 1u << 20);
  EXPECT_EQ(S.PeakLiveBytes, 3u << 20);
}

TEST(Summary, PlanActionsByKind) {
  v1::Plan P;
  P.mutable_metadata()->set_strategy(v1::PLAN_STRATEGY_PREFETCH);
  for (auto Kind : {v1::ACTION_KIND_PREFETCH, v1::ACTION_KIND_PREFETCH, v1::ACTION_KIND_DISCARD}) {
    auto *A = P.add_actions();
    A->set_kind(Kind);
    auto *R = A->add_ranges();
    R->set_bytes(2 << 20);
    *A->add_ranges() = *R;
  }
  format::PlanSummary S = format::summarize(P);
  EXPECT_EQ(S.Actions["prefetch"].Count, 2u);
  EXPECT_EQ(S.Actions["prefetch"].Bytes, 8u << 20);
  EXPECT_EQ(S.Actions["discard"].Bytes, 4u << 20);
  EXPECT_EQ(S.Strategy, "prefetch");
}

TEST(Summary, SizesPastInt64NeitherWrapNorGoNegative) {
  // Two live allocations of 2^63 and 2^63 - 4 MiB: their sum fits uint64, not int64.
  constexpr uint64_t Half = uint64_t{1} << 63, TwoMiB = uint64_t{2} << 20;
  ProfileBuilder B;
  B.allocate(Half, 0, -1, v1::ALLOCATION_ROLE_PARAMETER, /*Address=*/TwoMiB);
  B.allocate(Half - 2 * TwoMiB, 10, 20, v1::ALLOCATION_ROLE_PARAMETER, /*Address=*/Half + TwoMiB);
  v1::Profile P = B.build();
  for (int I = 0; I < 2; ++I) {
    auto *M = P.add_migrations();
    M->set_direction(v1::MIGRATION_DIRECTION_DEVICE_TO_HOST);
    M->set_cause(v1::MIGRATION_CAUSE_EVICTION);
    M->set_bytes(UINT64_MAX - 1);
  }
  format::ProfileSummary S = format::summarize(P);
  EXPECT_EQ(S.PeakLiveBytes, 2 * Half - 2 * TwoMiB);
  EXPECT_EQ(S.PersistentBytes, Half);
  // Sums past uint64 saturate rather than wrap; the role peak is exact here.
  EXPECT_EQ(S.PeakLiveBytesByRole["parameter"], 2 * Half - 2 * TwoMiB);
  EXPECT_EQ(S.Migrations["dtoh"]["eviction"].Bytes, UINT64_MAX);
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  format::print(OS, S);
  EXPECT_NE(OS.str().find("peak live bytes    16.00 EiB"), std::string::npos) << Text;
  EXPECT_NE(Text.find("persistent bytes   8.00 EiB"), std::string::npos) << Text;
  llvm::json::Value J = format::toJson(S);
  EXPECT_EQ(J.getAsObject()->get("peak_live_bytes")->getAsUINT64(),
            llvm::Optional<uint64_t>(2 * Half - 2 * TwoMiB));

  // Footprint: blocks x block size saturates too.
  P.set_um_block_bytes(Half);
  v1::Kernel *K = P.add_kernels();
  for (uint64_t Block : {1, 2, 3})
    K->add_blocks()->set_block(Block);
  EXPECT_EQ(format::summarize(P).FootprintBytes, UINT64_MAX);

  v1::Plan Plan;
  for (int I = 0; I < 3; ++I) {
    auto *A = Plan.add_actions();
    A->set_kind(v1::ACTION_KIND_PREFETCH);
    A->add_ranges()->set_bytes(Half);
  }
  EXPECT_EQ(format::summarize(Plan).Actions["prefetch"].Bytes, UINT64_MAX);
}

} // namespace
