//===- deepum/format/Units.h - Byte sizes and durations for people ---------===//
#ifndef DEEPUM_FORMAT_UNITS_H
#define DEEPUM_FORMAT_UNITS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace deepum::format {

/// Parses "16GiB", "1.5 GB", "512MiB", "4096", "2M" (binary units for K/M/G/T
/// with or without "iB"; "KB"/"MB"/"GB"/"TB" are decimal).
llvm::Expected<uint64_t> parseByteSize(llvm::StringRef Text);

/// "1.50 GiB", "512.00 MiB", "12 B".
std::string formatBytes(uint64_t Bytes);

/// "1.234 ms", "56.7 us".
std::string formatMicros(double Micros);

} // namespace deepum::format

#endif // DEEPUM_FORMAT_UNITS_H
