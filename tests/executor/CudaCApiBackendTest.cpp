//===- CudaCApiBackendTest.cpp - The backend libdeepum.so's C ABI runs over --===//
//
// No GPU: the CUDA backend as libdeepum.so gets it (capi/CudaCApiBackend.cpp)
// reports the launches its CUPTI handler could not decode, which the
// executor's report shows as launches.undecoded.
//
//===----------------------------------------------------------------------===//
#include "CApiBackend.h"

#include "deepum/executor/cuda/LaunchDecoding.h"

#include "gtest/gtest.h"

using namespace deepum::executor;

namespace {

void opaqueLaunch(CUpti_ApiCallbackSite Site) {
  CUpti_CallbackData D{};
  D.callbackSite = Site;
  D.symbolName = "opaque_kernel";
  cuda::detail::onLaunchCallback(CUPTI_CB_DOMAIN_RUNTIME_API,
                                 CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, &D);
}

TEST(CudaCApiBackendTest, CountsTheLaunchesItCouldNotDecode) {
  Backend &B = capiBackend();
  EXPECT_STREQ(B.name(), "cuda");
  const uint64_t Before = B.undecodedLaunches();
  EXPECT_EQ(Before, cuda::detail::undecodedLaunches());
  // __cudaLaunchKernel with nothing decodable nested in it.
  opaqueLaunch(CUPTI_API_ENTER);
  opaqueLaunch(CUPTI_API_EXIT);
  EXPECT_EQ(B.undecodedLaunches(), Before + 1);
}

} // namespace
