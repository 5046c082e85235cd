//===- PlanWire.cpp - deepum.v1.Plan's wire format without protobuf --------===//
//
// libdeepum.so is loaded into PyTorch processes that carry their own protobuf;
// Debian's libprotobuf.a is built position-independent-executable only (its
// TLS uses the local-exec model), so it cannot be linked into a shared library
// and hidden there, and linking libprotobuf.so would expose protobuf's
// unversioned symbols to interposition by (or of) the process's copy. So the
// plan's wire format is decoded here, by hand, following protobuf 3's parser
// rule for rule, so that the two readers accept the same files
// (fuzz/PlanReaderDiff.cpp checks that they do):
//
//  - tags are varints of at most 5 bytes (value mod 2^32); tag 0, field number
//    0, an end-group tag outside its group, and wire types 6 and 7 are errors;
//  - a known field with another wire type than its own is an unknown field;
//    unknown fields are skipped, groups included (nesting counts against the
//    depth limit of 100, like nested messages);
//  - varints have at most 10 bytes; lengths at most 5 and below 2^31 - 16;
//  - repeated scalars are read packed or not; a packed run must end exactly
//    at its length;
//  - strings must be valid UTF-8 (proto3);
//  - scalars repeated in the input: the last wins; messages merge.
//
//===----------------------------------------------------------------------===//
#include "deepum/format/PlanWire.h"

#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace deepum::format {

namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLen = 2, kGroupStart = 3, kGroupEnd = 4, kFixed32 = 5 };

/// Strict UTF-8 (RFC 3629): no overlong forms, no surrogates, nothing above U+10FFFF.
bool validUtf8(const unsigned char *S, size_t N) {
  size_t I = 0;
  while (I < N) {
    unsigned char C = S[I];
    if (C < 0x80) {
      ++I;
      continue;
    }
    size_t Len;
    unsigned char Lo = 0x80, Hi = 0xbf;
    if (C >= 0xc2 && C <= 0xdf)
      Len = 2;
    else if (C >= 0xe0 && C <= 0xef) {
      Len = 3;
      if (C == 0xe0)
        Lo = 0xa0;
      else if (C == 0xed)
        Hi = 0x9f;
    } else if (C >= 0xf0 && C <= 0xf4) {
      Len = 4;
      if (C == 0xf0)
        Lo = 0x90;
      else if (C == 0xf4)
        Hi = 0x8f;
    } else
      return false;
    if (N - I < Len)
      return false;
    if (S[I + 1] < Lo || S[I + 1] > Hi)
      return false;
    for (size_t K = 2; K < Len; ++K)
      if (S[I + K] < 0x80 || S[I + K] > 0xbf)
        return false;
    I += Len;
  }
  return true;
}

/// A cursor over one message's bytes with the remaining nesting budget.
class Reader {
public:
  Reader(const unsigned char *B, const unsigned char *E, int Budget)
      : Cur(B), End(E), Depth(Budget) {}
  bool done() const { return Cur >= End; }

  bool varint64(uint64_t &V) {
    V = 0;
    for (int I = 0; I < 10; ++I) {
      if (Cur >= End)
        return false;
      const uint8_t Byte = *Cur++;
      V |= uint64_t{Byte & 0x7fu} << (7 * I); // bits beyond 64 are dropped, as protobuf does
      if (!(Byte & 0x80))
        return true;
    }
    return false;
  }
  bool tag(uint32_t &Tag) {
    uint64_t V = 0;
    for (int I = 0; I < 5; ++I) {
      if (Cur >= End)
        return false;
      const uint8_t Byte = *Cur++;
      V |= uint64_t{Byte & 0x7fu} << (7 * I);
      if (!(Byte & 0x80)) {
        Tag = static_cast<uint32_t>(V);
        return true;
      }
    }
    return false;
  }
  /// A length prefix: at most 5 bytes, below 2^31 - 16, within the message.
  bool length(uint64_t &Len) {
    uint64_t V = 0;
    for (int I = 0; I < 5; ++I) {
      if (Cur >= End)
        return false;
      const uint8_t Byte = *Cur++;
      if (I == 4 && Byte >= 8)
        return false;
      V |= uint64_t{Byte & 0x7fu} << (7 * I);
      if (!(Byte & 0x80)) {
        if (V > static_cast<uint64_t>(INT_MAX) - 16 || V > static_cast<uint64_t>(End - Cur))
          return false;
        Len = V;
        return true;
      }
    }
    return false;
  }
  bool advance(size_t N) {
    if (static_cast<size_t>(End - Cur) < N)
      return false;
    Cur += N;
    return true;
  }
  /// The bytes of a length-delimited field.
  bool bytes(std::string_view &Out) {
    uint64_t Len;
    if (!length(Len))
      return false;
    Out = std::string_view(reinterpret_cast<const char *>(Cur), Len);
    Cur += Len;
    return true;
  }
  bool utf8(std::string *Out) {
    std::string_view S;
    if (!bytes(S) ||
        !validUtf8(reinterpret_cast<const unsigned char *>(S.data()), S.size()))
      return false;
    if (Out)
      Out->assign(S);
    return true;
  }
  /// A nested message: its reader, one level deeper.
  bool sub(Reader &Out) {
    uint64_t Len;
    if (Depth - 1 < 0 || !length(Len))
      return false;
    Out = Reader(Cur, Cur + Len, Depth - 1);
    Cur += Len;
    return true;
  }
  /// Skips an unknown field whose tag was just read.
  bool skip(uint32_t Tag) {
    if ((Tag >> 3) == 0)
      return false;
    uint64_t V;
    std::string_view S;
    switch (Tag & 7) {
    case kVarint:
      return varint64(V);
    case kFixed64:
      return advance(8);
    case kLen:
      return bytes(S);
    case kFixed32:
      return advance(4);
    case kGroupStart: {
      if (--Depth < 0)
        return false;
      for (;;) {
        uint32_t Inner;
        if (!tag(Inner) || Inner == 0)
          return false;
        if ((Inner & 7) == kGroupEnd) {
          if (Inner != Tag + 1)
            return false;
          ++Depth;
          return true;
        }
        if (!skip(Inner))
          return false;
      }
    }
    default: // an end-group tag here, or wire types 6 and 7
      return false;
    }
  }

  /// A scalar varint field; false (treat as unknown) when the wire type differs.
  template <typename Int> bool scalar(uint32_t Tag, Int &Out, bool &Ok) {
    if ((Tag & 7) != kVarint)
      return false;
    uint64_t V;
    Ok = varint64(V);
    if constexpr (std::is_same_v<Int, bool>)
      Out = V != 0;
    else
      Out = static_cast<Int>(V);
    return true;
  }
  /// A repeated varint field, packed (length-delimited) or one element.
  template <typename Int> bool repeated(uint32_t Tag, std::vector<Int> *Out, bool &Ok) {
    uint64_t V;
    if ((Tag & 7) == kVarint) {
      Ok = varint64(V);
      if (Ok && Out)
        Out->push_back(static_cast<Int>(V));
      return true;
    }
    if ((Tag & 7) != kLen)
      return false;
    std::string_view S;
    Ok = bytes(S);
    if (!Ok)
      return true;
    Reader Packed(reinterpret_cast<const unsigned char *>(S.data()),
                  reinterpret_cast<const unsigned char *>(S.data()) + S.size(), Depth);
    while (Ok && !Packed.done()) {
      Ok = Packed.varint64(V);
      if (Ok && Out)
        Out->push_back(static_cast<Int>(V));
    }
    return true;
  }

private:
  const unsigned char *Cur;
  const unsigned char *End;
  int Depth;
};

/// Reads the fields of one message: `Known(R, Tag, Ok)` consumes a known
/// field and returns true (setting Ok), or returns false for an unknown one.
template <typename Fn> bool message(Reader R, Fn &&Known) {
  while (!R.done()) {
    uint32_t Tag;
    if (!R.tag(Tag) || Tag == 0 || (Tag & 7) == kGroupEnd)
      return false;
    bool Ok = true;
    if (!Known(R, Tag, Ok))
      Ok = R.skip(Tag);
    if (!Ok)
      return false;
  }
  return true;
}

/// A length-delimited field holding message `Fn`; false when the wire type differs.
template <typename Fn> bool nested(Reader &R, uint32_t Tag, bool &Ok, Fn &&Known) {
  if ((Tag & 7) != kLen)
    return false;
  Reader Sub(nullptr, nullptr, 0);
  Ok = R.sub(Sub) && message(Sub, Known);
  return true;
}

bool isString(Reader &R, uint32_t Tag, bool &Ok, std::string *Out) {
  if ((Tag & 7) != kLen)
    return false;
  Ok = R.utf8(Out);
  return true;
}

bool fixed64(Reader &R, uint32_t Tag, bool &Ok) {
  if ((Tag & 7) != kFixed64)
    return false;
  Ok = R.advance(8);
  return true;
}

bool metadata(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  return nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    uint32_t U32;
    uint64_t U64;
    int Enum;
    switch (T >> 3) {
    case 1:
      return M.scalar(T, P.ProfileFingerprint, K);
    case 3:
      return M.scalar(T, P.GpuMemoryBytes, K);
    case 4:
      return M.scalar(T, P.UmBlockBytes, K);
    case 5: // strategy
      return M.scalar(T, Enum, K);
    case 2:  // device_model
    case 6:  // producer
    case 7:  // summary
    case 8:  // ignored
    case 9:  // profile_source
      return isString(M, T, K, nullptr);
    case 10:
      return isString(M, T, K, &P.Model);
    case 11: // predicted_iteration_us
      return fixed64(M, T, K);
    case 12:
      return M.scalar(T, P.ContextLength, K);
    case 13: // reference_iteration
    case 14: // profiled_iterations
      return M.scalar(T, U32, K);
    case 15: // footprint_bytes
      return M.scalar(T, U64, K);
    default:
      return false;
    }
  });
}

bool executionId(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  if ((Tag & 7) != kLen)
    return false;
  RawPlan::IdEntry E;
  nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    switch (T >> 3) {
    case 1:
      return M.scalar(T, E.Id, K);
    case 2: // signature
      return isString(M, T, K, nullptr);
    case 3: {
      uint64_t Next = 0;
      bool Known = nested(M, T, K, [&](Reader &S, uint32_t X, bool &L) -> bool {
        uint32_t Count;
        if ((X >> 3) == 1)
          return S.scalar(X, Next, L);
        if ((X >> 3) == 2)
          return S.scalar(X, Count, L);
        return false;
      });
      if (Known)
        E.Successors.push_back(Next);
      return Known;
    }
    case 4:
      return M.repeated(T, &E.Positions, K);
    default:
      return false;
    }
  });
  P.ExecutionIds.push_back(std::move(E));
  return true;
}

bool blockChain(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  if ((Tag & 7) != kLen)
    return false;
  RawPlan::Chain C;
  nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    switch (T >> 3) {
    case 1:
      return M.scalar(T, C.Id, K);
    case 2:
      return M.scalar(T, C.Position, K);
    case 3:
      return M.repeated(T, &C.Blocks, K);
    case 4: // modes
      return M.repeated<int>(T, nullptr, K);
    default:
      return false;
    }
  });
  P.Chains.push_back(std::move(C));
  return true;
}

bool action(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  if ((Tag & 7) != kLen)
    return false;
  RawPlan::Action A;
  nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    bool Dirty;
    switch (T >> 3) {
    case 1:
      return M.scalar(T, A.Kind, K);
    case 2:
      return M.scalar(T, A.Position, K);
    case 3:
      return M.scalar(T, A.DuePosition, K);
    case 4: {
      RawRange Rg;
      bool Known = nested(M, T, K, [&](Reader &S, uint32_t X, bool &L) -> bool {
        if ((X >> 3) == 1)
          return S.scalar(X, Rg.Offset, L);
        if ((X >> 3) == 2)
          return S.scalar(X, Rg.Bytes, L);
        return false;
      });
      if (Known)
        A.Ranges.push_back(Rg);
      return Known;
    }
    case 5:
      return M.scalar(T, A.Advice, K);
    case 6:
      return M.scalar(T, Dirty, K);
    default:
      return false;
    }
  });
  P.Actions.push_back(std::move(A));
  return true;
}

bool layout(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  return nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    uint64_t U64;
    switch (T >> 3) {
    case 1:
      return M.scalar(T, P.ArenaBytes, K);
    case 2: {
      RawPlan::Placement Pl;
      bool Known = nested(M, T, K, [&](Reader &S, uint32_t X, bool &L) -> bool {
        switch (X >> 3) {
        case 1:
          return S.scalar(X, Pl.Sequence, L);
        case 2:
          return S.scalar(X, Pl.Size, L);
        case 3:
          return S.scalar(X, Pl.Offset, L);
        case 4:
          return S.scalar(X, Pl.Persistent, L);
        case 5:
          return S.scalar(X, Pl.LiveBegin, L);
        case 6:
          return S.scalar(X, Pl.LiveEnd, L);
        case 7:
          return S.scalar(X, Pl.WrapEnd, L);
        default:
          return false;
        }
      });
      if (Known)
        P.Placements.push_back(Pl);
      return Known;
    }
    case 3: // peak_live_bytes
    case 4: // best_fit_peak_bytes
      return M.scalar(T, U64, K);
    case 5:
      return M.scalar(T, P.LayoutTicks, K);
    default:
      return false;
    }
  });
}

} // namespace

bool decodePlanWire(std::string_view Bytes, RawPlan &P, std::string &Error) {
  P = RawPlan{};
  const auto *B = reinterpret_cast<const unsigned char *>(Bytes.data());
  Reader Top(B, B + Bytes.size(), PlanLimits::kMaxDepth);
  bool Ok = message(Top, [&](Reader &R, uint32_t T, bool &K) -> bool {
    switch (T >> 3) {
    case 1:
      return R.scalar(T, P.FormatVersion, K);
    case 2: {
      bool Known = metadata(R, T, K, P);
      P.HasMetadata |= Known;
      return Known;
    }
    case 3:
      return executionId(R, T, K, P);
    case 4:
      return blockChain(R, T, K, P);
    case 5:
      return R.repeated(T, &P.PositionIds, K);
    case 6:
      return action(R, T, K, P);
    case 7:
      return layout(R, T, K, P);
    case 8:
      return R.repeated(T, &P.PositionContexts, K);
    default:
      return false;
    }
  });
  if (!Ok) {
    Error = "not a deepum plan (protobuf parse failed: truncated, corrupt or another format)";
    return false;
  }
  return true;
}

bool gunzipPlan(std::string_view In, std::string &Out, std::string &Error) {
  Out.clear();
  z_stream Z{};
  // 15 window bits + 16: gzip only.
  if (inflateInit2(&Z, 15 + 16) != Z_OK) {
    Error = "cannot initialise decompression";
    return false;
  }
  Z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(In.data()));
  Z.avail_in = static_cast<uInt>(In.size());
  char Chunk[1 << 16];
  int Rc = Z_OK;
  while (Rc == Z_OK) {
    Z.next_out = reinterpret_cast<Bytef *>(Chunk);
    Z.avail_out = sizeof Chunk;
    Rc = inflate(&Z, Z_NO_FLUSH);
    if (Rc != Z_OK && Rc != Z_STREAM_END)
      break;
    const size_t Got = sizeof Chunk - Z.avail_out;
    // The cap holds before the buffer grows.
    if (Out.size() + Got > PlanLimits::kMaxFileBytes) {
      inflateEnd(&Z);
      Error = "decompresses to more than " + std::to_string(PlanLimits::kMaxFileBytes >> 20) +
              " MiB, the limit for a plan";
      return false;
    }
    Out.append(Chunk, Got);
    if (Rc == Z_OK && Z.avail_in == 0 && Got == 0)
      Rc = Z_BUF_ERROR;
  }
  const size_t Trailing = Z.avail_in;
  inflateEnd(&Z);
  if (Rc != Z_STREAM_END) {
    Error = Rc == Z_BUF_ERROR ? "truncated gzip data" : "corrupt gzip data";
    return false;
  }
  if (Trailing != 0) {
    Error = "unexpected data after the end of the gzip stream";
    return false;
  }
  return true;
}

bool readPlanFileBytes(const std::string &Path, std::string &Out, std::string &Error) {
  Out.clear();
  // O_NONBLOCK: opening a FIFO without a writer must not block the training
  // process's first allocation; anything but a regular file is refused below.
  const int Fd = ::open(Path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (Fd < 0) {
    Error = Path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat St {};
  bool Ok = ::fstat(Fd, &St) == 0;
  if (!Ok)
    Error = Path + ": cannot stat: " + std::strerror(errno);
  else if (!S_ISREG(St.st_mode)) {
    Error = Path + ": not a regular file";
    Ok = false;
  } else if (static_cast<uint64_t>(St.st_size) > PlanLimits::kMaxFileBytes) {
    Error = Path + ": larger than " + std::to_string(PlanLimits::kMaxFileBytes >> 20) +
            " MiB, the limit for a plan";
    Ok = false;
  }
  if (Ok) {
    // Read what fstat promised and no more: a file that grows meanwhile
    // cannot push past the cap.
    Out.resize(static_cast<size_t>(St.st_size));
    size_t Done = 0;
    while (Ok && Done < Out.size()) {
      const ssize_t N = ::read(Fd, Out.data() + Done, Out.size() - Done);
      if (N < 0 && errno == EINTR)
        continue;
      if (N <= 0) {
        Error = Path + (N < 0 ? ": read failed: " + std::string(std::strerror(errno))
                              : std::string(": file shrank while being read"));
        Ok = false;
        break;
      }
      Done += static_cast<size_t>(N);
    }
  }
  ::close(Fd);
  if (!Ok)
    return false;
  if (Out.size() >= 2 && static_cast<uint8_t>(Out[0]) == 0x1f &&
      static_cast<uint8_t>(Out[1]) == 0x8b) {
    std::string Plain;
    if (!gunzipPlan(Out, Plain, Error)) {
      Error = Path + ": " + Error;
      return false;
    }
    Out.swap(Plain);
  }
  return true;
}

} // namespace deepum::format
