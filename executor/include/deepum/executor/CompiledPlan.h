//===- deepum/executor/CompiledPlan.h - A plan indexed for the launch hook -===//
//
// The plan as read from disk is laid out for writing and validation; the
// launch hook needs O(1) answers: which positions an execution ID occurs at,
// which actions are due at a position, which arena blocks a position touches,
// which placement an allocation call gets. This is that index, built once
// when a plan is loaded and immutable afterwards (shared between threads
// without locks).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_COMPILEDPLAN_H
#define DEEPUM_EXECUTOR_COMPILEDPLAN_H

#include "deepum/executor/Backend.h"
#include "deepum/format/PlanWire.h"

#include <cstdint>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace deepum::v1 {
class Plan;
}

namespace deepum::executor {

/// CopyOut: a release through the copy engine into the pinned pool;
/// CopyIn: a prefetch that copies a block's pool slot back (any prefetch of a
/// copied-out block does: the executor's ledger knows each block's slot).
enum class PlanActionKind : uint8_t { Prefetch, Evict, Discard, Advise, CopyOut, CopyIn };

/// One plan action with its ranges as arena byte ranges.
struct PlanAction {
  PlanActionKind Kind = PlanActionKind::Prefetch;
  MemAdvice Advice = MemAdvice::SetReadMostly;
  uint32_t Position = 0;
  uint32_t DuePosition = 0;
  std::vector<MemRange> Ranges; ///< Address = arena offset.
  /// CopyOut: the pool offset of the first range's slot (ranges packed).
  uint64_t PoolOffset = 0;
};

struct PlannedPlacement {
  uint64_t Size = 0;
  uint64_t Offset = 0;
  bool Persistent = false;
};

struct CompiledPlan {
  std::string Source; ///< File the plan came from (for messages).
  std::string Model;
  uint64_t ArenaBytes = 0;
  uint64_t UmBlockBytes = uint64_t{2} << 20;
  uint64_t GpuMemoryBytes = 0; ///< The plan's capacity (0 = unspecified).
  /// The pinned host pool the plan's COPY_OUTs fill (0: no copy path).
  uint64_t CopyPoolBytes = 0;
  /// The metadata's profile_fingerprint: the planner's hash of the profiled
  /// launch sequence (0 = the plan carries none).
  uint64_t ProfileFingerprint = 0;
  std::vector<uint64_t> PositionIds;
  /// Positions of each execution ID, ascending.
  std::unordered_map<uint64_t, std::vector<uint32_t>> IdPositions;
  /// Context IDs (hash of a position's ID and the ContextLength-1 before it)
  /// and the positions having each; empty when the plan carries none.
  uint32_t ContextLength = 0;
  std::unordered_map<uint64_t, std::vector<uint32_t>> ContextPositions;
  /// Prefetch, copy-in and advise actions, issued before the launch at their position runs.
  std::vector<std::vector<PlanAction>> BeforeLaunch;
  /// Evictions, copy-outs and discards whose data was last used by an earlier launch
  /// (due < position, or due > position: a launch of the previous iteration,
  /// the steady state wrapping): issued before the launch at their position,
  /// as the plan says, ordered with events after the kernels already enqueued
  /// (and so before that position's prefetches, which may reuse the room).
  std::vector<std::vector<PlanAction>> ReleaseBefore;
  /// Evictions, copy-outs and discards of data the launch at their position itself uses
  /// (due == position): issued once that launch is enqueued, ordered after it
  /// with events (a discard never overtakes a kernel still using the data).
  std::vector<std::vector<PlanAction>> AfterLaunch;
  /// Arena blocks touched at each position (from the block chains).
  std::vector<std::vector<uint32_t>> PositionBlocks;
  /// Positions touching each arena block, ascending (for "needed furthest in the future").
  /// Stored compressed: block B's positions are
  /// BlockUses[BlockUseStart[B] .. BlockUseStart[B+1]), so per-block state is
  /// 4 bytes however few blocks the plan uses.
  std::vector<uint32_t> BlockUseStart;
  std::vector<uint32_t> BlockUses;
  std::span<const uint32_t> blockPositions(uint32_t B) const {
    return {BlockUses.data() + BlockUseStart[B], BlockUses.data() + BlockUseStart[B + 1]};
  }
  /// Placements by allocation sequence number.
  std::unordered_map<uint32_t, PlannedPlacement> Placements;
  /// Sequence number of the first per-iteration allocation (persistent ones come first).
  uint32_t FirstIterationSequence = 0;
  /// Persistent placements by the profiled allocation's call index (the
  /// allocator's count of allocation calls on the device), for the
  /// allocations made before the first iteration: a replay of the same
  /// program makes the same calls, while the sizes alone are ambiguous (an
  /// activation freed in the first step can have a gradient's size). Empty
  /// when the profile carried no call indices: then by sequence and size.
  std::unordered_map<uint64_t, uint32_t> PrologueCalls;
  /// One past the largest call index in PrologueCalls (0 when empty): the
  /// calls before it are placed by call index alone.
  uint64_t PrologueEnd = 0;
  /// The size of each profiled call before the reference iteration (element
  /// k: call k + 1; 0 = not recorded), when the plan lists them: the
  /// executor then follows a process whose calls depart from the profiled
  /// ones (CallAlignment).
  std::vector<uint64_t> PrologueCallBytes;
  /// Number of arena blocks (ArenaBytes rounded up to UmBlockBytes).
  uint32_t ArenaBlocks = 0;

  size_t positions() const { return PositionIds.size(); }
};

/// The plan as decoded from the wire (deepum/format/PlanWire.h).
using format::RawPlan;
using format::RawRange;

/// Checks the plan against the rules every plan must pass (format::checkRawPlan,
/// the same as deepum-inspect's) and builds the index; false with `Error` when
/// the plan cannot be used. Every table it builds is bounded by the plan's
/// size or its arena (format::PlanLimits).
bool compileRawPlan(const RawPlan &P, const std::string &Source, CompiledPlan &Out,
                    std::string &Error);
/// What compileRawPlan's tables would take, in bytes, estimated from the
/// counts alone (launch positions, actions and their ranges, chain blocks,
/// placements, arena blocks), each element charged at its in-memory size.
uint64_t compiledPlanBytes(const RawPlan &P);
/// "" when compiledPlanBytes(P) is at most kCompiledPlanFactor times the
/// plan's `WireBytes` (after gzip) plus PlanLimits::kReadMemorySlackBytes;
/// else one line saying so. A plan's launch positions cost about 130 bytes
/// each once compiled, and each may take one byte of the file: the count
/// the file implies is checked against what it can hold before anything is
/// reserved for it.
inline constexpr uint64_t kCompiledPlanFactor = 16;
std::string checkCompiledPlanBytes(const RawPlan &P, uint64_t WireBytes);
/// Decodes binary protobuf bytes of a deepum.v1.Plan (format::decodePlanWire).
bool decodePlan(const std::string &Bytes, RawPlan &Out, std::string &Error);
/// Reads a binary plan file (gzip-compressed or not; regular files only, at
/// most format::PlanLimits::kMaxFileBytes), decodes and compiles it.
bool readCompiledPlan(const std::string &Path, CompiledPlan &Out, std::string &Error);

/// The same from a protobuf message (tests and tools; not in libdeepum.so).
RawPlan rawPlanFromProto(const deepum::v1::Plan &P);
bool compilePlan(const deepum::v1::Plan &P, const std::string &Source, CompiledPlan &Out,
                 std::string &Error);

} // namespace deepum::executor

#endif // DEEPUM_EXECUTOR_COMPILEDPLAN_H
