//===- deepum/executor/cuda/Nvtx.h - deepum's work on Nsight Systems' timeline ===//
//
// The CUDA backend wraps each batch it issues (prefetch to the GPU, eviction
// to the host, discard) in an NVTX range of the "deepum" domain, named after
// the work: "prefetch 12 ranges, 48.0 MiB". Nsight Systems (nsys profile
// --trace=cuda,nvtx) shows them on the issuing thread's NVTX row, above the
// cudaMemPrefetchBatchAsync / cudaMemDiscardBatchAsync calls they contain
// (docs/executor.md). NVTX3 is header-only and does nothing unless a tool
// is attached; built without its headers, the ranges are no-ops.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_CUDA_NVTX_H
#define DEEPUM_EXECUTOR_CUDA_NVTX_H

#include <cstddef>
#include <cstdint>

namespace deepum::executor::cuda {

/// Where the ranges go: NVTX3 by default. Tests replace them to see the calls.
struct NvtxHooks {
  void (*Push)(const char *Message);
  void (*Pop)();
};
NvtxHooks &nvtxHooks();

/// One range for the lifetime of the object: "WHAT N ranges, X MiB".
class NvtxBatchRange {
public:
  NvtxBatchRange(const char *What, size_t Ranges, uint64_t Bytes);
  ~NvtxBatchRange() { nvtxHooks().Pop(); }
  NvtxBatchRange(const NvtxBatchRange &) = delete;
  NvtxBatchRange &operator=(const NvtxBatchRange &) = delete;
};

} // namespace deepum::executor::cuda

#endif // DEEPUM_EXECUTOR_CUDA_NVTX_H
