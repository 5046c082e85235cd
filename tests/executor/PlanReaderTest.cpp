//===- PlanReaderTest.cpp - The executor's own plan decoder ----------------===//
//
// libdeepum.so decodes plans without protobuf. These tests hold it to the
// format library: the same plan, written by deepum::format, compiles to the
// same index through both paths.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/CompiledPlan.h"

#include "ExecutorTestSupport.h"
#include "TestSupport.h"

#include "deepum/format/Format.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <fstream>

using namespace deepum::executor;
using deepum::test::kBlock;
using deepum::test::kMiB;
using deepum::test::PlanBuilder;
namespace v1 = deepum::v1;

namespace {

void expectSame(const CompiledPlan &A, const CompiledPlan &B) {
  EXPECT_EQ(A.ArenaBytes, B.ArenaBytes);
  EXPECT_EQ(A.UmBlockBytes, B.UmBlockBytes);
  EXPECT_EQ(A.GpuMemoryBytes, B.GpuMemoryBytes);
  EXPECT_EQ(A.Model, B.Model);
  EXPECT_EQ(A.PositionIds, B.PositionIds);
  EXPECT_EQ(A.IdPositions, B.IdPositions);
  EXPECT_EQ(A.PositionBlocks, B.PositionBlocks);
  EXPECT_EQ(A.FirstIterationSequence, B.FirstIterationSequence);
  EXPECT_EQ(A.ContextLength, B.ContextLength);
  EXPECT_EQ(A.ContextPositions, B.ContextPositions);
  ASSERT_EQ(A.Placements.size(), B.Placements.size());
  for (auto &[Seq, Pl] : A.Placements) {
    ASSERT_TRUE(B.Placements.count(Seq));
    EXPECT_EQ(Pl.Offset, B.Placements.at(Seq).Offset);
    EXPECT_EQ(Pl.Size, B.Placements.at(Seq).Size);
  }
  auto SameActions = [](const std::vector<std::vector<PlanAction>> &X,
                        const std::vector<std::vector<PlanAction>> &Y) {
    ASSERT_EQ(X.size(), Y.size());
    for (size_t I = 0; I < X.size(); ++I) {
      ASSERT_EQ(X[I].size(), Y[I].size());
      for (size_t J = 0; J < X[I].size(); ++J) {
        EXPECT_EQ(X[I][J].Kind, Y[I][J].Kind);
        EXPECT_EQ(X[I][J].DuePosition, Y[I][J].DuePosition);
        ASSERT_EQ(X[I][J].Ranges.size(), Y[I][J].Ranges.size());
        for (size_t K = 0; K < X[I][J].Ranges.size(); ++K) {
          EXPECT_EQ(X[I][J].Ranges[K].Address, Y[I][J].Ranges[K].Address);
          EXPECT_EQ(X[I][J].Ranges[K].Bytes, Y[I][J].Ranges[K].Bytes);
        }
      }
    }
  };
  SameActions(A.BeforeLaunch, B.BeforeLaunch);
  SameActions(A.AfterLaunch, B.AfterLaunch);
}

PlanBuilder richPlan() {
  PlanBuilder PB({10, 11, 10, 12, (uint64_t{1} << 63) + 5}, 32 * kBlock);
  PB.capacity(uint64_t{6} << 30)
      .place(0, 4 * kMiB, 0, true)
      .place(1, kMiB, 4 * kMiB)
      .place(7, 3 * kMiB, 8 * kMiB)
      .action(v1::ACTION_KIND_PREFETCH, 0, 2 * kBlock, 3 * kBlock, 2)
      .action(v1::ACTION_KIND_EVICT, 2, kBlock, kBlock, 1)
      .action(v1::ACTION_KIND_DISCARD, 3, 4 * kBlock, 100, 3)
      .chain(0, {0, 1, 2})
      .chain(4, {31, 7});
  auto *A = PB.proto().add_actions();
  A->set_kind(v1::ACTION_KIND_ADVISE);
  A->set_advice(v1::ADVICE_SET_READ_MOSTLY);
  A->set_position(1);
  auto *R = A->add_ranges();
  R->set_offset(0);
  R->set_bytes(kBlock);
  PB.proto().mutable_metadata()->set_model("resnet-ish");
  PB.proto().mutable_metadata()->set_context_length(2);
  PB.fingerprinted();
  for (int I = 0; I < PB.proto().position_ids_size(); ++I)
    PB.proto().add_position_contexts(0x1000 + static_cast<uint64_t>(I % 3));
  PB.proto().mutable_metadata()->set_summary("fields the executor skips");
  PB.proto().mutable_metadata()->add_ignored("so does this");
  // Actions are sorted by position (a plan rule).
  auto *Actions = PB.proto().mutable_actions();
  std::stable_sort(Actions->pointer_begin(), Actions->pointer_end(),
                   [](const v1::Action *X, const v1::Action *Y) { return X->position() < Y->position(); });
  return PB;
}

TEST(PlanReaderTest, DecodesWhatProtobufWrites) {
  PlanBuilder PB = richPlan();
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  RawPlan Raw;
  std::string Error;
  ASSERT_TRUE(decodePlan(Bytes, Raw, Error)) << Error;
  CompiledPlan Mine, Theirs;
  ASSERT_TRUE(compileRawPlan(Raw, "x", Mine, Error)) << Error;
  ASSERT_TRUE(compilePlan(PB.proto(), "x", Theirs, Error)) << Error;
  expectSame(Mine, Theirs);
  EXPECT_EQ(Mine.Model, "resnet-ish");
  EXPECT_EQ(Mine.GpuMemoryBytes, uint64_t{6} << 30);
  EXPECT_EQ(Mine.ContextLength, 2u);
  EXPECT_EQ(Raw.ProfileFingerprint, PB.proto().metadata().profile_fingerprint());
  EXPECT_NE(Raw.ProfileFingerprint, 0u);
}

TEST(PlanReaderTest, ReadsFilesWrittenByTheFormatLibrary) {
  std::string Dir = deepum::test::scratchDir("PlanReaderFiles");
  PlanBuilder PB = richPlan();
  for (std::string Name : {"plan.pb", "plan.pb.gz"}) {
    std::string Path = Dir + "/" + Name;
    if (auto Err = deepum::format::writePlan(PB.proto(), Path)) {
      // The format library validates strictly; write raw bytes instead.
      llvm::consumeError(std::move(Err));
      std::string Bytes;
      ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
      if (Name.ends_with(".gz"))
        continue;
      std::ofstream(Path, std::ios::binary) << Bytes;
    }
    CompiledPlan Mine, Theirs;
    std::string Error;
    ASSERT_TRUE(readCompiledPlan(Path, Mine, Error)) << Error;
    ASSERT_TRUE(compilePlan(PB.proto(), Path, Theirs, Error)) << Error;
    expectSame(Mine, Theirs);
  }
}

TEST(PlanReaderTest, RefusesGarbageAndTruncation) {
  PlanBuilder PB = richPlan();
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  RawPlan Raw;
  std::string Error;
  for (size_t Cut : {Bytes.size() / 3, Bytes.size() / 2, Bytes.size() - 1}) {
    std::string Part = Bytes.substr(0, Cut);
    CompiledPlan CP;
    bool Ok = decodePlan(Part, Raw, Error) && compileRawPlan(Raw, "cut", CP, Error);
    // A cut may land on a field boundary and still decode; it must then
    // compile or be refused, never crash.
    (void)Ok;
  }
  EXPECT_FALSE(
      decodePlan(std::string("\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 11), Raw, Error));
  EXPECT_FALSE(decodePlan("this is not a plan", Raw, Error));
  CompiledPlan CP;
  EXPECT_FALSE(readCompiledPlan("/nonexistent/x.pb", CP, Error));
  EXPECT_NE(Error.find("/nonexistent/x.pb"), std::string::npos);
}

TEST(PlanReaderTest, RefusesOtherFormatVersions) {
  PlanBuilder PB = richPlan();
  PB.proto().set_format_version(7);
  std::string Bytes, Error;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  RawPlan Raw;
  ASSERT_TRUE(decodePlan(Bytes, Raw, Error));
  CompiledPlan CP;
  EXPECT_FALSE(compileRawPlan(Raw, "v7", CP, Error));
  EXPECT_NE(Error.find("version"), std::string::npos);
}

// Real plans from the planner decode identically both ways: see
// SimClosedLoopTest.ShippedModels, which compiles them from the shipped profiles.

} // namespace
