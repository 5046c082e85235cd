//===- deepum/profiler/Launch.h - deepum-profile as a library ---------------===//
//
// deepum-profile runs the user's command with the injection library named in
// CUDA_INJECTION64_PATH (the driver loads it at cuInit and calls its
// InitializeInjection), waits for it, and makes sure a profile comes out:
// written by the program when recording finishes, or rebuilt here from the
// last checkpoint when the program crashed first.
//
// A PyTorch program allocates with PyTorch's caching allocator (cudaMalloc),
// which the profile cannot see: for a Python command the launcher also sets
// up deepum's start-up hook (the one deepum-run uses, python/deepum/_autoload),
// so the interpreter installs deepum's allocator, without a plan, before the
// script runs, and marks an iteration at each optimizer step.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_PROFILER_LAUNCH_H
#define DEEPUM_PROFILER_LAUNCH_H

#include "deepum/profiler/Session.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace deepum::profiler {

/// --python, --no-python, or neither (decided from the command).
enum class PythonMode { Auto, On, Off };

struct ProfileOptions {
  uint32_t Iterations = 1;
  uint32_t Skip = 0;
  std::string Mode = "natural";
  /// NVTX range name marking one iteration; empty: deepum_step() and cudaProfilerStart/Stop.
  std::string StepRange;
  std::string Output;
  /// The command and its arguments; the first is looked up in PATH.
  std::vector<std::string> Command;
  /// The injection library; empty: found next to the tool (see findInjectionLibrary).
  std::string InjectionLibrary;
  /// The deepum-profile executable, to find the injection library from.
  std::string ToolPath;
  /// Preloaded into the command (LD_PRELOAD): deepum's allocator for C++
  /// programs that do not link it. PyTorch programs install it from Python.
  std::string AllocatorLibrary;
  /// libcupti, named in NVTX_INJECTION64_PATH so CUPTI sees NVTX ranges; empty: the build's.
  std::string CuptiLibrary;
  /// Whether the command is a Python program that gets deepum's allocator.
  PythonMode Python = PythonMode::Auto;
  /// The folder holding deepum's Python package (deepum/_autoload inside);
  /// empty: found next to the tool (see findPythonPackage).
  std::string PythonPackage;
  /// The program prints a line per iteration skipped and recorded on its
  /// standard error (deepum-profile: when that is a terminal; docs/tools.md).
  bool Progress = false;
};

/// Whether `Command` runs Python: its program is named python, python3 or
/// python3.X (any folder), is `env [VAR=VALUE...] python...`, or is a script
/// whose `#!` line names such an interpreter (torchrun, a chmod +x train.py).
/// `ResolvedProgram` is the program's path after the PATH search, to read
/// the `#!` line from; empty: not read.
bool isPythonCommand(const std::vector<std::string> &Command,
                     const std::string &ResolvedProgram);

/// Whether `Python` (--python / --no-python / auto) makes `Command` a Python one.
bool wantsPython(PythonMode Python, const std::vector<std::string> &Command,
                 const std::string &ResolvedProgram);

/// The folder holding deepum's Python package: `Explicit` if given, else
/// share/deepum/python beside the installed tool, ../python, or the source
/// tree's python/ above the build folder.
llvm::Expected<std::string> findPythonPackage(const std::string &Explicit,
                                              const std::string &ToolPath);

/// The injection library: `Explicit` if given, else libdeepum_profiler_injection.so
/// in the tool's directory, ../lib or the build tree's lib directory.
llvm::Expected<std::string> findInjectionLibrary(const std::string &Explicit,
                                                 const std::string &ToolPath);

/// Checks the options and turns them into the session the program will read.
llvm::Expected<SessionConfig> makeSessionConfig(const ProfileOptions &Opts,
                                                const std::string &SessionDirectory);

/// The command's environment: the parent's, with the profiler's variables set.
/// Refuses a CUDA_INJECTION64_PATH set by someone else. With a non-empty
/// `PythonPackage` (a Python command) deepum's start-up hook is put first on
/// PYTHONPATH with DEEPUM_AUTOLOAD=1. Whenever deepum's allocator is installed,
/// a plan named by the parent (DEEPUM_PLAN, DEEPUM_PLAN_TEMPLATE) is dropped:
/// the profile records the program as it runs without one.
llvm::Expected<std::vector<std::string>>
childEnvironment(const ProfileOptions &Opts, const SessionConfig &Config,
                 const std::string &InjectionLibrary, const std::vector<std::string> &Parent,
                 const std::string &PythonPackage = "");

/// Runs the command under the profiler. Returns the exit status deepum-profile
/// should exit with (the command's, or 128 + signal), or an error when no
/// profile could be written.
llvm::Expected<int> runProfile(const ProfileOptions &Opts, llvm::raw_ostream &Log);

} // namespace deepum::profiler

#endif // DEEPUM_PROFILER_LAUNCH_H
