//===- deepum/base/ByteSize.h - Byte sizes as people write them ------------===//
//
// One reading of "16GiB" for every tool option and environment variable
// (--gpu-memory, DEEPUM_GPU_MEMORY, the stand-in's device memory), and one way
// of printing a byte count. Dependency-free: libdeepum.so uses it too.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_BASE_BYTESIZE_H
#define DEEPUM_BASE_BYTESIZE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace deepum::base {

/// Parses "16GiB", "1.5 GB", "512MiB", "4096", "2M": binary units for K/M/G/T
/// with or without "iB"; "KB"/"MB"/"GB"/"TB" are decimal; case and the blanks
/// around number and unit do not matter. The number is digits with at most
/// one '.', so signs, exponents, "nan" and "inf" are refused; so is a size of
/// 2^63 bytes or more. Rounds to the nearest byte. nullopt when not a size.
std::optional<uint64_t> parseByteSize(std::string_view Text);

/// What parseByteSize accepts, for error messages.
inline constexpr const char *kByteSizeExamples = "e.g. 16GiB, 512MiB, 1.5GB";

/// "1.50 GiB", "512.00 MiB", "12 B"; units up to EiB, so every uint64 prints
/// right (UINT64_MAX is "16.00 EiB").
std::string formatBytes(uint64_t Bytes);

} // namespace deepum::base

#endif // DEEPUM_BASE_BYTESIZE_H
