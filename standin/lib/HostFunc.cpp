//===- HostFunc.cpp - Host functions and stream callbacks ------------------===//
//
// cudaLaunchHostFunc and cudaStreamAddCallback (and their _ptsz forms).
// Execution is eager: when a host function is enqueued, the work issued to
// its stream before it is already done, its results in memory, so the
// function runs then, on the calling thread, before the call returns; what
// the stream is given afterwards comes after it. In the model's time it runs
// when the stream's earlier work ends (and not before the host enqueued it),
// and takes none: the stream's later work and events are ordered after that
// point, not moved. The model's lock is released while it runs.
//
//===----------------------------------------------------------------------===//
#include "Entry.h"

#include <algorithm>

using deepum::standin::addNode;
using deepum::standin::HostCodeScope;
using deepum::standin::Model;
using deepum::standin::refuseInCapture;
using deepum::standin::ret;

namespace {

/// The host function's place in `S`'s order: the end of the stream's work
/// so far, or the host's clock if that is later (it cannot run before it is
/// enqueued).
void runsNow(Model &M, CUstream_st &S) { S.LastNs = std::max(S.LastNs, M.hostNs()); }

cudaError_t launchHostFunc(cudaStream_t Stream, cudaHostFn_t Fn, void *User) {
  {
    ENTER();
    CUstream_st *S = M.stream(Stream);
    if (!S)
      return ret(cudaErrorInvalidResourceHandle);
    if (!Fn)
      return ret(cudaErrorInvalidValue);
    if (S->Capture) {
      // A host node: it runs, the same way, each time the graph is launched.
      if (S->CaptureInvalidated)
        return ret(cudaErrorStreamCaptureInvalidated);
      CUgraphNode_st &N = addNode(*S->Capture, cudaGraphNodeTypeHost);
      N.Run = [Fn, User](cudaStream_t St) { return cudaLaunchHostFunc(St, Fn, User); };
      return cudaSuccess;
    }
    runsNow(M, *S);
  }
  HostCodeScope Host(Model::get());
  Fn(User);
  return cudaSuccess;
}

cudaError_t addCallback(cudaStream_t Stream, cudaStreamCallback_t Fn, void *User, unsigned Flags) {
  {
    ENTER();
    CUstream_st *S = M.stream(Stream);
    if (!S)
      return ret(cudaErrorInvalidResourceHandle);
    if (!Fn || Flags != 0)
      return ret(cudaErrorInvalidValue);
    // "Not supported with cudaStreamBeginCapture and cudaStreamEndCapture,
    // unlike cudaLaunchHostFunc."
    if (S->Capture)
      return ret(refuseInCapture(*S));
    runsNow(M, *S);
  }
  // A device error would have ended the call above (it is sticky), so the
  // work before the callback succeeded.
  HostCodeScope Host(Model::get());
  Fn(Stream, cudaSuccess, User);
  return cudaSuccess;
}

} // namespace

extern "C" {

cudaError_t cudaLaunchHostFunc(cudaStream_t Stream, cudaHostFn_t Fn, void *User) {
  return launchHostFunc(Stream, Fn, User);
}

cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t Stream, cudaHostFn_t Fn, void *User) {
  return launchHostFunc(Stream ? Stream : cudaStreamPerThread, Fn, User);
}

cudaError_t cudaStreamAddCallback(cudaStream_t Stream, cudaStreamCallback_t Fn, void *User,
                                  unsigned int Flags) {
  return addCallback(Stream, Fn, User, Flags);
}

cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t Stream, cudaStreamCallback_t Fn, void *User,
                                       unsigned int Flags) {
  return addCallback(Stream ? Stream : cudaStreamPerThread, Fn, User, Flags);
}

} // extern "C"
