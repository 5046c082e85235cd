//===- PlanReader.cpp - Plans from disk without protobuf -------------------===//
//
// libdeepum.so carries no protobuf (see deepum/format/PlanWire.h): the wire
// decoder, the plan rules and the bounded file reader it uses are the format
// library's protobuf-free part, shared with deepum-inspect so that both accept
// the same files.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/CompiledPlan.h"

namespace deepum::executor {

bool decodePlan(const std::string &Bytes, RawPlan &Out, std::string &Error) {
  return format::decodePlanWire(Bytes, Out, Error);
}

bool readCompiledPlan(const std::string &Path, CompiledPlan &Out, std::string &Error) {
  std::string Bytes;
  if (!format::readPlanFileBytes(Path, Bytes, Error))
    return false;
  RawPlan Raw;
  if (!decodePlan(Bytes, Raw, Error) ||
      !(Error = checkCompiledPlanBytes(Raw, Bytes.size())).empty() ||
      !compileRawPlan(Raw, Path, Out, Error)) {
    Error = Path + ": " + Error;
    return false;
  }
  return true;
}

} // namespace deepum::executor
