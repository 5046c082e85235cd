//===- Workload.cpp - The steady-state iteration, flattened ----------------===//
#include "Workload.h"

#include "deepum/base/Hash.h"
#include "deepum/format/Format.h"
#include "deepum/format/Signature.h"
#include "deepum/format/Window.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <bit>
#include <map>
#include <tuple>
#include <unordered_map>

using namespace deepum::sim;
using namespace deepum::sim::detail;
using deepum::format::kUmBlockBytes;
using deepum::format::kUmPageBytes;

namespace {

constexpr uint32_t AllPages = 0xffffffffu;

Access accessOf(deepum::v1::AccessMode M) {
  switch (M) {
  case deepum::v1::ACCESS_MODE_READ:
    return Access::Read;
  case deepum::v1::ACCESS_MODE_WRITE:
    return Access::Write;
  default: // unspecified counts as read-write (profile.proto)
    return Access::ReadWrite;
  }
}

Access merge(Access A, Access B) { return A == B ? A : Access::ReadWrite; }

/// Pages of [Begin, End) inside UM block `Block`; `Whole` keeps only pages
/// wholly inside the range. Exact near 2^64: no rounding up of End.
uint32_t pageMaskIn(uint64_t Begin, uint64_t End, bool Whole, uint64_t Block) {
  const uint64_t Per = kUmBlockBytes / kUmPageBytes;
  uint64_t First = Begin / kUmPageBytes, Last = End / kUmPageBytes; // pages [First, Last)
  if (Whole)
    First += Begin % kUmPageBytes != 0;
  else
    Last += End % kUmPageBytes != 0;
  uint64_t Lo = std::max(First, Block * Per), Hi = std::min(Last, (Block + 1) * Per);
  if (Hi <= Lo)
    return 0;
  unsigned N = static_cast<unsigned>(Hi - Lo), Shift = static_cast<unsigned>(Lo - Block * Per);
  return (N == 32 ? AllPages : ((1u << N) - 1)) << Shift;
}

/// UM blocks (ascending) with a value each: the blocks a workload uses.
using BlockIndex = std::vector<std::pair<uint64_t, uint32_t>>;

/// Calls F(block, value, page mask) for the blocks of `Used` that [Begin, End)
/// has pages in (`Whole`: pages wholly inside). Only used blocks are visited:
/// an allocation of 2^63 bytes costs what its used blocks cost.
template <typename Fn>
void pagesOfUsed(const BlockIndex &Used, uint64_t Begin, uint64_t End, bool Whole, Fn F) {
  if (End <= Begin)
    return;
  const uint64_t FirstBlock = Begin / kUmBlockBytes, LastBlock = (End - 1) / kUmBlockBytes;
  auto It = std::lower_bound(Used.begin(), Used.end(), std::make_pair(FirstBlock, uint32_t{0}));
  for (; It != Used.end() && It->first <= LastBlock; ++It)
    if (uint32_t Mask = pageMaskIn(Begin, End, Whole, It->first))
      F(It->first, It->second, Mask);
}

/// How many blocks of `Used` pagesOfUsed visits for [Begin, End).
size_t usedBlocksIn(const BlockIndex &Used, uint64_t Begin, uint64_t End) {
  if (End <= Begin)
    return 0;
  auto Lo = std::lower_bound(Used.begin(), Used.end(),
                             std::make_pair(Begin / kUmBlockBytes, uint32_t{0}));
  auto Hi = std::upper_bound(Lo, Used.end(),
                             std::make_pair((End - 1) / kUmBlockBytes, UINT32_MAX));
  return static_cast<size_t>(Hi - Lo);
}

BlockIndex sortedIndex(BlockIndex Blocks) {
  std::sort(Blocks.begin(), Blocks.end());
  return Blocks;
}

} // namespace

uint64_t Workload::idealNs() const {
  uint64_t Sum = 0;
  for (uint64_t D : DurationNs)
    Sum += D;
  return Sum;
}

std::pair<uint32_t, uint32_t> detail::steadyIteration(const deepum::v1::Profile &P) {
  if (P.iterations_size() == 0)
    return {0, static_cast<uint32_t>(P.kernels_size())};
  const deepum::v1::Iteration &It = P.iterations(P.iterations_size() - 1);
  return {It.first_kernel(), It.kernel_count()};
}

namespace {

/// W.FreshMasks: the pages of each use whose contents nobody produced since
/// the page last died (every allocation over it freed): no write certainly
/// touched it since (a kernel's WriteMasks, a host write of an input), so a
/// read of it reads memory allocated anew, which no policy has to keep. A
/// page that never dies keeps the contents it had before the iteration.
template <typename Deaths> void markFresh(Workload &W, Deaths DeathsAt) {
  constexpr unsigned PerBlock = Engine::PagesPerBlock;
  W.FreshMasks.assign(W.Uses.size(), 0);
  std::vector<std::vector<uint32_t>> UsesOf(W.UmBlocks.size()); // use indices in order
  std::vector<uint32_t> PosOf(W.Uses.size());
  for (uint32_t K = 0; K < W.Kernels; ++K)
    for (uint32_t I = W.UseBegin[K]; I < W.UseBegin[K + 1]; ++I) {
      UsesOf[W.Uses[I].Block].push_back(I);
      PosOf[I] = K;
    }
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> HostOf(W.UmBlocks.size());
  for (uint32_t K = 0; K < W.Kernels; ++K)
    for (const BlockUse &H : W.hostWrites(K))
      HostOf[H.Block].push_back({K, H.PageMask});
  for (uint32_t B = 0; B < UsesOf.size(); ++B) {
    const auto &Us = UsesOf[B];
    const auto &Hs = HostOf[B];
    for (unsigned Page = 0; Page < PerBlock; ++Page) {
      const std::vector<uint32_t> &D = DeathsAt(B, Page);
      if (D.empty())
        continue;
      const uint32_t Bit = uint32_t{1} << Page;
      // Two rounds of the cyclic iteration: the first finds whether the
      // contents at its end (the start of the next) were produced, the
      // second marks. At one position: deaths, then host writes, then uses.
      bool Produced = false;
      for (int Round = 0; Round < 2; ++Round) {
        size_t Di = 0, Hi = 0;
        for (size_t J = 0; J <= Us.size(); ++J) {
          const uint32_t Pos = J < Us.size() ? PosOf[Us[J]] : W.Kernels;
          for (;;) {
            const uint32_t DPos = Di < D.size() ? D[Di] : UINT32_MAX;
            const uint32_t HPos = Hi < Hs.size() ? Hs[Hi].first : UINT32_MAX;
            if (DPos <= Pos && DPos <= HPos) {
              Produced = false;
              ++Di;
            } else if (HPos <= Pos) {
              Produced |= (Hs[Hi].second & Bit) != 0;
              ++Hi;
            } else {
              break;
            }
          }
          if (J == Us.size())
            break;
          const uint32_t I = Us[J];
          if (!(W.Uses[I].PageMask & Bit))
            continue;
          if (Round == 1 && !Produced)
            W.FreshMasks[I] |= Bit;
          Produced |= (W.WriteMasks[I] & Bit) != 0;
        }
      }
    }
  }
}

/// An allocation or a free, at the launch position that observes it.
struct AllocationEvent {
  uint32_t Pos;
  int Delta; // +1 allocated, -1 freed
  const deepum::v1::Allocation *A;
};

/// Flattens kernels [First, First+Count) of a profile into a Workload; the
/// members are what the steps share.
class ProfileFlattener {
public:
  ProfileFlattener(const deepum::v1::Profile &Profile, uint32_t FirstKernel, uint32_t Kernels)
      : P(Profile), First(FirstKernel), Count(Kernels) {}

  llvm::Expected<Workload> flatten() {
    W.Kernels = Count;
    W.FirstKernel = First;
    for (const deepum::v1::Allocation &A : P.allocations())
      Allocs[A.id()] = &A;
    if (llvm::Error Err = flattenKernels())
      return Err;
    // Every block the iteration uses, ascending, with its dense id.
    Used = sortedIndex(BlockIndex(Dense.begin(), Dense.end()));
    IterBegin = Starts.front();
    IterEnd = kernel(Count - 1).end_ns();
    pairAcrossTheMark();
    if (HaveTensors)
      buildTensorObjects();
    else
      buildBlockObjects();
    collectHostWrites();
    collectUseSpans();
    if (HaveTensors)
      clampObjectLifetimes();
    collectAllocationEvents();
    if (llvm::Error Err = chargeVisits(allocationVisits()))
      return Err;
    std::vector<std::vector<uint32_t>> DeadAt = deadBlocksAt();
    computeFreshMasks(pageDeaths());
    W.DeadBegin.push_back(0);
    for (auto &L : DeadAt) {
      std::sort(L.begin(), L.end());
      L.erase(std::unique(L.begin(), L.end()), L.end());
      W.Dead.insert(W.Dead.end(), L.begin(), L.end());
      W.DeadBegin.push_back(static_cast<uint32_t>(W.Dead.size()));
    }
    buildData();
    return std::move(W);
  }

private:
  /// Flattening visits the iteration's used blocks under each tensor access
  /// (its kernel's blocks) and under each allocation live at the iteration's
  /// start or made or freed within it (the page-level work is 32 times
  /// that). Linear in the profile for tensors and allocations of ordinary
  /// size; a profile of very many tensor accesses, or allocation events,
  /// over very many blocks multiplies them. Past kMaxFlattenBlockVisits it is
  /// refused. Also sets the budget of the data workload (dataWorkBudget).
  llvm::Error chargeVisits(uint64_t N) {
    Visits += N;
    DataBudget = dataWorkBudget(Visits + W.Uses.size());
    if (Visits <= kMaxFlattenBlockVisits)
      return llvm::Error::success();
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        llvm::formatv("its allocations and tensor accesses lie over more than {0} of the "
                      "iteration's used blocks, the simulator's limit (very many allocations "
                      "or tensor accesses over very many blocks)",
                      kMaxFlattenBlockVisits)
            .str());
  }

  /// The bytes [Begin, End) of tensor access T; none when its allocation is
  /// unknown (validation rejects that; be robust anyway).
  std::optional<std::pair<uint64_t, uint64_t>>
  tensorRange(const deepum::v1::TensorAccess &T) const {
    auto It = Allocs.find(T.allocation_id());
    if (It == Allocs.end())
      return std::nullopt;
    const uint64_t Begin = It->second->address() + T.offset();
    return std::pair{Begin, Begin + T.bytes()};
  }

  /// Blocks of `KernelBlocks` (a kernel's) under each of its tensors: what
  /// maskByTensors visits.
  uint64_t tensorVisits(const deepum::v1::Kernel &Kr, const BlockIndex &KernelBlocks) const {
    uint64_t N = 0;
    for (const deepum::v1::TensorAccess &T : Kr.tensors())
      if (auto R = tensorRange(T))
        N += usedBlocksIn(KernelBlocks, R->first, R->second);
    return N;
  }

  /// Used blocks under the allocations live at the iteration's start and
  /// under its allocation events (deadBlocksAt, pageDeaths).
  uint64_t allocationVisits() const {
    uint64_t N = 0;
    for (const deepum::v1::Allocation &A : P.allocations())
      if (liveAtBegin(A))
        N += usedBlocksIn(Used, A.address(), allocationEnd(A));
    for (const AllocationEvent &E : Events)
      N += usedBlocksIn(Used, E.A->address(), allocationEnd(*E.A));
    return N;
  }

  const deepum::v1::Kernel &kernel(uint32_t K) const {
    return P.kernels(static_cast<int>(First + K));
  }

  uint32_t idOf(uint64_t Block) {
    auto [It, New] = Dense.try_emplace(Block, static_cast<uint32_t>(W.UmBlocks.size()));
    if (New)
      W.UmBlocks.push_back(Block);
    return It->second;
  }

  /// Position of a host-side event at time T: launches observed by then.
  uint32_t positionOf(uint64_t T) const {
    return static_cast<uint32_t>(std::upper_bound(Starts.begin(), Starts.end(), T) -
                                 Starts.begin());
  }

  /// Allocated before the iteration and not freed before it starts.
  bool liveAtBegin(const deepum::v1::Allocation &A) const {
    return A.alloc_time_ns() < IterBegin && (!A.freed() || A.free_time_ns() >= IterBegin);
  }

  /// Calls F(dense block) for every used block `A` has pages in.
  template <typename Fn> void forBlocks(const deepum::v1::Allocation &A, Fn F) const {
    pagesOfUsed(Used, A.address(), A.address() + A.size_bytes(), false,
                [&](uint64_t, uint32_t D, uint32_t) { F(D); });
  }

  /// Calls F(dense block * PagesPerBlock + page) for every used page `A` has bytes in.
  template <typename Fn> void forPages(const deepum::v1::Allocation &A, Fn F) const {
    pagesOfUsed(Used, A.address(), A.address() + A.size_bytes(), false,
                [&](uint64_t, uint32_t D, uint32_t M) {
                  for (; M; M &= M - 1)
                    F(static_cast<size_t>(D) * Engine::PagesPerBlock +
                      static_cast<unsigned>(std::countr_zero(M)));
                });
  }

  /// Durations, start times, block uses with their read / write masks, and
  /// launch IDs, kernel by kernel; notes the allocations the kernels use.
  llvm::Error flattenKernels() {
    W.UseBegin.push_back(0);
    BlockIndex KernelBlocks; // UM block -> index in W.Uses, ascending
    for (uint32_t K = 0; K < Count; ++K) {
      const deepum::v1::Kernel &Kr = kernel(K);
      W.DurationNs.push_back(deepum::format::computeNs(Kr));
      Starts.push_back(Kr.start_ns());
      const size_t UsesBegin = W.Uses.size();
      for (const deepum::v1::BlockAccess &B : Kr.blocks()) {
        W.Uses.push_back(
            {idOf(B.block()), B.page_mask() ? B.page_mask() : AllPages, accessOf(B.mode())});
        bool Reads = Kr.tensors_size() == 0 && W.Uses.back().Mode != Access::Write;
        W.ReadMasks.push_back(Reads ? W.Uses.back().PageMask : 0);
        bool Writes = Kr.tensors_size() == 0 && W.Uses.back().Mode == Access::Write;
        W.WriteMasks.push_back(Writes ? W.Uses.back().PageMask : 0);
      }
      if (Kr.tensors_size() != 0) {
        KernelBlocks.clear();
        for (size_t U = UsesBegin; U < W.Uses.size(); ++U)
          KernelBlocks.push_back({W.UmBlocks[W.Uses[U].Block], static_cast<uint32_t>(U)});
        std::sort(KernelBlocks.begin(), KernelBlocks.end());
        if (llvm::Error Err = chargeVisits(tensorVisits(Kr, KernelBlocks)))
          return Err;
        maskByTensors(Kr, KernelBlocks);
      }
      W.LaunchIds.push_back(launchIdOf(Kr));
      for (const deepum::v1::TensorAccess &T : Kr.tensors()) {
        HaveTensors = true;
        if (Allocs.count(T.allocation_id())) // validation rejects others; be robust anyway
          ObjectOf.try_emplace(T.allocation_id(), 0);
      }
      W.UseBegin.push_back(static_cast<uint32_t>(W.Uses.size()));
    }
    return llvm::Error::success();
  }

  /// Read / write masks of kernel `Kr`'s uses (`KernelBlocks`: UM block ->
  /// use, ascending) from its tensors: pages read by its READ / READ_WRITE /
  /// unspecified tensors, pages written by its WRITE / READ_WRITE ones.
  void maskByTensors(const deepum::v1::Kernel &Kr, const BlockIndex &KernelBlocks) {
    for (const deepum::v1::TensorAccess &T : Kr.tensors()) {
      const auto R = tensorRange(T);
      if (!R)
        continue;
      bool Reads = T.mode() != deepum::v1::ACCESS_MODE_WRITE;
      bool Writes = T.mode() == deepum::v1::ACCESS_MODE_WRITE ||
                    T.mode() == deepum::v1::ACCESS_MODE_READ_WRITE;
      pagesOfUsed(KernelBlocks, R->first, R->second, false,
                  [&](uint64_t, uint32_t U, uint32_t M) {
                    if (Reads)
                      W.ReadMasks[U] |= M & W.Uses[U].PageMask;
                    if (Writes)
                      W.WriteMasks[U] |= M & W.Uses[U].PageMask;
                  });
    }
  }

  /// The kernel's execution ID folded with its tensors' addresses (its
  /// blocks' numbers without tensor data).
  uint64_t launchIdOf(const deepum::v1::Kernel &Kr) const {
    uint64_t Id = deepum::format::executionId(Kr);
    if (Kr.tensors_size() == 0)
      for (const deepum::v1::BlockAccess &B : Kr.blocks())
        Id = deepum::base::fnv1aWord(static_cast<uint32_t>(B.block()), Id);
    for (const deepum::v1::TensorAccess &T : Kr.tensors()) {
      auto It = Allocs.find(T.allocation_id());
      if (It == Allocs.end())
        continue;
      Id = deepum::base::fnv1aId(It->second->address() + T.offset(), Id);
    }
    return Id;
  }

  /// A swap object's allocation, made after the iteration's first launch
  /// starts (one made at that instant was made before it) ...
  bool madeInIteration(const deepum::v1::Allocation &A) const {
    return A.alloc_time_ns() > IterBegin && A.alloc_time_ns() <= IterEnd;
  }
  /// ... and its free, within the iteration.
  bool freedInIteration(const deepum::v1::Allocation &A) const {
    return A.freed() && A.free_time_ns() >= IterBegin && A.free_time_ns() <= IterEnd;
  }

  /// Swap objects: the allocations used in the iteration, with their pages,
  /// lifetimes and uses.
  void buildTensorObjects() {
    // An allocation carried in at the address of one the iteration makes
    // and leaves to the next is that one's previous instance: one object,
    // allocated late in the iteration and freed early in the next (liveAt's
    // wrap), so that a swap schedule keeps what the next iteration reads.
    auto Continued = [&](uint64_t Id) -> const size_t * {
      auto Made = SameAddress.find(Id);
      if (Made == SameAddress.end())
        return nullptr;
      auto It = ObjectOf.find(Made->second);
      return It == ObjectOf.end() ? nullptr : &It->second;
    };
    size_t N = 0;
    for (auto &[Id, Slot] : ObjectOf)
      if (!Continued(Id))
        Slot = N++;
    for (auto &[Id, Slot] : ObjectOf)
      if (const size_t *Made = Continued(Id))
        Slot = *Made;
    W.Objects.resize(N);
    for (auto &[Id, Slot] : ObjectOf) {
      const deepum::v1::Allocation &A = *Allocs[Id];
      SwapObject &O = W.Objects[Slot];
      O.Bytes = A.size_bytes();
      O.Activation = A.role() == deepum::v1::ALLOCATION_ROLE_ACTIVATION;
      uint64_t Begin = A.address(), End = A.address() + A.size_bytes();
      // The pages once: the two allocations of one object lie on the same.
      if (O.Overlap.empty() && O.Whole.empty()) {
        pagesOfUsed(Used, Begin, End, false, [&](uint64_t, uint32_t D, uint32_t M) {
          O.Overlap.push_back({D, M, Access::ReadWrite});
        });
        pagesOfUsed(Used, Begin, End, true, [&](uint64_t, uint32_t D, uint32_t M) {
          O.Whole.push_back({D, M, Access::ReadWrite});
        });
      }
      if (madeInIteration(A))
        O.AllocPos = positionOf(A.alloc_time_ns());
      if (freedInIteration(A))
        O.FreePos = positionOf(A.free_time_ns());
    }
    for (uint32_t K = 0; K < Count; ++K) {
      for (const deepum::v1::TensorAccess &T : kernel(K).tensors()) {
        auto It = ObjectOf.find(T.allocation_id());
        if (It == ObjectOf.end())
          continue;
        auto &Uses = W.Objects[It->second].Uses;
        if (!Uses.empty() && Uses.back().first == K)
          Uses.back().second = merge(Uses.back().second, accessOf(T.mode()));
        else
          Uses.push_back({K, accessOf(T.mode())});
      }
    }
  }

  /// Swap objects without tensor data: one per UM block.
  void buildBlockObjects() {
    W.Objects.resize(W.UmBlocks.size());
    for (uint32_t B = 0; B < W.UmBlocks.size(); ++B) {
      W.Objects[B].Bytes = kUmBlockBytes;
      W.Objects[B].Overlap.push_back({B, AllPages, Access::ReadWrite});
      W.Objects[B].Whole.push_back({B, AllPages, Access::ReadWrite});
    }
    for (uint32_t K = 0; K < Count; ++K)
      for (const BlockUse &U : W.uses(K))
        W.Objects[U.Block].Uses.push_back({K, U.Mode});
  }

  /// Input batches: the host writes them when they are allocated.
  void collectHostWrites() {
    std::vector<std::vector<BlockUse>> At(Count);
    for (const deepum::v1::Allocation &A : P.allocations()) {
      if (A.role() != deepum::v1::ALLOCATION_ROLE_INPUT)
        continue;
      bool InIteration = A.alloc_time_ns() >= IterBegin && A.alloc_time_ns() <= IterEnd;
      bool LiveAcross = A.alloc_time_ns() < IterBegin && (!A.freed() || A.free_time_ns() > IterEnd);
      if (!InIteration && !LiveAcross)
        continue;
      // An allocation at a kernel's start time precedes that launch.
      uint32_t Pos = InIteration
                         ? static_cast<uint32_t>(
                               std::lower_bound(Starts.begin(), Starts.end(), A.alloc_time_ns()) -
                               Starts.begin()) %
                               Count
                         : 0;
      pagesOfUsed(Used, A.address(), A.address() + A.size_bytes(), false,
                  [&](uint64_t, uint32_t D, uint32_t M) {
                    At[Pos].push_back({D, M, Access::Write});
                  });
    }
    W.HostWriteBegin.push_back(0);
    for (auto &L : At) {
      W.HostWrites.insert(W.HostWrites.end(), L.begin(), L.end());
      W.HostWriteBegin.push_back(static_cast<uint32_t>(W.HostWrites.size()));
    }
  }

  // DeepUM's invalidation: a block dies when the last allocation overlapping
  // it is freed. Live counts at the iteration start, then frees and
  // allocations by the launch position that observes them (frees first on
  // ties: the memory is dead in between). A traced allocation can be stamped
  // inside the operator that first writes it, and a free before the launch of
  // its last reader: an allocation is never later than its first use, a free
  // never earlier than after its last use.

  /// The first and last position using each allocation.
  void collectUseSpans() {
    for (uint32_t K = 0; K < Count; ++K)
      for (const deepum::v1::TensorAccess &T : kernel(K).tensors()) {
        auto [It, New] = UseSpan.try_emplace(T.allocation_id(), K, K);
        if (!New)
          It->second.second = K;
      }
  }

  /// The swap objects' lifetimes follow the same rule.
  void clampObjectLifetimes() {
    for (auto &[Id, Slot] : ObjectOf) {
      SwapObject &O = W.Objects[Slot];
      auto Span = UseSpan.find(Id);
      if (Span == UseSpan.end())
        continue;
      // By this allocation's own uses: an object may be two (buildTensorObjects).
      const deepum::v1::Allocation &A = *Allocs.at(Id);
      if (O.AllocPos >= 0 && madeInIteration(A))
        O.AllocPos = std::min<int64_t>(O.AllocPos, Span->second.first);
      if (O.FreePos >= 0 && freedInIteration(A))
        O.FreePos = std::max<int64_t>(O.FreePos, Span->second.second + 1);
      if (O.FreePos >= Count) // freed after the last launch: lives to the end
        O.FreePos = -1;
    }
  }

  /// Frees after the last kernel (the end of the step: the optimizer's and the
  /// loss's temporaries) belong to the iteration too: up to the next launch
  /// (the next iteration's first), or to the iteration's end mark when it is
  /// the profile's last; never the teardown after the last marked iteration.
  /// They are observed with the next iteration's first launch (position
  /// Count, which wraps to 0).
  uint64_t tailEnd() const {
    uint64_t TailEnd = IterEnd;
    if (First + Count < static_cast<uint64_t>(P.kernels_size()))
      TailEnd = std::max(TailEnd, kernel(Count).start_ns());
    else
      for (const deepum::v1::Iteration &It : P.iterations())
        if (It.first_kernel() == First && It.kernel_count() == Count)
          TailEnd = std::max(TailEnd, It.end_ns());
    return TailEnd;
  }

  /// The iteration's allocations and frees, by position, frees first on ties.
  void collectAllocationEvents() {
    const uint64_t TailEnd = tailEnd();
    for (const deepum::v1::Allocation &A : P.allocations()) {
      auto Span = UseSpan.find(A.id());
      if (A.alloc_time_ns() >= IterBegin && A.alloc_time_ns() <= IterEnd) {
        uint32_t Pos = static_cast<uint32_t>(
            std::lower_bound(Starts.begin(), Starts.end(), A.alloc_time_ns()) - Starts.begin());
        if (Span != UseSpan.end())
          Pos = std::min(Pos, Span->second.first);
        Events.push_back({Pos, +1, &A});
      }
      // (A tail free counts only for an allocation counted above: one made in
      // the gap itself is the next iteration's.)
      if (A.freed() && A.free_time_ns() >= IterBegin && A.free_time_ns() <= TailEnd &&
          A.alloc_time_ns() <= IterEnd) {
        uint32_t Pos = positionOf(A.free_time_ns());
        if (Span != UseSpan.end())
          Pos = std::max(Pos, Span->second.second + 1);
        // Made and freed between the same two launches: never live at a launch
        // boundary. Its events would run free-before-allocation and take the
        // live count of memory another allocation holds through zero.
        if (!Events.empty() && Events.back().A == &A && Events.back().Pos == Pos)
          Events.pop_back();
        else
          Events.push_back({Pos, -1, &A});
      }
    }
    std::stable_sort(Events.begin(), Events.end(),
                     [](const AllocationEvent &X, const AllocationEvent &Y) {
                       return X.Pos != Y.Pos ? X.Pos < Y.Pos : X.Delta < Y.Delta;
                     });
  }

  /// Per position, the blocks whose last live allocation is freed there.
  std::vector<std::vector<uint32_t>> deadBlocksAt() const {
    std::vector<int32_t> Live(W.UmBlocks.size(), 0);
    for (const deepum::v1::Allocation &A : P.allocations())
      if (liveAtBegin(A))
        forBlocks(A, [&](uint32_t B) { ++Live[B]; });
    std::vector<std::vector<uint32_t>> DeadAt(Count);
    for (const AllocationEvent &E : Events)
      forBlocks(*E.A, [&](uint32_t B) {
        Live[B] += E.Delta;
        if (E.Delta < 0 && Live[B] == 0)
          DeadAt[E.Pos % DeadAt.size()].push_back(B);
      });
    return DeadAt;
  }

  // The same at page granularity, for the lower bounds: where each page's
  // contents die (the last allocation over it freed), so that a use after
  // that point, a use of memory allocated anew, reads nothing that had to
  // be kept. Only frees kill contents: a page no allocation covers never dies.

  /// Per page (dense block * PagesPerBlock + page), the positions where its
  /// contents die, ascending.
  std::vector<std::vector<uint32_t>> pageDeaths() const {
    std::vector<int32_t> LivePages(W.UmBlocks.size() * Engine::PagesPerBlock, 0);
    std::vector<std::vector<uint32_t>> DeathsOf(LivePages.size());
    for (const deepum::v1::Allocation &A : P.allocations())
      if (liveAtBegin(A))
        forPages(A, [&](size_t Pg) { ++LivePages[Pg]; });
    for (const AllocationEvent &E : Events)
      forPages(*E.A, [&](size_t Pg) {
        LivePages[Pg] += E.Delta;
        if (E.Delta < 0 && LivePages[Pg] == 0)
          DeathsOf[Pg].push_back(E.Pos % Count);
      });
    for (auto &D : DeathsOf)
      std::sort(D.begin(), D.end());
    return DeathsOf;
  }

  // The iteration as data, for the lower bounds (Workload.h, "The lower
  // bounds count data, not pages"). A slot is one allocation: each has its
  // own lifetime, even where the caching allocator hands its memory on to
  // the next allocation of the same size before the old one's last use.

  /// One launch's touch of one piece: a byte range of the piece, and whether
  /// the access reads or writes it.
  struct PieceTouch {
    uint32_t Block; // dense block of the data workload
    uint32_t Page;
    uint64_t Begin, End;
    bool Read, Write;
  };

  uint32_t slotOf(const deepum::v1::Allocation &A) {
    auto [It, New] = Slots.try_emplace(dataOf(A.id()), static_cast<uint32_t>(SlotBlocks.size()));
    if (New)
      SlotBlocks.emplace_back();
    return It->second;
  }

  /// The data workload's dense block of `A`'s bytes in UM block `UmBlock`,
  /// with the bytes of each of its pages.
  uint32_t pieceBlockOf(const deepum::v1::Allocation &A, uint64_t UmBlock) {
    const uint32_t Slot = slotOf(A);
    auto [It, New] = PieceBlocks.try_emplace({Slot, UmBlock}, static_cast<uint32_t>(DW->UmBlocks.size()));
    if (!New)
      return It->second;
    spend(kPieceBlockWords);
    DW->UmBlocks.push_back(UmBlock);
    SlotBlocks[Slot].push_back(It->second);
    const uint64_t Begin = A.address(), End = allocationEnd(A);
    for (unsigned Page = 0; Page < Engine::PagesPerBlock; ++Page) {
      const uint64_t PB = (UmBlock * Engine::PagesPerBlock + Page) * kUmPageBytes;
      const uint64_t Lo = std::max(Begin, PB), Hi = std::min(End, PB + kUmPageBytes);
      DW->PageBytes.push_back(Hi > Lo ? static_cast<uint32_t>(Hi - Lo) : 0);
    }
    return It->second;
  }

  static uint64_t allocationEnd(const deepum::v1::Allocation &A) {
    const uint64_t End = A.address() + A.size_bytes();
    return End < A.address() ? UINT64_MAX : End; // validation refuses this; be exact anyway
  }

  /// The pieces kernel K's tensors touch, on the pages its blocks name.
  void touchesOfTensors(uint32_t K, std::vector<PieceTouch> &Out) {
    const deepum::v1::Kernel &Kr = kernel(K);
    BlockIndex Pages; // UM block -> the kernel's page mask there
    for (const deepum::v1::BlockAccess &B : Kr.blocks())
      Pages.push_back({B.block(), B.page_mask() ? B.page_mask() : AllPages});
    std::sort(Pages.begin(), Pages.end());
    for (const deepum::v1::TensorAccess &T : Kr.tensors()) {
      auto It = Allocs.find(T.allocation_id());
      if (It == Allocs.end())
        continue;
      const deepum::v1::Allocation &A = *It->second;
      const uint64_t Size = A.size_bytes();
      const uint64_t Begin = A.address() + std::min(T.offset(), Size);
      const uint64_t End = A.address() + std::min(T.offset() + std::min(T.bytes(), Size), Size);
      const bool Reads = T.mode() != deepum::v1::ACCESS_MODE_WRITE;
      const bool Writes = T.mode() == deepum::v1::ACCESS_MODE_WRITE ||
                          T.mode() == deepum::v1::ACCESS_MODE_READ_WRITE;
      if (!spend(1 + usedBlocksIn(Pages, Begin, End)))
        return;
      pagesOfUsed(Pages, Begin, End, false, [&](uint64_t UmBlock, uint32_t Mask, uint32_t M) {
        M &= Mask;
        if (!M || !spend(static_cast<unsigned>(std::popcount(M))))
          return;
        const uint32_t B = pieceBlockOf(A, UmBlock);
        for (; M; M &= M - 1) {
          const uint32_t Page = static_cast<uint32_t>(std::countr_zero(M));
          const uint64_t PB = (UmBlock * Engine::PagesPerBlock + Page) * kUmPageBytes;
          const uint64_t Lo = std::max(Begin, PB), Hi = std::min(End, PB + kUmPageBytes);
          if (Hi > Lo)
            Out.push_back({B, Page, Lo, Hi, Reads, Writes});
        }
      });
    }
  }

  /// Without tensor data: every piece of an allocation live at the kernel's
  /// start on the pages it touches, whole, in the block's mode (as the
  /// planner maps block accesses to its arena).
  void touchesOfBlocks(uint32_t K, const std::vector<std::vector<const deepum::v1::Allocation *>> &Live,
                       std::vector<PieceTouch> &Out) {
    for (const deepum::v1::BlockAccess &BA : kernel(K).blocks()) {
      const uint32_t Mask = BA.page_mask() ? BA.page_mask() : AllPages;
      const Access M = accessOf(BA.mode());
      const uint32_t UmDense = Dense.at(BA.block());
      if (!spend(1 + Live[UmDense].size()))
        return;
      for (const deepum::v1::Allocation *A : Live[UmDense]) {
        uint32_t Over = Mask & pageMaskIn(A->address(), allocationEnd(*A), false, BA.block());
        if (!Over)
          continue;
        if (!spend(static_cast<unsigned>(std::popcount(Over))))
          return;
        const uint32_t B = pieceBlockOf(*A, BA.block());
        for (; Over; Over &= Over - 1) {
          const uint32_t Page = static_cast<uint32_t>(std::countr_zero(Over));
          const uint64_t PB = (BA.block() * Engine::PagesPerBlock + Page) * kUmPageBytes;
          const uint64_t Lo = std::max(A->address(), PB);
          const uint64_t Hi = std::min(allocationEnd(*A), PB + kUmPageBytes);
          Out.push_back({B, Page, Lo, Hi, M != Access::Write, M == Access::Write});
        }
      }
    }
  }

  /// A kernel's uses of the data workload from its touches: per piece, the
  /// bytes touched (their union) and whether reads / writes cover it whole.
  void addDataUses(std::vector<PieceTouch> &Touches) {
    std::sort(Touches.begin(), Touches.end(), [](const PieceTouch &X, const PieceTouch &Y) {
      return std::tie(X.Block, X.Page, X.Begin) < std::tie(Y.Block, Y.Page, Y.Begin);
    });
    uint64_t Held = 0;
    for (size_t I = 0; I < Touches.size();) {
      const uint32_t B = Touches[I].Block, Page = Touches[I].Page;
      size_t J = I;
      while (J < Touches.size() && Touches[J].Block == B && Touches[J].Page == Page)
        ++J;
      // The piece: the allocation's bytes in the page.
      const uint64_t Bytes = DW->PageBytes[static_cast<size_t>(B) * Engine::PagesPerBlock + Page];
      // The union of the wanted ranges (all within the piece, sorted by
      // their start), and whether it is the whole piece.
      auto covered = [&](auto Want) {
        uint64_t Union = 0, Reached = 0;
        for (size_t T = I; T < J; ++T) {
          if (!Want(Touches[T]))
            continue;
          const uint64_t Lo = std::max(Reached, Touches[T].Begin);
          if (Touches[T].End > Lo)
            Union += Touches[T].End - Lo;
          Reached = std::max(Reached, Touches[T].End);
        }
        return std::pair{Union, Bytes > 0 && Union >= Bytes};
      };
      Held += covered([](const PieceTouch &) { return true; }).first;
      const bool Reads = covered([](const PieceTouch &T) { return T.Read; }).second;
      const bool Writes = covered([](const PieceTouch &T) { return T.Write; }).second;
      const uint32_t Bit = uint32_t{1} << Page;
      auto [It, New] = UseOf.try_emplace(B, static_cast<uint32_t>(DW->Uses.size()));
      if (New) {
        spend(kUseWords);
        DW->Uses.push_back({B, 0, Access::ReadWrite});
        DW->ReadMasks.push_back(0);
        DW->WriteMasks.push_back(0);
      }
      DW->Uses[It->second].PageMask |= Bit;
      DW->ReadMasks[It->second] |= Reads ? Bit : 0;
      DW->WriteMasks[It->second] |= Writes ? Bit : 0;
      I = J;
    }
    DW->HeldBytes.push_back(Held);
  }

  /// Allocations carried in that continue one the iteration makes and
  /// leaves to the next (live from its event here to the iteration's end;
  /// the one carried in freed here). SameAddress: at the same address and
  /// size, the same memory in the profile's replay, whose swap objects are
  /// one. SameData: those the planner pairs too (deepum/format/Window.h), so
  /// that the data is one piece in the plan's arena and at the profile's
  /// addresses alike: the lower bounds count them as one.
  void pairAcrossTheMark() {
    const uint64_t TailEnd = tailEnd();
    const uint64_t WindowEnd = deepum::format::iterationWindow(P, First, Count).second;
    deepum::format::WindowAllocations Classes =
        deepum::format::classifyAllocations(P, IterBegin, WindowEnd);
    std::map<std::pair<uint64_t, uint64_t>, uint64_t> Wrapping; // (address, size) -> id
    for (uint32_t I : Classes.Made) {
      const deepum::v1::Allocation &A = P.allocations(static_cast<int>(I));
      if (A.alloc_time_ns() <= IterEnd && !(A.freed() && A.free_time_ns() <= TailEnd))
        Wrapping[{A.address(), A.size_bytes()}] = A.id();
    }
    for (uint32_t I : Classes.CarriedIn) {
      const deepum::v1::Allocation &A = P.allocations(static_cast<int>(I));
      auto It = Wrapping.find({A.address(), A.size_bytes()});
      if (It != Wrapping.end() && A.free_time_ns() <= TailEnd)
        SameAddress[A.id()] = It->second;
    }
    for (auto [C, M] : deepum::format::matchCarriedIn(P, Classes, WindowEnd)) {
      const uint64_t Carried = P.allocations(static_cast<int>(C)).id();
      auto It = SameAddress.find(Carried);
      if (It != SameAddress.end() && It->second == P.allocations(static_cast<int>(M)).id())
        SameData[Carried] = It->second;
    }
  }

  /// The allocation whose data `Id`'s bytes hold: itself, or for one carried
  /// in, the allocation it pairs with.
  uint64_t dataOf(uint64_t Id) const {
    auto It = SameData.find(Id);
    return It == SameData.end() ? Id : It->second;
  }

  /// W.Data: the data workload of the iteration.
  void buildData() {
    DW = std::make_shared<Workload>();
    DW->Kernels = Count;
    DW->FirstKernel = First;
    DW->DurationNs = W.DurationNs;
    // The allocations over each used block, made live and freed in time
    // order as the kernels start (live: made at or before the start, freed
    // after it), for the kernels without tensor data: those live at the
    // first launch, then the changes after it.
    bool BlockOnly = false;
    for (uint32_t K = 0; K < Count && !BlockOnly; ++K)
      BlockOnly = kernel(K).tensors_size() == 0;
    std::vector<std::vector<const deepum::v1::Allocation *>> Live(W.UmBlocks.size());
    std::vector<std::pair<uint64_t, std::pair<int, const deepum::v1::Allocation *>>> Changes;
    for (int I = 0; BlockOnly && !OverBudget && I < P.allocations_size(); ++I) {
      const deepum::v1::Allocation &A = P.allocations(I);
      if (A.alloc_time_ns() > IterBegin)
        Changes.push_back({A.alloc_time_ns(), {+1, &A}});
      if (A.freed() && A.free_time_ns() > IterBegin)
        Changes.push_back({A.free_time_ns(), {-1, &A}});
      if (A.alloc_time_ns() <= IterBegin && (!A.freed() || A.free_time_ns() > IterBegin) &&
          spend(1 + usedBlocksIn(Used, A.address(), allocationEnd(A))))
        forBlocks(A, [&](uint32_t B) { Live[B].push_back(&A); });
    }
    std::stable_sort(Changes.begin(), Changes.end(), [](const auto &X, const auto &Y) {
      return X.first < Y.first;
    });
    size_t Next = 0;
    std::vector<PieceTouch> Touches;
    DW->UseBegin.push_back(0);
    for (uint32_t K = 0; K < Count; ++K) {
      const deepum::v1::Kernel &Kr = kernel(K);
      for (; Next < Changes.size() && Changes[Next].first <= Kr.start_ns(); ++Next) {
        // Named copies: clang before 16 does not let a lambda capture structured bindings.
        const int Delta = Changes[Next].second.first;
        const deepum::v1::Allocation *A = Changes[Next].second.second;
        if (!spend(1 + usedBlocksIn(Used, A->address(), allocationEnd(*A))))
          break;
        forBlocks(*A, [&](uint32_t B) {
          auto &L = Live[B];
          if (Delta > 0) {
            if (spend(1))
              L.push_back(A);
          } else if (spend(L.size())) {
            if (auto It = std::find(L.begin(), L.end(), A); It != L.end())
              L.erase(It);
          }
        });
      }
      Touches.clear();
      if (Kr.tensors_size() != 0)
        touchesOfTensors(K, Touches);
      else
        touchesOfBlocks(K, Live, Touches);
      if (OverBudget) {
        // Too costly to count: the bounds count compute only.
        DW.reset();
        W.DataOverBudget = true;
        return;
      }
      UseOf.clear();
      addDataUses(Touches);
      DW->UseBegin.push_back(static_cast<uint32_t>(DW->Uses.size()));
    }
    DW->DeadBegin.assign(Count + 1, 0);
    // Inputs: the host writes their pieces when they are allocated.
    std::vector<std::vector<BlockUse>> HostAt(Count);
    for (const deepum::v1::Allocation &A : P.allocations()) {
      if (A.role() != deepum::v1::ALLOCATION_ROLE_INPUT)
        continue;
      auto S = Slots.find(dataOf(A.id()));
      if (S == Slots.end())
        continue;
      const bool InIteration = A.alloc_time_ns() >= IterBegin && A.alloc_time_ns() <= IterEnd;
      const bool LiveAcross =
          A.alloc_time_ns() < IterBegin && (!A.freed() || A.free_time_ns() > IterEnd);
      if (!InIteration && !LiveAcross)
        continue;
      const uint32_t Pos =
          InIteration ? static_cast<uint32_t>(std::lower_bound(Starts.begin(), Starts.end(),
                                                               A.alloc_time_ns()) -
                                              Starts.begin()) %
                            Count
                      : 0;
      for (uint32_t B : SlotBlocks[S->second])
        HostAt[Pos].push_back({B, AllPages, Access::Write});
    }
    DW->HostWriteBegin.push_back(0);
    for (auto &L : HostAt) {
      DW->HostWrites.insert(DW->HostWrites.end(), L.begin(), L.end());
      DW->HostWriteBegin.push_back(static_cast<uint32_t>(DW->HostWrites.size()));
    }
    // A piece holds nothing before its allocation is made and after it is
    // freed (the events' positions): either ends what it held. (An
    // allocation made in the iteration and freed in the next one has no
    // free here: its allocation ends the contents of the iteration before.
    // One stamped at the first launch's start counts as made before the
    // iteration, as the planner orders it.)
    std::vector<std::vector<uint32_t>> DeathsOf(DW->UmBlocks.size());
    for (const AllocationEvent &E : Events) {
      if (E.Delta > 0 && E.A->alloc_time_ns() <= IterBegin)
        continue;
      auto S = Slots.find(dataOf(E.A->id()));
      if (S != Slots.end())
        for (uint32_t B : SlotBlocks[S->second])
          DeathsOf[B].push_back(E.Pos % Count);
    }
    for (auto &Dth : DeathsOf)
      std::sort(Dth.begin(), Dth.end());
    markFresh(*DW, [&](uint32_t B, unsigned) -> const std::vector<uint32_t> & {
      return DeathsOf[B];
    });
    W.Data = std::move(DW);
  }

  /// W.FreshMasks from the pages' deaths (markFresh).
  void computeFreshMasks(const std::vector<std::vector<uint32_t>> &DeathsOf) {
    markFresh(W, [&](uint32_t B, unsigned Page) -> const std::vector<uint32_t> & {
      return DeathsOf[static_cast<size_t>(B) * Engine::PagesPerBlock + Page];
    });
  }

  const deepum::v1::Profile &P;
  const uint32_t First, Count;
  Workload W;
  // Keys from the file (UM blocks, allocation ids) are any uint64: not
  // DenseMaps, which reserve 2^64-1 and 2^64-2 for themselves.
  std::unordered_map<uint64_t, uint32_t> Dense; // UM block -> dense id
  std::unordered_map<uint64_t, const deepum::v1::Allocation *> Allocs;
  std::map<uint64_t, size_t> ObjectOf; // allocation id -> object (sorted: deterministic)
  bool HaveTensors = false;
  std::vector<uint64_t> Starts; // kernel start times
  BlockIndex Used;
  uint64_t IterBegin = 0, IterEnd = 0;
  std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> UseSpan; // id -> first, last
  std::vector<AllocationEvent> Events;
  // The data workload being built (buildData).
  std::shared_ptr<Workload> DW;
  // Carried in -> made (pairAcrossTheMark).
  std::unordered_map<uint64_t, uint64_t> SameAddress, SameData;
  std::unordered_map<uint64_t, uint32_t> Slots;            // data's allocation id -> slot
  std::vector<std::vector<uint32_t>> SlotBlocks;            // slot -> its dense blocks
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> PieceBlocks; // (slot, UM block) -> block
  std::unordered_map<uint32_t, uint32_t> UseOf;             // block -> use of this kernel
  // The cost of building it, against DataBudget: list entries scanned and
  // touches made, and 8-byte words kept (a use; a piece block and its pages).
  static constexpr uint64_t kUseWords = 3, kPieceBlockWords = 24;
  uint64_t Visits = 0, Work = 0, DataBudget = 0;
  bool OverBudget = false;
  /// Charges N steps; false (and OverBudget) once past the budget.
  bool spend(uint64_t N) {
    Work += N;
    OverBudget = OverBudget || Work > DataBudget;
    return !OverBudget;
  }
};

} // namespace

llvm::Expected<Workload>
detail::workloadFromProfile(const deepum::v1::Profile &P,
                            std::optional<std::pair<uint32_t, uint32_t>> Range) {
  auto [First, Count] = Range ? *Range : steadyIteration(P);
  if (Count == 0 || First + Count > static_cast<uint64_t>(P.kernels_size()))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "the profile has no kernels to simulate");
  const uint64_t UmBlockBytes = P.um_block_bytes() ? P.um_block_bytes() : kUmBlockBytes;
  if (UmBlockBytes != kUmBlockBytes)
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "um_block_bytes is not 2 MiB; the simulator models 2 MiB blocks");
  return ProfileFlattener(P, First, Count).flatten();
}

llvm::Expected<Workload> detail::workloadFromPlan(const deepum::v1::Plan &Plan,
                                                  const deepum::v1::Profile &P,
                                                  llvm::StringRef PlanName,
                                                  llvm::StringRef ProfileName) {
  // The iteration the plan was compiled from, found by its launch sequence.
  auto Range = planIteration(Plan, P, PlanName, ProfileName);
  if (!Range)
    return Range.takeError();
  auto [First, Count] = *Range;
  Workload W;
  W.Kernels = Count;
  W.FirstKernel = First;
  std::vector<const deepum::v1::BlockChain *> ChainAt(Count, nullptr);
  for (const deepum::v1::BlockChain &C : Plan.block_chains()) {
    if (C.position() >= Count)
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0}: block chain at position {1}, past the {2} launches", PlanName,
                        C.position(), Count)
              .str());
    if (C.modes_size() != 0 && C.modes_size() != C.blocks_size())
      return llvm::createStringError(
          llvm::inconvertibleErrorCode(),
          llvm::formatv("{0}: block chain at position {1} has {2} blocks but {3} modes", PlanName,
                        C.position(), C.blocks_size(), C.modes_size())
              .str());
    ChainAt[C.position()] = &C;
  }
  std::unordered_map<uint64_t, uint32_t> Dense; // arena blocks from the plan: any uint64
  auto idOf = [&](uint64_t Block) {
    auto [It, New] = Dense.try_emplace(Block, static_cast<uint32_t>(W.UmBlocks.size()));
    if (New)
      W.UmBlocks.push_back(Block);
    return It->second;
  };
  W.UseBegin.push_back(0);
  for (uint32_t K = 0; K < Count; ++K) {
    const deepum::v1::Kernel &Kr = P.kernels(static_cast<int>(First + K));
    W.DurationNs.push_back(deepum::format::computeNs(Kr));
    W.LaunchIds.push_back(Plan.position_ids(static_cast<int>(K)));
    if (const deepum::v1::BlockChain *C = ChainAt[K]) {
      // Blocks in first-touch order may repeat in a chain; merge them.
      size_t Begin = W.Uses.size();
      for (int I = 0; I < C->blocks_size(); ++I) {
        Access M = C->modes_size() ? accessOf(C->modes(I)) : Access::ReadWrite;
        uint32_t B = idOf(C->blocks(I));
        auto Same = std::find_if(W.Uses.begin() + static_cast<long>(Begin), W.Uses.end(),
                                 [&](const BlockUse &U) { return U.Block == B; });
        if (Same != W.Uses.end()) {
          Same->Mode = merge(Same->Mode, M);
          size_t Index = static_cast<size_t>(Same - W.Uses.begin());
          if (Same->Mode != Access::Read) // only block modes here: READ alone is sure
            W.ReadMasks[Index] = 0;
          W.WriteMasks[Index] = Same->Mode == Access::Write ? AllPages : 0;
        } else {
          W.Uses.push_back({B, AllPages, M});
          W.ReadMasks.push_back(M == Access::Read ? AllPages : 0);
          W.WriteMasks.push_back(M == Access::Write ? AllPages : 0);
        }
      }
    }
    W.UseBegin.push_back(static_cast<uint32_t>(W.Uses.size()));
  }
  W.DeadBegin.assign(Count + 1, 0);
  W.HostWriteBegin.assign(Count + 1, 0);
  return W;
}

std::pair<uint64_t, uint64_t> detail::transferBoundBytes(const Workload &W,
                                                         uint64_t CapacityBytes) {
  // HtoD: at the boundary before launch p, a page is live if its next use
  // (cyclically: the steady state repeats) reads it (Workload::ReadMasks:
  // a page only overwritten is not live, whatever its block's mode says). At most the capacity is
  // on the GPU there; every other live page must cross the link before that
  // use, within one iteration. So per iteration, HtoD >= max_p live(p) - C.
  // DtoH: pages written in the iteration and read first in the next must
  // survive it; at most the capacity stays on the GPU.
  const uint32_t K = W.Kernels;
  std::vector<int64_t> Diff(K + 1, 0);
  std::vector<uint32_t> Written(W.UmBlocks.size(), 0), NeedsIn(W.UmBlocks.size(), 0);
  // Uses of each block in position order.
  struct Touch {
    uint32_t Pos, Pages, Read, Write;
  };
  std::vector<std::vector<Touch>> ByBlock(W.UmBlocks.size());
  for (uint32_t P = 0; P < K; ++P)
    for (uint32_t I = W.UseBegin[P]; I < W.UseBegin[P + 1]; ++I)
      ByBlock[W.Uses[I].Block].push_back(
          {P, W.Uses[I].PageMask, W.boundReads(I), W.WriteMasks[I]});
  auto liveRange = [&](uint32_t From, uint32_t To, int64_t Bytes) { // boundaries From+1 .. To, cyclic
    if (From < To) {
      Diff[From + 1] += Bytes;
      Diff[To + 1] -= Bytes;
    } else { // wraps: From+1 .. K-1 and 0 .. To
      Diff[From + 1] += Bytes;
      Diff[K] -= Bytes;
      Diff[0] += Bytes;
      Diff[To + 1] -= Bytes;
    }
  };
  std::vector<std::pair<uint32_t, bool>> Seq; // position, reads the page
  for (size_t B = 0; B < ByBlock.size(); ++B) {
    const auto &Uses = ByBlock[B];
    for (unsigned Page = 0; Page < Engine::PagesPerBlock; ++Page) {
      uint32_t Bit = 1u << Page;
      Seq.clear();
      for (const Touch &T : Uses)
        if (T.Pages & Bit) {
          Seq.push_back({T.Pos, (T.Read & Bit) != 0});
          if (T.Write & Bit)
            Written[B] |= Bit;
        }
      if (Seq.empty())
        continue;
      if (Seq.front().second)
        NeedsIn[B] |= Bit;
      const int64_t Bytes = static_cast<int64_t>(W.pageBytes(static_cast<uint32_t>(B), Page));
      for (size_t I = 0; I < Seq.size(); ++I) {
        const auto &Next = Seq[(I + 1) % Seq.size()];
        if (Next.second)
          liveRange(Seq[I].first, Next.first, Bytes);
      }
    }
  }
  int64_t Live = 0, MaxLive = 0;
  for (uint32_t P = 0; P < K; ++P) {
    Live += Diff[P];
    MaxLive = std::max(MaxLive, Live);
  }
  uint64_t In = static_cast<uint64_t>(MaxLive), Out = 0;
  for (size_t B = 0; B < ByBlock.size(); ++B)
    for (uint32_t M = NeedsIn[B] & Written[B]; M; M &= M - 1)
      Out += W.pageBytes(static_cast<uint32_t>(B), static_cast<unsigned>(std::countr_zero(M)));
  return {In > CapacityBytes ? In - CapacityBytes : 0,
          Out > CapacityBytes ? Out - CapacityBytes : 0};
}

namespace {

/// A stretch of boundaries (After, Until] where a page is needed: its next
/// use, at Until, reads; its last write before it is at LastWrite (INT64_MIN:
/// never written). Positions count launches, cyclically over two periods.
struct Need {
  int64_t After, Until, LastWrite;
  int64_t Bytes; // of the pages of one block with this same history
};

/// The time the GPU must stall between launches, whatever the policy.
///
/// Take launch k's end and launch i's start, k < i. Between them the GPU
/// computes launches k+1..i-1 and stalls in the gaps before launches
/// k+1..i. The engine keeps a launch's pages on the GPU while it runs
/// (Engine::pinKernelBlocks), so:
///  - at k's end, k's pages fill the GPU but for Cap - held(k); the pages
///    that launches k+1..i read, k did not touch, and that are not there
///    cross the link before i starts (fetches);
///  - at i's start, i's pages fill it but for Cap - held(i); the pages
///    written since k began, read after i and not by it, that are still
///    there took room, and the rest were written back after k's end
///    (write-backs; each after its write, so after k's end).
/// The two directions overlap each other but not compute; what the longer
/// leaves over the compute of k+1..i-1 is stalled in those gaps: r(k, i).
/// For k = i - 1 it is the gap before i alone.
///
/// The least stall over the iteration is the longest path through the gaps
/// with these windows (i - k up to 64 launches; fewer on very long
/// iterations): G(i) = max over k of G(k) + r(k, i). The path's windows are
/// disjoint; a stretch of launches stalls at least r in each window it
/// contains, and the single-gap stall in each gap of a window it cuts.
///
/// The steady state is a cycle: where the profile marks the iteration's
/// first launch is no boundary of the GPU's. A path starting at gap 0 never
/// has a window across it, so the path is also tried from each of the W - 1
/// gaps before it where a window across gap 0 starts that stalls more than
/// its gaps alone, within a budget of window evaluations; the longest is
/// kept.
class Stalls {
public:
  /// Compute[i]: the compute of launches 0..i-1 (at least K + 1 entries).
  Stalls(uint32_t Kernels, const std::vector<double> &Compute, const std::vector<Need> &Needs,
         const std::vector<int64_t> &Held, double Cap, double ByteNs, double OutByteNs)
      : K(Kernels) {
    // Windows of up to 64 launches, fewer on iterations of over 128k launches
    // so that the tables stay within 2^23 entries each (128 MiB together).
    const int64_t Window =
        std::clamp<int64_t>((int64_t{1} << 23) / K, 1, std::min<int64_t>(K, 64));
    const int64_t Width = Window + 2;
    // In[k][d], Out[k][d]: the bytes fetched / written back between k's end
    // and the start of k + d (before room is counted).
    std::vector<int64_t> In(static_cast<size_t>(K * Width), 0), Out(In.size(), 0);
    auto at = [&](std::vector<int64_t> &V, int64_t At, int64_t D) -> int64_t & {
      return V[static_cast<size_t>(At * Width + D)];
    };
    for (const Need &N : Needs)
      // Windows start in [0, K) and may end in the next period: needs from
      // the period before, this one and (write-backs) the next.
      for (int64_t Shift : {-K, int64_t{0}, K}) {
        const int64_t A = N.After + Shift, U = N.Until + Shift;
        const int64_t Bytes = N.Bytes;
        // Fetched for the read at U when k lies strictly between the uses.
        for (int64_t At = std::max({A + 1, U - Window, int64_t{0}}); At <= std::min(U - 1, K - 1);
             ++At) {
          at(In, At, U - At) += Bytes;
          at(In, At, Window + 1) -= Bytes;
        }
        // Written back, when the last write (at or before A) is not before
        // k and i lies strictly between the uses.
        if (N.LastWrite == INT64_MIN)
          continue;
        for (int64_t At = std::max<int64_t>(A + 1 - Window, 0);
             At <= std::min(N.LastWrite + Shift, K - 1); ++At) {
          const int64_t D0 = std::max<int64_t>(1, A + 1 - At), D1 = std::min(Window, U - 1 - At);
          if (D0 > D1)
            continue;
          at(Out, At, D0) += Bytes;
          at(Out, At, D1 + 1) -= Bytes;
        }
      }
    for (int64_t At = 0; At < K; ++At)
      for (int64_t D = 1; D <= Window; ++D) {
        at(In, At, D) += at(In, At, D - 1);
        at(Out, At, D) += at(Out, At, D - 1);
      }
    auto mod = [&](int64_t I) { return static_cast<size_t>(((I % K) + K) % K); };
    auto held = [&](int64_t I) { return static_cast<double>(Held[mod(I)]); };
    auto window = [&](int64_t At, int64_t I) { // r(At, I), At < I <= At + Window
      if (At < 0) { // the same window one period on
        At += K;
        I += K;
      }
      if (std::max(held(At), held(I)) > Cap)
        return 0.0; // a launch that does not fit never runs: nothing to say
      const double Ns =
          std::max({0.0, (static_cast<double>(at(In, At, I - At)) - (Cap - held(At))) * ByteNs,
                    (static_cast<double>(at(Out, At, I - At)) - (Cap - held(I))) * OutByteNs});
      return Ns - (Compute[static_cast<size_t>(I)] - Compute[static_cast<size_t>(At + 1)]);
    };
    Single.assign(static_cast<size_t>(K), 0);
    for (int64_t I = 1; I <= K; ++I)
      Single[mod(I)] = std::max(0.0, window(I - 1, I));
    // A path whose window across gap 0 stalls no more than that window's
    // gaps alone does no better than one from gap 0 with those gaps: only
    // starts of windows across gap 0 that stall more need a path of their own.
    std::vector<double> SingleUpTo(static_cast<size_t>(Window) + 1, 0); // gaps 1..D
    for (int64_t D = 1; D <= Window; ++D)
      SingleUpTo[static_cast<size_t>(D)] = SingleUpTo[static_cast<size_t>(D - 1)] + Single[mod(D)];
    std::vector<int64_t> Starts = {0};
    double Alone = 0; // the single-gap stalls of gaps Start+1..0
    for (int64_t Start = -1; Start > -Window; --Start) {
      Alone += Single[mod(Start + 1)];
      for (int64_t I = 1; I <= Start + Window; ++I)
        if (window(Start, I) > Alone + SingleUpTo[static_cast<size_t>(I)] + 1e-9) {
          Starts.push_back(Start);
          break;
        }
    }
    Starts.resize(static_cast<size_t>(
        std::clamp<int64_t>(kWindowBudget / (K * Window), 1, static_cast<int64_t>(Starts.size()))));
    // The longest path over gaps C+1..C+K (gap C+K is gap C of the next
    // period), node X standing for gap C+X, from each start C kept.
    std::vector<double> G(static_cast<size_t>(K) + 1), BestG;
    std::vector<int64_t> From(G.size()), BestFrom;
    int64_t C = 0;
    for (int64_t Start : Starts) {
      G[0] = 0;
      for (int64_t X = 1; X <= K; ++X) {
        double Best = G[static_cast<size_t>(X - 1)] + Single[mod(Start + X)];
        int64_t Arg = X - 1;
        for (int64_t Y = X - 2; Y >= std::max<int64_t>(0, X - Window); --Y)
          if (double V = G[static_cast<size_t>(Y)] + window(Start + Y, Start + X); V > Best) {
            Best = V;
            Arg = Y;
          }
        G[static_cast<size_t>(X)] = Best;
        From[static_cast<size_t>(X)] = Arg;
      }
      if (BestG.empty() || G.back() > BestG.back()) {
        BestG = G;
        BestFrom = From;
        C = Start;
      }
    }
    // The path's windows, by gap over [0, 2K] (the period's copies).
    Lo.assign(2 * static_cast<size_t>(K) + 1, 0);
    Hi.assign(Lo.size(), 0);
    std::vector<double> R(Lo.size(), 0);
    for (int64_t I = K; I > 0; I = BestFrom[static_cast<size_t>(I)]) {
      const int64_t First = BestFrom[static_cast<size_t>(I)] + 1;
      const double V = BestG[static_cast<size_t>(I)] - BestG[static_cast<size_t>(First - 1)];
      for (int64_t Gap = C + First; Gap <= C + I; ++Gap)
        for (int64_t Shift : {-K, int64_t{0}, K, 2 * K}) {
          const int64_t At = Gap + Shift;
          if (At < 0 || At > 2 * K)
            continue;
          Lo[static_cast<size_t>(At)] = C + First + Shift;
          Hi[static_cast<size_t>(At)] = C + I + Shift;
          if (Gap == C + I)
            R[static_cast<size_t>(At)] = V;
        }
    }
    SingleSum.assign(Lo.size() + 1, 0);
    WindowSum.assign(Lo.size() + 1, 0);
    for (size_t Gap = 0; Gap < Lo.size(); ++Gap) {
      SingleSum[Gap + 1] = SingleSum[Gap] + Single[Gap % static_cast<size_t>(K)];
      WindowSum[Gap + 1] = WindowSum[Gap] + R[Gap];
    }
    PeriodNs = BestG.back();
  }

  /// The least stall in gaps A..B (0 <= A, B <= 2K; none when A > B).
  double in(int64_t A, int64_t B) const {
    if (A > B)
      return 0;
    auto singles = [&](int64_t X, int64_t Y) {
      return SingleSum[static_cast<size_t>(Y + 1)] - SingleSum[static_cast<size_t>(X)];
    };
    // The windows ending inside, less the one that starts before A; the
    // gaps of the windows cut at either end count alone.
    double Sum = WindowSum[static_cast<size_t>(B + 1)] - WindowSum[static_cast<size_t>(A)];
    const size_t Left = static_cast<size_t>(A), Right = static_cast<size_t>(B);
    if (Lo[Left] < A) {
      if (Hi[Left] <= B)
        Sum -= WindowSum[static_cast<size_t>(Hi[Left] + 1)] -
               WindowSum[static_cast<size_t>(Hi[Left])];
      Sum += singles(A, std::min(Hi[Left], B));
    }
    if (Hi[Right] > B && Lo[Right] >= A)
      Sum += singles(Lo[Right], B);
    return Sum;
  }

  /// The least stall over one period.
  double period() const { return PeriodNs; }

  /// Window evaluations the paths from gaps before gap 0 may take together
  /// (each path takes K x W).
  static constexpr int64_t kWindowBudget = int64_t{1} << 25;

private:
  int64_t K;
  std::vector<double> Single;
  std::vector<int64_t> Lo, Hi;
  std::vector<double> SingleSum, WindowSum;
  double PeriodNs = 0;
};

} // namespace

std::vector<int64_t> detail::heldPages(const Workload &W) {
  std::vector<int64_t> Held(W.Kernels, 0);
  for (uint32_t P = 0; P < W.Kernels; ++P)
    for (uint32_t I = W.UseBegin[P]; I < W.UseBegin[P + 1]; ++I)
      Held[P] += std::popcount(W.Uses[I].PageMask);
  return Held;
}

std::vector<int64_t> detail::heldBytes(const Workload &W) {
  if (!W.HeldBytes.empty())
    return std::vector<int64_t>(W.HeldBytes.begin(), W.HeldBytes.end());
  std::vector<int64_t> Held(W.Kernels, 0);
  for (uint32_t P = 0; P < W.Kernels; ++P)
    for (uint32_t I = W.UseBegin[P]; I < W.UseBegin[P + 1]; ++I)
      for (uint32_t M = W.Uses[I].PageMask; M; M &= M - 1)
        Held[P] += static_cast<int64_t>(
            W.pageBytes(W.Uses[I].Block, static_cast<unsigned>(std::countr_zero(M))));
  return Held;
}

double detail::cutBoundNs(const Workload &W, uint64_t CapacityBytes, double LinkBytesPerSecond,
                          double DeviceToHostBytesPerSecond) {
  const uint32_t K = W.Kernels;
  if (K == 0)
    return 0;
  // The steady state repeats with period T. Take two launch boundaries q and
  // p (cyclically; S1 = the launches q..p-1, S2 = p..q-1 of the next period,
  // so T = time(S1) + time(S2)). At p at most C pages are on the GPU, in
  // flight included. A page whose next use after p reads live contents
  // (Workload::boundReads) and that is not there:
  //  - was written back during S1 if its last write before p lies in S1
  //    (after that write, before p): the DtoH engine worked that long in S1;
  //  - comes back during S2 if that read lies in S2 (after p, before q).
  // The policy keeps the C pages that spare it most; a page in both sets
  // spares both directions. So T >= max(compute(S1), DtoH(S1)) +
  // max(compute(S2), HtoD(S2)), minimised over the C kept pages, for every
  // pair (q, p). q = the iteration's first launch is the single cut of
  // forward/backward training (activations out in the forward pass, back
  // in the backward pass); other q charge the previous iteration's late
  // writes (the optimizer step's parameters) against the fetches after p.
  // Every q is tried for iterations of up to 64 launches, an even grid of 64
  // otherwise (on gpt2-medium at 2x, a grid of 256 raises the bound 0.4%).
  //
  // The instant at p is taken as launch p-1 completes (the compute on either
  // side is the same). The engine keeps every page a launch touches on the
  // GPU for the whole launch, whatever the policy (pinned: no victim; an
  // eviction or discard issued meanwhile frees its room only when the launch
  // ends), so all the pages of p-1 take room then: those read later are kept
  // whether they spare a transfer or not, and only the capacity left is the
  // policy's to choose.
  std::vector<uint32_t> Qs;
  const uint32_t Grid = 64;
  for (uint32_t I = 0, N = std::min(K, Grid); I < N; ++I)
    Qs.push_back(static_cast<uint32_t>(static_cast<uint64_t>(I) * K / N));

  // Per page, its uses in position order: (position, reads live contents, writes).
  struct Touch {
    int64_t Pos;
    bool Read, Write;
  };
  std::vector<Need> Needs;
  {
    std::vector<std::vector<std::pair<uint32_t, uint32_t>>> ByBlock(W.UmBlocks.size());
    for (uint32_t P = 0; P < K; ++P)
      for (uint32_t I = W.UseBegin[P]; I < W.UseBegin[P + 1]; ++I)
        ByBlock[W.Uses[I].Block].push_back({P, I});
    std::vector<Touch> Seq, PrevSeq;
    auto same = [](const std::vector<Touch> &X, const std::vector<Touch> &Y) {
      return X.size() == Y.size() && std::equal(X.begin(), X.end(), Y.begin(), [](auto &A, auto &B) {
               return A.Pos == B.Pos && A.Read == B.Read && A.Write == B.Write;
             });
    };
    for (uint32_t B = 0; B < ByBlock.size(); ++B) {
      const auto &Uses = ByBlock[B];
      uint32_t Pages = 0;
      for (auto [P, I] : Uses)
        Pages |= W.Uses[I].PageMask;
      size_t PrevBegin = Needs.size();
      PrevSeq.clear();
      for (unsigned Page = 0; Page < Engine::PagesPerBlock; ++Page) {
        const uint32_t Bit = 1u << Page;
        if (!(Pages & Bit))
          continue;
        const int64_t PageBytes = static_cast<int64_t>(W.pageBytes(B, Page));
        Seq.clear();
        for (auto [P, I] : Uses)
          if (W.Uses[I].PageMask & Bit)
            Seq.push_back({P, (W.boundReads(I) & Bit) != 0, (W.WriteMasks[I] & Bit) != 0});
        if (!PrevSeq.empty() && same(Seq, PrevSeq)) { // the usual case: whole-block tensors
          for (size_t N = PrevBegin; N < Needs.size(); ++N)
            Needs[N].Bytes += PageBytes;
          continue;
        }
        std::swap(PrevSeq, Seq);
        PrevBegin = Needs.size();
        const std::vector<Touch> &Hist = PrevSeq;
        // The last write before the first use, from the previous period.
        int64_t LastWrite = INT64_MIN;
        for (const Touch &T : Hist)
          if (T.Write)
            LastWrite = T.Pos - K;
        for (size_t I = 0; I < Hist.size(); ++I) {
          if (Hist[I].Write)
            LastWrite = Hist[I].Pos;
          const bool Wraps = I + 1 == Hist.size();
          const Touch &Next = Hist[Wraps ? 0 : I + 1];
          if (Next.Read)
            Needs.push_back({Hist[I].Pos, Next.Pos + (Wraps ? K : 0), LastWrite, PageBytes});
        }
      }
    }
  }

  // Pages of different blocks with one history (every block of a large
  // tensor) are one need: the cut and the stall windows only add their
  // bytes, in integers, so merging them changes no sum, and the 64 x 5 cuts
  // below each walk the needs once.
  std::sort(Needs.begin(), Needs.end(), [](const Need &X, const Need &Y) {
    return std::tie(X.After, X.Until, X.LastWrite) < std::tie(Y.After, Y.Until, Y.LastWrite);
  });
  size_t Merged = 0;
  for (size_t I = 0; I < Needs.size(); ++I) {
    if (Merged > 0 && Needs[Merged - 1].After == Needs[I].After &&
        Needs[Merged - 1].Until == Needs[I].Until &&
        Needs[Merged - 1].LastWrite == Needs[I].LastWrite) {
      Needs[Merged - 1].Bytes += Needs[I].Bytes;
      continue;
    }
    Needs[Merged++] = Needs[I];
  }
  Needs.resize(Merged);

  const std::vector<int64_t> HeldAll = heldBytes(W);
  // Fetches run at the host-to-device rate, write-backs at the device-to-host
  // one, each direction on its own engines.
  const double ByteNs = 1e9 / LinkBytesPerSecond, OutByteNs = 1e9 / DeviceToHostBytesPerSecond;
  const double Cap = static_cast<double>(CapacityBytes / kUmPageBytes * kUmPageBytes);

  // Compute over two periods, and the stalls a stretch of launches cannot
  // avoid (gaps [A, B]: those before launches A..B).
  std::vector<double> Prefix(2 * static_cast<size_t>(K) + 1, 0);
  for (uint32_t I = 0; I < 2 * K; ++I)
    Prefix[I + 1] = Prefix[I] + static_cast<double>(W.DurationNs[I % K]);
  const Stalls Stall(K, Prefix, Needs, HeldAll, Cap, ByteNs, OutByteNs);

  // A third instant sharpens the cut: the start of a launch j after p.
  // Pages j or a launch before it reads must be on the GPU by then, so their
  // fetches fit between p and j's start (S2a); j and the launches after it
  // (S2b) take at least their compute and gaps beside. j = the launch before
  // q is the plain cut with launch q-1's compute moved behind the fetches.
  // j is tried at the iteration's longest launches, where a fetch deadline
  // leaves the most compute unable to hide it.
  std::vector<uint32_t> Deadlines(K);
  for (uint32_t J = 0; J < K; ++J)
    Deadlines[J] = J;
  const size_t LongLaunches = std::min<size_t>(K, 4);
  std::partial_sort(Deadlines.begin(), Deadlines.begin() + static_cast<long>(LongLaunches),
                    Deadlines.end(), [&](uint32_t X, uint32_t Y) {
                      return W.DurationNs[X] != W.DurationNs[Y] ? W.DurationNs[X] > W.DurationNs[Y]
                                                                : X < Y;
                    });
  Deadlines.resize(LongLaunches);

  double Best = Prefix[K] + Stall.period();
  std::vector<int64_t> DOut(K + 1), DIn(K + 1), DBoth(K + 1);
  // Pages of the launch before boundary t that are needed across it, by set:
  // the needs whose stretch starts at t.
  std::vector<int64_t> HeldOut(K), HeldIn(K), HeldBoth(K);
  // Boundaries p = Q + t, t in [0, J - Q]: S1 = [Q, p), S2a = [p, J) with the
  // gap before J, S2b = [J, Q + K) less that gap.
  auto cut = [&](uint32_t Q, int64_t J) {
    std::fill(DOut.begin(), DOut.end(), 0);
    std::fill(DIn.begin(), DIn.end(), 0);
    std::fill(DBoth.begin(), DBoth.end(), 0);
    for (auto *V : {&HeldOut, &HeldIn, &HeldBoth})
      std::fill(V->begin(), V->end(), 0);
    const int64_t Lo0 = Q, Hi0 = J;
    for (const Need &N : Needs)
      for (int64_t Shift : {-static_cast<int64_t>(K), int64_t{0}, static_cast<int64_t>(K)}) {
        const int64_t Lo = std::max(N.After + Shift + 1, Lo0);
        const int64_t Hi = std::min(N.Until + Shift, Hi0);
        if (Lo > Hi)
          continue;
        const bool Out = N.LastWrite != INT64_MIN && N.LastWrite + Shift >= Lo0;
        const bool In = N.Until + Shift <= Hi0;
        auto add = [&](std::vector<int64_t> &D) {
          D[static_cast<size_t>(Lo - Lo0)] += N.Bytes;
          D[static_cast<size_t>(Hi - Lo0 + 1)] -= N.Bytes;
        };
        if (Out)
          add(DOut);
        if (In)
          add(DIn);
        if (Out && In)
          add(DBoth);
        if (N.After + Shift + 1 == Lo) { // last used by the launch just before Lo
          const size_t T = static_cast<size_t>(Lo - Lo0);
          HeldOut[T] += Out && !In ? N.Bytes : 0;
          HeldIn[T] += In && !Out ? N.Bytes : 0;
          HeldBoth[T] += Out && In ? N.Bytes : 0;
        }
      }
    const double Tail =
        Prefix[Q + K] - Prefix[static_cast<size_t>(J)] + Stall.in(J + 1, Q + K - 1);
    int64_t Out = 0, In = 0, Both = 0;
    for (uint32_t T = 0; T <= static_cast<uint32_t>(J - Q); ++T) {
      Out += DOut[T];
      In += DIn[T];
      Both += DBoth[T];
      const int64_t P = static_cast<int64_t>(Q) + T;
      const double Before = Prefix[P] - Prefix[Q] + Stall.in(Q, P - 1),
                   After = Prefix[static_cast<size_t>(J)] - Prefix[P] + Stall.in(P, J);
      // The bytes launch p-1 holds first.
      const int64_t Held = HeldAll[(Q + T + K - 1) % K];
      const bool Holds = static_cast<double>(Held) <= Cap;
      const double Free = Holds ? Cap - static_cast<double>(Held) : Cap;
      const int64_t HB = Holds ? HeldBoth[T] : 0, HO = Holds ? HeldOut[T] : 0,
                    HI = Holds ? HeldIn[T] : 0;
      // Then keep bytes in both sets, then spend what is left of the
      // capacity on whichever direction is still above its compute.
      const double A = static_cast<double>(Both - HB);
      const double KeptBoth = std::min(A, Free), Left = Free - KeptBoth;
      const double OutNs = (static_cast<double>(Out - HB - HO) - KeptBoth) * OutByteNs;
      const double InNs = (static_cast<double>(In - HB - HI) - KeptBoth) * ByteNs;
      const double OutOnly = static_cast<double>(Out - Both - HO);
      const double InOnly = static_cast<double>(In - Both - HI);
      // A byte kept saves at most the slower direction's time per byte.
      const double Spare = std::min(Left * std::max(ByteNs, OutByteNs),
                                    std::min(std::max(0.0, OutNs - Before), OutOnly * OutByteNs) +
                                        std::min(std::max(0.0, InNs - After), InOnly * ByteNs));
      const double Cand = std::max(Before, OutNs) + std::max(After, InNs) + Tail - Spare;
      Best = std::max(Best, Cand);
    }
  };
  for (uint32_t Q : Qs) {
    cut(Q, static_cast<int64_t>(Q) + K - 1);
    for (uint32_t J : Deadlines)
      if (J != (Q + K - 1) % K)
        cut(Q, Q + (J + K - Q) % K);
  }
  return Best;
}

Schedule detail::makeSchedule(uint32_t Kernels, std::vector<std::pair<uint32_t, Command>> Items) {
  std::stable_sort(Items.begin(), Items.end(),
                   [](const auto &A, const auto &B) { return A.first < B.first; });
  Schedule S;
  S.Begin.assign(Kernels + 1, 0);
  size_t I = 0;
  for (uint32_t P = 0; P < Kernels; ++P) {
    S.Begin[P] = static_cast<uint32_t>(S.Cmds.size());
    for (; I < Items.size() && Items[I].first == P; ++I)
      S.Cmds.push_back(Items[I].second);
  }
  S.Begin[Kernels] = static_cast<uint32_t>(S.Cmds.size());
  return S;
}
