//===- deepum/tools/Inspect.h - deepum-inspect as a library -----------------===//
#ifndef DEEPUM_TOOLS_INSPECT_H
#define DEEPUM_TOOLS_INSPECT_H

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace deepum::tools {

struct InspectOptions {
  /// Profile or plan to summarise ("-" = standard input).
  std::string Input;
  /// Print the summary as JSON instead of text.
  bool Json = false;
  /// When not empty, also write a Chrome-trace/Perfetto timeline here (profiles only).
  std::string PerfettoOut;
  /// When not empty, also write the whole message in this encoding ("json" or "text") to stdout.
  std::string Dump;
  /// When not empty, convert the input to this file (encoding from the name, ".gz" compresses).
  std::string ConvertOut;
  /// With ConvertOut, a profile: leave out the raw migration and UM-event
  /// records (what shrinks a GPU profile most; the planner and simulator read
  /// kernels, allocations and faults, not these).
  bool DropMigrations = false;
  /// A profile: print its kernels' access-set bytes by source (launch
  /// arguments, recorded faults) per kernel class, as a Markdown table,
  /// instead of the summary (deepum/format/AccessSources.h).
  bool AccessSources = false;
};

llvm::Error runInspect(const InspectOptions &Opts, llvm::raw_ostream &OS);

} // namespace deepum::tools

#endif // DEEPUM_TOOLS_INSPECT_H
