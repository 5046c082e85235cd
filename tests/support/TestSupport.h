//===- TestSupport.h - Helpers shared by deepum's unit tests ----------------===//
#ifndef DEEPUM_TESTS_SUPPORT_H
#define DEEPUM_TESTS_SUPPORT_H

#include "deepum/v1/profile.pb.h"

#include "llvm/Support/Error.h"

#include "gtest/gtest.h"

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace deepum::test {

/// Path of a file under tests/data of the source tree.
std::string dataPath(const std::string &Name);
/// A fresh, empty directory for one test's output files.
std::string scratchDir(const std::string &TestName);

/// The five shipped real-model profiles.
const std::vector<std::string> &shippedModels();
/// tests/data/<model>.profile.pb.gz
std::string shippedProfilePath(const std::string &Model);

/// A gtest parameter name for a model ("bert-large" -> "bert_large").
std::string testNameOf(const ::testing::TestParamInfo<std::string> &Info);

/// Unwraps an Expected, failing the current test with the error's text.
template <typename T> T takeOk(llvm::Expected<T> E) {
  if (!E) {
    ADD_FAILURE() << llvm::toString(E.takeError());
    return T{};
  }
  return std::move(*E);
}

/// The error text of an Expected that must have failed ("" and a test failure otherwise).
template <typename T> std::string errorText(llvm::Expected<T> E) {
  if (E) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(E.takeError());
}
inline std::string errorText(llvm::Error E) {
  if (!E) {
    ADD_FAILURE() << "expected an error";
    return "";
  }
  return llvm::toString(std::move(E));
}

/// Builds small hand-made profiles: allocations placed 2 MiB-aligned one after
/// another, kernels back to back, block accesses derived from tensor accesses.
class ProfileBuilder {
public:
  explicit ProfileBuilder(std::string DeviceName = "test-gpu");

  /// Adds an allocation of `Bytes` made at `AllocNs`, freed at `FreeNs` (or
  /// never when FreeNs < 0); returns its id. Placed at the next 2 MiB boundary
  /// unless `Address` is given.
  uint64_t allocate(uint64_t Bytes, uint64_t AllocNs = 0, int64_t FreeNs = -1,
                    deepum::v1::AllocationRole Role = deepum::v1::ALLOCATION_ROLE_ACTIVATION,
                    uint64_t Address = 0);

  struct Use {
    uint64_t AllocationId;
    deepum::v1::AccessMode Mode;
    uint64_t Offset = 0;
    uint64_t Bytes = 0; // 0 = to the end of the allocation
  };
  /// Appends a kernel of `DurationNs` after the previous one; returns its index.
  int kernel(const std::string &Name, uint64_t DurationNs, std::initializer_list<Use> Uses);
  int kernel(const std::string &Name, uint64_t DurationNs, const std::vector<Use> &Uses);

  /// Marks kernels [First, First+Count) as one iteration.
  void iteration(uint32_t First, uint32_t Count);

  uint64_t now() const { return Clock; }
  deepum::v1::Profile &profile() { return P; }
  deepum::v1::Profile build() const { return P; }

private:
  deepum::v1::Profile P;
  uint64_t NextAddress = uint64_t{1} << 40;
  uint64_t NextId = 1;
  uint64_t Clock = 0;
};

} // namespace deepum::test

#endif // DEEPUM_TESTS_SUPPORT_H
