//===- PlanReader.cpp - Plans from disk without protobuf -------------------===//
//
// libdeepum.so is loaded into PyTorch processes that carry their own protobuf;
// Debian's libprotobuf.a is built position-independent-executable only (its
// TLS uses the local-exec model), so it cannot be linked into a shared library
// and hidden there. Linking libprotobuf.so instead would expose protobuf's
// unversioned symbols to interposition by (or of) the process's copy. So the
// executor decodes the protobuf wire format of deepum.v1.Plan itself: only the
// fields it uses, every length checked, unknown fields skipped (as protobuf
// does), so newer plans with added fields still load. Tests check that this
// decoder and the format library agree on every plan they build.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/CompiledPlan.h"

#include <zlib.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

namespace deepum::executor {

namespace {

/// Plans larger than this are refused (the format library's limit).
constexpr uint64_t kMaxPlanBytes = uint64_t{4} << 30;

class Wire {
public:
  Wire(const char *B, const char *E) : Cur(B), End(E) {}
  bool done() const { return Cur >= End; }
  bool varint(uint64_t &V) {
    V = 0;
    for (int Shift = 0; Shift < 64; Shift += 7) {
      if (Cur >= End)
        return false;
      uint8_t Byte = static_cast<uint8_t>(*Cur++);
      V |= uint64_t{Byte & 0x7fu} << Shift;
      if (!(Byte & 0x80))
        return true;
    }
    return false;
  }
  bool tag(uint32_t &Field, uint32_t &Type) {
    uint64_t T;
    if (!varint(T))
      return false;
    Field = static_cast<uint32_t>(T >> 3);
    Type = static_cast<uint32_t>(T & 7);
    return Field != 0;
  }
  bool bytes(Wire &Sub) {
    uint64_t Len;
    if (!varint(Len) || Len > static_cast<uint64_t>(End - Cur))
      return false;
    Sub = Wire(Cur, Cur + Len);
    Cur += Len;
    return true;
  }
  bool skip(uint32_t Type) {
    uint64_t V;
    Wire Sub(nullptr, nullptr);
    switch (Type) {
    case 0:
      return varint(V);
    case 1:
      return advance(8);
    case 2:
      return bytes(Sub);
    case 5:
      return advance(4);
    default:
      return false; // groups are not used by proto3
    }
  }
  /// A repeated scalar varint field: packed (type 2) or not (type 0).
  template <typename T> bool repeated(uint32_t Type, std::vector<T> &Out) {
    uint64_t V;
    if (Type == 0) {
      if (!varint(V))
        return false;
      Out.push_back(static_cast<T>(V));
      return true;
    }
    if (Type != 2)
      return false;
    Wire Sub(nullptr, nullptr);
    if (!bytes(Sub))
      return false;
    while (!Sub.done()) {
      if (!Sub.varint(V))
        return false;
      Out.push_back(static_cast<T>(V));
    }
    return true;
  }
  const char *begin() const { return Cur; }
  const char *end() const { return End; }

private:
  bool advance(size_t N) {
    if (static_cast<size_t>(End - Cur) < N)
      return false;
    Cur += N;
    return true;
  }
  const char *Cur;
  const char *End;
};

template <typename Fn> bool message(Wire W, Fn &&Field) {
  uint32_t F, T;
  while (!W.done()) {
    if (!W.tag(F, T))
      return false;
    if (!Field(W, F, T))
      return false;
  }
  return true;
}

template <typename Int> bool scalar(Wire &W, uint32_t Type, Int &Out) {
  uint64_t V;
  if (Type != 0 || !W.varint(V))
    return false;
  Out = static_cast<Int>(V);
  return true;
}

bool submessage(Wire &W, uint32_t Type, Wire &Sub) { return Type == 2 && W.bytes(Sub); }

bool gunzip(const std::string &In, std::string &Out, std::string &Error) {
  z_stream Z{};
  if (inflateInit2(&Z, 16 + MAX_WBITS) != Z_OK) {
    Error = "cannot initialise zlib";
    return false;
  }
  Z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(In.data()));
  Z.avail_in = static_cast<uInt>(In.size());
  char Buf[1 << 16];
  int R = Z_OK;
  while (R == Z_OK) {
    Z.next_out = reinterpret_cast<Bytef *>(Buf);
    Z.avail_out = sizeof Buf;
    R = inflate(&Z, Z_NO_FLUSH);
    if (R != Z_OK && R != Z_STREAM_END)
      break;
    Out.append(Buf, sizeof Buf - Z.avail_out);
    if (Out.size() > kMaxPlanBytes)
      break;
  }
  inflateEnd(&Z);
  if (R != Z_STREAM_END) {
    Error = "corrupt gzip data";
    return false;
  }
  return true;
}

} // namespace

bool decodePlan(const std::string &Bytes, RawPlan &P, std::string &Error) {
  P = RawPlan{};
  Wire Top(Bytes.data(), Bytes.data() + Bytes.size());
  bool Ok = message(Top, [&](Wire &W, uint32_t F, uint32_t T) -> bool {
    Wire Sub(nullptr, nullptr);
    switch (F) {
    case 1:
      return scalar(W, T, P.FormatVersion);
    case 2: // metadata
      return submessage(W, T, Sub) && message(Sub, [&](Wire &M, uint32_t G, uint32_t U) -> bool {
               Wire S(nullptr, nullptr);
               if (G == 3)
                 return scalar(M, U, P.GpuMemoryBytes);
               if (G == 4)
                 return scalar(M, U, P.UmBlockBytes);
               if (G == 1)
                 return scalar(M, U, P.ProfileFingerprint);
               if (G == 12)
                 return scalar(M, U, P.ContextLength);
               if (G == 10 && U == 2 && M.bytes(S)) {
                 P.Model.assign(S.begin(), S.end());
                 return true;
               }
               return M.skip(U);
             });
    case 3: { // execution_ids
      RawPlan::IdEntry E;
      bool R = submessage(W, T, Sub) && message(Sub, [&](Wire &M, uint32_t G, uint32_t U) {
                 if (G == 1)
                   return scalar(M, U, E.Id);
                 if (G == 4)
                   return M.repeated(U, E.Positions);
                 return M.skip(U);
               });
      P.ExecutionIds.push_back(std::move(E));
      return R;
    }
    case 4: { // block_chains
      RawPlan::Chain C;
      bool R = submessage(W, T, Sub) && message(Sub, [&](Wire &M, uint32_t G, uint32_t U) {
                 if (G == 1)
                   return scalar(M, U, C.Id);
                 if (G == 2)
                   return scalar(M, U, C.Position);
                 if (G == 3)
                   return M.repeated(U, C.Blocks);
                 return M.skip(U);
               });
      P.Chains.push_back(std::move(C));
      return R;
    }
    case 5:
      return W.repeated(T, P.PositionIds);
    case 8:
      return W.repeated(T, P.PositionContexts);
    case 6: { // actions
      RawPlan::Action A;
      bool R = submessage(W, T, Sub) && message(Sub, [&](Wire &M, uint32_t G, uint32_t U) -> bool {
                 Wire S(nullptr, nullptr);
                 switch (G) {
                 case 1:
                   return scalar(M, U, A.Kind);
                 case 2:
                   return scalar(M, U, A.Position);
                 case 3:
                   return scalar(M, U, A.DuePosition);
                 case 4: {
                   MemRange Rg;
                   bool Ok2 =
                       submessage(M, U, S) && message(S, [&](Wire &X, uint32_t H, uint32_t V) {
                         if (H == 1)
                           return scalar(X, V, Rg.Address);
                         if (H == 2)
                           return scalar(X, V, Rg.Bytes);
                         return X.skip(V);
                       });
                   A.Ranges.push_back(Rg);
                   return Ok2;
                 }
                 case 5:
                   return scalar(M, U, A.Advice);
                 default:
                   return M.skip(U);
                 }
               });
      P.Actions.push_back(std::move(A));
      return R;
    }
    case 7: // layout
      return submessage(W, T, Sub) && message(Sub, [&](Wire &M, uint32_t G, uint32_t U) -> bool {
               Wire S(nullptr, nullptr);
               if (G == 1)
                 return scalar(M, U, P.ArenaBytes);
               if (G != 2)
                 return M.skip(U);
               RawPlan::Placement Pl;
               bool Ok2 = submessage(M, U, S) && message(S, [&](Wire &X, uint32_t H, uint32_t V) {
                            switch (H) {
                            case 1:
                              return scalar(X, V, Pl.Sequence);
                            case 2:
                              return scalar(X, V, Pl.Size);
                            case 3:
                              return scalar(X, V, Pl.Offset);
                            case 4:
                              return scalar(X, V, Pl.Persistent);
                            default:
                              return X.skip(V);
                            }
                          });
               P.Placements.push_back(Pl);
               return Ok2;
             });
    default:
      return W.skip(T);
    }
  });
  if (!Ok) {
    Error = "not a deepum plan (protobuf wire format is truncated or corrupt)";
    return false;
  }
  return true;
}

bool readCompiledPlan(const std::string &Path, CompiledPlan &Out, std::string &Error) {
  std::ifstream In(Path, std::ios::binary);
  if (!In) {
    Error = Path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  std::ostringstream SS;
  SS << In.rdbuf();
  std::string Bytes = SS.str();
  if (Bytes.size() > kMaxPlanBytes) {
    Error = Path + ": larger than 4 GiB";
    return false;
  }
  if (Bytes.size() >= 2 && static_cast<uint8_t>(Bytes[0]) == 0x1f &&
      static_cast<uint8_t>(Bytes[1]) == 0x8b) {
    std::string Plain;
    if (!gunzip(Bytes, Plain, Error)) {
      Error = Path + ": " + Error;
      return false;
    }
    Bytes.swap(Plain);
  }
  RawPlan Raw;
  if (!decodePlan(Bytes, Raw, Error) || !compileRawPlan(Raw, Path, Out, Error)) {
    Error = Path + ": " + Error;
    return false;
  }
  return true;
}

} // namespace deepum::executor
