//===- FormatTest.cpp - Reading and writing profiles and plans --------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <csignal>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

// --- Hostile input: caps, gzip strictness, escaping, outputs -------------

TEST(FormatLimits, GzipBombIsRefusedWhileInflating) {
  // 8 MiB of zeros compress to a few KiB; the cap is 1 MiB.
  std::string Dir = scratchDir("FormatLimits.Bomb");
  std::string Path = Dir + "/bomb.pb.gz";
  // Compress through the library's own writer: a text "profile" of one long string.
  v1::Profile P;
  P.set_producer(std::string(8 << 20, 'x'));
  ASSERT_FALSE(bool(format::writeProfile(P, Path)));
  ASSERT_LT(readRaw(Path).size(), 64u << 10);
  format::ReadLimits L;
  L.DecompressedBytes = 1 << 20;
  std::string Err = errorText(format::readFileBytes(Path, L));
  EXPECT_EQ(Err, Path + ": decompresses to more than 1 MiB; refusing to read it");
  EXPECT_EQ(format::kMaxDecompressedBytes, uint64_t{1} << 30);
}

TEST(FormatLimits, LargeRegularFileIsRefusedBeforeReading) {
  std::string Path = scratchDir("FormatLimits.Large") + "/big.profile.pb";
  writeRaw(Path, std::string(2048, 'x'));
  format::ReadLimits L;
  L.FileBytes = 1024;
  EXPECT_EQ(errorText(format::readFileBytes(Path, L)),
            Path + ": larger than 1 KiB; refusing to read it");
}

TEST(FormatLimits, DevicesAreReadInBoundedChunks) {
  // /dev/zero never ends: the stream cap must stop it, quickly.
  format::ReadLimits L;
  L.StreamBytes = 1 << 20;
  EXPECT_EQ(errorText(format::readFileBytes("/dev/zero", L)),
            "/dev/zero: more than 1 MiB from a pipe or device; refusing to read it");
  // A device whose content fits is read whole.
  EXPECT_EQ(takeOk(format::readFileBytes("/dev/null", L)), "");
}

TEST(FormatLimits, PipesAreCapped) {
  int Fds[2];
  ASSERT_EQ(::pipe(Fds), 0);
  std::thread Writer([Fd = Fds[1]] {
    std::string Chunk(1 << 16, 'z');
    // Stops when the reader closes its end (EPIPE: SIGPIPE is ignored below).
    while (::write(Fd, Chunk.data(), Chunk.size()) > 0) {
    }
    ::close(Fd);
  });
  auto OldPipe = std::signal(SIGPIPE, SIG_IGN);
  format::ReadLimits L;
  L.StreamBytes = 256 << 10;
  std::string Path = "/proc/self/fd/" + std::to_string(Fds[0]);
  std::string Err = errorText(format::readFileBytes(Path, L));
  ::close(Fds[0]);
  Writer.join();
  std::signal(SIGPIPE, OldPipe);
  EXPECT_EQ(Err, Path + ": more than 256 KiB from a pipe or device; refusing to read it");
}

TEST(FormatGzip, TrailingGarbageIsRejected) {
  std::string Dir = scratchDir("FormatGzip.Trailing");
  ASSERT_FALSE(bool(format::writeProfile(smallProfile(), Dir + "/g.profile.pb.gz")));
  std::string Gz = readRaw(Dir + "/g.profile.pb.gz");
  for (const std::string &Tail :
       {std::string("garbage"), std::string(4, '\0'), std::string("\x1f", 1)}) {
    std::string Path = Dir + "/t.profile.pb.gz";
    writeRaw(Path, Gz + Tail);
    std::string Err = errorText(format::readProfile(Path));
    EXPECT_EQ(Err, Path + ": " + std::to_string(Tail.size()) +
                       " bytes of trailing garbage after the gzip data")
        << Tail.size();
  }
}

TEST(FormatGzip, ASecondMemberIsRejectedClearly) {
  // RFC 1952 allows several members; deepum writes one and reads one, as
  // libdeepum's plan reader does, and says so rather than ignoring the rest.
  std::string Dir = scratchDir("FormatGzip.Members");
  v1::Profile First = smallProfile();
  First.set_producer("first");
  v1::Profile Second;
  Second.set_producer("second");
  ASSERT_FALSE(bool(format::writeProfile(First, Dir + "/a.pb.gz")));
  ASSERT_FALSE(bool(format::writeProfile(Second, Dir + "/b.pb.gz")));
  std::string Path = Dir + "/ab.profile.pb.gz";
  writeRaw(Path, readRaw(Dir + "/a.pb.gz") + readRaw(Dir + "/b.pb.gz"));
  EXPECT_EQ(errorText(format::readProfile(Path)),
            Path + ": a second gzip member follows the first (concatenated gzip files are not "
                   "read: decompress and compress it again as one)");
}

TEST(FormatMessages, ControlCharactersInNamesAreEscaped) {
  EXPECT_EQ(format::escapeForMessage("a\nb\tc\x1b[31md\x7f"), "a\\nb\\tc\\x1b[31md\\x7f");
  EXPECT_EQ(format::escapeForMessage("caf\xc3\xa9 \\n"), "caf\xc3\xa9 \\n")
      << "UTF-8 and backslashes pass";
  EXPECT_EQ(format::escapeForMessage("\xff\xc2\x9b"), "\\xff\\xc2\\x9b") << "not UTF-8; C1 control";
  EXPECT_EQ(format::escapeForMessage(format::escapeForMessage("x\ny")), "x\\ny");

  std::string Dir = scratchDir("FormatMessages.Escaped");
  std::string Name = "bad\nname\x1b[2J.profile.pb";
  writeRaw(Dir + "/" + Name, "garbage");
  std::string Err = errorText(format::readProfile(Dir + "/" + Name));
  EXPECT_THAT(Err, StartsWith(Dir + "/bad\\nname\\x1b[2J.profile.pb: "));
  EXPECT_EQ(Err.find_first_of("\n\x1b"), std::string::npos) << Err;

  // A kernel name from the file, quoted by validation.
  v1::Profile P = smallProfile();
  P.mutable_kernels(1)->set_name("evil\r\nkernel\x1b]0;title\x07");
  P.mutable_kernels(1)->set_end_ns(P.kernels(1).start_ns() - 1);
  Err = errorText(format::parseProfile(P.SerializeAsString(), "k.profile.pb"));
  EXPECT_THAT(Err, HasSubstr("evil\\r\\nkernel\\x1b]0;title\\x07"));
  EXPECT_EQ(Err.find_first_of("\r\n\x1b\x07"), std::string::npos) << Err;
}

TEST(FormatMessages, LibprotobufLogsNothingByItself) {
  // Text and JSON parse errors: reported once, in our one line, with the parser's reason.
  testing::internal::CaptureStderr();
  std::string TextErr = errorText(format::parseProfile(
      "format_version: 1\nkernels { nam: \"x\" }\n", "a.profile.txtpb", format::Encoding::Text));
  std::string JsonErr = errorText(format::parseProfile("{\"format_version\": \"abc\n\"}",
                                                       "b.profile.json", format::Encoding::Json));
  std::string Logged = testing::internal::GetCapturedStderr();
  EXPECT_EQ(Logged, "");
  EXPECT_THAT(TextErr, StartsWith("a.profile.txtpb: not a deepum profile in protobuf text format"));
  EXPECT_THAT(TextErr, HasSubstr("line 2"));
  EXPECT_THAT(TextErr, HasSubstr("no field named \"nam\""));
  EXPECT_EQ(TextErr.find('\n'), std::string::npos) << TextErr;
  EXPECT_THAT(JsonErr, StartsWith("b.profile.json: not a deepum profile in JSON"));
  EXPECT_EQ(JsonErr.find('\n'), std::string::npos) << JsonErr;
}

// Found by fuzz_profile_read / fuzz_plan_read: the text and JSON parsers
// accepted strings that are not UTF-8, which the binary readers refuse, so
// `deepum-inspect --convert x.txtpb y.pb` wrote a file nothing could read.
TEST(FormatMessages, TextAndJsonStringsMustBeUtf8) {
  testing::internal::CaptureStderr();
  std::string Text = errorText(format::parsePlan(
      "format_version: 1\nmetadata { model: \"r\\377x\" um_block_bytes: 2097152 }\n"
      "position_ids: 1\nexecution_ids { execution_id: 1 positions: 0 }\n",
      "u.plan.txtpb", format::Encoding::Text));
  std::string Json = errorText(format::parseProfile(
      "{\"format_version\": 1, \"workload\": {\"model\": \"\\ud800\"}}", "u.profile.json",
      format::Encoding::Json));
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  EXPECT_THAT(Text, HasSubstr("u.plan.txtpb: not a deepum plan (a string field is not valid UTF-8)"));
  EXPECT_THAT(Json, StartsWith("u.profile.json: not a deepum profile"));
  // The same plan with a valid string reads.
  EXPECT_TRUE(static_cast<bool>(format::parsePlan(
      "format_version: 1\nmetadata { model: \"r\\303\\251\" um_block_bytes: 2097152 }\n"
      "position_ids: 1\nexecution_ids { execution_id: 1 positions: 0 }\n",
      "v.plan.txtpb", format::Encoding::Text)));
}

// Devices take the same path as FIFOs (opened and written in place). No test
// writes to /dev/null itself: run as root against a writer that renames, it
// would replace the machine's /dev/null.
TEST(FormatOutput, WritesThroughFifosInsteadOfReplacingThem) {
  std::string Fifo = scratchDir("FormatOutput.Fifo") + "/out.json";
  (void)::unlink(Fifo.c_str()); // scratchDir cannot remove a FIFO
  ASSERT_EQ(::mkfifo(Fifo.c_str(), 0600), 0);
  // The reader end first (non-blocking, so nothing here can hang), then the write.
  int Rd = ::open(Fifo.c_str(), O_RDONLY | O_NONBLOCK);
  ASSERT_GE(Rd, 0);
  EXPECT_FALSE(bool(format::writeFileAtomically(Fifo, "through the pipe")));
  char Buf[64] = {};
  ssize_t N = ::read(Rd, Buf, sizeof(Buf));
  ::close(Rd);
  EXPECT_EQ(std::string(Buf, N > 0 ? N : 0), "through the pipe");
  struct stat St;
  ASSERT_EQ(::lstat(Fifo.c_str(), &St), 0);
  EXPECT_TRUE(S_ISFIFO(St.st_mode)) << "the FIFO must not be replaced";
  (void)::unlink(Fifo.c_str());
}

TEST(FormatOutput, SymlinksSurviveAndTheirTargetIsWritten) {
  std::string Dir = scratchDir("FormatOutput.Symlink");
  ASSERT_EQ(::mkdir((Dir + "/real").c_str(), 0700), 0);
  writeRaw(Dir + "/real/t.json", "old");
  ASSERT_EQ(::chmod((Dir + "/real/t.json").c_str(), 0640), 0);
  // Relative link, and a link to that link.
  ASSERT_EQ(::symlink("real/t.json", (Dir + "/l.json").c_str()), 0);
  ASSERT_EQ(::symlink((Dir + "/l.json").c_str(), (Dir + "/ll.json").c_str()), 0);
  ASSERT_FALSE(bool(format::writeFileAtomically(Dir + "/ll.json", "new")));
  EXPECT_EQ(readRaw(Dir + "/real/t.json"), "new");
  struct stat St;
  ASSERT_EQ(::lstat((Dir + "/l.json").c_str(), &St), 0);
  EXPECT_TRUE(S_ISLNK(St.st_mode));
  ASSERT_EQ(::lstat((Dir + "/ll.json").c_str(), &St), 0);
  EXPECT_TRUE(S_ISLNK(St.st_mode));
  ASSERT_EQ(::stat((Dir + "/real/t.json").c_str(), &St), 0);
  EXPECT_EQ(St.st_mode & 0777, 0640u) << "the replaced file keeps its permissions";
  // A dangling link: its target is created.
  ASSERT_EQ(::symlink("real/new.json", (Dir + "/d.json").c_str()), 0);
  ASSERT_FALSE(bool(format::writeFileAtomically(Dir + "/d.json", "created")));
  EXPECT_EQ(readRaw(Dir + "/real/new.json"), "created");
  ASSERT_EQ(::lstat((Dir + "/d.json").c_str(), &St), 0);
  EXPECT_TRUE(S_ISLNK(St.st_mode));
  // Only the target was ever in the directory: no temporary file left anywhere.
  int Files = 0;
  std::error_code EC;
  for (llvm::sys::fs::directory_iterator It(Dir + "/real", EC), End; It != End && !EC;
       It.increment(EC))
    ++Files;
  EXPECT_EQ(Files, 2);
  // A loop is an error, not a hang.
  ASSERT_EQ(::symlink("loop2", (Dir + "/loop1").c_str()), 0);
  ASSERT_EQ(::symlink("loop1", (Dir + "/loop2").c_str()), 0);
  EXPECT_THAT(errorText(format::writeFileAtomically(Dir + "/loop1", "x")),
              StartsWith(Dir + "/loop1: "));
}

TEST(FormatOutput, RefusesToOverwriteAnInput) {
  std::string Dir = scratchDir("FormatOutput.Input");
  std::string In = Dir + "/in.profile.pb";
  ASSERT_FALSE(bool(format::writeProfile(smallProfile(), In)));
  std::string Before = readRaw(In);
  ASSERT_EQ(::link(In.c_str(), (Dir + "/hard.pb").c_str()), 0);
  ASSERT_EQ(::symlink("in.profile.pb", (Dir + "/soft.pb").c_str()), 0);
  for (std::string Out : {In, Dir + "/./in.profile.pb", Dir + "/hard.pb", Dir + "/soft.pb"}) {
    std::string Err = errorText(format::writeProfile(smallProfile(), Out, {In}));
    EXPECT_EQ(Err, Out + ": is the input file " + In + "; refusing to overwrite it");
  }
  EXPECT_EQ(readRaw(In), Before);
  EXPECT_FALSE(bool(format::checkNotAnInput(Dir + "/other.pb", {In})));
  EXPECT_FALSE(bool(format::checkNotAnInput("-", {In})));
  // Devices are not "inputs" to protect: /dev/null in and out is fine.
  EXPECT_FALSE(bool(format::checkNotAnInput("/dev/null", {"/dev/null"})));
}

} // namespace
