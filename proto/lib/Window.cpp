//===- Window.cpp - Allocations across an iteration's edges -----------------===//
#include "deepum/format/Window.h"

#include <algorithm>
#include <map>

namespace deepum::format {

using deepum::v1::Allocation;
using deepum::v1::Profile;

WindowAllocations classifyAllocations(const Profile &P, uint64_t Start, uint64_t End) {
  WindowAllocations Out;
  for (int I = 0; I < P.allocations_size(); ++I) {
    const Allocation &A = P.allocations(I);
    const uint64_t Free = A.freed() ? A.free_time_ns() : UINT64_MAX;
    const uint32_t Index = static_cast<uint32_t>(I);
    if (A.alloc_time_ns() < Start) {
      if (Free >= End)
        Out.Persistent.push_back(Index);
      else if (Free >= Start)
        Out.CarriedIn.push_back(Index);
    } else if (A.alloc_time_ns() < End) {
      Out.Made.push_back(Index);
    }
  }
  std::stable_sort(Out.Made.begin(), Out.Made.end(), [&](uint32_t X, uint32_t Y) {
    return P.allocations(static_cast<int>(X)).alloc_time_ns() <
           P.allocations(static_cast<int>(Y)).alloc_time_ns();
  });
  return Out;
}

std::pair<uint64_t, uint64_t> iterationWindow(const Profile &P, uint32_t First, uint32_t Count) {
  const uint64_t Next = uint64_t{First} + Count;
  return {P.kernels(static_cast<int>(First)).start_ns(),
          Next < static_cast<uint64_t>(P.kernels_size())
              ? P.kernels(static_cast<int>(Next)).start_ns()
              : UINT64_MAX};
}

std::vector<std::pair<uint32_t, uint32_t>>
matchCarriedIn(const Profile &P, const WindowAllocations &A, uint64_t End) {
  std::map<uint64_t, std::vector<uint32_t>> WrapsBySize, CarriedBySize;
  for (uint32_t I : A.Made)
    if (!freedWithin(P.allocations(static_cast<int>(I)), End))
      WrapsBySize[P.allocations(static_cast<int>(I)).size_bytes()].push_back(I);
  for (uint32_t I : A.CarriedIn)
    CarriedBySize[P.allocations(static_cast<int>(I)).size_bytes()].push_back(I);
  std::vector<std::pair<uint32_t, uint32_t>> Pairs;
  for (const auto &[Size, Wraps] : WrapsBySize) {
    auto It = CarriedBySize.find(Size);
    if (It == CarriedBySize.end())
      continue;
    for (size_t K = 0; K < std::min(Wraps.size(), It->second.size()); ++K)
      Pairs.push_back({It->second[K], Wraps[K]});
  }
  return Pairs;
}

} // namespace deepum::format
