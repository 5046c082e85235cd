//===- CApiTest.cpp - libdeepum.so through its C ABI -----------------------===//
//
// Runs against the shipped shared library. On a machine without a GPU the
// CUDA backend finds no device: every entry point must still return cleanly.
//
//===----------------------------------------------------------------------===//
#include "deepum/deepum.h"
#include "deepum/deepum.hpp"

#include "gtest/gtest.h"

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

TEST(CApiTest, EntryPointsNeverAbort) {
  setenv("DEEPUM_PLAN", "/nonexistent/model.plan.pb", 1);
  setenv("DEEPUM_GPU_MEMORY", "not-a-size", 1);
  setenv("DEEPUM_LOG", "warn", 1);
  EXPECT_EQ(deepum_init(nullptr), 0);
  EXPECT_EQ(deepum_init(nullptr), -1); // already started: first configuration stays
  EXPECT_EQ(deepum_malloc(0, 0, nullptr), nullptr);
  EXPECT_EQ(deepum_malloc(-5, 0, nullptr), nullptr);
  std::vector<std::thread> Threads;
  for (int T = 0; T < 4; ++T)
    Threads.emplace_back([] {
      for (int I = 0; I < 100; ++I) {
        void *P = deepum_malloc(4096, 0, nullptr);
        deepum_free(P, 4096, 0, nullptr);
      }
    });
  for (auto &T : Threads)
    T.join();
  deepum_free(nullptr, 0, 0, nullptr);
  deepum_step();
  deepum_stats_t S{};
  EXPECT_EQ(deepum_get_stats(0, &S, sizeof S), 0);
  EXPECT_EQ(S.plan_active, 0u); // the plan file does not exist
  EXPECT_EQ(deepum_get_stats(-1, &S, sizeof S), -1);
  EXPECT_EQ(deepum_get_stats(0, nullptr, sizeof S), -1);
  // An older caller's smaller struct gets its prefix.
  uint64_t Prefix[2] = {~0ull, ~0ull};
  EXPECT_EQ(deepum_get_stats(0, reinterpret_cast<deepum_stats_t *>(Prefix), sizeof Prefix), 0);
  EXPECT_EQ(Prefix[0], S.allocations);
  EXPECT_TRUE(deepum::stats(0).has_value());
  // The report says why nothing is replayed.
  const std::string Json = deepum::statsJson(0);
  EXPECT_NE(Json.find("\"backend\":\"cuda\""), std::string::npos) << Json;
  EXPECT_NE(Json.find("\"active\":false"), std::string::npos) << Json;
  EXPECT_NE(Json.find("\"why_not\":\"plan refused: /nonexistent/model.plan.pb"),
            std::string::npos)
      << Json;
  EXPECT_EQ(deepum_stats_json(0, nullptr, 0), static_cast<int>(Json.size()));
  EXPECT_TRUE(deepum::statsJson(-7).empty());
}

} // namespace
