//===- ReadCostTest.cpp - The readers' memory stays within their bound -----===//
//
// This binary counts every byte allocated through operator new, so each test
// can measure the peak a reader reaches: protobuf's parse must stay within
// what estimateReadCost said before it (the estimate is what the bound is
// checked on), and libdeepum's decoder within its own bound.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/CompiledPlan.h"
#include "deepum/format/Format.h"
#include "deepum/format/PlanWire.h"

#include "TestSupport.h"
#include "Wire.h"

#include "google/protobuf/descriptor.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <random>

#include <malloc.h>

namespace {
std::atomic<uint64_t> Live{0}, Peak{0};

void *counted(size_t N) {
  void *P = std::malloc(N ? N : 1);
  if (!P)
    throw std::bad_alloc();
  uint64_t Now = Live.fetch_add(malloc_usable_size(P)) + malloc_usable_size(P);
  uint64_t Old = Peak.load();
  while (Now > Old && !Peak.compare_exchange_weak(Old, Now)) {
  }
  return P;
}
void uncounted(void *P) {
  if (!P)
    return;
  Live.fetch_sub(malloc_usable_size(P));
  std::free(P);
}

/// Bytes allocated at the peak of `Fn`, above what was live before it.
template <typename Fn> uint64_t peakOf(Fn &&F) {
  uint64_t Start = Live.load();
  Peak.store(Start);
  F();
  return Peak.load() - Start;
}
} // namespace

void *operator new(size_t N) { return counted(N); }
void *operator new[](size_t N) { return counted(N); }
void operator delete(void *P) noexcept { uncounted(P); }
void operator delete[](void *P) noexcept { uncounted(P); }
void operator delete(void *P, size_t) noexcept { uncounted(P); }
void operator delete[](void *P, size_t) noexcept { uncounted(P); }

namespace deepum::format {
namespace {
namespace pb = google::protobuf;

using deepum::test::varint;

/// Random wire bytes shaped like a message of `D`: mostly its own fields
/// (many small sub-messages, packed runs, strings), some with another wire
/// type, and unknown fields. Much of it parses; what does not still
/// exercises the parser up to the bad byte.
class Shaper {
public:
  explicit Shaper(uint32_t Seed) : Rng(Seed) {}

  std::string message(const pb::Descriptor &D, int Depth) {
    std::string Out;
    int Fields = pick(Depth == 0 ? 400 : 12);
    for (int I = 0; I < Fields; ++I) {
      int Roll = pick(100);
      if (Roll < 10 || D.field_count() == 0) {
        Out += unknown(Depth);
        continue;
      }
      const pb::FieldDescriptor &F = *D.field(pick(D.field_count()));
      uint32_t Num = static_cast<uint32_t>(F.number());
      if (Roll < 15) { // its number, another wire type
        Out += varint(Num << 3 | 5) + std::string(4, '\x01');
        continue;
      }
      Out += field(F, Num, Depth);
    }
    return Out;
  }

private:
  std::mt19937 Rng;
  int pick(int N) { return static_cast<int>(Rng() % static_cast<uint32_t>(N)); }

  std::string lenField(uint32_t Num, const std::string &Body) {
    return varint(Num << 3 | 2) + varint(Body.size()) + Body;
  }

  std::string field(const pb::FieldDescriptor &F, uint32_t Num, int Depth) {
    switch (F.cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_MESSAGE: {
      // Runs of empty or near-empty elements: the costliest input per byte.
      std::string Out;
      int Copies = F.is_repeated() ? 1 + pick(64) : 1;
      std::string Body = Depth < 3 && pick(3) == 0 ? message(*F.message_type(), Depth + 1) : "";
      for (int K = 0; K < Copies; ++K)
        Out += lenField(Num, Body);
      return Out;
    }
    case pb::FieldDescriptor::CPPTYPE_STRING:
      return lenField(Num, std::string(static_cast<size_t>(pick(3) ? pick(16) : pick(100)), 'a'));
    default:
      break;
    }
    bool Fixed64 = F.type() == pb::FieldDescriptor::TYPE_DOUBLE ||
                   F.type() == pb::FieldDescriptor::TYPE_FIXED64;
    bool Fixed32 = F.type() == pb::FieldDescriptor::TYPE_FLOAT ||
                   F.type() == pb::FieldDescriptor::TYPE_FIXED32;
    auto Value = [&] {
      if (Fixed64)
        return std::string(8, '\x02');
      if (Fixed32)
        return std::string(4, '\x02');
      return varint(static_cast<uint64_t>(pick(3) ? pick(128) : Rng()));
    };
    if (F.is_repeated() && pick(2)) {
      std::string Run;
      for (int K = 0, N = 1 + pick(200); K < N; ++K)
        Run += Value();
      return lenField(Num, Run);
    }
    return varint(Num << 3 | (Fixed64 ? 1 : Fixed32 ? 5 : 0)) + Value();
  }

  std::string unknown(int Depth) {
    uint32_t Num = 1000 + static_cast<uint32_t>(pick(50));
    switch (pick(Depth < 3 ? 5 : 4)) {
    case 0:
      return varint(Num << 3) + varint(Rng());
    case 1:
      return varint(Num << 3 | 1) + std::string(8, '\x03');
    case 2:
      return lenField(Num, std::string(static_cast<size_t>(pick(40)), 'u'));
    case 3:
      return varint(Num << 3 | 5) + std::string(4, '\x03');
    default: // a group holding unknown fields
      return varint(Num << 3 | 3) + unknown(Depth + 1) + unknown(Depth + 1) + varint(Num << 3 | 4);
    }
  }
};

template <typename Msg> void checkEstimateBoundsTheParse(const std::string &What) {
  int Parsed = 0;
  for (uint32_t Seed = 1; Seed <= 300; ++Seed) {
    std::string Bytes = Shaper(Seed).message(*Msg::descriptor(), 0);
    ReadCost Cost = estimateReadCost(Bytes, *Msg::descriptor());
    bool Ok = false;
    uint64_t Used = peakOf([&] {
      Msg M;
      Ok = M.ParseFromArray(Bytes.data(), static_cast<int>(Bytes.size()));
    });
    Parsed += Ok;
    EXPECT_LE(Used, Cost.Bytes) << What << " seed " << Seed << ": " << Bytes.size()
                                << " bytes, parse " << (Ok ? "ok" : "failed");
  }
  // The inputs must exercise whole parses, not only early failures.
  EXPECT_GT(Parsed, 100) << What;
}

TEST(ReadCost, TheEstimateBoundsWhatParsingAProfileAllocates) {
  checkEstimateBoundsTheParse<deepum::v1::Profile>("profile");
}

TEST(ReadCost, TheEstimateBoundsWhatParsingAPlanAllocates) {
  checkEstimateBoundsTheParse<deepum::v1::Plan>("plan");
}

/// The reader as the tools call it (message, then its checks) takes at most
/// twice the estimate plus the bytes: with the estimate within the bound,
/// reading stays within 16 times the bytes plus 128 MiB, whatever the input.
TEST(ReadCost, ReadingAndCheckingTakesAtMostTwiceTheEstimate) {
  for (uint32_t Seed = 1; Seed <= 100; ++Seed) {
    for (bool Plan : {false, true}) {
      const pb::Descriptor &Type =
          Plan ? *deepum::v1::Plan::descriptor() : *deepum::v1::Profile::descriptor();
      std::string Bytes = Shaper(Seed).message(Type, 0);
      uint64_t Estimate = estimateReadCost(Bytes, Type).Bytes;
      uint64_t Used = peakOf([&] {
        if (Plan)
          consumeError(parsePlan(Bytes, "fuzz").takeError());
        else
          consumeError(parseProfile(Bytes, "fuzz").takeError());
      });
      EXPECT_LE(Used, 2 * Estimate + Bytes.size() + 4096)
          << "seed " << Seed << (Plan ? " plan " : " profile ") << Bytes.size() << " bytes";
    }
  }
}

/// A profile of many empty allocations: two bytes each, over 100 bytes each
/// once parsed. Refused in one line, before protobuf builds anything.
TEST(ReadCost, ManyEmptyRecordsAreRefusedBeforeTheParse) {
  std::string Bytes = std::string("\x08\x01", 2);
  const uint64_t Count = uint64_t{8} << 20; // 16 MiB of wire bytes
  for (uint64_t I = 0; I < Count; ++I)
    Bytes += std::string("\x3a\x00", 2);
  std::string Error;
  uint64_t Used = peakOf([&] {
    auto P = parseProfile(Bytes, "empty.profile.pb");
    ASSERT_FALSE(static_cast<bool>(P));
    Error = toString(P.takeError());
  });
  EXPECT_THAT(Error, testing::StartsWith("empty.profile.pb: holds at least "));
  EXPECT_THAT(Error, testing::HasSubstr(" allocations, which would take at least "));
  EXPECT_THAT(Error, testing::EndsWith("; refusing it"));
  EXPECT_LT(Used, uint64_t{1} << 20);
}

/// Text and JSON hold the same records in three bytes each ("{},"): they
/// are held to the same bound, JSON through the binary form its parser builds
/// on its way, text by counting what each character may open.
TEST(ReadCost, TextAndJsonAreHeldToTheSameBound) {
  const uint64_t Count = uint64_t{4} << 20;
  std::string List;
  for (uint64_t I = 0; I < Count; ++I)
    List += I ? ",{}" : "{}";
  std::string Json = "{\"format_version\": 1, \"allocations\": [" + List + "]}";
  std::string Text = "format_version: 1 allocations: [" + List + "]";
  struct Case {
    const char *Name;
    const std::string *Bytes;
    Encoding Enc;
  };
  for (const Case &C : {Case{"a.profile.json", &Json, Encoding::Json},
                        Case{"a.profile.txtpb", &Text, Encoding::Text}}) {
    std::string Error;
    uint64_t Used =
        peakOf([&] { Error = toString(parseProfile(*C.Bytes, C.Name, C.Enc).takeError()); });
    EXPECT_THAT(Error, testing::StartsWith(std::string(C.Name) + ": holds "));
    EXPECT_THAT(Error, testing::EndsWith("; refusing it"));
    // Refused before the message is built: JSON's converter to the binary
    // form is all that ran (4.6 times the JSON here).
    EXPECT_LT(Used, kReadMemoryFactor * C.Bytes->size()) << C.Name;
  }
}

/// libdeepum's decoder: a packed run of one-byte positions is counted before
/// it is stored, and the decode ends without building the vector.
TEST(ReadCost, LibdeepumRefusesPositionsItCannotHold) {
  const uint64_t N = 32u << 20;
  std::string Bytes = "\x2a" + varint(N) + std::string(N, '\x01');
  RawPlan Raw;
  std::string Error;
  bool Ok = true;
  uint64_t Used = peakOf([&] { Ok = decodePlanWire(Bytes, Raw, Error); });
  EXPECT_FALSE(Ok);
  EXPECT_THAT(Error, testing::StartsWith("would take more than "));
  EXPECT_THAT(Error, testing::EndsWith("; refusing it"));
  EXPECT_LT(Used, uint64_t{1} << 20);
}

/// Positions that decode within the reader's bound are compiled only when
/// their tables fit too: 5 million positions in 15 MB would take 1.3 GB.
TEST(ReadCost, LibdeepumComputesTheCompiledTablesBeforeBuildingThem) {
  RawPlan Raw;
  Raw.PositionIds.assign(5'000'000, 1);
  std::string Error = executor::checkCompiledPlanBytes(Raw, 15'000'000);
  EXPECT_THAT(Error, testing::StartsWith("holds 5000000 launch positions, which would take "));
  Raw.PositionIds.assign(100'000, 1);
  EXPECT_EQ(executor::checkCompiledPlanBytes(Raw, 15'000'000), "");
}

/// The shipped profiles, far inside the bound; the ratios are the figures in
/// docs/hostile-input.md.
TEST(ReadCost, ShippedProfilesAreWellInsideTheBound) {
  for (const char *Name : {"bart-large", "bert-large", "gpt2-medium", "h100-gpt2-medium-b4",
                           "h100-resnet50-b64", "llama-1b-ckpt", "llama-1b", "resnet50-b32",
                           "resnet50", "vgg16", "vit_b_16"}) {
    std::string Path = test::dataPath(std::string(Name) + ".profile.pb.gz");
    auto Bytes = readFileBytes(Path);
    ASSERT_TRUE(static_cast<bool>(Bytes)) << toString(Bytes.takeError());
    ReadCost Cost = estimateReadCost(*Bytes, *deepum::v1::Profile::descriptor());
    uint64_t Used = peakOf([&] {
      auto P = parseProfile(*Bytes, Path);
      EXPECT_TRUE(static_cast<bool>(P)) << toString(P.takeError());
    });
    double Estimate = double(Cost.Bytes) / double(Bytes->size());
    double Measured = double(Used) / double(Bytes->size());
    std::printf("%-22s %9zu bytes  estimate %.2fx  read %.2fx\n", Name, Bytes->size(), Estimate,
                Measured);
    EXPECT_LE(Cost.Bytes, kReadMemoryFactor * Bytes->size()) << Name;
  }
}

} // namespace
} // namespace deepum::format
