//===- Units.cpp - Byte sizes and durations for people ----------------------===//
#include "deepum/format/Units.h"

#include "deepum/base/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <optional>

using namespace llvm;

namespace deepum::format {

Expected<uint64_t> parseByteSize(StringRef Text) {
  if (std::optional<uint64_t> Bytes =
          base::parseByteSize(std::string_view(Text.data(), Text.size())))
    return *Bytes;
  return base::makeError("invalid size '" + Text + "' (expected " + base::kByteSizeExamples + ")");
}

std::string formatMicros(double Micros) {
  if (Micros >= 1e6)
    return formatv("{0:F3} s", Micros / 1e6).str();
  if (Micros >= 1e3)
    return formatv("{0:F3} ms", Micros / 1e3).str();
  return formatv("{0:F1} us", Micros).str();
}

} // namespace deepum::format
