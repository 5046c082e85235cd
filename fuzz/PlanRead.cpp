//===- PlanRead.cpp - parsePlan on hostile bytes ----------------------------===//
//
// What deepum-inspect and deepum-sim do first with a user's plan
// file: parse (binary protobuf, or JSON / protobuf text chosen by the first
// byte; see encodingOf) and validate. Any input must give a plan or an
// error, never a crash, a sanitizer report, a hang or a huge allocation. A
// plan that was accepted must stay accepted once written back as binary,
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
  const char *Target = "fuzz_plan_read";
  llvm::StringRef Bytes(reinterpret_cast<const char *>(Data), Size);
  llvm::Expected<v1::Plan> P = format::parsePlan(Bytes, "fuzz", fuzz::encodingOf(Bytes));
  if (!fuzz::takeValue(P))
    return 0;
  if (llvm::Error E = format::validatePlan(*P))
    fuzz::fuzzFail(Target, "parsePlan returned a plan that validatePlan refuses: " +
                               llvm::toString(std::move(E)));

  std::string Binary;
  if (!P->SerializeToString(&Binary))
    fuzz::fuzzFail(Target, "an accepted plan does not serialise");
  llvm::Expected<v1::Plan> Again = format::parsePlan(Binary, "fuzz");
  if (!Again)
    fuzz::fuzzFail(Target, "an accepted plan is refused once written as binary: " +
                               llvm::toString(Again.takeError()));

  format::PlanSummary S = format::summarize(*P);
  llvm::raw_null_ostream Null;
  format::print(Null, S);
  Null << format::toJson(S);
  return 0;
}
