//===- deepum/base/Hash.h - The one hash every component agrees on ----------===//
//
// FNV-1a 64: stable across runs, platforms and compilers, and simple enough to
// be constexpr. Execution IDs (deepum/format/Signature.h), the planner's
// sequence fingerprint and context IDs, the executor's plan cursor, the
// simulator's DeepUM policy and the fuzz driver's artifact names all hash
// with these functions, so that what one component writes the others match
// bit for bit. Header-only and dependency-free: libdeepum.so uses it too.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_BASE_HASH_H
#define DEEPUM_BASE_HASH_H

#include <cstddef>
#include <cstdint>

namespace deepum::base {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

/// FNV-1a over `Size` bytes, continuing from `Hash`.
constexpr uint64_t fnv1a(const char *Data, size_t Size, uint64_t Hash = kFnvOffset) {
  for (size_t I = 0; I < Size; ++I) {
    Hash ^= static_cast<unsigned char>(Data[I]);
    Hash *= kFnvPrime;
  }
  return Hash;
}

/// FNV-1a over bytes that are not characters (file contents, buffers).
inline uint64_t fnv1aBytes(const uint8_t *Data, size_t Size, uint64_t Hash = kFnvOffset) {
  for (size_t I = 0; I < Size; ++I) {
    Hash ^= Data[I];
    Hash *= kFnvPrime;
  }
  return Hash;
}

/// FNV-1a over one 32-bit word, little-endian.
constexpr uint64_t fnv1aWord(uint32_t Word, uint64_t Hash) {
  for (int I = 0; I < 4; ++I) {
    Hash ^= (Word >> (8 * I)) & 0xff;
    Hash *= kFnvPrime;
  }
  return Hash;
}

/// FNV-1a over one 64-bit ID as two little-endian 32-bit words, low word
/// first: how sequences of execution IDs are hashed (the plan's profile
/// fingerprint, context IDs).
constexpr uint64_t fnv1aId(uint64_t Id, uint64_t Hash) {
  return fnv1aWord(static_cast<uint32_t>(Id >> 32), fnv1aWord(static_cast<uint32_t>(Id), Hash));
}

} // namespace deepum::base

#endif // DEEPUM_BASE_HASH_H
