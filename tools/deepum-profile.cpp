//===- deepum-profile.cpp - Record a training command's kernels and UM faults ===//
#include "deepum/profiler/Launch.h"
#include "deepum/tools/Cli.h"
#include "deepum/tools/Progress.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"

using namespace llvm;

static cl::OptionCategory Category("deepum-profile options");
static cl::opt<unsigned> Iterations("iterations", cl::desc("Iterations to record (default 1)"),
                                    cl::init(1), cl::cat(Category));
static cl::opt<unsigned> Skip("skip", cl::desc("Iterations to ignore before recording"),
                              cl::init(0), cl::cat(Category));
static cl::opt<std::string> Mode("mode",
                                 cl::desc("natural: faults as they happen; access-set: every "
                                          "block a kernel touches faults (slower); kernels: "
                                          "kernel durations only, no Unified Memory counters "
                                          "(the compute times for --compute-from)"),
                                 cl::value_desc("natural|access-set|kernels"), cl::init("natural"),
                                 cl::cat(Category));
static cl::opt<std::string>
    StepRange("step-range",
              cl::desc("Iterations are the NVTX ranges of this name "
                       "(default: deepum_step() and cudaProfilerStart/Stop)"),
              cl::value_desc("NAME"), cl::cat(Category));
static cl::opt<std::string> Output("o",
                                   cl::desc("Profile to write; {rank} and {local_rank} are "
                                            "torchrun's RANK and LOCAL_RANK (default 0)"),
                                   cl::value_desc("PROFILE"), cl::Required, cl::cat(Category));
static cl::opt<std::string> Allocator("allocator-library",
                                      cl::desc("Preload deepum's allocator into a C++ program"),
                                      cl::value_desc("LIB"), cl::cat(Category));
static cl::opt<bool> Python("python",
                            cl::desc("Install deepum's allocator from Python at start-up (default: "
                                     "when COMMAND runs python or a python script)"),
                            cl::cat(Category));
static cl::opt<bool> NoPython("no-python",
                              cl::desc("Leave the command's allocator alone, even for python"),
                              cl::cat(Category));
static cl::opt<std::string>
    PythonPackage("python-package",
                  cl::desc("The folder holding deepum's Python package (default: found next "
                           "to deepum-profile)"),
                  cl::value_desc("DIR"), cl::cat(Category));
static cl::opt<std::string> Injection("injection-library",
                                      cl::desc("The profiler's injection library (default: "
                                               "next to deepum-profile or in ../lib)"),
                                      cl::value_desc("LIB"), cl::cat(Category));
static cl::opt<bool> Quiet("quiet", cl::desc("No progress lines on standard error"),
                           cl::cat(Category));
static cl::list<std::string> Command(cl::Positional, cl::desc("-- COMMAND ARGS..."),
                                     cl::cat(Category));

/// Any function of this executable, to find its path (taking main's address is not C++).
static void anchor() {}

/// `Path` with {rank} and {local_rank} replaced: under `torchrun --no-python
/// deepum-profile -o 'p.rank{rank}.pb.gz' ...` each worker writes its own profile.
static std::string substituteRank(std::string Path) {
  const char *Rank = std::getenv("RANK");
  const char *LocalRank = std::getenv("LOCAL_RANK");
  std::string R = Rank && *Rank ? Rank : "0";
  std::string L = LocalRank && *LocalRank ? LocalRank : R;
  for (auto [Field, Value] : {std::pair<std::string, std::string>{"{rank}", R}, {"{local_rank}", L}})
    for (size_t At = Path.find(Field); At != std::string::npos; At = Path.find(Field, At))
      Path.replace(At, Field.size(), Value), At += Value.size();
  return Path;
}

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::HideUnrelatedOptions(Category);
  deepum::tools::parseCommandLine(
      argc, argv, "record kernels and Unified Memory faults of a training command\n");
  if (Command.empty()) {
    errs() << "deepum-profile: no command given: deepum-profile [options] -o PROFILE -- "
              "COMMAND ARGS...\n";
    return deepum::tools::kExitUsage;
  }
  if (Output == "-") {
    errs() << "deepum-profile: -o -: the command writes to standard output itself; name a file "
              "for the profile\n";
    return deepum::tools::kExitUsage;
  }
  if (Python && NoPython) {
    errs() << "deepum-profile: --python and --no-python contradict each other\n";
    return deepum::tools::kExitUsage;
  }
  deepum::profiler::ProfileOptions Opts;
  Opts.Iterations = Iterations;
  Opts.Skip = Skip;
  Opts.Mode = Mode;
  Opts.StepRange = StepRange;
  Opts.Output = substituteRank(Output);
  Opts.Command.assign(Command.begin(), Command.end());
  Opts.InjectionLibrary = Injection;
  Opts.AllocatorLibrary = Allocator;
  Opts.Python = Python     ? deepum::profiler::PythonMode::On
                : NoPython ? deepum::profiler::PythonMode::Off
                           : deepum::profiler::PythonMode::Auto;
  Opts.PythonPackage = PythonPackage;
  Opts.Progress = deepum::tools::progressSettings(errs(), Quiet).Stream != nullptr;
  Opts.ToolPath = sys::fs::getMainExecutable(argv[0], reinterpret_cast<void *>(&anchor));
  ExitOnError ExitOnErr("deepum-profile: ");
  return ExitOnErr(deepum::profiler::runProfile(Opts, errs()));
}
