//===- AccessSources.cpp - A kernel's access set from two sources ----------===//
#include "deepum/format/AccessSources.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Demangle/Demangle.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

namespace deepum::format {

using namespace deepum::v1;

namespace {

constexpr unsigned kPagesPerBlock = 32;

/// [Begin, End) ranges, sorted and merged.
std::vector<std::pair<uint64_t, uint64_t>> unite(std::vector<std::pair<uint64_t, uint64_t>> R) {
  std::sort(R.begin(), R.end());
  std::vector<std::pair<uint64_t, uint64_t>> Out;
  for (const auto &X : R) {
    if (!Out.empty() && X.first <= Out.back().second)
      Out.back().second = std::max(Out.back().second, X.second);
    else
      Out.push_back(X);
  }
  return Out;
}

uint64_t bytesOf(const std::vector<std::pair<uint64_t, uint64_t>> &R) {
  uint64_t N = 0;
  for (const auto &X : R)
    N += X.second - X.first;
  return N;
}

} // namespace

SourceBytes &SourceBytes::operator+=(const SourceBytes &O) {
  NamedAndFaulted += O.NamedAndFaulted;
  NamedOnly += O.NamedOnly;
  FaultedOnly += O.FaultedOnly;
  Indirect += O.Indirect;
  Launches += O.Launches;
  return *this;
}

bool hasArguments(const Profile &P) {
  for (const Kernel &K : P.kernels())
    if (K.arguments() == KERNEL_ARGUMENTS_SCANNED)
      return true;
  return false;
}

std::vector<uint64_t> guardedAllocations(const Profile &P) {
  std::set<uint64_t> Named, Excluded, BlindBlocks;
  const bool Derived = P.access_source() == ACCESS_SOURCE_DERIVED_TRACE;
  const uint64_t BlockBytes = P.um_block_bytes() ? P.um_block_bytes() : 2ull << 20;
  for (const Kernel &K : P.kernels()) {
    if (Derived) {
      for (const TensorAccess &T : K.tensors())
        Named.insert(T.allocation_id());
      continue;
    }
    if (K.arguments() == KERNEL_ARGUMENTS_SCANNED) {
      Named.insert(K.named_allocations().begin(), K.named_allocations().end());
      Excluded.insert(K.indirect_allocations().begin(), K.indirect_allocations().end());
      continue;
    }
    for (const TensorAccess &T : K.tensors())
      Excluded.insert(T.allocation_id());
    for (const BlockAccess &B : K.blocks())
      BlindBlocks.insert(B.block());
  }
  // Every allocation overlapping a block a kernel without arguments touched
  // (it may touch any of them).
  if (!BlindBlocks.empty())
    for (const Allocation &A : P.allocations()) {
      if (!A.size_bytes())
        continue;
      auto It = BlindBlocks.lower_bound(A.address() / BlockBytes);
      if (It != BlindBlocks.end() && *It <= (A.address() + A.size_bytes() - 1) / BlockBytes)
        Excluded.insert(A.id());
    }
  std::vector<uint64_t> Out;
  for (uint64_t Id : Named)
    if (!Excluded.count(Id))
      Out.push_back(Id);
  return Out;
}

namespace {

/// The report of P; with Out (P itself, or a copy of it), the widening written there.
AccessSourceReport widen(const Profile &P, Profile *Out) {
  AccessSourceReport R;
  std::unordered_map<uint64_t, const Allocation *> ById;
  for (const Allocation &A : P.allocations())
    ById.emplace(A.id(), &A);
  const uint64_t BlockBytes = P.um_block_bytes() ? P.um_block_bytes() : 2ull << 20;
  const uint64_t PageBytes = BlockBytes / kPagesPerBlock; // blocks-only kernels' recorded bytes
  std::set<uint64_t> Indirect;

  for (int KI = 0; KI < P.kernels_size(); ++KI) {
    const Kernel &K = P.kernels(KI);
    ++R.Kernels;
    const bool Scanned = K.arguments() == KERNEL_ARGUMENTS_SCANNED;
    R.KernelsScanned += Scanned;
    R.KernelsNoLayout += K.arguments() == KERNEL_ARGUMENTS_NO_LAYOUT;
    Indirect.insert(K.indirect_allocations().begin(), K.indirect_allocations().end());
    // The recorded accesses per allocation, as offsets within it.
    std::map<uint64_t, std::vector<std::pair<uint64_t, uint64_t>>> Recorded;
    for (const TensorAccess &T : K.tensors())
      Recorded[T.allocation_id()].push_back({T.offset(), T.offset() + T.bytes()});
    SourceBytes S;
    S.Launches = 1;
    auto IsNamed = [&](uint64_t Id) {
      return std::binary_search(K.named_allocations().begin(), K.named_allocations().end(), Id);
    };
    for (auto &[Id, Ranges] : Recorded) {
      Ranges = unite(std::move(Ranges));
      const uint64_t N = bytesOf(Ranges);
      if (!Scanned)
        S.FaultedOnly += N;
      else if (IsNamed(Id))
        S.NamedAndFaulted += N;
      else
        S.Indirect += N;
    }
    if (K.tensors_size() == 0 && K.blocks_size() > 0) {
      // A profile with blocks only: the recorded bytes are whole pages.
      uint64_t N = 0;
      for (const BlockAccess &B : K.blocks())
        N += B.page_mask() ? PageBytes * __builtin_popcount(B.page_mask()) : BlockBytes;
      (Scanned ? S.Indirect : S.FaultedOnly) += N;
    }
    // The named bytes no recorded access covers.
    std::vector<TensorAccess> Added;
    if (Scanned)
      for (uint64_t Id : K.named_allocations()) {
        auto A = ById.find(Id);
        if (A == ById.end())
          continue;
        const uint64_t Size = A->second->size_bytes();
        uint64_t At = 0;
        auto Add = [&](uint64_t B, uint64_t E) {
          if (E <= B)
            return;
          S.NamedOnly += E - B;
          TensorAccess T;
          T.set_allocation_id(Id);
          T.set_offset(B);
          T.set_bytes(E - B);
          T.set_mode(ACCESS_MODE_UNSPECIFIED);
          Added.push_back(T);
        };
        if (auto It = Recorded.find(Id); It != Recorded.end())
          for (const auto &[B, E] : It->second) {
            Add(At, std::min(B, Size));
            At = std::max(At, E);
          }
        Add(At, Size);
      }
    R.Total += S;
    R.ByKernel[K.name()] += S;
    if (!Out || Added.empty())
      continue;
    // Every read of K is above: Out may be P itself.
    Kernel &W = *Out->mutable_kernels(KI);
    // Tensor accesses (the planner reads a kernel's tensors when it has any).
    // A kernel with blocks only keeps them: widened, its blocks would be
    // ignored for the new tensors. Blocks are not widened: a named 1 TiB
    // allocation would be half a million of them per launch, and no reader
    // of a widened profile takes blocks where tensors are.
    if (K.tensors_size() > 0 || K.blocks_size() == 0)
      for (TensorAccess &T : Added)
        *W.add_tensors() = std::move(T);
  }
  R.IndirectAllocations = Indirect.size();
  return R;
}

} // namespace

AccessSourceReport accessSources(const Profile &P) { return widen(P, nullptr); }

std::string kernelClass(const std::string &Name) {
  std::string D = llvm::demangle(Name);
  if (llvm::StringRef(D).startswith("void "))
    D = D.substr(5);
  for (size_t At; (At = D.find("(anonymous namespace)::")) != std::string::npos;)
    D.erase(At, sizeof("(anonymous namespace)::") - 1);
  // Cut at the first '<' or '(' outside nothing: the name before its
  // template arguments and parameters ("operator<" aside, which kernels are not).
  const size_t Cut = D.find_first_of("<(");
  if (Cut != std::string::npos && Cut > 0)
    D.resize(Cut);
  return D.empty() ? Name : D;
}

std::string accessSourceTable(const AccessSourceReport &R) {
  std::map<std::string, SourceBytes> ByClass;
  for (const auto &[Name, S] : R.ByKernel)
    ByClass[kernelClass(Name)] += S;
  std::vector<std::pair<std::string, SourceBytes>> Rows(ByClass.begin(), ByClass.end());
  auto Total = [](const SourceBytes &S) {
    return S.NamedAndFaulted + S.NamedOnly + S.FaultedOnly + S.Indirect;
  };
  std::stable_sort(Rows.begin(), Rows.end(),
                   [&](const auto &A, const auto &B) { return Total(A.second) > Total(B.second); });
  auto MiB = [](uint64_t N) { return llvm::formatv("{0:f1}", static_cast<double>(N) / (1 << 20)).str(); };
  auto Row = [&](const std::string &Name, const SourceBytes &S) {
    return "| " + Name + " | " + std::to_string(S.Launches) + " | " + MiB(S.NamedAndFaulted) +
           " | " + MiB(S.NamedOnly) + " | " + MiB(S.FaultedOnly) + " | " + MiB(S.Indirect) + " |\n";
  };
  std::string Out = "| kernel class | launches | named and faulted (MiB) | named only (MiB) | "
                    "faulted only (MiB) | indirect (MiB) |\n|---|---:|---:|---:|---:|---:|\n";
  for (const auto &[Name, S] : Rows)
    Out += Row("`" + Name + "`", S);
  Out += Row("**all**", R.Total);
  return Out;
}

AccessSourceReport addNamedAccesses(Profile &P) { return widen(P, &P); }

} // namespace deepum::format
