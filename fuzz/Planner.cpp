//===- Planner.cpp - deepum-plan on hostile profiles -------------------------===//
//
// Input: one parameter byte, then a binary profile (the seeds are written by
// GenerateCorpus.cpp). A profile that parses, validates and is within
// ProfileCaps (FuzzSupport.h: at most 2000 kernels, 2000 allocations, 20000
// block accesses, 512 MiB per allocation and 8 GiB in all) is planned with
// both strategies at a GPU memory chosen by the parameter byte:
//
//   bits 0-2  capacity: (n + 1) / 8 of the profile's allocated bytes, rounded
//             up to whole UM blocks and at least one block
//   bit  3    cost model: the profile's own device (its link bandwidth,
//             whatever the file says) or the built-in v100-pcie-16gb
//   bits 4-5  context length 1..4
//
// The planner may refuse a profile with an error (e.g. a kernel whose blocks
// do not fit). A plan it produces must pass validatePlan and must be read by
// libdeepum exactly as the executor reads plan files: serialised, then
// decodePlan and compileRawPlan.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "deepum/executor/CompiledPlan.h"
#include "deepum/format/Format.h"
#include "deepum/planner/Planner.h"

#include <algorithm>
#include <string>

using namespace deepum;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  const char *Target = "fuzz_planner";
  uint8_t Param = 0;
  std::optional<v1::Profile> P = fuzz::paramAndProfile(Data, Size, Param);
  if (!P)
    return 0;

  uint64_t BlockBytes = P->um_block_bytes() ? P->um_block_bytes() : format::kUmBlockBytes;
  uint64_t Allocated = 0;
  for (const v1::Allocation &A : P->allocations())
    Allocated += A.size_bytes();
  uint64_t Blocks = (Allocated / 8 * ((Param & 7u) + 1) + BlockBytes - 1) / BlockBytes;
  planner::PlanOptions Opts;
  Opts.GpuMemoryBytes = std::max<uint64_t>(Blocks, 1) * BlockBytes;
  if (Param & 8u)
    Opts.DeviceModel = "v100-pcie-16gb";
  Opts.ContextLength = ((Param >> 4) & 3u) + 1;
  Opts.ProfileSource = "fuzz";

  for (planner::Strategy S : planner::kStrategies) {
    Opts.Strat = S;
    const std::string Name = planner::strategyName(S).str();
    llvm::Expected<planner::PlanResult> R = planner::compilePlan(*P, Opts);
    if (!fuzz::takeValue(R))
      continue;
    if (llvm::Error E = format::validatePlan(R->Plan))
      fuzz::fuzzFail(Target,
                     "the " + Name + " plan fails validatePlan: " + llvm::toString(std::move(E)));
    std::string Serialised;
    if (!R->Plan.SerializeToString(&Serialised))
      fuzz::fuzzFail(Target, "the " + Name + " plan does not serialise");
    executor::RawPlan Raw;
    executor::CompiledPlan Compiled;
    std::string Error;
    if (!executor::decodePlan(Serialised, Raw, Error) ||
        !executor::compileRawPlan(Raw, "fuzz", Compiled, Error))
      fuzz::fuzzFail(Target, "libdeepum refuses the " + Name + " plan: " + Error);
  }
  return 0;
}
