//===- FuzzSupport.h - Shared pieces of deepum's fuzz targets ---------------===//
//
// Every target is one LLVMFuzzerTestOneInput. A target returns normally for
// any input the libraries refuse with an error; it aborts (fuzzFail) only when
// an invariant the project promises is broken, so that libFuzzer, the plain
// driver and the sanitizers all report it the same way.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_FUZZ_FUZZSUPPORT_H
#define DEEPUM_FUZZ_FUZZSUPPORT_H

#include "deepum/format/Format.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace deepum::fuzz {

/// Prints "fuzz: <target>: <what>" and aborts: the crash libFuzzer records.
[[noreturn]] inline void fuzzFail(const char *Target, const std::string &What) {
  std::fprintf(stderr, "fuzz: %s: %s\n", Target, What.c_str());
  std::fflush(stderr);
  std::abort();
}

/// The input as the file reader would see it, with its encoding taken from
/// the first byte: '{' is JSON, '#' protobuf text (a comment line starts the
/// seeds), anything else binary protobuf. The whole input is parsed, so a
/// seed is an ordinary profile or plan file of that encoding.
inline format::Encoding encodingOf(llvm::StringRef Bytes) {
  if (Bytes.startswith("{"))
    return format::Encoding::Json;
  if (Bytes.startswith("#"))
    return format::Encoding::Text;
  return format::Encoding::Binary;
}

/// Discards an error the libraries were right to return.
template <typename T> bool takeValue(llvm::Expected<T> &E) {
  if (E)
    return true;
  llvm::consumeError(E.takeError());
  return false;
}

/// Inputs of the planner and simulator targets: one parameter byte, then a
/// binary profile. Profiles beyond these caps are skipped so that every input
/// stays cheap (a few milliseconds); the caps are far above the seeds and
/// still hold real structure (thousands of kernels and blocks).
struct ProfileCaps {
  static constexpr int MaxKernels = 2000;
  static constexpr int MaxAllocations = 2000;
  /// Block accesses: BlockAccess records plus the UM blocks each
  /// TensorAccess spans, over all kernels.
  static constexpr uint64_t MaxBlockAccesses = 20000;
  /// One allocation, and all of them together (the arena the planner lays
  /// out and the address space the simulator pages).
  static constexpr uint64_t MaxAllocationBytes = uint64_t{512} << 20;
  static constexpr uint64_t MaxTotalAllocationBytes = uint64_t{8} << 30;
  /// UM event records (faults, migrations, events) of all kinds together.
  static constexpr int MaxUmRecords = 20000;
};

/// Whether `P` is within ProfileCaps.
inline bool withinCaps(const deepum::v1::Profile &P) {
  using C = ProfileCaps;
  if (P.kernels_size() > C::MaxKernels || P.allocations_size() > C::MaxAllocations)
    return false;
  if (P.faults_size() + P.migrations_size() + P.um_events_size() > C::MaxUmRecords)
    return false;
  uint64_t Total = 0;
  for (const deepum::v1::Allocation &A : P.allocations()) {
    if (A.size_bytes() > C::MaxAllocationBytes)
      return false;
    Total += A.size_bytes();
    if (Total > C::MaxTotalAllocationBytes)
      return false;
  }
  uint64_t BlockBytes = P.um_block_bytes() ? P.um_block_bytes() : format::kUmBlockBytes;
  uint64_t Accesses = 0;
  for (const deepum::v1::Kernel &K : P.kernels()) {
    Accesses += static_cast<uint64_t>(K.blocks_size());
    for (const deepum::v1::TensorAccess &T : K.tensors()) {
      // At most the blocks of the largest allocation, plus one for misalignment.
      uint64_t Bytes = T.bytes() ? T.bytes() : C::MaxAllocationBytes;
      if (Bytes > C::MaxAllocationBytes)
        return false;
      Accesses += Bytes / BlockBytes + 2;
    }
    if (Accesses > C::MaxBlockAccesses)
      return false;
  }
  return true;
}

/// The planner's and simulator's input: one parameter byte, then a binary
/// profile. The profile when it parses, validates and is within ProfileCaps.
inline std::optional<deepum::v1::Profile> paramAndProfile(const uint8_t *Data, size_t Size,
                                                          uint8_t &Param) {
  if (Size < 1)
    return std::nullopt;
  Param = Data[0];
  llvm::StringRef Bytes(reinterpret_cast<const char *>(Data) + 1, Size - 1);
  llvm::Expected<deepum::v1::Profile> P = format::parseProfile(Bytes, "fuzz");
  if (!takeValue(P) || !withinCaps(*P))
    return std::nullopt;
  return std::move(*P);
}

} // namespace deepum::fuzz

#endif // DEEPUM_FUZZ_FUZZSUPPORT_H
