//===- HostilePlanTest.cpp - No plan file can break a training process -----===//
//
// Regression tests for hostile plans, each built from a minimal input: a plan
// that would place memory outside the arena or on live memory, files that
// block or never end, plans whose tables would not fit in memory, block
// sizes that make every launch scan the arena, and inputs on which libdeepum's
// reader and protobuf's used to disagree. Whatever the file, libdeepum loads
// it once, says once why not, and runs unplanned.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/CompiledPlan.h"
#include "deepum/executor/Executor.h"
#include "deepum/format/Format.h"
#include "deepum/format/PlanWire.h"

#include "ExecutorTestSupport.h"
#include "TestSupport.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <zlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

using namespace deepum::executor;
using deepum::test::addIdTable;
using deepum::test::kBlock;
using deepum::test::kMiB;
using deepum::test::PlanBuilder;
using testing::HasSubstr;
namespace v1 = deepum::v1;
namespace format = deepum::format;

namespace {

std::string scratch(const std::string &Name) {
  std::string Dir = deepum::test::scratchDir("HostilePlan");
  return Dir + "/" + Name;
}

void writeFile(const std::string &Path, const std::string &Bytes) {
  std::ofstream(Path, std::ios::binary | std::ios::trunc) << Bytes;
}

std::string compileError(const v1::Plan &P) {
  CompiledPlan CP;
  std::string Error;
  if (compilePlan(P, "hostile.plan.pb", CP, Error))
    return "";
  return Error;
}

/// Both readers' verdicts on raw bytes; they must agree (D14).
struct Verdicts {
  bool Format = false, Deepum = false;
  std::string FormatError, DeepumError;
  RawPlan FromFormat, FromDeepum;
};
Verdicts judge(const std::string &Bytes) {
  Verdicts V;
  auto P = format::parsePlan(Bytes, "x.plan.pb");
  V.Format = static_cast<bool>(P);
  if (P)
    V.FromFormat = format::rawPlanFromProto(*P);
  else
    V.FormatError = llvm::toString(P.takeError());
  CompiledPlan CP;
  V.Deepum = decodePlan(Bytes, V.FromDeepum, V.DeepumError) &&
             compileRawPlan(V.FromDeepum, "x", CP, V.DeepumError);
  return V;
}

// --- D1: placements outside the arena or on live memory --------------------

TEST(HostilePlanTest, PlacementThatWrapsAroundIsRejected) {
  // offset + size wraps to 1 MiB: before, the placement "fit" in the arena and
  // deepum_malloc returned ArenaBase + 2^64 - 1 MiB.
  PlanBuilder PB({1, 2});
  PB.place(0, 2 * kMiB, ~uint64_t{0} - kMiB + 1);
  EXPECT_THAT(compileError(PB.proto()), HasSubstr("outside the arena"));
}

TEST(HostilePlanTest, PlacementPastTheArenaIsRejected) {
  PlanBuilder PB({1, 2}, 4 * kBlock);
  PB.place(0, kBlock, 3 * kBlock + 4096);
  EXPECT_THAT(compileError(PB.proto()), HasSubstr("outside the arena"));
}

TEST(HostilePlanTest, LivePlacementsOverlappingInTheArenaAreRejected) {
  PlanBuilder PB({1, 2});
  PB.proto().mutable_layout()->set_ticks(10);
  PB.place(0, kBlock, 0).place(1, kBlock, kBlock / 2);
  auto *Pls = PB.proto().mutable_layout()->mutable_placements();
  Pls->Mutable(0)->set_live_begin(0);
  Pls->Mutable(0)->set_live_end(6);
  Pls->Mutable(1)->set_live_begin(5); // both live at tick 5
  Pls->Mutable(1)->set_live_end(9);
  EXPECT_THAT(compileError(PB.proto()), HasSubstr("overlap in the arena while both are live"));
  // Disjoint in time, the same bytes are fine: that is what the layout is for.
  Pls->Mutable(1)->set_live_begin(6);
  EXPECT_EQ(compileError(PB.proto()), "");
  // A wrapped tail [0, 2) meets the first placement's [0, 6).
  Pls->Mutable(1)->set_wrap_end(2);
  EXPECT_THAT(compileError(PB.proto()), HasSubstr("overlap"));
  // Placements without lifetimes (a plan of the previous format, below) may
  // share bytes with each other, never with a persistent one.
  PlanBuilder Old({1, 2});
  Old.place(0, kBlock, 0).place(1, kBlock, kBlock - 512);
  EXPECT_EQ(compileError(Old.proto()), "");
  Old.place(2, kBlock, 4 * kBlock, true).place(3, kBlock, 5 * kBlock - 1);
  EXPECT_THAT(compileError(Old.proto()), HasSubstr("allocations 2 and 3 overlap"));
  PlanBuilder Persistent({1, 2});
  Persistent.proto().mutable_layout()->set_ticks(4);
  Persistent.place(0, kBlock, 0, true).place(1, kBlock, 0);
  auto *Q = Persistent.proto().mutable_layout()->mutable_placements(1);
  Q->set_live_begin(1);
  Q->set_live_end(2);
  EXPECT_THAT(compileError(Persistent.proto()), HasSubstr("overlap"));
}

TEST(HostilePlanTest, APlanOfThePreviousFormatIsReplayedAsItsPlannerMeantIt) {
  // deepum-plan before lifetimes (format_version 1 all along): a persistent
  // region, then per-iteration placements whose offsets repeat where their
  // lifetimes, known to the planner only, did not meet. Both readers once
  // refused it ("placements for allocations 1 and 3 overlap ...").
  PlanBuilder PB({1, 2, 3});
  PB.place(0, 2 * kMiB, 0, true)
      .place(1, kMiB, 2 * kMiB)
      .place(2, kMiB, 3 * kMiB)
      .place(3, kMiB, 2 * kMiB); // 1's bytes, once 1 is freed
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  Verdicts V = judge(Bytes);
  EXPECT_TRUE(V.Format) << V.FormatError;
  EXPECT_TRUE(V.Deepum) << V.DeepumError;
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  const uintptr_t Base = E.arenaBase(0);
  ASSERT_NE(Base, 0u);
  const StreamHandle S = 0x101;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(E.allocate(2 * kMiB, 0, S)), Base);
  for (int It = 0; It < 2; ++It) {
    E.markIteration();
    void *A = E.allocate(kMiB, 0, S);
    void *C = E.allocate(kMiB, 0, S);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(A), Base + 2 * kMiB);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(C), Base + 3 * kMiB);
    E.deallocate(A, 0, S);
    void *D = E.allocate(kMiB, 0, S);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(D), Base + 2 * kMiB);
    E.deallocate(C, 0, S);
    E.deallocate(D, 0, S);
  }
  // Were 1 still live when 3 is made, 3 would go to the pool: libdeepum
  // places nothing on live memory, whatever the plan says.
  E.markIteration();
  void *A = E.allocate(kMiB, 0, S);
  void *C = E.allocate(kMiB, 0, S);
  void *D = E.allocate(kMiB, 0, S);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(A), Base + 2 * kMiB);
  EXPECT_NE(reinterpret_cast<uintptr_t>(D), Base + 2 * kMiB);
  for (void *X : {A, C, D})
    E.deallocate(X, 0, S);
}

TEST(HostilePlanTest, LifetimeOutsideTheLayoutClockIsRejected) {
  PlanBuilder PB({1, 2});
  PB.proto().mutable_layout()->set_ticks(4);
  PB.place(0, kBlock, 0);
  auto *Pl = PB.proto().mutable_layout()->mutable_placements(0);
  Pl->set_live_begin(2);
  Pl->set_live_end(9);
  EXPECT_THAT(compileError(PB.proto()), HasSubstr("invalid lifetime"));
  Pl->set_live_end(3);
  Pl->set_wrap_end(3); // the tail would overlap its own head
  EXPECT_THAT(compileError(PB.proto()), HasSubstr("invalid lifetime"));
}

TEST(HostilePlanTest, CallIndicesOnlyOnPersistentPlacementsAndNeverTwice) {
  // One call is one allocation: two placements by one call would hand out two
  // ranges for one request, or the same range twice.
  PlanBuilder Twice({1, 2});
  Twice.place(0, kBlock, 0, true, 7).place(1, kBlock, kBlock, true, 7);
  EXPECT_THAT(compileError(Twice.proto()), HasSubstr("share call index 7"));
  // Placement by call is for what the first step keeps; a per-iteration one
  // is matched by sequence.
  PlanBuilder Transient({1, 2});
  Transient.place(0, kBlock, 0, false, 3);
  EXPECT_THAT(compileError(Transient.proto()), HasSubstr("has a call index but is not persistent"));
  // One past the largest index would wrap: indices near 2^64 are refused.
  PlanBuilder Huge({1, 2});
  Huge.place(0, kBlock, 0, true, ~uint64_t{0});
  EXPECT_THAT(compileError(Huge.proto()), HasSubstr("beyond any process's allocation calls"));
  PlanBuilder Fine({1, 2});
  Fine.place(0, kBlock, 0, true, 3).place(1, kBlock, kBlock, true, 9).place(2, kBlock, 2 * kBlock);
  EXPECT_EQ(compileError(Fine.proto()), "");
  // Both readers decode the field alike.
  Verdicts V = judge(Fine.proto().SerializeAsString());
  ASSERT_TRUE(V.Format && V.Deepum) << V.FormatError << V.DeepumError;
  EXPECT_EQ(V.FromFormat.Placements, V.FromDeepum.Placements);
  ASSERT_EQ(V.FromDeepum.Placements.size(), 3u);
  EXPECT_EQ(V.FromDeepum.Placements[1].CallIndex, 9u);
}

TEST(HostilePlanTest, ProfiledCallSizesAgreeWithThePlacementsAndAreBounded) {
  // A placement by call must find its own size there (or 0: not recorded);
  // the list without any placement by call, or longer than kMaxPrologueCalls,
  // is refused; both readers decode it alike.
  PlanBuilder Disagrees({1, 2});
  Disagrees.place(0, kBlock, 0, true, 2).prologueCalls({kBlock, 3 * kBlock});
  EXPECT_THAT(compileError(Disagrees.proto()), HasSubstr("disagrees with the layout's size"));
  PlanBuilder Short({1, 2});
  Short.place(0, kBlock, 0, true, 3).prologueCalls({kBlock, kBlock});
  EXPECT_THAT(compileError(Short.proto()), HasSubstr("disagrees with the layout's size"));
  PlanBuilder Orphan({1, 2});
  Orphan.place(0, kBlock, 0, true).prologueCalls({kBlock});
  EXPECT_THAT(compileError(Orphan.proto()), HasSubstr("no placement has a call index"));
  PlanBuilder Long({1, 2});
  Long.place(0, kBlock, 0, true, 1)
      .prologueCalls(std::vector<uint64_t>(format::kMaxPrologueCalls + 1, kBlock));
  EXPECT_THAT(compileError(Long.proto()), HasSubstr("more than"));
  PlanBuilder Fine({1, 2});
  Fine.place(0, kBlock, 0, true, 2).place(1, kBlock, kBlock, true, 4).prologueCalls(
      {3 * kBlock, kBlock, 0, 0});
  EXPECT_EQ(compileError(Fine.proto()), "");
  Verdicts V = judge(Fine.proto().SerializeAsString());
  ASSERT_TRUE(V.Format && V.Deepum) << V.FormatError << V.DeepumError;
  EXPECT_EQ(V.FromFormat.PrologueCallBytes, V.FromDeepum.PrologueCallBytes);
  EXPECT_EQ(V.FromDeepum.PrologueCallBytes, (std::vector<uint64_t>{3 * kBlock, kBlock, 0, 0}));
}

TEST(HostilePlanTest, ActionRangeThatWrapsIsRejected) {
  PlanBuilder PB({1, 2}, 0);
  PB.action(v1::ACTION_KIND_PREFETCH, 0, ~uint64_t{0} - 10, 100);
  EXPECT_THAT(compileError(PB.proto()), HasSubstr("wraps around"));
}

TEST(HostilePlanTest, TheExecutorNeverHandsOutMemoryOutsideItsArena) {
  // The wrapping placement through a file and the executor: the plan is
  // refused once, and every allocation comes from memory deepum owns.
  PlanBuilder PB({1, 2});
  PB.place(0, 2 * kMiB, ~uint64_t{0} - kMiB + 1);
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  const std::string Path = scratch("wrap.plan.pb");
  writeFile(Path, Bytes);
  FakeBackend B({.RealMemory = true, .Record = false});
  ExecutorConfig C;
  C.PlanPaths[kAllDevices] = Path;
  C.TrackLaunches = false;
  Executor E(B, C);
  void *P = E.allocate(2 * kMiB, 0, 0);
  ASSERT_NE(P, nullptr);
  EXPECT_FALSE(E.planActive(0));
  std::memset(P, 0x5a, 2 * kMiB); // real memory: ASan would catch a stray pointer
  E.deallocate(P, 0, 0);
}

// --- D2: a failure while loading is final, and the training goes on ---------

class ThrowingBackend final : public deepum::test::ForwardingBackend {
public:
  ThrowingBackend() : ForwardingBackend({.Record = false}) {}
  BackendStatus allocateManaged(int D, uint64_t Bytes, void **Out) override {
    if (Bytes == ArenaBytes) {
      ++ArenaAttempts;
      throw std::bad_alloc();
    }
    return Inner.allocateManaged(D, Bytes, Out);
  }
  uint64_t ArenaBytes = 0;
  int ArenaAttempts = 0;
};

TEST(HostilePlanTest, AFailureWhileLoadingThePlanIsFinalAndAllocationsGoOn) {
  PlanBuilder PB({1, 2}, 8 * kBlock);
  PB.place(0, kMiB, 0);
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  const std::string Path = scratch("throws.plan.pb");
  writeFile(Path, Bytes);
  ThrowingBackend B;
  B.ArenaBytes = 8 * kBlock;
  ExecutorConfig C;
  C.PlanPaths[kAllDevices] = Path;
  C.TrackLaunches = false;
  Executor E(B, C);
  for (int I = 0; I < 5; ++I) {
    void *P = nullptr;
    ASSERT_NO_THROW(P = E.allocate(kMiB, 0, 0));
    EXPECT_NE(P, nullptr) << "allocation " << I;
    E.deallocate(P, 0, 0);
  }
  EXPECT_EQ(B.ArenaAttempts, 1); // loaded once, not once per allocation
  EXPECT_FALSE(E.planActive(0));
}

// --- D3: files that block, never end, or ask for unbounded memory ----------

TEST(HostilePlanTest, AFifoIsRefusedWithoutBlocking) {
  const std::string Path = scratch("fifo.plan.pb");
  ::unlink(Path.c_str());
  ASSERT_EQ(::mkfifo(Path.c_str(), 0600), 0);
  std::atomic<int> Done{0};
  std::string Error;
  std::thread T([&] {
    CompiledPlan CP;
    Done = readCompiledPlan(Path, CP, Error) ? 1 : 2;
  });
  for (int I = 0; I < 500 && !Done; ++I)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (!Done) { // blocked in open(): unblock it so the test can end
    int Fd = ::open(Path.c_str(), O_WRONLY | O_NONBLOCK);
    if (Fd >= 0)
      ::close(Fd);
  }
  T.join();
  EXPECT_EQ(Done.load(), 2);
  EXPECT_THAT(Error, HasSubstr("not a regular file"));
  ::unlink(Path.c_str());
}

TEST(HostilePlanTest, DevZeroAndDirectoriesAreRefused) {
  CompiledPlan CP;
  std::string Error;
  EXPECT_FALSE(readCompiledPlan("/dev/zero", CP, Error));
  EXPECT_THAT(Error, HasSubstr("/dev/zero: not a regular file"));
  EXPECT_FALSE(readCompiledPlan("/", CP, Error));
  EXPECT_THAT(Error, HasSubstr("not a regular file"));
}

TEST(HostilePlanTest, FilesOverTheCapAreRefusedBeforeReading) {
  const std::string Path = scratch("huge.plan.pb");
  writeFile(Path, "");
  ASSERT_EQ(::truncate(Path.c_str(), static_cast<off_t>(format::PlanLimits::kMaxFileBytes + 1)),
            0); // sparse: costs no disk
  CompiledPlan CP;
  std::string Error;
  EXPECT_FALSE(readCompiledPlan(Path, CP, Error));
  EXPECT_THAT(Error, HasSubstr("the limit for a plan"));
  // deepum-inspect applies the same cap to plans (it reads profiles up to 1 GiB).
  auto P = format::readPlan(Path);
  ASSERT_FALSE(static_cast<bool>(P));
  EXPECT_THAT(llvm::toString(P.takeError()), HasSubstr("larger than 256 MiB"));
  ::unlink(Path.c_str());
}

std::string gzip(const std::string &In) {
  z_stream Z{};
  EXPECT_EQ(deflateInit2(&Z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string Out(deflateBound(&Z, In.size()), '\0');
  Z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(In.data()));
  Z.avail_in = static_cast<uInt>(In.size());
  Z.next_out = reinterpret_cast<Bytef *>(Out.data());
  Z.avail_out = static_cast<uInt>(Out.size());
  EXPECT_EQ(deflate(&Z, Z_FINISH), Z_STREAM_END);
  Out.resize(Z.total_out);
  deflateEnd(&Z);
  return Out;
}

TEST(HostilePlanTest, AGzipBombStopsAtTheCap) {
  // ~260 KiB of gzip that inflates past 256 MiB: refused when the cap is
  // reached, with the buffer never larger than the cap.
  std::string Zeros(format::PlanLimits::kMaxFileBytes + (1 << 20), '\0');
  const std::string Bomb = gzip(Zeros);
  Zeros.clear();
  Zeros.shrink_to_fit();
  std::string Out, Error;
  EXPECT_FALSE(format::gunzipPlan(Bomb, Out, Error));
  EXPECT_THAT(Error, HasSubstr("more than 256 MiB"));
  EXPECT_LE(Out.size(), format::PlanLimits::kMaxFileBytes);
}

TEST(HostilePlanTest, GzipWithTrailingDataIsRefused) {
  PlanBuilder PB({1, 2});
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  const std::string Gz = gzip(Bytes);
  std::string Out, Error;
  ASSERT_TRUE(format::gunzipPlan(Gz, Out, Error)) << Error;
  EXPECT_EQ(Out, Bytes);
  EXPECT_FALSE(format::gunzipPlan(Gz + "garbage", Out, Error));
  EXPECT_THAT(Error, HasSubstr("after the end of the gzip stream"));
  EXPECT_FALSE(format::gunzipPlan(Gz + Gz, Out, Error)); // a second member
  EXPECT_FALSE(format::gunzipPlan(Gz.substr(0, Gz.size() - 3), Out, Error));
  EXPECT_THAT(Error, HasSubstr("truncated"));
}

TEST(HostilePlanTest, AHugeArenaInATinyFileIsRefused) {
  // The 53-byte shape: a valid plan whose arena (2^60 bytes) would size
  // per-block tables of gigabytes.
  PlanBuilder PB({1}, uint64_t{1} << 60);
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  EXPECT_LT(Bytes.size(), 64u);
  EXPECT_THAT(compileError(PB.proto()), HasSubstr("exceeds the limit"));
  // At the cap the plan loads, and what it costs is bounded by the cap.
  PlanBuilder AtCap({1}, format::PlanLimits::kMaxArenaBytes);
  CompiledPlan CP;
  std::string Error;
  ASSERT_TRUE(compilePlan(AtCap.proto(), "cap", CP, Error)) << Error;
  EXPECT_EQ(CP.ArenaBlocks, format::PlanLimits::kMaxArenaBlocks);
  EXPECT_EQ(CP.BlockUseStart.size(), format::PlanLimits::kMaxArenaBlocks + 1);
  EXPECT_TRUE(CP.BlockUses.empty());
  // Small blocks may not multiply the block count past its cap either.
  PlanBuilder Small({1}, uint64_t{1} << 40);
  Small.proto().mutable_metadata()->set_um_block_bytes(64 << 10);
  EXPECT_THAT(compileError(Small.proto()), HasSubstr("more than the limit"));
}

// --- D10: block sizes ------------------------------------------------------

TEST(HostilePlanTest, BlockSizesOutsideTheDriversAreRefused) {
  for (uint64_t Bytes : {uint64_t{0}, uint64_t{1}, uint64_t{512}, uint64_t{32} << 10,
                         (uint64_t{2} << 20) + 1, uint64_t{2} << 30, uint64_t{1} << 63}) {
    PlanBuilder PB({1, 2});
    PB.proto().mutable_metadata()->set_um_block_bytes(Bytes);
    EXPECT_THAT(compileError(PB.proto()), HasSubstr("um_block_bytes")) << Bytes;
  }
  for (uint64_t Bytes : {uint64_t{64} << 10, uint64_t{2} << 20, uint64_t{1} << 30}) {
    PlanBuilder PB({1, 2});
    PB.proto().mutable_metadata()->set_um_block_bytes(Bytes);
    EXPECT_EQ(compileError(PB.proto()), "") << Bytes;
  }
}

// --- D14: the two readers agree -------------------------------------------

/// A valid plan's bytes with `Extra` appended at the top level.
std::string withTail(const std::string &Extra) {
  PlanBuilder PB({7, 8, 7});
  PB.place(0, kMiB, 0).chain(0, {0, 1});
  std::string Bytes;
  EXPECT_TRUE(PB.proto().SerializeToString(&Bytes));
  return Bytes + Extra;
}

TEST(HostilePlanTest, TheReadersAgreeOnWireTypeMismatchesAndGroups) {
  struct Case {
    const char *Name;
    std::string Tail;
    bool Accepted;
  };
  const std::vector<Case> Cases = {
      // format_version (field 1) as fixed32: an unknown field to protobuf.
      {"known field, other wire type", std::string("\x0d\x01\x00\x00\x00", 5), true},
      // position_ids (field 5) as fixed64: unknown too.
      {"packed field as fixed64", std::string("\x29", 1) + std::string(8, '\x02'), true},
      // field 99, an unknown group holding a varint, properly closed.
      {"unknown group", std::string("\x9b\x06\x08\x01\x9c\x06", 6), true},
      {"group closed by another field", std::string("\x9b\x06\x08\x01\xa4\x06", 6), false},
      {"unclosed group", std::string("\x9b\x06\x08\x01", 4), false},
      {"end group at top level", std::string("\x0c", 1), false},
      {"tag zero", std::string("\x00", 1), false},
      {"field number zero", std::string("\x02\x00", 2), false},
      {"wire type 7", std::string("\x0f", 1), false},
      {"tag of six bytes", std::string("\x88\x80\x80\x80\x80\x00\x01", 7), false},
      {"varint of eleven bytes", std::string("\xa8\x06") + std::string(10, '\xff') + "\x01", false},
      {"length beyond the input", std::string("\xaa\x06\x05\x01", 4), false},
      // metadata.model (field 10 of field 2) with invalid UTF-8.
      {"invalid utf-8 string", std::string("\x12\x04\x52\x02\xc3\x28", 6), false},
      {"surrogate in a string", std::string("\x12\x05\x52\x03\xed\xa0\x80", 7), false},
      {"valid utf-8 string", std::string("\x12\x04\x52\x02\xc3\xa9", 6), true},
      // metadata.summary (field 7) with invalid UTF-8: unused, still checked.
      {"invalid utf-8 in an unused string", std::string("\x12\x03\x3a\x01\xff", 5), false},
      // A successor submessage that is itself corrupt.
      {"corrupt nested message", std::string("\x1a\x04\x08\x07\x1a\x05", 6), false},
  };
  for (const Case &C : Cases) {
    Verdicts V = judge(withTail(C.Tail));
    EXPECT_EQ(V.Format, C.Accepted) << C.Name << ": " << V.FormatError;
    EXPECT_EQ(V.Deepum, V.Format) << C.Name << ": format says " << V.FormatError
                                  << "; libdeepum says " << V.DeepumError;
    if (V.Format && V.Deepum) {
      EXPECT_TRUE(V.FromFormat == V.FromDeepum) << C.Name;
    }
  }
}

TEST(HostilePlanTest, TheReadersAgreeOnTheProfileFingerprint) {
  // The fingerprint was once the executor's rule alone: deepum-inspect
  // accepted a plan whose launch sequence was edited under it, libdeepum
  // refused it at load. Now both refuse it in the same words, and unknown
  // groups or known field numbers of another wire type change nothing.
  PlanBuilder PB({7, 8, 7});
  PB.place(0, kMiB, 0).chain(0, {0, 1}).fingerprinted();
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  struct Case {
    const char *Name;
    std::string Tail;
    bool Accepted;
  };
  const std::vector<Case> Cases = {
      {"as written", "", true},
      {"an unknown group", std::string("\x9b\x06\x08\x01\x9c\x06", 6), true},
      // execution_ids (field 3) as fixed32: its 4 bytes would read as two
      // position ids if taken for fields; both skip them.
      {"a message field as fixed32", std::string("\x1d\x28\x07\x28\x07", 5), true},
      // position_ids (field 5) as a group holding a varint: skipped whole.
      {"position ids as a group", std::string("\x2b\x28\x07\x2c", 4), true},
      {"one more position, unpacked", std::string("\x28\x07", 2), false},
      {"one more position, packed", std::string("\x2a\x01\x08", 3), false},
  };
  for (const Case &C : Cases) {
    Verdicts V = judge(Bytes + C.Tail);
    EXPECT_EQ(V.Format, C.Accepted) << C.Name << ": " << V.FormatError;
    EXPECT_EQ(V.Deepum, V.Format) << C.Name << ": format says " << V.FormatError
                                  << "; libdeepum says " << V.DeepumError;
    if (V.Format && V.Deepum) {
      EXPECT_TRUE(V.FromFormat == V.FromDeepum) << C.Name;
    }
    if (!C.Accepted) {
      EXPECT_THAT(V.DeepumError, HasSubstr("the plan's profile fingerprint")) << C.Name;
      EXPECT_THAT(V.FormatError, HasSubstr(V.DeepumError)) << C.Name;
    }
  }
}

TEST(HostilePlanTest, TheReadersAgreeOnNestingDepth) {
  // Unknown groups nested 100 deep are within protobuf's recursion limit at
  // the top level; 101 are not.
  for (int Depth : {99, 100, 101, 150}) {
    std::string Open, Close;
    for (int I = 0; I < Depth; ++I) {
      Open += "\x9b\x06";
      Close += "\x9c\x06";
    }
    Verdicts V = judge(withTail(Open + Close));
    EXPECT_EQ(V.Deepum, V.Format) << Depth << ": " << V.FormatError << " / " << V.DeepumError;
    EXPECT_EQ(V.Format, Depth <= 100) << Depth;
  }
}

TEST(HostilePlanTest, TheReadersAgreeOnMergedAndRepeatedFields) {
  // A second metadata message merges into the first; a repeated scalar takes
  // the last value; unpacked and packed position ids mix.
  std::string Tail = std::string("\x12\x03\x52\x01z", 5) + // metadata.model = "z"
                     std::string("\x08\x01", 2) +          // format_version again
                     std::string("\x28\x07", 2);           // position_ids += 7 (unpacked)
  Verdicts V = judge(withTail(Tail));
  ASSERT_TRUE(V.Format) << V.FormatError;
  ASSERT_TRUE(V.Deepum) << V.DeepumError;
  EXPECT_TRUE(V.FromFormat == V.FromDeepum);
  EXPECT_EQ(V.FromDeepum.Model, "z");
  EXPECT_EQ(V.FromDeepum.PositionIds.back(), 7u);
  EXPECT_EQ(V.FromDeepum.UmBlockBytes, kBlock);
}

} // namespace
