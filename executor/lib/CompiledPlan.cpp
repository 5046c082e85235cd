//===- CompiledPlan.cpp - A plan indexed for the launch hook ---------------===//
#include "deepum/executor/CompiledPlan.h"

#include "deepum/format/PlanFields.h"

#include <algorithm>

namespace deepum::executor {

namespace {
namespace pf = format::planfields;

bool toAdvice(int A, MemAdvice &Out) {
  switch (A) {
  case pf::kAdviceSetReadMostly:
    Out = MemAdvice::SetReadMostly;
    return true;
  case pf::kAdviceUnsetReadMostly:
    Out = MemAdvice::UnsetReadMostly;
    return true;
  case pf::kAdviceSetPreferredLocationDevice:
    Out = MemAdvice::SetPreferredLocationDevice;
    return true;
  case pf::kAdviceSetPreferredLocationHost:
    Out = MemAdvice::SetPreferredLocationHost;
    return true;
  case pf::kAdviceUnsetPreferredLocation:
    Out = MemAdvice::UnsetPreferredLocation;
    return true;
  case pf::kAdviceSetAccessedByDevice:
    Out = MemAdvice::SetAccessedByDevice;
    return true;
  case pf::kAdviceUnsetAccessedByDevice:
    Out = MemAdvice::UnsetAccessedByDevice;
    return true;
  default:
    return false;
  }
}
} // namespace

uint64_t compiledPlanBytes(const RawPlan &P) {
  // Vectors grow by doubling: twice the elements, plus a header per vector.
  const uint64_t N = P.PositionIds.size();
  uint64_t Bytes = 2 * N *
                   (sizeof(uint64_t)                        // PositionIds
                    + 3 * sizeof(std::vector<PlanAction>)   // Before, Release, After
                    + sizeof(std::vector<uint32_t>)         // PositionBlocks
                    + 2 * sizeof(uint32_t) + 2 * sizeof(void *)); // id and context indexes
  for (const RawPlan::Action &A : P.Actions)
    Bytes += 2 * (sizeof(PlanAction) + A.Ranges.size() * sizeof(MemRange));
  for (const RawPlan::Chain &C : P.Chains)
    Bytes += 2 * C.Blocks.size() * 2 * sizeof(uint32_t); // PositionBlocks and BlockUses
  for (const RawPlan::IdEntry &E : P.ExecutionIds)
    Bytes += 2 * (E.Positions.size() * sizeof(uint32_t) + 64);
  Bytes += P.Placements.size() * 64 + P.PrologueCallBytes.size() * 2 * sizeof(uint64_t);
  return Bytes;
}

std::string checkCompiledPlanBytes(const RawPlan &P, uint64_t WireBytes) {
  const uint64_t Need = compiledPlanBytes(P);
  const uint64_t Bound = kCompiledPlanFactor * WireBytes + format::PlanLimits::kReadMemorySlackBytes;
  if (Need <= Bound)
    return "";
  return "holds " + std::to_string(P.PositionIds.size()) + " launch positions, which would take " +
         std::to_string(Need) + " bytes once compiled, more than " +
         std::to_string(kCompiledPlanFactor) + " times its " + std::to_string(WireBytes) +
         " bytes plus " + std::to_string(format::PlanLimits::kReadMemorySlackBytes >> 20) +
         " MiB; refusing it";
}

bool compileRawPlan(const RawPlan &P, const std::string &Source, CompiledPlan &Out,
                    std::string &Error) {
  Out = CompiledPlan{};
  Error = format::checkRawPlan(P);
  if (!Error.empty())
    return false;
  // From here on every index is known to be in range: positions below N,
  // blocks below ArenaBlocks, ranges and placements inside the arena, and N
  // and ArenaBlocks within format::PlanLimits.
  Out.Source = Source;
  Out.Model = P.Model;
  Out.GpuMemoryBytes = P.GpuMemoryBytes;
  Out.CopyPoolBytes = P.CopyPoolBytes;
  Out.ProfileFingerprint = P.ProfileFingerprint;
  Out.UmBlockBytes = P.UmBlockBytes;
  Out.PositionIds = P.PositionIds;
  const auto N = static_cast<uint32_t>(Out.PositionIds.size());
  Out.ArenaBytes = format::planArenaBytes(P);
  Out.ArenaBlocks = static_cast<uint32_t>(Out.ArenaBytes / Out.UmBlockBytes);

  // Correlation table 1 gives each ID's positions; position_ids is the ground
  // truth for anything the table leaves out.
  for (const auto &E : P.ExecutionIds) {
    std::vector<uint32_t> Pos;
    for (uint32_t Q : E.Positions)
      if (Out.PositionIds[Q] == E.Id)
        Pos.push_back(Q);
    std::sort(Pos.begin(), Pos.end());
    Pos.erase(std::unique(Pos.begin(), Pos.end()), Pos.end());
    if (!Pos.empty())
      Out.IdPositions[E.Id] = std::move(Pos);
  }
  for (uint32_t Q = 0; Q < N; ++Q) {
    auto &Pos = Out.IdPositions[Out.PositionIds[Q]];
    if (!std::binary_search(Pos.begin(), Pos.end(), Q))
      Pos.insert(std::lower_bound(Pos.begin(), Pos.end(), Q), Q);
  }

  // Context IDs (plan field 8) resynchronise in repeated structures where one
  // execution ID occurs at many positions.
  if (!P.PositionContexts.empty()) {
    Out.ContextLength = P.ContextLength;
    for (uint32_t Q = 0; Q < N; ++Q)
      Out.ContextPositions[P.PositionContexts[Q]].push_back(Q);
  }

  Out.BeforeLaunch.resize(N);
  Out.ReleaseBefore.resize(N);
  Out.AfterLaunch.resize(N);
  for (const auto &A : P.Actions) {
    PlanAction Act;
    Act.Position = A.Position;
    Act.DuePosition = A.DuePosition;
    Act.PoolOffset = A.PoolOffset;
    for (const RawRange &R : A.Ranges)
      Act.Ranges.push_back({static_cast<uintptr_t>(R.Offset), R.Bytes});
    switch (A.Kind) {
    case pf::kActionPrefetch:
    case pf::kActionCopyIn:
      Act.Kind = A.Kind == pf::kActionPrefetch ? PlanActionKind::Prefetch : PlanActionKind::CopyIn;
      Out.BeforeLaunch[A.Position].push_back(std::move(Act));
      break;
    case pf::kActionAdvise:
      Act.Kind = PlanActionKind::Advise;
      if (!toAdvice(A.Advice, Act.Advice))
        continue; // advice of a newer format: not ours to give
      Out.BeforeLaunch[A.Position].push_back(std::move(Act));
      break;
    case pf::kActionEvict:
      Act.Kind = PlanActionKind::Evict;
      (Act.DuePosition != Act.Position ? Out.ReleaseBefore : Out.AfterLaunch)[A.Position]
          .push_back(std::move(Act));
      break;
    case pf::kActionDiscard:
    case pf::kActionCopyOut:
      Act.Kind = A.Kind == pf::kActionDiscard ? PlanActionKind::Discard : PlanActionKind::CopyOut;
      (Act.DuePosition != Act.Position ? Out.ReleaseBefore : Out.AfterLaunch)[A.Position]
          .push_back(std::move(Act));
      break;
    default: // kinds of a newer format
      break;
    }
  }

  Out.PositionBlocks.resize(N);
  for (const auto &C : P.Chains)
    for (uint64_t B : C.Blocks)
      Out.PositionBlocks[C.Position].push_back(static_cast<uint32_t>(B));

  Out.BlockUseStart.assign(size_t{Out.ArenaBlocks} + 1, 0);
  for (uint32_t Q = 0; Q < N; ++Q) {
    auto &Blocks = Out.PositionBlocks[Q];
    std::sort(Blocks.begin(), Blocks.end());
    Blocks.erase(std::unique(Blocks.begin(), Blocks.end()), Blocks.end());
    for (uint32_t B : Blocks)
      ++Out.BlockUseStart[B + 1];
  }
  for (uint32_t B = 0; B < Out.ArenaBlocks; ++B)
    Out.BlockUseStart[B + 1] += Out.BlockUseStart[B];
  Out.BlockUses.resize(Out.BlockUseStart.back());
  std::vector<uint32_t> Fill(Out.BlockUseStart.begin(), Out.BlockUseStart.end() - 1);
  for (uint32_t Q = 0; Q < N; ++Q) // ascending positions per block
    for (uint32_t B : Out.PositionBlocks[Q])
      Out.BlockUses[Fill[B]++] = Q;

  uint32_t FirstIteration = 0;
  for (const auto &Pl : P.Placements) {
    Out.Placements[Pl.Sequence] = {Pl.Size, Pl.Offset, Pl.Persistent};
    if (Pl.Persistent)
      FirstIteration = std::max(FirstIteration, Pl.Sequence + 1);
    if (Pl.Persistent && Pl.CallIndex != 0) { // unique and persistent-only (checkRawPlan)
      Out.PrologueCalls[Pl.CallIndex] = Pl.Sequence;
      Out.PrologueEnd = std::max(Out.PrologueEnd, Pl.CallIndex + 1);
    }
  }
  Out.FirstIterationSequence = FirstIteration;
  if (!Out.PrologueCalls.empty())
    Out.PrologueCallBytes = P.PrologueCallBytes; // consistent with them (checkRawPlan)
  return true;
}

} // namespace deepum::executor
