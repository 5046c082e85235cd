//===- deepum/format/PlanWire.h - deepum.v1.Plan without protobuf ----------===//
//
// libdeepum runs inside training processes that carry their own protobuf, so
// it cannot link ours (see PlanWire.cpp). This header is the plan as both
// sides hold it without protobuf: RawPlan mirrors the fields of plan.proto
// that anything checks or uses, decodePlanWire reads the wire format exactly
// as protobuf 3 does (same inputs accepted, same values), and checkRawPlan is
// the one set of rules every plan must pass: the format library's
// validatePlan converts a parsed message to a RawPlan and applies these rules,
// and libdeepum applies them to what it decoded. A file therefore loads in a
// training process if and only if deepum-inspect calls it valid.
//
// Everything a plan can ask for is bounded before it is allocated (PlanLimits):
// tables indexed by launch position grow with the file's bytes, tables
// indexed by arena block with the arena, and the arena is capped.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_PLANWIRE_H
#define DEEPUM_FORMAT_PLANWIRE_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace deepum::v1 {
class Plan;
}

namespace deepum::format {

/// Caps on what a plan may ask for; each has its own error text (docs/limits.md).
struct PlanLimits {
  /// Bytes of a plan file, before and after gzip decompression. The largest
  /// plans (100k launches, 1M block uses per iteration) are tens of MiB;
  /// decoded tables cost a small multiple of this.
  static constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;
  /// The arena a plan lays out: 4 TiB, many times any GPU's memory.
  static constexpr uint64_t kMaxArenaBytes = uint64_t{4} << 40;
  /// Arena blocks (arena / um_block_bytes; 4 TiB of 2 MiB blocks): libdeepum
  /// keeps about 13 bytes per block, so at most some 26 MiB whatever the
  /// file says.
  static constexpr uint64_t kMaxArenaBlocks = uint64_t{1} << 21;
  /// UM block size: a power of two from the driver's 64 KiB big page to 1 GiB.
  static constexpr uint64_t kMinUmBlockBytes = uint64_t{64} << 10;
  static constexpr uint64_t kMaxUmBlockBytes = uint64_t{1} << 30;
  /// Context IDs hash at most this many launches.
  static constexpr uint32_t kMaxContextLength = 64;
  /// What a reader's decoded plan may take in memory: this many times the
  /// plan's bytes (after gzip) plus kReadMemorySlackBytes; the same bound as
  /// for protobuf's reader (format::kReadMemoryFactor). Past it, decodePlanWire
  /// stops and refuses the file.
  static constexpr uint64_t kReadMemoryFactor = 8;
  static constexpr uint64_t kReadMemorySlackBytes = uint64_t{64} << 20;
  /// Protobuf's default recursion limit (nested messages and groups).
  static constexpr int kMaxDepth = 100;
};

/// One range of the arena: [Offset, Offset + Bytes).
struct RawRange {
  uint64_t Offset = 0;
  uint64_t Bytes = 0;
  bool operator==(const RawRange &) const = default;
};

/// Call indices (Placement.call_index) lie below this: beyond any process's
/// allocation calls, and one past the largest cannot wrap.
inline constexpr uint64_t kCallIndexLimit = uint64_t{1} << 62;
/// PoolLayout.prologue_call_bytes holds at most this many calls.
inline constexpr uint64_t kMaxPrologueCalls = uint64_t{1} << 22;

/// libdeepum issues the evictions of one plan position in calls of at most
/// this many UM blocks, each with its own event: a prefetch waiting for room
/// waits only for the calls whose write-backs make it, not for the whole
/// position's. The planner's cost model charges a call for each.
inline constexpr uint64_t kEvictionCallBlocks = 8;

/// libdeepum discards the blocks of one plan position's copy-outs in slices
/// of at most this many UM blocks, each after its own copies and with its own
/// event: the room comes free as the copies land, not when the last of a
/// long batch does. The planner's cost model charges a discard call for each.
inline constexpr uint64_t kCopyOutSliceBlocks = 32;

/// libdeepum issues a prefetch range in pieces of at most this many UM
/// blocks, each waiting only for the releases that make its room: the
/// planner's cost model counts each block's room as it comes free. Pieces
/// that need no wait stay one range of one call.
inline constexpr uint64_t kPrefetchRoomBlocks = 8;

/// The fields of deepum.v1.Plan that are checked or used, with the proto's
/// numeric enum values; repeated fields in file order.
struct RawPlan {
  uint32_t FormatVersion = 0;
  uint64_t GpuMemoryBytes = 0;
  uint64_t UmBlockBytes = 0;
  std::string Model;
  std::vector<uint64_t> PositionIds;
  std::vector<uint64_t> PositionContexts; ///< Plan.position_contexts (may be empty)
  uint32_t ContextLength = 0;
  uint64_t ProfileFingerprint = 0;
  /// PlanMetadata.copy_pool_bytes: the pinned pool COPY_OUT fills (0: none).
  uint64_t CopyPoolBytes = 0;
  struct IdEntry {
    uint64_t Id = 0;
    std::vector<uint32_t> Positions;
    std::vector<uint64_t> Successors; ///< successors[].execution_id
    bool operator==(const IdEntry &) const = default;
  };
  std::vector<IdEntry> ExecutionIds;
  struct Chain {
    uint64_t Id = 0;
    uint32_t Position = 0;
    std::vector<uint64_t> Blocks;
    bool operator==(const Chain &) const = default;
  };
  std::vector<Chain> Chains;
  struct Action {
    int Kind = 0;
    uint32_t Position = 0;
    uint32_t DuePosition = 0;
    std::vector<RawRange> Ranges;
    int Advice = 0;
    /// Action.pool_offset (COPY_OUT: the first range's slot in the pool).
    uint64_t PoolOffset = 0;
    bool operator==(const Action &) const = default;
  };
  std::vector<Action> Actions;
  uint64_t ArenaBytes = 0;
  struct Placement {
    uint32_t Sequence = 0;
    uint64_t Size = 0;
    uint64_t Offset = 0;
    bool Persistent = false;
    /// Lifetime in layout ticks: [LiveBegin, LiveEnd), plus [0, WrapEnd)
    /// when freed in the next iteration. LiveEnd == 0: not recorded (an
    /// earlier deepum-plan's placement), checked against the persistent
    /// placements only.
    uint32_t LiveBegin = 0;
    uint32_t LiveEnd = 0;
    uint32_t WrapEnd = 0;
    /// The profiled allocation's call index (persistent placements; 0 = unknown).
    uint64_t CallIndex = 0;
    bool operator==(const Placement &) const = default;
  };
  std::vector<Placement> Placements;
  bool HasMetadata = false;
  /// PoolLayout.ticks: the clock the placements' lifetimes count in.
  uint32_t LayoutTicks = 0;
  /// PoolLayout.prologue_call_bytes: the size of each call before the
  /// reference iteration (element k: call k + 1; 0 = not recorded).
  std::vector<uint64_t> PrologueCallBytes;

  bool operator==(const RawPlan &) const = default;
};

/// Decodes binary protobuf bytes of a deepum.v1.Plan. Accepts exactly the
/// inputs protobuf's parser accepts for plan.proto (unknown fields and groups
/// skipped, a known field of another wire type treated as unknown, strings
/// checked as UTF-8, nesting limited to PlanLimits::kMaxDepth); false with
/// `Error` otherwise. Does not check the plan's meaning (checkRawPlan does).
bool decodePlanWire(std::string_view Bytes, RawPlan &Out, std::string &Error);

/// The rules a plan must pass; "" when it does, else one lower-case line
/// naming the offending record (no file name).
std::string checkRawPlan(const RawPlan &P);

/// The arena the plan speaks of, in bytes, rounded up to whole UM blocks:
/// layout.arena_bytes, or for a plan without a layout what its actions reach.
/// Only meaningful for a plan that passed checkRawPlan.
uint64_t planArenaBytes(const RawPlan &P);

/// The RawPlan of a parsed message (in the format library proper, which links
/// protobuf; not part of libdeepum.so).
RawPlan rawPlanFromProto(const deepum::v1::Plan &P);

/// Decompresses gzip data (one member, nothing after it) of at most
/// PlanLimits::kMaxFileBytes; false with `Error` otherwise.
bool gunzipPlan(std::string_view In, std::string &Out, std::string &Error);

/// Reads a plan file into `Out` (gzip decompressed): regular files only (a
/// FIFO or device would block or never end), at most PlanLimits::kMaxFileBytes.
/// `Error` starts with the path.
bool readPlanFileBytes(const std::string &Path, std::string &Out, std::string &Error);

} // namespace deepum::format

#endif // DEEPUM_FORMAT_PLANWIRE_H
