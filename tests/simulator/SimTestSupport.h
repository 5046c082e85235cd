//===- SimTestSupport.h - Shared bits of the simulator tests ---------------===//
#ifndef DEEPUM_TESTS_SIMULATOR_SIMTESTSUPPORT_H
#define DEEPUM_TESTS_SIMULATOR_SIMTESTSUPPORT_H

#include "deepum/format/Signature.h"
#include "deepum/sim/Engine.h"
#include "deepum/sim/Simulator.h"

namespace deepum::test {

/// A device whose numbers make hand computation easy: 1 byte per ns on the
/// link (a 2 MiB block takes 2097.152 us), 10 us per fault batch, no
/// thrashing detection unless a test turns it on. Its batches hold 256 dense
/// 64 KiB pages (4096 4 KiB entries), it charges nothing per VA block or per
/// API call, and it drops clean evictions: the hand computations of the
/// policy tests count batches of pages and transfers only. The mechanisms it
/// leaves out have tests of their own (EngineTest.cpp, CalibrationTest.cpp).
inline deepum::sim::DeviceModel handDevice() {
  deepum::sim::DeviceModel D;
  D.Name = "hand";
  D.MemoryBytes = uint64_t{1} << 30;
  D.LinkBytesPerSecond = 1e9;
  D.FaultBatchLatencyUs = 10;
  D.FaultBatchSize = 256 * deepum::sim::kDenseFaultEntries;
  D.FaultBlockServiceUs = 0;
  D.TransferCallUs = 0;
  D.TransferRangeUs = 0;
  D.EvictionCopiesClean = false;
  D.CopyEnginesPerDirection = 1;
  D.ThrashingLapseUs = 0;
  return D;
}

/// Execution ID of a kernel made by ProfileBuilder (grid 1x1x1, block 256):
/// hand-made plans name the profile's launches with it.
inline uint64_t builderId(const std::string &Name) {
  return deepum::format::executionId(Name, {1, 1, 1, 256, 1, 1, 0});
}

inline constexpr double BlockUs = 2097.152; // one 2 MiB block over the hand link
inline constexpr uint64_t MiB = uint64_t{1} << 20;

} // namespace deepum::test

#endif
