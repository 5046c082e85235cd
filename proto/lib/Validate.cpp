//===- Validate.cpp - Semantic checks of profiles and plans -----------------===//
//
// Protobuf accepts any bytes that happen to parse; these checks reject what a
// planner, simulator or executor could not trust. Each message names one
// record and one problem.
//
//===----------------------------------------------------------------------===//
#include "deepum/base/Error.h"
#include "deepum/format/Format.h"
#include "deepum/format/PlanWire.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <unordered_map>
#include <vector>

using namespace llvm;
using namespace deepum::v1;

namespace deepum::format {
namespace {

Error invalid(const Twine &Msg) { return base::makeError(Msg); }

bool isPowerOfTwo(uint64_t V) { return V != 0 && (V & (V - 1)) == 0; }

/// No two allocations may occupy the same bytes while both are live.
Error checkNoLiveOverlap(const Profile &P) {
  struct Event {
    uint64_t Time;
    bool IsFree; // frees sort before allocations at the same time
    int Index;
  };
  std::vector<Event> Events;
  Events.reserve(P.allocations_size() * 2);
  for (int I = 0; I < P.allocations_size(); ++I) {
    const Allocation &A = P.allocations(I);
    Events.push_back({A.alloc_time_ns(), false, I});
    if (A.freed())
      Events.push_back({A.free_time_ns(), true, I});
  }
  std::sort(Events.begin(), Events.end(), [](const Event &L, const Event &R) {
    if (L.Time != R.Time)
      return L.Time < R.Time;
    if (L.IsFree != R.IsFree)
      return L.IsFree;
    return L.Index < R.Index;
  });
  std::map<uint64_t, int> Live; // address -> allocation index
  for (const Event &E : Events) {
    const Allocation &A = P.allocations(E.Index);
    if (E.IsFree) {
      auto It = Live.find(A.address());
      if (It != Live.end() && It->second == E.Index)
        Live.erase(It);
      continue;
    }
    // Freed the instant it was made (a clock that did not advance): live for
    // no time, so it overlaps nothing. Its free sorted first and found nothing.
    if (A.freed() && A.free_time_ns() == A.alloc_time_ns())
      continue;
    uint64_t Begin = A.address(), End = A.address() + A.size_bytes();
    auto Next = Live.lower_bound(Begin);
    if (Next != Live.end() && Next->first < End)
      return invalid("allocation " + Twine(A.id()) + " overlaps live allocation " +
                     Twine(P.allocations(Next->second).id()));
    if (Next != Live.begin()) {
      const Allocation &Prev = P.allocations(std::prev(Next)->second);
      if (Prev.address() + Prev.size_bytes() > Begin)
        return invalid("allocation " + Twine(A.id()) + " overlaps live allocation " +
                       Twine(Prev.id()));
    }
    Live[Begin] = E.Index;
  }
  return Error::success();
}

} // namespace

Error validateProfile(const Profile &P) {
  if (P.format_version() == 0)
    return invalid("missing format_version: not a deepum profile");
  if (P.format_version() != kProfileFormatVersion)
    return invalid("unsupported profile format version " + Twine(P.format_version()) +
                   " (this build reads version " + Twine(kProfileFormatVersion) + ")");
  uint64_t BlockBytes = P.um_block_bytes();
  if (!isPowerOfTwo(BlockBytes) || BlockBytes < kUmPageBytes)
    return invalid("um_block_bytes " + Twine(BlockBytes) +
                   " is not a power of two of at least 64 KiB");
  // Protobuf's JSON reads "NaN" and "Infinity" for a double; deepum-plan
  // without --device takes this rate for its cost model.
  const double Link = P.device().link_bytes_per_second();
  if (!(Link >= 0) || !std::isfinite(Link))
    return invalid("device.link_bytes_per_second is " +
                   (std::isnan(Link)   ? std::string("nan")
                    : std::isinf(Link) ? std::string(Link > 0 ? "inf" : "-inf")
                                       : formatv("{0}", Link).str()) +
                   ", not a finite rate of at least 0 bytes per second");

  // Ids are any uint64: a std::unordered_map, not a DenseMap, which reserves
  // two keys (2^64-1 and 2^64-2) for itself.
  std::unordered_map<uint64_t, int> AllocIndex;
  AllocIndex.reserve(static_cast<size_t>(P.allocations_size()));
  for (int I = 0; I < P.allocations_size(); ++I) {
    const Allocation &A = P.allocations(I);
    if (!AllocIndex.try_emplace(A.id(), I).second)
      return invalid("allocation id " + Twine(A.id()) + " appears twice");
    if (A.size_bytes() == 0)
      return invalid("allocation " + Twine(A.id()) + " has size 0");
    if (A.address() + A.size_bytes() < A.address())
      return invalid("allocation " + Twine(A.id()) + " wraps around the address space");
    if (A.freed() && A.free_time_ns() < A.alloc_time_ns())
      return invalid("allocation " + Twine(A.id()) + " is freed at " + Twine(A.free_time_ns()) +
                     " ns, before its allocation at " + Twine(A.alloc_time_ns()) + " ns");
  }
  if (Error E = checkNoLiveOverlap(P))
    return E;

  // Address ranges covered by any allocation, merged, to check block accesses.
  std::vector<std::pair<uint64_t, uint64_t>> Ranges;
  Ranges.reserve(P.allocations_size());
  for (const Allocation &A : P.allocations())
    Ranges.emplace_back(A.address(), A.address() + A.size_bytes());
  std::sort(Ranges.begin(), Ranges.end());
  std::vector<std::pair<uint64_t, uint64_t>> Merged;
  for (auto R : Ranges) {
    if (!Merged.empty() && R.first <= Merged.back().second)
      Merged.back().second = std::max(Merged.back().second, R.second);
    else
      Merged.push_back(R);
  }
  auto InsideSomeAllocation = [&](uint64_t Begin, uint64_t End) {
    auto It = std::upper_bound(Merged.begin(), Merged.end(), std::make_pair(Begin, UINT64_MAX));
    if (It != Merged.begin() && std::prev(It)->second > Begin)
      return true;
    return It != Merged.end() && It->first < End;
  };

  uint64_t KernelNs = 0;
  for (int K = 0; K < P.kernels_size(); ++K) {
    const Kernel &Kn = P.kernels(K);
    if (Kn.end_ns() < Kn.start_ns())
      return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") ends before it starts");
    // Summed without overflow: each term is checked against what is left.
    const uint64_t Ns = Kn.end_ns() - Kn.start_ns();
    if (Ns > kMaxProfileKernelNs - KernelNs)
      return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") runs " + Twine(Ns) +
                     " ns: the kernels' durations add up to more than 2^50 ns (13 days), "
                     "corrupt timestamps");
    KernelNs += Ns;
    if (Kn.fault_stall_ns() > Ns)
      return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") waited " +
                     Twine(Kn.fault_stall_ns()) + " ns on page faults but ran only " + Twine(Ns) +
                     " ns");
    // Roofline inputs: counts, so finite and not negative (NaN fails both).
    if (!(Kn.flops() >= 0) || !std::isfinite(Kn.flops()))
      return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") has flops " +
                     formatv("{0}", Kn.flops()).str() + ", not a finite count");
    if (!(Kn.dram_bytes() >= 0) || !std::isfinite(Kn.dram_bytes()))
      return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") has dram_bytes " +
                     formatv("{0}", Kn.dram_bytes()).str() + ", not a finite count");
    uint64_t PrevBlock = 0;
    for (int B = 0; B < Kn.blocks_size(); ++B) {
      uint64_t Block = Kn.blocks(B).block();
      if (B > 0 && Block <= PrevBlock)
        return invalid("kernel " + Twine(K) + " (" + Kn.name() +
                       "): block accesses are not strictly ascending");
      PrevBlock = Block;
      if (Block > UINT64_MAX / BlockBytes)
        return invalid("kernel " + Twine(K) + " (" + Kn.name() + "): block " + Twine(Block) +
                       " is outside the address space");
      if (!InsideSomeAllocation(Block * BlockBytes, (Block + 1) * BlockBytes))
        return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") accesses UM block " +
                       Twine(Block) + " outside every allocation");
    }
    for (const TensorAccess &T : Kn.tensors()) {
      auto It = AllocIndex.find(T.allocation_id());
      if (It == AllocIndex.end())
        return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") accesses allocation " +
                       Twine(T.allocation_id()) + ", which does not exist");
      uint64_t Size = P.allocations(It->second).size_bytes();
      if (T.bytes() == 0 || T.offset() > Size || T.bytes() > Size - T.offset())
        return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") accesses bytes [" +
                       Twine(T.offset()) + ", " + Twine(T.offset() + T.bytes()) +
                       ") of allocation " + Twine(T.allocation_id()) + " of size " + Twine(Size));
    }
    // The allocations the arguments name, and those reached without a name.
    if (Kn.arguments() != KERNEL_ARGUMENTS_SCANNED &&
        (Kn.named_allocations_size() > 0 || Kn.indirect_allocations_size() > 0))
      return invalid("kernel " + Twine(K) + " (" + Kn.name() +
                     ") lists allocations its arguments name, but its arguments were not read");
    for (const auto *List : {&Kn.named_allocations(), &Kn.indirect_allocations()}) {
      const char *What = List == &Kn.named_allocations() ? "named" : "indirect";
      for (int I = 0; I < List->size(); ++I) {
        const uint64_t Id = List->Get(I);
        if (I > 0 && Id <= List->Get(I - 1))
          return invalid("kernel " + Twine(K) + " (" + Kn.name() + "): its " + What +
                         " allocations are not strictly ascending");
        if (!AllocIndex.count(Id))
          return invalid("kernel " + Twine(K) + " (" + Kn.name() + ") lists " + What +
                         " allocation " + Twine(Id) + ", which does not exist");
      }
    }
    for (uint64_t Id : Kn.indirect_allocations())
      if (std::binary_search(Kn.named_allocations().begin(), Kn.named_allocations().end(), Id))
        return invalid("kernel " + Twine(K) + " (" + Kn.name() + "): allocation " + Twine(Id) +
                       " is both named by its arguments and reached without a name");
  }

  uint64_t NextKernel = 0;
  for (int I = 0; I < P.iterations_size(); ++I) {
    const Iteration &It = P.iterations(I);
    if (It.kernel_count() == 0)
      return invalid("iteration " + Twine(I) + " has no kernels");
    if (It.first_kernel() < NextKernel)
      return invalid("iteration " + Twine(I) + " overlaps the previous iteration");
    if (uint64_t(It.first_kernel()) + It.kernel_count() > uint64_t(P.kernels_size()))
      return invalid("iteration " + Twine(I) + " covers kernels beyond the last kernel");
    if (It.end_ns() < It.start_ns())
      return invalid("iteration " + Twine(I) + " ends before it starts");
    NextKernel = uint64_t(It.first_kernel()) + It.kernel_count();
  }

  for (int I = 0; I < P.faults_size(); ++I) {
    int64_t K = P.faults(I).kernel_index();
    if (K < -1 || K >= P.kernels_size())
      return invalid("fault " + Twine(I) + " is attributed to kernel " + Twine(K) +
                     ", which does not exist");
  }
  for (int I = 0; I < P.migrations_size(); ++I) {
    const Migration &M = P.migrations(I);
    if (M.bytes() == 0)
      return invalid("migration " + Twine(I) + " moves 0 bytes");
    if (M.end_ns() < M.start_ns())
      return invalid("migration " + Twine(I) + " ends before it starts");
    if (M.direction() == MIGRATION_DIRECTION_UNSPECIFIED)
      return invalid("migration " + Twine(I) + " has no direction");
  }
  return Error::success();
}

Error validatePlan(const Plan &P) {
  // The rules live beside the protobuf-free decoder that libdeepum uses, so
  // that both readers accept exactly the same plans (deepum/format/PlanWire.h).
  std::string Problem = checkRawPlan(rawPlanFromProto(P));
  if (!Problem.empty())
    return invalid(Problem);
  return Error::success();
}

} // namespace deepum::format
