//===- DeviceTest.cpp - Device models and their override files -------------===//
#include "TestSupport.h"

#include "deepum/format/Perfetto.h"
#include "deepum/sim/Simulator.h"

#include "gtest/gtest.h"

using namespace deepum;
using namespace deepum::sim;
using namespace deepum::test;

TEST(SimDevice, BuiltinModelsAllLoad) {
  std::vector<std::string> Names = deviceModelNames();
  for (const char *N :
       {"v100-pcie-16gb", "v100-pcie-32gb", "a100-40gb", "h100-pcie", "h100-sxm", "h200"})
    EXPECT_NE(std::find(Names.begin(), Names.end(), N), Names.end()) << N;
  for (const std::string &N : Names) {
    DeviceModel D = takeOk(loadDeviceModel(N));
    EXPECT_EQ(D.Name, N);
    EXPECT_GT(D.LinkBytesPerSecond, 0);
    EXPECT_GT(D.FaultBatchLatencyUs, 0);
    EXPECT_EQ(D.FaultBatchSize, 256u);
    EXPECT_GT(D.MemoryBytes, 0u);
  }
  DeviceModel V = takeOk(loadDeviceModel("v100-pcie-16gb"));
  EXPECT_EQ(V.MemoryBytes, uint64_t{16} << 30);
  EXPECT_EQ(V.FaultBatchLatencyUs, 20);
  EXPECT_EQ(V.FaultBlockServiceUs, 25);
  EXPECT_EQ(V.TransferCallUs, 20);
  EXPECT_TRUE(V.EvictionCopiesClean); // stock UVM copies every evicted page
}

TEST(SimDevice, OverrideFileReplacesFieldsAndAddsModels) {
  std::string Dir = scratchDir("SimDevice.Override");
  std::string Path = Dir + "/calib.json";
  ASSERT_FALSE(format::writeFileAtomically(
      Path, R"({"models": [{"name": "v100-pcie-16gb", "fault_batch_latency_us": 31.5},
                           {"name": "lab-gpu", "link_bytes_per_second": 2e10,
                            "fault_batch_latency_us": 20, "memory_bytes": 1073741824}]})"));
  DeviceModel V = takeOk(loadDeviceModel("v100-pcie-16gb", Path));
  EXPECT_EQ(V.FaultBatchLatencyUs, 31.5);
  EXPECT_EQ(V.LinkBytesPerSecond, 12e9); // untouched fields stay built in
  DeviceModel L = takeOk(loadDeviceModel("lab-gpu", Path));
  EXPECT_EQ(L.LinkBytesPerSecond, 2e10);
}

TEST(SimDevice, ErrorsNameTheFileAndTheProblem) {
  std::string E = errorText(loadDeviceModel("tpu"));
  EXPECT_NE(E.find("unknown device model 'tpu'"), std::string::npos) << E;
  std::string Dir = scratchDir("SimDevice.Errors");
  std::string Path = Dir + "/bad.json";
  ASSERT_FALSE(format::writeFileAtomically(
      Path, R"({"models": [{"name": "h100-pcie", "fault_batch_latncy_us": 3}]})"));
  E = errorText(loadDeviceModel("h100-pcie", Path));
  EXPECT_NE(E.find("bad.json"), std::string::npos) << E;
  EXPECT_NE(E.find("unknown field 'fault_batch_latncy_us'"), std::string::npos) << E;
  ASSERT_FALSE(format::writeFileAtomically(Path, "{not json"));
  E = errorText(loadDeviceModel("h100-pcie", Path));
  EXPECT_NE(E.find("invalid JSON"), std::string::npos) << E;
}
