//===- deepum/executor/cuda/LaunchDecoding.h - CUPTI launch callbacks -------===//
//
// The CUDA backend's launch decoding, reachable without a GPU: tests feed it
// hand-built CUpti_CallbackData (as Kineto tests its CUPTI boundary) and check
// the execution IDs and the nesting rules. Production code never calls these;
// the backend registers the same handler with the CUPTI subscriber.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_EXECUTOR_CUDA_LAUNCHDECODING_H
#define DEEPUM_EXECUTOR_CUDA_LAUNCHDECODING_H

#include "deepum/executor/Backend.h"

#include <cupti.h>

#include <cstdint>
#include <span>
#include <vector>

namespace deepum::executor::cuda::detail {

struct LaunchCallback {
  CUpti_CallbackDomain Domain;
  CUpti_CallbackId Id;
};
/// The launch callbacks the backend subscribes to, every one decoded by
/// onLaunchCallback.
std::span<const LaunchCallback> launchCallbacks();

/// The handler the backend registers for launch callbacks (runtime and driver).
void onLaunchCallback(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                      const CUpti_CallbackData *Data);
/// Where decoded launches go (the executor; nullptr: nowhere).
void setLaunchObserver(LaunchObserver *Observer);
/// The execution IDs a graph launch of `GraphExec` reports (normally read from
/// the graph when it is instantiated).
void setGraphKernels(const void *GraphExec, std::vector<uint64_t> Ids);
/// __cudaLaunchKernel calls that no nested callback decoded.
uint64_t undecodedLaunches();
/// Launches into a capturing stream (graph nodes, not run): seen, not reported.
uint64_t capturedLaunches();
/// Graph launches of graphs whose kernels were never read (instantiated
/// before tracking started): not reported, logged once.
uint64_t unseenGraphLaunches();

} // namespace deepum::executor::cuda::detail

#endif // DEEPUM_EXECUTOR_CUDA_LAUNCHDECODING_H
