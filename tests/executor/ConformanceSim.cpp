//===- ConformanceSim.cpp - The conformance suite on the simulator backend -===//
//
// SimBackend over an Engine modelling a V100 with 1 GiB: launches are kernels
// the engine runs (SimBackend::launch), and where a range is is the engine's
// residency of its pages.
//
//===----------------------------------------------------------------------===//
#include "BackendConformance.h"

#include "deepum/executor/sim/SimBackend.h"
#include "deepum/sim/Engine.h"
#include "deepum/sim/Simulator.h"

#include <algorithm>
#include <optional>

using namespace deepum::executor;
using deepum::test::BackendConformance;
using deepum::test::ConformanceParam;
using deepum::test::ConformanceTarget;

namespace {

constexpr uint64_t kUmBlockBytes = uint64_t{2} << 20;

class SimTarget final : public ConformanceTarget {
public:
  SimTarget() {
    auto Model = deepum::sim::loadDeviceModel("v100-pcie-16gb");
    if (!Model) {
      Why = llvm::toString(Model.takeError());
      return;
    }
    Eng.emplace(*Model, uint64_t{1} << 30);
    Sim.emplace(*Eng);
  }
  std::string unavailable() override { return Why; }
  Backend &backend() override { return *Sim; }
  void launch(Executor &, StreamHandle, uint64_t Id) override {
    if (llvm::Error E = Sim->launch(Id, {}, 10'000))
      ADD_FAILURE() << "the engine refused a launch: " << llvm::toString(std::move(E));
  }
  void synchronize() override {
    Eng->hostWaitUntil(
        std::max({Eng->computeEndNs(), Eng->copyEndNs(true), Eng->copyEndNs(false)}));
  }
  bool timesEvents() override { return true; }
  Where location(uintptr_t Ptr, uint64_t Bytes) override {
    bool All = true, None = true;
    for (uint64_t B = Ptr / kUmBlockBytes; B < (Ptr + Bytes + kUmBlockBytes - 1) / kUmBlockBytes;
         ++B) {
      const uint32_t Mask = Eng->residentMask(Eng->blockId(B));
      All &= Mask == ~uint32_t{0};
      None &= Mask == 0;
    }
    return All ? Where::Device : None ? Where::Host : Where::Unknown;
  }

private:
  std::string Why;
  std::optional<deepum::sim::Engine> Eng;
  std::optional<sim::SimBackend> Sim;
};

INSTANTIATE_TEST_SUITE_P(Sim, BackendConformance,
                         ::testing::Values(ConformanceParam{
                             "sim",
                             [] { return std::unique_ptr<ConformanceTarget>(new SimTarget); }}),
                         deepum::test::conformanceName);

} // namespace
