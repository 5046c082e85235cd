//===- deepum/format/Summary.h - What a profile or plan holds, in numbers ---===//
//
// The summaries deepum-inspect prints. Keys of the JSON form are stable and
// documented in the README; add keys, never rename them. Byte totals are
// uint64 and saturate at UINT64_MAX instead of wrapping (a file may claim any
// size); peaks are computed exactly.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_SUMMARY_H
#define DEEPUM_FORMAT_SUMMARY_H

#include "deepum/v1/plan.pb.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <array>
#include <cstdint>
#include <map>
#include <string>

namespace deepum::format {

struct MigrationTotals {
  uint64_t Count = 0;
  uint64_t Bytes = 0;
};

struct ProfileSummary {
  std::string Producer;
  std::string DeviceName;
  uint64_t DeviceMemoryBytes = 0;
  std::string Model;
  uint32_t BatchSize = 0;
  uint32_t SequenceLength = 0;
  uint64_t Iterations = 0;
  uint64_t Kernels = 0;
  /// Kernels of the first complete iteration (all kernels when there are no marks).
  uint64_t KernelsPerIteration = 0;
  /// Distinct kernel signatures (name + grid + block + shared memory).
  uint64_t DistinctSignatures = 0;
  uint64_t Allocations = 0;
  /// The footprint (docs/tools.md, "Memory terms"): distinct 2 MiB UM blocks
  /// the last iteration's kernels touch (every kernel's without iteration
  /// marks) x the block size; what deepum-sim --oversubscription divides.
  uint64_t FootprintBytes = 0;
  /// The largest working set: the most UM block bytes one kernel touches.
  uint64_t MaxKernelWorkingSetBytes = 0;
  /// Highest sum of live allocation sizes at any time.
  uint64_t PeakLiveBytes = 0;
  /// Allocations live from start to end of the profile (never freed).
  uint64_t PersistentBytes = 0;
  /// Per role, the most bytes of that role live at once, keyed by the role's
  /// short name ("parameter", ...).
  std::map<std::string, uint64_t> PeakLiveBytesByRole;
  /// Mean iteration time (iteration marks), ns; 0 when there are none.
  double IterationNs = 0;
  /// Block accesses (kernel x UM block) in the whole profile.
  uint64_t BlockAccesses = 0;
  uint64_t Faults = 0;
  uint64_t UmEvents = 0;
  uint64_t DroppedRecords = 0;
  std::string AccessSource;
  /// Migrations keyed by "htod"/"dtoh" then by cause ("user", "coherence", ...).
  std::map<std::string, std::map<std::string, MigrationTotals>> Migrations;
};

struct PlanSummary {
  std::string Producer;
  std::string Model;
  std::string DeviceModel;
  std::string Strategy;
  uint64_t GpuMemoryBytes = 0;
  uint64_t ProfileFingerprint = 0;
  uint64_t Positions = 0;
  uint64_t ExecutionIds = 0;
  uint64_t BlockChains = 0;
  /// Actions by kind ("prefetch", "evict", "discard", "advise").
  std::map<std::string, MigrationTotals> Actions;
  uint64_t ArenaBytes = 0;
  uint64_t PeakLiveBytes = 0;
  uint64_t BestFitPeakBytes = 0;
  uint64_t Placements = 0;
  double PredictedIterationUs = 0;
  std::string Text;
  std::vector<std::string> Ignored;
};

ProfileSummary summarize(const deepum::v1::Profile &P);
PlanSummary summarize(const deepum::v1::Plan &P);

/// deepum-inspect --json's schema version (docs/tools.md): raised when a field
/// is renamed or removed or changes meaning; new fields do not raise it.
inline constexpr int64_t kSummarySchema = 1;
llvm::json::Value toJson(const ProfileSummary &S);
llvm::json::Value toJson(const PlanSummary &S);

void print(llvm::raw_ostream &OS, const ProfileSummary &S);
void print(llvm::raw_ostream &OS, const PlanSummary &S);

/// Short lower-case names used in summaries and JSON.
llvm::StringRef roleName(deepum::v1::AllocationRole R);
llvm::StringRef causeName(deepum::v1::MigrationCause C);
llvm::StringRef actionName(deepum::v1::ActionKind K);

/// Kernel signature text: "name<<<(gx,gy,gz),(bx,by,bz),smem>>>".
std::string signatureText(const deepum::v1::Kernel &K);

} // namespace deepum::format

#endif // DEEPUM_FORMAT_SUMMARY_H
