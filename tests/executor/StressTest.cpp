//===- StressTest.cpp - Many threads, many streams, under ThreadSanitizer ---===//
//
// Built with -fsanitize=thread (target executor_tsan_test). Threads allocate
// and free through the executor on several streams while other threads play
// kernel launches and iteration marks into it and complete events. Every
// block is real host memory: each owner stamps its block and checks the stamp
// before freeing, and a registry of live ranges fails the test the moment two
// live blocks overlap. TSan reports any unsynchronised access, including two
// threads writing one block that was handed out twice.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/Executor.h"
#include "deepum/executor/FakeBackend.h"

#include "ExecutorTestSupport.h"

#include "gtest/gtest.h"

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

using namespace deepum::executor;

namespace {
constexpr uint64_t kMiB = uint64_t{1} << 20;
constexpr uint64_t kBlock = 2 * kMiB;

class LiveRegistry {
public:
  void add(uintptr_t A, uint64_t Bytes) {
    std::lock_guard<std::mutex> L(Mu);
    auto It = Live.upper_bound(A);
    if (It != Live.end() && A + Bytes > It->first)
      Overlaps++;
    if (It != Live.begin() && std::prev(It)->first + std::prev(It)->second > A)
      Overlaps++;
    Live[A] = Bytes;
  }
  void remove(uintptr_t A) {
    std::lock_guard<std::mutex> L(Mu);
    Live.erase(A);
  }
  std::atomic<int> Overlaps{0};

private:
  std::mutex Mu;
  std::map<uintptr_t, uint64_t> Live;
};

CompiledPlan stressPlan() {
  RawPlan R;
  R.FormatVersion = 1;
  R.UmBlockBytes = kBlock;
  R.ArenaBytes = 64 * kBlock;
  for (uint32_t P = 0; P < 64; ++P) {
    R.PositionIds.push_back(100 + P);
    R.Chains.push_back({100 + P, P, {P, (P + 1) % 64}});
    R.Actions.push_back({1, P, P, {{((P + 2) % 64) * kBlock, kBlock}}, 0});
    R.Actions.push_back({3, P, P, {{((P + 40) % 64) * kBlock, kBlock}}, 0});
  }
  // Planned allocations (real sizes the threads request) over the arena.
  for (uint32_t S = 0; S < 48; ++S)
    R.Placements.push_back({S, 64 << 10, S * kBlock, false});
  deepum::test::addIdTable(R);
  CompiledPlan CP;
  std::string Error;
  EXPECT_TRUE(compileRawPlan(R, "stress", CP, Error)) << Error;
  return CP;
}

TEST(StressTest, NoLiveBlockIsEverHandedOutTwice) {
  FakeBackend B({.Devices = 2, .RealMemory = true, .Record = false, .EventsCompleteAtOnce = false});
  Executor E(B, ExecutorConfig{});
  ASSERT_TRUE(E.setPlan(0, stressPlan(), 24 * kBlock));
  LiveRegistry Registry;
  std::atomic<bool> Stop{false};
  std::atomic<int> StampErrors{0};
  constexpr int kAllocThreads = 8;
  constexpr int kOps = 4000;

  auto Allocator = [&](int T) {
    uint64_t Seed = 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(T + 1);
    auto Rand = [&] { return Seed = Seed * 6364136223846793005ULL + 1442695040888963407ULL; };
    struct Held {
      void *Ptr;
      uint64_t Bytes;
      int Device;
      StreamHandle Stream;
    };
    std::vector<Held> Mine;
    for (int I = 0; I < kOps; ++I) {
      if (Mine.size() < 24 && (Mine.empty() || Rand() % 2)) {
        // Often the planned size (arena path), otherwise a spread (pool path).
        uint64_t Bytes = Rand() % 3 == 0 ? (64 << 10) : 1 + (Rand() >> 40) % (3 * kMiB);
        int Device = static_cast<int>((Rand() >> 13) % 2);
        StreamHandle Stream = 0x100 + (Rand() >> 17) % 6; // six streams shared by all threads
        void *P = E.allocate(Bytes, Device, Stream);
        if (!P)
          continue;
        Registry.add(reinterpret_cast<uintptr_t>(P), Bytes);
        // Stamp first and last byte: the owner's id.
        auto *C = static_cast<unsigned char *>(P);
        C[0] = static_cast<unsigned char>(T);
        C[Bytes - 1] = static_cast<unsigned char>(T);
        Mine.push_back({P, Bytes, Device, Stream});
      } else {
        size_t K = (Rand() >> 21) % Mine.size();
        Held H = Mine[K];
        auto *C = static_cast<unsigned char *>(H.Ptr);
        if (C[0] != T || C[H.Bytes - 1] != T)
          StampErrors++;
        Registry.remove(reinterpret_cast<uintptr_t>(H.Ptr));
        E.deallocate(H.Ptr, H.Device, H.Stream);
        Mine[K] = Mine.back();
        Mine.pop_back();
      }
    }
    for (Held &H : Mine) {
      Registry.remove(reinterpret_cast<uintptr_t>(H.Ptr));
      E.deallocate(H.Ptr, H.Device, H.Stream);
    }
  };
  auto Launcher = [&](int T) {
    uint64_t I = 0;
    while (!Stop.load()) {
      uint64_t Id = 100 + (I++ % 64);
      E.launchBegin(T % 2 == 0 ? 0 : 1, 0x100 + T, &Id, 1);
      E.launchEnd(T % 2 == 0 ? 0 : 1, 0x100 + T);
      if (I % 640 == 0)
        E.markIteration();
    }
  };
  auto Completer = [&] {
    while (!Stop.load()) {
      B.completeEvents();
      deepum_stats_t S{};
      E.stats(0, S);
      std::this_thread::yield();
    }
  };

  std::vector<std::thread> Threads;
  for (int T = 0; T < kAllocThreads; ++T)
    Threads.emplace_back(Allocator, T);
  std::vector<std::thread> Others;
  for (int T = 0; T < 3; ++T)
    Others.emplace_back(Launcher, T);
  Others.emplace_back(Completer);
  for (auto &T : Threads)
    T.join();
  Stop = true;
  for (auto &T : Others)
    T.join();

  EXPECT_EQ(Registry.Overlaps.load(), 0);
  EXPECT_EQ(StampErrors.load(), 0);
  deepum_stats_t S{};
  ASSERT_TRUE(E.stats(0, S));
  EXPECT_GT(S.arena_placements, 0u);
  EXPECT_GT(S.launches_matched, 0u);
  EXPECT_EQ(S.bytes_in_use, 0u);
}

} // namespace
