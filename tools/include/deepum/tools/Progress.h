//===- deepum/tools/Progress.h - When the tools print progress lines ---------===//
//
// Work that can take more than about two seconds (deepum-plan on a large
// profile, deepum-sim --compare or --deepum-tune) prints a line per stage to
// standard error: "deepum-plan: schedule computed (3.4 s)". Only where a
// person watches: standard error is a terminal, and no --quiet. Standard
// output never carries them, so pipes and `-o -` stay clean.
// DEEPUM_PROGRESS=always prints every stage at once, terminal or not (tests,
// CI logs); DEEPUM_PROGRESS=never, like --quiet, silences them. Header-only: each tool's main
// decides, and hands the stream and delay to its library's options.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_TOOLS_PROGRESS_H
#define DEEPUM_TOOLS_PROGRESS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>

namespace deepum::tools {

struct ProgressSettings {
  /// Where the lines go; null = nowhere.
  llvm::raw_ostream *Stream = nullptr;
  /// Stages that end before this many seconds print nothing: a quick run
  /// stays quiet.
  double DelaySeconds = 2;
};

/// The settings for a tool writing progress to `Err` (standard error).
inline ProgressSettings progressSettings(llvm::raw_ostream &Err, bool Quiet) {
  const char *Env = std::getenv("DEEPUM_PROGRESS");
  llvm::StringRef Mode = Env ? Env : "";
  if (Quiet || Mode == "never")
    return {};
  if (Mode == "always")
    return {&Err, 0};
  if (!Err.is_displayed())
    return {};
  return {&Err, 2};
}

} // namespace deepum::tools

#endif // DEEPUM_TOOLS_PROGRESS_H
