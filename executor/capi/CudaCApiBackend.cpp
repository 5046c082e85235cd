//===- CudaCApiBackend.cpp - libdeepum.so runs over CUDA --------------------===//
//
// The CUDA backend, plus the count of launches its CUPTI handler could not
// decode (LaunchDecoding.h), which the executor reports as "undecoded".
//
//===----------------------------------------------------------------------===//
#include "CApiBackend.h"

#include "deepum/executor/cuda/CudaBackend.h"
#include "deepum/executor/cuda/LaunchDecoding.h"

#include <memory>

namespace deepum::executor {
namespace {
/// Forwards every call to the CUDA backend.
class CudaCApiBackend final : public Backend {
public:
  explicit CudaCApiBackend(std::unique_ptr<Backend> B) : Inner(std::move(B)) {}
  const char *name() const override { return Inner->name(); }
  int deviceCount() override { return Inner->deviceCount(); }
  uint64_t deviceMemoryBytes(int D) override { return Inner->deviceMemoryBytes(D); }
  BackendStatus allocateManaged(int D, uint64_t Bytes, void **Out) override {
    return Inner->allocateManaged(D, Bytes, Out);
  }
  BackendStatus freeManaged(int D, void *P) override { return Inner->freeManaged(D, P); }
  BackendStatus createStream(int D, StreamHandle *Out) override {
    return Inner->createStream(D, Out);
  }
  BackendStatus createEvent(int D, EventHandle *Out) override {
    return Inner->createEvent(D, Out);
  }
  BackendStatus destroyEvent(int D, EventHandle E) override { return Inner->destroyEvent(D, E); }
  BackendStatus recordEvent(int D, EventHandle E, StreamHandle S) override {
    return Inner->recordEvent(D, E, S);
  }
  BackendStatus streamWaitEvent(int D, StreamHandle S, EventHandle E) override {
    return Inner->streamWaitEvent(D, S, E);
  }
  EventState queryEvent(int D, EventHandle E) override { return Inner->queryEvent(D, E); }
  BackendStatus createTimedEvent(int D, EventHandle *Out) override {
    return Inner->createTimedEvent(D, Out);
  }
  bool elapsedNs(int D, EventHandle Start, EventHandle End, uint64_t &Ns) override {
    return Inner->elapsedNs(D, Start, End, Ns);
  }
  BackendStatus prefetchBatch(int D, std::span<const MemRange> R, int Location,
                              StreamHandle S) override {
    return Inner->prefetchBatch(D, R, Location, S);
  }
  BackendStatus discardBatch(int D, std::span<const MemRange> R, StreamHandle S) override {
    return Inner->discardBatch(D, R, S);
  }
  BackendStatus advise(int D, MemRange R, MemAdvice A) override { return Inner->advise(D, R, A); }
  BackendStatus allocatePinned(int D, uint64_t Bytes, void **Out) override {
    return Inner->allocatePinned(D, Bytes, Out);
  }
  BackendStatus freePinned(int D, void *P) override { return Inner->freePinned(D, P); }
  BackendStatus copyAsync(int D, void *Dst, const void *Src, uint64_t Bytes,
                          StreamHandle S) override {
    return Inner->copyAsync(D, Dst, Src, Bytes, S);
  }
  bool reportsLaunchArguments() const override { return Inner->reportsLaunchArguments(); }
  bool startLaunchTracking(LaunchObserver *O, std::string &Why) override {
    return Inner->startLaunchTracking(O, Why);
  }
  void stopLaunchTracking() override { Inner->stopLaunchTracking(); }
  uint64_t undecodedLaunches() override {
    const uint64_t Own = Inner->undecodedLaunches();
    return Own ? Own : cuda::detail::undecodedLaunches();
  }

private:
  std::unique_ptr<Backend> Inner;
};
} // namespace
} // namespace deepum::executor

deepum::executor::Backend &deepum::executor::capiBackend() {
  static Backend *B = new CudaCApiBackend(cuda::createCudaBackend());
  return *B;
}
