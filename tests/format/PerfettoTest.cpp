//===- PerfettoTest.cpp - Timelines are valid, sorted trace-event JSON ------===//
#include "TestSupport.h"

#include "deepum/format/Perfetto.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gtest/gtest.h"

#include <map>
#include <set>

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
        O->getString("name") == llvm::Optional<llvm::StringRef>("allocations"))
      Levels.push_back(*O->getObject("args")->getNumber("live (MiB)"));
  }
  ASSERT_EQ(Levels.size(), 3u);
  EXPECT_DOUBLE_EQ(Levels[0], 0x1p43);
  EXPECT_DOUBLE_EQ(Levels[1], 0x1p44 - 0x1p2);
  EXPECT_DOUBLE_EQ(Levels[2], 0x1p43);
}

TEST(Perfetto, StreamedTraceEqualsTheDocumentItStandsFor) {
  // Recorded out of order; written sorted by time, ties in recording order,
  // metadata first: the same document as one built whole.
  format::TraceWriter W;
  W.nameProcess(1, "GPU \"0\"");
  W.nameThread(1, 2, "copy engine HtoD");
  W.span(1, 2, "prefetch", "htod", 3000, 500, llvm::json::Object{{"bytes", 65536}});
  W.instant(1, 3, "discard", "discard", 1000);
  W.span(1, 1, "k\n0", "compute", 1000, 2000);
  W.counter(1, "GPU memory", "resident (MiB)", 500, 2);
  std::string Text;
  llvm::raw_string_ostream OS(Text);
  W.writeTo(OS);
  llvm::json::Value Got = takeOk(llvm::json::parse(OS.str()));
  llvm::json::Value Want = llvm::json::Object{
      {"displayTimeUnit", "ns"},
      {"traceEvents",
       llvm::json::Array{
           llvm::json::Object{{"ph", "M"},
                              {"name", "process_name"},
                              {"pid", 1},
                              {"tid", 0},
                              {"ts", 0},
                              {"args", llvm::json::Object{{"name", "GPU \"0\""}}}},
           llvm::json::Object{{"ph", "M"},
                              {"name", "thread_name"},
                              {"pid", 1},
                              {"tid", 2},
                              {"ts", 0},
                              {"args", llvm::json::Object{{"name", "copy engine HtoD"}}}},
           llvm::json::Object{{"ph", "C"},
                              {"name", "GPU memory"},
                              {"pid", 1},
                              {"ts", 0.5},
                              {"args", llvm::json::Object{{"resident (MiB)", 2.0}}}},
           llvm::json::Object{{"ph", "i"},
                              {"s", "t"},
                              {"name", "discard"},
                              {"cat", "discard"},
                              {"pid", 1},
                              {"tid", 3},
                              {"ts", 1.0}},
           llvm::json::Object{{"ph", "X"},
                              {"name", "k\n0"},
                              {"cat", "compute"},
                              {"pid", 1},
                              {"tid", 1},
                              {"ts", 1.0},
                              {"dur", 2.0}},
           llvm::json::Object{{"ph", "X"},
                              {"name", "prefetch"},
                              {"cat", "htod"},
                              {"pid", 1},
                              {"tid", 2},
                              {"ts", 3.0},
                              {"dur", 0.5},
                              {"args", llvm::json::Object{{"bytes", 65536}}}}}}};
  EXPECT_EQ(Got, Want) << llvm::formatv("{0:2}", Got).str();
  EXPECT_EQ(W.size(), 0u) << "written events are forgotten";
}

TEST(Perfetto, CounterKeepsOneSamplePerSeriesAndInstant) {
  format::TraceWriter W;
  W.counter(1, "GPU memory", "resident (MiB)", 100, 1);
  W.counter(1, "GPU memory", "resident (MiB)", 100, 3); // replaces the 1
  W.counter(1, "allocations", "live (MiB)", 100, 7);    // another series: kept
  W.counter(1, "GPU memory", "resident (MiB)", 200, 2);
  EXPECT_EQ(W.size(), 3u);
  std::vector<double> Resident;
  const llvm::json::Value V = W.finish();
  for (const llvm::json::Value &E : *V.getAsObject()->getArray("traceEvents"))
    if (auto Level = E.getAsObject()->getObject("args")->getNumber("resident (MiB)"))
      Resident.push_back(*Level);
  EXPECT_EQ(Resident, (std::vector<double>{3, 2}));
}

TEST(Perfetto, ProfileCountersCarryUnitsWithoutDoubledNames) {
  ProfileBuilder B;
  uint64_t X = B.allocate(2 << 20, 0, 2500);
  B.kernel("relu", 1000, {{X, v1::ACCESS_MODE_READ_WRITE}});
  format::TraceWriter W;
  format::addProfileTimeline(W, B.build());
  std::set<std::string> Tracks;
  const llvm::json::Value V = W.finish();
  for (const llvm::json::Value &E : *V.getAsObject()->getArray("traceEvents")) {
    const llvm::json::Object *O = E.getAsObject();
    if (O->getString("ph") != llvm::StringRef("C"))
      continue;
    for (const auto &KV : *O->getObject("args")) {
      // Perfetto names a counter track "NAME SERIES".
      EXPECT_NE(O->getString("name")->str(), KV.first.str()) << "doubled name";
      Tracks.insert((*O->getString("name") + " " + KV.first.str()).str());
    }
  }
  EXPECT_EQ(Tracks, (std::set<std::string>{"allocations live (MiB)", "GPU memory resident (MiB)"}));
}

} // namespace
