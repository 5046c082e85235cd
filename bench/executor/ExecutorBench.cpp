//===- ExecutorBench.cpp - CPU cost of the allocator and the launch hook ---===//
//
//   executor-bench --benchmark_repetitions=9 --benchmark_report_aggregates_only=true
//
// Budgets (issue 5): pool malloc+free <= 200 ns median; launch hook <= 1 us
// median per launch. The fake backend records nothing here, so the numbers
// are deepum's own CPU work.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/Executor.h"
#include "deepum/executor/FakeBackend.h"
#include "deepum/executor/Pool.h"

#include <benchmark/benchmark.h>

#ifdef DEEPUM_BENCH_LAUNCH_ARGUMENTS
#include "deepum/cupti/KernelParams.h"
#endif

#include <cstdio>
#include <cstdlib>
#include <vector>

using namespace deepum::executor;

namespace {
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBlock = 2 * kMiB;

/// malloc+free of one size on one stream: the steady state of a training loop.
void BM_PoolMallocFree(benchmark::State &St) {
  FakeBackend B({.Record = false});
  DevicePool P(B, 0);
  const uint64_t Bytes = static_cast<uint64_t>(St.range(0));
  // Warm: a few live blocks around, as in training.
  std::vector<void *> Live;
  for (int I = 0; I < 64; ++I)
    Live.push_back(P.allocate(Bytes * (1 + I % 3), 1));
  for (auto _ : St) {
    void *Ptr = P.allocate(Bytes, 1);
    benchmark::DoNotOptimize(Ptr);
    P.deallocate(Ptr, 1);
  }
}
BENCHMARK(BM_PoolMallocFree)->Arg(512)->Arg(64 << 10)->Arg(4 << 20)->Arg(64 << 20);

/// A mix of sizes and streams with several blocks live at once.
void BM_PoolMixed(benchmark::State &St) {
  FakeBackend B({.Record = false});
  DevicePool P(B, 0);
  const uint64_t Sizes[] = {512, 4096, 96 << 10, 1 << 20, 3 << 20, 16 << 20};
  std::vector<void *> Held(16, nullptr);
  size_t I = 0;
  for (auto _ : St) {
    size_t Slot = I % Held.size();
    if (Held[Slot])
      P.deallocate(Held[Slot], 1 + Slot % 2);
    Held[Slot] = P.allocate(Sizes[I % 6], 1 + Slot % 2);
    ++I;
  }
}
BENCHMARK(BM_PoolMixed);

/// Executor-level malloc+free of an unplanned allocation (the C ABI path minus the call).
void BM_ExecutorMallocFree(benchmark::State &St) {
  FakeBackend B({.Record = false});
  Executor E(B, ExecutorConfig{});
  for (auto _ : St) {
    void *Ptr = E.allocate(1 << 16, 0, 1);
    benchmark::DoNotOptimize(Ptr);
    E.deallocate(Ptr, 0, 1);
  }
}
BENCHMARK(BM_ExecutorMallocFree);

/// A plan like a real model's: `Positions` launches, 600 distinct kernels, a
/// prefetch every 4th position, an eviction and a discard every 8th, chains of
/// 4 blocks.
CompiledPlan benchPlan(uint32_t Positions) {
  RawPlan R;
  R.FormatVersion = 1;
  R.UmBlockBytes = kBlock;
  R.ArenaBytes = 512 * kBlock;
  for (uint32_t P = 0; P < Positions; ++P)
    R.PositionIds.push_back(1000 + (P * 7919) % 600);
  for (uint32_t P = 0; P < Positions; ++P) {
    RawPlan::Chain C;
    C.Id = R.PositionIds[P];
    C.Position = P;
    for (uint64_t K = 0; K < 4; ++K)
      C.Blocks.push_back((P * 4 + K) % 512);
    R.Chains.push_back(C);
    if (P % 4 == 0)
      R.Actions.push_back({1, P, P + 1, {{((P * 4 + 8) % 512) * kBlock, kBlock}}, 0});
    if (P % 8 == 0)
      R.Actions.push_back({2, P, P, {{((P * 4 + 256) % 512) * kBlock, kBlock}}, 0});
    if (P % 8 == 4)
      R.Actions.push_back({3, P, P, {{((P * 4 + 300) % 512) * kBlock, kBlock}}, 0});
  }
  // 128 persistent tensors of 4 blocks, the whole arena: position P's chain
  // is tensor P % 128 (BM_LaunchHookWithArguments).
  for (uint32_t T = 0; T < 128; ++T) {
    RawPlan::Placement Pl;
    Pl.Sequence = T;
    Pl.Size = 4 * kBlock;
    Pl.Offset = uint64_t{T} * 4 * kBlock;
    Pl.Persistent = true;
    R.Placements.push_back(Pl);
  }
  R.HasMetadata = true;
  for (uint64_t Id = 1000; Id < 1600; ++Id) {
    RawPlan::IdEntry E{Id, {}, {}};
    for (uint32_t P = 0; P < Positions; ++P)
      if (R.PositionIds[P] == Id)
        E.Positions.push_back(P);
    R.ExecutionIds.push_back(std::move(E));
  }
  CompiledPlan CP;
  std::string Error;
  if (!compileRawPlan(R, "bench", CP, Error)) {
    std::fprintf(stderr, "bench plan rejected: %s\n", Error.c_str());
    std::abort();
  }
  return CP;
}

/// One launch through the hook (begin + end), synced, with the plan's actions.
void BM_LaunchHook(benchmark::State &St) {
  FakeBackend B({.Record = false});
  Executor E(B, ExecutorConfig{});
  const uint32_t N = 4000;
  CompiledPlan CP = benchPlan(N);
  std::vector<uint64_t> Ids = CP.PositionIds;
  E.setPlan(0, std::move(CP), St.range(0) ? 400 * kBlock : 0);
  size_t I = 0;
  for (auto _ : St) {
    uint64_t Id = Ids[I++ % N];
    E.launchBegin(0, 1, &Id, 1);
    E.launchEnd(0, 1);
  }
  deepum_stats_t S{};
  E.stats(0, S);
  St.counters["matched"] =
      static_cast<double>(S.launches_matched) / static_cast<double>(S.launches);
}
BENCHMARK(BM_LaunchHook)->Arg(0)->Arg(1)->ArgName("budget");

#ifdef DEEPUM_BENCH_LAUNCH_ARGUMENTS
/// The hook with the launch-time guard: each launch's arguments read as the
/// CUDA backend reads them (an 8-parameter layout: three tensor pointers,
/// five ints) and handed to the guard. The tensors are the arena's 128 live
/// placements (allocated before the loop); a launch names its position's own
/// tensor and the two before it, as a kernel names its inputs: the guard's
/// lookups, and a restore where the plan (or the budget) let one go. The
/// synthetic plan's discards fall on these live placements, which libdeepum
/// defers and checks again at every release (a real plan discards dead
/// ranges only): hence the run without the words beside it.
void BM_LaunchHookWithArguments(benchmark::State &St) {
  FakeBackend B({.Record = false});
  Executor E(B, ExecutorConfig{});
  const uint32_t N = 4000;
  CompiledPlan CP = benchPlan(N);
  std::vector<uint64_t> Ids = CP.PositionIds;
  E.setPlan(0, std::move(CP), St.range(0) ? 400 * kBlock : 0);
  std::vector<uint64_t> Tensors;
  for (int T = 0; T < 128; ++T)
    Tensors.push_back(reinterpret_cast<uint64_t>(E.allocate(4 * kBlock, 0, 1)));
  const std::vector<deepum::cupti::ParamSlot> Layout = {{0, 8},  {8, 8},  {16, 8}, {24, 4},
                                                        {28, 4}, {32, 4}, {36, 4}, {40, 4}};
  uint64_t Ptrs[3] = {};
  int Ints[5] = {1, 2, 3, 4, 5};
  void *Args[8] = {&Ptrs[0], &Ptrs[1], &Ptrs[2], &Ints[0], &Ints[1], &Ints[2], &Ints[3], &Ints[4]};
  std::vector<uint64_t> Words;
  size_t I = 0;
  for (auto _ : St) {
    const size_t K = I++;
    uint64_t Id = Ids[K % N];
    for (size_t A = 0; A < 3; ++A)
      Ptrs[A] = Tensors[(K % N + N - A) % N % Tensors.size()] + 4096;
    E.launchBegin(0, 1, &Id, 1);
    if (St.range(1)) {
      Words.clear();
      deepum::cupti::appendArgumentWords(Layout, Args, Words);
      E.launchArguments(0, 1, Words);
    }
    E.launchEnd(0, 1);
  }
  deepum_stats_t S{};
  E.stats(0, S);
  St.counters["restores/launch"] =
      static_cast<double>(S.guard_restores) / static_cast<double>(S.launches);
}
// args:0 is the same run without the words: the guard's own cost is the difference.
BENCHMARK(BM_LaunchHookWithArguments)
    ->ArgsProduct({{0, 1}, {0, 1}})
    ->ArgNames({"budget", "args"});
#endif

/// The hook without a plan (pure allocator mode): what every launch costs then.
void BM_LaunchHookNoPlan(benchmark::State &St) {
  FakeBackend B({.Record = false});
  Executor E(B, ExecutorConfig{});
  uint64_t Id = 42;
  for (auto _ : St) {
    E.launchBegin(0, 1, &Id, 1);
    E.launchEnd(0, 1);
  }
}
BENCHMARK(BM_LaunchHookNoPlan);

} // namespace

BENCHMARK_MAIN();
