//===- deepum/deepum.hpp - C++ API of libdeepum ----------------------------===//
//
// Header-only over the C ABI (libdeepum.so exports nothing else), for training
// binaries that link deepum::executor:
//
//   deepum::start("model.plan.pb");          // or deepum::start() for no plan / DEEPUM_PLAN
//   for (...) { train_step(); deepum::step(); }
//   auto S = deepum::stats(0);
//
// Allocations reach deepum through PyTorch's pluggable allocator or directly
// through deepum::allocate/deallocate.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_DEEPUM_HPP
#define DEEPUM_DEEPUM_HPP

#include "deepum/deepum.h"

#include <cstddef>
#include <optional>
#include <string>

namespace deepum {

using Stats = deepum_stats_t;

/// Starts deepum with a plan for every device (nullptr: DEEPUM_PLAN or none).
/// False when deepum was already running (its first configuration stays).
inline bool start(const char *PlanPath = nullptr) { return deepum_init(PlanPath) == 0; }

/// Marks the end of a training iteration.
inline void step() { deepum_step(); }

/// Statistics of one device; empty when deepum has not started or the device is unknown.
inline std::optional<Stats> stats(int Device = 0) {
  Stats S{};
  if (deepum_get_stats(Device, &S, sizeof S) != 0)
    return std::nullopt;
  return S;
}

/// The JSON report of one device (-1: every device), see deepum_stats_json;
/// empty when deepum has not started or the device is unknown.
inline std::string statsJson(int Device = 0) {
  for (std::string Out(4096, '\0');;) {
    const int N = deepum_stats_json(Device, Out.data(), Out.size());
    if (N < 0)
      return {};
    if (static_cast<std::size_t>(N) < Out.size()) {
      Out.resize(static_cast<std::size_t>(N));
      return Out;
    }
    Out.assign(static_cast<std::size_t>(N) + 1024, '\0'); // it grew: once more
  }
}

/// Managed memory from deepum's pool, ordered on `Stream` (a cudaStream_t).
inline void *allocate(std::size_t Bytes, int Device = 0, void *Stream = nullptr) {
  return deepum_malloc(static_cast<ssize_t>(Bytes), Device, Stream);
}
inline void deallocate(void *Ptr, std::size_t Bytes, int Device = 0, void *Stream = nullptr) {
  deepum_free(Ptr, static_cast<ssize_t>(Bytes), Device, Stream);
}

/// Calls step() when it goes out of scope: one per training iteration.
class IterationScope {
public:
  IterationScope() = default;
  ~IterationScope() { step(); }
  IterationScope(const IterationScope &) = delete;
  IterationScope &operator=(const IterationScope &) = delete;
};

} // namespace deepum

#endif // DEEPUM_DEEPUM_HPP
