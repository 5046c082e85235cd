//===- ByteSize.cpp - Byte sizes as people write them -----------------------===//
#include "deepum/base/ByteSize.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace deepum::base {

namespace {

bool isBlank(char C) {
  return C == ' ' || C == '\t' || C == '\n' || C == '\r' || C == '\v' || C == '\f';
}

std::string_view trim(std::string_view S) {
  while (!S.empty() && isBlank(S.front()))
    S.remove_prefix(1);
  while (!S.empty() && isBlank(S.back()))
    S.remove_suffix(1);
  return S;
}

std::string lower(std::string_view S) {
  std::string Out(S);
  for (char &C : Out)
    if (C >= 'A' && C <= 'Z')
      C = static_cast<char>(C - 'A' + 'a');
  return Out;
}

/// Bytes per unit, or 0 for an unknown unit.
double unitScale(const std::string &U) {
  if (U.empty() || U == "b")
    return 1;
  if (U == "k" || U == "kib")
    return 0x1p10;
  if (U == "m" || U == "mib")
    return 0x1p20;
  if (U == "g" || U == "gib")
    return 0x1p30;
  if (U == "t" || U == "tib")
    return 0x1p40;
  if (U == "kb")
    return 1e3;
  if (U == "mb")
    return 1e6;
  if (U == "gb")
    return 1e9;
  if (U == "tb")
    return 1e12;
  return 0;
}

} // namespace

std::optional<uint64_t> parseByteSize(std::string_view Text) {
  std::string_view S = trim(Text);
  size_t NumEnd = 0;
  size_t Dots = 0;
  while (NumEnd < S.size() && ((S[NumEnd] >= '0' && S[NumEnd] <= '9') || S[NumEnd] == '.')) {
    Dots += S[NumEnd] == '.';
    ++NumEnd;
  }
  if (NumEnd == 0 || Dots > 1)
    return std::nullopt;
  const double Scale = unitScale(lower(trim(S.substr(NumEnd))));
  if (Scale == 0)
    return std::nullopt;
  const double Value = std::strtod(std::string(S.substr(0, NumEnd)).c_str(), nullptr);
  const double Bytes = std::round(Value * Scale);
  // Converting a double at or beyond 2^64 to uint64_t is undefined; sizes
  // stop well before, at 2^63 (8 EiB).
  if (!(Bytes >= 0) || Bytes >= 0x1p63)
    return std::nullopt;
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
  char Buf[32];
  std::snprintf(Buf, sizeof Buf, "%.2f %s", V, Units[U]);
  return Buf;
}

} // namespace deepum::base
