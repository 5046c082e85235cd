//===- deepum/tools/Cli.h - What every deepum tool does with its command line ===//
//
// One convention for all tools (docs/tools.md):
//   exit 0  success
//   exit 1  bad input: a file that cannot be read or is invalid, a bad value
//   exit 2  usage: an unknown option, a missing argument
// `--version` prints deepum's version, not the option library's. Header-only:
// each tool's main includes it; DEEPUM_VERSION_STRING comes from the build.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_TOOLS_CLI_H
#define DEEPUM_TOOLS_CLI_H

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <string>

#ifndef DEEPUM_VERSION_STRING
#error "DEEPUM_VERSION_STRING is defined by deepum_add_tool"
#endif

namespace deepum::tools {

inline constexpr int kExitBadInput = 1;
inline constexpr int kExitUsage = 2;

/// Every tool that takes a device says it the same way (deepum/base/DeviceModel.h):
/// --device NAME picks a built-in model, --device-file FILE overrides its
/// fields (or adds one). The help texts, shared so they cannot drift.
inline constexpr const char *kDeviceHelp =
    "Device model: v100-pcie-16gb, v100-pcie-32gb, a100-40gb, h100-pcie, h100-sxm, h200, or "
    "one --device-file adds";
inline constexpr const char *kDeviceFileHelp =
    "Device models file (device-models.json's format) whose fields override or add to the "
    "built-in models";

/// deepum-plan and deepum-sim: --compute-from PROFILE (format::takeComputeTimes).
inline constexpr const char *kComputeFromHelp =
    "Kernel compute times from this profile of the same program, recorded where everything "
    "fits, best with deepum-profile --mode kernels (for a profile recorded with --mode "
    "access-set, whose kernels wait on the faults that mode provokes)";

/// Parses argv into the tool's cl::opt globals; on a usage error prints the
/// option library's message and exits 2.
inline void parseCommandLine(int Argc, const char *const *Argv, llvm::StringRef Overview) {
  llvm::cl::SetVersionPrinter(
      [](llvm::raw_ostream &OS) { OS << "deepum " << DEEPUM_VERSION_STRING << "\n"; });
  std::string Errors;
  llvm::raw_string_ostream ES(Errors);
  if (!llvm::cl::ParseCommandLineOptions(Argc, Argv, Overview, &ES)) {
    ES.flush();
    llvm::errs() << Errors;
    llvm::errs().flush();
    std::exit(kExitUsage);
  }
}

} // namespace deepum::tools

#endif // DEEPUM_TOOLS_CLI_H
