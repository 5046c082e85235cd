//===- ExecutorTestSupport.h - Plans built by hand for executor tests ------===//
#ifndef DEEPUM_TESTS_EXECUTOR_SUPPORT_H
#define DEEPUM_TESTS_EXECUTOR_SUPPORT_H

#include "deepum/base/Hash.h"
#include "deepum/executor/CompiledPlan.h"
#include "deepum/executor/FakeBackend.h"
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
  PlanBuilder &place(uint32_t Seq, uint64_t Size, uint64_t Offset, bool Persistent = false,
                     uint64_t Call = 0) {
    auto *Pl = P.mutable_layout()->add_placements();
    Pl->set_sequence(Seq);
    Pl->set_size_bytes(Size);
    Pl->set_offset(Offset);
    Pl->set_persistent(Persistent);
    Pl->set_call_index(Call);
    return *this;
  }
  /// PoolLayout.prologue_call_bytes: the profiled calls' sizes, call 1 first.
  PlanBuilder &prologueCalls(const std::vector<uint64_t> &Bytes) {
    for (uint64_t B : Bytes)
      P.mutable_layout()->add_prologue_call_bytes(B);
    return *this;
  }
  /// Sets metadata.profile_fingerprint as the planner does: the hash of the
  /// plan's own launch sequence.
  PlanBuilder &fingerprinted() {
    P.mutable_metadata()->set_profile_fingerprint(
        sequenceHash({P.position_ids().begin(), P.position_ids().end()}));
    return *this;
  }
  /// The planner's sequenceFingerprint of `Ids` (FNV-1a, plan.proto).
  static uint64_t sequenceHash(const std::vector<uint64_t> &Ids) {
    uint64_t H = deepum::base::kFnvOffset;
    for (uint64_t Id : Ids)
      H = deepum::base::fnv1aId(Id, H);
    return H;
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

/// A backend that forwards every call to a FakeBackend; tests derive from it
/// and override the calls they watch or break.
class ForwardingBackend : public executor::Backend {
public:
  explicit ForwardingBackend(executor::FakeBackendOptions O = {}) : Inner(O) {}
  const char *name() const override { return "forwarding"; }
  int deviceCount() override { return Inner.deviceCount(); }
  uint64_t deviceMemoryBytes(int D) override { return Inner.deviceMemoryBytes(D); }
  executor::BackendStatus allocateManaged(int D, uint64_t B, void **O) override {
    return Inner.allocateManaged(D, B, O);
  }
  executor::BackendStatus freeManaged(int D, void *P) override { return Inner.freeManaged(D, P); }
  executor::BackendStatus createStream(int D, executor::StreamHandle *O) override {
    return Inner.createStream(D, O);
  }
  executor::BackendStatus createEvent(int D, executor::EventHandle *O) override {
    return Inner.createEvent(D, O);
  }
  executor::BackendStatus destroyEvent(int D, executor::EventHandle E) override {
    return Inner.destroyEvent(D, E);
  }
  executor::BackendStatus recordEvent(int D, executor::EventHandle E,
                                      executor::StreamHandle S) override {
    return Inner.recordEvent(D, E, S);
  }
  executor::BackendStatus streamWaitEvent(int D, executor::StreamHandle S,
                                          executor::EventHandle E) override {
    return Inner.streamWaitEvent(D, S, E);
  }
  executor::EventState queryEvent(int D, executor::EventHandle E) override {
    return Inner.queryEvent(D, E);
  }
  executor::BackendStatus createTimedEvent(int D, executor::EventHandle *O) override {
    return Inner.createTimedEvent(D, O);
  }
  bool elapsedNs(int D, executor::EventHandle Start, executor::EventHandle End,
                 uint64_t &Ns) override {
    return Inner.elapsedNs(D, Start, End, Ns);
  }
  executor::BackendStatus prefetchBatch(int D, std::span<const executor::MemRange> R, int L,
                                        executor::StreamHandle S) override {
    return Inner.prefetchBatch(D, R, L, S);
  }
  executor::BackendStatus discardBatch(int D, std::span<const executor::MemRange> R,
                                       executor::StreamHandle S) override {
    return Inner.discardBatch(D, R, S);
  }
  executor::BackendStatus advise(int D, executor::MemRange R, executor::MemAdvice A) override {
    return Inner.advise(D, R, A);
  }
  executor::BackendStatus allocatePinned(int D, uint64_t B, void **O) override {
    return Inner.allocatePinned(D, B, O);
  }
  executor::BackendStatus freePinned(int D, void *P) override { return Inner.freePinned(D, P); }
  executor::BackendStatus copyAsync(int D, void *Dst, const void *Src, uint64_t B,
                                    executor::StreamHandle S) override {
    return Inner.copyAsync(D, Dst, Src, B, S);
  }
  bool reportsLaunchArguments() const override { return Inner.reportsLaunchArguments(); }
  bool startLaunchTracking(executor::LaunchObserver *O, std::string &W) override {
    return Inner.startLaunchTracking(O, W);
  }
  void stopLaunchTracking() override { Inner.stopLaunchTracking(); }

  executor::FakeBackend Inner;
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
