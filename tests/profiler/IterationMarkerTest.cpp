//===- IterationMarkerTest.cpp - Profiler-API and NVTX callbacks to marks ---===//
//
// The decisions Injection.cpp takes for each cudaProfilerStart/Stop,
// cuProfilerStart/Stop and NVTX callback, fed as hand-made callback sequences
// in the order CUPTI delivers them. No GPU, no CUPTI.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "deepum/profiler/IterationMarker.h"
#include "deepum/profiler/Recorder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <ostream>
#include <thread>

namespace deepum::profiler {
// Readable gtest failures.
void PrintTo(MarkAction A, std::ostream *OS) { *OS << markActionName(A); }
} // namespace deepum::profiler

using namespace deepum;
using namespace deepum::profiler;
using namespace deepum::test;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

namespace {

using Thread = IterationMarker::ThreadState;
constexpr MarkAction None = MarkAction::None;
constexpr MarkAction Begin = MarkAction::Begin;
constexpr MarkAction End = MarkAction::End;
constexpr const char *Step = "train_step";

/// Feeds whole API calls (every callback they fire, in order) and keeps the
/// marks they produce.
struct Feed {
  IterationMarker M;
  std::vector<MarkAction> Marks;

  explicit Feed(std::string StepRange = "") : M(std::move(StepRange)) {}

  void take(MarkAction A) {
    if (A != MarkAction::None)
      Marks.push_back(A);
  }
  void cuProfilerStart(Thread &T) {
    take(M.profilerStart(T, ProfilerApi::Driver, CallSite::Enter));
    take(M.profilerStart(T, ProfilerApi::Driver, CallSite::Exit));
  }
  void cuProfilerStop(Thread &T) {
    take(M.profilerStop(T, ProfilerApi::Driver, CallSite::Enter));
    take(M.profilerStop(T, ProfilerApi::Driver, CallSite::Exit));
  }
  /// `ReachesDriver`: the runtime's own cuProfilerStart fires its callbacks too.
  void cudaProfilerStart(Thread &T, bool ReachesDriver) {
    take(M.profilerStart(T, ProfilerApi::Runtime, CallSite::Enter));
    if (ReachesDriver)
      cuProfilerStart(T);
    take(M.profilerStart(T, ProfilerApi::Runtime, CallSite::Exit));
  }
  void cudaProfilerStop(Thread &T, bool ReachesDriver) {
    take(M.profilerStop(T, ProfilerApi::Runtime, CallSite::Enter));
    if (ReachesDriver)
      cuProfilerStop(T);
    take(M.profilerStop(T, ProfilerApi::Runtime, CallSite::Exit));
  }
  void push(Thread &T, const char *Name) { take(M.rangePush(T, Name)); }
  void pop(Thread &T) { take(M.rangePop(T)); }
  void start(const char *Name, uint64_t Id) { take(M.rangeStart(Name, Id)); }
  void end(uint64_t Id) { take(M.rangeEnd(Id)); }
};

/// What Injection.cpp does with a mark.
MarkEffect apply(Recorder &R, MarkAction A, uint64_t TimeNs) {
  switch (A) {
  case MarkAction::Begin:
    return R.beginIteration(TimeNs);
  case MarkAction::End:
    return R.endIteration(TimeNs);
  case MarkAction::None:
    break;
  }
  return {};
}

RecorderOptions options(uint32_t Iterations) {
  RecorderOptions O;
  O.Iterations = Iterations;
  return O;
}

KernelRecord kernel(uint64_t StartNs, uint64_t EndNs) {
  KernelRecord K;
  K.Name = "k" + std::to_string(StartNs);
  K.GridX = 1;
  K.BlockX = 32;
  K.StartNs = StartNs;
  K.EndNs = EndNs;
  K.CorrelationId = StartNs;
  return K;
}

// --- Without --step-range: cudaProfilerStart/Stop and cuProfilerStart/Stop ---

TEST(IterationMarker, RuntimeStartBeginsAtExitAndStopEndsAtEntry) {
  IterationMarker M("");
  Thread T;
  EXPECT_FALSE(M.usesRanges());
  EXPECT_EQ(M.profilerStart(T, ProfilerApi::Runtime, CallSite::Enter), None);
  EXPECT_EQ(M.profilerStart(T, ProfilerApi::Runtime, CallSite::Exit), Begin);
  // Stop at entry: the work launched before it belongs to the iteration.
  EXPECT_EQ(M.profilerStop(T, ProfilerApi::Runtime, CallSite::Enter), End);
  EXPECT_EQ(M.profilerStop(T, ProfilerApi::Runtime, CallSite::Exit), None);
}

TEST(IterationMarker, DriverStartBeginsAtExitAndStopEndsAtEntry) {
  IterationMarker M("");
  Thread T;
  EXPECT_EQ(M.profilerStart(T, ProfilerApi::Driver, CallSite::Enter), None);
  EXPECT_EQ(M.profilerStart(T, ProfilerApi::Driver, CallSite::Exit), Begin);
  EXPECT_EQ(M.profilerStop(T, ProfilerApi::Driver, CallSite::Enter), End);
  EXPECT_EQ(M.profilerStop(T, ProfilerApi::Driver, CallSite::Exit), None);
}

TEST(IterationMarker, RuntimeAndDriverCallbacksOfOneCallAreOneMark) {
  // cudaProfilerStart reaches cuProfilerStart: both fire, nested.
  IterationMarker M("");
  Thread T;
  EXPECT_EQ(M.profilerStart(T, ProfilerApi::Runtime, CallSite::Enter), None);
  EXPECT_EQ(M.profilerStart(T, ProfilerApi::Driver, CallSite::Enter), None);
  EXPECT_EQ(M.profilerStart(T, ProfilerApi::Driver, CallSite::Exit), None);
  EXPECT_EQ(M.profilerStart(T, ProfilerApi::Runtime, CallSite::Exit), Begin);
  EXPECT_EQ(M.profilerStop(T, ProfilerApi::Runtime, CallSite::Enter), End);
  EXPECT_EQ(M.profilerStop(T, ProfilerApi::Driver, CallSite::Enter), None);
  EXPECT_EQ(M.profilerStop(T, ProfilerApi::Driver, CallSite::Exit), None);
  EXPECT_EQ(M.profilerStop(T, ProfilerApi::Runtime, CallSite::Exit), None);
}

TEST(IterationMarker, EachCallCountsOnceWhetherOrNotTheDriverCallbacksFire) {
  for (bool ReachesDriver : {true, false}) {
    SCOPED_TRACE(ReachesDriver ? "driver callbacks fire" : "runtime callbacks only");
    Feed F;
    Thread T;
    for (int I = 0; I < 3; ++I) {
      F.cudaProfilerStart(T, ReachesDriver);
      F.cudaProfilerStop(T, ReachesDriver);
    }
    EXPECT_THAT(F.Marks, ElementsAre(Begin, End, Begin, End, Begin, End));
  }
}

TEST(IterationMarker, DriverCallAfterARuntimeCallCountsAgain) {
  // The runtime call's exit clears the "inside" state: a later driver call of
  // the program's own is a mark of its own.
  Feed F;
  Thread T;
  F.cudaProfilerStart(T, /*ReachesDriver=*/true);
  F.cuProfilerStop(T);
  F.cuProfilerStart(T);
  F.cudaProfilerStop(T, /*ReachesDriver=*/true);
  EXPECT_THAT(F.Marks, ElementsAre(Begin, End, Begin, End));
}

TEST(IterationMarker, RuntimeCallOnAnotherThreadDoesNotSilenceThisOne) {
  IterationMarker M("");
  Thread A, B;
  EXPECT_EQ(M.profilerStart(A, ProfilerApi::Runtime, CallSite::Enter), None);
  // B's own driver call, while A is inside cudaProfilerStart.
  EXPECT_EQ(M.profilerStop(B, ProfilerApi::Driver, CallSite::Enter), End);
  EXPECT_EQ(M.profilerStart(A, ProfilerApi::Driver, CallSite::Exit), None);
  EXPECT_EQ(M.profilerStart(A, ProfilerApi::Runtime, CallSite::Exit), Begin);
}

TEST(IterationMarker, RepeatedStartsAndStopsAreAllPassedOn) {
  // Unbalanced calls are the Recorder's business: a second begin ends the
  // open iteration there, an end with none open is ignored.
  Feed F;
  Thread T;
  F.cudaProfilerStart(T, true);
  F.cudaProfilerStart(T, true);
  F.cudaProfilerStop(T, true);
  F.cudaProfilerStop(T, true);
  EXPECT_THAT(F.Marks, ElementsAre(Begin, Begin, End, End));

  Recorder R(options(5));
  uint64_t Time = 100;
  for (MarkAction A : F.Marks)
    apply(R, A, Time += 100);
  EXPECT_EQ(R.recordedIterations(), 2u);
  EXPECT_EQ(R.state(), RecorderState::Recording);
}

TEST(IterationMarker, NvtxRangesAreNoMarksWithoutStepRange) {
  Feed F;
  Thread T;
  F.push(T, Step);
  F.pop(T);
  F.push(T, "");
  F.pop(T);
  F.start(Step, 1);
  F.end(1);
  EXPECT_THAT(F.Marks, IsEmpty());
  EXPECT_THAT(T.Pushed, IsEmpty());
}

// --- With --step-range NAME: NVTX ranges of that name only ---

TEST(IterationMarker, StepRangeIgnoresProfilerStartAndStop) {
  for (bool ReachesDriver : {true, false}) {
    Feed F(Step);
    Thread T;
    EXPECT_TRUE(F.M.usesRanges());
    EXPECT_EQ(F.M.stepRange(), Step);
    F.cudaProfilerStart(T, ReachesDriver);
    F.cuProfilerStop(T);
    F.cuProfilerStart(T);
    F.cudaProfilerStop(T, ReachesDriver);
    EXPECT_THAT(F.Marks, IsEmpty());
    EXPECT_FALSE(T.InsideRuntimeProfilerCall);
  }
}

TEST(IterationMarker, PushBeginsAndItsPopEnds) {
  IterationMarker M(Step);
  Thread T;
  for (int I = 0; I < 2; ++I) {
    EXPECT_EQ(M.rangePush(T, Step), Begin);
    EXPECT_EQ(M.rangePop(T), End);
  }
  EXPECT_THAT(T.Pushed, IsEmpty());
}

TEST(IterationMarker, OtherRangeNamesAreIgnoredInsideAndAroundTheStep) {
  Feed F(Step);
  Thread T;
  F.push(T, "epoch");
  F.push(T, Step);
  F.push(T, "forward");
  F.pop(T); // forward
  F.push(T, "backward");
  F.push(T, "allreduce");
  F.pop(T); // allreduce
  F.pop(T); // backward
  EXPECT_THAT(F.Marks, ElementsAre(Begin));
  F.pop(T); // the step
  EXPECT_THAT(F.Marks, ElementsAre(Begin, End));
  F.pop(T); // epoch
  F.push(T, "eval");
  F.pop(T);
  EXPECT_THAT(F.Marks, ElementsAre(Begin, End));
}

TEST(IterationMarker, NamesMustMatchExactly) {
  Feed F(Step);
  Thread T;
  for (const char *Name : {"train_step2", "train", "TRAIN_STEP", " train_step", ""}) {
    F.push(T, Name);
    F.pop(T);
    F.start(Name, 5);
    F.end(5);
  }
  // Not ASCII (unicode, registered string): no name.
  F.push(T, nullptr);
  F.pop(T);
  F.start(nullptr, 6);
  F.end(6);
  EXPECT_THAT(F.Marks, IsEmpty());
}

TEST(IterationMarker, UnbalancedPopsAreIgnored) {
  Feed F(Step);
  Thread T;
  F.pop(T); // nothing pushed on this thread
  F.push(T, Step);
  F.pop(T);
  F.pop(T); // one pop too many
  F.push(T, Step);
  F.pop(T);
  EXPECT_THAT(F.Marks, ElementsAre(Begin, End, Begin, End));
}

TEST(IterationMarker, PushWithoutPopLeavesTheIterationOpen) {
  Feed F(Step);
  Thread T;
  F.push(T, Step);
  F.push(T, "forward"); // never popped
  EXPECT_THAT(F.Marks, ElementsAre(Begin));
  EXPECT_EQ(T.Pushed.size(), 2u);
  // The pop of "forward" is not the step's end, only the next one is.
  F.pop(T);
  F.pop(T);
  EXPECT_THAT(F.Marks, ElementsAre(Begin, End));
}

TEST(IterationMarker, NestedStepRangesAreNotMerged) {
  Feed F(Step);
  Thread T;
  F.push(T, Step);
  F.push(T, Step);
  F.pop(T);
  F.pop(T);
  EXPECT_THAT(F.Marks, ElementsAre(Begin, Begin, End, End));

  // The Recorder ends the outer iteration at the inner begin and ignores the
  // outer end: [10, 20] and [20, 30].
  Recorder R(options(5));
  R.addKernel(kernel(12, 14));
  R.addKernel(kernel(22, 24));
  R.addKernel(kernel(32, 34));
  uint64_t Time = 0;
  for (MarkAction A : F.Marks)
    apply(R, A, Time += 10);
  EXPECT_EQ(R.recordedIterations(), 2u);
  v1::Profile P = takeOk(R.buildProfile());
  ASSERT_EQ(P.iterations_size(), 2);
  EXPECT_EQ(P.iterations(0).start_ns(), 10u);
  EXPECT_EQ(P.iterations(0).end_ns(), 20u);
  EXPECT_EQ(P.iterations(1).start_ns(), 20u);
  EXPECT_EQ(P.iterations(1).end_ns(), 30u);
  EXPECT_EQ(P.kernels_size(), 2);
}

TEST(IterationMarker, PushPopNestsPerThread) {
  IterationMarker M(Step);
  Thread A, B;
  EXPECT_EQ(M.rangePush(A, Step), Begin);
  EXPECT_EQ(M.rangePop(B), None); // B pushed nothing
  EXPECT_EQ(M.rangePush(B, "data_loading"), None);
  EXPECT_EQ(M.rangePop(A), End); // A's step, not B's range
  EXPECT_EQ(M.rangePop(B), None);
  EXPECT_THAT(A.Pushed, IsEmpty());
  EXPECT_THAT(B.Pushed, IsEmpty());
}

TEST(IterationMarker, StartAndEndMatchById) {
  IterationMarker M(Step);
  EXPECT_EQ(M.rangeStart(Step, 7), Begin);
  EXPECT_EQ(M.rangeStart("forward", 8), None);
  EXPECT_EQ(M.rangeEnd(8), None); // not a step range
  EXPECT_EQ(M.rangeEnd(9), None); // never started
  EXPECT_EQ(M.rangeEnd(7), End);
  EXPECT_EQ(M.rangeEnd(7), None); // already ended
}

TEST(IterationMarker, OverlappingStartEndStepRanges) {
  Feed F(Step);
  F.start(Step, 1);
  F.start(Step, 2);
  F.end(1);
  F.end(2);
  EXPECT_THAT(F.Marks, ElementsAre(Begin, Begin, End, End));
}

TEST(IterationMarker, StartWithoutRangeIdIsNoMark) {
  IterationMarker M(Step);
  EXPECT_EQ(M.rangeStart(Step, std::nullopt), None);
  EXPECT_EQ(M.rangeEnd(0), None);
}

TEST(IterationMarker, StartAndEndMayComeFromDifferentThreads) {
  IterationMarker M(Step);
  MarkAction Started = None, Ended = None;
  std::thread([&] { Started = M.rangeStart(Step, 42); }).join();
  std::thread([&] { Ended = M.rangeEnd(42); }).join();
  EXPECT_EQ(Started, Begin);
  EXPECT_EQ(Ended, End);
}

TEST(IterationMarker, StepRangeThatNeverAppearsGivesNoMarkAndOneIteration) {
  Feed F(Step);
  Thread T;
  F.cudaProfilerStart(T, true);
  F.push(T, "forward");
  F.push(T, "backward");
  F.pop(T);
  F.pop(T);
  F.pop(T);
  F.start("optimizer", 3);
  F.end(3);
  F.cudaProfilerStop(T, false);
  EXPECT_THAT(F.Marks, IsEmpty());

  // No mark at all: the whole run is one iteration.
  Recorder R({});
  R.addKernel(kernel(100, 200));
  R.addKernel(kernel(300, 400));
  v1::Profile P = takeOk(R.buildProfile());
  ASSERT_EQ(P.iterations_size(), 1);
  EXPECT_EQ(P.iterations(0).kernel_count(), 2u);
  EXPECT_THAT(P.workload().notes(), HasSubstr("no iteration mark"));
}

TEST(IterationMarker, ActionNames) {
  EXPECT_STREQ(markActionName(None), "none");
  EXPECT_STREQ(markActionName(Begin), "begin");
  EXPECT_STREQ(markActionName(End), "end");
}

} // namespace
