//===- Workload.h - The steady-state iteration, flattened for simulation ---===//
//
// Private to deepum_sim. A Workload is one iteration in dense form: kernel
// durations, their block uses (dense block ids, page masks, modes), launch
// IDs for DeepUM's tables, tensor-level objects for the swap policies, and
// the blocks whose allocations die at each position (DeepUM's invalidation).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_SIM_LIB_WORKLOAD_H
#define DEEPUM_SIM_LIB_WORKLOAD_H

#include "deepum/format/Format.h"
#include "deepum/sim/Engine.h"
#include "deepum/sim/Policy.h"
#include "deepum/v1/plan.pb.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace deepum::sim::detail {

/// A tensor (allocation) or, without tensor data, a UM block: what the swap
/// policies move as one unit.
struct SwapObject {
  uint64_t Bytes = 0;
  bool Activation = false;
  /// Pages overlapping the object (prefetch) and pages wholly inside it
  /// (evict / discard, so neighbours are never disturbed).
  std::vector<BlockUse> Overlap, Whole;
  /// Positions using it, ascending, with the merged mode at each.
  std::vector<std::pair<uint32_t, Access>> Uses;
  /// Positions where it is allocated / freed in the iteration; -1 = lives
  /// across the iteration boundary on that side.
  int64_t AllocPos = -1, FreePos = -1;
};

struct Workload {
  uint32_t Kernels = 0;
  /// Index in Profile.kernels of the iteration's first kernel.
  uint32_t FirstKernel = 0;
  std::vector<uint64_t> DurationNs;
  /// Uses of kernel k are Uses[UseBegin[k] .. UseBegin[k+1]).
  std::vector<uint32_t> UseBegin;
  std::vector<BlockUse> Uses;
  /// Parallel to Uses: the pages the kernel reads (needs the contents of).
  /// From tensor accesses when the profile has them (a block's mode merges
  /// its tensors': READ_WRITE may be one tensor read, another overwritten);
  /// otherwise the block's pages unless it is WRITE (READ only, for plans).
  std::vector<uint32_t> ReadMasks;
  /// Parallel to Uses: the pages the kernel certainly writes (some byte of the
  /// page). From WRITE / READ_WRITE tensors when the profile has them;
  /// otherwise the block's pages only when the block is WRITE. Used by the
  /// lower bounds, which may only count what is certain.
  std::vector<uint32_t> WriteMasks;
  /// Parallel to Uses (empty: none known): pages whose contents died since
  /// the page's previous use, cyclically (every allocation over the page was
  /// freed in between). The use reads nothing a policy had to keep: memory
  /// allocated anew. From the profile's allocation lifetimes.
  std::vector<uint32_t> FreshMasks;
  /// What the lower bounds count as read by use I: read and not fresh.
  uint32_t boundReads(size_t I) const {
    return ReadMasks[I] & ~(FreshMasks.empty() ? 0u : FreshMasks[I]);
  }
  /// Dense block id -> UM block number (profile) or arena block (plan).
  std::vector<uint64_t> UmBlocks;
  /// Per page (dense block * Engine::PagesPerBlock + page), the bytes of data
  /// it stands for in the lower bounds; empty: every page is a whole page.
  std::vector<uint32_t> PageBytes;
  /// Per launch, the bytes of data it holds while it runs, for the lower
  /// bounds; empty: its pages' bytes.
  std::vector<uint64_t> HeldBytes;
  /// The iteration as data (pieces of allocations, whatever their addresses)
  /// for the lower bounds; set by workloadFromProfile. See dataWorkload.
  std::shared_ptr<Workload> Data;
  /// workloadFromProfile left Data unset: counting the data would have cost
  /// more than dataWorkBudget steps (a profile of very many small allocations
  /// under very many launches); the bounds count compute only.
  bool DataOverBudget = false;
  uint64_t pageBytes(uint32_t Block, unsigned Page) const {
    return PageBytes.empty() ? deepum::format::kUmPageBytes
                             : PageBytes[static_cast<size_t>(Block) * Engine::PagesPerBlock + Page];
  }
  /// DeepUM execution IDs: kernel name and launch configuration
  /// (deepum::format::executionId) folded with the kernel's pointer arguments
  /// (its tensors' addresses), as the paper hashes name and arguments.
  std::vector<uint64_t> LaunchIds;
  std::vector<SwapObject> Objects;
  /// Blocks whose every allocation has been freed when launch p is observed.
  std::vector<uint32_t> DeadBegin;
  std::vector<uint32_t> Dead;

  /// Pages the host writes before launch p: input batches (ALLOCATION_ROLE_INPUT)
  /// filled by the data loader when they are allocated (position 0 for
  /// inputs allocated before the iteration).
  std::vector<uint32_t> HostWriteBegin;
  std::vector<BlockUse> HostWrites;

  llvm::ArrayRef<BlockUse> hostWrites(uint32_t P) const {
    return llvm::ArrayRef<BlockUse>(HostWrites)
        .slice(HostWriteBegin[P], HostWriteBegin[P + 1] - HostWriteBegin[P]);
  }
  llvm::ArrayRef<BlockUse> uses(uint32_t K) const {
    return llvm::ArrayRef<BlockUse>(Uses).slice(UseBegin[K], UseBegin[K + 1] - UseBegin[K]);
  }
  llvm::ArrayRef<uint32_t> dead(uint32_t P) const {
    return llvm::ArrayRef<uint32_t>(Dead).slice(DeadBegin[P], DeadBegin[P + 1] - DeadBegin[P]);
  }
  uint64_t idealNs() const;
};

/// Index range [First, First+Count) of the steady-state iteration: the last
/// one the profile marks, or all kernels when it marks none.
std::pair<uint32_t, uint32_t> steadyIteration(const deepum::v1::Profile &P);

/// The steady iteration, or the kernels [First, First+Count) of `Range`.
llvm::Expected<Workload>
workloadFromProfile(const deepum::v1::Profile &P,
                    std::optional<std::pair<uint32_t, uint32_t>> Range = std::nullopt);
/// The plan's own access sets (arena blocks) with the profile's durations.
llvm::Expected<Workload> workloadFromPlan(const deepum::v1::Plan &Plan,
                                          const deepum::v1::Profile &P, llvm::StringRef PlanName,
                                          llvm::StringRef ProfileName);

/// The lower bounds count data, not pages (docs/simulator.md, "Data, not
/// pages"): a plan lays allocations out anew, so a page at the profile's
/// addresses is no unit any policy must move. Each allocation's bytes in each
/// 64 KiB page it overlaps form a piece, a dense block of the data workload
/// per (allocation address and size, UM block), whose PageBytes are those
/// bytes. A launch touches a piece as its tensors do (or, without tensor
/// data, every piece of a live allocation on its pages); it reads or writes
/// the piece only where it covers all of it; HeldBytes are the bytes it
/// touches. Lifetimes are the allocations' own: a piece dies when its
/// allocation is freed. Bytes outside every allocation count for nothing.
/// Whatever the layout, a policy moves at least these bytes and holds them
/// in at most the capacity's bytes.

/// The steps (list entries scanned, touches of pieces made, 8-byte words
/// kept) that building a profile's data workload may take before it gives up
/// (Workload::DataOverBudget): linear in the profile's size, `Size` being its
/// iteration's block uses plus the used blocks under its tensor accesses and
/// allocation events. The shipped profiles take about 16 steps per unit of
/// size; what the budget cuts off is the product of very many small
/// allocations sharing blocks and very many launches over those blocks.
constexpr uint64_t dataWorkBudget(uint64_t Size) { return (uint64_t{1} << 26) + 256 * Size; }
/// Used blocks that an iteration's tensor accesses, the allocations live at
/// its start and its allocation events may lie over, summed, before
/// workloadFromProfile refuses the profile (the page-level work and memory
/// are up to 32 times this; the shipped profiles' largest is 0.41 M).
inline constexpr uint64_t kMaxFlattenBlockVisits = uint64_t{1} << 24;

/// Transfer lower bound per steady-state iteration, bytes per direction:
/// HtoD >= max over launch boundaries of (pages whose next use reads them)
/// minus the capacity; DtoH >= pages written and read first in the next
/// iteration, minus the capacity.
std::pair<uint64_t, uint64_t> transferBoundBytes(const Workload &W, uint64_t CapacityBytes);

/// Pages each launch holds on the GPU while it runs, counted as
/// Engine::pinKernelBlocks counts them: a launch uses each block once (a
/// profile's block accesses are validated strictly ascending; a plan's chains
/// are merged).
std::vector<int64_t> heldPages(const Workload &W);
/// Bytes each launch holds: Workload::HeldBytes, or its pages' PageBytes.
std::vector<int64_t> heldBytes(const Workload &W);

/// Cut lower bound on the steady-state iteration time, ns. For every launch
/// boundary p: pages written on the GPU before p and read after it that are
/// not resident at p (at most the capacity is) must have been written back
/// before p; pages read after p within the iteration that are not resident
/// must cross to the GPU after p. The two transfers lie on opposite sides of
/// p, so T >= max(compute before p, DtoH before p) + max(compute after p,
/// HtoD after p). Never below the ideal time. Forward/backward training, which
/// evicts in the forward pass and fetches back in the backward pass, is what
/// makes it tighter than the total-bytes bound.
double cutBoundNs(const Workload &W, uint64_t CapacityBytes, double LinkBytesPerSecond,
                  double DeviceToHostBytesPerSecond);

/// Commands issued when launch p is observed, before it runs.
enum class CmdKind : uint8_t { Prefetch, Evict, Discard };
struct Command {
  CmdKind Kind;
  uint32_t Block;
  uint32_t Mask;
};
struct Schedule {
  std::vector<uint32_t> Begin; // size Kernels + 1
  std::vector<Command> Cmds;
  llvm::ArrayRef<Command> at(uint32_t P) const {
    return llvm::ArrayRef<Command>(Cmds).slice(Begin[P], Begin[P + 1] - Begin[P]);
  }
};
/// Builds a Schedule from (position, command) pairs in any order (stable by position).
Schedule makeSchedule(uint32_t Kernels, std::vector<std::pair<uint32_t, Command>> Items);

Schedule swapLayerSchedule(const Workload &W, unsigned Lookahead);
/// offload (save_on_cpu, side-stream activation offloading): every tensor
/// saved for the backward pass is copied out after its last forward use and
/// back, timed as swap-opt times its copies, before its first backward use,
/// whatever the capacity. `PeakBytes`: the device memory that leaves at its
/// peak (SimResult::PolicyPeakBytes).
Schedule offloadSchedule(const Workload &W, const DeviceModel &D, uint64_t &PeakBytes);
Schedule swapOptSchedule(const Workload &W, uint64_t CapacityBytes, const DeviceModel &D);

/// Per position, the bytes of the objects that `Counts` accepts and that are
/// allocated there (live: made at or before it and not yet freed, wrapping
/// around the iteration's end): what swap-layer and swap-opt call the load.
/// Costs one step per object and per position, added to *Steps when given
/// (tests hold it linear in the workload).
std::vector<int64_t> liveBytes(const Workload &W,
                               llvm::function_ref<bool(const SwapObject &)> Counts,
                               uint64_t *Steps = nullptr);

/// An idle interval of swap object Object: uses at From and To (To may pass
/// the iteration's end: the next iteration's first use, + Kernels), idle in
/// between.
struct SwapGap {
  uint32_t Object, From, To;
};
/// Every idle interval of the objects of at least MinBytes: the choices a
/// swap schedule makes (swap-opt takes them greedily at 1 MiB).
std::vector<SwapGap> swapGaps(const Workload &W, uint64_t MinBytes);
/// The schedule that swaps out the gaps `Chosen`, each timed as swap-opt
/// times its own: out after the use before it, back as late as arrives in
/// time, discarded when the next use overwrites it.
Schedule swapScheduleOf(const Workload &W, llvm::ArrayRef<SwapGap> Chosen, const DeviceModel &D);
/// The policy that issues `S`, as swap-layer and swap-opt issue theirs.
std::unique_ptr<SimPolicy> makeSchedulePolicy(const Workload &W, Schedule S);
/// simulate() with the schedule MakeSchedule makes for the workload issued
/// as swap-opt issues its own (O.Pol is not asked): a search over swap
/// schedules (tests/simulator/BoundPropertyTest.cpp).
llvm::Expected<SimResult> simulateSchedule(const deepum::v1::Profile &P, const SimOptions &O,
                                           llvm::function_ref<Schedule(const Workload &)> MakeSchedule);

/// DeepUM's online correlation prefetcher (Jung et al., ASPLOS'23).
class DeepUmPrefetcher {
public:
  /// `Watermark`: the fraction of the capacity pre-eviction keeps free (0: none).
  DeepUmPrefetcher(const Workload &W, unsigned Lookahead, double Watermark = 0);
  /// At the observation of launch p: learn the successor, prefetch along the
  /// current and predicted chains.
  void beforeLaunch(Engine &E, uint32_t P);
  /// After launch p: record the blocks it faulted on in its ID's chain.
  void afterLaunch(Engine &E, uint32_t P);

private:
  const Workload &W;
  unsigned Lookahead;
  double Watermark;
  std::vector<uint32_t> IdOf;                 // position -> dense ID
  std::vector<int32_t> Succ;                  // dense ID -> last observed successor (-1 unknown)
  std::vector<std::vector<BlockUse>> Chain;   // dense ID -> UM-block chain
  llvm::DenseMap<uint64_t, uint32_t> InChain; // (ID << 32 | block) -> index in chain
  int32_t Prev = -1;
  std::vector<BlockUse> Window;
};

/// The policies of this library over `W` (every Policy but Plan, which
/// SimOptions::PlanPolicy makes) at capacity `CapacityBytes`.
std::unique_ptr<SimPolicy> makePolicy(Policy P, const Workload &W, const SimOptions &O,
                                      uint64_t CapacityBytes);

} // namespace deepum::sim::detail

#endif // DEEPUM_SIM_LIB_WORKLOAD_H
