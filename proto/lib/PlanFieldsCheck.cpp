//===- PlanFieldsCheck.cpp - plan.proto against the wire reader's numbers --===//
//
// Compiled into the format library (which links protobuf), never into
// libdeepum.so: it holds every constant of deepum/format/PlanFields.h, which
// the protobuf-free reader decodes by, against the code protoc generated from
// plan.proto. A field renumbered, retyped, made repeated or removed in the
// .proto, or an enum value changed, fails the build here until the reader
// follows. Nothing in this file runs.
//
// The wire type is read off the generated accessor's C++ type: integers,
// bools and enums are varints, double fixed64, float fixed32, strings and
// messages length-delimited. protoc gives fixed32/fixed64/sint fields the same
// C++ types as uint32/uint64/int fields, so such a change is not caught here;
// plan.proto has none, and the reader's differential fuzzer
// (fuzz/PlanReaderDiff.cpp) compares whole decodes with protobuf's.
//
//===----------------------------------------------------------------------===//
#include "deepum/format/PlanFields.h"

#include "deepum/v1/plan.pb.h"

#include <string>
#include <type_traits>
#include <utility>

namespace deepum::format::planfields {
namespace {

template <typename T> struct Shape {
  using Element = T;
  static constexpr bool Repeated = false;
};
template <typename T> struct Shape<google::protobuf::RepeatedField<T>> {
  using Element = T;
  static constexpr bool Repeated = true;
};
template <typename T> struct Shape<google::protobuf::RepeatedPtrField<T>> {
  using Element = T;
  static constexpr bool Repeated = true;
};

template <typename T> constexpr Wire wireOf() {
  if constexpr (std::is_same_v<T, double>)
    return Wire::Fixed64;
  else if constexpr (std::is_same_v<T, float>)
    return Wire::Fixed32;
  else if constexpr (std::is_integral_v<T> || std::is_enum_v<T>)
    return Wire::Varint;
  else if constexpr (std::is_same_v<T, std::string> ||
                     std::is_base_of_v<google::protobuf::MessageLite, T>)
    return Wire::Len;
  else
    static_assert(!sizeof(T), "a field type the wire reader does not know");
}

/// The generated accessor's type, as the field's shape.
template <typename Accessor>
using ShapeOf = Shape<std::remove_cv_t<std::remove_reference_t<Accessor>>>;

template <typename S> constexpr bool matches(Field F, uint32_t Number) {
  return F.Number == Number && F.Type == wireOf<typename S::Element>() && F.Repeated == S::Repeated;
}

// CHECK_FIELD(Message, ns, Name, accessor): the constant ns::Name against
// deepum::v1::Message's kNameFieldNumber and the type of accessor().
#define CHECK_FIELD(Message, ns, Name, accessor)                                                   \
  static_assert(                                                                                   \
      matches<ShapeOf<decltype(std::declval<const deepum::v1::Message &>().accessor())>>(          \
          ns::Name, deepum::v1::Message::k##Name##FieldNumber),                                    \
      "plan.proto's " #Message "." #accessor                                                       \
      " differs from deepum/format/PlanFields.h (number, wire type or repetition)")

CHECK_FIELD(Plan, plan, FormatVersion, format_version);
CHECK_FIELD(Plan, plan, Metadata, metadata);
CHECK_FIELD(Plan, plan, ExecutionIds, execution_ids);
CHECK_FIELD(Plan, plan, BlockChains, block_chains);
CHECK_FIELD(Plan, plan, PositionIds, position_ids);
CHECK_FIELD(Plan, plan, Actions, actions);
CHECK_FIELD(Plan, plan, Layout, layout);
CHECK_FIELD(Plan, plan, PositionContexts, position_contexts);

CHECK_FIELD(PlanMetadata, metadata, ProfileFingerprint, profile_fingerprint);
CHECK_FIELD(PlanMetadata, metadata, DeviceModel, device_model);
CHECK_FIELD(PlanMetadata, metadata, GpuMemoryBytes, gpu_memory_bytes);
CHECK_FIELD(PlanMetadata, metadata, UmBlockBytes, um_block_bytes);
CHECK_FIELD(PlanMetadata, metadata, Strategy, strategy);
CHECK_FIELD(PlanMetadata, metadata, Producer, producer);
CHECK_FIELD(PlanMetadata, metadata, Summary, summary);
CHECK_FIELD(PlanMetadata, metadata, Ignored, ignored);
CHECK_FIELD(PlanMetadata, metadata, ProfileSource, profile_source);
CHECK_FIELD(PlanMetadata, metadata, Model, model);
CHECK_FIELD(PlanMetadata, metadata, PredictedIterationUs, predicted_iteration_us);
CHECK_FIELD(PlanMetadata, metadata, ContextLength, context_length);
CHECK_FIELD(PlanMetadata, metadata, ReferenceIteration, reference_iteration);
CHECK_FIELD(PlanMetadata, metadata, ProfiledIterations, profiled_iterations);
CHECK_FIELD(PlanMetadata, metadata, FootprintBytes, footprint_bytes);
CHECK_FIELD(PlanMetadata, metadata, CopyPoolBytes, copy_pool_bytes);

CHECK_FIELD(Successor, successor, ExecutionId, execution_id);
CHECK_FIELD(Successor, successor, Count, count);

CHECK_FIELD(ExecutionIdEntry, id_entry, ExecutionId, execution_id);
CHECK_FIELD(ExecutionIdEntry, id_entry, Signature, signature);
CHECK_FIELD(ExecutionIdEntry, id_entry, Successors, successors);
CHECK_FIELD(ExecutionIdEntry, id_entry, Positions, positions);

CHECK_FIELD(BlockChain, chain, ExecutionId, execution_id);
CHECK_FIELD(BlockChain, chain, Position, position);
CHECK_FIELD(BlockChain, chain, Blocks, blocks);
CHECK_FIELD(BlockChain, chain, Modes, modes);

CHECK_FIELD(ArenaRange, range, Offset, offset);
CHECK_FIELD(ArenaRange, range, Bytes, bytes);

CHECK_FIELD(Action, action, Kind, kind);
CHECK_FIELD(Action, action, Position, position);
CHECK_FIELD(Action, action, DuePosition, due_position);
CHECK_FIELD(Action, action, Ranges, ranges);
CHECK_FIELD(Action, action, Advice, advice);
CHECK_FIELD(Action, action, Dirty, dirty);
CHECK_FIELD(Action, action, PoolOffset, pool_offset);

CHECK_FIELD(Placement, placement, Sequence, sequence);
CHECK_FIELD(Placement, placement, SizeBytes, size_bytes);
CHECK_FIELD(Placement, placement, Offset, offset);
CHECK_FIELD(Placement, placement, Persistent, persistent);
CHECK_FIELD(Placement, placement, LiveBegin, live_begin);
CHECK_FIELD(Placement, placement, LiveEnd, live_end);
CHECK_FIELD(Placement, placement, WrapEnd, wrap_end);
CHECK_FIELD(Placement, placement, CallIndex, call_index);

CHECK_FIELD(PoolLayout, layout, ArenaBytes, arena_bytes);
CHECK_FIELD(PoolLayout, layout, Placements, placements);
CHECK_FIELD(PoolLayout, layout, PeakLiveBytes, peak_live_bytes);
CHECK_FIELD(PoolLayout, layout, BestFitPeakBytes, best_fit_peak_bytes);
CHECK_FIELD(PoolLayout, layout, Ticks, ticks);
CHECK_FIELD(PoolLayout, layout, PrologueCallBytes, prologue_call_bytes);

#undef CHECK_FIELD

// Enum values the reader and the plan rules compare against (as ints: the two
// enum types differ).
constexpr bool same(int Ours, int Generated) { return Ours == Generated; }

static_assert(same(kPlanFormatCurrent, deepum::v1::PLAN_FORMAT_CURRENT));
static_assert(same(kActionUnspecified, deepum::v1::ACTION_KIND_UNSPECIFIED));
static_assert(same(kActionPrefetch, deepum::v1::ACTION_KIND_PREFETCH));
static_assert(same(kActionEvict, deepum::v1::ACTION_KIND_EVICT));
static_assert(same(kActionDiscard, deepum::v1::ACTION_KIND_DISCARD));
static_assert(same(kActionAdvise, deepum::v1::ACTION_KIND_ADVISE));
static_assert(same(kActionCopyOut, deepum::v1::ACTION_KIND_COPY_OUT));
static_assert(same(kActionCopyIn, deepum::v1::ACTION_KIND_COPY_IN));
static_assert(same(kActionCopyIn, deepum::v1::ActionKind_MAX),
              "a new ActionKind: teach CompiledPlan.cpp and PlanFields.h about it");
static_assert(same(kAdviceUnspecified, deepum::v1::ADVICE_UNSPECIFIED));
static_assert(same(kAdviceSetReadMostly, deepum::v1::ADVICE_SET_READ_MOSTLY));
static_assert(same(kAdviceUnsetReadMostly, deepum::v1::ADVICE_UNSET_READ_MOSTLY));
static_assert(same(kAdviceSetPreferredLocationDevice,
                   deepum::v1::ADVICE_SET_PREFERRED_LOCATION_DEVICE));
static_assert(same(kAdviceSetPreferredLocationHost,
                   deepum::v1::ADVICE_SET_PREFERRED_LOCATION_HOST));
static_assert(same(kAdviceUnsetPreferredLocation, deepum::v1::ADVICE_UNSET_PREFERRED_LOCATION));
static_assert(same(kAdviceSetAccessedByDevice, deepum::v1::ADVICE_SET_ACCESSED_BY_DEVICE));
static_assert(same(kAdviceUnsetAccessedByDevice, deepum::v1::ADVICE_UNSET_ACCESSED_BY_DEVICE));
static_assert(same(kAdviceUnsetAccessedByDevice, deepum::v1::Advice_MAX),
              "a new Advice: teach CompiledPlan.cpp and PlanFields.h about it");

} // namespace
} // namespace deepum::format::planfields
