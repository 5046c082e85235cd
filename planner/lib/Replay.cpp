//===- Replay.cpp - Residency replay of a plan ------------------------------===//
#include "deepum/planner/Replay.h"

#include "Internal.h"

#include <algorithm>
#include <limits>
#include <queue>

using namespace deepum::v1;

namespace deepum::planner {

ReplayReport replayPlan(const Plan &P, unsigned Iterations) {
  ReplayReport R;
  const uint64_t BlockBytes = P.metadata().um_block_bytes();
  R.CapacityBlocks = P.metadata().gpu_memory_bytes() / BlockBytes;
  const uint64_t Blocks = (P.layout().arena_bytes() + BlockBytes - 1) / BlockBytes;
  const uint32_t N = static_cast<uint32_t>(P.position_ids_size());
  std::vector<const BlockChain *> Chain(N, nullptr);
  for (const BlockChain &C : P.block_chains())
    if (C.position() < N)
      Chain[C.position()] = &C;
  std::vector<std::vector<const Action *>> At(N);
  for (const Action &A : P.actions())
    At[A.position()].push_back(&A);
  std::vector<uint8_t> Resident(Blocks, 0);
  std::vector<int64_t> LastUse(Blocks, -1);
  // Blocks of the current position's chain (== Clock): never the LRU victim.
  std::vector<int64_t> Protected(Blocks, -1);
  uint64_t Count = 0;
  int64_t Clock = 0;
  // Least recently used first; entries are (last use, block), stale ones skipped.
  std::priority_queue<std::pair<int64_t, uint64_t>, std::vector<std::pair<int64_t, uint64_t>>,
                      std::greater<>>
      Lru;
  auto Touch = [&](uint64_t B) {
    LastUse[B] = Clock;
    Lru.push({Clock, B});
  };
  auto EvictLru = [&](const BlockChain *Protect) {
    std::vector<std::pair<int64_t, uint64_t>> Kept;
    while (!Lru.empty()) {
      auto [When, B] = Lru.top();
      Lru.pop();
      if (!Resident[B] || LastUse[B] != When)
        continue;
      if (Protect && Protected[B] == Clock) {
        Kept.push_back({When, B});
        continue;
      }
      Resident[B] = 0;
      --Count;
      break;
    }
    for (auto E : Kept)
      Lru.push(E);
  };
  for (unsigned It = 0; It < Iterations; ++It) {
    bool Last = It + 1 == Iterations;
    for (uint32_t Pos = 0; Pos < N; ++Pos, ++Clock) {
      if (Chain[Pos])
        for (uint64_t B : Chain[Pos]->blocks())
          if (B < Blocks)
            Protected[B] = Clock;
      for (const Action *A : At[Pos]) {
        for (const ArenaRange &Rg : A->ranges()) {
          uint64_t First = Rg.offset() / BlockBytes;
          uint64_t End = (Rg.offset() + Rg.bytes() + BlockBytes - 1) / BlockBytes;
          for (uint64_t B = First; B < End && B < Blocks; ++B) {
            if (A->kind() == ACTION_KIND_EVICT || A->kind() == ACTION_KIND_DISCARD ||
                A->kind() == ACTION_KIND_COPY_OUT) {
              if (Resident[B]) {
                Resident[B] = 0;
                --Count;
              }
            } else if ((A->kind() == ACTION_KIND_PREFETCH || A->kind() == ACTION_KIND_COPY_IN) &&
                       !Resident[B]) {
              if (Count >= R.CapacityBlocks) {
                ++R.OverCapacityPrefetches;
                EvictLru(Chain[Pos]);
                if (Last)
                  ++R.SteadyStateDriverEvictions;
              }
              Resident[B] = 1;
              Touch(B);
              ++Count;
            }
          }
        }
        R.MaxResidentBlocks = std::max(R.MaxResidentBlocks, Count);
      }
      if (!Chain[Pos])
        continue;
      R.MaxWorkingSetBlocks = std::max<uint64_t>(R.MaxWorkingSetBlocks, Chain[Pos]->blocks_size());
      for (uint64_t B : Chain[Pos]->blocks()) {
        if (B >= Blocks)
          continue;
        if (!Resident[B]) {
          if (Last)
            ++R.SteadyStateFaults;
          if (Count >= R.CapacityBlocks) {
            EvictLru(Chain[Pos]);
            if (Last)
              ++R.SteadyStateDriverEvictions;
          }
          Resident[B] = 1;
          ++Count;
        }
        Touch(B);
      }
      R.MaxResidentBlocks = std::max(R.MaxResidentBlocks, Count);
    }
  }
  return R;
}

uint64_t unsafeDiscards(const Plan &P, const Trace &T) {
  detail::UseTable U = detail::buildUseTable(T);
  uint64_t Unsafe = 0;
  for (const Action &A : P.actions()) {
    if (A.kind() != ACTION_KIND_DISCARD)
      continue;
    for (const ArenaRange &Rg : A.ranges()) {
      uint64_t First = Rg.offset() / T.BlockBytes;
      uint64_t End = (Rg.offset() + Rg.bytes() + T.BlockBytes - 1) / T.BlockBytes;
      for (uint64_t B = First; B < End && B < T.Blocks; ++B) {
        uint64_t Count = U.count(B);
        if (Count == 0)
          continue;
        // The first use at or after the discard's position, cyclically.
        auto Begin = U.Pos.begin() + U.Start[B], Stop = Begin + Count;
        auto It = std::lower_bound(Begin, Stop, A.position());
        uint64_t Index = U.Start[B] + (It == Stop ? 0 : It - Begin);
        if (!U.DeadBefore[Index])
          ++Unsafe;
      }
    }
  }
  return Unsafe;
}

} // namespace deepum::planner
