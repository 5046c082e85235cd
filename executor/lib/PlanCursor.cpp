//===- PlanCursor.cpp - Where in the plan the program is -------------------===//
#include "deepum/executor/PlanCursor.h"

#include "deepum/base/Hash.h"

#include <cstdio>
#include <string>

namespace deepum::executor {

namespace {
std::string hex16(uint64_t V) {
  char Buf[20];
  std::snprintf(Buf, sizeof Buf, "%016llx", static_cast<unsigned long long>(V));
  return Buf;
}
} // namespace

PlanCursor::PlanCursor(const CompiledPlan &P, CursorOptions O) : Plan(P), Opts(O) {
  if (Plan.positions() == 0) {
    turnOff("the plan has no positions");
    return;
  }
  if (Plan.ProfileFingerprint == 0)
    return; // an older plan: nothing to check against
  if (std::string Why = profileFingerprintMismatch(Plan); !Why.empty()) {
    Fingerprint = FingerprintCheck::Mismatch;
    turnOff(std::move(Why));
    return;
  }
  Fingerprint = FingerprintCheck::Pending;
}

std::string profileFingerprintMismatch(const CompiledPlan &P) {
  if (P.ProfileFingerprint == 0)
    return {};
  uint64_t Own = base::kFnvOffset;
  for (uint64_t Id : P.PositionIds)
    Own = base::fnv1aId(Id, Own);
  if (Own == P.ProfileFingerprint)
    return {};
  return "the plan's profile fingerprint " + hex16(P.ProfileFingerprint) +
         " is not that of its own launch sequence (" + hex16(Own) +
         "): it was made from another profile or edited";
}

void PlanCursor::checkFingerprint() {
  if (Fingerprint != FingerprintCheck::Pending)
    return;
  const bool Complete = Marked && LiveLaunches != 0; // a whole marked iteration
  const uint64_t Seen = LiveHash;
  Marked = true;
  LiveHash = base::kFnvOffset;
  LiveLaunches = 0;
  if (!Complete)
    return;
  if (Seen == Plan.ProfileFingerprint) {
    Fingerprint = FingerprintCheck::Matched;
    return;
  }
  if (++FingerprintMisses < Opts.FingerprintIterations)
    return;
  Fingerprint = FingerprintCheck::Mismatch;
  turnOff("the launch sequence of " + std::to_string(FingerprintMisses) +
          " marked iterations in a row differs from the plan's profile fingerprint " +
          hex16(Plan.ProfileFingerprint) + " (last " + hex16(Seen) +
          "): the plan was made for another model or configuration");
}

void PlanCursor::turnOff(std::string Why) {
  if (St == State::Off)
    return;
  St = State::Off;
  OffWhy = std::move(Why);
  OffNotice = true;
  Candidates.clear();
}

bool PlanCursor::takeOffNotice() {
  bool N = OffNotice;
  OffNotice = false;
  return N;
}

bool PlanCursor::takeIterationWrap() {
  bool W = Wrapped;
  Wrapped = false;
  return W;
}

uint32_t PlanCursor::accept(uint32_t Pos) {
  Stats.Matched++;
  Unexplained = 0;
  Next = Pos + 1;
  if (Next == Plan.positions()) {
    Next = 0;
    Wrapped = true;
    Stats.Iterations++;
  }
  return Pos;
}

uint32_t PlanCursor::advance(uint64_t Id, uint32_t &Skipped) {
  Skipped = 0;
  if (St == State::Off)
    return kNoPosition;
  Stats.Launches++;
  if (Fingerprint == FingerprintCheck::Pending && Marked) {
    LiveHash = base::fnv1aId(Id, LiveHash);
    ++LiveLaunches;
  }
  if (!ModelChecked) {
    // A plan for another model shares (almost) no execution IDs with the live
    // program; decide early, before a wrong plan does harm.
    SeenEarly++;
    KnownEarly += Plan.IdPositions.count(Id);
    uint64_t MaxUnknown = static_cast<uint64_t>(static_cast<double>(Opts.ModelCheckLaunches) *
                                                (1.0 - Opts.MinKnownFraction));
    if (SeenEarly - KnownEarly > MaxUnknown || SeenEarly >= Opts.ModelCheckLaunches) {
      ModelChecked = true;
      if (static_cast<double>(KnownEarly) <
          Opts.MinKnownFraction * static_cast<double>(Opts.ModelCheckLaunches)) {
        char Buf[200];
        std::snprintf(Buf, sizeof Buf,
                      "the plan seems to be for a different model: %llu of the first %llu "
                      "launches are in it",
                      static_cast<unsigned long long>(KnownEarly),
                      static_cast<unsigned long long>(SeenEarly));
        turnOff(Buf);
        return kNoPosition;
      }
    }
  }
  if (St == State::Synced) {
    if (Plan.ContextLength) { // keep the ring current for a later search
      if (Recent.size() != Plan.ContextLength)
        Recent.assign(Plan.ContextLength, 0);
      Recent[RecentCount++ % Plan.ContextLength] = Id;
    }
    return matchSynced(Id, Skipped);
  }
  return search(Id);
}

uint32_t PlanCursor::matchSynced(uint64_t Id, uint32_t &Skipped) {
  const uint32_t N = static_cast<uint32_t>(Plan.positions());
  if (Plan.PositionIds[Next] == Id)
    return accept(Next);
  for (uint32_t K = 1; K <= Opts.Lookahead && K < N; ++K) {
    uint32_t Pos = (Next + K) % N;
    if (Plan.PositionIds[Pos] != Id)
      continue;
    // Launches the plan expected did not happen (a kernel skipped, fused or
    // replaced): jump over them.
    if (Next + K >= N) {
      Wrapped = true;
      Stats.Iterations++;
    }
    Skipped = K;
    Stats.Missing += K;
    return accept(Pos);
  }
  // An inserted launch: stay where we are, unless too many in a row.
  Stats.Inserted++;
  if (++Unexplained >= Opts.LostAfter) {
    St = State::Searching;
    SearchingFor = 0;
    Candidates.clear();
  }
  return kNoPosition;
}

uint32_t PlanCursor::contextMatch(uint64_t Id) {
  const uint32_t L = Plan.ContextLength;
  if (L == 0)
    return kNoPosition;
  if (Recent.size() != L)
    Recent.assign(L, 0);
  Recent[RecentCount++ % L] = Id;
  if (RecentCount < L)
    return kNoPosition;
  // The plan hashes position i's ID first, then i-1, ...: newest first.
  uint64_t H = base::kFnvOffset;
  for (uint32_t K = 0; K < L; ++K)
    H = base::fnv1aId(Recent[(RecentCount - 1 - K) % L], H);
  auto It = Plan.ContextPositions.find(H);
  if (It == Plan.ContextPositions.end() || It->second.size() != 1)
    return kNoPosition;
  return It->second.front();
}

uint32_t PlanCursor::search(uint64_t Id) {
  if (++SearchingFor > Opts.OffAfterSearching) {
    char Buf[160];
    std::snprintf(Buf, sizeof Buf,
                  "lost the plan for %u launches in a row; replaying it is off, "
                  "the allocator keeps working",
                  Opts.OffAfterSearching);
    turnOff(Buf);
    return kNoPosition;
  }
  const uint32_t N = static_cast<uint32_t>(Plan.positions());
  auto Restart = [&]() -> uint32_t {
    Candidates.clear();
    auto It = Plan.IdPositions.find(Id);
    if (It == Plan.IdPositions.end())
      return kNoPosition;
    if (It->second.size() == 1)
      return It->second.front();
    Candidates = It->second;
    return kNoPosition;
  };
  uint32_t Found = contextMatch(Id);
  if (Found != kNoPosition) {
    // named by its context: done
  } else if (Candidates.empty()) {
    Found = Restart();
  } else {
    // Keep the candidates whose successor in the plan is this launch: the
    // execution-ID table's "which kernel follows which", position by position.
    Scratch.clear();
    for (uint32_t C : Candidates) {
      uint32_t Succ = (C + 1) % N;
      if (Plan.PositionIds[Succ] == Id)
        Scratch.push_back(Succ);
    }
    if (Scratch.empty())
      Found = Restart();
    else if (Scratch.size() == 1)
      Found = Scratch.front();
    else
      Candidates.swap(Scratch);
  }
  if (Found == kNoPosition)
    return kNoPosition;
  St = State::Synced;
  Candidates.clear();
  Stats.Resyncs++;
  return accept(Found);
}

void PlanCursor::markIteration() {
  if (St == State::Off)
    return;
  checkFingerprint();
  if (St == State::Off)
    return;
  if (St == State::Synced && Next == 0)
    return; // the cursor already wrapped at the plan's last position
  if (St == State::Synced)
    Stats.Iterations++;
  St = State::Synced;
  Next = 0;
  Unexplained = 0;
  Candidates.clear();
}

} // namespace deepum::executor
