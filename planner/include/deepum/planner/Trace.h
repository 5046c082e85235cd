//===- deepum/planner/Trace.h - One profiled iteration in arena space -------===//
//
// The planner's intermediate form. A profile holds a few iterations recorded
// in virtual-address space; a plan speaks of positions in one iteration and
// of blocks of the executor's arena. This header names the steps between:
//
//   analyzeIterations  profile kernels -> execution IDs, iterations, the
//                      reference (steady-state) iteration, what was ignored;
//   buildTrace         the reference iteration as ticks (kernels, allocation
//                      calls, frees), planned allocations with lifetimes, the
//                      pool layout, and every position's arena-block accesses.
//
// Everything here is deterministic: no pointer-keyed container is iterated.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PLANNER_TRACE_H
#define DEEPUM_PLANNER_TRACE_H

#include "deepum/v1/plan.pb.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace deepum::planner {

/// A contiguous range of Profile.kernels forming one iteration.
struct IterationSpan {
  uint32_t First = 0;
  uint32_t Count = 0;
  /// Hash of the iteration's execution-ID sequence (see sequenceFingerprint).
  uint64_t Fingerprint = 0;
};

struct IterationAnalysis {
  /// Execution ID of every kernel of the profile (format::executionId).
  std::vector<uint64_t> Ids;
  std::vector<IterationSpan> Iterations;
  /// Index into Iterations of the iteration the plan is compiled from.
  uint32_t Reference = 0;
  /// Whether the iterations came from the profile's marks (else: the period
  /// of the execution-ID sequence).
  bool FromMarks = false;
  /// One line per thing not used for the schedule.
  std::vector<std::string> Ignored;
};

/// FNV-1a 64 over the IDs, each as two little-endian 32-bit words (low
/// first). The plan's profile_fingerprint; the executor recomputes it over
/// position_ids to recognise a plan made for another model.
uint64_t sequenceFingerprint(llvm::ArrayRef<uint64_t> Ids);

/// Hash of the ID at position P and the `Length - 1` IDs before it, wrapping
/// to the end of the iteration (the previous iteration's tail): tells apart
/// the same kernel at different places of the iteration.
uint64_t contextId(llvm::ArrayRef<uint64_t> Ids, size_t P, unsigned Length);

/// Splits the profile into iterations and chooses the reference iteration:
/// the last complete one whose execution-ID sequence is the most common
/// (deepum-sim replays the last complete iteration; noise such as extra
/// kernels or a cut-short iteration makes an iteration differ from the mode).
llvm::Expected<IterationAnalysis> analyzeIterations(const deepum::v1::Profile &P);

/// Half-open tick interval; ticks order the reference window's events.
struct TickInterval {
  uint32_t Begin = 0, End = 0;
  bool empty() const { return End <= Begin; }
  bool overlaps(const TickInterval &O) const {
    return !empty() && !O.empty() && Begin < O.End && O.Begin < End;
  }
};

/// An allocation the plan places in the arena.
struct PlannedAllocation {
  /// Placement.sequence: persistent allocations first, then the reference
  /// iteration's allocation calls in call order.
  uint32_t Sequence = 0;
  uint64_t Size = 0;
  bool Persistent = false;
  /// Live ticks: Live[0], plus Live[1] when the allocation outlives the
  /// iteration and is freed in the next one (its tail wraps to tick 0).
  TickInterval Live[2];
  /// Arena offset chosen by the pool layout.
  uint64_t Offset = 0;
  /// Allocation.id in the profile (for messages).
  uint64_t ProfileId = 0;
  /// Allocation.call_index in the profile, for a persistent allocation (made
  /// before the reference iteration): the executor places it by call. 0 = unknown.
  uint64_t CallIndex = 0;
  deepum::v1::AllocationRole Role = deepum::v1::ALLOCATION_ROLE_UNSPECIFIED;

  bool liveAt(uint32_t Tick) const {
    return (Tick >= Live[0].Begin && Tick < Live[0].End) ||
           (Tick >= Live[1].Begin && Tick < Live[1].End);
  }
  bool overlaps(const PlannedAllocation &O) const {
    return Persistent || O.Persistent || Live[0].overlaps(O.Live[0]) ||
           Live[0].overlaps(O.Live[1]) || Live[1].overlaps(O.Live[0]) ||
           Live[1].overlaps(O.Live[1]);
  }
};

/// One position's use of one arena block.
struct BlockUse {
  uint64_t Block = 0;
  deepum::v1::AccessMode Mode = deepum::v1::ACCESS_MODE_UNSPECIFIED;
};

/// One position's use of one planned allocation (tensor granularity; the
/// swap strategy works on these).
struct TensorUse {
  uint32_t Sequence = 0;
  uint32_t Position = 0;
  deepum::v1::AccessMode Mode = deepum::v1::ACCESS_MODE_UNSPECIFIED;
};

/// The order in which the pool layout places allocations.
enum class LayoutOrder {
  /// Largest first (Zhang et al. 2019): the tightest packing.
  BySize,
  /// In the order the program makes them (those live at tick 0 first), as an
  /// online best-fit allocator would, with every lifetime known: each lands
  /// in bytes freed shortly before, which under oversubscription are more
  /// often still on the GPU.
  ByBirth,
};

struct PoolStats {
  /// Bytes the lifetime-aware layout needs (persistent region included).
  uint64_t LayoutBytes = 0;
  /// LayoutBytes rounded up to whole UM blocks: the arena the plan speaks of.
  uint64_t ArenaBytes = 0;
  uint64_t PersistentBytes = 0;
  /// Peak of live bytes (the lower bound of any layout).
  uint64_t PeakLiveBytes = 0;
  /// Peak of an online best-fit caching allocator on the same call sequence.
  uint64_t BestFitPeakBytes = 0;
  /// The order the layout placed allocations in.
  LayoutOrder Order = LayoutOrder::BySize;
};

/// The reference iteration in arena space.
struct Trace {
  uint32_t Positions = 0;
  /// Execution ID per position.
  std::vector<uint64_t> Ids;
  /// Kernel duration per position, microseconds (from the profile).
  std::vector<double> DurationUs;
  /// Tick of each position's kernel; ticks run over [0, Ticks).
  std::vector<uint32_t> KernelTick;
  uint32_t Ticks = 0;
  /// Planned allocations, indexed by sequence.
  std::vector<PlannedAllocation> Allocations;
  /// When persistent allocations are placed by call index: the size of each
  /// profiled call up to the last of them (element k: call k + 1; 0 = not
  /// recorded, or recorded twice), PoolLayout.prologue_call_bytes.
  std::vector<uint64_t> PrologueCallBytes;
  PoolStats Pool;
  uint64_t BlockBytes = 0;
  /// Arena blocks: ceil(Pool.ArenaBytes / BlockBytes).
  uint64_t Blocks = 0;
  /// Per position, the arena blocks its kernel touches in first-touch order.
  std::vector<std::vector<BlockUse>> Uses;
  /// Per planned allocation use, sorted by (sequence, position).
  std::vector<TensorUse> TensorUses;
  /// Per arena block, the sequences of the allocations overlapping it.
  std::vector<std::vector<uint32_t>> BlockOwners;
  /// Per arena block, whether the copy path may take it (markCopyable):
  /// every allocation that ever holds a byte of it is one the launch-time
  /// guard protects. Empty: none may.
  std::vector<uint8_t> Copyable;
  /// Per arena block, its owners' live intervals sorted by Begin (CSR:
  /// OwnerSpans[OwnerStart[b] .. OwnerStart[b+1])), the longest one's length,
  /// and the merged union of those intervals (UnionStart / Union). Blocks are
  /// reused by many allocations over an iteration; these keep the liveness
  /// queries logarithmic instead of linear in the owners.
  struct OwnerSpan {
    uint32_t Begin, End, Sequence;
  };
  std::vector<uint64_t> OwnerStart;
  std::vector<OwnerSpan> OwnerSpans;
  std::vector<uint32_t> OwnerMaxSpan;
  std::vector<uint64_t> UnionStart;
  std::vector<TickInterval> Union;
  /// Builds the per-block indexes above from BlockOwners and Allocations.
  void indexOwners();
  /// The largest End in each subtree of a binary tree over OwnerSpans
  /// (node 1 the root, span k at leaf SpanLeaves + k): finds the spans that
  /// reach past a tick among many that began before it.
  std::vector<uint32_t> SpanMaxEnd;
  uint64_t SpanLeaves = 0;
  /// Calls F(sequence) for each allocation overlapping Block live at Tick,
  /// in no particular order.
  template <typename Fn> void forOwnersLiveAt(uint64_t Block, uint32_t Tick, Fn F) const {
    uint64_t Lo = OwnerStart[Block], Hi = OwnerStart[Block + 1];
    // Last span beginning at or before Tick, then back while one could reach
    // it: a few steps unless a long-lived owner shares the block with many
    // short ones, where the tree takes over so the query stays logarithmic.
    uint64_t I = Lo, J = Hi;
    while (I < J) {
      uint64_t M = I + (J - I) / 2;
      if (OwnerSpans[M].Begin <= Tick)
        I = M + 1;
      else
        J = M;
    }
    constexpr unsigned kWalk = 8;
    unsigned Steps = 0;
    for (uint64_t K = I; K-- > Lo;) {
      const OwnerSpan &S = OwnerSpans[K];
      if (static_cast<uint64_t>(S.Begin) + OwnerMaxSpan[Block] <= Tick)
        return;
      if (++Steps > kWalk) {
        visitSpansReaching(1, 0, SpanLeaves, Lo, K + 1, Tick, F);
        return;
      }
      if (S.End > Tick)
        F(S.Sequence);
    }
  }
  /// F(sequence) for the spans in [Lo, Hi) under Node (covering leaves
  /// [NodeLo, NodeHi)) whose End is past Tick.
  template <typename Fn>
  void visitSpansReaching(uint64_t Node, uint64_t NodeLo, uint64_t NodeHi, uint64_t Lo,
                          uint64_t Hi, uint32_t Tick, Fn &F) const {
    if (NodeHi <= Lo || NodeLo >= Hi || SpanMaxEnd[Node] <= Tick)
      return;
    if (Node >= SpanLeaves) {
      F(OwnerSpans[Node - SpanLeaves].Sequence);
      return;
    }
    uint64_t Mid = NodeLo + (NodeHi - NodeLo) / 2;
    visitSpansReaching(2 * Node, NodeLo, Mid, Lo, Hi, Tick, F);
    visitSpansReaching(2 * Node + 1, Mid, NodeHi, Lo, Hi, Tick, F);
  }
  /// Profile kernel index of position 0 (for messages).
  uint32_t FirstKernel = 0;
  std::vector<std::string> Ignored;

  /// Whether some allocation overlapping `Block` is live at `Tick`.
  bool blockLiveAt(uint64_t Block, uint32_t Tick) const;
  /// Whether the block holds no live data at some tick strictly between
  /// kernel ticks From and To (cyclic: To <= From wraps through the end).
  bool blockDiesBetween(uint64_t Block, uint32_t FromTick, uint32_t ToTick) const;
};

/// Lifetime-aware layout (Zhang et al. 2019): persistent allocations packed
/// first, then the others in order By, each at the best-fitting gap left by
/// the already-placed allocations whose lifetimes overlap it. Sets Offset of
/// every allocation and returns the arena bytes.
uint64_t layoutPool(std::vector<PlannedAllocation> &Allocations,
                    LayoutOrder By = LayoutOrder::BySize);

/// Peak of live bytes over the ticks (persistent allocations always live).
uint64_t peakLiveBytes(const std::vector<PlannedAllocation> &Allocations, uint32_t Ticks);

/// Peak footprint of an online best-fit allocator (free blocks coalesce, the
/// heap grows only when no free block fits) replaying the allocation calls
/// of two consecutive iterations in tick order, starting with the persistent
/// allocations and those carried over from the previous iteration live.
uint64_t bestFitPeakBytes(const std::vector<PlannedAllocation> &Allocations, uint32_t Ticks);

/// Alignment of arena offsets: PyTorch's caching allocator rounds to 512 B.
inline constexpr uint64_t kArenaAlignment = 512;

/// Most bytes the reference iteration's allocations may add up to (each
/// rounded to kArenaAlignment), 64 TiB: beyond the memory of any GPU host, so
/// only a hostile or corrupt profile gets there; below it no offset, size or
/// sum in the layout can overflow, and the arena (never more than this sum)
/// fits in it. buildTrace refuses more: "the reference iteration's
/// allocations add up to N bytes, more than the planner's limit of 64 TiB".
inline constexpr uint64_t kMaxPlannedBytes = uint64_t{1} << 46;

/// Block accesses (kernels without tensor data) are mapped onto the
/// allocations live on their blocks. buildTrace makes at most this many such
/// accesses of allocations (each kept as a tensor use: about 2 GiB of memory
/// at the most) and scans at most kMaxBlockMappingScans allocations for them
/// (about 15 s): a block-only profile of gpt2-medium makes 14.4 M and scans
/// 70 M. It refuses more: "the kernels' block accesses map to more than N
/// accesses of allocations" (docs/hostile-input.md).
inline constexpr uint64_t kMaxBlockMappings = uint64_t{1} << 25;
inline constexpr uint64_t kMaxBlockMappingScans = uint64_t{1} << 31;
/// Steps (allocations scanned, 5 per allocation indexed) buildTrace spends on
/// indexing the reference iteration's siblings for kernels without tensor
/// data; the iterations past it are not searched, and the plan says so.
inline constexpr uint64_t kMaxSiblingWork = uint64_t{1} << 26;

/// What buildTrace spends on kernels without tensor data at most (the
/// constants above; tests lower them).
struct TraceLimits {
  uint64_t BlockMappings = kMaxBlockMappings;
  uint64_t BlockMappingScans = kMaxBlockMappingScans;
  uint64_t SiblingWork = kMaxSiblingWork;
};

/// Builds the reference iteration's trace; lays out the pool in order By.
llvm::Expected<Trace> buildTrace(const deepum::v1::Profile &P, const IterationAnalysis &A,
                                 const TraceLimits &Limits = {},
                                 LayoutOrder By = LayoutOrder::BySize);

// The arena itself is bounded by the plan format (format::PlanLimits: bytes
// and UM blocks a plan may lay out): buildTrace refuses a layout that no plan
// could carry, before its per-block tables are built.

} // namespace deepum::planner

#endif // DEEPUM_PLANNER_TRACE_H
