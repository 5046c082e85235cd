//===- Compute.cpp - Kernel compute times from another profile ------------===//
#include "deepum/format/Compute.h"

#include "deepum/format/Format.h"
#include "deepum/format/Signature.h"

#include "llvm/Support/FormatVariadic.h"

using namespace deepum::v1;

namespace deepum::format {

namespace {
uint64_t durationNs(const Kernel &K) {
  return K.end_ns() > K.start_ns() ? K.end_ns() - K.start_ns() : 0;
}

llvm::Error mismatch(const llvm::Twine &Why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "not a profile of the same program: " + Why);
}
} // namespace

llvm::Expected<uint64_t> takeComputeTimes(Profile &P, const Profile &Natural) {
  if (Natural.iterations_size() == 0)
    return llvm::createStringError(llvm::inconvertibleErrorCode(), "it has no iteration");
  const Iteration &N = Natural.iterations(Natural.iterations_size() - 1);
  const uint64_t Count = N.kernel_count();
  if (uint64_t{N.first_kernel()} + Count > static_cast<uint64_t>(Natural.kernels_size()))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "its last iteration lies outside its kernels");
  // Every check before any change: on a mismatch the profile stays as it was.
  for (const Iteration &I : P.iterations()) {
    if (I.kernel_count() != Count)
      return mismatch(llvm::formatv("iteration {0} has {1} kernels, the natural profile's {2}",
                                    I.index(), I.kernel_count(), Count));
    for (uint64_t J = 0; J < Count; ++J) {
      const Kernel &K = P.kernels(static_cast<int>(I.first_kernel() + J));
      const Kernel &NK = Natural.kernels(static_cast<int>(N.first_kernel() + J));
      if (executionId(K) != executionId(NK))
        return mismatch(llvm::formatv("kernel {0} of iteration {1} is {2}, the natural "
                                      "profile's is {3} (or launched with another shape)",
                                      J, I.index(), K.name(), NK.name()));
    }
  }
  uint64_t Set = 0;
  for (const Iteration &I : P.iterations())
    for (uint64_t J = 0; J < Count; ++J) {
      Kernel *K = P.mutable_kernels(static_cast<int>(I.first_kernel() + J));
      const uint64_t Recorded = durationNs(*K);
      const uint64_t NaturalNs = durationNs(Natural.kernels(static_cast<int>(N.first_kernel() + J)));
      K->set_fault_stall_ns(Recorded > NaturalNs ? Recorded - NaturalNs : 0);
      ++Set;
    }
  return Set;
}

llvm::Error takeComputeTimesFrom(Profile &P, llvm::StringRef NaturalPath) {
  Profile Natural;
  if (llvm::Error E = readProfileInto(NaturalPath, Natural))
    return E;
  if (llvm::Expected<uint64_t> Set = takeComputeTimes(P, Natural); !Set)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--compute-from " + NaturalPath + ": " +
                                       llvm::toString(Set.takeError()));
  return llvm::Error::success();
}

} // namespace deepum::format
