//===- CostModel.cpp - Device models for the schedule's cost model -----------===//
//
// The planner core does not link the simulator; it reads the one device
// model (deepum/base/DeviceModel.h: the built-in models, or a --device-file)
// for the numbers its cost model needs.
//
//===----------------------------------------------------------------------===//
#include "deepum/planner/Schedule.h"

#include "deepum/base/DeviceModel.h"

using namespace llvm;

namespace deepum::planner {

Expected<CostModel> loadCostModel(StringRef Name, StringRef File) {
  Expected<base::DeviceModel> D = base::loadDeviceModel(Name, File);
  if (!D)
    return D.takeError();
  CostModel M;
  M.DeviceName = D->Name;
  M.LinkBytesPerSecond = D->LinkBytesPerSecond;
  M.DeviceToHostBytesPerSecond = D->DeviceToHostBytesPerSecond;
  M.FaultBatchLatencyUs = D->FaultBatchLatencyUs;
  M.EvictionCopiesClean = D->EvictionCopiesClean;
  M.Roofline.MatmulFlopsPerSecond = D->MatmulFlopsPerSecond;
  M.Roofline.VectorFlopsPerSecond = D->VectorFlopsPerSecond;
  M.Roofline.DramBytesPerSecond = D->DramBytesPerSecond;
  M.Roofline.MatmulEfficiency = D->MatmulEfficiency;
  M.Roofline.MemoryEfficiency = D->MemoryEfficiency;
  M.Roofline.KernelMinUs = D->KernelMinUs;
  M.TransferCallUs = D->TransferCallUs;
  M.TransferRangeUs = D->TransferRangeUs;
  M.PopulateBlockUs = D->PopulateBlockUs;
  M.DiscardedFaultBlockUs = D->DiscardedFaultBlockUs;
  M.PopulatesHoldCopyEngine = D->PopulatesHoldCopyEngine;
  M.CopyManagedToHostBytesPerSecond = D->copyManagedToHostBytesPerSecond();
  M.CopyHostToDeviceBytesPerSecond = D->copyHostToDeviceBytesPerSecond();
  return M;
}

} // namespace deepum::planner
