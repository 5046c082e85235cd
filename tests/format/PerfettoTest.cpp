//===- PerfettoTest.cpp - Timelines are valid, sorted trace-event JSON ------===//
#include "TestSupport.h"

#include "deepum/format/Perfetto.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <map>

using namespace deepum;
using namespace deepum::test;

namespace {

/// Checks the trace-event rules ui.perfetto.dev relies on; returns events by phase.
std::map<std::string, int> checkTrace(const std::string &Path) {
  std::map<std::string, int> Phases;
  auto Buf = llvm::MemoryBuffer::getFile(Path);
  if (!Buf) {
    ADD_FAILURE() << "cannot read " << Path;
    return Phases;
  }
  llvm::json::Value V = takeOk(llvm::json::parse((*Buf)->getBuffer()));
  const llvm::json::Object *Root = V.getAsObject();
  if (!Root) {
    ADD_FAILURE() << "trace root is not an object";
    return Phases;
  }
  const llvm::json::Array *Events = Root->getArray("traceEvents");
  if (!Events) {
    ADD_FAILURE() << "no traceEvents array";
    return Phases;
  }
  double LastTs = -1;
  for (const llvm::json::Value &E : *Events) {
    const llvm::json::Object *O = E.getAsObject();
    EXPECT_NE(O, nullptr);
    if (!O)
      continue;
    auto Ph = O->getString("ph");
    auto Ts = O->getNumber("ts");
    EXPECT_TRUE(Ph && Ts && O->getInteger("pid")) << "every event has ph, ts and pid";
    if (!Ph || !Ts)
      continue;
    ++Phases[Ph->str()];
    if (*Ph == "M")
      continue;
    EXPECT_GE(*Ts, LastTs) << "timestamps must be sorted";
    LastTs = *Ts;
    if (*Ph == "X") {
      EXPECT_GE(O->getNumber("dur").getValueOr(-1), 0);
    }
    if (*Ph == "C") {
      EXPECT_NE(O->getObject("args"), nullptr);
    }
  }
  return Phases;
}

TEST(Perfetto, ProfileTimelineIsSortedTraceEventJson) {
  ProfileBuilder B;
  uint64_t W = B.allocate(3 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t X = B.allocate(1 << 20, 0, 2500);
  B.kernel("gemm", 1000, {{W, v1::ACCESS_MODE_READ}, {X, v1::ACCESS_MODE_WRITE}});
  B.kernel("relu", 1000, {{X, v1::ACCESS_MODE_READ_WRITE}});
  v1::Profile P = B.build();
  // Out-of-order records must still come out sorted.
  auto *F = P.add_faults();
  F->set_time_ns(1500);
  F->set_kernel_index(1);
  F = P.add_faults();
  F->set_time_ns(200);
  F->set_kernel_index(0);
  auto *M = P.add_migrations();
  M->set_direction(v1::MIGRATION_DIRECTION_HOST_TO_DEVICE);
  M->set_bytes(1 << 16);
  M->set_start_ns(100);
  M->set_end_ns(300);

  std::string Path = scratchDir("Perfetto.Profile") + "/trace.json";
  format::TraceWriter W1;
  format::addProfileTimeline(W1, P);
  ASSERT_FALSE(bool(W1.write(Path)));
  std::map<std::string, int> Phases = checkTrace(Path);
  EXPECT_EQ(Phases["X"], 2);      // two kernels
  EXPECT_EQ(Phases["i"], 3);      // two faults, one migration
  EXPECT_GE(Phases["C"], 3);      // live bytes levels and resident bytes
  EXPECT_GE(Phases["M"], 2);      // process and thread names
}

TEST(Perfetto, LiveBytesPastInt64StayPositive) {
  constexpr uint64_t Half = uint64_t{1} << 63, TwoMiB = uint64_t{2} << 20;
  ProfileBuilder B;
  B.allocate(Half, 0, -1, v1::ALLOCATION_ROLE_PARAMETER, /*Address=*/TwoMiB);
  B.allocate(Half - 2 * TwoMiB, 10, 20, v1::ALLOCATION_ROLE_PARAMETER, /*Address=*/Half + TwoMiB);
  format::TraceWriter W;
  format::addProfileTimeline(W, B.build());
  llvm::json::Value V = W.finish();
  std::vector<double> Levels;
  for (const llvm::json::Value &E : *V.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object *O = E.getAsObject();
    if (O->getString("ph") == llvm::Optional<llvm::StringRef>("C") &&
        O->getString("name") == llvm::Optional<llvm::StringRef>("live bytes"))
      Levels.push_back(*O->getObject("args")->getNumber("live bytes"));
  }
  ASSERT_EQ(Levels.size(), 3u);
  EXPECT_DOUBLE_EQ(Levels[0], 0x1p63);
  EXPECT_DOUBLE_EQ(Levels[1], 0x1p64 - 0x1p22);
  EXPECT_DOUBLE_EQ(Levels[2], 0x1p63);
}

} // namespace
