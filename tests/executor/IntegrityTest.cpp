//===- IntegrityTest.cpp - Prefetch/evict/discard never change live data ---===//
//
// A backend that models contents: memory is real, a discard overwrites its
// range with garbage at once (the worst a real discard may do, at the earliest
// moment the executor lets it happen), prefetch and eviction keep contents.
// A small training program (weights, activations, forward and update kernels)
// runs many iterations through the executor with a plan that prefetches,
// evicts, discards dead activations, enforces a budget smaller than the data,
// and also (a planner bug) asks to discard live weights. Every kernel checks
// the bytes it reads; at the end every live tensor must equal a run without
// deepum.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/Executor.h"
#include "ExecutorTestSupport.h"
#include "deepum/executor/FakeBackend.h"

#include "gtest/gtest.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

using namespace deepum::executor;

namespace {
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBlock = 2 * kMiB;
constexpr StreamHandle kStream = 0x77;
constexpr unsigned char kGarbage = 0xdd;

class ContentBackend final : public deepum::test::ForwardingBackend {
public:
  ContentBackend() : ForwardingBackend({.RealMemory = true}) {}
  const char *name() const override { return "content"; }
  int deviceCount() override { return 1; }
  BackendStatus allocateManaged(int D, uint64_t B, void **O) override {
    BackendStatus S = Inner.allocateManaged(D, B, O);
    if (S.ok())
      std::memset(*O, kGarbage, B);
    return S;
  }
  BackendStatus discardBatch(int D, std::span<const MemRange> R, StreamHandle S) override {
    for (const MemRange &X : R)
      std::memset(reinterpret_cast<void *>(X.Address), kGarbage, X.Bytes);
    DiscardedBytes += [&] {
      uint64_t B = 0;
      for (const MemRange &X : R)
        B += X.Bytes;
      return B;
    }();
    return Inner.discardBatch(D, R, S);
  }

  uint64_t DiscardedBytes = 0;
};

/// The program: 4 weights (persistent), 4 activations per iteration, 8 kernels.
///   k0..k3: A[i] = f(W[i], A[i-1])      (reads W[i] and A[i-1], writes A[i])
///   k4:     W[*] = update(A[3])          (reads A[3] and W[*], writes W[*])
///   k5..k7: read W[1..3]                 (an optimizer-ish pass)
/// A[i] is freed right after the launch of its last reader returns.
struct Program {
  static constexpr int kWeights = 4;
  static constexpr uint64_t kWeightBytes = kMiB + 4096; // not block-aligned on purpose
  static constexpr uint64_t kActivationBytes = 3 * kMiB / 2;

  static unsigned char weightByte(int Version, int I) {
    return static_cast<unsigned char>((Version * 7 + I * 13 + 1) % 200);
  }
  static unsigned char activationByte(int It, int I) {
    return static_cast<unsigned char>((It * 11 + I * 5 + 3) % 200 + 1);
  }

  /// Runs `Iterations`; `Alloc`/`Free`/`Launch` are the environment. Returns
  /// the number of bad reads; `Final` receives the weights' bytes at the end.
  template <typename AllocFn, typename FreeFn, typename BeginFn, typename EndFn>
  static int run(int Iterations, AllocFn Alloc, FreeFn Free, BeginFn Begin, EndFn End,
                 std::function<void()> Step, std::vector<std::vector<unsigned char>> &Final) {
    int Bad = 0;
    auto Check = [&](void *P, uint64_t Bytes, unsigned char Want) {
      const auto *C = static_cast<const unsigned char *>(P);
      for (uint64_t I = 0; I < Bytes; I += 509)
        if (C[I] != Want) {
          ++Bad;
          return;
        }
      if (C[Bytes - 1] != Want)
        ++Bad;
    };
    std::vector<void *> W(kWeights);
    for (int I = 0; I < kWeights; ++I) {
      W[I] = Alloc(kWeightBytes);
      std::memset(W[I], weightByte(0, I), kWeightBytes);
    }
    for (int It = 0; It < Iterations; ++It) {
      Step();
      std::vector<void *> A(4, nullptr);
      for (int K = 0; K < 4; ++K) {
        A[K] = Alloc(kActivationBytes);
        Begin(K);
        Check(W[K], kWeightBytes, weightByte(It, K));
        if (K > 0)
          Check(A[K - 1], kActivationBytes, activationByte(It, K - 1));
        std::memset(A[K], activationByte(It, K), kActivationBytes);
        End(K);
        if (K > 0) {
          Free(A[K - 1], kActivationBytes);
          A[K - 1] = nullptr;
        }
      }
      Begin(4);
      Check(A[3], kActivationBytes, activationByte(It, 3));
      for (int I = 0; I < kWeights; ++I) {
        Check(W[I], kWeightBytes, weightByte(It, I));
        std::memset(W[I], weightByte(It + 1, I), kWeightBytes);
      }
      End(4);
      Free(A[3], kActivationBytes);
      for (int K = 5; K < 8; ++K) {
        Begin(K);
        Check(W[K - 4], kWeightBytes, weightByte(It + 1, K - 4));
        End(K);
      }
    }
    Final.clear();
    for (int I = 0; I < kWeights; ++I) {
      auto *C = static_cast<unsigned char *>(W[I]);
      Final.emplace_back(C, C + kWeightBytes);
      Free(W[I], kWeightBytes);
    }
    return Bad;
  }
};

/// The plan a planner would write for Program, plus one deliberate bug.
CompiledPlan programPlan(bool WithBuggyDiscard) {
  RawPlan R;
  R.FormatVersion = 1;
  R.UmBlockBytes = kBlock;
  R.ArenaBytes = 16 * kBlock;
  for (uint64_t P = 0; P < 8; ++P)
    R.PositionIds.push_back(500 + P);
  auto W = [](int I) { return uint64_t(I) * kBlock; };         // weights: blocks 0..3
  auto A = [](int I) { return uint64_t(8 + 2 * I) * kBlock; }; // activations: blocks 8,10,12,14
  for (int I = 0; I < 4; ++I)
    R.Placements.push_back({static_cast<uint32_t>(I), Program::kWeightBytes, W(I), true});
  for (int I = 0; I < 4; ++I)
    R.Placements.push_back({static_cast<uint32_t>(4 + I), Program::kActivationBytes, A(I), false});
  for (uint32_t K = 0; K < 4; ++K) {
    R.Chains.push_back({500 + K, K, {K, 8 + 2 * K}});
    R.Actions.push_back({1, K, K, {{W(static_cast<int>(K)), kBlock}}, 0}); // prefetch W[K]
    if (K > 0)
      R.Actions.push_back({3, K, K, {{A(static_cast<int>(K) - 1), kBlock}}, 0}); // A[K-1] dead
    if (K > 0)
      R.Actions.push_back({2, K, K, {{W(static_cast<int>(K)), kBlock}}, 0}); // evict W[K]
  }
  R.Chains.push_back({504, 4, {0, 1, 2, 3, 14}});
  R.Actions.push_back({1, 4, 4, {{0, 4 * kBlock}}, 0});
  R.Actions.push_back({3, 4, 4, {{A(3), kBlock}}, 0});
  for (uint32_t K = 5; K < 8; ++K)
    R.Chains.push_back({500 + K, K, {K - 4}});
  if (WithBuggyDiscard)
    R.Actions.push_back({3, 6, 6, {{W(0), kBlock}}, 0}); // W[0] is live: must not be discarded
  deepum::test::addIdTable(R);
  CompiledPlan CP;
  std::string Error;
  EXPECT_TRUE(compileRawPlan(R, "integrity", CP, Error)) << Error;
  return CP;
}

std::vector<std::vector<unsigned char>> referenceRun(int Iterations) {
  std::vector<std::vector<unsigned char>> Final;
  int Bad = Program::run(
      Iterations, [](uint64_t B) { return std::malloc(B); },
      [](void *P, uint64_t) { std::free(P); }, [](int) {}, [](int) {}, [] {}, Final);
  EXPECT_EQ(Bad, 0);
  return Final;
}

TEST(IntegrityTest, ManyIterationsLeaveEveryLiveTensorIntact) {
  constexpr int kIterations = 40;
  auto Reference = referenceRun(kIterations);
  ContentBackend B;
  Executor E(B, ExecutorConfig{});
  // Budget: 4 blocks for 16 MiB of data: the executor must evict to keep under it.
  ASSERT_TRUE(E.setPlan(0, programPlan(/*WithBuggyDiscard=*/true), 4 * kBlock));
  std::vector<std::vector<unsigned char>> Final;
  int Bad = Program::run(
      kIterations, [&](uint64_t Bytes) { return E.allocate(Bytes, 0, kStream); },
      [&](void *P, uint64_t) { E.deallocate(P, 0, kStream); },
      [&](int K) {
        uint64_t Id = 500 + static_cast<uint64_t>(K);
        E.launchBegin(0, kStream, &Id, 1);
      },
      [&](int) { E.launchEnd(0, kStream); }, [&] { E.markIteration(); }, Final);
  EXPECT_EQ(Bad, 0) << "a kernel read data that prefetch/evict/discard changed";
  EXPECT_EQ(Final, Reference);
  deepum_stats_t S{};
  ASSERT_TRUE(E.stats(0, S));
  // The run exercised what it claims to.
  EXPECT_EQ(S.arena_placements, 4u + 4u * kIterations);
  EXPECT_GT(S.discard_batches, 0u);
  EXPECT_GT(B.DiscardedBytes, 0u);
  EXPECT_GT(S.prefetch_batches, 0u);
  EXPECT_GT(S.evict_batches, 0u);
  EXPECT_GT(S.budget_evictions, 0u);
  EXPECT_GT(S.discards_kept_live, 0u); // the buggy discard of W[0] was refused
  EXPECT_EQ(S.launches_matched, 8u * kIterations);
}

TEST(IntegrityTest, TheCheckCatchesADiscardOfLiveData) {
  // Negative control: the same program, with the backend discarding a live
  // weight behind the executor's back, must fail the checks.
  ContentBackend B;
  Executor E(B, ExecutorConfig{});
  ASSERT_TRUE(E.setPlan(0, programPlan(false), 0));
  std::vector<std::vector<unsigned char>> Final;
  void *FirstWeight = nullptr;
  int Bad = Program::run(
      3,
      [&](uint64_t Bytes) {
        void *P = E.allocate(Bytes, 0, kStream);
        if (!FirstWeight)
          FirstWeight = P;
        return P;
      },
      [&](void *P, uint64_t) { E.deallocate(P, 0, kStream); },
      [&](int K) {
        if (K == 6) {
          MemRange R{reinterpret_cast<uintptr_t>(FirstWeight), kMiB};
          (void)B.discardBatch(0, {&R, 1}, kStream);
        }
      },
      [&](int) {}, [&] { E.markIteration(); }, Final);
  EXPECT_GT(Bad, 0);
  EXPECT_NE(Final, referenceRun(3));
}

} // namespace
