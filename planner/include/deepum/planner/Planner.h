//===- deepum/planner/Planner.h - Profile -> plan ----------------------------===//
//
// deepum-plan as a library. compilePlan runs the whole pipeline on a profile
// already in memory; runPlan is the tool (read, compile, write whole).
//
//   1. iterations and execution IDs           (Trace.h: analyzeIterations)
//   2. reference iteration in arena space,
//      lifetime-aware pool layout             (Trace.h: buildTrace, layoutPool)
//   3. schedule: prefetch, swap or demand     (Schedule.h)
//   4. correlation tables, metadata, summary  (here)
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PLANNER_PLANNER_H
#define DEEPUM_PLANNER_PLANNER_H

#include "deepum/format/AccessSources.h"
#include "deepum/planner/Schedule.h"
#include "deepum/planner/Trace.h"

#include "deepum/v1/plan.pb.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace deepum::planner {

enum class Strategy { Prefetch, Swap, Demand };
/// Every strategy, for tests and generators that must cover them all.
inline constexpr Strategy kStrategies[] = {Strategy::Prefetch, Strategy::Swap, Strategy::Demand};

/// "prefetch" / "swap" / "demand".
llvm::Expected<Strategy> parseStrategy(llvm::StringRef Name);
llvm::StringRef strategyName(Strategy S);

struct PlanOptions {
  /// GPU memory the plan may use, bytes (> 0).
  uint64_t GpuMemoryBytes = 0;
  /// Device model for the cost model (--device); empty = derived from the
  /// profile's device (its link bandwidth) under the name "profile".
  std::string DeviceModel;
  /// --device-file: models whose fields override or add to the built-in ones.
  std::string DeviceFile;
  Strategy Strat = Strategy::Prefetch;
  /// IDs hashed into each position's context ID (the ID and its predecessors).
  unsigned ContextLength = 4;
  /// Informational: the profile's file name, stored in the plan.
  std::string ProfileSource;
  /// Where progress lines go once a run has taken ProgressDelaySeconds; null
  /// = nowhere (deepum/tools/Progress.h decides for the tool).
  llvm::raw_ostream *Progress = nullptr;
  double ProgressDelaySeconds = 2;
  /// Each kernel's access set takes every byte of the allocations its
  /// arguments name, beside its recorded accesses (format::addNamedAccesses);
  /// false (--ignore-arguments): the recorded accesses alone.
  bool UseArguments = true;
  /// The copy path (COPY_OUT, COPY_IN) for blocks the launch-time guard
  /// protects, where the device model has explicit-copy rates; false
  /// (--no-copy-path): Unified Memory's eviction only.
  bool CopyPath = true;
  /// The pool layout's order (--layout); none: the prefetch strategy lays out
  /// both ways and keeps the one its cost model predicts faster, the others
  /// largest first.
  std::optional<LayoutOrder> Layout;
};

struct PlanResult {
  deepum::v1::Plan Plan;
  PoolStats Pool;
  ScheduleStats Stats;
  uint64_t FootprintBytes = 0;
  /// Each source's bytes in the profile's access sets (before widening).
  format::AccessSourceReport Sources;
};

/// Compiles `P` into a plan. Errors name the problem in one line (the caller
/// prefixes the file name).
llvm::Expected<PlanResult> compilePlan(const deepum::v1::Profile &P, const PlanOptions &Opts);

struct PlanToolOptions {
  std::string Input;
  std::string Output;
  std::string GpuMemory; // "8GiB", parsed with format::parseByteSize
  std::string DeviceModel;
  std::string DeviceFile;
  std::string Strategy = "prefetch";
  /// A natural-mode profile of the same program whose kernel durations are
  /// the compute times (format::takeComputeTimes); empty = the profile's own.
  std::string ComputeFrom;
  /// Print the plan's summary to this stream after writing it.
  bool PrintSummary = true;
  /// PlanOptions::UseArguments.
  bool UseArguments = true;
  /// PlanOptions::CopyPath.
  bool CopyPath = true;
  /// PlanOptions::Layout: auto, largest-first or allocation-order.
  std::string Layout = "auto";
  /// Progress lines (PlanOptions::Progress); null = none.
  llvm::raw_ostream *Progress = nullptr;
  double ProgressDelaySeconds = 2;
};

/// deepum-plan: reads, compiles, writes the plan whole; progress to
/// Opts.Progress; with `-o -` the summary goes to `Err`.
llvm::Error runPlan(const PlanToolOptions &Opts, llvm::raw_ostream &Out, llvm::raw_ostream &Err);

} // namespace deepum::planner

#endif // DEEPUM_PLANNER_PLANNER_H
