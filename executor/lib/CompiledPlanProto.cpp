//===- CompiledPlanProto.cpp - CompiledPlan from a protobuf Plan -----------===//
//
// For tests and tools that hold a deepum::v1::Plan; libdeepum.so does not
// contain this file (it decodes plans itself, see PlanReader.cpp).
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/CompiledPlan.h"

#include "deepum/v1/plan.pb.h"

namespace deepum::executor {

RawPlan rawPlanFromProto(const deepum::v1::Plan &P) {
  RawPlan R;
  R.FormatVersion = P.format_version();
  R.GpuMemoryBytes = P.metadata().gpu_memory_bytes();
  R.UmBlockBytes = P.metadata().um_block_bytes();
  R.Model = P.metadata().model();
  R.PositionIds.assign(P.position_ids().begin(), P.position_ids().end());
  R.PositionContexts.assign(P.position_contexts().begin(), P.position_contexts().end());
  R.ContextLength = P.metadata().context_length();
  R.ProfileFingerprint = P.metadata().profile_fingerprint();
  for (const auto &E : P.execution_ids())
    R.ExecutionIds.push_back({E.execution_id(), {E.positions().begin(), E.positions().end()}});
  for (const auto &C : P.block_chains())
    R.Chains.push_back({C.execution_id(), C.position(), {C.blocks().begin(), C.blocks().end()}});
  for (const auto &A : P.actions()) {
    RawPlan::Action X;
    X.Kind = A.kind();
    X.Position = A.position();
    X.DuePosition = A.due_position();
    X.Advice = A.advice();
    for (const auto &Rg : A.ranges())
      X.Ranges.push_back({static_cast<uintptr_t>(Rg.offset()), Rg.bytes()});
    R.Actions.push_back(std::move(X));
  }
  R.ArenaBytes = P.layout().arena_bytes();
  for (const auto &Pl : P.layout().placements())
    R.Placements.push_back({Pl.sequence(), Pl.size_bytes(), Pl.offset(), Pl.persistent()});
  return R;
}

bool compilePlan(const deepum::v1::Plan &P, const std::string &Source, CompiledPlan &Out,
                 std::string &Error) {
  return compileRawPlan(rawPlanFromProto(P), Source, Out, Error);
}

} // namespace deepum::executor
