//===- RecorderTest.cpp - Iteration windows, attribution, access sets -------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/format/Signature.h"
#include "deepum/profiler/Recorder.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

using namespace deepum;
using namespace deepum::profiler;
using namespace deepum::test;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t Base = uint64_t{1} << 40; // 2 MiB-aligned, like a managed arena

KernelRecord kernel(const std::string &Name, uint64_t Start, uint64_t End, uint32_t Device = 0) {
  KernelRecord K;
  K.Name = Name;
  K.GridX = 4;
  K.BlockX = 128;
  K.StartNs = Start;
  K.EndNs = End;
  K.Device = Device;
  K.CorrelationId = Start;
  return K;
}

FaultRecord fault(uint64_t Address, uint64_t Time, v1::FaultAccess Access = v1::FAULT_ACCESS_READ) {
  FaultRecord F;
  F.Address = Address;
  F.TimeNs = Time;
  F.Access = Access;
  return F;
}

v1::Profile build(const Recorder &R) { return takeOk(R.buildProfile()); }

TEST(Recorder, WholeRunIsOneIterationWithoutMarks) {
  Recorder R({});
  R.addAllocation(Base, 4 * MiB, 0, 1, AllocationSource::Driver);
  R.addKernel(kernel("b", 300, 400));
  R.addKernel(kernel("a", 100, 200)); // arrives out of order
  v1::Profile P = build(R);
  ASSERT_EQ(P.kernels_size(), 2);
  EXPECT_EQ(P.kernels(0).name(), "a"); // start-time order
  ASSERT_EQ(P.iterations_size(), 1);
  EXPECT_EQ(P.iterations(0).kernel_count(), 2u);
  EXPECT_EQ(P.iterations(0).start_ns(), 100u);
  EXPECT_EQ(P.iterations(0).end_ns(), 400u);
  EXPECT_THAT(P.workload().notes(), HasSubstr("no iteration mark"));
  EXPECT_EQ(P.access_source(), v1::ACCESS_SOURCE_MEASURED_FAULTS);
}

TEST(Recorder, FaultsAreAttributedToTheRunningKernelAndBecomeAccessSets) {
  Recorder R({});
  R.setUmCounters(true);
  // Allocation 1: 3 MiB from Base (blocks B, B+1); allocation 2 at Base + 4 MiB.
  R.addAllocation(Base, 3 * MiB, 7, 10, AllocationSource::Allocator);
  R.addAllocation(Base + 4 * MiB, 1 * MiB, 7, 11, AllocationSource::Allocator);
  R.addKernel(kernel("producer", 100, 200));
  R.addKernel(kernel("consumer", 300, 400));
  // producer: writes page 0 and 1 of block B, reads page 5 of block B+1.
  R.addFault(fault(Base + 10, 110, v1::FAULT_ACCESS_WRITE));
  R.addFault(fault(Base + 64 * KiB + 5, 120, v1::FAULT_ACCESS_READ));
  R.addFault(fault(Base + 2 * MiB + 5 * 64 * KiB, 130, v1::FAULT_ACCESS_READ));
  // consumer: reads the same page twice and allocation 2.
  R.addFault(fault(Base + 20, 310));
  R.addFault(fault(Base + 30, 320));
  R.addFault(fault(Base + 4 * MiB, 330, v1::FAULT_ACCESS_ATOMIC));
  // Between kernels: nobody's.
  R.addFault(fault(Base, 250));

  v1::Profile P = build(R);
  ASSERT_FALSE(bool(format::validateProfile(P)));
  ASSERT_EQ(P.faults_size(), 7);
  EXPECT_EQ(P.faults(0).kernel_index(), 0);
  EXPECT_EQ(P.faults(3).kernel_index(), -1); // t=250
  EXPECT_EQ(P.faults(4).kernel_index(), 1);
  EXPECT_EQ(P.recording().unattributed_faults(), 1u);

  uint64_t B = Base / format::kUmBlockBytes;
  const v1::Kernel &Prod = P.kernels(0);
  ASSERT_EQ(Prod.blocks_size(), 2);
  EXPECT_EQ(Prod.blocks(0).block(), B);
  EXPECT_EQ(Prod.blocks(0).page_mask(), 0b11u);
  // A write fault does not prove the page was overwritten whole: never WRITE.
  EXPECT_EQ(Prod.blocks(0).mode(), v1::ACCESS_MODE_READ_WRITE);
  EXPECT_EQ(Prod.blocks(1).block(), B + 1);
  EXPECT_EQ(Prod.blocks(1).page_mask(), 1u << 5);
  EXPECT_EQ(Prod.blocks(1).mode(), v1::ACCESS_MODE_READ);
  // Tensors: pages 0-1 of allocation 1 as one run, page 37 as another.
  ASSERT_EQ(Prod.tensors_size(), 2);
  EXPECT_EQ(Prod.tensors(0).allocation_id(), 1u);
  EXPECT_EQ(Prod.tensors(0).offset(), 0u);
  EXPECT_EQ(Prod.tensors(0).bytes(), 128 * KiB);
  EXPECT_EQ(Prod.tensors(1).offset(), 2 * MiB + 5 * 64 * KiB);
  EXPECT_EQ(Prod.tensors(1).bytes(), 64 * KiB);

  const v1::Kernel &Cons = P.kernels(1);
  ASSERT_EQ(Cons.blocks_size(), 2);
  EXPECT_EQ(Cons.blocks(0).page_mask(), 1u);
  EXPECT_EQ(Cons.blocks(0).mode(), v1::ACCESS_MODE_READ);
  EXPECT_EQ(Cons.blocks(1).block(), B + 2);
  EXPECT_EQ(Cons.blocks(1).mode(), v1::ACCESS_MODE_READ_WRITE); // atomic
  ASSERT_EQ(Cons.tensors_size(), 2);
  EXPECT_EQ(Cons.tensors(1).allocation_id(), 2u);
}

TEST(Recorder, FaultStallIsTheUnionOfFaultServiceClippedToTheKernel) {
  Recorder R({});
  R.setUmCounters(true);
  R.addAllocation(Base, 4 * MiB, 7, 10, AllocationSource::Allocator);
  R.addKernel(kernel("k", 1000, 2000));
  R.addKernel(kernel("calm", 3000, 3100));
  auto serviced = [](uint64_t Address, uint64_t Start, uint64_t End) {
    FaultRecord F = fault(Address, Start);
    F.EndNs = End;
    return F;
  };
  // One batch of two pages [1100, 1300), a second overlapping it [1250, 1400),
  // a third running past the kernel's end [1900, 2500): 300 + 100 ns.
  R.addFault(serviced(Base, 1100, 1300));
  R.addFault(serviced(Base + 64 * KiB, 1100, 1300));
  R.addFault(serviced(Base + 2 * MiB, 1250, 1400));
  R.addFault(serviced(Base + 3 * MiB, 1900, 2500));
  v1::Profile P = build(R);
  ASSERT_FALSE(bool(format::validateProfile(P)));
  EXPECT_EQ(P.kernels(0).fault_stall_ns(), 400u);
  EXPECT_EQ(P.kernels(1).fault_stall_ns(), 0u);
  EXPECT_EQ(format::computeNs(P.kernels(0)), 600u);
  EXPECT_EQ(format::computeNs(P.kernels(1)), 100u);
}

TEST(Recorder, OverlappingKernelsLeaveFaultsUnattributed) {
  Recorder R({});
  R.addAllocation(Base, 2 * MiB, 0, 0, AllocationSource::Driver);
  R.addKernel(kernel("long", 100, 500));
  R.addKernel(kernel("short", 200, 300)); // concurrent: not serialised
  R.addFault(fault(Base, 250));           // inside both
  R.addFault(fault(Base, 400));           // inside "long" only
  v1::Profile P = build(R);
  EXPECT_EQ(P.faults(0).kernel_index(), -1);
  EXPECT_EQ(P.faults(1).kernel_index(), 0);
  EXPECT_EQ(P.recording().unattributed_faults(), 1u);
}

TEST(Recorder, FaultsOutsideAllocationsAreCountedNotInvented) {
  Recorder R({});
  R.addAllocation(Base, 2 * MiB, 0, 0, AllocationSource::Driver);
  R.addKernel(kernel("k", 100, 200));
  R.addFault(fault(Base + 64 * MiB, 150)); // a library's own memory, say
  v1::Profile P = build(R);
  EXPECT_EQ(P.faults(0).kernel_index(), 0);
  EXPECT_EQ(P.kernels(0).blocks_size(), 0);
  EXPECT_THAT(P.workload().notes(), HasSubstr("1 attributed fault(s) outside every recorded"));
}

TEST(Recorder, FaultMapsToTheAllocationLiveAtThatTime) {
  Recorder R({});
  // The allocator reuses an address: the second tenant is the one faulted on.
  R.addAllocation(Base, 1 * MiB, 0, 10, AllocationSource::Allocator);
  R.addFree(Base, 20, AllocationSource::Allocator);
  R.addAllocation(Base, 2 * MiB, 0, 30, AllocationSource::Allocator);
  R.addKernel(kernel("k", 100, 200));
  R.addFault(fault(Base + 1536 * KiB, 150)); // beyond the first tenant's size
  v1::Profile P = build(R);
  ASSERT_EQ(P.allocations_size(), 2);
  EXPECT_TRUE(P.allocations(0).freed());
  ASSERT_EQ(P.kernels(0).tensors_size(), 1);
  EXPECT_EQ(P.kernels(0).tensors(0).allocation_id(), 2u);
  EXPECT_EQ(P.kernels(0).tensors(0).offset(), 1536 * KiB);
}

TEST(Recorder, AllocatorRecordsReplaceThePoolTheDriverSaw) {
  Recorder R({});
  // The pool (driver) and two tensors in it (allocator); an unrelated managed buffer.
  R.addAllocation(Base, 64 * MiB, 0, 1, AllocationSource::Driver);
  R.addAllocation(Base + 128 * MiB, 2 * MiB, 0, 2, AllocationSource::Driver);
  R.addAllocation(Base, 4 * MiB, 0, 3, AllocationSource::Allocator);
  R.addAllocation(Base + 4 * MiB, 4 * MiB, 0, 4, AllocationSource::Allocator);
  R.addKernel(kernel("k", 100, 200));
  v1::Profile P = build(R);
  ASSERT_EQ(P.allocations_size(), 3);
  EXPECT_EQ(P.allocations(0).address(), Base + 128 * MiB);
  EXPECT_EQ(P.allocations(1).size_bytes(), 4 * MiB);
  EXPECT_EQ(P.allocations(2).address(), Base + 4 * MiB);
}

TEST(Recorder, SkipThenRecordWithDeepumStep) {
  RecorderOptions O;
  O.Skip = 1;
  O.Iterations = 2;
  Recorder R(O);
  R.setOrigin(0);
  R.addAllocation(Base, 2 * MiB, 0, 0, AllocationSource::Driver);
  R.addAllocation(Base + 2 * MiB, 2 * MiB, 0, 50, AllocationSource::Driver);
  R.addFree(Base + 2 * MiB, 60, AllocationSource::Driver); // dies in the skipped iteration
  R.addKernel(kernel("warmup", 10, 20));
  R.addFault(fault(Base, 15));
  MarkEffect E = R.step(100); // iteration 0 ends: skipped
  EXPECT_FALSE(E.IterationRecorded);
  EXPECT_TRUE(E.RecordingStarted);
  EXPECT_EQ(R.state(), RecorderState::Recording);
  R.addKernel(kernel("fwd", 110, 120));
  E = R.step(200);
  EXPECT_TRUE(E.IterationRecorded);
  EXPECT_FALSE(E.RecordingFinished);
  R.addKernel(kernel("fwd", 210, 220));
  R.addKernel(kernel("bwd", 230, 240));
  E = R.step(300);
  EXPECT_TRUE(E.RecordingFinished);
  EXPECT_EQ(R.state(), RecorderState::Done);
  // After the window: discarded, even when they arrive.
  R.addKernel(kernel("later", 310, 320));
  // A late-delivered record from inside the window is kept.
  R.addFault(fault(Base, 235));

  v1::Profile P = build(R);
  ASSERT_EQ(P.kernels_size(), 3);
  EXPECT_EQ(P.kernels(0).name(), "fwd");
  ASSERT_EQ(P.iterations_size(), 2);
  EXPECT_EQ(P.iterations(0).first_kernel(), 0u);
  EXPECT_EQ(P.iterations(0).kernel_count(), 1u);
  EXPECT_EQ(P.iterations(1).first_kernel(), 1u);
  EXPECT_EQ(P.iterations(1).kernel_count(), 2u);
  EXPECT_EQ(P.iterations(1).start_ns(), 200u);
  EXPECT_EQ(P.iterations(1).end_ns(), 300u);
  ASSERT_EQ(P.allocations_size(), 1); // the freed one is gone with the skipped iteration
  ASSERT_EQ(P.faults_size(), 1);
  EXPECT_EQ(P.faults(0).kernel_index(), 2);
  EXPECT_EQ(R.seenIterations(), 3u);
}

TEST(Recorder, BeginEndMarksWinOverDeepumStep) {
  // A Python program under deepum-profile: the optimizer hook calls
  // deepum_step() every step, and the script brackets steps with
  // cudaProfilerStart/Stop itself from its third step on.
  RecorderOptions O;
  O.Skip = 1;
  O.Iterations = 2;
  Recorder R(O);
  R.setOrigin(0);
  R.addAllocation(Base, 2 * MiB, 0, 0, AllocationSource::Allocator);
  R.addKernel(kernel("s0", 10, 20));
  R.step(100);
  R.addKernel(kernel("s1", 110, 120));
  EXPECT_TRUE(R.step(200).IterationRecorded);
  EXPECT_EQ(R.recordedIterations(), 1u);
  // The script's own marks: the count starts again, --skip 1 skips [300, 400].
  R.beginIteration(300);
  EXPECT_EQ(R.recordedIterations(), 0u);
  EXPECT_EQ(R.state(), RecorderState::Skipping);
  R.addKernel(kernel("a", 310, 320));
  EXPECT_FALSE(R.step(350).IterationRecorded); // the hook's mark: nothing
  R.endIteration(400);
  R.beginIteration(500);
  R.addKernel(kernel("b", 510, 520));
  R.step(550);
  EXPECT_TRUE(R.endIteration(600).IterationRecorded);
  R.beginIteration(700);
  R.addKernel(kernel("c", 710, 720));
  EXPECT_TRUE(R.endIteration(800).RecordingFinished);
  v1::Profile P = build(R);
  ASSERT_EQ(P.iterations_size(), 2);
  EXPECT_EQ(P.iterations(0).start_ns(), 500u);
  EXPECT_EQ(P.iterations(0).end_ns(), 600u);
  EXPECT_EQ(P.iterations(1).start_ns(), 700u);
  ASSERT_EQ(P.kernels_size(), 2);
  EXPECT_EQ(P.kernels(0).name(), "b");
  EXPECT_EQ(R.seenIterations(), 3u);
}

TEST(Recorder, DeepumStepMarksThatFinishedRecordingStand) {
  RecorderOptions O;
  O.Iterations = 1;
  Recorder R(O);
  R.setOrigin(0);
  R.addAllocation(Base, 2 * MiB, 0, 0, AllocationSource::Allocator);
  R.addKernel(kernel("s0", 10, 20));
  EXPECT_TRUE(R.step(100).RecordingFinished); // the profile is written here
  R.beginIteration(200);
  R.addKernel(kernel("late", 210, 220));
  EXPECT_FALSE(R.endIteration(300).IterationRecorded);
  v1::Profile P = build(R);
  ASSERT_EQ(P.iterations_size(), 1);
  EXPECT_EQ(P.kernels(0).name(), "s0");
}

TEST(Recorder, RangesLeaveGapsOutsideIterations) {
  RecorderOptions O;
  O.Iterations = 2;
  Recorder R(O);
  R.addAllocation(Base, 2 * MiB, 0, 0, AllocationSource::Driver);
  R.beginIteration(100);
  R.addKernel(kernel("a", 110, 120));
  EXPECT_TRUE(R.endIteration(150).IterationRecorded);
  R.addKernel(kernel("between", 160, 170)); // outside any range, inside the window
  R.beginIteration(200);
  R.addKernel(kernel("b", 210, 220));
  EXPECT_TRUE(R.endIteration(250).RecordingFinished);
  v1::Profile P = build(R);
  ASSERT_EQ(P.kernels_size(), 3);
  ASSERT_EQ(P.iterations_size(), 2);
  EXPECT_EQ(P.iterations(1).first_kernel(), 2u);
  EXPECT_EQ(P.iterations(1).kernel_count(), 1u);
}

TEST(Recorder, UnbalancedMarksAreTolerated) {
  RecorderOptions O;
  O.Iterations = 2;
  Recorder R(O);
  EXPECT_FALSE(R.endIteration(10).IterationRecorded); // end without begin: ignored
  R.beginIteration(100);
  R.addKernel(kernel("a", 110, 120));
  MarkEffect E = R.beginIteration(200); // begin without end: the first ends here
  EXPECT_TRUE(E.IterationRecorded);
  R.addKernel(kernel("b", 210, 220));
  EXPECT_TRUE(R.endIteration(300).RecordingFinished);
  EXPECT_EQ(build(R).iterations_size(), 2);
}

TEST(Recorder, CrashCheckpointHoldsOnlyCompleteIterations) {
  RecorderOptions O;
  O.Iterations = 3;
  Recorder R(O);
  R.setOrigin(0);
  R.addAllocation(Base, 2 * MiB, 0, 0, AllocationSource::Driver);
  R.addKernel(kernel("it0", 10, 20));
  R.step(100);
  R.addKernel(kernel("it1-partial", 110, 120)); // the program dies in iteration 1
  v1::Profile P = build(R);
  ASSERT_EQ(P.iterations_size(), 1);
  ASSERT_EQ(P.kernels_size(), 1);
  EXPECT_EQ(P.kernels(0).name(), "it0");
}

TEST(Recorder, AllSkippedIsAnError) {
  RecorderOptions O;
  O.Skip = 5;
  Recorder R(O);
  R.setOrigin(0);
  R.addKernel(kernel("k", 10, 20));
  R.step(100);
  R.step(200);
  EXPECT_THAT(errorText(R.buildProfile()),
              HasSubstr("no complete iteration was recorded: 2 iteration(s) ended, 2 skipped"));
}

//===-- Iterations from the period, without marks --------------------------===//

/// One ID per letter: "ab ab" -> {'a', 'b', 'a', 'b'} (spaces for reading).
std::vector<uint64_t> ids(const std::string &Letters) {
  std::vector<uint64_t> V;
  for (char C : Letters)
    if (C != ' ')
      V.push_back(static_cast<uint64_t>(C));
  return V;
}

std::vector<size_t> ends(const std::string &Letters) { return periodIterationEnds(ids(Letters)); }

TEST(PeriodIterations, PlainRepetition) {
  EXPECT_EQ(ends("abcde abcde abcde"), (std::vector<size_t>{5, 10, 15}));
}

TEST(PeriodIterations, WarmUpJoinsTheFirstIteration) {
  // Initialisation kernels, then an autotuning first iteration with extra kernels.
  EXPECT_EQ(ends("iii abTTcde abcde abcde abcde"), (std::vector<size_t>{10, 15, 20, 25}));
}

TEST(PeriodIterations, RepeatedLayersAreNoIterations) {
  // Forward layers l1 l2 three times, an optimizer that ends in two equal kernels.
  EXPECT_EQ(ends("e lm lm lm g oo  e lm lm lm g oo  e lm lm lm g oo"),
            (std::vector<size_t>{10, 20, 30}));
  // The last four kernels of an iteration also occur inside it: the closing
  // sequence is lengthened until only iteration ends match.
  EXPECT_EQ(ends("abcd x abcd  abcd x abcd  abcd x abcd"), (std::vector<size_t>{9, 18, 27}));
}

TEST(PeriodIterations, NoPeriod) {
  EXPECT_TRUE(ends("abcdefgh").empty());
  EXPECT_TRUE(ends("abcde abcd").empty()); // one whole repetition is no period
  // A run that ends in a few equal kernels is not periodic.
  EXPECT_TRUE(ends("abcdefghijklmnop zzz").empty());
  EXPECT_TRUE(ends("").empty());
}

TEST(PeriodIterations, ATrainingRunOfModelSize) {
  // 500 initialisation kernels, then 20 iterations of 30 identical layers
  // forward (40 kernels each) and backward (60), and an optimizer of 200.
  std::vector<uint64_t> Run;
  for (uint64_t I = 0; I < 500; ++I)
    Run.push_back(1000 + I % 7);
  std::vector<size_t> Expected;
  for (int It = 0; It < 20; ++It) {
    for (int Layer = 0; Layer < 30; ++Layer)
      for (uint64_t K = 0; K < 40; ++K)
        Run.push_back(2000 + K);
    for (int Layer = 0; Layer < 30; ++Layer)
      for (uint64_t K = 0; K < 60; ++K)
        Run.push_back(3000 + K);
    for (uint64_t K = 0; K < 200; ++K)
      Run.push_back(4000 + K % 4);
    Expected.push_back(Run.size());
  }
  EXPECT_EQ(periodIterationEnds(Run), Expected);
}

/// Adds `Names` (one kernel per letter) from `T`, 100 ns apart, each with a
/// fault in the block of allocation `Base`.
uint64_t launch(Recorder &R, const std::string &Names, uint64_t T) {
  for (char C : Names) {
    if (C == ' ')
      continue;
    R.addKernel(kernel(std::string(1, C), T, T + 50));
    R.addFault(fault(Base, T + 10));
    T += 100;
  }
  return T;
}

TEST(Recorder, WithoutMarksSkipAndIterationsCountPeriods) {
  RecorderOptions O;
  O.Skip = 1;
  O.Iterations = 2;
  Recorder R(O);
  R.addAllocation(Base, 2 * MiB, 0, 1, AllocationSource::Allocator);
  uint64_t T = launch(R, "iT abc", 1000); // warm-up: iteration 0
  uint64_t Second = T;
  T = launch(R, "abc", T);
  uint64_t Third = T;
  T = launch(R, "abc abc", T);
  EXPECT_EQ(R.state(), RecorderState::Skipping);
  v1::Profile P = build(R);
  ASSERT_EQ(P.iterations_size(), 2);
  ASSERT_EQ(P.kernels_size(), 6);
  EXPECT_EQ(P.kernels(0).start_ns(), Second);
  EXPECT_EQ(P.iterations(0).start_ns(), Second);
  EXPECT_EQ(P.iterations(0).kernel_count(), 3u);
  EXPECT_EQ(P.iterations(1).start_ns(), Third);
  EXPECT_EQ(P.iterations(1).first_kernel(), 3u);
  EXPECT_EQ(P.iterations(1).kernel_count(), 3u);
  // Only the faults of the recorded iterations, each attributed.
  ASSERT_EQ(P.faults_size(), 6);
  for (const v1::PageFault &F : P.faults())
    EXPECT_GE(F.kernel_index(), 0);
  EXPECT_THAT(P.workload().notes(),
              HasSubstr("4 iteration(s) found from the period of the kernel sequence, 1 "
                        "skipped, 2 recorded"));
  EXPECT_THAT(P.workload().notes(), Not(HasSubstr("asked for more")));
}

TEST(Recorder, WithoutMarksTooFewPeriodsKeepsTheLast) {
  RecorderOptions O;
  O.Skip = 5;
  O.Iterations = 1;
  Recorder R(O);
  R.addAllocation(Base, 2 * MiB, 0, 1, AllocationSource::Allocator);
  uint64_t T = launch(R, "ab ab", 1000);
  uint64_t Last = T;
  launch(R, "ab", T);
  v1::Profile P = build(R);
  ASSERT_EQ(P.iterations_size(), 1);
  EXPECT_EQ(P.iterations(0).start_ns(), Last);
  EXPECT_THAT(P.workload().notes(), HasSubstr("3 iteration(s) found"));
  EXPECT_THAT(P.workload().notes(), HasSubstr("--skip 5 --iterations 1 asked for more"));
}

TEST(Recorder, WithoutMarksOrPeriodTheWholeRunIsOneIteration) {
  RecorderOptions O;
  O.Skip = 2;
  O.Iterations = 3;
  Recorder R(O);
  R.addAllocation(Base, 2 * MiB, 0, 1, AllocationSource::Allocator);
  launch(R, "abcdefg", 1000);
  v1::Profile P = build(R);
  ASSERT_EQ(P.iterations_size(), 1);
  EXPECT_EQ(P.iterations(0).kernel_count(), 7u);
  EXPECT_THAT(P.workload().notes(),
              HasSubstr("no iteration mark was seen and the kernel sequence has no period"));
}

TEST(Recorder, MarksWinOverThePeriod) {
  RecorderOptions O;
  O.Iterations = 1;
  Recorder R(O);
  R.setOrigin(0);
  R.addAllocation(Base, 2 * MiB, 0, 1, AllocationSource::Allocator);
  uint64_t T = launch(R, "ab ab ab", 1000);
  R.step(T); // one mark after three periods: one iteration of six kernels
  v1::Profile P = build(R);
  ASSERT_EQ(P.iterations_size(), 1);
  EXPECT_EQ(P.iterations(0).kernel_count(), 6u);
  EXPECT_THAT(P.workload().notes(), Not(HasSubstr("period")));
}

TEST(Recorder, AccessSetModeEngagesBeforeAnyMark) {
  RecorderOptions O;
  O.AccessSetMode = true;
  O.Skip = 1;
  Recorder R(O);
  R.setOrigin(0);
  // No mark yet: the iterations may come from the period, any may be recorded.
  EXPECT_TRUE(R.accessSetActive());
  R.step(100); // a mark: iteration 0 ends, recording begins
  EXPECT_TRUE(R.accessSetActive());
  Recorder Skipping(O);
  Skipping.beginIteration(10); // marked and skipping: natural
  EXPECT_FALSE(Skipping.accessSetActive());
  Recorder Natural({});
  EXPECT_FALSE(Natural.accessSetActive());
}

TEST(Recorder, DroppedRecordsAndRefusedCountersAreReported) {
  Recorder R({});
  R.addDroppedRecords(3);
  R.addDroppedRecords(4);
  R.setUmCounters(false, "Unified Memory counters refused: the GPU is a MIG instance");
  R.noteError("cuptiActivityEnable: bad");
  R.noteError("second error is not kept");
  R.addKernel(kernel("k", 10, 20));
  v1::Profile P = build(R);
  EXPECT_EQ(P.recording().dropped_records(), 7u);
  EXPECT_FALSE(P.recording().um_counters_enabled());
  EXPECT_THAT(P.recording().um_counters_error(), HasSubstr("MIG"));
  EXPECT_THAT(P.workload().notes(), HasSubstr("first error: cuptiActivityEnable: bad"));
  std::string Line = describeProfile(P);
  EXPECT_THAT(Line, HasSubstr("7 record(s) dropped"));
  EXPECT_THAT(Line, HasSubstr("kernels only"));
}

TEST(Recorder, DeviceLinkMigrationsAndEvents) {
  Recorder R({});
  R.addDevice({0, "NVIDIA H100", 80 * (uint64_t{1} << 30), 90, false});
  R.addLink({0, 5, 16});
  R.setVersions(13000, 13000);
  R.setConcurrentManagedAccess(true);
  R.addAllocation(Base, 2 * MiB, 0, 0, AllocationSource::Driver);
  R.addKernel(kernel("k", 10, 20));
  R.addMigration({Base, 64 * KiB, v1::MIGRATION_DIRECTION_HOST_TO_DEVICE,
                  v1::MIGRATION_CAUSE_COHERENCE, 12, 14});
  R.addMigration({Base, 64 * KiB, v1::MIGRATION_DIRECTION_UNSPECIFIED,
                  v1::MIGRATION_CAUSE_UNSPECIFIED, 15, 16}); // device to device: left out
  R.addUmEvent({v1::UM_EVENT_KIND_THRASHING, Base, 64 * KiB, 17});
  R.addTransfer({TransferRecord::Memcpy, 100, 21, 22, 0, 0, 9});
  v1::Profile P = build(R);
  EXPECT_EQ(P.device().name(), "NVIDIA H100");
  EXPECT_EQ(P.device().compute_capability(), 90u);
  EXPECT_EQ(P.device().link(), "pcie5x16");
  EXPECT_NEAR(P.device().link_bytes_per_second(), 63e9, 1e9);
  EXPECT_TRUE(P.device().concurrent_managed_access());
  EXPECT_EQ(P.device().driver_version(), 13000u);
  ASSERT_EQ(P.migrations_size(), 1);
  EXPECT_EQ(P.migrations(0).cause(), v1::MIGRATION_CAUSE_COHERENCE);
  ASSERT_EQ(P.um_events_size(), 1);
  EXPECT_THAT(P.workload().notes(), HasSubstr("1 memcpy (100 bytes)"));
}

MigrationRecord toDevice(uint64_t Address, uint64_t Bytes, uint64_t Time,
                         v1::MigrationCause Cause = v1::MIGRATION_CAUSE_COHERENCE) {
  return {Address, Bytes, v1::MIGRATION_DIRECTION_HOST_TO_DEVICE, Cause, Time, Time + 10};
}

TEST(Recorder, AccessSetModeSendsFaultedBlocksHomeClippedToAllocations) {
  RecorderOptions O;
  O.AccessSetMode = true;
  Recorder R(O);
  R.addAllocation(Base, 3 * MiB, 0, 0, AllocationSource::Driver);
  R.addAllocation(Base + 3 * MiB, 1 * MiB, 0, 0, AllocationSource::Driver);
  // Fresh allocations may be populated on the GPU by their first touch:
  // all their blocks go home after the next kernel.
  auto Ranges = R.takeRangesToSendHome();
  ASSERT_EQ(Ranges.size(), 3u);
  EXPECT_EQ(Ranges[0], std::make_pair(Base, Base + 2 * MiB));
  EXPECT_EQ(Ranges[1], std::make_pair(Base + 2 * MiB, Base + 3 * MiB));
  EXPECT_EQ(Ranges[2], std::make_pair(Base + 3 * MiB, Base + 4 * MiB));
  EXPECT_TRUE(R.takeRangesToSendHome().empty()) << "taken ranges are forgotten";
  R.addFault(fault(Base + 10, 100));           // block 0: allocation 1 only
  R.addFault(fault(Base + 2 * MiB + 10, 110)); // block 1: both allocations
  R.addFault(fault(Base + 2 * MiB + 20, 120)); // same block again
  Ranges = R.takeRangesToSendHome();
  ASSERT_EQ(Ranges.size(), 3u);
  EXPECT_EQ(Ranges[0], std::make_pair(Base, Base + 2 * MiB));
  EXPECT_EQ(Ranges[2], std::make_pair(Base + 3 * MiB, Base + 4 * MiB));
  R.addKernel(kernel("k", 90, 130));
  EXPECT_EQ(build(R).access_source(), v1::ACCESS_SOURCE_MEASURED_ACCESS_SET);
}

// What an H100 (driver 580) showed: a kernel that touched every 64 KiB page
// of 8 blocks left fault records for 4 of them; the driver's migrations cover
// the rest, and records may arrive after the kernel's blocks were sent home.
TEST(Recorder, AccessSetModeSendsHomeWhatMigratedAndWhatArrivedLate) {
  RecorderOptions O;
  O.AccessSetMode = true;
  Recorder R(O);
  R.addAllocation(Base, 8 * MiB, 0, 0, AllocationSource::Driver);
  (void)R.takeRangesToSendHome();
  R.addKernel(kernel("k", 100, 200));
  R.addFault(fault(Base + 10, 110));
  // The prefetcher's migration of block 1 and a demand one of block 2: no fault.
  R.addMigration(toDevice(Base + 2 * MiB, 2 * MiB, 120, v1::MIGRATION_CAUSE_PREFETCH));
  R.addMigration(toDevice(Base + 4 * MiB + 64 * KiB, 64 * KiB, 130));
  auto Ranges = R.takeRangesToSendHome();
  ASSERT_EQ(Ranges.size(), 3u);
  EXPECT_EQ(Ranges[0].first, Base);
  EXPECT_EQ(Ranges[1].first, Base + 2 * MiB);
  EXPECT_EQ(Ranges[2], std::make_pair(Base + 4 * MiB, Base + 6 * MiB));
  // A record of the same kernel delivered after its blocks went home (its
  // time is long past): it still goes home at the next call.
  R.addKernel(kernel("k2", 300, 400));
  R.addMigration(toDevice(Base + 6 * MiB, 64 * KiB, 150));
  Ranges = R.takeRangesToSendHome();
  ASSERT_EQ(Ranges.size(), 1u);
  EXPECT_EQ(Ranges[0], std::make_pair(Base + 6 * MiB, Base + 8 * MiB));
  // Device-to-host migrations bring nothing to the GPU.
  R.addMigration({Base, 2 * MiB, v1::MIGRATION_DIRECTION_DEVICE_TO_HOST,
                  v1::MIGRATION_CAUSE_USER, 410, 420});
  EXPECT_TRUE(R.takeRangesToSendHome().empty());
}

// The allocator's tensor is freed before its block goes home: the pages go
// home anyway (clipped to the driver's pool allocation), or the memory's next
// tensor would never fault.
TEST(Recorder, AccessSetModeSendsHomeTheMemoryOfFreedTensors) {
  RecorderOptions O;
  O.AccessSetMode = true;
  Recorder R(O);
  R.addAllocation(Base, 4 * MiB, 0, 0, AllocationSource::Driver); // the pool
  R.addAllocation(Base, 1 * MiB, 0, 5, AllocationSource::Allocator);
  (void)R.takeRangesToSendHome();
  R.addFault(fault(Base + 10, 110, v1::FAULT_ACCESS_WRITE));
  R.addFree(Base, 150, AllocationSource::Allocator);
  auto Ranges = R.takeRangesToSendHome();
  ASSERT_EQ(Ranges.size(), 1u);
  EXPECT_EQ(Ranges[0], std::make_pair(Base, Base + 2 * MiB));
  // Natural mode keeps no such set.
  Recorder N({});
  N.addAllocation(Base, 4 * MiB, 0, 0, AllocationSource::Driver);
  N.addFault(fault(Base + 10, 110));
  EXPECT_TRUE(N.takeRangesToSendHome().empty());
}

// Serialised kernels run back to back: a fault at the instant one ends and
// the next starts is the next one's (it cannot fault before it starts). Two
// kernels both running at the instant stay nobody's.
TEST(Recorder, AFaultWhereOneKernelEndsAndTheNextStartsIsTheNextOnes) {
  Recorder R({});
  R.setUmCounters(true);
  R.addAllocation(Base, 4 * MiB, 7, 10, AllocationSource::Allocator);
  R.addKernel(kernel("a", 100, 200));
  R.addKernel(kernel("b", 200, 300));
  R.addKernel(kernel("c", 250, 300)); // concurrent with b at its end
  R.addFault(fault(Base, 200));
  R.addFault(fault(Base + 2 * MiB, 300));
  R.addFault(fault(Base + 64 * KiB, 150));
  v1::Profile P = build(R);
  ASSERT_EQ(P.faults_size(), 3);
  EXPECT_EQ(P.faults(0).kernel_index(), 0);  // t=150: a
  EXPECT_EQ(P.faults(1).kernel_index(), 1);  // t=200: b, not a
  EXPECT_EQ(P.faults(2).kernel_index(), -1); // t=300: b and c both end
}

TEST(Recorder, MigrationsTheDriverMadeForAKernelJoinItsAccessSet) {
  Recorder R({});
  R.setUmCounters(true);
  R.addAllocation(Base, 8 * MiB, 7, 10, AllocationSource::Allocator);
  R.addKernel(kernel("k", 100, 200));
  R.addKernel(kernel("next", 300, 400));
  R.addFault(fault(Base + 10, 110, v1::FAULT_ACCESS_READ)); // page 0 of block B
  // Pages 0-3 of block B by the prefetcher (page 0 also faulted: stays READ).
  R.addMigration(toDevice(Base, 256 * KiB, 115, v1::MIGRATION_CAUSE_PREFETCH));
  // Block B+2 by demand, with no fault record.
  R.addMigration(toDevice(Base + 4 * MiB, 64 * KiB, 120));
  // An explicit prefetch during the kernel is the program's, not the kernel's.
  R.addMigration(toDevice(Base + 6 * MiB, 64 * KiB, 130, v1::MIGRATION_CAUSE_USER));
  // Between kernels: nobody's.
  R.addMigration(toDevice(Base + 2 * MiB, 64 * KiB, 250));
  v1::Profile P = build(R);
  ASSERT_FALSE(bool(format::validateProfile(P)));
  uint64_t B = Base / format::kUmBlockBytes;
  const v1::Kernel &K = P.kernels(0);
  ASSERT_EQ(K.blocks_size(), 2);
  EXPECT_EQ(K.blocks(0).block(), B);
  EXPECT_EQ(K.blocks(0).page_mask(), 0b1111u);
  // Pages the prefetcher brought are of unknown direction: read-write downstream.
  EXPECT_EQ(K.blocks(0).mode(), v1::ACCESS_MODE_UNSPECIFIED);
  EXPECT_EQ(K.blocks(1).block(), B + 2);
  EXPECT_EQ(K.blocks(1).page_mask(), 1u);
  EXPECT_EQ(P.kernels(1).blocks_size(), 0);
  // The kernel waited while its pages moved: [115, 125] and [120, 130], not
  // the explicit prefetch's [130, 140].
  EXPECT_EQ(K.fault_stall_ns(), 15u);
  ASSERT_EQ(K.tensors_size(), 2);
  EXPECT_EQ(K.tensors(0).bytes(), 256 * KiB);
}

TEST(Recorder, PcieRates) {
  EXPECT_EQ(pcieBytesPerSecond(0, 16), 0);
  EXPECT_EQ(pcieBytesPerSecond(9, 16), 0);
  EXPECT_NEAR(pcieBytesPerSecond(3, 16), 15.75e9, 0.01e9); // the figure DESIGN.md quotes
}

} // namespace

namespace {

// A launch's words name the allocations live at the launch: a tensor by its
// start or an interior pointer, one freed after the launch and before the
// kernel ran; a by-value word that is no pointer names nothing. What the
// kernel touched without naming it is indirect.
TEST(Recorder, LaunchArgumentsNameTheAllocationsLiveAtTheLaunch) {
  Recorder R({});
  R.setUmCounters(true);
  R.addAllocation(Base + 16 * MiB, 4 * MiB, 0, 1, AllocationSource::Driver); // a library's own
  R.addAllocation(Base, 1 * MiB, 0, 2, AllocationSource::Allocator);
  R.addAllocation(Base + 2 * MiB, 1 * MiB, 0, 3, AllocationSource::Allocator);
  R.addAllocation(Base + 4 * MiB, 1 * MiB, 0, 4, AllocationSource::Allocator);
  R.addKernel(kernel("k", 100, 200)); // correlation id 100
  R.addKernel(kernel("unknown", 300, 400));
  R.addKernel(kernel("unrecorded", 500, 600));
  // Named: tensor 1 (its start), tensor 2 (inside), tensor 3 (freed after
  // the launch and before the kernel ran); 42 and an address past every
  // allocation name nothing.
  R.addLaunchArguments(100, 50, true,
                       {Base, Base + 2 * MiB + 4096, 42, Base + 4 * MiB, Base + 64 * MiB, Base});
  R.addFree(Base + 4 * MiB, 60, AllocationSource::Allocator);
  R.addLaunchArguments(300, 250, false, {Base});
  // The kernel touches tensor 1 (named) and the library's memory (not named).
  R.addFault(fault(Base + 10, 110));
  R.addFault(fault(Base + 17 * MiB, 120));
  v1::Profile P = build(R);
  ASSERT_FALSE(bool(format::validateProfile(P)));
  ASSERT_EQ(P.kernels_size(), 3);
  // Allocations by time: the library's 1, the tensors 2, 3, 4.
  EXPECT_EQ(P.kernels(0).arguments(), v1::KERNEL_ARGUMENTS_SCANNED);
  EXPECT_THAT(P.kernels(0).named_allocations(), ::testing::ElementsAre(2u, 3u, 4u));
  EXPECT_THAT(P.kernels(0).indirect_allocations(), ::testing::ElementsAre(1u));
  EXPECT_EQ(P.kernels(1).arguments(), v1::KERNEL_ARGUMENTS_NO_LAYOUT);
  EXPECT_EQ(P.kernels(1).named_allocations_size(), 0);
  EXPECT_EQ(P.kernels(2).arguments(), v1::KERNEL_ARGUMENTS_UNSPECIFIED);
  EXPECT_THAT(describeProfile(P), HasSubstr("arguments read for 1 kernel(s), not for 1"));
}

// DropUmRecords drops about that fraction of faults, the same ones each run.
TEST(Recorder, DropUmRecordsDropsAFixedRandomShare) {
  auto Kept = [](double Drop) {
    RecorderOptions O;
    O.DropUmRecords = Drop;
    Recorder R(O);
    R.setUmCounters(true);
    R.addAllocation(Base, 64 * MiB, 0, 1, AllocationSource::Allocator);
    R.addKernel(kernel("k", 100, 100000));
    for (uint64_t I = 0; I < 1000; ++I)
      R.addFault(fault(Base + I * 64 * KiB, 200 + I));
    return build(R).faults_size();
  };
  EXPECT_EQ(Kept(0), 1000);
  EXPECT_EQ(Kept(1), 0);
  const int Half = Kept(0.5);
  EXPECT_GT(Half, 430);
  EXPECT_LT(Half, 570);
  EXPECT_EQ(Kept(0.5), Half);
}

} // namespace
