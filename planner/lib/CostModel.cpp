//===- CostModel.cpp - Device models for the schedule's cost model -----------===//
//
// The planner core does not link the simulator; it reads the same built-in
// device models (deepum/format/DeviceModels.h), or a --device-file, for the
// numbers its cost model needs.
//
//===----------------------------------------------------------------------===//
#include "deepum/planner/Schedule.h"

#include "deepum/format/DeviceModels.h"
#include "deepum/format/Format.h"

#include "llvm/Support/JSON.h"

using namespace llvm;

namespace deepum::planner {

Expected<CostModel> loadCostModel(StringRef Name, StringRef File) {
  std::string Path = File.empty() ? std::string("device-models.json (built in)") : File.str();
  Expected<std::string> Bytes = File.empty()
                                    ? Expected<std::string>(format::builtinDeviceModelsJson().str())
                                    : format::readFileBytes(Path);
  if (!Bytes)
    return Bytes.takeError();
  auto Root = json::parse(*Bytes);
  if (!Root)
    return createStringError(inconvertibleErrorCode(), Path + ": " + toString(Root.takeError()));
  const json::Object *Obj = Root->getAsObject();
  const json::Array *Models = Obj ? Obj->getArray("models") : nullptr;
  if (!Models)
    return createStringError(inconvertibleErrorCode(), Path + ": no \"models\" array");
  std::string Known;
  for (const json::Value &V : *Models) {
    const json::Object *Model = V.getAsObject();
    if (!Model)
      continue;
    auto ModelName = Model->getString("name");
    if (!ModelName)
      continue;
    Known += (Known.empty() ? "" : ", ") + ModelName->str();
    if (*ModelName != Name)
      continue;
    CostModel M;
    M.DeviceName = Name.str();
    auto Link = Model->getNumber("link_bytes_per_second");
    if (!Link || *Link <= 0)
      return createStringError(inconvertibleErrorCode(),
                               Path + ": device model '" + Name +
                                   "' has no positive link_bytes_per_second");
    M.LinkBytesPerSecond = *Link;
    if (auto F = Model->getNumber("fault_batch_latency_us"))
      M.FaultBatchLatencyUs = *F;
    if (auto E = Model->getBoolean("eviction_copies_clean"))
      M.EvictionCopiesClean = *E;
    auto Num = [&](StringRef Key, double &Out) {
      if (auto X = Model->getNumber(Key))
        Out = *X;
    };
    Num("matmul_flops_per_second", M.Roofline.MatmulFlopsPerSecond);
    Num("vector_flops_per_second", M.Roofline.VectorFlopsPerSecond);
    Num("dram_bytes_per_second", M.Roofline.DramBytesPerSecond);
    Num("matmul_efficiency", M.Roofline.MatmulEfficiency);
    Num("memory_efficiency", M.Roofline.MemoryEfficiency);
    Num("kernel_min_us", M.Roofline.KernelMinUs);
    // deepum-sim's defaults when the model leaves them out.
    M.TransferCallUs = 20;
    M.TransferRangeUs = 1;
    Num("transfer_call_us", M.TransferCallUs);
    Num("transfer_range_us", M.TransferRangeUs);
    return M;
  }
  return createStringError(inconvertibleErrorCode(),
                           Path + ": no device model named '" + Name + "' (known: " + Known + ")");
}

} // namespace deepum::planner
