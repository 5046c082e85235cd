//===- ConfigTest.cpp - DEEPUM_PLAN, DEEPUM_GPU_MEMORY, DEEPUM_LOG ---------===//
#include "deepum/executor/Executor.h"
#include "deepum/executor/Log.h"

#include "gtest/gtest.h"

#include <cstdlib>

using namespace deepum::executor;

namespace {

TEST(ConfigTest, OnePlanForAllDevices) {
  std::string W;
  ExecutorConfig C = ExecutorConfig::parse("/tmp/model.plan.pb", nullptr, W);
  EXPECT_EQ(C.planFor(0), "/tmp/model.plan.pb");
  EXPECT_EQ(C.planFor(3), "/tmp/model.plan.pb");
  EXPECT_TRUE(W.empty());
}

TEST(ConfigTest, PlansPerDevice) {
  std::string W;
  ExecutorConfig C = ExecutorConfig::parse("0=a.pb,1=b.pb", nullptr, W);
  EXPECT_EQ(C.planFor(0), "a.pb");
  EXPECT_EQ(C.planFor(1), "b.pb");
  EXPECT_EQ(C.planFor(2), "");
}

TEST(ConfigTest, Budgets) {
  std::string W;
  ExecutorConfig C = ExecutorConfig::parse(nullptr, "8GiB", W);
  EXPECT_EQ(C.budgetFor(0, 0), uint64_t{8} << 30);
  C = ExecutorConfig::parse(nullptr, "0=1GiB,1=512MiB", W);
  EXPECT_EQ(C.budgetFor(0, 0), uint64_t{1} << 30);
  EXPECT_EQ(C.budgetFor(1, 0), uint64_t{512} << 20);
  EXPECT_EQ(C.budgetFor(2, 77), 77u); // the plan's own capacity
  EXPECT_TRUE(W.empty());
}

TEST(ConfigTest, BadValuesWarnAndAreSkipped) {
  std::string W;
  ExecutorConfig C = ExecutorConfig::parse("0=a.pb,junk", "lots", W);
  EXPECT_EQ(C.planFor(0), "a.pb");
  EXPECT_TRUE(C.BudgetBytes.empty());
  EXPECT_NE(W.find("junk"), std::string::npos);
  EXPECT_NE(W.find("DEEPUM_GPU_MEMORY"), std::string::npos);
}

// D12: values a double holds but a uint64_t cannot (or that are not numbers)
// were converted with undefined behaviour and accepted as an 8 EiB budget.
TEST(ConfigTest, NonFiniteAndHugeBudgetsAreRefused) {
  for (const char *Text : {"1e99", "nan", "inf", "-inf", "1e300GiB", "16EiB", "18446744073709551616",
                           "17179869184GiB", "-1", "-0.5GiB"}) {
    std::string W;
    ExecutorConfig C = ExecutorConfig::parse(nullptr, Text, W);
    EXPECT_TRUE(C.BudgetBytes.empty()) << Text;
    EXPECT_NE(W.find("DEEPUM_GPU_MEMORY"), std::string::npos) << Text;
  }
  std::string W;
  ExecutorConfig C = ExecutorConfig::parse(nullptr, "16383PiB", W); // unit unknown
  EXPECT_TRUE(C.BudgetBytes.empty());
  C = ExecutorConfig::parse(nullptr, "1.5GiB", W);
  EXPECT_EQ(C.budgetFor(0, 0), uint64_t{3} << 29);
}

TEST(ConfigTest, LogSetting) {
  std::string Path;
  EXPECT_EQ(parseLogSetting("debug", Path), LogLevel::Debug);
  EXPECT_EQ(parseLogSetting("off", Path), LogLevel::Off);
  EXPECT_EQ(parseLogSetting("info:/tmp/deepum.log", Path), LogLevel::Info);
  EXPECT_EQ(Path, "/tmp/deepum.log");
  EXPECT_EQ(parseLogSetting("nonsense", Path), LogLevel::Warn);
  for (const char *Good : {"", "off", "error", "warn", "warning", "info", "debug", "2", "info:/x"}) {
    bool Known = false;
    parseLogSetting(Good, Path, &Known);
    EXPECT_TRUE(Known) << Good;
  }
  for (const char *Bad : {"nonsense", "INFO", "loud:/tmp/x"}) {
    bool Known = true;
    EXPECT_EQ(parseLogSetting(Bad, Path, &Known), LogLevel::Warn) << Bad;
    EXPECT_FALSE(Known) << Bad;
  }
}

TEST(ConfigTest, KernelsWaitForTheirPrefetchesIsOffUnlessAsked) {
  unsetenv("DEEPUM_KERNEL_WAITS_FOR_PREFETCH");
  EXPECT_FALSE(ExecutorConfig::fromEnvironment().KernelsWaitForTheirPrefetches);
  setenv("DEEPUM_KERNEL_WAITS_FOR_PREFETCH", "1", 1);
  EXPECT_TRUE(ExecutorConfig::fromEnvironment().KernelsWaitForTheirPrefetches);
  LogCapture::start();
  setenv("DEEPUM_KERNEL_WAITS_FOR_PREFETCH", "yes", 1);
  const bool Set = ExecutorConfig::fromEnvironment().KernelsWaitForTheirPrefetches;
  std::string Lines = LogCapture::stop();
  EXPECT_FALSE(Set);
  EXPECT_NE(Lines.find("DEEPUM_KERNEL_WAITS_FOR_PREFETCH='yes' is neither 0 nor 1"),
            std::string::npos)
      << Lines;
  unsetenv("DEEPUM_KERNEL_WAITS_FOR_PREFETCH");
}

TEST(ConfigTest, UnknownLogLevelIsWarnedAndWarnUsed) {
  LogCapture::start();
  configureLog("loud");
  std::string Lines = LogCapture::stop();
  EXPECT_EQ(logLevel(), LogLevel::Warn);
  EXPECT_NE(Lines.find("DEEPUM_LOG: unknown level \"loud\""), std::string::npos) << Lines;
  LogCapture::start();
  configureLog("error");
  Lines = LogCapture::stop();
  EXPECT_EQ(logLevel(), LogLevel::Error);
  EXPECT_EQ(Lines, "");
  setLogLevel(LogLevel::Warn);
}

} // namespace
