//===- ExecutorTestSupport.h - Plans built by hand for executor tests ------===//
#ifndef DEEPUM_TESTS_EXECUTOR_SUPPORT_H
#define DEEPUM_TESTS_EXECUTOR_SUPPORT_H

#include "deepum/executor/CompiledPlan.h"
#include "deepum/v1/plan.pb.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <map>
#include <vector>

namespace deepum::test {

inline constexpr uint64_t kMiB = uint64_t{1} << 20;
inline constexpr uint64_t kBlock = 2 * kMiB;

/// A plan proto with the given launch sequence (IDs) and a consistent execution-ID table.
class PlanBuilder {
public:
  explicit PlanBuilder(std::vector<uint64_t> Ids, uint64_t ArenaBytes = 16 * kBlock) {
    P.set_format_version(deepum::v1::PLAN_FORMAT_CURRENT);
    P.mutable_metadata()->set_um_block_bytes(kBlock);
    P.mutable_layout()->set_arena_bytes(ArenaBytes);
    for (uint64_t Id : Ids)
      P.add_position_ids(Id);
    for (size_t I = 0; I < Ids.size(); ++I) {
      deepum::v1::ExecutionIdEntry *E = nullptr;
      for (auto &X : *P.mutable_execution_ids())
        if (X.execution_id() == Ids[I])
          E = &X;
      if (!E) {
        E = P.add_execution_ids();
        E->set_execution_id(Ids[I]);
      }
      E->add_positions(static_cast<uint32_t>(I));
    }
  }
  PlanBuilder &action(deepum::v1::ActionKind K, uint32_t Pos, uint64_t Off, uint64_t Bytes,
                      uint32_t Due = 0) {
    auto *A = P.add_actions();
    A->set_kind(K);
    A->set_position(Pos);
    A->set_due_position(Due);
    auto *R = A->add_ranges();
    R->set_offset(Off);
    R->set_bytes(Bytes);
    return *this;
  }
  PlanBuilder &chain(uint32_t Pos, std::vector<uint64_t> Blocks) {
    auto *C = P.add_block_chains();
    C->set_execution_id(P.position_ids(static_cast<int>(Pos)));
    C->set_position(Pos);
    for (uint64_t B : Blocks) {
      C->add_blocks(B);
      C->add_modes(deepum::v1::ACCESS_MODE_READ_WRITE);
    }
    return *this;
  }
  PlanBuilder &place(uint32_t Seq, uint64_t Size, uint64_t Offset, bool Persistent = false) {
    auto *Pl = P.mutable_layout()->add_placements();
    Pl->set_sequence(Seq);
    Pl->set_size_bytes(Size);
    Pl->set_offset(Offset);
    Pl->set_persistent(Persistent);
    return *this;
  }
  PlanBuilder &capacity(uint64_t Bytes) {
    P.mutable_metadata()->set_gpu_memory_bytes(Bytes);
    return *this;
  }
  deepum::v1::Plan &proto() { return P; }
  executor::CompiledPlan compiled() const {
    executor::CompiledPlan C;
    std::string Error;
    EXPECT_TRUE(executor::compilePlan(P, "test.plan", C, Error)) << Error;
    return C;
  }

private:
  deepum::v1::Plan P;
};

/// Completes a RawPlan built by hand into one that passes the plan rules:
/// metadata present and an execution-ID table naming every launched ID and
/// chain ID (each with its positions).
inline void addIdTable(executor::RawPlan &R) {
  R.HasMetadata = true;
  R.ExecutionIds.clear();
  std::map<uint64_t, std::vector<uint32_t>> Ids;
  for (uint32_t P = 0; P < R.PositionIds.size(); ++P)
    Ids[R.PositionIds[P]].push_back(P);
  for (const auto &C : R.Chains)
    Ids[C.Id];
  for (auto &[Id, Positions] : Ids)
    R.ExecutionIds.push_back({Id, Positions, {}});
}

} // namespace deepum::test

#endif
