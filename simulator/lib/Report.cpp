//===- Report.cpp - Text, JSON and comparison output of deepum-sim ---------===//
#include "deepum/format/Units.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/FormatVariadic.h"

using namespace deepum::sim;
using deepum::format::formatBytes;
using deepum::format::formatMicros;

/// The iterations lane, below the engine's lanes (1-6, Engine.cpp).
static constexpr int kIterationTid = 7;

void deepum::sim::nameTimelineLanes(deepum::format::TraceWriter &T, const SimResult &R) {
  T.nameProcess(1, llvm::formatv("{0} ({1}, {2}, {3})", R.Model, R.PolicyName, R.DeviceName,
                                 formatBytes(R.GpuMemoryBytes))
                       .str());
  T.nameThread(1, 1, "compute");
  T.nameThread(1, 2, "copy engine HtoD");
  T.nameThread(1, 3, "copy engine DtoH");
  T.nameThread(1, 4, "fault batches");
  T.nameThread(1, 5, "host API calls");
  T.nameThread(1, 6, "discards");
  T.nameThread(1, 7, "populates (driver)");
  T.nameThread(1, kIterationTid, "iterations");
}

void deepum::sim::timelineIteration(deepum::format::TraceWriter &T, unsigned It, unsigned Warmup,
                                    uint64_t BeginNs, uint64_t EndNs) {
  const bool Measured = It >= Warmup;
  T.span(1, kIterationTid,
         llvm::formatv("iteration {0}{1}", It, Measured ? "" : " (warm-up)").str(), "iteration",
         BeginNs, EndNs - BeginNs,
         llvm::json::Object{{"iteration", static_cast<int64_t>(It)},
                            {"measured", Measured},
                            {"duration_ms", static_cast<double>(EndNs - BeginNs) / 1e6}});
}

llvm::StringRef deepum::sim::policyName(Policy P) {
  switch (P) {
  case Policy::Um:
    return "um";
  case Policy::DeepUm:
    return "deepum";
  case Policy::SwapLayer:
    return "swap-layer";
  case Policy::SwapOpt:
    return "swap-opt";
  case Policy::Offload:
    return "offload";
  case Policy::Plan:
    return "plan";
  case Policy::Ideal:
    return "ideal";
  }
  return "um";
}

llvm::Expected<Policy> deepum::sim::parsePolicy(llvm::StringRef Name) {
  for (Policy P : {Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt,
                   Policy::Offload, Policy::Plan, Policy::Ideal})
    if (policyName(P) == Name)
      return P;
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "unknown policy '" + Name.str() +
                                     "' (um, deepum, swap-layer, swap-opt, offload, plan, ideal)");
}

/// deepum-sim --json's schema version (docs/tools.md): raised when a field is
/// renamed or removed or changes meaning; new fields do not raise it.
static constexpr int64_t kJsonSchema = 1;

llvm::json::Value deepum::sim::toJson(const SimResult &R) {
  auto U = [](uint64_t X) { return static_cast<int64_t>(X); };
  llvm::json::Object O{
      {"schema", static_cast<int64_t>(kJsonSchema)},
      {"policy", R.PolicyName},
      {"device", R.DeviceName},
      {"model", R.Model},
      {"gpu_memory_bytes", U(R.GpuMemoryBytes)},
      {"footprint_bytes", U(R.FootprintBytes)},
      {"iterations", static_cast<int64_t>(R.MeasuredIterations)},
      {"warmup_iterations", static_cast<int64_t>(R.WarmupIterations)},
      {"kernels_per_iteration", U(R.KernelsPerIteration)},
      {"durations", R.Durations},
      {"profile_device", R.ProfileDevice},
      {"iteration_us", R.IterationUs},
      {"repeats_every", static_cast<int64_t>(R.RepeatsEvery)},
      {"iteration_spread_us", R.IterationSpreadUs},
      {"ideal_us", R.IdealUs},
      {"bound_us", R.BoundUs},
      {"bound_or_ideal_us", R.BoundOrIdealUs},
      {"cut_bound_us", R.CutBoundUs},
      {"lower_bound_us", R.LowerBoundUs},
      {"bounds_compute_only", R.BoundsComputeOnly},
      {"stall_us", R.StallUs},
      {"slowdown", R.SlowdownOverIdeal},
      {"faults", R.Faults},
      {"fault_batches", R.FaultBatches},
      {"bytes_htod", R.BytesHtoD},
      {"bytes_dtoh", R.BytesDtoH},
      {"bytes_prefetched", R.BytesPrefetched},
      {"bytes_driver_prefetched", R.BytesDriverPrefetched},
      {"bytes_demand", R.BytesDemand},
      {"evictions", R.Evictions},
      {"bytes_discarded", R.BytesDiscarded},
      {"prefetch_hits", R.PrefetchHits},
      {"late_prefetches", R.LatePrefetches},
      {"thrashing_events", R.ThrashingEvents},
      {"throttled_batches", R.ThrottledBatches},
      {"lost_reads", R.LostReads},
      {"lost_contents", R.LostContents},
      {"peak_resident_bytes", U(R.PeakResidentBytes)},
      {"bytes_copied_out", R.BytesCopiedOut},
      {"bytes_copied_in", R.BytesCopiedIn},
      {"policy_peak_bytes", U(R.PolicyPeakBytes)},
      {"invariant_violations", U(R.InvariantViolations)},
  };
  return O;
}

/// What the reports say of SimResult::BoundsComputeOnly.
static constexpr llvm::StringLiteral kComputeOnlyNote =
    "bounds: compute only; the profile's allocations were too many to count within the "
    "simulator's limit";

void deepum::sim::print(llvm::raw_ostream &OS, const SimResult &R) {
  auto B = [](double X) { return formatBytes(static_cast<uint64_t>(X)); };
  OS << llvm::formatv("policy {0} on {1}, {2} of GPU memory ({3:F2}x oversubscribed)\n",
                      R.PolicyName, R.DeviceName, formatBytes(R.GpuMemoryBytes),
                      R.GpuMemoryBytes ? static_cast<double>(R.FootprintBytes) /
                                             static_cast<double>(R.GpuMemoryBytes)
                                       : 0.0);
  OS << llvm::formatv("model {0}: {1} kernels per iteration, footprint {2}\n",
                      R.Model.empty() ? "(unnamed)" : R.Model, R.KernelsPerIteration,
                      formatBytes(R.FootprintBytes));
  OS << llvm::formatv("steady state: mean of {0} iterations after {1} warm-up; kernel "
                      "durations {2}\n",
                      R.MeasuredIterations, R.WarmupIterations,
                      R.Durations == "roofline"
                          ? "recomputed (roofline of " + R.DeviceName + ")"
                          : "as recorded on " +
                                (R.ProfileDevice.empty() ? std::string("?") : R.ProfileDevice));
  OS << llvm::formatv("  iteration      {0}  ({1:F2}x ideal)\n", formatMicros(R.IterationUs),
                      R.SlowdownOverIdeal);
  OS << llvm::formatv("  ideal          {0}\n", formatMicros(R.IdealUs));
  OS << llvm::formatv("  bound          {0}  (max with ideal {1})\n", formatMicros(R.BoundUs),
                      formatMicros(R.BoundOrIdealUs));
  OS << llvm::formatv("  cut bound      {0}  (lower bound {1})\n", formatMicros(R.CutBoundUs),
                      formatMicros(R.LowerBoundUs));
  if (R.BoundsComputeOnly)
    OS << "  (" << kComputeOnlyNote << ")\n";
  OS << llvm::formatv("  stall          {0}\n", formatMicros(R.StallUs));
  OS << llvm::formatv("  faults         {0:F1} in {1:F1} batches\n", R.Faults, R.FaultBatches);
  OS << llvm::formatv("  htod           {0} (demand {1}, driver prefetch {2}, prefetch {3})\n",
                      B(R.BytesHtoD), B(R.BytesDemand), B(R.BytesDriverPrefetched),
                      B(R.BytesPrefetched));
  OS << llvm::formatv("  dtoh           {0}; {1:F1} chunks evicted, {2} discarded\n",
                      B(R.BytesDtoH), R.Evictions, B(R.BytesDiscarded));
  OS << llvm::formatv("  prefetch hits  {0:F1} (late {1:F1})\n", R.PrefetchHits, R.LatePrefetches);
  OS << llvm::formatv("  thrashing      {0:F1} events, {1:F1} throttled batches\n",
                      R.ThrashingEvents, R.ThrottledBatches);
  OS << llvm::formatv("  peak resident  {0}\n", formatBytes(R.PeakResidentBytes));
  if (R.MeasuredIterations > 1 && R.RepeatsEvery == 0)
    OS << llvm::formatv("  warning: the {0} measured iterations differ and do not repeat within "
                        "them (they span {1}): not shown to be a steady state; raise --warmup "
                        "or --iterations\n",
                        R.MeasuredIterations, formatMicros(R.IterationSpreadUs));
  else if (R.RepeatsEvery > 1 && R.MeasuredIterations % R.RepeatsEvery != 0)
    OS << llvm::formatv("  warning: iteration times repeat every {0} iterations (they span {1}); "
                        "the mean of {2} is not over whole repeats: measure a multiple of {0}\n",
                        R.RepeatsEvery, formatMicros(R.IterationSpreadUs), R.MeasuredIterations);
  if (R.LostReads > 0)
    OS << llvm::formatv("  warning: {0:F1} pages per iteration read after being discarded\n",
                        R.LostReads);
  if (R.LostContents > 0)
    OS << llvm::formatv("  warning: {0:F1} pages per iteration read whose contents the policy "
                        "dropped\n",
                        R.LostContents);
  if (R.InvariantViolations)
    OS << llvm::formatv("  warning: {0} invariant violations\n", R.InvariantViolations);
}

void deepum::sim::printComparison(llvm::raw_ostream &OS, const std::vector<SimResult> &Rs) {
  if (Rs.empty())
    return;
  const SimResult &F = Rs.front();
  OS << llvm::formatv(
      "{0} on {1}, {2} of GPU memory, footprint {3}; ideal {4}, bound {5}, cut bound {6}\n",
      F.Model.empty() ? "(unnamed)" : F.Model, F.DeviceName, formatBytes(F.GpuMemoryBytes),
      formatBytes(F.FootprintBytes), formatMicros(F.IdealUs), formatMicros(F.BoundUs),
      formatMicros(F.CutBoundUs));
  if (F.BoundsComputeOnly)
    OS << "(" << kComputeOnlyNote << ")\n";
  OS << llvm::formatv("{0,-13} {1,14} {2,9} {3,12} {4,10} {5,12} {6,12} {7,10} {8,10}\n", "policy",
                      "iteration", "x ideal", "stall", "faults", "htod", "dtoh", "evictions",
                      "pf hits");
  for (const SimResult &R : Rs)
    OS << llvm::formatv("{0,-13} {1,14} {2,9:F2} {3,12} {4,10:F0} {5,12} {6,12} {7,10:F0} "
                        "{8,10:F0}\n",
                        R.PolicyName,
                        formatMicros(R.IterationUs), R.SlowdownOverIdeal, formatMicros(R.StallUs),
                        R.Faults, formatBytes(static_cast<uint64_t>(R.BytesHtoD)),
                        formatBytes(static_cast<uint64_t>(R.BytesDtoH)), R.Evictions,
                        R.PrefetchHits);
}
