//===- deepum/sim/SimTool.h - deepum-sim as a library -----------------------===//
#ifndef DEEPUM_SIM_SIMTOOL_H
#define DEEPUM_SIM_SIMTOOL_H

#include "deepum/sim/Simulator.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace deepum::sim {

struct SimToolOptions {
  /// Profile to replay ("-" = standard input).
  std::string ProfilePath;
  /// "um", "deepum", "swap-layer", "swap-opt", "offload", "plan", "ideal".
  std::string Policy = "um";
  /// Plan file for --policy plan (and added to --compare when given).
  std::string PlanPath;
  /// Who replays a plan: the executor driving the simulated GPU
  /// (deepum::executor::sim::executorPlanPolicy), set by tools/deepum-sim.cpp;
  /// this library does not link the executor. Without it a plan is an error.
  PlanPolicyFactory PlanPolicy;
  /// Device model name and an optional JSON file overriding its fields.
  std::string Device = "v100-pcie-16gb";
  std::string DeviceFile;
  /// GPU memory simulated, e.g. "16GiB"; empty = see Oversubscription, then the
  /// plan's budget (plan policy), then the device's memory.
  std::string GpuMemory;
  /// capacity = footprint / ratio; 0 = not given. Negative (or given with
  /// GpuMemory) is an error.
  double Oversubscription = 0;
  unsigned Iterations = 10;
  unsigned Warmup = 2;
  unsigned Lookahead = 8;
  /// DeepUM's settings (SimOptions::DeepUmLookahead, DeepUmWatermark): its
  /// lookahead (0 = Lookahead) and free-memory watermark (fraction, [0, 1)).
  unsigned DeepUmLookahead = 0;
  double DeepUmWatermark = 0;
  /// Replace DeepUM's result with the best setting tuneDeepUm finds (the
  /// setting is printed, and in JSON: deepum_lookahead, deepum_watermark).
  bool DeepUmTune = false;
  /// Kernel durations: "auto", "profile" or "roofline" (SimOptions::Durations).
  std::string Durations = "auto";
  /// A natural-mode profile of the same program whose kernel durations are
  /// the compute times (format::takeComputeTimes); empty = the profile's own.
  std::string ComputeFrom;
  bool Json = false;
  /// Every policy on the profile, one table (or a JSON array).
  bool Compare = false;
  /// Check invariants on every kernel; a violation is an error.
  bool Check = false;
  /// SimOptions::HostWaitsEachIteration.
  bool HostSync = true;
  /// When not empty, write a Perfetto/Chrome-trace timeline of the last
  /// iteration ("-": standard output). With Compare, one per policy:
  /// timelinePath(PerfettoOut, policy).
  std::string PerfettoOut;
  /// Progress lines, one per policy simulated and timeline written, once the
  /// run has taken ProgressDelaySeconds; null = none
  /// (deepum/tools/Progress.h decides for the tool).
  llvm::raw_ostream *Progress = nullptr;
  double ProgressDelaySeconds = 2;
};

llvm::Error runSim(const SimToolOptions &Opts, llvm::raw_ostream &OS);

/// Where --compare --perfetto OUT writes the timeline of `Policy` (the row's
/// name: "um", "deepum", ..., "plan"): OUT/POLICY.json when OUT is a
/// directory or ends in '/', else OUT without its ".json" then
/// ".POLICY.json" (trace.json -> trace.um.json, trace.deepum.json, ...).
std::string timelinePath(llvm::StringRef Out, llvm::StringRef Policy);

} // namespace deepum::sim

#endif // DEEPUM_SIM_SIMTOOL_H
