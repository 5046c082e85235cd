//===- BaseTest.cpp - The hash, byte sizes and errors every component shares ===//
#include "TestSupport.h"

#include "deepum/base/ByteSize.h"
#include "deepum/base/DeviceModel.h"
#include "deepum/base/Error.h"
#include "deepum/base/Hash.h"

#include "gtest/gtest.h"

#include <fstream>

using namespace deepum::base;

TEST(Hash, Fnv1aReferenceValues) {
  // Pinned: changing the hash breaks every plan on disk.
  static_assert(fnv1a("", 0) == kFnvOffset, "empty input is the offset basis");
  static_assert(fnv1a("a", 1) == 0xaf63dc4c8601ec8cULL, "FNV-1a reference value");
  static_assert(fnv1a("foobar", 6) == 0x85944171f73967e8ULL, "FNV-1a reference value");
  const uint8_t Bytes[] = {'f', 'o', 'o', 'b', 'a', 'r'};
  EXPECT_EQ(fnv1aBytes(Bytes, sizeof Bytes), fnv1a("foobar", 6));
  // Continuing a hash is hashing the concatenation.
  EXPECT_EQ(fnv1a("bar", 3, fnv1a("foo", 3)), fnv1a("foobar", 6));
}

TEST(Hash, WordsAreLittleEndianAndIdsLowWordFirst) {
  EXPECT_EQ(fnv1aWord(0x64636261u, kFnvOffset), fnv1a("abcd", 4));
  const uint64_t Id = 0x0807060504030201ULL;
  const char Le[] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_EQ(fnv1aId(Id, kFnvOffset), fnv1a(Le, 8));
  EXPECT_NE(fnv1aId(Id, kFnvOffset), fnv1aId(0x0403020108070605ULL, kFnvOffset));
}

TEST(ByteSize, ParsesWhatPeopleWrite) {
  EXPECT_EQ(parseByteSize("16GiB"), uint64_t{16} << 30);
  EXPECT_EQ(parseByteSize("16G"), uint64_t{16} << 30);
  EXPECT_EQ(parseByteSize("16gib"), uint64_t{16} << 30);
  EXPECT_EQ(parseByteSize("1.5 GB"), uint64_t{1500000000});
  EXPECT_EQ(parseByteSize("1.5GiB"), uint64_t{3} << 29);
  EXPECT_EQ(parseByteSize("512MiB"), uint64_t{512} << 20);
  EXPECT_EQ(parseByteSize(" 2 kib "), uint64_t{2048});
  EXPECT_EQ(parseByteSize("4096"), uint64_t{4096});
  EXPECT_EQ(parseByteSize("4096 B"), uint64_t{4096});
  EXPECT_EQ(parseByteSize("2T"), uint64_t{2} << 40);
  EXPECT_EQ(parseByteSize("3TB"), uint64_t{3000000000000});
  // Rounded to the nearest byte.
  EXPECT_EQ(parseByteSize("0.0009765625K"), uint64_t{1});
  EXPECT_EQ(parseByteSize("1.4"), uint64_t{1});
}

TEST(ByteSize, RefusesWhatIsNotASize) {
  // Signs, exponents, NaN, infinity, unknown units, and sizes of 2^63 bytes
  // or more (a double beyond 2^64 converted to uint64 is undefined).
  for (const char *Bad : {"", " ", "GiB", "12 parsecs", "1.2.3G", "-5G", "-0.5GiB", "+1G", "1e99",
                          "nan", "inf", "-inf", "1e300GiB", "16EiB", "16383PiB",
                          "18446744073709551616", "17179869184GiB", "8388608TiB", "1 G B"})
    EXPECT_FALSE(parseByteSize(Bad).has_value()) << Bad;
  EXPECT_EQ(parseByteSize("8388607TiB"), uint64_t{8388607} << 40);
}

TEST(ByteSize, Formats) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1024), "1.00 KiB");
  EXPECT_EQ(formatBytes(uint64_t{3} << 29), "1.50 GiB");
  EXPECT_EQ(formatBytes(uint64_t{512} << 20), "512.00 MiB");
  EXPECT_EQ(formatBytes(UINT64_MAX), "16.00 EiB");
  // What formatBytes prints, parseByteSize reads back.
  EXPECT_EQ(parseByteSize(formatBytes(uint64_t{3} << 29)), uint64_t{3} << 29);
}

TEST(Error, FileErrorNamesTheFileFirst) {
  llvm::Error E = fileError("devices.json", "model 'x': unknown field 'y'");
  EXPECT_EQ(llvm::toString(std::move(E)), "devices.json: model 'x': unknown field 'y'");
  EXPECT_EQ(llvm::toString(makeError("plain")), "plain");
}

TEST(DeviceModel, DeviceFilesAreBoundedRegularFiles) {
  const std::string Dir = deepum::test::scratchDir("DeviceFilesAreBoundedRegularFiles");
  // /dev/zero never ends: refused before anything is read.
  EXPECT_EQ(deepum::test::errorText(loadDeviceModel("h100-pcie", "/dev/zero")),
            "/dev/zero: not a regular file");
  const std::string Big = Dir + "/big.json";
  {
    std::ofstream F(Big);
    F << "{\"models\": []}" << std::string(kMaxDeviceFileBytes, ' ');
  }
  EXPECT_EQ(deepum::test::errorText(loadDeviceModel("h100-pcie", Big)),
            Big + ": larger than 1 MiB, the limit for a device file; refusing to read it");
  const std::string Small = Dir + "/small.json";
  {
    std::ofstream F(Small);
    F << "{\"models\": [{\"name\": \"h100-pcie\", \"kernel_min_us\": 7}]}";
  }
  llvm::Expected<DeviceModel> D = loadDeviceModel("h100-pcie", Small);
  ASSERT_TRUE(static_cast<bool>(D)) << llvm::toString(D.takeError());
  EXPECT_EQ(D->KernelMinUs, 7);
  // The other fields stay the built-in model's.
  llvm::Expected<DeviceModel> Builtin = loadDeviceModel("h100-pcie");
  ASSERT_TRUE(static_cast<bool>(Builtin)) << llvm::toString(Builtin.takeError());
  EXPECT_EQ(D->LinkBytesPerSecond, Builtin->LinkBytesPerSecond);
  EXPECT_NE(Builtin->KernelMinUs, 7);
}

// Every number of a device file is finite and fits its field: JSON reads
// 1e999 as infinity (a free link, silently), and a count past 2^32 does not
// convert. Each refusal is one line naming the file, the model and the field.
TEST(DeviceModel, NumbersAreFiniteAndFitTheirFields) {
  const std::string Dir = deepum::test::scratchDir("NumbersAreFiniteAndFitTheirFields");
  const std::string Path = Dir + "/lab.json";
  auto Refusal = [&](const std::string &Field) {
    {
      std::ofstream F(Path);
      F << "{\"models\": [{\"name\": \"h100-pcie\", " << Field << "}]}";
    }
    return deepum::test::errorText(loadDeviceModel("h100-pcie", Path));
  };
  const std::string Model = Path + ": model 'h100-pcie': ";
  EXPECT_EQ(Refusal("\"link_bytes_per_second\": 1e999"),
            Model + "'link_bytes_per_second' must be a finite number, not inf");
  EXPECT_EQ(Refusal("\"fault_batch_latency_us\": -1e999"),
            Model + "'fault_batch_latency_us' must be a non-negative number");
  EXPECT_EQ(Refusal("\"link_bytes_per_second\": \"NaN\""),
            Model + "'link_bytes_per_second' must be a non-negative number");
  EXPECT_EQ(Refusal("\"fault_batch_size\": 1e30"),
            Model + "'fault_batch_size' must be a whole number below 2^32");
  EXPECT_EQ(Refusal("\"memory_bytes\": 1e20"),
            Model + "'memory_bytes' must be a whole number below 2^64");
  EXPECT_EQ(Refusal("\"copy_engines_per_direction\": 1.5"),
            Model + "'copy_engines_per_direction' must be a whole number below 2^32");
  EXPECT_EQ(Refusal("\"link\": 5"), Model + "'link' must be a string");
  EXPECT_EQ(Refusal("\"populates_hold_copy_engine\": 0"),
            Model + "'populates_hold_copy_engine' must be true or false");
  {
    std::ofstream F(Path);
    F << "{\"models\": [{\"name\": \"h100-pcie\", \"memory_bytes\": 17179869184}]}";
  }
  llvm::Expected<DeviceModel> D = loadDeviceModel("h100-pcie", Path);
  ASSERT_TRUE(static_cast<bool>(D)) << llvm::toString(D.takeError());
  EXPECT_EQ(D->MemoryBytes, uint64_t{16} << 30);
  EXPECT_TRUE(D->PopulatesHoldCopyEngine) << "unmeasured: a populate holds the copy engine";
  {
    std::ofstream F(Path);
    F << "{\"models\": [{\"name\": \"h100-sxm\", \"populates_hold_copy_engine\": false}]}";
  }
  llvm::Expected<DeviceModel> Beside = loadDeviceModel("h100-sxm", Path);
  ASSERT_TRUE(static_cast<bool>(Beside)) << llvm::toString(Beside.takeError());
  EXPECT_FALSE(Beside->PopulatesHoldCopyEngine);
}

// The calibration deepum-calibrate wrote on an H100 SXM (bench/gpu/results/
// 2026-11-27-h100) is the built-in h100-sxm's: laid over it, the file
// changes nothing it measured, and the model's device-to-host rate is the
// one the run reported (the file predates that field).
// Explicit copies, the swapping systems' mechanism, at their own rates: on
// the H100 SXM the measured cudaMemcpyAsync rates (docs/results/gpu.md), 6x
// UVM's way out; on PCIe 3.0 bandwidthTest's. The bounds take the fastest.
TEST(DeviceModel, ExplicitCopyRatesAreTheirOwnAndTheBoundsTakeTheFastest) {
  llvm::Expected<DeviceModel> Sxm = loadDeviceModel("h100-sxm");
  ASSERT_TRUE(static_cast<bool>(Sxm)) << llvm::toString(Sxm.takeError());
  EXPECT_NEAR(Sxm->copyDeviceToHostBytesPerSecond(), 55.1e9, 0.1e9);
  EXPECT_NEAR(Sxm->copyHostToDeviceBytesPerSecond(), 55.0e9, 0.1e9);
  EXPECT_NEAR(Sxm->copyManagedToHostBytesPerSecond(), 52.3e9, 0.1e9);
  EXPECT_EQ(Sxm->fastestDeviceToHostBytesPerSecond(), Sxm->CopyDeviceToHostBytesPerSecond);
  EXPECT_EQ(Sxm->fastestHostToDeviceBytesPerSecond(), Sxm->CopyHostToDeviceBytesPerSecond);
  llvm::Expected<DeviceModel> V100 = loadDeviceModel("v100-pcie-16gb");
  ASSERT_TRUE(static_cast<bool>(V100)) << llvm::toString(V100.takeError());
  EXPECT_EQ(V100->copyHostToDeviceBytesPerSecond(), 12.15e9);
  EXPECT_EQ(V100->copyDeviceToHostBytesPerSecond(), 12.89e9);
  // Unset: Unified Memory's rate of that direction.
  DeviceModel Plain;
  Plain.LinkBytesPerSecond = 10e9;
  Plain.DeviceToHostBytesPerSecond = 2e9;
  EXPECT_EQ(Plain.copyHostToDeviceBytesPerSecond(), 10e9);
  EXPECT_EQ(Plain.copyDeviceToHostBytesPerSecond(), 2e9);
  EXPECT_EQ(Plain.copyManagedToHostBytesPerSecond(), 2e9);
  EXPECT_EQ(Plain.fastestDeviceToHostBytesPerSecond(), 2e9);
  EXPECT_TRUE(Plain.CopiesShareUmEngines);
}

TEST(DeviceModel, TheBuiltInH100SxmIsTheMeasuredOne) {
  const std::string File = deepum::test::dataPath("../../simulator/devices/measured/"
                                                  "h100-sxm-2026-11-27.json");
  llvm::Expected<DeviceModel> M = loadDeviceModel("h100-sxm", File);
  ASSERT_TRUE(static_cast<bool>(M)) << llvm::toString(M.takeError());
  llvm::Expected<DeviceModel> Builtin = loadDeviceModel("h100-sxm");
  ASSERT_TRUE(static_cast<bool>(Builtin)) << llvm::toString(Builtin.takeError());
  EXPECT_NEAR(M->LinkBytesPerSecond, 47.8e9, 0.1e9);
  EXPECT_NEAR(M->TransferCallUs, 4.53, 0.01);
  EXPECT_NEAR(M->TransferRangeUs, 0.714, 0.001);
  EXPECT_NEAR(M->FaultBatchLatencyUs, 151.3, 0.1);
  EXPECT_NEAR(M->FaultBlockServiceUs, 7.34, 0.01);
  for (auto Field : {&DeviceModel::LinkBytesPerSecond, &DeviceModel::TransferCallUs,
                     &DeviceModel::TransferRangeUs, &DeviceModel::FaultBatchLatencyUs,
                     &DeviceModel::FaultBlockServiceUs})
    EXPECT_EQ((*M).*Field, (*Builtin).*Field);
  EXPECT_EQ(Builtin->deviceToHostBytesPerSecond(), 9.161e9);
  // Discarded data, from the second calibration of that day.
  llvm::Expected<DeviceModel> Second = loadDeviceModel(
      "h100-sxm", deepum::test::dataPath("../../simulator/devices/measured/"
                                         "h100-sxm-2026-11-27-second.json"));
  ASSERT_TRUE(static_cast<bool>(Second)) << llvm::toString(Second.takeError());
  EXPECT_NEAR(Second->PopulateBlockUs, 14.27, 0.01);
  EXPECT_NEAR(Second->DiscardedFaultBlockUs, 4081.6, 0.1);
  EXPECT_EQ(Builtin->PopulateBlockUs, Second->PopulateBlockUs);
  EXPECT_EQ(Builtin->DiscardedFaultBlockUs, Second->DiscardedFaultBlockUs);
  // Every other model moves both directions at its link rate.
  llvm::Expected<DeviceModel> Pcie = loadDeviceModel("h100-pcie");
  ASSERT_TRUE(static_cast<bool>(Pcie)) << llvm::toString(Pcie.takeError());
  EXPECT_EQ(Pcie->deviceToHostBytesPerSecond(), Pcie->LinkBytesPerSecond);
  EXPECT_EQ(Pcie->PopulateBlockUs, 0.0) << "unmeasured: a populate costs nothing";
  EXPECT_EQ(Pcie->DiscardedFaultBlockUs, 0.0);
}
