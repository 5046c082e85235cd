//===- Simulator.cpp - Replaying the steady-state iteration under a policy -===//
//
// One loop for every policy (deepum/sim/Policy.h): the engine steps the
// iteration's kernels, the policy acts on what the host sees.
//
//===----------------------------------------------------------------------===//
#include "Workload.h"

#include "deepum/format/Format.h"
#include "deepum/format/Roofline.h"
#include "deepum/format/Signature.h"
#include "deepum/format/Units.h"
#include "deepum/sim/Engine.h"
#include "deepum/sim/Policy.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>

using namespace deepum::sim;
using namespace deepum::sim::detail;

namespace {

llvm::Error fail(const llvm::Twine &Msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg.str());
}

/// Recomputes durations with the device's roofline, exactly as the CPU
/// tracer does (python/deepum_trace/devices.py kernel_ns). Returns false, and
/// changes nothing, when a kernel lacks roofline inputs or the device model
/// lacks peaks.
bool rooflineDurations(std::vector<uint64_t> &Out, const deepum::v1::Profile &P, uint32_t First,
                       uint32_t Count, const DeviceModel &D) {
  const deepum::format::RooflineRates Rates{D.MatmulFlopsPerSecond, D.VectorFlopsPerSecond,
                                            D.DramBytesPerSecond,   D.MatmulEfficiency,
                                            D.MemoryEfficiency,     D.KernelMinUs};
  if (!Rates.valid())
    return false;
  std::vector<uint64_t> Ns(Count);
  for (uint32_t K = 0; K < Count; ++K) {
    const deepum::v1::Kernel &Kr = P.kernels(static_cast<int>(First + K));
    if (!deepum::format::hasRooflineInputs(Kr))
      return false;
    Ns[K] = deepum::format::rooflineNs(Kr, Rates);
  }
  Out = std::move(Ns);
  return true;
}

} // namespace

std::pair<uint32_t, uint32_t> deepum::sim::steadyStateIteration(const deepum::v1::Profile &P) {
  return steadyIteration(P);
}

llvm::Expected<std::pair<uint32_t, uint32_t>>
deepum::sim::planIteration(const deepum::v1::Plan &Plan, const deepum::v1::Profile &P,
                           llvm::StringRef PlanName, llvm::StringRef ProfileName) {
  const uint32_t N = static_cast<uint32_t>(Plan.position_ids_size());
  const uint32_t K = static_cast<uint32_t>(P.kernels_size());
  if (N == 0)
    return fail(PlanName + ": the plan has no launches");
  auto matches = [&](uint32_t First) {
    for (uint32_t I = 0; I < N; ++I)
      if (deepum::format::executionId(P.kernels(static_cast<int>(First + I))) !=
          Plan.position_ids(static_cast<int>(I)))
        return false;
    return true;
  };
  uint32_t Ref = Plan.metadata().reference_iteration();
  if (Ref < static_cast<uint32_t>(P.iterations_size())) {
    const deepum::v1::Iteration &It = P.iterations(static_cast<int>(Ref));
    if (It.kernel_count() == N && It.first_kernel() + uint64_t{N} <= K &&
        matches(It.first_kernel()))
      return std::make_pair(It.first_kernel(), N);
  }
  for (uint32_t First = K >= N ? K - N + 1 : 0; First-- > 0;)
    if (matches(First))
      return std::make_pair(First, N);
  return fail(llvm::formatv("{0} does not match {1}: no run of {2} kernels in the profile has the "
                            "plan's launch sequence (was the plan compiled from another profile?)",
                            PlanName, ProfileName, N)
                  .str());
}

llvm::Expected<std::vector<uint64_t>>
deepum::sim::kernelDurations(const deepum::v1::Profile &P, const DeviceModel &Device,
                             SimOptions::DurationSource Source, bool *Roofline,
                             std::optional<std::pair<uint32_t, uint32_t>> Range) {
  auto [First, Count] = Range ? *Range : steadyIteration(P);
  if (First + static_cast<uint64_t>(Count) > static_cast<uint64_t>(P.kernels_size()))
    return fail("the steady-state iteration runs past the last kernel");
  std::vector<uint64_t> Ns;
  bool OtherDevice = !P.device().name().empty() && P.device().name() != Device.Name;
  bool Recomputed = false;
  if (Source == SimOptions::DurationSource::Roofline ||
      (Source == SimOptions::DurationSource::Auto && OtherDevice)) {
    Recomputed = rooflineDurations(Ns, P, First, Count, Device);
    if (!Recomputed && Source == SimOptions::DurationSource::Roofline)
      return fail("cannot recompute durations for " + Device.Name +
                  ": kernels without flops/dram_bytes or a device model without roofline peaks");
  }
  if (!Recomputed)
    for (uint32_t K = First; K < First + Count; ++K)
      Ns.push_back(deepum::format::computeNs(P.kernels(static_cast<int>(K))));
  if (Roofline)
    *Roofline = Recomputed;
  return Ns;
}

uint64_t deepum::sim::footprintBytes(const deepum::v1::Profile &P) {
  auto [First, Count] = steadyIteration(P);
  std::vector<uint64_t> Blocks;
  for (uint32_t K = First; K < First + Count && K < static_cast<uint32_t>(P.kernels_size()); ++K)
    for (const deepum::v1::BlockAccess &B : P.kernels(static_cast<int>(K)).blocks())
      Blocks.push_back(B.block());
  std::sort(Blocks.begin(), Blocks.end());
  return static_cast<uint64_t>(std::unique(Blocks.begin(), Blocks.end()) - Blocks.begin()) *
         deepum::format::kUmBlockBytes;
}

namespace {

using KernelRange = std::pair<uint32_t, uint32_t>;

/// The kernels of the profile the plan policy replays (the plan's launches);
/// none for the other policies, which replay the steady-state iteration.
llvm::Expected<std::optional<KernelRange>> replayedRange(const deepum::v1::Profile &P,
                                                         const SimOptions &O) {
  if (O.Pol != Policy::Plan)
    return std::nullopt;
  llvm::Expected<KernelRange> PlanRange = planIteration(*O.Plan, P, O.PlanName, O.ProfileName);
  if (!PlanRange)
    return PlanRange.takeError();
  return std::optional<KernelRange>(*PlanRange);
}

/// The workload the policy replays: the plan's own for the plan policy, the
/// profile's steady-state iteration for the others.
llvm::Expected<Workload> replayedWorkload(const deepum::v1::Profile &P, const SimOptions &O) {
  llvm::Expected<Workload> WOr = O.Pol == Policy::Plan
                                     ? workloadFromPlan(*O.Plan, P, O.PlanName, O.ProfileName)
                                     : workloadFromProfile(P);
  if (!WOr) // plan errors name both files already
    return O.Pol == Policy::Plan ? WOr.takeError()
                                 : fail(O.ProfileName + ": " + llvm::toString(WOr.takeError()));
  return WOr;
}

/// Sets the workload's kernel durations and what the result says of the run
/// before it runs: policy, device, model, capacity, footprint, iterations.
llvm::Error describeRun(SimResult &R, Workload &W, const deepum::v1::Profile &P,
                        const SimOptions &O, std::optional<KernelRange> Range) {
  R.ProfileDevice = P.device().name();
  bool Roofline = false;
  llvm::Expected<std::vector<uint64_t>> Durations =
      kernelDurations(P, O.Device, O.Durations, &Roofline, Range);
  if (!Durations)
    return fail(O.ProfileName + ": " + llvm::toString(Durations.takeError()));
  W.DurationNs = std::move(*Durations);
  R.Durations = Roofline ? "roofline" : "profile";
  R.PolicyName = policyName(O.Pol).str();
  R.DeviceName = O.Device.Name;
  R.Model = P.workload().model();
  R.GpuMemoryBytes = O.GpuMemoryBytes;
  if (!R.GpuMemoryBytes && O.Pol == Policy::Plan)
    R.GpuMemoryBytes = O.Plan->metadata().gpu_memory_bytes();
  if (!R.GpuMemoryBytes)
    R.GpuMemoryBytes = O.Device.MemoryBytes;
  if (!R.GpuMemoryBytes)
    return fail("no GPU memory size: give --gpu-memory or a device model with memory_bytes");
  R.FootprintBytes = W.UmBlocks.size() * deepum::format::kUmBlockBytes;
  R.MeasuredIterations = O.Iterations;
  R.WarmupIterations = O.WarmupIterations;
  R.KernelsPerIteration = W.Kernels;
  return llvm::Error::success();
}

/// The smallest period with which the iteration times repeat, seen at least
/// twice over (up to half of them); 0 when none does. Times within a
/// nanosecond in a million are alike (the engine counts whole nanoseconds).
unsigned repeatPeriod(const std::vector<uint64_t> &Ns) {
  for (size_t P = 1; 2 * P <= Ns.size(); ++P) {
    bool Repeats = true;
    for (size_t I = 0; I + P < Ns.size() && Repeats; ++I) {
      const uint64_t A = Ns[I], B = Ns[I + P];
      Repeats = (A > B ? A - B : B - A) <= 1 + std::max(A, B) / 1'000'000;
    }
    if (Repeats)
      return static_cast<unsigned>(P);
  }
  return 0;
}

/// The ideal time and the lower bounds on the iteration at R's capacity.
llvm::Error setBounds(SimResult &R, const Workload &W, const deepum::v1::Profile &P,
                      const SimOptions &O, std::optional<KernelRange> Range) {
  R.IdealUs = static_cast<double>(W.idealNs()) / 1e3;
  // The bounds count the profile's data (its allocations' bytes, with their
  // lifetimes), whatever the policy and whatever the layout: a plan, which
  // lays the allocations out in its own arena, is judged against the same
  // bounds as every baseline.
  std::shared_ptr<Workload> Data = W.Data;
  if (!Data && !W.DataOverBudget) {
    llvm::Expected<Workload> PW = workloadFromProfile(P, Range);
    if (!PW)
      return fail(O.ProfileName + ": " + llvm::toString(PW.takeError()));
    Data = PW->Data;
  }
  if (!Data) {
    // The profile's data was too costly to count (dataWorkBudget): compute
    // alone is still a bound no policy beats.
    R.BoundsComputeOnly = true;
    R.BoundUs = 0;
    R.BoundOrIdealUs = R.CutBoundUs = R.LowerBoundUs = R.IdealUs;
    return llvm::Error::success();
  }
  Data->DurationNs = W.DurationNs;
  const Workload &BW = *Data;
  auto [InBytes, OutBytes] = transferBoundBytes(BW, R.GpuMemoryBytes);
  // Each direction has its own engines: the slower of the two, each at the
  // fastest legal path of its direction (Unified Memory's migrations or an
  // explicit copy, whichever the device model says is faster), so that no
  // policy, whatever its mechanism, beats the bounds.
  const double InRate = O.Device.fastestHostToDeviceBytesPerSecond(),
               OutRate = O.Device.fastestDeviceToHostBytesPerSecond();
  R.BoundUs = std::max(static_cast<double>(InBytes) / InRate,
                       static_cast<double>(OutBytes) / OutRate) *
              1e6;
  R.BoundOrIdealUs = std::max(R.IdealUs, R.BoundUs);
  // The cut bound includes compute, so it is never below ideal; the best
  // lower bound known is the larger of it and the total-bytes bound.
  R.CutBoundUs = cutBoundNs(BW, R.GpuMemoryBytes, InRate, OutRate) / 1e3;
  R.LowerBoundUs = std::max(R.BoundOrIdealUs, R.CutBoundUs);
  return llvm::Error::success();
}

/// The policy acting on `W`: the one SimOptions::PlanPolicy makes for the
/// plan policy, this library's for the others.
llvm::Expected<std::unique_ptr<SimPolicy>> makeSimPolicy(const Workload &W, const SimOptions &O,
                                                         uint64_t CapacityBytes) {
  if (O.Pol != Policy::Plan)
    return makePolicy(O.Pol, W, O, CapacityBytes);
  if (!O.PlanPolicy)
    return fail("policy 'plan' is replayed by the executor: this build gives the simulator no "
                "plan policy (SimOptions::PlanPolicy, deepum_executor_sim)");
  return O.PlanPolicy(*O.Plan, O);
}

/// Infinite memory: kernels back to back, nothing moves.
void replayWithoutMemory(SimResult &R, const Workload &W, const deepum::v1::Profile &P,
                         deepum::format::TraceWriter *Timeline) {
  R.IterationUs = R.IdealUs;
  R.SlowdownOverIdeal = 1;
  R.RepeatsEvery = 1; // every iteration alike
  if (!Timeline)
    return;
  nameTimelineLanes(*Timeline, R);
  uint64_t T = 0;
  for (uint32_t K = 0; K < W.Kernels; ++K) {
    Timeline->span(1, 1, P.kernels(static_cast<int>(W.FirstKernel + K)).name(), "compute", T,
                   W.DurationNs[K]);
    T += W.DurationNs[K];
  }
  timelineIteration(*Timeline, 0, 0, 0, T);
}

/// Warm-up and measured iterations on the engine, the policy acting on what
/// the host sees; fills R's iteration time and per-iteration statistics.
llvm::Error replayOnEngine(SimResult &R, const Workload &W, const deepum::v1::Profile &P,
                           const SimOptions &O, SimPolicy &Pol,
                           deepum::format::TraceWriter *Timeline) {
  Engine E(O.Device, R.GpuMemoryBytes);
  if (llvm::Error Err = Pol.attach(E, R.GpuMemoryBytes))
    return Err;
  const uint64_t FirstBlock = Pol.firstUmBlock();
  for (uint64_t B : W.UmBlocks)
    (void)E.blockId(FirstBlock + B); // dense ids equal the workload's
  E.setCheckInvariants(O.CheckInvariants);
  if (Timeline)
    nameTimelineLanes(*Timeline, R);

  const unsigned Total = O.WarmupIterations + O.Iterations;
  EngineStats Before;
  uint64_t MeasureBeginNs = 0;
  std::vector<uint64_t> MeasuredNs; // each measured iteration's time
  for (unsigned It = 0; It < Total; ++It) {
    if (It == O.WarmupIterations) {
      Before = E.stats();
      MeasureBeginNs = E.computeEndNs();
    }
    bool Record = Timeline && It + std::max(1u, O.TimelineIterations) >= Total;
    if (Record)
      E.setTimeline(Timeline);
    const uint64_t IterationBeginNs = E.computeEndNs();
    if (O.HostWaitsEachIteration)
      E.hostWaitUntil(IterationBeginNs); // loss.item(): the step's kernels are done
    for (uint32_t K = 0; K < W.Kernels; ++K) {
      // Host-side events of this position, in time order: frees, then the
      // data loader's writes, then the launch the policy acts on.
      if (!W.dead(K).empty())
        Pol.allocationsFreed(E, K, W.dead(K));
      for (const BlockUse &H : W.hostWrites(K))
        E.hostWritePages(H.Block, H.PageMask);
      Pol.launchObserved(E, K);
      llvm::StringRef Name =
          Record ? llvm::StringRef(P.kernels(static_cast<int>(W.FirstKernel + K)).name())
                 : llvm::StringRef("kernel");
      // What the launch reads that someone produced before (not memory
      // allocated anew, by the profile's lifetimes) must still exist: a
      // policy that dropped it ran on data it destroyed.
      if (!W.FreshMasks.empty())
        for (uint32_t I = W.UseBegin[K]; I < W.UseBegin[K + 1]; ++I)
          E.expectContents(W.Uses[I].Block, W.boundReads(I));
      if (llvm::Error Err = E.launch(W.uses(K), W.DurationNs[K], Name))
        return fail(O.ProfileName + ": " + llvm::toString(std::move(Err)));
      Pol.kernelEnded(E, K);
    }
    if (Timeline)
      timelineIteration(*Timeline, It, O.WarmupIterations, IterationBeginNs, E.computeEndNs());
    if (It >= O.WarmupIterations)
      MeasuredNs.push_back(E.computeEndNs() - IterationBeginNs);
  }
  if (llvm::Error Err = Pol.finish())
    return Err;

  const EngineStats &S = E.stats();
  const double IdealNs = static_cast<double>(W.idealNs());
  R.IterationUs = static_cast<double>(E.computeEndNs() - MeasureBeginNs) / O.Iterations / 1e3;
  R.SlowdownOverIdeal = IdealNs > 0 ? R.IterationUs * 1e3 / IdealNs : 1;
  fillPerIteration(R, Before, S, O.Iterations);
  R.RepeatsEvery = repeatPeriod(MeasuredNs);
  auto [Fastest, Slowest] = std::minmax_element(MeasuredNs.begin(), MeasuredNs.end());
  R.IterationSpreadUs = static_cast<double>(*Slowest - *Fastest) / 1e3;
  R.InvariantViolations = S.InvariantViolations + (O.CheckInvariants ? E.verifyAccounting() : 0);
  return llvm::Error::success();
}

} // namespace

namespace {

/// simulate() with the policy `MakePolicy` makes for the workload at the
/// run's capacity.
llvm::Expected<SimResult> simulateWith(
    const deepum::v1::Profile &P, const SimOptions &O, deepum::format::TraceWriter *Timeline,
    llvm::function_ref<llvm::Expected<std::unique_ptr<SimPolicy>>(const Workload &, uint64_t)>
        MakePolicy) {
  if (O.Iterations == 0)
    return fail("--iterations must be at least 1");
  if (O.Pol == Policy::Plan && !O.Plan)
    return fail("policy 'plan' needs a plan (--plan FILE)");

  llvm::Expected<std::optional<KernelRange>> Range = replayedRange(P, O);
  if (!Range)
    return Range.takeError();
  llvm::Expected<Workload> W = replayedWorkload(P, O);
  if (!W)
    return W.takeError();
  SimResult R;
  if (llvm::Error Err = describeRun(R, *W, P, O, *Range))
    return llvm::Expected<SimResult>(std::move(Err));
  if (llvm::Error Err = setBounds(R, *W, P, O, *Range))
    return llvm::Expected<SimResult>(std::move(Err));

  // The policy may keep a reference to the workload: W outlives it.
  llvm::Expected<std::unique_ptr<SimPolicy>> Pol = MakePolicy(*W, R.GpuMemoryBytes);
  if (!Pol)
    return Pol.takeError();
  R.PolicyPeakBytes = (*Pol)->ownPeakBytes();
  if (!(*Pol)->usesMemory()) {
    replayWithoutMemory(R, *W, P, Timeline);
    return R;
  }
  if (llvm::Error Err = replayOnEngine(R, *W, P, O, **Pol, Timeline))
    return llvm::Expected<SimResult>(std::move(Err));
  return R;
}

} // namespace

llvm::Expected<SimResult> deepum::sim::simulate(const deepum::v1::Profile &P, const SimOptions &O,
                                                deepum::format::TraceWriter *Timeline) {
  return simulateWith(P, O, Timeline, [&](const Workload &W, uint64_t Capacity) {
    return makeSimPolicy(W, O, Capacity);
  });
}

llvm::Expected<SimResult>
deepum::sim::detail::simulateSchedule(const deepum::v1::Profile &P, const SimOptions &O,
                                      llvm::function_ref<Schedule(const Workload &)> MakeSchedule) {
  return simulateWith(
      P, O, nullptr,
      [&](const Workload &W, uint64_t) -> llvm::Expected<std::unique_ptr<SimPolicy>> {
        return makeSchedulePolicy(W, MakeSchedule(W));
      });
}
