//===- PlanRules.cpp - The rules every plan must pass ----------------------===//
//
// One set of rules for the format library (validatePlan) and for libdeepum's
// plan loader, so that a plan deepum-inspect accepts is a plan the training
// process replays, and a plan it rejects is never replayed. No protobuf here:
// libdeepum.so contains this file.
//
//===----------------------------------------------------------------------===//
#include "deepum/format/PlanWire.h"

#include "deepum/format/PlanFields.h"

#include "deepum/base/Hash.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <unordered_set>

namespace deepum::format {

namespace {

std::string hex(uint64_t V) {
  char Buf[24];
  std::snprintf(Buf, sizeof Buf, "%" PRIx64, V);
  return Buf;
}

std::string num(uint64_t V) { return std::to_string(V); }

std::string hex16(uint64_t V) {
  char Buf[24];
  std::snprintf(Buf, sizeof Buf, "%016" PRIx64, V);
  return Buf;
}

bool isPowerOfTwo(uint64_t V) { return V && !(V & (V - 1)); }

/// Saturating a + b.
uint64_t addSat(uint64_t A, uint64_t B) { return B > UINT64_MAX - A ? UINT64_MAX : A + B; }

/// Placements whose lifetimes overlap must not overlap in the arena. A
/// placement without a lifetime (live_end 0, not persistent) comes from a
/// deepum-plan that laid placements out by lifetimes it did not write down:
/// such placements may share bytes with each other, as that planner meant,
/// and are checked against the persistent placements only, which are live
/// throughout. (libdeepum places any placement only where nothing is live.)
std::string checkPlacementsDisjoint(const RawPlan &P) {
  constexpr uint64_t kForever = UINT64_MAX;
  struct Event {
    uint64_t Tick;
    bool Start; // ends sort first at the same tick: lifetimes are half-open
    uint32_t Index;
  };
  std::vector<Event> Events;
  Events.reserve(P.Placements.size() * 4);
  for (uint32_t I = 0; I < P.Placements.size(); ++I) {
    const RawPlan::Placement &Pl = P.Placements[I];
    if (!Pl.Persistent && Pl.LiveEnd == 0)
      continue; // no lifetime: against the persistent placements, below
    if (Pl.Persistent) {
      Events.push_back({0, true, I});
      Events.push_back({kForever, false, I});
      continue;
    }
    Events.push_back({Pl.LiveBegin, true, I});
    Events.push_back({Pl.LiveEnd, false, I});
    if (Pl.WrapEnd) {
      Events.push_back({0, true, I});
      Events.push_back({Pl.WrapEnd, false, I});
    }
  }
  std::sort(Events.begin(), Events.end(), [](const Event &A, const Event &B) {
    if (A.Tick != B.Tick)
      return A.Tick < B.Tick;
    if (A.Start != B.Start)
      return !A.Start;
    return A.Index < B.Index;
  });
  std::map<uint64_t, uint32_t> Live; // arena offset -> placement index
  // The placement in Live that [Pl.Offset, +Pl.Size) overlaps, or UINT32_MAX.
  auto Overlapped = [&](const RawPlan::Placement &Pl) -> uint32_t {
    const uint64_t End = Pl.Offset + Pl.Size; // inside the arena: checked before
    auto Next = Live.lower_bound(Pl.Offset);
    if (Next != Live.end() && Next->first < End)
      return Next->second;
    if (Next != Live.begin()) {
      const RawPlan::Placement &Prev = P.Placements[std::prev(Next)->second];
      if (Prev.Offset + Prev.Size > Pl.Offset)
        return std::prev(Next)->second;
    }
    return UINT32_MAX;
  };
  auto Overlap = [&](uint32_t Other, const RawPlan::Placement &Pl) {
    return "placements for allocations " + num(P.Placements[Other].Sequence) + " and " +
           num(Pl.Sequence) + " overlap in the arena while both are live";
  };
  for (const Event &E : Events) {
    const RawPlan::Placement &Pl = P.Placements[E.Index];
    if (!E.Start) {
      if (Pl.Persistent)
        continue; // ends at kForever, after everything else: kept for below
      auto It = Live.find(Pl.Offset);
      if (It != Live.end() && It->second == E.Index)
        Live.erase(It);
      continue;
    }
    if (uint32_t Other = Overlapped(Pl); Other != UINT32_MAX)
      return Overlap(Other, Pl);
    Live.emplace(Pl.Offset, E.Index);
  }
  // Only the persistent placements are left live.
  for (const RawPlan::Placement &Pl : P.Placements)
    if (!Pl.Persistent && Pl.LiveEnd == 0)
      if (uint32_t Other = Overlapped(Pl); Other != UINT32_MAX)
        return Overlap(Other, Pl);
  return "";
}

/// The rules of the copy path's actions: the executor's ledger keeps a
/// pool slot per arena block, so copies move whole blocks, and a COPY_OUT's
/// slots lie inside the pool. "" when `A` keeps them.
std::string checkCopyAction(const RawPlan &P, const RawPlan::Action &A) {
  const bool Copy =
      A.Kind == planfields::kActionCopyOut || A.Kind == planfields::kActionCopyIn;
  if (A.PoolOffset != 0 && A.Kind != planfields::kActionCopyOut)
    return "has a pool offset but is no COPY_OUT";
  if (!Copy)
    return "";
  uint64_t Bytes = 0;
  for (const RawRange &R : A.Ranges) {
    if (R.Offset % P.UmBlockBytes != 0 || R.Bytes % P.UmBlockBytes != 0)
      return "copies range [" + num(R.Offset) + ", +" + num(R.Bytes) +
             "), which is not whole blocks of " + num(P.UmBlockBytes) + " bytes";
    Bytes = addSat(Bytes, R.Bytes);
  }
  if (A.Kind == planfields::kActionCopyOut &&
      (A.PoolOffset % P.UmBlockBytes != 0 || A.PoolOffset > P.CopyPoolBytes ||
       Bytes > P.CopyPoolBytes - A.PoolOffset))
    return "copies " + num(Bytes) + " bytes to pool offset " + num(A.PoolOffset) +
           ", not whole blocks inside the pool of " + num(P.CopyPoolBytes) + " bytes";
  return "";
}

} // namespace

uint64_t planArenaBytes(const RawPlan &P) {
  uint64_t Arena = P.ArenaBytes;
  if (Arena == 0)
    for (const RawPlan::Action &A : P.Actions)
      for (const RawRange &R : A.Ranges)
        Arena = std::max(Arena, addSat(R.Offset, R.Bytes));
  const uint64_t Block = P.UmBlockBytes ? P.UmBlockBytes : PlanLimits::kMinUmBlockBytes;
  if (Arena > PlanLimits::kMaxArenaBytes)
    return Arena;
  return (Arena + Block - 1) / Block * Block;
}

std::string checkRawPlan(const RawPlan &P) {
  if (P.FormatVersion == 0)
    return "missing format_version: not a deepum plan";
  if (P.FormatVersion != planfields::kPlanFormatCurrent)
    return "unsupported plan format version " + num(P.FormatVersion) + " (this build reads version " +
           num(planfields::kPlanFormatCurrent) + ")";
  if (!P.HasMetadata)
    return "plan has no metadata";
  if (!isPowerOfTwo(P.UmBlockBytes) || P.UmBlockBytes < PlanLimits::kMinUmBlockBytes ||
      P.UmBlockBytes > PlanLimits::kMaxUmBlockBytes)
    return "um_block_bytes " + num(P.UmBlockBytes) +
           " is not a power of two between 64 KiB and 1 GiB";
  const uint64_t Positions = P.PositionIds.size();
  if (Positions == 0)
    return "the plan has no launch positions";
  if (Positions >= (uint64_t{1} << 31))
    return "the plan has more than 2^31 launch positions";
  // A rule of the format, not of the executor alone: deepum-inspect and
  // libdeepum judge a plan by the same rules, so one cannot accept what the
  // other refuses (0: a plan from before the fingerprint, not checked).
  if (P.ProfileFingerprint != 0) {
    uint64_t Own = base::kFnvOffset;
    for (uint64_t Id : P.PositionIds)
      Own = base::fnv1aId(Id, Own);
    if (Own != P.ProfileFingerprint)
      return "the plan's profile fingerprint " + hex16(P.ProfileFingerprint) +
             " is not that of its own launch sequence (" + hex16(Own) +
             "): it was made from another profile or edited";
  }

  // The arena, before anything is sized by it.
  for (size_t I = 0; I < P.Actions.size(); ++I)
    for (const RawRange &R : P.Actions[I].Ranges)
      if (R.Bytes > UINT64_MAX - R.Offset)
        return "action " + num(I) + " range [" + num(R.Offset) + ", +" + num(R.Bytes) +
               ") wraps around the address space";
  const uint64_t Arena = planArenaBytes(P);
  if (Arena > PlanLimits::kMaxArenaBytes)
    return "the plan's arena of " + num(Arena) + " bytes exceeds the limit of " +
           num(PlanLimits::kMaxArenaBytes >> 40) + " TiB";
  const uint64_t ArenaBlocks = Arena / P.UmBlockBytes;
  if (ArenaBlocks > PlanLimits::kMaxArenaBlocks)
    return "the plan's arena has " + num(ArenaBlocks) + " blocks of " + num(P.UmBlockBytes) +
           " bytes, more than the limit of " + num(PlanLimits::kMaxArenaBlocks);

  std::unordered_set<uint64_t> Ids;
  Ids.reserve(P.ExecutionIds.size());
  for (const RawPlan::IdEntry &E : P.ExecutionIds) {
    if (!Ids.insert(E.Id).second)
      return "execution id " + hex(E.Id) + " appears twice";
    for (uint32_t Pos : E.Positions)
      if (Pos >= Positions)
        return "execution id " + hex(E.Id) + " names position " + num(Pos) +
               " of an iteration of " + num(Positions) + " launches";
  }
  for (const RawPlan::IdEntry &E : P.ExecutionIds)
    for (uint64_t S : E.Successors)
      if (!Ids.count(S))
        return "execution id " + hex(E.Id) + " has an unknown successor " + hex(S);
  for (uint64_t Id : P.PositionIds)
    if (!Ids.count(Id))
      return "position sequence names unknown execution id " + hex(Id);
  if (!P.PositionContexts.empty() &&
      (P.PositionContexts.size() != Positions || P.ContextLength == 0 ||
       P.ContextLength > PlanLimits::kMaxContextLength))
    return "position contexts (" + num(P.PositionContexts.size()) + " of length " +
           num(P.ContextLength) + ") do not match the " + num(Positions) +
           " launch positions or a context length of 1 to 64";
  for (const RawPlan::Chain &C : P.Chains) {
    if (!Ids.count(C.Id))
      return "block chain for unknown execution id " + hex(C.Id);
    if (C.Position >= Positions)
      return "block chain at position " + num(C.Position) + " beyond the iteration";
    for (uint64_t B : C.Blocks)
      if (B >= ArenaBlocks)
        return "block chain at position " + num(C.Position) + " names block " + num(B) +
               " of an arena of " + num(ArenaBlocks) + " blocks";
  }

  // The pinned pool: whole blocks, no larger than an arena may be (the
  // executor asks the host for it once, and refuses what cannot be had).
  if (P.CopyPoolBytes % P.UmBlockBytes != 0 || P.CopyPoolBytes > PlanLimits::kMaxArenaBytes)
    return "copy_pool_bytes " + num(P.CopyPoolBytes) + " is not a whole number of " +
           num(P.UmBlockBytes) + "-byte blocks of at most " + num(PlanLimits::kMaxArenaBytes >> 40) +
           " TiB";
  uint32_t PrevPos = 0;
  for (size_t I = 0; I < P.Actions.size(); ++I) {
    const RawPlan::Action &A = P.Actions[I];
    if (A.Kind == planfields::kActionUnspecified)
      return "action " + num(I) + " has no kind";
    if (A.Position >= Positions || A.DuePosition >= Positions)
      return "action " + num(I) + " names a position beyond the iteration's " + num(Positions) +
             " launches";
    if (A.Position < PrevPos)
      return "actions are not sorted by position (action " + num(I) + ")";
    PrevPos = A.Position;
    if (A.Kind == planfields::kActionAdvise && A.Advice == planfields::kAdviceUnspecified)
      return "action " + num(I) + " advises nothing";
    if (A.Ranges.empty())
      return "action " + num(I) + " has no ranges";
    for (const RawRange &R : A.Ranges) {
      if (R.Bytes == 0)
        return "action " + num(I) + " has an empty range";
      if (P.ArenaBytes != 0 && (R.Offset > P.ArenaBytes || R.Bytes > P.ArenaBytes - R.Offset))
        return "action " + num(I) + " range [" + num(R.Offset) + ", +" + num(R.Bytes) +
               ") lies outside the arena of " + num(P.ArenaBytes) + " bytes";
    }
    if (std::string Why = checkCopyAction(P, A); !Why.empty())
      return "action " + num(I) + " " + Why;
  }

  std::unordered_set<uint32_t> Seqs;
  std::unordered_set<uint64_t> Calls; // a call is one allocation: one placement at most
  Seqs.reserve(P.Placements.size());
  for (const RawPlan::Placement &Pl : P.Placements) {
    if (!Seqs.insert(Pl.Sequence).second)
      return "placement for allocation " + num(Pl.Sequence) + " appears twice";
    if (Pl.CallIndex != 0 && !Pl.Persistent)
      return "placement for allocation " + num(Pl.Sequence) +
             " has a call index but is not persistent (only allocations made before the "
             "reference iteration are placed by call)";
    if (Pl.CallIndex >= kCallIndexLimit)
      return "placement for allocation " + num(Pl.Sequence) + " has call index " +
             num(Pl.CallIndex) + ", beyond any process's allocation calls";
    if (Pl.CallIndex != 0 && !Calls.insert(Pl.CallIndex).second)
      return "placements for two allocations share call index " + num(Pl.CallIndex) +
             " (allocation " + num(Pl.Sequence) + ")";
    if (Pl.Size == 0)
      return "placement for allocation " + num(Pl.Sequence) + " has size 0";
    if (Pl.Offset > P.ArenaBytes || Pl.Size > P.ArenaBytes - Pl.Offset)
      return "placement for allocation " + num(Pl.Sequence) + " lies outside the arena of " +
             num(P.ArenaBytes) + " bytes";
    if (Pl.LiveEnd != 0 && !Pl.Persistent &&
        (Pl.LiveBegin >= Pl.LiveEnd || Pl.LiveEnd > P.LayoutTicks || Pl.WrapEnd > Pl.LiveBegin))
      return "placement for allocation " + num(Pl.Sequence) + " has an invalid lifetime [" +
             num(Pl.LiveBegin) + ", " + num(Pl.LiveEnd) + ") + [0, " + num(Pl.WrapEnd) +
             ") in a layout of " + num(P.LayoutTicks) + " ticks";
  }
  if (!P.PrologueCallBytes.empty()) {
    if (Calls.empty())
      return "the layout lists the sizes of " + num(P.PrologueCallBytes.size()) +
             " calls before the reference iteration but no placement has a call index";
    if (P.PrologueCallBytes.size() > kMaxPrologueCalls)
      return "the layout lists the sizes of " + num(P.PrologueCallBytes.size()) +
             " calls before the reference iteration, more than " + num(kMaxPrologueCalls);
    for (const RawPlan::Placement &Pl : P.Placements)
      if (Pl.CallIndex != 0 && (Pl.CallIndex > P.PrologueCallBytes.size() ||
                                (P.PrologueCallBytes[Pl.CallIndex - 1] != 0 &&
                                 P.PrologueCallBytes[Pl.CallIndex - 1] != Pl.Size)))
        return "placement for allocation " + num(Pl.Sequence) + " (call " + num(Pl.CallIndex) +
               ", " + num(Pl.Size) + " bytes) disagrees with the layout's size of that call";
  }
  return checkPlacementsDisjoint(P);
}

} // namespace deepum::format
