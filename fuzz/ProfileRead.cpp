//===- ProfileRead.cpp - parseProfile on hostile bytes -----------------------===//
//
// What deepum-inspect, deepum-plan and deepum-sim do first with a user's
// file: parse (binary protobuf, or JSON / protobuf text chosen by the first
// byte; see encodingOf) and validate. Any input must give a profile or an
// error, never a crash, a sanitizer report, a hang or a huge allocation. A
// profile that was accepted must stay accepted once written back as binary,
// and its summary (deepum-inspect's view) must be computable.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "deepum/format/Format.h"
#include "deepum/format/Summary.h"

#include "llvm/Support/raw_ostream.h"

#include <string>

using namespace deepum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  const char *Target = "fuzz_profile_read";
  llvm::StringRef Bytes(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<v1::Profile> P = format::parseProfile(Bytes, "fuzz", fuzz::encodingOf(Bytes));
  if (!fuzz::takeValue(P))
    return 0;
  if (llvm::Error E = format::validateProfile(*P))
    fuzz::fuzzFail(Target, "parseProfile returned a profile that validateProfile refuses: " +
                               llvm::toString(std::move(E)));

  std::string Binary;
  if (!P->SerializeToString(&Binary))
    fuzz::fuzzFail(Target, "an accepted profile does not serialise");
  llvm::Expected<v1::Profile> Again = format::parseProfile(Binary, "fuzz");
  if (!Again)
    fuzz::fuzzFail(Target, "an accepted profile is refused once written as binary: " +
                               llvm::toString(Again.takeError()));

  format::ProfileSummary S = format::summarize(*P);
  llvm::raw_null_ostream Null;
  format::print(Null, S);
  Null << format::toJson(S);
  return 0;
}
