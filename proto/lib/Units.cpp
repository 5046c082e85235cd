//===- Units.cpp - Byte sizes and durations for people ----------------------===//
#include "deepum/format/Units.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <cstdlib>

using namespace llvm;

namespace deepum::format {

Expected<uint64_t> parseByteSize(StringRef Text) {
  StringRef S = Text.trim();
  size_t NumEnd = 0;
  while (NumEnd < S.size() && (isDigit(S[NumEnd]) || S[NumEnd] == '.'))
    ++NumEnd;
  StringRef Num = S.take_front(NumEnd);
  StringRef Unit = S.drop_front(NumEnd).trim();
  auto Bad = [&]() {
    return createStringError(inconvertibleErrorCode(),
                             "invalid size '" + Text + "' (expected e.g. 16GiB, 512MiB, 1.5GB)");
  };
  if (Num.empty() || Num.count('.') > 1)
    return Bad();
  double Value = std::strtod(Num.str().c_str(), nullptr);
  double Scale = 1;
  std::string U = Unit.lower();
  if (U.empty() || U == "b")
    Scale = 1;
  else if (U == "k" || U == "kib")
    Scale = 0x1p10;
  else if (U == "m" || U == "mib")
    Scale = 0x1p20;
  else if (U == "g" || U == "gib")
    Scale = 0x1p30;
  else if (U == "t" || U == "tib")
    Scale = 0x1p40;
  else if (U == "kb")
    Scale = 1e3;
  else if (U == "mb")
    Scale = 1e6;
  else if (U == "gb")
    Scale = 1e9;
  else if (U == "tb")
    Scale = 1e12;
  else
    return Bad();
  double Bytes = std::round(Value * Scale);
  if (!(Bytes >= 0) || Bytes >= 0x1p63)
    return Bad();
  return static_cast<uint64_t>(Bytes);
}

std::string formatBytes(uint64_t Bytes) {
  static const char *Units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (Bytes < 1024)
    return std::to_string(Bytes) + " B";
  double V = static_cast<double>(Bytes);
  int U = 0;
  while (V >= 1024 && U < 6) {
    V /= 1024;
    ++U;
  }
  return formatv("{0:F2} {1}", V, Units[U]).str();
}

std::string formatMicros(double Micros) {
  if (Micros >= 1e6)
    return formatv("{0:F3} s", Micros / 1e6).str();
  if (Micros >= 1e3)
    return formatv("{0:F3} ms", Micros / 1e3).str();
  return formatv("{0:F1} us", Micros).str();
}

} // namespace deepum::format
