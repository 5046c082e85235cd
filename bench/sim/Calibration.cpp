//===- Calibration.cpp - deepum-sim against published real-GPU figures ------===//
//
// Runs each experiment of docs/results/calibration.md on the engine with a
// built-in device model and compares the simulated figure with the one a
// publication measured on a real GPU. Prints the table (markdown) and exits
// non-zero when an experiment misses its tolerance.
//
//   deepum-sim-calibration [--small]   (--small: 64 MiB transfers, for ctest)
//
//===----------------------------------------------------------------------===//
#include "deepum/sim/Engine.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

using namespace deepum::sim;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t Base = uint64_t{1} << 40;

struct Experiment {
  std::string Name, Source, Gpu, Device, Unit;
  double Measured;
  /// Accepted relative error (0.2 = 20%); or, with RangeCheck, the figure
  /// must lie in [Measured, MeasuredHigh).
  double Tolerance;
  std::function<double(const DeviceModel &, uint64_t Bytes)> Simulate;
  bool RangeCheck = false;
  double MeasuredHigh = 0;
};

/// bandwidthTest's pattern on managed memory: one cudaMemPrefetchAsync of
/// `Bytes` to the GPU, from the call to the end of the copy.
double prefetchGBs(const DeviceModel &D, uint64_t Bytes) {
  Engine E(D, 2 * Bytes);
  const uint64_t Start = E.issueNs();
  E.prefetchToDevice(Base, Bytes);
  return static_cast<double>(Bytes) / static_cast<double>(E.copyEndNs(true) - Start);
}

/// Data written on the GPU, prefetched to the host in one call: time from the
/// call to the end of the write-back on the device-to-host engine.
double writeBackGBs(const DeviceModel &D, uint64_t Bytes) {
  Engine E(D, Bytes);
  std::vector<Engine::AddressUse> Uses;
  for (uint64_t B = 0; B < Bytes / (2 * MiB); ++B)
    Uses.push_back({Base / (2 * MiB) + B, 0, Access::Write});
  E.prefetchToDevice(Base, Bytes);
  if (llvm::Error Err = E.launchByAddress(Uses, 0))
    llvm::report_fatal_error(std::move(Err));
  const uint64_t Start = E.issueNs();
  E.evictToHost(Base, Bytes);
  return static_cast<double>(Bytes) / static_cast<double>(E.copyEndNs(false) - Start);
}

/// Per-VA-block service of a fault batch: a 64 KiB-strided read over 8 blocks
/// (one batch, 8 blocks) against the same over 1 block, transfers removed.
double perBlockServiceUs(const DeviceModel &D, uint64_t) {
  auto BatchNs = [&](unsigned Blocks) {
    Engine E(D, 64 * MiB);
    std::vector<Engine::AddressUse> Uses;
    for (unsigned K = 0; K < Blocks; ++K)
      Uses.push_back({Base / (2 * MiB) + K, 0, Access::Read, 1});
    if (llvm::Error Err = E.launchByAddress(Uses, 0))
      llvm::report_fatal_error(std::move(Err));
    return static_cast<double>(E.computeEndNs()) -
           static_cast<double>(Blocks) * 2 * MiB / D.LinkBytesPerSecond * 1e9;
  };
  return (BatchNs(8) - BatchNs(1)) / 7 / 1e3;
}

} // namespace

int main(int Argc, char **Argv) {
  const bool Small = Argc > 1 && std::strcmp(Argv[1], "--small") == 0;
  const uint64_t Bytes = Small ? 64 * MiB : 1024 * MiB;
  const char *Gearshifft =
      "bandwidthTest (CUDA samples), pinned, 32 MiB, Tesla P100-PCIE-16GB on PCIe 3.0 x16, "
      "github.com/mpicbg-scicomp/gearshifft pull request 82 (2017-03-27)";
  std::vector<Experiment> Experiments = {
      {"prefetched streaming, host to device", Gearshifft, "P100 PCIe (PCIe 3.0 x16)",
       "v100-pcie-16gb", "GB/s", 12.1507, 0.2, prefetchGBs},
      {"write-back of GPU-written data, device to host", Gearshifft,
       "P100 PCIe (PCIe 3.0 x16)", "v100-pcie-16gb", "GB/s", 12.8906, 0.2, writeBackGBs},
      {"device to host over PCIe 5.0",
       "nvbandwidth device_to_host_memcpy_sm, H100, github.com/NVIDIA/nvbandwidth issue 24 "
       "(2024-09-11)",
       "H100 (PCIe 5.0 x16 host link)", "h100-pcie", "GB/s", 52.77, 0.2, writeBackGBs},
      {"fault service per 2 MiB VA block",
       "Shin et al., ARIADNE: Adaptive UVM Management for Efficient GPU Memory "
       "Oversubscription, sec. III-A ('tens of microseconds' per VABlock, citing Kim et al.)",
       "real GPUs (unnamed in the sentence)", "v100-pcie-16gb", "us", 10, 0, perBlockServiceUs,
       true, 100},
  };
  llvm::outs() << "| experiment | source | GPU | device model | measured | simulated | error | "
                  "tolerance | within |\n|---|---|---|---|---:|---:|---:|---:|---|\n";
  unsigned Missed = 0;
  for (const Experiment &X : Experiments) {
    llvm::Expected<DeviceModel> D = loadDeviceModel(X.Device);
    if (!D) {
      llvm::errs() << llvm::toString(D.takeError()) << "\n";
      return 2;
    }
    double Sim = X.Simulate(*D, Bytes);
    bool Ok;
    std::string Measured, Error, Tol;
    if (X.RangeCheck) {
      Ok = Sim >= X.Measured && Sim < X.MeasuredHigh;
      Measured = llvm::formatv("{0}-{1} {2}", X.Measured, X.MeasuredHigh - 1, X.Unit).str();
      Error = Ok ? "in range" : "out of range";
      Tol = "range";
    } else {
      double Err = (Sim - X.Measured) / X.Measured;
      Ok = std::fabs(Err) <= X.Tolerance;
      Measured = llvm::formatv("{0:F2} {1}", X.Measured, X.Unit).str();
      Error = llvm::formatv("{0:+0.0;-0.0}%", Err * 100).str();
      Tol = llvm::formatv("{0:F0}%", X.Tolerance * 100).str();
    }
    Missed += !Ok;
    llvm::outs() << llvm::formatv("| {0} | {1} | {2} | {3} | {4} | {5:F2} {6} | {7} | {8} | {9} |\n",
                                  X.Name, X.Source, X.Gpu, X.Device, Measured, Sim, X.Unit, Error,
                                  Tol, Ok ? "yes" : "**no**");
  }
  return Missed ? 1 : 0;
}
