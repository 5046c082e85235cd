//===- CApiSequenceTest.cpp - Any sequence of C ABI calls is safe ----------===//
//
// libdeepum's C ABI (deepum.h) built over the fake backend, driven by many
// threads with a random mix of calls a training process, or a buggy one, may
// make: zero, negative and huge sizes, foreign and interior pointers, NULL,
// double frees, several devices and streams, iteration marks and stats,
// with a plan whose arena serves some of the allocations. Nothing may crash,
// and no byte may be handed out while it is still live. Built with ASan and
// UBSan (and TSan) in CI.
//
//===----------------------------------------------------------------------===//
#include "deepum/deepum.h"

#include "ExecutorTestSupport.h"
#include "TestSupport.h"

#include "gtest/gtest.h"

#include <climits>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

using deepum::test::kBlock;
using deepum::test::kMiB;
using deepum::test::PlanBuilder;

namespace {

/// Live allocations across all threads; an overlap is a failure.
class LiveSet {
public:
  /// False when [P, P + Bytes) overlaps something live.
  bool add(void *P, uint64_t Bytes) {
    std::lock_guard<std::mutex> Lock(Mu);
    const auto A = reinterpret_cast<uintptr_t>(P);
    auto Next = Live.lower_bound(A);
    if (Next != Live.end() && Next->first < A + Bytes)
      return false;
    if (Next != Live.begin() && std::prev(Next)->second > A)
      return false;
    Live[A] = A + Bytes;
    return true;
  }
  void remove(void *P) {
    std::lock_guard<std::mutex> Lock(Mu);
    Live.erase(reinterpret_cast<uintptr_t>(P));
  }

private:
  std::mutex Mu;
  std::map<uintptr_t, uintptr_t> Live;
};

void writePlan(const std::string &Path) {
  // Planned sizes 1 MiB and 3 MiB, sequences 0..5, all live at once (no
  // lifetimes recorded): they get disjoint arena ranges. Sizes above 128 TiB
  // are refused (SSIZE_MAX below).
  PlanBuilder PB({11, 12, 13, 14}, 16 * kBlock);
  for (uint32_t S = 0; S < 6; ++S)
    PB.place(S, S % 2 ? 3 * kMiB : kMiB, S * 2 * kBlock, S < 2);
  PB.action(deepum::v1::ACTION_KIND_PREFETCH, 0, 0, 2 * kBlock)
      .action(deepum::v1::ACTION_KIND_DISCARD, 2, 4 * kBlock, kBlock, 1);
  std::string Bytes;
  ASSERT_TRUE(PB.proto().SerializeToString(&Bytes));
  std::ofstream(Path, std::ios::binary | std::ios::trunc) << Bytes;
}

TEST(CApiSequenceTest, AnyCallSequenceIsSafeAndNeverHandsOutLiveMemoryTwice) {
  const std::string Plan = deepum::test::scratchDir("CApiSequence") + "/seq.plan.pb";
  writePlan(Plan);
  setenv("DEEPUM_LOG", "warn", 1);
  ASSERT_EQ(deepum_init(Plan.c_str()), 0);

  LiveSet Live;
  std::atomic<int> Overlaps{0}, Successes{0};
  const ssize_t Sizes[] = {0,       -1,          1,         511,        4096,
                           kMiB,    3 * kMiB,    kBlock,    5 * kMiB + 3, ssize_t{1} << 40,
                           SSIZE_MAX, -SSIZE_MAX - 1};
  const int Devices[] = {0, 0, 0, 1, -1, 7, 1 << 20};
  void *const Streams[] = {nullptr, reinterpret_cast<void *>(0x10),
                           reinterpret_cast<void *>(0x20)};

  auto Worker = [&](unsigned Seed) {
    std::mt19937 Rng(Seed);
    struct Mine {
      void *P;
      ssize_t Size;
      int Device;
      void *Stream;
    };
    std::vector<Mine> Held;
    int Foreign = 0;
    for (int I = 0; I < 3000; ++I) {
      const unsigned Op = Rng() % 10;
      if (Op < 5) { // allocate
        const ssize_t Size = Sizes[Rng() % std::size(Sizes)];
        const int Device = Devices[Rng() % std::size(Devices)];
        void *Stream = Streams[Rng() % std::size(Streams)];
        void *P = deepum_malloc(Size, Device, Stream);
        if (!P)
          continue;
        ++Successes;
        if (Size <= 0 || !Live.add(P, static_cast<uint64_t>(Size))) {
          if (Overlaps++ < 5)
            ADD_FAILURE() << "overlap: " << P << " size " << Size << " device " << Device;
        }
        Held.push_back({P, Size, Device, Stream});
      } else if (Op < 8 && !Held.empty()) { // free one of ours (maybe on another stream)
        const size_t K = Rng() % Held.size();
        Mine M = Held[K];
        Held[K] = Held.back();
        Held.pop_back();
        Live.remove(M.P); // before the free: the memory may be reused at once
        deepum_free(M.P, M.Size, M.Device,
                    Rng() % 4 ? M.Stream : Streams[Rng() % std::size(Streams)]);
      } else if (Op == 8) { // pointers deepum never handed out
        switch (Rng() % 4) {
        case 0:
          deepum_free(nullptr, 0, 0, nullptr);
          break;
        case 1:
          deepum_free(&Foreign, sizeof Foreign, 0, nullptr);
          break;
        case 2:
          deepum_free(reinterpret_cast<void *>(uintptr_t{1} << 47), 64, 0, nullptr);
          break;
        default:
          if (!Held.empty()) { // inside a live allocation: ignored, it stays live
            const Mine &M = Held[Rng() % Held.size()];
            if (M.Size > 8)
              deepum_free(static_cast<char *>(M.P) + 8, M.Size - 8, M.Device, M.Stream);
          }
        }
      } else { // marks and stats
        if (Rng() % 2)
          deepum_step();
        deepum_stats_t S{};
        (void)deepum_get_stats(Devices[Rng() % std::size(Devices)], &S,
                               Rng() % 2 ? sizeof S : 8);
        (void)deepum_get_stats(0, nullptr, 0);
        char Buf[64];
        const int Dev = Rng() % 3 ? Devices[Rng() % std::size(Devices)] : -1;
        (void)deepum_stats_json(Dev, Rng() % 2 ? Buf : nullptr, Rng() % 2 ? sizeof Buf : 0);
      }
    }
    for (const Mine &M : Held) {
      Live.remove(M.P);
      deepum_free(M.P, M.Size, M.Device, M.Stream);
    }
  };
  std::vector<std::thread> Threads;
  for (unsigned T = 0; T < 6; ++T)
    Threads.emplace_back(Worker, 1234 + T);
  for (auto &T : Threads)
    T.join();
  EXPECT_EQ(Overlaps.load(), 0);
  EXPECT_GT(Successes.load(), 1000);
  EXPECT_EQ(deepum_malloc(SSIZE_MAX, 0, nullptr), nullptr); // beyond any machine
  EXPECT_EQ(deepum_malloc(ssize_t{1} << 48, 0, nullptr), nullptr);

  // Double frees, one thread: the second free of a block is ignored, and the
  // memory is handed out once afterwards.
  for (ssize_t Size : {ssize_t{4096}, ssize_t{kMiB}, ssize_t{3 * kMiB}}) {
    void *P = deepum_malloc(Size, 0, nullptr);
    ASSERT_NE(P, nullptr);
    deepum_free(P, Size, 0, nullptr);
    deepum_free(P, Size, 0, nullptr);
    void *A = deepum_malloc(Size, 0, nullptr);
    void *B = deepum_malloc(Size, 0, nullptr);
    ASSERT_NE(A, nullptr);
    ASSERT_NE(B, nullptr);
    EXPECT_TRUE(Live.add(A, static_cast<uint64_t>(Size)));
    EXPECT_TRUE(Live.add(B, static_cast<uint64_t>(Size))) << "handed out twice after a double free";
    Live.remove(A);
    Live.remove(B);
    deepum_free(A, Size, 0, nullptr);
    deepum_free(B, Size, 0, nullptr);
  }
  deepum_stats_t S{};
  ASSERT_EQ(deepum_get_stats(0, &S, sizeof S), 0);
  EXPECT_EQ(S.plan_active, 1u) << "the plan should have loaded";
  EXPECT_GT(S.arena_placements, 0u);

  // The JSON report, snprintf-style: the length first, then the text.
  const int N = deepum_stats_json(0, nullptr, 0);
  ASSERT_GT(N, 0);
  std::string Json(static_cast<size_t>(N) + 1, 'x');
  ASSERT_EQ(deepum_stats_json(0, Json.data(), Json.size()), N);
  EXPECT_EQ(Json[static_cast<size_t>(N)], '\0');
  Json.resize(static_cast<size_t>(N));
  EXPECT_EQ(Json.rfind("{\"schema\":1,\"device\":0,", 0), 0u) << Json;
  EXPECT_NE(Json.find("\"active\":true"), std::string::npos) << Json;
  EXPECT_NE(Json.find("\"placement_misses\":"), std::string::npos) << Json;
  EXPECT_EQ(Json.back(), '}');
  char Small[8] = "abcdefg";
  EXPECT_EQ(deepum_stats_json(0, Small, 4), N); // truncated, terminated
  EXPECT_STREQ(Small, "{\"s");
  EXPECT_EQ(deepum_stats_json(0, Small, 0), N); // nothing written
  EXPECT_STREQ(Small, "{\"s");
  EXPECT_GT(deepum_stats_json(-1, nullptr, 0), N); // every device: two in use here
  EXPECT_EQ(deepum_stats_json(-2, Small, sizeof Small), -1);
  EXPECT_EQ(deepum_stats_json(64, Small, sizeof Small), -1);
}

} // namespace
