//===- ReadCost.cpp - What parsing a message would allocate, before it does ===//
//
// A binary message as small as two bytes per element (an empty repeated
// sub-message) becomes a C++ object of a hundred bytes or more once parsed: a
// gzip of 100 million empty allocations, 190 KB on disk and 200 MB inflated,
// cost deepum-inspect 12.7 GB. So before protobuf materialises anything, one
// pass over the wire format, driven by the message's descriptor, adds up what
// each field will cost in memory, and the reader refuses a file whose cost
// exceeds kReadMemoryFactor times its bytes plus kReadMemorySlackBytes.
//
// The model follows libprotobuf 3.21 on the heap (on an arena the same
// objects cost less: no allocator overhead), rounded up:
//  - a sub-message: its object (sizeof, from the default instance) plus one
//    allocation; in a repeated field also three pointer slots (the array
//    grows by doubling, and while it moves the old and new arrays are live);
//  - a string or bytes field: a std::string allocated on its own, plus its
//    buffer when it is too long for the small-string buffer;
//  - a repeated scalar: three times its element size per element (growth);
//  - an unknown field: three entries in the unknown-field set (growth), plus
//    a string for a length-delimited one, plus the set itself for the first
//    in each message.
//
// tests/format/ReadCostTest.cpp holds the estimate to what parsing random
// inputs allocates, counted by operator new.
//
//===----------------------------------------------------------------------===//
#include "deepum/format/Format.h"

#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

#include <map>
#include <memory>
#include <vector>

using namespace llvm;
namespace pb = google::protobuf;

namespace deepum::format {
namespace {

constexpr uint64_t kAllocOverhead = 16; // glibc's chunk header and rounding
// A repeated field's array grows by doubling, and while it moves both the old
// and the new array are live: three slots per element at the peak.
constexpr uint64_t kGrowth = 3;
constexpr uint64_t kPointerSlot = kGrowth * sizeof(void *);
constexpr uint64_t kStringObject = sizeof(std::string) + kAllocOverhead;
constexpr uint64_t kUnknownEntry = kGrowth * 16; // an UnknownField
constexpr uint64_t kUnknownSet = 64; // a message's first unknown field allocates its set
constexpr int kMaxDepth = 100;             // protobuf's default recursion limit

uint64_t stringCost(uint64_t Len) {
  // libstdc++ keeps 15 characters in the object itself.
  return kStringObject + (Len > 15 ? Len + 1 + kAllocOverhead : 0);
}

uint64_t scalarSize(const pb::FieldDescriptor &F) {
  switch (F.cpp_type()) {
  case pb::FieldDescriptor::CPPTYPE_BOOL:
    return 1;
  case pb::FieldDescriptor::CPPTYPE_INT32:
  case pb::FieldDescriptor::CPPTYPE_UINT32:
  case pb::FieldDescriptor::CPPTYPE_FLOAT:
  case pb::FieldDescriptor::CPPTYPE_ENUM:
    return 4;
  default:
    return 8;
  }
}

/// The wire type a field is written with (packed repeated scalars aside).
int wireTypeOf(const pb::FieldDescriptor &F) {
  switch (F.type()) {
  case pb::FieldDescriptor::TYPE_DOUBLE:
  case pb::FieldDescriptor::TYPE_FIXED64:
  case pb::FieldDescriptor::TYPE_SFIXED64:
    return 1;
  case pb::FieldDescriptor::TYPE_FLOAT:
  case pb::FieldDescriptor::TYPE_FIXED32:
  case pb::FieldDescriptor::TYPE_SFIXED32:
    return 5;
  case pb::FieldDescriptor::TYPE_STRING:
  case pb::FieldDescriptor::TYPE_BYTES:
  case pb::FieldDescriptor::TYPE_MESSAGE:
    return 2;
  case pb::FieldDescriptor::TYPE_GROUP:
    return 3;
  default:
    return 0;
  }
}

/// A message type as the walk needs it: its fields by number, the tables of
/// their message types (filled on first use) and its object's size, so that
/// no lookup by name or hash happens per field or per element.
struct TypeTable {
  const pb::Descriptor *Type = nullptr;
  std::vector<const pb::FieldDescriptor *> ByNumber;
  std::vector<TypeTable *> Child;
  uint64_t ObjectBytes = 0;
};

class CostWalker {
public:
  explicit CostWalker(uint64_t StopAbove) : Limit(StopAbove) {}
  ReadCost Cost;

  /// Walks one message's fields; false at the first malformed byte (the
  /// parser then reports it, having built no more than was counted).
  /// Inside a group (`EndTag` set) the walk ends at an end-group tag, which
  /// it stores there.
  bool message(const uint8_t *&P, const uint8_t *End, TypeTable *T, int Depth,
               uint64_t *EndTag = nullptr) {
    bool SawUnknown = false;
    while (P < End) {
      // Over the limit: the file is refused whatever follows.
      if (Cost.Bytes > Limit)
        return false;
      uint64_t Tag;
      if (!varint(P, End, Tag) || Tag > UINT32_MAX || (Tag >> 3) == 0)
        return false;
      int Wire = static_cast<int>(Tag & 7);
      if (Wire == 4) {
        if (!EndTag)
          return false;
        *EndTag = Tag;
        return true;
      }
      const uint64_t Num = Tag >> 3;
      const pb::FieldDescriptor *F =
          !T                           ? nullptr
          : Num < T->ByNumber.size() ? T->ByNumber[Num]
                                       : T->Type->FindFieldByNumber(static_cast<int>(Num));
      if (!F || !fieldOf(P, End, *T, *F, Wire, Depth)) {
        if (!SawUnknown)
          charge(nullptr, kUnknownSet, 0);
        SawUnknown = true;
        if (!unknown(P, End, Wire, Tag, Depth))
          return false;
      }
    }
    return true;
  }

  TypeTable *tableOf(const pb::Descriptor *D) {
    std::unique_ptr<TypeTable> &T = Tables[D];
    if (T)
      return T.get();
    T = std::make_unique<TypeTable>();
    T->Type = D;
    const pb::Message *Proto = pb::MessageFactory::generated_factory()->GetPrototype(D);
    T->ObjectBytes = (Proto ? Proto->SpaceUsedLong() : 256) + kAllocOverhead;
    // Numbers past this are looked up by the descriptor (none in deepum's protos).
    constexpr int kDirect = 1024;
    for (int I = 0; I < D->field_count(); ++I) {
      int Num = D->field(I)->number();
      if (Num >= kDirect)
        continue;
      if (static_cast<size_t>(Num) >= T->ByNumber.size())
        T->ByNumber.resize(static_cast<size_t>(Num) + 1, nullptr);
      T->ByNumber[static_cast<size_t>(Num)] = D->field(I);
    }
    T->Child.assign(T->ByNumber.size(), nullptr);
    return T.get();
  }

private:
  uint64_t Limit;
  std::map<const pb::Descriptor *, std::unique_ptr<TypeTable>> Tables;
  // The field charged last, and its tally: a large message repeats one
  // field millions of times, so the map is searched once per run of it.
  const pb::FieldDescriptor *LastField = nullptr;
  ReadCost::Tally *LastTally = nullptr;

  static bool varint(const uint8_t *&P, const uint8_t *End, uint64_t &V) {
    V = 0;
    for (int I = 0; I < 10 && P < End; ++I) {
      uint8_t B = *P++;
      V |= uint64_t{B & 0x7fu} << (7 * I);
      if (!(B & 0x80))
        return true;
    }
    return false;
  }

  static bool length(const uint8_t *&P, const uint8_t *End, uint64_t &Len) {
    return varint(P, End, Len) && Len <= static_cast<uint64_t>(End - P);
  }

  TypeTable *childOf(TypeTable &T, const pb::FieldDescriptor &F) {
    size_t Num = static_cast<size_t>(F.number());
    if (Num >= T.Child.size())
      return tableOf(F.message_type());
    if (!T.Child[Num])
      T.Child[Num] = tableOf(F.message_type());
    return T.Child[Num];
  }

  void charge(const pb::FieldDescriptor *F, uint64_t Bytes, uint64_t Elements) {
    Cost.Bytes += Bytes;
    if (!F)
      return;
    if (F != LastField) {
      LastField = F;
      LastTally = &Cost.Fields[F];
    }
    LastTally->Elements += Elements;
    LastTally->Bytes += Bytes;
  }

  /// A known field written with its own wire type (or packed); false when
  /// the wire type differs, which makes it an unknown field.
  bool fieldOf(const uint8_t *&P, const uint8_t *End, TypeTable &T, const pb::FieldDescriptor &F,
               int Wire, int Depth) {
    bool Repeated = F.is_repeated();
    if (Wire != wireTypeOf(F)) {
      // A repeated scalar may come packed.
      if (!(Repeated && Wire == 2 && wireTypeOf(F) != 2 && wireTypeOf(F) != 3))
        return false;
      uint64_t Len;
      if (!length(P, End, Len))
        return P = End, true; // malformed: stop here, counted so far
      uint64_t N = 0;
      int Own = wireTypeOf(F);
      if (Own == 1)
        N = Len / 8;
      else if (Own == 5)
        N = Len / 4;
      else
        for (uint64_t I = 0; I < Len; ++I)
          N += !(P[I] & 0x80);
      P += Len;
      charge(&F, kGrowth * scalarSize(F) * N, N);
      return true;
    }
    uint64_t V, Len;
    switch (Wire) {
    case 0:
      if (!varint(P, End, V))
        return P = End, true;
      break;
    case 1:
    case 5: {
      size_t N = Wire == 1 ? 8 : 4;
      if (static_cast<size_t>(End - P) < N)
        return P = End, true;
      P += N;
      break;
    }
    case 2:
      if (!length(P, End, Len))
        return P = End, true;
      if (F.cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        TypeTable *Child = childOf(T, F);
        charge(&F, Child->ObjectBytes + (Repeated ? kPointerSlot : 0), 1);
        const uint8_t *Sub = P;
        P += Len;
        if (Depth + 1 > kMaxDepth || !message(Sub, P, Child, Depth + 1))
          return P = End, true;
        return true;
      }
      charge(&F, stringCost(Len) + (Repeated ? kPointerSlot : 0), 1);
      P += Len;
      return true;
    case 3: // a group field (not in deepum's protos): walk it as unknown
      return false;
    }
    if (Repeated)
      charge(&F, kGrowth * scalarSize(F), 1);
    return true;
  }

  bool unknown(const uint8_t *&P, const uint8_t *End, int Wire, uint64_t Tag, int Depth) {
    charge(nullptr, kUnknownEntry, 0);
    uint64_t V, Len;
    switch (Wire) {
    case 0:
      return varint(P, End, V);
    case 1:
    case 5: {
      size_t N = Wire == 1 ? 8 : 4;
      if (static_cast<size_t>(End - P) < N)
        return false;
      P += N;
      return true;
    }
    case 2:
      if (!length(P, End, Len))
        return false;
      charge(nullptr, stringCost(Len), 0);
      P += Len;
      return true;
    case 3: {
      // A group: its own unknown-field set, then its fields up to the end tag.
      charge(nullptr, 64, 0);
      uint64_t EndTag = 0;
      return Depth + 1 <= kMaxDepth && message(P, End, nullptr, Depth + 1, &EndTag) &&
             EndTag == Tag + 1;
    }
    default:
      return false;
    }
  }
};

} // namespace

ReadCost estimateReadCost(StringRef Bytes, const pb::Descriptor &Type, uint64_t StopAbove) {
  CostWalker W(StopAbove);
  const auto *P = reinterpret_cast<const uint8_t *>(Bytes.data());
  (void)W.message(P, P + Bytes.size(), W.tableOf(&Type), 0);
  return W.Cost;
}

uint64_t readMemoryBound(uint64_t Bytes) {
  return kReadMemoryFactor * Bytes + kReadMemorySlackBytes;
}

} // namespace deepum::format
