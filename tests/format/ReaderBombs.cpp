//===- ReaderBombs.cpp - Small files that inflate into huge messages --------===//
//
// deepum_reader_bombs DIR writes, in a few seconds, the gzip files the readers
// must refuse in one line (tests/format/reader_bombs.sh runs every tool on
// them under a 4 GiB address-space limit):
//
//   allocations.profile.pb.gz  100,000,000 empty allocations (200 MB inflated)
//   kernels.profile.pb.gz       20,000,000 empty kernels (40 MB inflated)
//   positions.plan.pb.gz       256,000,000 plan positions (256 MB inflated)
//   allocations.pb.gz          the first again, named as neither kind
//
// Each is one gzip member whose deflate data repeats one block: the block of
// 1 MiB of the repeated record is compressed once after a full flush, which
// makes its bytes independent of what came before, and written as often as
// needed.
//
//===----------------------------------------------------------------------===//
#include <zlib.h>

#include "Wire.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

using deepum::test::varint;

/// Raw deflate of `In` ending in a full flush (or the final block).
bool deflatePart(z_stream &Z, const std::string &In, int Flush, std::string &Out) {
  Out.clear();
  Z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(In.data()));
  Z.avail_in = static_cast<uInt>(In.size());
  char Buf[1 << 16];
  int Rc;
  do {
    Z.next_out = reinterpret_cast<Bytef *>(Buf);
    Z.avail_out = sizeof Buf;
    Rc = deflate(&Z, Flush);
    if (Rc == Z_STREAM_ERROR)
      return false;
    Out.append(Buf, sizeof Buf - Z.avail_out);
  } while (Z.avail_out == 0 || (Flush == Z_FINISH && Rc != Z_STREAM_END));
  return true;
}

/// Writes gzip(Prefix + Unit * Count) to Path.
bool writeBomb(const std::string &Path, const std::string &Prefix, const std::string &Unit,
               uint64_t Count) {
  const uint64_t PerChunk = (uint64_t{1} << 20) / Unit.size();
  std::string Chunk;
  for (uint64_t I = 0; I < PerChunk; ++I)
    Chunk += Unit;
  std::string Rest;
  for (uint64_t I = 0; I < Count % PerChunk; ++I)
    Rest += Unit;
  const uint64_t Chunks = Count / PerChunk;

  z_stream Z{};
  if (deflateInit2(&Z, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    return false;
  std::string Head, Block, Tail;
  bool Ok = deflatePart(Z, Prefix, Z_FULL_FLUSH, Head) &&
            deflatePart(Z, Chunk, Z_FULL_FLUSH, Block) && deflatePart(Z, Rest, Z_FINISH, Tail);
  deflateEnd(&Z);
  if (!Ok)
    return false;

  uLong Crc = crc32(0, reinterpret_cast<const Bytef *>(Prefix.data()),
                    static_cast<uInt>(Prefix.size()));
  for (uint64_t I = 0; I < Chunks; ++I)
    Crc = crc32(Crc, reinterpret_cast<const Bytef *>(Chunk.data()),
                static_cast<uInt>(Chunk.size()));
  Crc = crc32(Crc, reinterpret_cast<const Bytef *>(Rest.data()), static_cast<uInt>(Rest.size()));
  const uint64_t Total = Prefix.size() + Chunks * Chunk.size() + Rest.size();

  std::FILE *F = std::fopen(Path.c_str(), "wb");
  if (!F)
    return false;
  const unsigned char Header[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
  std::fwrite(Header, 1, sizeof Header, F);
  std::fwrite(Head.data(), 1, Head.size(), F);
  for (uint64_t I = 0; I < Chunks; ++I)
    std::fwrite(Block.data(), 1, Block.size(), F);
  std::fwrite(Tail.data(), 1, Tail.size(), F);
  unsigned char Trailer[8];
  for (int I = 0; I < 4; ++I) {
    Trailer[I] = static_cast<unsigned char>(Crc >> (8 * I));
    Trailer[4 + I] = static_cast<unsigned char>(Total >> (8 * I));
  }
  std::fwrite(Trailer, 1, sizeof Trailer, F);
  return std::fclose(F) == 0;
}

} // namespace

int main(int Argc, char **Argv) {
  if (Argc != 2) {
    std::fprintf(stderr, "usage: deepum_reader_bombs DIR\n");
    return 2;
  }
  const std::string Dir = Argv[1];
  // Profile: format_version 1 (field 1) and um_block_bytes 2 MiB (field 5),
  // then allocations (field 7) or kernels (field 8), each an empty message:
  // its tag and a zero length.
  const std::string Version = std::string("\x08\x01\x28", 3) + varint(uint64_t{2} << 20);
  const std::string EmptyAllocation = std::string("\x3a\x00", 2);
  const std::string EmptyKernel = std::string("\x42\x00", 2);
  // Plan: position_ids (field 5, packed), 256,000,000 one-byte varints.
  const uint64_t Positions = 256'000'000;
  const std::string PositionsHead = "\x2a" + varint(Positions);
  struct Bomb {
    const char *Name;
    std::string Prefix, Unit;
    uint64_t Count;
  } Bombs[] = {
      {"allocations.profile.pb.gz", Version, EmptyAllocation, 100'000'000},
      {"allocations.pb.gz", Version, EmptyAllocation, 100'000'000},
      {"kernels.profile.pb.gz", Version, EmptyKernel, 20'000'000},
      {"positions.plan.pb.gz", PositionsHead, "\x01", Positions},
  };
  for (const Bomb &B : Bombs)
    if (!writeBomb(Dir + "/" + B.Name, B.Prefix, B.Unit, B.Count)) {
      std::fprintf(stderr, "%s/%s: cannot write it\n", Dir.c_str(), B.Name);
      return 1;
    }
  return 0;
}
