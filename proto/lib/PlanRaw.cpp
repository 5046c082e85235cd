//===- PlanRaw.cpp - A parsed plan as the protobuf-free RawPlan -----------===//
#include "deepum/format/PlanWire.h"

#include "deepum/v1/plan.pb.h"

namespace deepum::format {

RawPlan rawPlanFromProto(const deepum::v1::Plan &P) {
  RawPlan R;
  R.FormatVersion = P.format_version();
  R.HasMetadata = P.has_metadata();
  R.GpuMemoryBytes = P.metadata().gpu_memory_bytes();
  R.UmBlockBytes = P.metadata().um_block_bytes();
  R.Model = P.metadata().model();
  R.PositionIds.assign(P.position_ids().begin(), P.position_ids().end());
  R.PositionContexts.assign(P.position_contexts().begin(), P.position_contexts().end());
  R.ContextLength = P.metadata().context_length();
  R.ProfileFingerprint = P.metadata().profile_fingerprint();
  R.CopyPoolBytes = P.metadata().copy_pool_bytes();
  R.ExecutionIds.reserve(static_cast<size_t>(P.execution_ids_size()));
  for (const auto &E : P.execution_ids()) {
    RawPlan::IdEntry X{E.execution_id(), {E.positions().begin(), E.positions().end()}, {}};
    for (const auto &S : E.successors())
      X.Successors.push_back(S.execution_id());
    R.ExecutionIds.push_back(std::move(X));
  }
  R.Chains.reserve(static_cast<size_t>(P.block_chains_size()));
  for (const auto &C : P.block_chains())
    R.Chains.push_back({C.execution_id(), C.position(), {C.blocks().begin(), C.blocks().end()}});
  R.Actions.reserve(static_cast<size_t>(P.actions_size()));
  for (const auto &A : P.actions()) {
    RawPlan::Action X;
    X.Kind = A.kind();
    X.Position = A.position();
    X.DuePosition = A.due_position();
    X.Advice = A.advice();
    X.PoolOffset = A.pool_offset();
    for (const auto &Rg : A.ranges())
      X.Ranges.push_back({Rg.offset(), Rg.bytes()});
    R.Actions.push_back(std::move(X));
  }
  R.ArenaBytes = P.layout().arena_bytes();
  R.LayoutTicks = P.layout().ticks();
  R.PrologueCallBytes.assign(P.layout().prologue_call_bytes().begin(),
                             P.layout().prologue_call_bytes().end());
  for (const auto &Pl : P.layout().placements())
    R.Placements.push_back({Pl.sequence(), Pl.size_bytes(), Pl.offset(), Pl.persistent(),
                            Pl.live_begin(), Pl.live_end(), Pl.wrap_end(), Pl.call_index()});
  return R;
}

} // namespace deepum::format
