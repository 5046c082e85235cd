//===- AccessSourcesTest.cpp - Access sets from arguments and faults -------===//
//
// format::addNamedAccesses widens each kernel's access set to the whole of
// every allocation its arguments name. Checked on a hand-made profile and,
// as properties, on random ones: the widened profile is valid, keeps every
// recorded access, covers every byte of every named allocation, and the
// report's bytes add up to what the kernels hold.
//
//===----------------------------------------------------------------------===//
#include "TestSupport.h"

#include "deepum/format/AccessSources.h"
#include "deepum/format/Format.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <map>
#include <random>

using namespace deepum;
using namespace deepum::test;
using ::testing::HasSubstr;

namespace {

constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t KiB = uint64_t{1} << 10;

/// Per kernel and allocation, the bytes its tensor accesses cover, as merged ranges.
std::map<std::pair<int, uint64_t>, std::vector<std::pair<uint64_t, uint64_t>>>
covered(const v1::Profile &P) {
  std::map<std::pair<int, uint64_t>, std::vector<std::pair<uint64_t, uint64_t>>> Out;
  for (int K = 0; K < P.kernels_size(); ++K)
    for (const v1::TensorAccess &T : P.kernels(K).tensors())
      Out[{K, T.allocation_id()}].push_back({T.offset(), T.offset() + T.bytes()});
  for (auto &[Key, R] : Out) {
    std::sort(R.begin(), R.end());
    std::vector<std::pair<uint64_t, uint64_t>> M;
    for (auto X : R)
      if (!M.empty() && X.first <= M.back().second)
        M.back().second = std::max(M.back().second, X.second);
      else
        M.push_back(X);
    R = M;
  }
  return Out;
}

uint64_t sizeOf(const v1::Profile &P, uint64_t Id) {
  for (const v1::Allocation &A : P.allocations())
    if (A.id() == Id)
      return A.size_bytes();
  return 0;
}

TEST(AccessSources, NamedAllocationsAreWidenedWholeAndTheFaultsKeepTheirModes) {
  ProfileBuilder B;
  const uint64_t W = B.allocate(4 * MiB), X = B.allocate(1 * MiB), Y = B.allocate(3 * MiB);
  // Kernel a faulted on 128 KiB of W (read) and 64 KiB of Y; its arguments
  // name W and X. Kernel b's arguments were not read.
  B.kernel("a", 1000,
           {{W, v1::ACCESS_MODE_READ, 256 * KiB, 128 * KiB}, {Y, v1::ACCESS_MODE_WRITE, 0, 64 * KiB}});
  B.kernel("b", 1000, {{X, v1::ACCESS_MODE_READ}});
  B.iteration(0, 2);
  v1::Profile P = B.build();
  P.mutable_kernels(0)->set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
  P.mutable_kernels(0)->add_named_allocations(W);
  P.mutable_kernels(0)->add_named_allocations(X);
  P.mutable_kernels(0)->add_indirect_allocations(Y);
  ASSERT_FALSE(bool(format::validateProfile(P)));

  v1::Profile Wide = P;
  format::AccessSourceReport R = format::addNamedAccesses(Wide);
  ASSERT_FALSE(bool(format::validateProfile(Wide)));
  EXPECT_EQ(R.Kernels, 2u);
  EXPECT_EQ(R.KernelsScanned, 1u);
  EXPECT_EQ(R.Total.NamedAndFaulted, 128 * KiB);
  EXPECT_EQ(R.Total.NamedOnly, 4 * MiB - 128 * KiB + 1 * MiB);
  EXPECT_EQ(R.Total.Indirect, 64 * KiB);
  EXPECT_EQ(R.Total.FaultedOnly, 1 * MiB);
  EXPECT_EQ(R.IndirectAllocations, 1u);
  EXPECT_EQ(R.ByKernel["a"].NamedOnly, R.Total.NamedOnly);
  EXPECT_EQ(R.ByKernel["b"].FaultedOnly, 1 * MiB);
  // The report of the unchanged profile is the same, and leaves it unchanged.
  const format::AccessSourceReport Again = format::accessSources(P);
  EXPECT_EQ(Again.Total.NamedOnly, R.Total.NamedOnly);

  const v1::Kernel &A = Wide.kernels(0);
  // The recorded accesses first, as they were; then W's two gaps and X whole.
  ASSERT_EQ(A.tensors_size(), 5);
  EXPECT_EQ(A.tensors(0).mode(), v1::ACCESS_MODE_READ);
  EXPECT_EQ(A.tensors(1).mode(), v1::ACCESS_MODE_WRITE);
  EXPECT_EQ(A.tensors(2).allocation_id(), W);
  EXPECT_EQ(A.tensors(2).offset(), 0u);
  EXPECT_EQ(A.tensors(2).bytes(), 256 * KiB);
  EXPECT_EQ(A.tensors(2).mode(), v1::ACCESS_MODE_UNSPECIFIED);
  EXPECT_EQ(A.tensors(3).offset(), 384 * KiB);
  EXPECT_EQ(A.tensors(3).bytes(), 4 * MiB - 384 * KiB);
  EXPECT_EQ(A.tensors(4).allocation_id(), X);
  EXPECT_EQ(A.tensors(4).bytes(), 1 * MiB);
  // Blocks stay as recorded: W's two pages, Y's one.
  uint64_t Pages = 0;
  for (const v1::BlockAccess &Bl : A.blocks())
    Pages += Bl.page_mask() ? __builtin_popcount(Bl.page_mask()) : 32;
  EXPECT_EQ(Pages, 2u + 1u);
  EXPECT_EQ(A.blocks_size(), P.kernels(0).blocks_size());
  // Kernel b (arguments not read) is untouched.
  EXPECT_EQ(Wide.kernels(1).SerializeAsString(), P.kernels(1).SerializeAsString());
}

TEST(AccessSources, ARandomProfileWidenedStaysValidAndCoversEveryNamedByte) {
  std::mt19937_64 Rng(20261128);
  for (int Round = 0; Round < 200; ++Round) {
    ProfileBuilder B;
    std::vector<uint64_t> Ids;
    const int Allocs = 1 + static_cast<int>(Rng() % 6);
    for (int I = 0; I < Allocs; ++I)
      Ids.push_back(B.allocate(64 * KiB * (1 + Rng() % 80)));
    const int Kernels = 1 + static_cast<int>(Rng() % 5);
    v1::Profile Base = B.build();
    for (int K = 0; K < Kernels; ++K) {
      std::vector<ProfileBuilder::Use> Uses;
      for (uint64_t Id : Ids) {
        if (Rng() % 3 == 0)
          continue;
        const uint64_t Size = sizeOf(Base, Id);
        const uint64_t Off = Rng() % Size, Len = 1 + Rng() % (Size - Off);
        Uses.push_back({Id, static_cast<v1::AccessMode>(Rng() % 4), Off, Len});
      }
      B.kernel("k" + std::to_string(K % 2), 1000, Uses);
    }
    B.iteration(0, static_cast<uint32_t>(Kernels));
    v1::Profile P = B.build();
    for (int K = 0; K < P.kernels_size(); ++K) {
      v1::Kernel &Kn = *P.mutable_kernels(K);
      const unsigned Pick = static_cast<unsigned>(Rng() % 3);
      if (Pick == 0)
        continue; // not read
      if (Pick == 1) {
        Kn.set_arguments(v1::KERNEL_ARGUMENTS_NO_LAYOUT);
        continue;
      }
      Kn.set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
      for (uint64_t Id : Ids)
        if (Rng() % 2)
          Kn.add_named_allocations(Id);
      if (Rng() % 5 == 0)
        Kn.clear_tensors(); // blocks only: left as it is
    }
    ASSERT_FALSE(bool(format::validateProfile(P))) << Round;
    v1::Profile Wide = P;
    const format::AccessSourceReport R = format::addNamedAccesses(Wide);
    ASSERT_FALSE(bool(format::validateProfile(Wide))) << Round;

    const auto Before = covered(P), After = covered(Wide);
    uint64_t Recorded = 0, NamedBytes = 0;
    for (const auto &[Key, Ranges] : Before)
      for (auto [B0, E0] : Ranges)
        Recorded += E0 - B0;
    for (const v1::Kernel &Kn : P.kernels())
      if (Kn.tensors_size() == 0)
        for (const v1::BlockAccess &Bl : Kn.blocks())
          Recorded += Bl.page_mask() ? 64 * KiB * __builtin_popcount(Bl.page_mask()) : 2 * MiB;
    for (int K = 0; K < P.kernels_size(); ++K) {
      const v1::Kernel &Kn = P.kernels(K);
      // Every recorded access is kept, with its mode.
      for (int T = 0; T < Kn.tensors_size(); ++T)
        ASSERT_EQ(Wide.kernels(K).tensors(T).SerializeAsString(),
                  Kn.tensors(T).SerializeAsString());
      const bool BlocksOnly = Kn.tensors_size() == 0 && Kn.blocks_size() > 0;
      for (uint64_t Id : Kn.named_allocations()) {
        NamedBytes += sizeOf(P, Id);
        if (BlocksOnly)
          continue;
        auto It = After.find({K, Id});
        ASSERT_NE(It, After.end()) << Round;
        ASSERT_EQ(It->second.size(), 1u) << Round;
        EXPECT_EQ(It->second[0], std::make_pair(uint64_t{0}, sizeOf(P, Id))) << Round;
      }
      // Nothing is added to a kernel whose arguments were not read, or with blocks only.
      if (Kn.arguments() != v1::KERNEL_ARGUMENTS_SCANNED || BlocksOnly) {
        EXPECT_EQ(Wide.kernels(K).SerializeAsString(), Kn.SerializeAsString());
      }
    }
    EXPECT_EQ(R.Total.NamedAndFaulted + R.Total.Indirect + R.Total.FaultedOnly, Recorded) << Round;
    EXPECT_EQ(R.Total.NamedAndFaulted + R.Total.NamedOnly, NamedBytes) << Round;
    // Widening twice adds nothing more.
    v1::Profile Twice = Wide;
    format::addNamedAccesses(Twice);
    EXPECT_EQ(Twice.SerializeAsString(), Wide.SerializeAsString()) << Round;
  }
}

TEST(Validate, NamedAllocationsFollowTheRules) {
  ProfileBuilder B;
  const uint64_t W = B.allocate(1 * MiB), X = B.allocate(1 * MiB);
  B.kernel("a", 1000, {{W, v1::ACCESS_MODE_READ}});
  B.iteration(0, 1);
  const v1::Profile Good = B.build();
  auto Check = [&](auto Edit) {
    v1::Profile P = Good;
    Edit(*P.mutable_kernels(0));
    return errorText(format::validateProfile(P));
  };
  EXPECT_THAT(Check([&](v1::Kernel &K) { K.add_named_allocations(W); }),
              HasSubstr("its arguments were not read"));
  EXPECT_THAT(Check([&](v1::Kernel &K) {
                K.set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
                K.add_named_allocations(X);
                K.add_named_allocations(W);
              }),
              HasSubstr("named allocations are not strictly ascending"));
  EXPECT_THAT(Check([&](v1::Kernel &K) {
                K.set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
                K.add_indirect_allocations(99);
              }),
              HasSubstr("indirect allocation 99, which does not exist"));
  EXPECT_THAT(Check([&](v1::Kernel &K) {
                K.set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
                K.add_named_allocations(W);
                K.add_indirect_allocations(W);
              }),
              HasSubstr("both named by its arguments and reached without a name"));
  v1::Profile Fine = Good;
  Fine.mutable_kernels(0)->set_arguments(v1::KERNEL_ARGUMENTS_SCANNED);
  Fine.mutable_kernels(0)->add_named_allocations(W);
  Fine.mutable_kernels(0)->add_indirect_allocations(X);
  EXPECT_FALSE(bool(format::validateProfile(Fine)));
}

} // namespace
