//===- NvtxTest.cpp - The CUDA backend's batches are NVTX ranges -----------===//
//
// Each prefetch, eviction and discard batch the CUDA backend issues is one
// NVTX range named after it, pushed before the CUDA call and popped after,
// whether the call succeeds or not (here it fails: no GPU is needed).
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/cuda/Nvtx.h"
#include "deepum/executor/cuda/CudaBackend.h"

#include "gtest/gtest.h"

#include <string>
#include <vector>

using namespace deepum::executor;

namespace {

std::vector<std::string> Calls;

TEST(Nvtx, EveryBatchIsOneNamedRange) {
  cuda::NvtxHooks Saved = cuda::nvtxHooks();
  cuda::nvtxHooks() = {[](const char *M) { Calls.push_back(std::string("push ") + M); },
                       [] { Calls.push_back("pop"); }};
  std::unique_ptr<Backend> B = cuda::createCudaBackend();
  const MemRange Two[] = {{0x200000, 2 << 20}, {0x600000, 1 << 20}};
  const MemRange One[] = {{0x200000, 64 << 10}};
  (void)B->prefetchBatch(0, Two, /*Location=*/0, 0);
  (void)B->prefetchBatch(0, One, kHostLocation, 0);
  (void)B->discardBatch(0, Two, 0);
  (void)B->discardBatch(0, {}, 0); // nothing issued: no range
  cuda::nvtxHooks() = Saved;
  EXPECT_EQ(Calls, (std::vector<std::string>{"push prefetch 2 ranges, 3.0 MiB", "pop",
                                             "push evict 1 range, 0.1 MiB", "pop",
                                             "push discard 2 ranges, 3.0 MiB", "pop"}));
}

} // namespace
