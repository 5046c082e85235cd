//===- Session.cpp - Launcher <-> injected profiler -------------------------===//
#include "deepum/profiler/Session.h"

#include "deepum/base/Error.h"
#include "deepum/format/Format.h"

#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace deepum::profiler {

Expected<ProfileMode> parseMode(StringRef S) {
  if (S == "natural")
    return ProfileMode::Natural;
  if (S == "access-set")
    return ProfileMode::AccessSet;
  if (S == "kernels")
    return ProfileMode::Kernels;
  return createStringError(inconvertibleErrorCode(),
                           "unknown mode '%s': expected 'natural', 'access-set' or 'kernels'",
                           S.str().c_str());
}

StringRef modeName(ProfileMode M) {
  switch (M) {
  case ProfileMode::AccessSet:
    return "access-set";
  case ProfileMode::Kernels:
    return "kernels";
  case ProfileMode::Natural:
    break;
  }
  return "natural";
}

std::vector<std::pair<std::string, std::string>> SessionConfig::toEnvironment() const {
  std::vector<std::pair<std::string, std::string>> Env = {
      {kEnvSession, Directory},
      {kEnvOutput, Output},
      {kEnvIterations, std::to_string(Iterations)},
      {kEnvSkip, std::to_string(Skip)},
      {kEnvMode, modeName(Mode).str()},
  };
  if (!StepRange.empty())
    Env.emplace_back(kEnvStepRange, StepRange);
  if (Progress)
    Env.emplace_back(kEnvProgress, "1");
  return Env;
}

static Error badEnv(const char *Name, const Twine &Why) {
  return base::makeError(Twine(Name) + " " + Why);
}

Expected<SessionConfig>
SessionConfig::fromEnvironment(function_ref<const char *(const char *)> GetEnv) {
  SessionConfig C;
  const char *Dir = GetEnv(kEnvSession);
  if (!Dir || !*Dir)
    return badEnv(kEnvSession, "is not set: run the program under deepum-profile");
  C.Directory = Dir;
  const char *Out = GetEnv(kEnvOutput);
  if (!Out || !*Out)
    return badEnv(kEnvOutput, "is not set");
  C.Output = Out;
  auto Number = [&](const char *Name, uint32_t &V) -> Error {
    const char *S = GetEnv(Name);
    if (!S)
      return Error::success();
    if (StringRef(S).getAsInteger(10, V))
      return badEnv(Name, "is not a number: '" + Twine(S) + "'");
    return Error::success();
  };
  if (Error E = Number(kEnvIterations, C.Iterations))
    return E;
  if (C.Iterations == 0)
    return badEnv(kEnvIterations, "must be at least 1");
  if (Error E = Number(kEnvSkip, C.Skip))
    return E;
  if (const char *M = GetEnv(kEnvMode)) {
    auto Mode = parseMode(M);
    if (!Mode)
      return Mode.takeError();
    C.Mode = *Mode;
  }
  if (const char *R = GetEnv(kEnvStepRange))
    C.StepRange = R;
  if (const char *P = GetEnv(kEnvProgress))
    C.Progress = StringRef(P) == "1";
  if (const char *D = GetEnv(kEnvDropUmRecords)) {
    if (StringRef(D).getAsDouble(C.DropUmRecords) || !(C.DropUmRecords >= 0) ||
        C.DropUmRecords > 1)
      return badEnv(kEnvDropUmRecords, "is not a fraction from 0 to 1: '" + Twine(D) + "'");
  }
  return C;
}

RecorderOptions SessionConfig::recorderOptions() const {
  RecorderOptions O;
  O.Iterations = Iterations;
  O.Skip = Skip;
  O.AccessSetMode = Mode == ProfileMode::AccessSet;
  O.DropUmRecords = DropUmRecords;
  return O;
}

std::string statusPath(StringRef Directory) { return (Directory + "/status").str(); }
std::string checkpointPath(StringRef Directory) { return (Directory + "/partial.pb").str(); }

Error claimSession(StringRef Directory) {
  std::string Path = (Directory + "/owner").str();
  int FD = -1;
  // CD_CreateNew: O_CREAT | O_EXCL, atomic between processes.
  if (std::error_code EC = sys::fs::openFileForWrite(Path, FD, sys::fs::CD_CreateNew)) {
    if (EC == std::errc::file_exists) {
      auto Owner = MemoryBuffer::getFile(Path);
      std::string Pid = Owner ? (*Owner)->getBuffer().trim().str() : "?";
      return createStringError(EC, "process %s of this run is the one being profiled", Pid.c_str());
    }
    return createStringError(EC, "%s: %s", Path.c_str(), EC.message().c_str());
  }
  raw_fd_ostream OS(FD, /*shouldClose=*/true);
  OS << sys::Process::getProcessId() << "\n";
  return Error::success();
}

Error writeStatus(StringRef Directory, StringRef Status) {
  std::string Path = statusPath(Directory);
  std::string Tmp = Path + ".tmp";
  {
    std::error_code EC;
    raw_fd_ostream OS(Tmp, EC);
    if (EC)
      return createStringError(EC, "%s: %s", Tmp.c_str(), EC.message().c_str());
    OS << Status << "\n";
    OS.close();
    if (OS.has_error())
      return createStringError(OS.error(), "%s: cannot write", Tmp.c_str());
  }
  if (std::error_code EC = sys::fs::rename(Tmp, Path))
    return createStringError(EC, "%s: %s", Path.c_str(), EC.message().c_str());
  return Error::success();
}

std::string readStatus(StringRef Directory) {
  auto Buf = MemoryBuffer::getFile(statusPath(Directory));
  if (!Buf)
    return "";
  return (*Buf)->getBuffer().trim().str();
}

Session::Session(SessionConfig C, Recorder &Rec, raw_ostream &L)
    : Config(std::move(C)), R(Rec), Log(L) {}

void Session::started() {
  if (Error E = writeStatus(Config.Directory, "loaded"))
    Log << "deepum-profile: " << toString(std::move(E)) << "\n";
}

bool Session::afterMark(const MarkEffect &E) {
  if (Finished)
    return true;
  progress(E);
  if (E.RecordingStarted)
    Log << "deepum-profile: recording from iteration " << Config.Skip << "\n";
  if (E.RecordingFinished) {
    writeFinal();
    return true;
  }
  if (E.IterationRecorded) {
    // A crash after this point still leaves these iterations to the launcher.
    auto P = R.buildProfile();
    if (!P) {
      Log << "deepum-profile: checkpoint: " << toString(P.takeError()) << "\n";
      return false;
    }
    if (Error Err = format::writeProfile(*P, checkpointPath(Config.Directory)))
      Log << "deepum-profile: checkpoint: " << toString(std::move(Err)) << "\n";
  }
  return false;
}

void Session::progress(const MarkEffect &E) {
  ++Marks;
  Recorded += E.IterationRecorded;
  if (!Config.Progress)
    return;
  const double Seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - Start).count();
  if (E.IterationRecorded)
    Log << formatv("deepum-profile: iteration {0} of {1} recorded ({2:f1} s)\n", Recorded,
                   Config.Iterations, Seconds);
  else if (Marks <= Config.Skip)
    Log << formatv("deepum-profile: iteration {0} of {1} skipped ({2:f1} s)\n", Marks,
                   Config.Skip, Seconds);
  Log.flush();
}

void Session::finish() {
  if (Finished)
    return;
  writeFinal();
}

void Session::writeFinal() {
  Finished = true;
  auto P = R.buildProfile();
  if (!P) {
    std::string Why = toString(P.takeError());
    Log << "deepum-profile: no profile written: " << Why << "\n";
    if (Error E = writeStatus(Config.Directory, "failed: " + Why))
      Log << "deepum-profile: " << toString(std::move(E)) << "\n";
    return;
  }
  if (Error E = format::writeProfile(*P, Config.Output)) {
    std::string Why = toString(std::move(E));
    Log << "deepum-profile: " << Why << "\n";
    if (Error E2 = writeStatus(Config.Directory, "failed: " + Why))
      Log << "deepum-profile: " << toString(std::move(E2)) << "\n";
    return;
  }
  if (uint64_t Dropped = P->recording().dropped_records())
    Log << "deepum-profile: warning: CUPTI dropped " << Dropped
        << " activity record(s) for lack of buffer space; the profile is incomplete\n";
  if (std::string Err = R.firstError(); !Err.empty())
    Log << "deepum-profile: first error while recording: " << Err << "\n";
  Log << "deepum-profile: wrote " << Config.Output << ": " << describeProfile(*P) << "\n";
  Log.flush();
  if (Error E = writeStatus(Config.Directory, "done " + std::to_string(P->iterations_size())))
    Log << "deepum-profile: " << toString(std::move(E)) << "\n";
}

} // namespace deepum::profiler
