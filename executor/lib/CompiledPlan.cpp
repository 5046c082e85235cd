//===- CompiledPlan.cpp - A plan indexed for the launch hook ---------------===//
#include "deepum/executor/CompiledPlan.h"

#include <algorithm>

namespace deepum::executor {

namespace {
// deepum.v1.ActionKind and deepum.v1.Advice values.
enum : int { kPrefetch = 1, kEvict = 2, kDiscard = 3, kAdvise = 4 };

bool toAdvice(int A, MemAdvice &Out) {
  switch (A) {
  case 1:
    Out = MemAdvice::SetReadMostly;
    return true;
  case 2:
    Out = MemAdvice::UnsetReadMostly;
    return true;
  case 3:
    Out = MemAdvice::SetPreferredLocationDevice;
    return true;
  case 4:
    Out = MemAdvice::SetPreferredLocationHost;
    return true;
  case 5:
    Out = MemAdvice::UnsetPreferredLocation;
    return true;
  case 6:
    Out = MemAdvice::SetAccessedByDevice;
    return true;
  case 7:
    Out = MemAdvice::UnsetAccessedByDevice;
    return true;
  default:
    return false;
  }
}
} // namespace

bool compileRawPlan(const RawPlan &P, const std::string &Source, CompiledPlan &Out,
                    std::string &Error) {
  Out = CompiledPlan{};
  Out.Source = Source;
  Out.Model = P.Model;
  Out.GpuMemoryBytes = P.GpuMemoryBytes;
  if (P.UmBlockBytes != 0)
    Out.UmBlockBytes = P.UmBlockBytes;
  Out.PositionIds = P.PositionIds;
  const size_t N = Out.PositionIds.size();
  if (P.FormatVersion != 1) {
    Error = "unsupported plan format version " + std::to_string(P.FormatVersion);
    return false;
  }
  if (N == 0) {
    Error = "the plan has no launch positions";
    return false;
  }
  if (N >= (size_t{1} << 31)) {
    Error = "the plan has too many positions";
    return false;
  }

  // Arena size: the layout's, or (for plans without a layout) what the actions reach.
  uint64_t Arena = P.ArenaBytes;
  for (const auto &A : P.Actions)
    for (const auto &R : A.Ranges)
      Arena = std::max(Arena, R.Address + R.Bytes);
  for (const auto &Pl : P.Placements)
    Arena = std::max(Arena, Pl.Offset + Pl.Size);
  Out.ArenaBytes = (Arena + Out.UmBlockBytes - 1) / Out.UmBlockBytes * Out.UmBlockBytes;
  Out.ArenaBlocks = static_cast<uint32_t>(Out.ArenaBytes / Out.UmBlockBytes);

  // Correlation table 1 gives each ID's positions; position_ids is the ground
  // truth for anything the table leaves out.
  for (const auto &E : P.ExecutionIds) {
    std::vector<uint32_t> Pos;
    for (uint32_t Q : E.Positions)
      if (Q < N && Out.PositionIds[Q] == E.Id)
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
  if (P.ContextLength > 0 && P.ContextLength <= 64 && P.PositionContexts.size() == N) {
    Out.ContextLength = P.ContextLength;
    for (uint32_t Q = 0; Q < N; ++Q)
      Out.ContextPositions[P.PositionContexts[Q]].push_back(Q);
  }

  Out.BeforeLaunch.resize(N);
  Out.ReleaseBefore.resize(N);
  Out.AfterLaunch.resize(N);
  for (const auto &A : P.Actions) {
    if (A.Position >= N)
      continue;
    PlanAction Act;
    Act.Position = A.Position;
    Act.DuePosition = A.DuePosition;
    for (const auto &R : A.Ranges)
      if (R.Bytes != 0 && R.Address < Out.ArenaBytes)
        Act.Ranges.push_back({R.Address, std::min<uint64_t>(R.Bytes, Out.ArenaBytes - R.Address)});
    if (Act.Ranges.empty())
      continue;
    switch (A.Kind) {
    case kPrefetch:
      Act.Kind = PlanActionKind::Prefetch;
      Out.BeforeLaunch[A.Position].push_back(std::move(Act));
      break;
    case kAdvise:
      Act.Kind = PlanActionKind::Advise;
      if (!toAdvice(A.Advice, Act.Advice))
        continue;
      Out.BeforeLaunch[A.Position].push_back(std::move(Act));
      break;
    case kEvict:
      Act.Kind = PlanActionKind::Evict;
      (Act.DuePosition < Act.Position ? Out.ReleaseBefore : Out.AfterLaunch)[A.Position].push_back(
          std::move(Act));
      break;
    case kDiscard:
      Act.Kind = PlanActionKind::Discard;
      (Act.DuePosition < Act.Position ? Out.ReleaseBefore : Out.AfterLaunch)[A.Position].push_back(
          std::move(Act));
      break;
    default:
      break;
    }
  }

  Out.PositionBlocks.resize(N);
  for (const auto &C : P.Chains) {
    if (C.Position >= N)
      continue;
    auto &Blocks = Out.PositionBlocks[C.Position];
    for (uint64_t B : C.Blocks)
      if (B < Out.ArenaBlocks)
        Blocks.push_back(static_cast<uint32_t>(B));
  }

  Out.BlockPositions.resize(Out.ArenaBlocks);
  for (uint32_t Q = 0; Q < N; ++Q) {
    auto &Blocks = Out.PositionBlocks[Q];
    std::sort(Blocks.begin(), Blocks.end());
    Blocks.erase(std::unique(Blocks.begin(), Blocks.end()), Blocks.end());
    for (uint32_t B : Blocks)
      Out.BlockPositions[B].push_back(Q);
  }

  uint32_t FirstIteration = 0;
  for (const auto &Pl : P.Placements) {
    if (Pl.Size == 0 || Pl.Offset + Pl.Size > Out.ArenaBytes)
      continue;
    Out.Placements[Pl.Sequence] = {Pl.Size, Pl.Offset, Pl.Persistent};
    if (Pl.Persistent)
      FirstIteration = std::max(FirstIteration, Pl.Sequence + 1);
  }
  Out.FirstIterationSequence = FirstIteration;
  return true;
}

} // namespace deepum::executor
