//===- DeviceModelLoad.cpp - loadDeviceModel on a hostile device file -------===//
//
// What deepum-plan and deepum-sim do with --device-file: read the file (at
// most kMaxDeviceFileBytes), parse its JSON and lay the model of the chosen
// name over the built-in one. Any file must give a model or an error, never a
// crash, a sanitizer report or a hang; a model that was accepted must keep the
// promises the loader checks (a positive link rate, at least one fault entry
// per batch and one copy engine, a density threshold of at most 1, no negative
// figure), since the engine divides by and loops over them.
//
// The loader takes a path: each input is written to one temporary file, and
// the file is loaded twice: for a built-in model name (chosen by the input's
// size, so that a seed stays an ordinary device file and mutations reach every
// name) and for a name no built-in model has (a new model, which the file must
// define). Each load parses the built-in file too: loading every name for
// every input ran at 27 inputs a second under ASan.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "deepum/base/DeviceModel.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

using namespace deepum;

namespace {
const char *Target = "fuzz_device_model";

/// The one file every input is written to, removed when the process ends.
struct DeviceFile {
  llvm::SmallString<128> Path;
  DeviceFile() {
    if (std::error_code EC = llvm::sys::fs::createTemporaryFile(Target, "json", Path))
      fuzz::fuzzFail(Target, "cannot create a temporary device file: " + EC.message());
  }
  ~DeviceFile() { (void)llvm::sys::fs::remove(Path); }
  void write(llvm::StringRef Bytes) const {
    std::error_code EC;
    llvm::raw_fd_ostream OS(Path, EC);
    if (EC)
      fuzz::fuzzFail(Target, "cannot write the temporary device file: " + EC.message());
    OS << Bytes;
  }
};

void checkAccepted(const base::DeviceModel &D, llvm::StringRef Name) {
  if (D.Name != Name)
    fuzz::fuzzFail(Target, "model '" + Name.str() + "' came back named '" + D.Name + "'");
  if (!(D.LinkBytesPerSecond > 0))
    fuzz::fuzzFail(Target, "an accepted model has a link rate that is not positive");
  if (D.FaultBatchSize == 0 || D.CopyEnginesPerDirection == 0)
    fuzz::fuzzFail(Target, "an accepted model has no fault entry per batch or no copy engine");
  if (D.PrefetchThreshold > 1)
    fuzz::fuzzFail(Target, "an accepted model has a density threshold above 1");
  for (double X : {D.FaultBatchLatencyUs, D.FaultBlockServiceUs, D.TransferSetupUs,
                   D.TransferCallUs, D.TransferRangeUs, D.ThrashingLapseUs, D.ThrottleNapUs,
                   D.PrefetchThreshold, D.MatmulFlopsPerSecond, D.VectorFlopsPerSecond,
                   D.DramBytesPerSecond, D.MatmulEfficiency, D.MemoryEfficiency, D.KernelMinUs})
    if (X < 0)
      fuzz::fuzzFail(Target, "an accepted model has a negative figure");
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  static const DeviceFile File;
  static const std::vector<std::string> Builtin = [] {
    std::vector<std::string> N = base::deviceModelNames();
    if (N.empty())
      fuzz::fuzzFail(Target, "no built-in device models");
    return N;
  }();
  File.write(llvm::StringRef(reinterpret_cast<const char *>(Data), Size));
  // "fuzz-lab": no built-in model has this name.
  for (const std::string &Name : {Builtin[Size % Builtin.size()], std::string("fuzz-lab")}) {
    llvm::Expected<base::DeviceModel> D = base::loadDeviceModel(Name, File.Path);
    if (fuzz::takeValue(D))
      checkAccepted(*D, Name);
  }
  return 0;
}
