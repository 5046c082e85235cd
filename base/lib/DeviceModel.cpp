//===- DeviceModel.cpp - Device models by name, overridable from a file ----===//
#include "deepum/base/DeviceModel.h"

#include "deepum/base/Error.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cmath>
#include <limits>

using namespace deepum::base;
using llvm::json::Object;

namespace {

llvm::Error fail(llvm::StringRef File, const llvm::Twine &Msg) { return fileError(File, Msg); }

/// The whole of a device file: a regular file of at most kMaxDeviceFileBytes
/// (a device or a pipe could be endless), checked on the open file.
llvm::Expected<std::string> readDeviceFile(llvm::StringRef Path) {
  llvm::Expected<llvm::sys::fs::file_t> F = llvm::sys::fs::openNativeFileForRead(Path);
  if (!F)
    return fail(Path, llvm::errorToErrorCode(F.takeError()).message());
  auto Close = llvm::make_scope_exit([&] { (void)llvm::sys::fs::closeFile(*F); });
  llvm::sys::fs::file_status St;
  if (std::error_code EC = llvm::sys::fs::status(*F, St))
    return fail(Path, EC.message());
  if (!llvm::sys::fs::is_regular_file(St))
    return fail(Path, "not a regular file");
  if (St.getSize() > kMaxDeviceFileBytes)
    return fail(Path, "larger than " + std::to_string(kMaxDeviceFileBytes >> 20) +
                          " MiB, the limit for a device file; refusing to read it");
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> B =
      llvm::MemoryBuffer::getOpenFile(*F, Path, St.getSize(), /*RequiresNullTerminator=*/false);
  if (!B)
    return fail(Path, B.getError().message());
  return (*B)->getBuffer().str();
}

llvm::Expected<llvm::json::Array> modelsOf(llvm::StringRef Text, llvm::StringRef File) {
  llvm::Expected<llvm::json::Value> V = llvm::json::parse(Text);
  if (!V)
    return fail(File, "invalid JSON: " + llvm::toString(V.takeError()));
  const Object *Root = V->getAsObject();
  const llvm::json::Array *Models = Root ? Root->getArray("models") : nullptr;
  if (!Models)
    return fail(File, "expected an object with a \"models\" array");
  return *Models;
}

const Object *findModel(const llvm::json::Array &Models, llvm::StringRef Name) {
  for (const llvm::json::Value &M : Models)
    if (const Object *O = M.getAsObject())
      if (O->getString("name") == Name)
        return O;
  return nullptr;
}

/// Copies the fields `O` sets into `D`; unknown keys are errors (a typo in a
/// calibration file must not pass silently).
llvm::Error apply(const Object &O, DeviceModel &D, llvm::StringRef File) {
  auto Num = [&](llvm::StringRef Key, const llvm::json::Value &V, double &Out) -> llvm::Error {
    llvm::Optional<double> X = V.getAsNumber();
    if (!X || *X < 0)
      return fail(File,
                  llvm::formatv("model '{0}': '{1}' must be a non-negative number", D.Name, Key));
    // 1e999 parses as infinity: a rate or a latency of it would make every
    // transfer free or every fault endless, silently.
    if (!std::isfinite(*X))
      return fail(File, llvm::formatv("model '{0}': '{1}' must be a finite number, not {2}",
                                      D.Name, Key, std::isnan(*X) ? "nan" : "inf"));
    Out = *X;
    return llvm::Error::success();
  };
  // Counts and byte sizes: a double past the integer's range does not convert.
  auto Whole = [&](llvm::StringRef Key, double X, int Bits) -> llvm::Error {
    if (X >= std::ldexp(1.0, Bits) || X != std::floor(X))
      return fail(File, llvm::formatv("model '{0}': '{1}' must be a whole number below 2^{2}",
                                      D.Name, Key, Bits));
    return llvm::Error::success();
  };
  static_assert(std::numeric_limits<unsigned>::digits == 32);
  for (const auto &[KeyJ, V] : O) {
    llvm::StringRef Key = KeyJ;
    double X = 0;
    if (Key == "name" || Key == "sources" || Key == "comment")
      continue;
    if (Key == "link") {
      llvm::Optional<llvm::StringRef> S = V.getAsString();
      if (!S)
        return fail(File, llvm::formatv("model '{0}': '{1}' must be a string", D.Name, Key));
      D.Link = S->str();
      continue;
    }
    if (Key == "eviction_copies_clean" || Key == "copies_share_um_engines" ||
        Key == "populates_hold_copy_engine") {
      llvm::Optional<bool> B = V.getAsBoolean();
      if (!B)
        return fail(File, llvm::formatv("model '{0}': '{1}' must be true or false", D.Name, Key));
      (Key == "eviction_copies_clean"     ? D.EvictionCopiesClean
       : Key == "copies_share_um_engines" ? D.CopiesShareUmEngines
                                          : D.PopulatesHoldCopyEngine) = *B;
      continue;
    }
    if (llvm::Error E = Num(Key, V, X))
      return E;
    if (Key == "memory_bytes" || Key == "fault_batch_size" ||
        Key == "copy_engines_per_direction" || Key == "thrashing_threshold")
      if (llvm::Error E = Whole(Key, X, Key == "memory_bytes" ? 64 : 32))
        return E;
    if (Key == "memory_bytes")
      D.MemoryBytes = static_cast<uint64_t>(X);
    else if (Key == "link_bytes_per_second")
      D.LinkBytesPerSecond = X;
    else if (Key == "device_to_host_bytes_per_second")
      D.DeviceToHostBytesPerSecond = X;
    else if (Key == "copy_host_to_device_bytes_per_second")
      D.CopyHostToDeviceBytesPerSecond = X;
    else if (Key == "copy_device_to_host_bytes_per_second")
      D.CopyDeviceToHostBytesPerSecond = X;
    else if (Key == "copy_managed_to_host_bytes_per_second")
      D.CopyManagedToHostBytesPerSecond = X;
    else if (Key == "fault_batch_latency_us")
      D.FaultBatchLatencyUs = X;
    else if (Key == "fault_batch_size")
      D.FaultBatchSize = static_cast<unsigned>(X);
    else if (Key == "copy_engines_per_direction")
      D.CopyEnginesPerDirection = static_cast<unsigned>(X);
    else if (Key == "transfer_setup_us")
      D.TransferSetupUs = X;
    else if (Key == "transfer_call_us")
      D.TransferCallUs = X;
    else if (Key == "transfer_range_us")
      D.TransferRangeUs = X;
    else if (Key == "fault_block_service_us")
      D.FaultBlockServiceUs = X;
    else if (Key == "populate_block_us")
      D.PopulateBlockUs = X;
    else if (Key == "discarded_fault_block_us")
      D.DiscardedFaultBlockUs = X;
    else if (Key == "prefetch_threshold")
      D.PrefetchThreshold = X;
    else if (Key == "thrashing_lapse_us")
      D.ThrashingLapseUs = X;
    else if (Key == "thrashing_threshold")
      D.ThrashingThreshold = static_cast<unsigned>(X);
    else if (Key == "throttle_nap_us")
      D.ThrottleNapUs = X;
    else if (Key == "matmul_flops_per_second")
      D.MatmulFlopsPerSecond = X;
    else if (Key == "dram_bytes_per_second")
      D.DramBytesPerSecond = X;
    else if (Key == "vector_flops_per_second")
      D.VectorFlopsPerSecond = X;
    else if (Key == "matmul_efficiency")
      D.MatmulEfficiency = X;
    else if (Key == "memory_efficiency")
      D.MemoryEfficiency = X;
    else if (Key == "kernel_min_us")
      D.KernelMinUs = X;
    else
      return fail(File, llvm::formatv("model '{0}': unknown field '{1}'", D.Name, Key));
  }
  if (D.LinkBytesPerSecond <= 0)
    return fail(File, llvm::formatv("model '{0}': link_bytes_per_second must be positive", D.Name));
  if (D.DeviceToHostBytesPerSecond < 0)
    return fail(File, llvm::formatv("model '{0}': device_to_host_bytes_per_second must be "
                                    "positive (or 0: the link rate)",
                                    D.Name));
  if (D.FaultBatchSize == 0 || D.CopyEnginesPerDirection == 0)
    return fail(File, llvm::formatv("model '{0}': fault_batch_size and "
                                    "copy_engines_per_direction must be at least 1",
                                    D.Name));
  if (D.PrefetchThreshold > 1)
    return fail(File, llvm::formatv("model '{0}': prefetch_threshold must be at most 1", D.Name));
  return llvm::Error::success();
}

} // namespace

std::vector<std::string> deepum::base::deviceModelNames() {
  std::vector<std::string> Names;
  llvm::Expected<llvm::json::Array> Models =
      modelsOf(builtinDeviceModelsJson(), "device-models.json");
  if (!Models) {
    llvm::consumeError(Models.takeError());
    return Names;
  }
  for (const llvm::json::Value &M : *Models)
    if (const Object *O = M.getAsObject())
      if (llvm::Optional<llvm::StringRef> N = O->getString("name"))
        Names.push_back(N->str());
  return Names;
}

llvm::Expected<DeviceModel> deepum::base::loadDeviceModel(llvm::StringRef Name,
                                                          llvm::StringRef OverrideFile) {
  llvm::Expected<llvm::json::Array> Builtin =
      modelsOf(builtinDeviceModelsJson(), "device-models.json");
  if (!Builtin)
    return Builtin.takeError();
  DeviceModel D;
  D.Name = Name.str();
  const Object *Base = findModel(*Builtin, Name);
  if (Base)
    if (llvm::Error E = apply(*Base, D, "device-models.json"))
      return E;
  if (!OverrideFile.empty()) {
    llvm::Expected<std::string> Bytes = readDeviceFile(OverrideFile);
    if (!Bytes)
      return Bytes.takeError();
    llvm::Expected<llvm::json::Array> Models = modelsOf(*Bytes, OverrideFile);
    if (!Models)
      return Models.takeError();
    const Object *Over = findModel(*Models, Name);
    if (!Over && !Base)
      return fail(OverrideFile,
                  llvm::formatv("no device model named '{0}' here or built in", Name));
    if (Over) {
      if (!Base && (!Over->get("link_bytes_per_second") || !Over->get("fault_batch_latency_us")))
        return fail(OverrideFile,
                    llvm::formatv("new model '{0}' must set link_bytes_per_second and "
                                  "fault_batch_latency_us",
                                  Name));
      if (llvm::Error E = apply(*Over, D, OverrideFile))
        return E;
    }
    return D;
  }
  if (!Base)
    return makeError(llvm::formatv("unknown device model '{0}' (known: {1})", Name,
                                   llvm::join(deviceModelNames(), ", ")));
  return D;
}
