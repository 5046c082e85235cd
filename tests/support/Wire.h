//===- Wire.h - Protobuf wire-format pieces for tests that write raw bytes ===//
//
// Header-only, no dependency: the reader-bomb generator links nothing of the
// project's.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_TEST_WIRE_H
#define DEEPUM_TEST_WIRE_H

#include <cstdint>
#include <string>

namespace deepum::test {

/// `V` as a protobuf base-128 varint.
inline std::string varint(uint64_t V) {
  std::string Out;
  while (V >= 0x80) {
    Out += static_cast<char>((V & 0x7f) | 0x80);
    V >>= 7;
  }
  Out += static_cast<char>(V);
  return Out;
}

} // namespace deepum::test

#endif // DEEPUM_TEST_WIRE_H
