//===- deepum/format/Signature.h - Execution IDs of kernel launches ---------===//
//
// DeepUM names each launch by an execution ID: a hash of the kernel's name and
// launch configuration. The planner, the executor's launch hook, the profiler
// and the simulator's DeepUM policy must agree on it bit for bit, so it lives
// here, once. FNV-1a 64 (deepum/base/Hash.h): stable across runs, platforms
// and compilers.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FORMAT_SIGNATURE_H
#define DEEPUM_FORMAT_SIGNATURE_H

#include "deepum/base/Hash.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cstdint>

namespace deepum::format {

struct LaunchConfig {
  uint32_t GridX = 1, GridY = 1, GridZ = 1;
  uint32_t BlockX = 1, BlockY = 1, BlockZ = 1;
  uint32_t SharedMemoryBytes = 0;
};

/// Execution ID of a launch: FNV-1a over the name, then the seven
/// configuration words (grid xyz, block xyz, shared memory), little-endian.
inline uint64_t executionId(llvm::StringRef Name, const LaunchConfig &C) {
  uint64_t H = base::fnv1a(Name.data(), Name.size());
  for (uint32_t W : {C.GridX, C.GridY, C.GridZ, C.BlockX, C.BlockY, C.BlockZ,
                     C.SharedMemoryBytes})
    H = base::fnv1aWord(W, H);
  return H;
}

/// The kernel's compute time: its duration less the time it waited on page
/// faults (Kernel.fault_stall_ns). Planner and simulator model the paging.
inline uint64_t computeNs(const deepum::v1::Kernel &K) {
  const uint64_t Ns = K.end_ns() > K.start_ns() ? K.end_ns() - K.start_ns() : 0;
  return Ns - std::min(Ns, K.fault_stall_ns());
}

inline uint64_t executionId(const deepum::v1::Kernel &K) {
  return executionId(K.name(), {K.grid().x(), K.grid().y(), K.grid().z(), K.block().x(),
                                K.block().y(), K.block().z(), K.shared_memory_bytes()});
}

} // namespace deepum::format

#endif // DEEPUM_FORMAT_SIGNATURE_H
