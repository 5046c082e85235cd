//===- StatsTest.cpp - The executor's JSON report (deepum_stats_json) -------===//
//
// Parses the report with llvm::json and checks that each field moves when the
// thing it counts happens, and that an executor not replaying its plan says
// why (no plan, a refused plan, launches not observable, plan turned off).
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/Executor.h"
#include "deepum/executor/FakeBackend.h"
#include "deepum/executor/Log.h"
#include "deepum/format/Format.h"

#include "ExecutorTestSupport.h"
#include "JsonKeys.h"
#include "TestSupport.h"

#include "gtest/gtest.h"
#include "llvm/Support/JSON.h"

#include <cstdio>
#include <fstream>
#include <string>

using namespace deepum::executor;
using deepum::test::kBlock;
using deepum::test::kMiB;
using deepum::test::PlanBuilder;
namespace v1 = deepum::v1;
namespace json = llvm::json;

namespace {
constexpr StreamHandle S1 = 0x101;

/// The report of one device (or every device), parsed.
json::Value reportOf(const Executor &E, int Device = 0) {
  std::string Text;
  EXPECT_TRUE(E.statsJson(Device, Text));
  auto V = json::parse(Text);
  if (!V) {
    ADD_FAILURE() << "not JSON: " << llvm::toString(V.takeError()) << "\n" << Text;
    return json::Value(nullptr);
  }
  return std::move(*V);
}

uint64_t num(const json::Value &V, llvm::StringRef Key, llvm::StringRef Sub = "") {
  const json::Object *O = V.getAsObject();
  if (!O)
    return ~uint64_t{0};
  if (!Sub.empty()) {
    O = O->getObject(Key);
    if (!O)
      return ~uint64_t{0};
    Key = Sub;
  }
  const json::Value *X = O->get(Key);
  llvm::Optional<uint64_t> U = X ? X->getAsUINT64() : llvm::None;
  EXPECT_TRUE(U.hasValue()) << "no number at " << Key.str();
  return U.getValueOr(~uint64_t{0});
}

std::string str(const json::Value &V, llvm::StringRef Key) {
  const json::Object *O = V.getAsObject();
  llvm::Optional<llvm::StringRef> S = O ? O->getString(Key) : llvm::None;
  return S ? S->str() : "<absent>";
}

bool flag(const json::Value &V, llvm::StringRef Key) {
  const json::Object *O = V.getAsObject();
  llvm::Optional<bool> B = O ? O->getBoolean(Key) : llvm::None;
  EXPECT_TRUE(B.hasValue()) << "no boolean at " << Key.str();
  return B.getValueOr(false);
}

const json::Object &plan(const json::Value &V) {
  static const json::Object Empty;
  const json::Object *O = V.getAsObject();
  const json::Object *P = O ? O->getObject("plan") : nullptr;
  return P ? *P : Empty;
}

TEST(StatsTest, WithoutAPlanSaysSo) {
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  json::Value R = reportOf(E);
  EXPECT_EQ(num(R, "schema"), 1u);
  EXPECT_EQ(num(R, "device"), 0u);
  EXPECT_EQ(str(R, "backend"), "fake");
  ASSERT_NE(R.getAsObject()->get("plan"), nullptr);
  EXPECT_EQ(*R.getAsObject()->get("plan"), json::Value(nullptr));
  EXPECT_FALSE(flag(R, "active"));
  EXPECT_NE(str(R, "why_not").find("no plan"), std::string::npos) << str(R, "why_not");
  EXPECT_TRUE(flag(R, "launch_tracking"));
  EXPECT_EQ(num(R, "memory", "allocations"), 0u);
  void *P = E.allocate(4096, 0, S1);
  ASSERT_NE(P, nullptr);
  B.launch(0, S1, 77);
  R = reportOf(E);
  EXPECT_EQ(num(R, "memory", "allocations"), 1u);
  EXPECT_EQ(num(R, "memory", "bytes_in_use"), 4096u);
  EXPECT_EQ(num(R, "launches", "seen"), 1u);
  EXPECT_EQ(num(R, "launches", "matched"), 0u);
  E.deallocate(P, 0, S1);
  EXPECT_EQ(num(reportOf(E), "memory", "frees"), 1u);
  std::string Text;
  EXPECT_FALSE(E.statsJson(kMaxDevices, Text));
  EXPECT_FALSE(E.statsJson(1, Text)); // one device only
}

TEST(StatsTest, ARefusedPlanSaysWhy) {
  std::string Dir = deepum::test::scratchDir("StatsRefusedPlan");
  std::string Path = Dir + "/bad \"quoted\".plan.pb";
  std::ofstream(Path) << "this is not a plan";
  FakeBackend B;
  ExecutorConfig C;
  C.PlanPaths[kAllDevices] = Path;
  LogCapture::start();
  Executor E(B, C);
  (void)LogCapture::stop();
  json::Value R = reportOf(E);
  EXPECT_FALSE(flag(R, "active"));
  const std::string Why = str(R, "why_not");
  EXPECT_EQ(Why.rfind("plan refused: ", 0), 0u) << Why;
  EXPECT_NE(Why.find(Path), std::string::npos) << Why; // the reader's message names the file
  EXPECT_EQ(plan(R).getString("path"), llvm::StringRef(Path));
  EXPECT_EQ(plan(R).getBoolean("loaded"), false);
}

TEST(StatsTest, UnobservableLaunchesSayWhy) {
  FakeBackend B;
  B.refuseTracking("another tool holds the CUPTI subscriber");
  LogCapture::start();
  Executor E(B, ExecutorConfig{});
  (void)LogCapture::stop();
  PlanBuilder PB({10, 11});
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  json::Value R = reportOf(E);
  EXPECT_FALSE(flag(R, "active"));
  EXPECT_FALSE(flag(R, "launch_tracking"));
  EXPECT_EQ(str(R, "why_not"),
            "launch tracking unavailable: another tool holds the CUPTI subscriber");
  EXPECT_EQ(plan(R).getString("path"), llvm::StringRef("test.plan"));
  EXPECT_EQ(plan(R).getBoolean("loaded"), true);
}

TEST(StatsTest, APlanThatTurnedItselfOffSaysWhy) {
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  PlanBuilder PB({10, 11, 12});
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  EXPECT_TRUE(flag(reportOf(E), "active"));
  EXPECT_EQ(*reportOf(E).getAsObject()->get("why_not"), json::Value(nullptr));
  LogCapture::start();
  for (uint64_t I = 0; I < 300; ++I)
    B.launch(0, S1, 5000 + I % 40);
  (void)LogCapture::stop();
  json::Value R = reportOf(E);
  EXPECT_FALSE(flag(R, "active"));
  const std::string Why = str(R, "why_not");
  EXPECT_EQ(Why.rfind("plan turned off: ", 0), 0u) << Why;
  EXPECT_NE(Why.find("different model"), std::string::npos) << Why;
  EXPECT_EQ(num(R, "launches", "seen"), 300u);
}

/// A backend whose launch decoding missed some launches.
class UndecodingBackend : public deepum::test::ForwardingBackend {
public:
  uint64_t undecodedLaunches() override { return Undecoded; }
  uint64_t Undecoded = 0;
};

TEST(StatsTest, EachCountMovesWithWhatItCounts) {
  UndecodingBackend B;
  Executor E(B, ExecutorConfig{});
  // Positions: 0 prefetches block 2 and advises on block 3, 1 evicts block 2
  // (used by 0), 2 discards block 4 after its launch; every position touches
  // its own block, under a budget of two blocks.
  PlanBuilder PB({10, 11, 12, 13});
  { // actions in position order: this one first
    auto *A = PB.proto().add_actions();
    A->set_kind(v1::ACTION_KIND_ADVISE);
    A->set_position(0);
    A->set_advice(v1::ADVICE_SET_READ_MOSTLY);
    auto *Rg = A->add_ranges();
    Rg->set_offset(3 * kBlock);
    Rg->set_bytes(kBlock);
  }
  PB.action(v1::ACTION_KIND_PREFETCH, 0, 2 * kBlock, kBlock, 0)
      .action(v1::ACTION_KIND_EVICT, 1, 2 * kBlock, kBlock, 0)
      .action(v1::ACTION_KIND_DISCARD, 2, 4 * kBlock, kBlock, 2)
      .chain(0, {2})
      .chain(1, {5})
      .chain(2, {6})
      .chain(3, {7});
  PB.fingerprinted();
  char Hex[20];
  std::snprintf(Hex, sizeof Hex, "%016llx",
                static_cast<unsigned long long>(PB.proto().metadata().profile_fingerprint()));
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 2 * kBlock));

  json::Value R = reportOf(E);
  EXPECT_TRUE(flag(R, "active"));
  EXPECT_EQ(plan(R).getString("profile_fingerprint"), llvm::StringRef(Hex));
  EXPECT_EQ(plan(R).getString("fingerprint_check"), llvm::StringRef("pending"));
  EXPECT_EQ(num(R, "budget_bytes"), 2 * kBlock);
  for (const char *K : {"prefetch", "evict", "discard", "advise"}) {
    EXPECT_EQ(num(R, K, "calls"), 0u) << K;
    EXPECT_EQ(num(R, K, "bytes"), 0u) << K;
  }
  EXPECT_EQ(num(R, "peak_resident_bytes"), 0u);

  B.Inner.launch(0, S1, 10);
  R = reportOf(E);
  EXPECT_EQ(num(R, "prefetch", "calls"), 1u);
  EXPECT_EQ(num(R, "prefetch", "bytes"), kBlock);
  EXPECT_EQ(num(R, "advise", "calls"), 1u);
  EXPECT_EQ(num(R, "advise", "bytes"), kBlock);
  EXPECT_EQ(num(R, "launches", "matched"), 1u);
  EXPECT_EQ(num(R, "peak_resident_bytes"), kBlock);

  B.Inner.launch(0, S1, 11);
  R = reportOf(E);
  EXPECT_EQ(num(R, "evict", "calls"), 1u);
  EXPECT_EQ(num(R, "evict", "bytes"), kBlock);

  B.Inner.launch(0, S1, 12);
  R = reportOf(E);
  EXPECT_EQ(num(R, "discard", "calls"), 1u);
  EXPECT_EQ(num(R, "discard", "bytes"), kBlock);
  // Blocks 5 and 6 resident; 7 comes next, over the budget of two.
  EXPECT_EQ(num(R, "peak_resident_bytes"), 2 * kBlock);
  EXPECT_EQ(num(R, "budget_eviction_bytes"), 0u);
  B.Inner.launch(0, S1, 13);
  R = reportOf(E);
  EXPECT_GT(num(R, "budget_eviction_bytes"), 0u);
  EXPECT_LE(num(R, "peak_resident_bytes"), 2 * kBlock);
  EXPECT_EQ(num(R, "iterations"), 1u); // the last position ends an iteration

  // Launches the cursor cannot place, then the plan again: a resync.
  const uint64_t Resyncs = num(R, "resyncs"); // the first launch synced
  for (uint64_t I = 0; I < 12; ++I)
    B.Inner.launch(0, S1, 900 + I);
  for (uint64_t Id : {10, 11, 12, 13, 10, 11})
    B.Inner.launch(0, S1, Id);
  R = reportOf(E);
  EXPECT_GT(num(R, "resyncs"), Resyncs);
  EXPECT_EQ(num(R, "launches", "seen"), 4u + 12u + 6u);
  EXPECT_TRUE(flag(R, "active"));

  EXPECT_EQ(num(R, "launches", "undecoded"), 0u);
  B.Undecoded = 3;
  EXPECT_EQ(num(reportOf(E), "launches", "undecoded"), 3u);

  EXPECT_EQ(num(R, "backend_errors"), 0u);
  B.Inner.failNext(FakeCallKind::Prefetch, 1);
  LogCapture::start();
  B.Inner.launch(0, S1, 12);
  B.Inner.launch(0, S1, 13);
  B.Inner.launch(0, S1, 10); // its prefetch fails
  (void)LogCapture::stop();
  EXPECT_EQ(num(reportOf(E), "backend_errors"), 1u);

  // The report agrees with deepum_stats_t.
  deepum_stats_t S{};
  ASSERT_TRUE(E.stats(0, S));
  R = reportOf(E);
  EXPECT_EQ(num(R, "prefetch", "calls"), S.prefetch_batches);
  EXPECT_EQ(num(R, "evict", "bytes"), S.evict_bytes);
  EXPECT_EQ(num(R, "discard", "bytes"), S.discard_bytes);
  EXPECT_EQ(num(R, "resident_bytes"), S.resident_bytes);
  EXPECT_EQ(num(R, "launches", "matched"), S.launches_matched);
}

TEST(StatsTest, PeakBytesInUseIsOnePeakAtOneTime) {
  FakeBackend B;
  Executor E(B, ExecutorConfig{});
  PlanBuilder PB({10});
  PB.place(0, 4 * kMiB, 0);
  ASSERT_TRUE(E.setPlan(0, PB.compiled(), 0));
  // The arena's 4 MiB, freed before the pool's 6 MiB: never 10 MiB at once.
  void *Planned = E.allocate(4 * kMiB, 0, S1);
  ASSERT_EQ(reinterpret_cast<uintptr_t>(Planned), E.arenaBase(0));
  E.deallocate(Planned, 0, S1);
  void *Unplanned = E.allocate(6 * kMiB, 0, S1);
  ASSERT_NE(Unplanned, nullptr);
  json::Value R = reportOf(E);
  EXPECT_EQ(num(R, "memory", "peak_bytes_in_use"), 6 * kMiB);
  // Both live at once: then the peak is their sum.
  void *Second = E.allocate(2 * kMiB, 0, S1);
  ASSERT_NE(Second, nullptr);
  EXPECT_EQ(num(reportOf(E), "memory", "peak_bytes_in_use"), 8 * kMiB);
  E.deallocate(Second, 0, S1);
  E.deallocate(Unplanned, 0, S1);
  EXPECT_EQ(num(reportOf(E), "memory", "peak_bytes_in_use"), 8 * kMiB);
}

// libdeepum's report's field names per schema version (docs/tools.md,
// docs/executor.md): one device's, with a plan file named, and every device's.
TEST(StatsTest, JsonFieldsArePinnedPerSchemaVersion) {
  const std::map<int64_t, std::set<std::string>> Device = {
      {1,
       {"schema", "device", "backend", "plan", "plan.path", "plan.loaded",
        "plan.profile_fingerprint", "plan.fingerprint_check", "active", "why_not",
        "launch_tracking", "launches", "launches.seen", "launches.matched", "launches.undecoded",
        "launches.inserted", "launches.positions_missing", "resyncs", "iterations", "prefetch",
        "prefetch.calls", "prefetch.bytes", "evict", "evict.calls", "evict.bytes", "discard",
        "discard.calls", "discard.bytes", "advise", "advise.calls", "advise.bytes",
        "discards_kept_live_bytes", "budget_eviction_bytes", "backend_errors", "guard",
        "guard.restores", "guard.bytes", "guard.waits", "guard.copy_in_bytes", "guard.wait_ns",
        "guard.blind_launches", "copy", "copy.pool_bytes", "copy.out_bytes", "copy.in_bytes",
        "copy.fallback_bytes", "copy.pooled_bytes", "copy.peak_pooled_bytes",
        "copy.restore_all_bytes", "budget_bytes",
        "resident_bytes", "peak_resident_bytes", "memory", "memory.allocations", "memory.frees",
        "memory.bytes_in_use", "memory.peak_bytes_in_use", "memory.bytes_reserved",
        "memory.arena_placements", "memory.placement_misses"}}};
  const std::map<int64_t, std::set<std::string>> All = {{1, {"schema", "devices"}}};
  std::string Dir = deepum::test::scratchDir("StatsPinned");
  std::string Path = Dir + "/p.plan.pb";
  PlanBuilder PB({10, 11});
  PB.fingerprinted();
  ASSERT_FALSE(static_cast<bool>(deepum::format::writePlan(PB.proto(), Path)));
  FakeBackend B;
  ExecutorConfig C;
  C.PlanPaths[kAllDevices] = Path;
  Executor E(B, C);
  ASSERT_TRUE(E.planActive(0));
  deepum::test::expectPinnedKeys(reportOf(E), Device, {}, "libdeepum's report (a device)");
  deepum::test::expectPinnedKeys(reportOf(E, kAllDevices), All, {}, "libdeepum's report (all)");
}

TEST(StatsTest, EveryDeviceInOneObject) {
  FakeBackend B({.Devices = 2});
  Executor E(B, ExecutorConfig{});
  PlanBuilder PB({10, 11});
  ASSERT_TRUE(E.setPlan(1, PB.compiled(), 0));
  json::Value R = reportOf(E, kAllDevices);
  EXPECT_EQ(num(R, "schema"), 1u);
  const json::Array *Devices = R.getAsObject()->getArray("devices");
  ASSERT_NE(Devices, nullptr);
  ASSERT_EQ(Devices->size(), 2u);
  EXPECT_EQ(num((*Devices)[0], "device"), 0u);
  EXPECT_FALSE(flag((*Devices)[0], "active"));
  EXPECT_EQ(num((*Devices)[1], "device"), 1u);
  EXPECT_TRUE(flag((*Devices)[1], "active"));
}

} // namespace
