//===- deepum/profiler/Session.h - Launcher <-> injected profiler -----------===//
//
// deepum-profile (the launcher) and the injection library inside the profiled
// program talk through environment variables and a session directory:
//
//   launcher --env--> program:  what to record and where (SessionConfig)
//   program --files--> launcher: <dir>/status   "loaded", then "done N" or "failed: why"
//                                <dir>/partial.pb the complete iterations so far
//
// The program writes the finished profile to the output itself, as soon as
// the last iteration is recorded, and carries on unprofiled. The checkpoint
// exists because a crashing program writes nothing: after each recorded
// iteration the program replaces partial.pb, and the launcher turns it into
// the output when the program dies before finishing.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PROFILER_SESSION_H
#define DEEPUM_PROFILER_SESSION_H

#include "deepum/profiler/Recorder.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace deepum::profiler {

inline constexpr const char *kEnvSession = "DEEPUM_PROFILE_SESSION";
inline constexpr const char *kEnvOutput = "DEEPUM_PROFILE_OUTPUT";
inline constexpr const char *kEnvIterations = "DEEPUM_PROFILE_ITERATIONS";
inline constexpr const char *kEnvSkip = "DEEPUM_PROFILE_SKIP";
inline constexpr const char *kEnvMode = "DEEPUM_PROFILE_MODE";
inline constexpr const char *kEnvStepRange = "DEEPUM_PROFILE_STEP_RANGE";
/// "1": a progress line per iteration skipped and recorded (deepum-profile's
/// standard error is a terminal, or DEEPUM_PROGRESS=always).
inline constexpr const char *kEnvProgress = "DEEPUM_PROFILE_PROGRESS";
/// Test-only: the fraction of UM fault and migration records to drop
/// (RecorderOptions::DropUmRecords); set by a test around deepum-profile.
inline constexpr const char *kEnvDropUmRecords = "DEEPUM_TEST_DROP_UM_RECORDS";
/// The injection library's own path, so the allocator can find its recording hooks.
inline constexpr const char *kEnvLibrary = "DEEPUM_PROFILER_LIBRARY";

/// natural: faults as they happen; access-set: every block a kernel touches
/// faults; kernels: kernel durations alone (concurrent kernel records, no
/// Unified Memory counters, which slow memory-bound kernels many times over
/// on an H100), the compute times for --compute-from.
enum class ProfileMode { Natural, AccessSet, Kernels };

llvm::Expected<ProfileMode> parseMode(llvm::StringRef S);
llvm::StringRef modeName(ProfileMode M);

/// What the launcher asks of the injected profiler.
struct SessionConfig {
  std::string Directory;
  std::string Output;
  uint32_t Iterations = 1;
  uint32_t Skip = 0;
  ProfileMode Mode = ProfileMode::Natural;
  /// When not empty, iterations are the NVTX ranges of this name (and only they).
  std::string StepRange;
  /// A progress line per iteration skipped and recorded.
  bool Progress = false;
  /// Test-only: RecorderOptions::DropUmRecords.
  double DropUmRecords = 0;

  /// The variables that carry this config (the library path is added by the launcher).
  std::vector<std::pair<std::string, std::string>> toEnvironment() const;
  /// Reads the config back; `GetEnv` returns null for an unset variable.
  static llvm::Expected<SessionConfig>
  fromEnvironment(llvm::function_ref<const char *(const char *)> GetEnv);

  RecorderOptions recorderOptions() const;
};

std::string statusPath(llvm::StringRef Directory);
std::string checkpointPath(llvm::StringRef Directory);

/// Makes the calling process the session's one profiled process (an
/// exclusively created <dir>/owner holding its pid). Fails when another
/// process of the run — a worker the program spawned, which inherits the
/// environment — claimed it first.
llvm::Error claimSession(llvm::StringRef Directory);

/// Replaces the status file whole (write to a temporary, rename).
llvm::Error writeStatus(llvm::StringRef Directory, llvm::StringRef Status);
/// The status, "" when the program never wrote one (the profiler was not loaded).
std::string readStatus(llvm::StringRef Directory);

/// The injected side of a session: marks, checkpoints and the final write.
/// Every method reports problems on `Log` and never throws or aborts: it
/// runs inside someone else's program.
class Session {
public:
  Session(SessionConfig Config, Recorder &R, llvm::raw_ostream &Log);

  /// The profiler is loaded and recording ("loaded" in the status file).
  void started();
  /// After a mark: checkpoint a recorded iteration; write the profile when
  /// the last one is done. Returns true when recording is finished.
  bool afterMark(const MarkEffect &E);
  /// At exit (or when recording stops early): write whatever is complete.
  /// Idempotent.
  void finish();
  bool finished() const { return Finished; }
  const SessionConfig &config() const { return Config; }

private:
  void writeFinal();
  void progress(const MarkEffect &E);

  SessionConfig Config;
  Recorder &R;
  llvm::raw_ostream &Log;
  bool Finished = false;
  /// Iterations seen since the session started, and recorded (progress lines).
  uint32_t Marks = 0;
  uint32_t Recorded = 0;
  std::chrono::steady_clock::time_point Start = std::chrono::steady_clock::now();
};

} // namespace deepum::profiler

#endif // DEEPUM_PROFILER_SESSION_H
