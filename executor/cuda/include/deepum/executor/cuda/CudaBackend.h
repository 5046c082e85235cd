//===- deepum/executor/cuda/CudaBackend.h - The executor on a real GPU -----===//
//
// Backend over the CUDA runtime (managed memory, streams, events, batched
// prefetch/discard, advice) and CUPTI launch callbacks (through the shared
// CuptiSubscriber). The header itself includes no CUDA headers.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_CUDA_CUDABACKEND_H
#define DEEPUM_EXECUTOR_CUDA_CUDABACKEND_H

#include "deepum/executor/Backend.h"

#include <memory>

namespace deepum::executor::cuda {

/// A new CUDA backend. Creating one touches no device; calls fail (and are
/// counted by the executor) where there is no GPU.
std::unique_ptr<Backend> createCudaBackend();

} // namespace deepum::executor::cuda

#endif // DEEPUM_EXECUTOR_CUDA_CUDABACKEND_H
