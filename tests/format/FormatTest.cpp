//===- FormatTest.cpp - Reading and writing profiles and plans --------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <fstream>

using namespace deepum;
using namespace deepum::test;
using ::testing::HasSubstr;
using ::testing::StartsWith;

namespace {

v1::Profile smallProfile() {
  ProfileBuilder B;
  uint64_t W = B.allocate(3 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  uint64_t X = B.allocate(1 << 20, 0, 5000);
  B.kernel("gemm", 1000, {{W, v1::ACCESS_MODE_READ}, {X, v1::ACCESS_MODE_WRITE}});
  B.kernel("relu", 500, {{X, v1::ACCESS_MODE_READ_WRITE}});
  B.iteration(0, 2);
  return B.build();
}

void writeRaw(const std::string &Path, const std::string &Bytes) {
  std::ofstream(Path, std::ios::binary) << Bytes;
}

std::string readRaw(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(In), {});
}

TEST(Format, RoundTripsEveryEncoding) {
  std::string Dir = scratchDir("Format.RoundTrips");
  v1::Profile P = smallProfile();
  for (const char *Name : {"p.profile.pb", "p.profile.pb.gz", "p.profile.json", "p.profile.txtpb",
                           "p.profile.json.gz"}) {
    std::string Path = Dir + "/" + Name;
    ASSERT_FALSE(bool(format::writeProfile(P, Path))) << Name;
    v1::Profile Back = takeOk(format::readProfile(Path));
    EXPECT_EQ(Back.SerializeAsString(), P.SerializeAsString()) << Name;
  }
  // ".gz" really compresses: the file starts with the gzip magic.
  std::string Gz = readRaw(Dir + "/p.profile.pb.gz");
  ASSERT_GE(Gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(Gz[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(Gz[1]), 0x8b);
}

TEST(Format, WritesWholeFilesOnly) {
  std::string Dir = scratchDir("Format.WritesWhole");
  v1::Profile P = smallProfile();
  ASSERT_FALSE(bool(format::writeProfile(P, Dir + "/a.profile.pb")));
  std::error_code EC;
  int Files = 0;
  for (llvm::sys::fs::directory_iterator It(Dir, EC), End; It != End && !EC; It.increment(EC))
    ++Files;
  EXPECT_EQ(Files, 1) << "no temporary file may be left behind";
  std::string Err =
      errorText(format::writeProfile(P, Dir + "/no-such-dir/x.profile.pb"));
  EXPECT_THAT(Err, HasSubstr("no-such-dir/x.profile.pb"));
}

TEST(Format, RejectsBadFilesWithOneLineNamingTheFile) {
  std::string Dir = scratchDir("Format.BadFiles");
  v1::Profile P = smallProfile();
  std::string Good = P.SerializeAsString();

  struct Case {
    std::string Name, Bytes, Expect;
  };
  v1::Profile WrongVersion = P;
  WrongVersion.set_format_version(7);
  ASSERT_FALSE(bool(format::writeProfile(P, Dir + "/g.profile.pb.gz")));
  std::string GoodGz = readRaw(Dir + "/g.profile.pb.gz");
  std::vector<Case> Cases = {
      {"empty.profile.pb", "", "empty file"},
      {"truncated.profile.pb", Good.substr(0, Good.size() / 2), "not a deepum profile"},
      {"text.profile.pb", "hello, this is not protobuf at all\n", "not a deepum profile"},
      {"version.profile.pb", WrongVersion.SerializeAsString(),
       "unsupported profile format version 7"},
      {"truncated.profile.pb.gz", GoodGz.substr(0, GoodGz.size() - 12), "gzip"},
      {"corrupt.profile.pb.gz", GoodGz.substr(0, 10) + std::string(40, '\x55'), "gzip"},
  };
  // Flip bytes in the middle of a valid file: must fail cleanly (parse or validation).
  std::string Flipped = Good;
  for (size_t I = Flipped.size() / 3; I < Flipped.size() / 3 + 8; ++I)
    Flipped[I] = static_cast<char>(~Flipped[I]);
  Cases.push_back({"flipped.profile.pb", Flipped, ""});

  for (const Case &C : Cases) {
    std::string Path = Dir + "/" + C.Name;
    writeRaw(Path, C.Bytes);
    auto R = format::readProfile(Path);
    if (C.Expect.empty() && R)
      continue; // a flip may land in a free-form string
    std::string Err = errorText(std::move(R));
    EXPECT_THAT(Err, StartsWith(Path + ": ")) << C.Name;
    EXPECT_THAT(Err, HasSubstr(C.Expect)) << C.Name;
    EXPECT_EQ(Err.find('\n'), std::string::npos) << "one line: " << Err;
  }
  EXPECT_THAT(errorText(format::readProfile(Dir + "/missing.profile.pb")),
              StartsWith(Dir + "/missing.profile.pb: "));
  EXPECT_THAT(errorText(format::readProfile(Dir)), HasSubstr("is a directory"));
}

TEST(Format, DetectsPlansAndProfilesByContent) {
  std::string Dir = scratchDir("Format.Detect");
  v1::Plan Plan;
  Plan.set_format_version(format::kPlanFormatVersion);
  Plan.mutable_metadata()->set_um_block_bytes(format::kUmBlockBytes);
  Plan.mutable_metadata()->set_gpu_memory_bytes(1 << 30);
  std::string PlanBytes = Plan.SerializeAsString();
  std::string ProfBytes = smallProfile().SerializeAsString();
  EXPECT_EQ(takeOk(format::detectFileKind("x.pb", ProfBytes)), format::FileKind::Profile);
  EXPECT_EQ(takeOk(format::detectFileKind("x.pb", PlanBytes)), format::FileKind::Plan);
  EXPECT_EQ(takeOk(format::detectFileKind("x.plan.pb", "")), format::FileKind::Plan);
  EXPECT_THAT(errorText(format::detectFileKind("x.pb", "garbage!")), HasSubstr("neither"));
}

TEST(Format, ProfileIsNotReadAsPlan) {
  std::string Err = errorText(format::parsePlan(smallProfile().SerializeAsString(), "p.pb"));
  EXPECT_THAT(Err, StartsWith("p.pb: "));
}

} // namespace
