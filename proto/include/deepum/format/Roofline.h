//===- deepum/format/Roofline.h - Kernel durations from a device's peaks ----===//
//
// One roofline for every C++ component (the simulator recomputing durations
// for another device, the planner's cost model), identical to the CPU
// tracer's (python/deepum_trace/devices.py, cost.py): a kernel takes the
// longest of its FLOPs over the matmul or vector peak (times the matmul
// efficiency), its DRAM bytes over the bandwidth (times the memory
// efficiency), and the smallest kernel time, each rounded up to whole ns.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_ROOFLINE_H
#define DEEPUM_FORMAT_ROOFLINE_H

#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace deepum::format {

/// Longest duration rooflineNs returns, ns: one hour. No training kernel runs
/// that long, so a longer roofline (FLOPs or bytes near the range of a double,
/// or a device model's near-zero peaks) means nothing more; and a million such
/// kernels still add up inside uint64_t ns.
inline constexpr uint64_t kMaxRooflineNs = uint64_t{3600} * 1'000'000'000;

struct RooflineRates {
  double MatmulFlopsPerSecond = 0;
  double VectorFlopsPerSecond = 0;
  double DramBytesPerSecond = 0;
  double MatmulEfficiency = 0;
  double MemoryEfficiency = 0;
  double KernelMinUs = 0;

  bool valid() const {
    auto Positive = [](double V) { return V > 0 && std::isfinite(V); };
    return Positive(MatmulFlopsPerSecond) && Positive(VectorFlopsPerSecond) &&
           Positive(DramBytesPerSecond) && Positive(MatmulEfficiency) &&
           Positive(MemoryEfficiency) && KernelMinUs >= 0 && std::isfinite(KernelMinUs);
  }
};

/// Operators that run at the matmul peak (the tracer's MATMUL_OPS).
inline bool isMatmulOperator(llvm::StringRef Name) {
  return Name == "aten::convolution" || Name == "aten::convolution_backward" ||
         Name == "aten::mm" || Name == "aten::addmm" || Name == "aten::bmm" ||
         Name == "aten::baddbmm";
}

/// Whether the kernel carries roofline inputs (FLOPs or DRAM bytes).
inline bool hasRooflineInputs(const deepum::v1::Kernel &K) {
  return K.flops() > 0 || K.dram_bytes() > 0;
}

/// The kernel's duration on a device with these rates, ns, at most
/// kMaxRooflineNs (which infinite or NaN inputs also give); negative inputs
/// count as 0.
inline uint64_t rooflineNs(const deepum::v1::Kernel &K, const RooflineRates &R) {
  double Peak = isMatmulOperator(K.name()) ? R.MatmulFlopsPerSecond : R.VectorFlopsPerSecond;
  double Compute = std::ceil(K.flops() / (Peak * R.MatmulEfficiency) * 1e9);
  double Memory = std::ceil(K.dram_bytes() / (R.DramBytesPerSecond * R.MemoryEfficiency) * 1e9);
  double Ns = std::max({Compute, Memory, std::ceil(R.KernelMinUs * 1e3)});
  for (double Part : {Compute, Memory})
    if (std::isnan(Part))
      Ns = Part;
  // Checked in double before converting: a double at or past 2^64 (or NaN)
  // has no uint64_t value.
  if (!(Ns < static_cast<double>(kMaxRooflineNs)))
    return kMaxRooflineNs;
  return Ns > 0 ? static_cast<uint64_t>(Ns) : 0;
}

} // namespace deepum::format

#endif // DEEPUM_FORMAT_ROOFLINE_H
