//===- BackendConformance.h - One contract, every backend ------------------===//
//
// The behaviour the executor relies on from a Backend, and the executor's own
// behaviour over it, written once (BackendConformance.cpp) and instantiated
// for each backend in a test binary of its own: the fake
// (ConformanceFake.cpp), the simulator (ConformanceSim.cpp) and CUDA
// (ConformanceCuda.cpp: on a GPU with the `gpu` label, and on the CUDA
// stand-in without it). A backend joins by providing a ConformanceTarget.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_TESTS_EXECUTOR_BACKENDCONFORMANCE_H
#define DEEPUM_TESTS_EXECUTOR_BACKENDCONFORMANCE_H

#include "deepum/executor/Backend.h"
#include "deepum/executor/Executor.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>

namespace deepum::test {

/// One backend under test, and what the suite needs of it beyond Backend.
class ConformanceTarget {
public:
  virtual ~ConformanceTarget() = default;
  /// Empty when the backend can run here; else why not (the suite skips).
  virtual std::string unavailable() { return {}; }
  virtual executor::Backend &backend() = 0;
  /// One kernel launch on `Stream` of device 0, delivered the way the backend
  /// delivers launches. The default calls the observer the way the backend's
  /// launch tracking does (begin, then end).
  virtual void launch(executor::Executor &E, executor::StreamHandle Stream, uint64_t Id) {
    E.launchBegin(0, Stream, &Id, 1);
    E.launchEnd(0, Stream);
  }
  /// Whether the executor observes launches through the backend's own
  /// tracking (launch() then goes through the backend), or launch() plays
  /// them into the executor directly (the executor runs with TrackLaunches
  /// off, so a CUPTI subscriber held elsewhere does not matter).
  virtual bool tracksLaunches() { return true; }
  /// Waits for everything issued on device 0.
  virtual void synchronize() {}
  /// Whether the backend times events (Backend::elapsedNs); one that cannot
  /// must say so (false), never answer 0.
  virtual bool timesEvents() { return false; }

  enum class Where { Device, Host, Unknown };
  /// Where the backend last moved [Ptr, Ptr + Bytes): Unknown where it cannot
  /// say (the residency tests then skip for it).
  virtual Where location(uintptr_t Ptr, uint64_t Bytes) {
    (void)Ptr;
    (void)Bytes;
    return Where::Unknown;
  }
};

struct ConformanceParam {
  const char *Name;
  std::function<std::unique_ptr<ConformanceTarget>()> Make;
};

/// gtest prints a parameter in test names and messages: the backend's name.
inline void PrintTo(const ConformanceParam &P, std::ostream *OS) { *OS << P.Name; }

inline std::string conformanceName(const ::testing::TestParamInfo<ConformanceParam> &I) {
  return I.param.Name;
}

class BackendConformance : public ::testing::TestWithParam<ConformanceParam> {
protected:
  void SetUp() override {
    Target = GetParam().Make();
    if (std::string Why = Target->unavailable(); !Why.empty())
      GTEST_SKIP() << GetParam().Name << " backend unavailable: " << Why;
  }
  executor::Backend &backend() { return Target->backend(); }
  std::unique_ptr<ConformanceTarget> Target;
};

} // namespace deepum::test

#endif // DEEPUM_TESTS_EXECUTOR_BACKENDCONFORMANCE_H
