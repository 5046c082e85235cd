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

#include "deepum/format/PlanFields.h"

#include <zlib.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace deepum::format {

namespace {

using planfields::packedTag;
using planfields::tag;

// The wire types as the tag's low bits (planfields::Wire, as plain numbers).
enum WireType : uint32_t {
  kVarint = static_cast<uint32_t>(planfields::Wire::Varint),
  kFixed64 = static_cast<uint32_t>(planfields::Wire::Fixed64),
  kLen = static_cast<uint32_t>(planfields::Wire::Len),
  kGroupStart = static_cast<uint32_t>(planfields::Wire::GroupStart),
  kGroupEnd = static_cast<uint32_t>(planfields::Wire::GroupEnd),
  kFixed32 = static_cast<uint32_t>(planfields::Wire::Fixed32),
};

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

/// What the decoded RawPlan may take: kReadMemoryFactor times the bytes
/// decoded plus kReadMemorySlackBytes, as the protobuf reader's bound
/// (deepum/format/Format.h). Every element is charged before it is stored,
/// three times its size (a vector grows by doubling, and while it moves the
/// old and new buffers are both live), so the decode stops before it
/// allocates past the bound. One decode at a time per thread.
struct DecodeBudget {
  uint64_t Used = 0;
  uint64_t Limit = UINT64_MAX;
  bool over() const { return Used > Limit; }
  bool charge(uint64_t Elements, uint64_t ElementBytes) {
    Used += 3 * Elements * ElementBytes;
    return !over();
  }
};
thread_local DecodeBudget Charged;

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
      Ok = varint64(V) && (!Out || Charged.charge(1, sizeof(Int)));
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
    if (Out) {
      // The run's elements are its bytes without the continuation bit.
      uint64_t N = 0;
      for (char C : S)
        N += !(static_cast<unsigned char>(C) & 0x80);
      Ok = Charged.charge(N, sizeof(Int));
      if (!Ok)
        return true;
    }
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
  namespace F = planfields::metadata;
  return nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    uint32_t U32;
    uint64_t U64;
    int Enum;
    switch (T) {
    case tag(F::ProfileFingerprint):
      return M.scalar(T, P.ProfileFingerprint, K);
    case tag(F::GpuMemoryBytes):
      return M.scalar(T, P.GpuMemoryBytes, K);
    case tag(F::UmBlockBytes):
      return M.scalar(T, P.UmBlockBytes, K);
    case tag(F::Strategy):
      return M.scalar(T, Enum, K);
    case tag(F::DeviceModel):
    case tag(F::Producer):
    case tag(F::Summary):
    case tag(F::Ignored):
    case tag(F::ProfileSource):
      return isString(M, T, K, nullptr);
    case tag(F::Model):
      return isString(M, T, K, &P.Model);
    case tag(F::PredictedIterationUs):
      return fixed64(M, T, K);
    case tag(F::ContextLength):
      return M.scalar(T, P.ContextLength, K);
    case tag(F::ReferenceIteration):
    case tag(F::ProfiledIterations):
      return M.scalar(T, U32, K);
    case tag(F::FootprintBytes):
      return M.scalar(T, U64, K);
    case tag(F::CopyPoolBytes):
      return M.scalar(T, P.CopyPoolBytes, K);
    default:
      return false;
    }
  });
}

bool executionId(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  namespace F = planfields::id_entry;
  namespace S = planfields::successor;
  RawPlan::IdEntry E;
  nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    switch (T) {
    case tag(F::ExecutionId):
      return M.scalar(T, E.Id, K);
    case tag(F::Signature):
      return isString(M, T, K, nullptr);
    case tag(F::Successors): {
      uint64_t Next = 0;
      nested(M, T, K, [&](Reader &Su, uint32_t X, bool &L) -> bool {
        uint32_t Count;
        switch (X) {
        case tag(S::ExecutionId):
          return Su.scalar(X, Next, L);
        case tag(S::Count):
          return Su.scalar(X, Count, L);
        default:
          return false;
        }
      });
      K = K && Charged.charge(1, sizeof(uint64_t));
      E.Successors.push_back(Next);
      return true;
    }
    case tag(F::Positions):
    case packedTag(F::Positions):
      return M.repeated(T, &E.Positions, K);
    default:
      return false;
    }
  });
  Ok = Ok && Charged.charge(1, sizeof(E));
  P.ExecutionIds.push_back(std::move(E));
  return true;
}

bool blockChain(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  namespace F = planfields::chain;
  RawPlan::Chain C;
  nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    switch (T) {
    case tag(F::ExecutionId):
      return M.scalar(T, C.Id, K);
    case tag(F::Position):
      return M.scalar(T, C.Position, K);
    case tag(F::Blocks):
    case packedTag(F::Blocks):
      return M.repeated(T, &C.Blocks, K);
    case tag(F::Modes):
    case packedTag(F::Modes):
      return M.repeated<int>(T, nullptr, K);
    default:
      return false;
    }
  });
  Ok = Ok && Charged.charge(1, sizeof(C));
  P.Chains.push_back(std::move(C));
  return true;
}

bool action(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  namespace F = planfields::action;
  namespace G = planfields::range;
  RawPlan::Action A;
  nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    bool Dirty;
    switch (T) {
    case tag(F::Kind):
      return M.scalar(T, A.Kind, K);
    case tag(F::Position):
      return M.scalar(T, A.Position, K);
    case tag(F::DuePosition):
      return M.scalar(T, A.DuePosition, K);
    case tag(F::Ranges): {
      RawRange Rg;
      nested(M, T, K, [&](Reader &S, uint32_t X, bool &L) -> bool {
        switch (X) {
        case tag(G::Offset):
          return S.scalar(X, Rg.Offset, L);
        case tag(G::Bytes):
          return S.scalar(X, Rg.Bytes, L);
        default:
          return false;
        }
      });
      K = K && Charged.charge(1, sizeof(Rg));
      A.Ranges.push_back(Rg);
      return true;
    }
    case tag(F::Advice):
      return M.scalar(T, A.Advice, K);
    case tag(F::Dirty):
      return M.scalar(T, Dirty, K);
    case tag(F::PoolOffset):
      return M.scalar(T, A.PoolOffset, K);
    default:
      return false;
    }
  });
  Ok = Ok && Charged.charge(1, sizeof(A));
  P.Actions.push_back(std::move(A));
  return true;
}

bool placement(Reader &M, uint32_t T, bool &K, RawPlan &P) {
  namespace F = planfields::placement;
  RawPlan::Placement Pl;
  nested(M, T, K, [&](Reader &S, uint32_t X, bool &L) -> bool {
    switch (X) {
    case tag(F::Sequence):
      return S.scalar(X, Pl.Sequence, L);
    case tag(F::SizeBytes):
      return S.scalar(X, Pl.Size, L);
    case tag(F::Offset):
      return S.scalar(X, Pl.Offset, L);
    case tag(F::Persistent):
      return S.scalar(X, Pl.Persistent, L);
    case tag(F::LiveBegin):
      return S.scalar(X, Pl.LiveBegin, L);
    case tag(F::LiveEnd):
      return S.scalar(X, Pl.LiveEnd, L);
    case tag(F::WrapEnd):
      return S.scalar(X, Pl.WrapEnd, L);
    case tag(F::CallIndex):
      return S.scalar(X, Pl.CallIndex, L);
    default:
      return false;
    }
  });
  K = K && Charged.charge(1, sizeof(Pl));
  P.Placements.push_back(Pl);
  return true;
}

bool layout(Reader &R, uint32_t Tag, bool &Ok, RawPlan &P) {
  namespace F = planfields::layout;
  return nested(R, Tag, Ok, [&](Reader &M, uint32_t T, bool &K) -> bool {
    uint64_t U64;
    switch (T) {
    case tag(F::ArenaBytes):
      return M.scalar(T, P.ArenaBytes, K);
    case tag(F::Placements):
      return placement(M, T, K, P);
    case tag(F::PeakLiveBytes):
    case tag(F::BestFitPeakBytes):
      return M.scalar(T, U64, K);
    case tag(F::Ticks):
      return M.scalar(T, P.LayoutTicks, K);
    case tag(F::PrologueCallBytes):
    case packedTag(F::PrologueCallBytes):
      return M.repeated(T, &P.PrologueCallBytes, K);
    default:
      return false;
    }
  });
}

} // namespace

bool decodePlanWire(std::string_view Bytes, RawPlan &P, std::string &Error) {
  namespace F = planfields::plan;
  P = RawPlan{};
  Charged = DecodeBudget{};
  Charged.Limit = PlanLimits::kReadMemoryFactor * Bytes.size() + PlanLimits::kReadMemorySlackBytes;
  const auto *B = reinterpret_cast<const unsigned char *>(Bytes.data());
  Reader Top(B, B + Bytes.size(), PlanLimits::kMaxDepth);
  bool Ok = message(Top, [&](Reader &R, uint32_t T, bool &K) -> bool {
    switch (T) {
    case tag(F::FormatVersion):
      return R.scalar(T, P.FormatVersion, K);
    case tag(F::Metadata):
      P.HasMetadata = true;
      return metadata(R, T, K, P);
    case tag(F::ExecutionIds):
      return executionId(R, T, K, P);
    case tag(F::BlockChains):
      return blockChain(R, T, K, P);
    case tag(F::PositionIds):
    case packedTag(F::PositionIds):
      return R.repeated(T, &P.PositionIds, K);
    case tag(F::Actions):
      return action(R, T, K, P);
    case tag(F::Layout):
      return layout(R, T, K, P);
    case tag(F::PositionContexts):
    case packedTag(F::PositionContexts):
      return R.repeated(T, &P.PositionContexts, K);
    default:
      return false;
    }
  });
  if (Charged.over()) {
    // Dropped now, not when the caller drops it: the next step may need the room.
    uint64_t Positions = P.PositionIds.size();
    P = RawPlan{};
    Error = "would take more than " + std::to_string(Charged.Limit) +
            " bytes once decoded (" + std::to_string(Positions) +
            " launch positions before it stopped), more than " +
            std::to_string(PlanLimits::kReadMemoryFactor) + " times its " +
            std::to_string(Bytes.size()) + " bytes plus " +
            std::to_string(PlanLimits::kReadMemorySlackBytes >> 20) + " MiB; refusing it";
    return false;
  }
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
