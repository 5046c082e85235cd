//===- InspectTest.cpp - deepum-inspect's behaviour -------------------------===//
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/tools/Inspect.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <fstream>

using namespace deepum;
using namespace deepum::test;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

namespace {

tools::InspectOptions opts(const std::string &Input, bool Json = false) {
  tools::InspectOptions O;
  O.Input = Input;
  O.Json = Json;
  return O;
}

std::string readFile(const std::string &Path) {
  std::ifstream In(Path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(In), {});
}

std::string inspect(const tools::InspectOptions &Opts) {
  std::string Out;
  llvm::raw_string_ostream OS(Out);
  llvm::Error E = tools::runInspect(Opts, OS);
  if (E)
    return "ERROR " + llvm::toString(std::move(E));
  return OS.str();
}

TEST(Inspect, SummarisesProfileAsTextAndJson) {
  ProfileBuilder B;
  uint64_t W = B.allocate(3 << 20, 0, -1, v1::ALLOCATION_ROLE_PARAMETER);
  B.kernel("k", 100, {{W, v1::ACCESS_MODE_READ}});
  B.iteration(0, 1);
  std::string Path = scratchDir("Inspect.Profile") + "/m.profile.pb";
  ASSERT_FALSE(bool(format::writeProfile(B.build(), Path)));

  std::string Text = inspect(opts(Path));
  EXPECT_THAT(Text, HasSubstr("kernels            1 (1 per iteration"));
  std::string Json = inspect(opts(Path, /*Json=*/true));
  llvm::json::Value V = takeOk(llvm::json::parse(Json));
  ASSERT_NE(V.getAsObject(), nullptr);
  EXPECT_EQ(V.getAsObject()->get("footprint_bytes")->getAsUINT64(), llvm::Optional<uint64_t>(uint64_t{4} << 20));
  EXPECT_EQ(V.getAsObject()->get("kernels_per_iteration")->getAsUINT64(), llvm::Optional<uint64_t>(1));
}

TEST(Inspect, PerfettoIsRefusedForPlans) {
  v1::Plan P;
  P.set_format_version(format::kPlanFormatVersion);
  P.mutable_metadata()->set_um_block_bytes(format::kUmBlockBytes);
  P.add_execution_ids()->set_execution_id(11); // a plan has at least one launch position
  P.add_position_ids(11);
  std::string Dir = scratchDir("Inspect.Plan");
  ASSERT_FALSE(bool(format::writePlan(P, Dir + "/x.plan.pb")));
  EXPECT_THAT(inspect(opts(Dir + "/x.plan.pb")), HasSubstr("plan for"));
  tools::InspectOptions O = opts(Dir + "/x.plan.pb");
  O.PerfettoOut = Dir + "/t.json";
  EXPECT_THAT(inspect(O), HasSubstr("--perfetto needs a profile"));
}

TEST(Inspect, ConvertsBetweenEncodings) {
  ProfileBuilder B;
  uint64_t W = B.allocate(1 << 20);
  B.kernel("k", 100, {{W, v1::ACCESS_MODE_WRITE}});
  std::string Dir = scratchDir("Inspect.Convert");
  ASSERT_FALSE(bool(format::writeProfile(B.build(), Dir + "/a.profile.pb")));
  tools::InspectOptions O = opts(Dir + "/a.profile.pb");
  O.ConvertOut = Dir + "/a.profile.json";
  EXPECT_THAT(inspect(O), Not(StartsWith("ERROR")));
  v1::Profile Back = takeOk(format::readProfile(Dir + "/a.profile.json"));
  EXPECT_EQ(Back.SerializeAsString(), B.build().SerializeAsString());
}

TEST(Inspect, BadInputIsOneLineNamingTheFile) {
  std::string Dir = scratchDir("Inspect.Bad");
  std::string Path = Dir + "/junk.profile.pb";
  std::ofstream(Path) << "definitely not protobuf";
  std::string Out = inspect(opts(Path));
  EXPECT_THAT(Out, StartsWith("ERROR " + Path + ": "));
  EXPECT_EQ(Out.find('\n'), std::string::npos);
}

TEST(Inspect, OutputOntoTheInputIsRefused) {
  ProfileBuilder B;
  uint64_t W = B.allocate(1 << 20);
  B.kernel("k", 100, {{W, v1::ACCESS_MODE_WRITE}});
  std::string Dir = scratchDir("Inspect.OntoInput");
  std::string In = Dir + "/a.profile.pb";
  ASSERT_FALSE(bool(format::writeProfile(B.build(), In)));
  std::string Before = readFile(In);
  for (std::string Out :
       {In, Dir + "/../" + llvm::sys::path::filename(Dir).str() + "/a.profile.pb"}) {
    tools::InspectOptions O = opts(In);
    O.ConvertOut = Out;
    EXPECT_EQ(inspect(O),
              "ERROR " + Out + ": is the input file " + In + "; refusing to overwrite it");
    O = opts(In);
    O.PerfettoOut = Out;
    EXPECT_EQ(inspect(O),
              "ERROR " + Out + ": is the input file " + In + "; refusing to overwrite it");
  }
  EXPECT_EQ(readFile(In), Before);
}

TEST(Inspect, HugeSizesPrintWithoutOverflow) {
  constexpr uint64_t Half = uint64_t{1} << 63, TwoMiB = uint64_t{2} << 20;
  ProfileBuilder B;
  B.allocate(Half, 0, -1, v1::ALLOCATION_ROLE_PARAMETER, /*Address=*/TwoMiB);
  B.allocate(Half - 2 * TwoMiB, 10, 20, v1::ALLOCATION_ROLE_ACTIVATION, /*Address=*/Half + TwoMiB);
  std::string Path = scratchDir("Inspect.Huge") + "/h.profile.pb";
  ASSERT_FALSE(bool(format::writeProfile(B.build(), Path)));
  std::string Text = inspect(opts(Path));
  EXPECT_THAT(Text, HasSubstr("peak live bytes    16.00 EiB"));
  EXPECT_THAT(Text, HasSubstr("persistent bytes   8.00 EiB"));
  // Matched as text: LLVM 14's JSON parser reads integers past INT64_MAX as INT64_MAX.
  EXPECT_THAT(inspect(opts(Path, /*Json=*/true)),
              HasSubstr("\"peak_live_bytes\": " + std::to_string(2 * Half - 2 * TwoMiB) + ","));
}

TEST(Inspect, NamesInErrorsAreEscaped) {
  std::string Dir = scratchDir("Inspect.Escaped");
  std::string Evil = Dir + "/x\x1b[31m\n.plan.pb";
  std::ofstream(Evil) << "junk";
  // An option value from the command line, then a file name.
  tools::InspectOptions O = opts(Evil);
  O.Dump = "yaml\n\x1b";
  std::string Out = inspect(O);
  EXPECT_EQ(Out, "ERROR --dump must be 'json' or 'text', not 'yaml\\n\\x1b'");
  O.Dump.clear();
  Out = inspect(O);
  EXPECT_THAT(Out, StartsWith("ERROR " + Dir + "/x\\x1b[31m\\n.plan.pb: "));
  EXPECT_EQ(Out.find_first_of("\n\x1b"), std::string::npos) << Out;
}

} // namespace
