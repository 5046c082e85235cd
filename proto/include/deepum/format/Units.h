//===- deepum/format/Units.h - Byte sizes and durations for people ---------===//
#ifndef DEEPUM_FORMAT_UNITS_H
#define DEEPUM_FORMAT_UNITS_H

#include "deepum/base/ByteSize.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace deepum::format {

/// base::parseByteSize ("16GiB", "1.5 GB", "512MiB", "4096", "2M"), with an
/// error quoting the text when it is not a size.
llvm::Expected<uint64_t> parseByteSize(llvm::StringRef Text);

/// "1.50 GiB", "512.00 MiB", "12 B" (deepum/base/ByteSize.h).
using base::formatBytes;

/// Sums and running levels of byte counts. Sizes are uint64: a sum of up to
/// 2^63 of them, or a level that also subtracts, is exact in 128 bits.
__extension__ typedef __int128 WideBytes;

/// `Bytes` clamped to [0, UINT64_MAX]: a total uint64 cannot hold saturates.
inline uint64_t saturateBytes(WideBytes Bytes) {
  if (Bytes < 0)
    return 0;
  if (Bytes > static_cast<WideBytes>(UINT64_MAX))
    return UINT64_MAX;
  return static_cast<uint64_t>(Bytes);
}

/// A + B, or UINT64_MAX when the sum does not fit.
inline uint64_t addBytes(uint64_t A, uint64_t B) { return A > UINT64_MAX - B ? UINT64_MAX : A + B; }

/// "1.234 ms", "56.7 us".
std::string formatMicros(double Micros);

} // namespace deepum::format

#endif // DEEPUM_FORMAT_UNITS_H
