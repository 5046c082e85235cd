//===- deepum/format/PlanFields.h - plan.proto's numbers for the wire reader -===//
//
// The field numbers, wire types and enum values of plan.proto that the
// protobuf-free reader (PlanWire.cpp) and the plan rules (PlanRules.cpp) use,
// named once. Nothing here includes protobuf; PlanFieldsCheck.cpp, compiled
// into the format library, holds every constant against the code protoc
// generates from plan.proto, so a field renumbered, retyped or removed in the
// .proto without the same change here fails the build (docs/executor.md, "One
// plan representation").
//
// Each message is a namespace; each field a Field with its number, the wire
// type of one element and whether it repeats. Repeated varint fields are read
// packed or not, whatever the .proto says (protobuf's parser accepts both).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_PLANFIELDS_H
#define DEEPUM_FORMAT_PLANFIELDS_H

#include <cstdint>

namespace deepum::format::planfields {

/// Protobuf wire types (the low three bits of a tag).
enum class Wire : uint32_t {
  Varint = 0,
  Fixed64 = 1,
  Len = 2,
  GroupStart = 3,
  GroupEnd = 4,
  Fixed32 = 5,
};

/// One field of a message: its number, the wire type of one element, and
/// whether it is repeated.
struct Field {
  uint32_t Number;
  Wire Type;
  bool Repeated = false;
};

/// The tag a field's elements arrive with.
constexpr uint32_t tag(Field F) { return F.Number << 3 | static_cast<uint32_t>(F.Type); }
/// The tag of a packed run of a repeated varint field.
constexpr uint32_t packedTag(Field F) { return F.Number << 3 | static_cast<uint32_t>(Wire::Len); }

namespace plan { // deepum.v1.Plan
inline constexpr Field FormatVersion{1, Wire::Varint};
inline constexpr Field Metadata{2, Wire::Len};
inline constexpr Field ExecutionIds{3, Wire::Len, true};
inline constexpr Field BlockChains{4, Wire::Len, true};
inline constexpr Field PositionIds{5, Wire::Varint, true};
inline constexpr Field Actions{6, Wire::Len, true};
inline constexpr Field Layout{7, Wire::Len};
inline constexpr Field PositionContexts{8, Wire::Varint, true};
} // namespace plan

namespace metadata { // deepum.v1.PlanMetadata
inline constexpr Field ProfileFingerprint{1, Wire::Varint};
inline constexpr Field DeviceModel{2, Wire::Len};
inline constexpr Field GpuMemoryBytes{3, Wire::Varint};
inline constexpr Field UmBlockBytes{4, Wire::Varint};
inline constexpr Field Strategy{5, Wire::Varint};
inline constexpr Field Producer{6, Wire::Len};
inline constexpr Field Summary{7, Wire::Len};
inline constexpr Field Ignored{8, Wire::Len, true};
inline constexpr Field ProfileSource{9, Wire::Len};
inline constexpr Field Model{10, Wire::Len};
inline constexpr Field PredictedIterationUs{11, Wire::Fixed64};
inline constexpr Field ContextLength{12, Wire::Varint};
inline constexpr Field ReferenceIteration{13, Wire::Varint};
inline constexpr Field ProfiledIterations{14, Wire::Varint};
inline constexpr Field FootprintBytes{15, Wire::Varint};
inline constexpr Field CopyPoolBytes{16, Wire::Varint};
} // namespace metadata

namespace successor { // deepum.v1.Successor
inline constexpr Field ExecutionId{1, Wire::Varint};
inline constexpr Field Count{2, Wire::Varint};
} // namespace successor

namespace id_entry { // deepum.v1.ExecutionIdEntry
inline constexpr Field ExecutionId{1, Wire::Varint};
inline constexpr Field Signature{2, Wire::Len};
inline constexpr Field Successors{3, Wire::Len, true};
inline constexpr Field Positions{4, Wire::Varint, true};
} // namespace id_entry

namespace chain { // deepum.v1.BlockChain
inline constexpr Field ExecutionId{1, Wire::Varint};
inline constexpr Field Position{2, Wire::Varint};
inline constexpr Field Blocks{3, Wire::Varint, true};
inline constexpr Field Modes{4, Wire::Varint, true};
} // namespace chain

namespace range { // deepum.v1.ArenaRange
inline constexpr Field Offset{1, Wire::Varint};
inline constexpr Field Bytes{2, Wire::Varint};
} // namespace range

namespace action { // deepum.v1.Action
inline constexpr Field Kind{1, Wire::Varint};
inline constexpr Field Position{2, Wire::Varint};
inline constexpr Field DuePosition{3, Wire::Varint};
inline constexpr Field Ranges{4, Wire::Len, true};
inline constexpr Field Advice{5, Wire::Varint};
inline constexpr Field Dirty{6, Wire::Varint};
inline constexpr Field PoolOffset{7, Wire::Varint};
} // namespace action

namespace placement { // deepum.v1.Placement
inline constexpr Field Sequence{1, Wire::Varint};
inline constexpr Field SizeBytes{2, Wire::Varint};
inline constexpr Field Offset{3, Wire::Varint};
inline constexpr Field Persistent{4, Wire::Varint};
inline constexpr Field LiveBegin{5, Wire::Varint};
inline constexpr Field LiveEnd{6, Wire::Varint};
inline constexpr Field WrapEnd{7, Wire::Varint};
inline constexpr Field CallIndex{8, Wire::Varint};
} // namespace placement

namespace layout { // deepum.v1.PoolLayout
inline constexpr Field ArenaBytes{1, Wire::Varint};
inline constexpr Field Placements{2, Wire::Len, true};
inline constexpr Field PeakLiveBytes{3, Wire::Varint};
inline constexpr Field BestFitPeakBytes{4, Wire::Varint};
inline constexpr Field Ticks{5, Wire::Varint};
inline constexpr Field PrologueCallBytes{6, Wire::Varint, true};
} // namespace layout

/// deepum.v1.PlanFormat: the one version this build reads.
inline constexpr uint32_t kPlanFormatCurrent = 1;

/// deepum.v1.ActionKind values.
enum ActionKind : int {
  kActionUnspecified = 0,
  kActionPrefetch = 1,
  kActionEvict = 2,
  kActionDiscard = 3,
  kActionAdvise = 4,
  kActionCopyOut = 5,
  kActionCopyIn = 6,
};

/// deepum.v1.Advice values.
enum Advice : int {
  kAdviceUnspecified = 0,
  kAdviceSetReadMostly = 1,
  kAdviceUnsetReadMostly = 2,
  kAdviceSetPreferredLocationDevice = 3,
  kAdviceSetPreferredLocationHost = 4,
  kAdviceUnsetPreferredLocation = 5,
  kAdviceSetAccessedByDevice = 6,
  kAdviceUnsetAccessedByDevice = 7,
};

} // namespace deepum::format::planfields

#endif // DEEPUM_FORMAT_PLANFIELDS_H
