//===- PlanReaderDiff.cpp - libdeepum's plan reader against protobuf's -----===//
//
// libdeepum decodes plans without protobuf (executor/lib/PlanReader.cpp), so
// the same bytes are read twice: by protobuf and the format library
// (parsePlan: decode, then validatePlan), and by libdeepum (decodePlan, then
// compileRawPlan). The two must agree on every input: a plan one accepts and
// the other refuses is a plan that deepum-sim and deepum-inspect judge
// differently from the executor that replays it. When both accept, they must
// have read the same plan: rawPlanFromProto of protobuf's message equals
// libdeepum's RawPlan field for field.
//
// decodePlan + compileRawPlan must be libdeepum's whole verdict on a file
// (readCompiledPlan and nothing after it): a rule checked elsewhere is one
// this target cannot see. The profile fingerprint was such a rule (checked by
// the executor after compiling), so a plan with an edited launch sequence,
// accepted by deepum-inspect and refused by libdeepum, passed here as an
// agreement although the corpus held one (extra-position.plan.pb); it is now
// one of the plan rules (format::checkRawPlan).
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "deepum/executor/CompiledPlan.h"
#include "deepum/format/Format.h"

#include <string>

using namespace deepum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  const char *Target = "fuzz_plan_reader_diff";
  std::string Bytes(reinterpret_cast<const char *>(Data), Size);

  llvm::Expected<v1::Plan> Proto = format::parsePlan(Bytes, "fuzz", format::Encoding::Binary);
  std::string ProtoError;
  if (!Proto)
    ProtoError = llvm::toString(Proto.takeError());

  executor::RawPlan Raw;
  executor::CompiledPlan Compiled;
  std::string RawError;
  bool RawOk = executor::decodePlan(Bytes, Raw, RawError) &&
               executor::compileRawPlan(Raw, "fuzz", Compiled, RawError);

  if (Proto && !RawOk)
    fuzz::fuzzFail(Target, "parsePlan accepted the plan, libdeepum refused it: " + RawError);
  if (!Proto && RawOk)
    fuzz::fuzzFail(Target, "libdeepum accepted the plan, parsePlan refused it: " + ProtoError);
  if (!RawOk)
    return 0;
  if (!(executor::rawPlanFromProto(*Proto) == Raw))
    fuzz::fuzzFail(Target, "both accepted the plan, but libdeepum read different fields "
                           "than protobuf (rawPlanFromProto(parsePlan) != decodePlan)");
  return 0;
}
