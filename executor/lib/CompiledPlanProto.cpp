//===- CompiledPlanProto.cpp - CompiledPlan from a protobuf Plan -----------===//
//
// For tests and tools that hold a deepum::v1::Plan; libdeepum.so does not
// contain this file (it decodes plans itself, see deepum/format/PlanWire.h).
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/CompiledPlan.h"

#include "deepum/format/Format.h"

namespace deepum::executor {

RawPlan rawPlanFromProto(const deepum::v1::Plan &P) { return format::rawPlanFromProto(P); }

bool compilePlan(const deepum::v1::Plan &P, const std::string &Source, CompiledPlan &Out,
                 std::string &Error) {
  RawPlan Raw = rawPlanFromProto(P);
  // The message's encoded size stands for the file's: a file that encodes it
  // less tightly (unpacked, with unknown fields) was larger.
  Error = checkCompiledPlanBytes(Raw, P.ByteSizeLong());
  if (!Error.empty())
    return false;
  return compileRawPlan(Raw, Source, Out, Error);
}

} // namespace deepum::executor
