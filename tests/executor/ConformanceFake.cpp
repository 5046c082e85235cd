//===- ConformanceFake.cpp - The conformance suite on the fake backend -----===//
//
// Launches go through FakeBackend::launch (its launch tracking); where a range
// is comes from the calls the fake recorded: the last prefetch covering it.
//
//===----------------------------------------------------------------------===//
#include "BackendConformance.h"

#include "deepum/executor/FakeBackend.h"

using namespace deepum::executor;
using deepum::test::BackendConformance;
using deepum::test::ConformanceParam;
using deepum::test::ConformanceTarget;

namespace {

class FakeTarget final : public ConformanceTarget {
public:
  Backend &backend() override { return B; }
  void launch(Executor &, StreamHandle Stream, uint64_t Id) override { B.launch(0, Stream, Id); }
  Where location(uintptr_t Ptr, uint64_t Bytes) override {
    Where W = Where::Unknown;
    for (const FakeCall &C : B.calls()) {
      if (C.Kind != FakeCallKind::Prefetch && C.Kind != FakeCallKind::Discard)
        continue;
      for (const MemRange &R : C.Ranges)
        if (R.Address <= Ptr && Ptr + Bytes <= R.Address + R.Bytes)
          W = C.Kind == FakeCallKind::Discard ? Where::Unknown
              : C.Location == kHostLocation   ? Where::Host
                                              : Where::Device;
    }
    return W;
  }

private:
  FakeBackend B;
};

INSTANTIATE_TEST_SUITE_P(Fake, BackendConformance,
                         ::testing::Values(ConformanceParam{
                             "fake",
                             [] { return std::unique_ptr<ConformanceTarget>(new FakeTarget); }}),
                         deepum::test::conformanceName);

} // namespace
