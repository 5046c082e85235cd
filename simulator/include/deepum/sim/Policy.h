//===- deepum/sim/Policy.h - What a policy sees of the simulation loop -----===//
//
// simulate() has one loop: it steps the Engine through the steady-state
// iteration kernel by kernel and tells a SimPolicy what happens, in the
// order the host sees it. Per position p:
//
//   allocationsFreed(p)  frees since the previous launch (blocks whose every
//                        allocation died), then the data loader's host writes;
//   launchObserved(p)    the host sees launch p while kernel p-1 runs: the
//                        policy issues prefetch / evict / discard / advise
//                        commands on the engine (they are issued at that time);
//   kernel p runs        demand paging fills in whatever is missing;
//   kernelEnded(p)       Engine::lastFaults() holds what it faulted on.
//
// um, deepum, swap-layer, swap-opt and ideal live in this library. `plan` is
// the executor itself driving the engine through its simulator backend
// (deepum::executor::sim::executorPlanPolicy, in deepum_executor_sim, which
// links this library): it is handed in through SimOptions::PlanPolicy, so the
// simulator never includes an executor header.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_SIM_POLICY_H
#define DEEPUM_SIM_POLICY_H

#include "deepum/sim/Simulator.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>

namespace deepum::sim {

class Engine;

class SimPolicy {
public:
  virtual ~SimPolicy();

  /// Whether the policy runs under a finite memory at all. `ideal` does not:
  /// the loop runs its kernels back to back and moves nothing.
  virtual bool usesMemory() const { return true; }
  /// SimResult::PolicyPeakBytes: the device memory a policy that does not
  /// adapt to the capacity needs at its peak (0: it adapts).
  virtual uint64_t ownPeakBytes() const { return 0; }
  /// The engine exists (capacity `CapacityBytes`, as asked, before rounding
  /// to pages) and nothing has run yet.
  virtual llvm::Error attach(Engine &, uint64_t /*CapacityBytes*/) {
    return llvm::Error::success();
  }
  /// UM block that the workload's block 0 stands for; its blocks are offsets
  /// from it. 0 but for a plan, whose arena blocks lie where the executor
  /// allocated its arena. Asked after attach().
  virtual uint64_t firstUmBlock() const { return 0; }
  /// Every allocation over `Blocks` (dense ids) has been freed since the
  /// previous launch; seen before launch `Position` is observed.
  virtual void allocationsFreed(Engine &, uint32_t /*Position*/,
                                llvm::ArrayRef<uint32_t> /*Blocks*/) {}
  /// The host observes launch `Position` (kernel Position-1 is running).
  virtual void launchObserved(Engine &, uint32_t /*Position*/) {}
  /// Kernel `Position` has run.
  virtual void kernelEnded(Engine &, uint32_t /*Position*/) {}
  /// After the last kernel: a failure of the policy's own (the executor's
  /// backend errors) fails the simulation.
  virtual llvm::Error finish() { return llvm::Error::success(); }
};

} // namespace deepum::sim

#endif // DEEPUM_SIM_POLICY_H
