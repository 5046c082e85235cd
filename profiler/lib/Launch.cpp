//===- Launch.cpp - Run a command under the profiler ------------------------===//
#include "deepum/profiler/Launch.h"

#include "deepum/base/Error.h"
#include "deepum/format/Format.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/Twine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace llvm;

namespace deepum::profiler {

static constexpr const char *kInjectionLibraryName = "libdeepum_profiler_injection.so";

static Error usage(const Twine &Msg) { return base::makeError(Msg); }

Expected<std::string> findInjectionLibrary(const std::string &Explicit,
                                           const std::string &ToolPath) {
  if (!Explicit.empty()) {
    if (!sys::fs::exists(Explicit))
      return usage("injection library " + Explicit + " does not exist");
    return Explicit;
  }
  SmallString<256> Dir(ToolPath);
  sys::path::remove_filename(Dir);
  std::vector<std::string> Tried;
  // Installed: bin/deepum-profile and lib/; built: tools/deepum-profile and lib/.
  for (const char *Rel : {".", "../lib"}) {
    SmallString<256> P(Dir);
    sys::path::append(P, Rel, kInjectionLibraryName);
    sys::path::remove_dots(P, /*remove_dot_dot=*/true);
    if (sys::fs::exists(P)) {
      SmallString<256> Abs(P);
      (void)sys::fs::make_absolute(Abs);
      return std::string(Abs);
    }
    Tried.push_back(std::string(P));
  }
  return usage("cannot find the injection library " + Twine(kInjectionLibraryName) +
               " (looked at " + join(Tried, ", ") + "); pass --injection-library");
}

//===-- Python commands ----------------------------------------------------===//

/// python, python3, python3.12 (any folder); not python3-config.
static bool isPythonName(StringRef Path) {
  StringRef Name = sys::path::filename(Path);
  if (!Name.consume_front("python"))
    return false;
  return llvm::all_of(Name, [](char C) { return isDigit(C) || C == '.'; });
}

/// The program `env ARGS...` runs: the first word that is no option and no
/// VAR=VALUE.
static std::optional<StringRef> programAfterEnv(ArrayRef<std::string> Args) {
  for (const std::string &A : Args) {
    StringRef W(A);
    if (W.startswith("-") || W.contains('='))
      continue;
    return W;
  }
  return std::nullopt;
}

/// Whether `Argv` (a command line or a `#!` line split into words) starts a
/// Python interpreter, directly or through env.
static bool startsPython(ArrayRef<std::string> Argv) {
  if (Argv.empty())
    return false;
  if (isPythonName(Argv.front()))
    return true;
  if (sys::path::filename(Argv.front()) != "env")
    return false;
  std::optional<StringRef> Next = programAfterEnv(Argv.drop_front());
  return Next && isPythonName(*Next);
}

/// The words of the `#!` line of `Path`, or none when it has none.
static std::vector<std::string> shebangWords(const std::string &Path) {
  std::vector<std::string> Words;
  if (Path.empty() || !sys::fs::is_regular_file(Path))
    return Words;
  auto Buf = MemoryBuffer::getFileSlice(Path, 256, 0);
  if (!Buf)
    return Words;
  StringRef Head = (*Buf)->getBuffer();
  if (!Head.consume_front("#!"))
    return Words;
  Head = Head.take_until([](char C) { return C == '\n' || C == '\r'; });
  SmallVector<StringRef, 4> Parts;
  SplitString(Head, Parts); // on spaces and tabs
  for (StringRef P : Parts)
    Words.push_back(P.str());
  return Words;
}

bool isPythonCommand(const std::vector<std::string> &Command,
                     const std::string &ResolvedProgram) {
  if (startsPython(Command))
    return true;
  return startsPython(shebangWords(ResolvedProgram));
}

bool wantsPython(PythonMode Python, const std::vector<std::string> &Command,
                 const std::string &ResolvedProgram) {
  switch (Python) {
  case PythonMode::On:
    return true;
  case PythonMode::Off:
    return false;
  case PythonMode::Auto:
    break;
  }
  return isPythonCommand(Command, ResolvedProgram);
}

static constexpr const char *kAutoloadScript = "deepum/_autoload/sitecustomize.py";

Expected<std::string> findPythonPackage(const std::string &Explicit,
                                        const std::string &ToolPath) {
  if (!Explicit.empty()) {
    if (!sys::fs::exists(Explicit + "/" + kAutoloadScript))
      return usage("--python-package " + Explicit + " holds no " + kAutoloadScript);
    SmallString<256> Abs(Explicit);
    (void)sys::fs::make_absolute(Abs);
    return std::string(Abs);
  }
  SmallString<256> Dir(ToolPath);
  sys::path::remove_filename(Dir);
  std::vector<std::string> Tried;
  // Installed: bin/ and share/deepum/python; deepum-run's ../python; built:
  // <source>/build/tools/ and <source>/python.
  for (const char *Rel : {"../share/deepum/python", "../python", "../../python"}) {
    SmallString<256> P(Dir);
    sys::path::append(P, Rel);
    sys::path::remove_dots(P, /*remove_dot_dot=*/true);
    if (sys::fs::exists(P + "/" + kAutoloadScript)) {
      SmallString<256> Abs(P);
      (void)sys::fs::make_absolute(Abs);
      return std::string(Abs);
    }
    Tried.push_back(std::string(P));
  }
  return usage("a Python command needs deepum's Python package to install the allocator, "
               "not found (looked at " +
               join(Tried, ", ") + "); pass --python-package DIR, or --no-python");
}

Expected<SessionConfig> makeSessionConfig(const ProfileOptions &Opts,
                                          const std::string &SessionDirectory) {
  if (Opts.Command.empty())
    return usage("no command given: deepum-profile [options] -o PROFILE -- COMMAND ARGS...");
  if (Opts.Output.empty())
    return usage("no output given: pass -o PROFILE");
  if (Opts.Iterations == 0)
    return usage("--iterations must be at least 1");
  auto Mode = parseMode(Opts.Mode);
  if (!Mode)
    return Mode.takeError();
  // The program writes the profile itself; check where now, not after a long run.
  SmallString<256> OutDir(Opts.Output);
  sys::path::remove_filename(OutDir);
  if (!OutDir.empty() && !sys::fs::is_directory(OutDir))
    return usage("cannot write " + Opts.Output + ": directory " + OutDir + " does not exist");
  SessionConfig C;
  C.Directory = SessionDirectory;
  SmallString<256> Out(Opts.Output);
  // Absolute, because the program may change its working directory.
  if (std::error_code EC = sys::fs::make_absolute(Out))
    return createStringError(EC, "%s: %s", Opts.Output.c_str(), EC.message().c_str());
  C.Output = std::string(Out);
  C.Iterations = Opts.Iterations;
  C.Skip = Opts.Skip;
  C.Mode = *Mode;
  C.StepRange = Opts.StepRange;
  C.Progress = Opts.Progress;
  return C;
}

Expected<std::vector<std::string>> childEnvironment(const ProfileOptions &Opts,
                                                    const SessionConfig &Config,
                                                    const std::string &InjectionLibrary,
                                                    const std::vector<std::string> &Parent,
                                                    const std::string &PythonPackage) {
  std::vector<std::pair<std::string, std::string>> Set = Config.toEnvironment();
  const bool Python = !PythonPackage.empty();
  const bool InstallsAllocator = Python || !Opts.AllocatorLibrary.empty();
  Set.emplace_back("CUDA_INJECTION64_PATH", InjectionLibrary);
  Set.emplace_back(kEnvLibrary, InjectionLibrary);
  std::string Cupti = Opts.CuptiLibrary;
#ifdef DEEPUM_CUPTI_LIBRARY
  if (Cupti.empty())
    Cupti = DEEPUM_CUPTI_LIBRARY;
#endif
  std::vector<std::string> Env;
  std::string Preload, PythonPath;
  bool NvtxSet = false;
  for (const std::string &Var : Parent) {
    StringRef Name = StringRef(Var).split('=').first;
    StringRef Value = StringRef(Var).split('=').second;
    if (Name == "CUDA_INJECTION64_PATH" && !Value.empty() && Value != InjectionLibrary)
      return usage("CUDA_INJECTION64_PATH is already set (to " + Value +
                   "): another tool injects itself into CUDA and only one can; unset it");
    if (Name == "LD_PRELOAD") {
      Preload = Value.str();
      continue;
    }
    if (Name == "NVTX_INJECTION64_PATH")
      NvtxSet = true;
    if (Python && Name == "PYTHONPATH") {
      PythonPath = Value.str();
      continue;
    }
    if (Python && Name == "DEEPUM_AUTOLOAD")
      continue; // set below
    if (InstallsAllocator && (Name == "DEEPUM_PLAN" || Name == "DEEPUM_PLAN_TEMPLATE"))
      continue; // profiling records the program without a plan
    if (llvm::any_of(Set, [&](const auto &S) { return S.first == Name; }))
      continue;
    if (Name.startswith("DEEPUM_PROFILE_"))
      continue; // a stale step range from an outer session must not leak in
    Env.push_back(Var);
  }
  // CUPTI sees NVTX ranges only when it is the NVTX injection library.
  if (!Config.StepRange.empty() && !NvtxSet) {
    if (Cupti.empty())
      return usage("--step-range needs libcupti for NVTX; pass its path");
    Set.emplace_back("NVTX_INJECTION64_PATH", Cupti);
  }
  if (!Opts.AllocatorLibrary.empty()) {
    if (!sys::fs::exists(Opts.AllocatorLibrary))
      return usage("allocator library " + Opts.AllocatorLibrary + " does not exist");
    // Ours first: the allocator must interpose before whatever was preloaded.
    Preload = Preload.empty() ? Opts.AllocatorLibrary
                              : (Twine(Opts.AllocatorLibrary) + ":" + Preload).str();
  }
  if (!Preload.empty())
    Set.emplace_back("LD_PRELOAD", Preload);
  if (Python) {
    // deepum-run's start-up hook: the interpreter imports it before the
    // script and installs deepum's allocator (python/deepum/_autoload).
    SmallString<256> Autoload(PythonPackage);
    sys::path::append(Autoload, "deepum", "_autoload");
    std::string Path = (Twine(Autoload) + ":" + PythonPackage).str();
    if (!PythonPath.empty())
      Path += ":" + PythonPath;
    Set.emplace_back("PYTHONPATH", Path);
    Set.emplace_back("DEEPUM_AUTOLOAD", "1");
  }
  for (auto &[Name, Value] : Set)
    Env.push_back((Twine(Name) + "=" + Value).str());
  return Env;
}

namespace {

/// While the command runs, Ctrl-C belongs to it: the launcher must live on to
/// rescue the checkpoint (what system(3) does for the same reason).
class IgnoreInterrupts {
public:
  IgnoreInterrupts() {
    struct sigaction Ign = {};
    Ign.sa_handler = SIG_IGN;
    sigaction(SIGINT, &Ign, &OldInt);
    sigaction(SIGQUIT, &Ign, &OldQuit);
  }
  ~IgnoreInterrupts() {
    sigaction(SIGINT, &OldInt, nullptr);
    sigaction(SIGQUIT, &OldQuit, nullptr);
  }
  IgnoreInterrupts(const IgnoreInterrupts &) = delete;
  IgnoreInterrupts &operator=(const IgnoreInterrupts &) = delete;

private:
  struct sigaction OldInt = {}, OldQuit = {};
};

struct ChildEnd {
  int ExitCode = 0;   // what deepum-profile exits with
  std::string How;    // "exited with status 3", "was killed by signal 11 (Segmentation fault)"
  bool Clean = false; // exited with status 0
};

Expected<ChildEnd> spawnAndWait(const std::string &Program, const std::vector<std::string> &Args,
                                const std::vector<std::string> &Env) {
  std::vector<char *> Argv, Envp;
  for (const std::string &A : Args)
    Argv.push_back(const_cast<char *>(A.c_str()));
  Argv.push_back(nullptr);
  for (const std::string &E : Env)
    Envp.push_back(const_cast<char *>(E.c_str()));
  Envp.push_back(nullptr);

  IgnoreInterrupts Guard;
  // The child gets default signal dispositions back, so Ctrl-C stops it.
  posix_spawnattr_t Attr;
  posix_spawnattr_init(&Attr);
  sigset_t Default;
  sigemptyset(&Default);
  sigaddset(&Default, SIGINT);
  sigaddset(&Default, SIGQUIT);
  posix_spawnattr_setsigdefault(&Attr, &Default);
  posix_spawnattr_setflags(&Attr, POSIX_SPAWN_SETSIGDEF);
  pid_t Pid = 0;
  int Rc = posix_spawn(&Pid, Program.c_str(), nullptr, &Attr, Argv.data(), Envp.data());
  posix_spawnattr_destroy(&Attr);
  if (Rc != 0)
    return createStringError(std::error_code(Rc, std::generic_category()), "cannot run %s: %s",
                             Program.c_str(), std::strerror(Rc));
  int Status = 0;
  while (waitpid(Pid, &Status, 0) < 0) {
    if (errno != EINTR)
      return createStringError(std::error_code(errno, std::generic_category()),
                               "waiting for %s: %s", Program.c_str(), std::strerror(errno));
  }
  ChildEnd End;
  if (WIFEXITED(Status)) {
    End.ExitCode = WEXITSTATUS(Status);
    End.Clean = End.ExitCode == 0;
    End.How = "exited with status " + std::to_string(End.ExitCode);
  } else if (WIFSIGNALED(Status)) {
    int Sig = WTERMSIG(Status);
    End.ExitCode = 128 + Sig; // the shell's convention
    End.How = "was killed by signal " + std::to_string(Sig) + " (" + strsignal(Sig) + ")";
  }
  return End;
}

} // namespace

Expected<int> runProfile(const ProfileOptions &Opts, raw_ostream &Log) {
  // Everything checkable is checked before the (possibly hours-long) run.
  auto Injection = findInjectionLibrary(Opts.InjectionLibrary, Opts.ToolPath);
  if (!Injection)
    return Injection.takeError();
  SmallString<128> Dir;
  if (std::error_code EC = sys::fs::createUniqueDirectory("deepum-profile", Dir))
    return createStringError(EC, "cannot create a session directory: %s", EC.message().c_str());
  auto Cleanup = llvm::make_scope_exit([&] {
    (void)sys::fs::remove(statusPath(Dir));
    (void)sys::fs::remove(checkpointPath(Dir));
    (void)sys::fs::remove(Dir + "/owner");
    (void)sys::fs::remove_directories(Dir);
  });
  auto Config = makeSessionConfig(Opts, std::string(Dir));
  if (!Config)
    return Config.takeError();
  std::string Program = Opts.Command.front();
  if (Program.find('/') == std::string::npos) {
    auto Found = sys::findProgramByName(Program);
    if (!Found)
      return usage(Program + ": command not found");
    Program = *Found;
  }
  std::string PythonPackage;
  if (wantsPython(Opts.Python, Opts.Command, Program)) {
    auto Found = findPythonPackage(Opts.PythonPackage, Opts.ToolPath);
    if (!Found)
      return Found.takeError();
    PythonPackage = *Found;
  }
  std::vector<std::string> Parent;
  for (char **E = environ; *E; ++E)
    Parent.emplace_back(*E);
  auto Env = childEnvironment(Opts, *Config, *Injection, Parent, PythonPackage);
  if (!Env)
    return Env.takeError();

  auto End = spawnAndWait(Program, Opts.Command, *Env);
  if (!End)
    return End.takeError();
  std::string Name = sys::path::filename(Opts.Command.front()).str();

  std::string Status = readStatus(Dir);
  if (StringRef(Status).startswith("done")) {
    if (!End->Clean)
      Log << "deepum-profile: note: " << Name << " " << End->How
          << " after the profile was written\n";
    return End->ExitCode;
  }
  if (StringRef(Status).startswith("failed"))
    return usage("no profile written (" + Name + " " + End->How +
                 "): " + StringRef(Status).drop_front(strlen("failed: ")));
  if (Status.empty())
    return usage("no profile written: " + Name + " " + End->How +
                 " without loading the profiler; it made no CUDA call, or its CUDA ignored "
                 "CUDA_INJECTION64_PATH");
  // Loaded but never finished: the program died. Rescue the checkpoint.
  std::string Checkpoint = checkpointPath(Dir);
  if (!sys::fs::exists(Checkpoint))
    return usage("no profile written: " + Name + " " + End->How +
                 " before any iteration was recorded");
  auto P = format::readProfile(Checkpoint);
  if (!P)
    return P.takeError();
  P->mutable_workload()->set_notes(P->workload().notes() +
                                   (P->workload().notes().empty() ? "" : "; ") + "the program " +
                                   End->How + " before recording finished");
  if (Error E = format::writeProfile(*P, Config->Output))
    return E;
  Log << "deepum-profile: warning: " << Name << " " << End->How
      << " before recording finished; wrote the " << P->iterations_size()
      << " complete iteration(s) to " << Opts.Output << ": " << describeProfile(*P) << "\n";
  return End->ExitCode;
}

} // namespace deepum::profiler
