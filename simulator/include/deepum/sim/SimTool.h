//===- deepum/sim/SimTool.h - deepum-sim as a library -----------------------===//
#ifndef DEEPUM_SIM_SIMTOOL_H
#define DEEPUM_SIM_SIMTOOL_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace deepum::sim {

struct SimToolOptions {
  /// Profile to replay ("-" = standard input).
  std::string ProfilePath;
  /// "um", "deepum", "swap-layer", "swap-opt", "plan", "ideal".
  std::string Policy = "um";
  /// Plan file for --policy plan (and added to --compare when given).
  std::string PlanPath;
  /// Device model name and an optional JSON file overriding its fields.
  std::string Device = "v100-pcie-16gb";
  std::string DeviceFile;
  /// GPU memory simulated, e.g. "16GiB"; empty = see Oversubscription, then the
  /// plan's budget (plan policy), then the device's memory.
  std::string GpuMemory;
  /// When > 0 and GpuMemory is empty: capacity = footprint / ratio.
  double Oversubscription = 0;
  unsigned Iterations = 10;
  unsigned Warmup = 2;
  unsigned Lookahead = 8;
  /// Kernel durations: "auto", "profile" or "roofline" (SimOptions::Durations).
  std::string Durations = "auto";
  bool Json = false;
  /// Every policy on the profile, one table (or a JSON array).
  bool Compare = false;
  /// Check invariants on every kernel; a violation is an error.
  bool Check = false;
  /// When not empty, write a Perfetto/Chrome-trace timeline of the last iteration.
  std::string PerfettoOut;
};

llvm::Error runSim(const SimToolOptions &Opts, llvm::raw_ostream &OS);

} // namespace deepum::sim

#endif // DEEPUM_SIM_SIMTOOL_H
