//===- UnitsTest.cpp - Byte sizes --------------------------------------------===//
#include "TestSupport.h"

#include "deepum/format/Units.h"

#include "gtest/gtest.h"

using namespace deepum;
using namespace deepum::test;

TEST(Units, ParsesSizes) {
  EXPECT_EQ(takeOk(format::parseByteSize("16GiB")), uint64_t{16} << 30);
  EXPECT_EQ(takeOk(format::parseByteSize("16G")), uint64_t{16} << 30);
  EXPECT_EQ(takeOk(format::parseByteSize("1.5 GB")), uint64_t{1500000000});
  EXPECT_EQ(takeOk(format::parseByteSize("512MiB")), uint64_t{512} << 20);
  EXPECT_EQ(takeOk(format::parseByteSize("4096")), uint64_t{4096});
  EXPECT_EQ(takeOk(format::parseByteSize(" 2 kib ")), uint64_t{2048});
  for (const char *Bad : {"", "GiB", "12 parsecs", "1.2.3G", "-5G"})
    EXPECT_FALSE(errorText(format::parseByteSize(Bad)).empty()) << Bad;
}

TEST(Units, FormatsSizesAndTimes) {
  EXPECT_EQ(format::formatBytes(12), "12 B");
  EXPECT_EQ(format::formatBytes(uint64_t{3} << 29), "1.50 GiB");
  EXPECT_EQ(format::formatMicros(1500), "1.500 ms");
  EXPECT_EQ(format::formatMicros(56.74), "56.7 us");
}

#include "deepum/format/Signature.h"

TEST(Signature, ExecutionIdIsStableAndSensitiveToConfig) {
  // Pinned value: changing the hash breaks every plan on disk.
  format::LaunchConfig C{8, 4, 1, 256, 1, 1, 0};
  EXPECT_EQ(format::executionId("sgemm", C), format::executionId("sgemm", C));
  static_assert(base::fnv1a("a", 1) == 0xaf63dc4c8601ec8cULL, "FNV-1a reference value");
  format::LaunchConfig D = C;
  D.SharedMemoryBytes = 1024;
  EXPECT_NE(format::executionId("sgemm", C), format::executionId("sgemm", D));
  D = C;
  D.GridX = 9;
  EXPECT_NE(format::executionId("sgemm", C), format::executionId("sgemm", D));
  EXPECT_NE(format::executionId("sgemm", C), format::executionId("dgemm", C));
  v1::Kernel K;
  K.set_name("sgemm");
  K.mutable_grid()->set_x(8);
  K.mutable_grid()->set_y(4);
  K.mutable_grid()->set_z(1);
  K.mutable_block()->set_x(256);
  K.mutable_block()->set_y(1);
  K.mutable_block()->set_z(1);
  EXPECT_EQ(format::executionId(K), format::executionId("sgemm", C));
}

TEST(Units, FormatsSizesUpToTheTopOfUint64) {
  EXPECT_EQ(format::formatBytes(uint64_t{1} << 50), "1.00 PiB");
  EXPECT_EQ(format::formatBytes(uint64_t{1} << 63), "8.00 EiB");
  EXPECT_EQ(format::formatBytes(UINT64_MAX), "16.00 EiB");
  EXPECT_EQ(format::formatBytes(1023), "1023 B");
}
