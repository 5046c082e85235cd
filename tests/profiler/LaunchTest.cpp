//===- LaunchTest.cpp - deepum-profile's launcher, on a program with no GPU -===//
#include "TestSupport.h"

#include "deepum/format/Format.h"
#include "deepum/profiler/HookTarget.h"
#include "deepum/profiler/Launch.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include <cstdio>
#include <cstdlib>
#include <sys/wait.h>

using namespace deepum;
using namespace deepum::profiler;
using namespace deepum::test;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::Not;

namespace {

ProfileOptions baseOptions(const std::string &Dir) {
  ProfileOptions O;
  O.Output = Dir + "/out.profile.pb";
  O.InjectionLibrary = DEEPUM_TEST_INJECTION_LIBRARY;
  O.Command = {DEEPUM_TEST_FAKE_PROGRAM};
  return O;
}

struct RunResult {
  int Exit = -1;
  std::string Error;
  std::string Log;
};

RunResult run(const ProfileOptions &O) {
  RunResult R;
  llvm::raw_string_ostream OS(R.Log);
  auto E = runProfile(O, OS);
  OS.flush();
  if (E)
    R.Exit = *E;
  else
    R.Error = llvm::toString(E.takeError());
  return R;
}

//===-- Options and environment -------------------------------------------===//

TEST(Launch, RefusesBadOptionsBeforeRunning) {
  std::string Dir = scratchDir("Launch.BadOptions");
  ProfileOptions O = baseOptions(Dir);
  O.Command.clear();
  EXPECT_THAT(run(O).Error, HasSubstr("no command given"));
  O = baseOptions(Dir);
  O.Output.clear();
  EXPECT_THAT(run(O).Error, HasSubstr("no output given"));
  O = baseOptions(Dir);
  O.Iterations = 0;
  EXPECT_THAT(run(O).Error, HasSubstr("--iterations must be at least 1"));
  O = baseOptions(Dir);
  O.Mode = "everything";
  EXPECT_THAT(run(O).Error, HasSubstr("unknown mode 'everything'"));
  O = baseOptions(Dir);
  O.Output = Dir + "/no/such/dir/out.pb";
  EXPECT_THAT(run(O).Error, HasSubstr("does not exist"));
  O = baseOptions(Dir);
  O.Command = {"deepum-no-such-command-xyz"};
  EXPECT_THAT(run(O).Error, HasSubstr("deepum-no-such-command-xyz: command not found"));
  O = baseOptions(Dir);
  O.InjectionLibrary = Dir + "/missing.so";
  EXPECT_THAT(run(O).Error, HasSubstr("injection library"));
}

TEST(Launch, FindsTheInjectionLibraryNextToTheTool) {
  // Build tree: tools/deepum-profile and lib/libdeepum_profiler_injection.so.
  std::string Lib = DEEPUM_TEST_INJECTION_LIBRARY;
  std::string Root = Lib.substr(0, Lib.rfind("/lib/"));
  EXPECT_EQ(takeOk(findInjectionLibrary("", Root + "/tools/deepum-profile")), Lib);
  EXPECT_THAT(errorText(findInjectionLibrary("", "/nonexistent/bin/deepum-profile")),
              HasSubstr("pass --injection-library"));
}

TEST(Launch, ChildEnvironmentCarriesTheSession) {
  ProfileOptions O;
  O.Iterations = 3;
  O.Skip = 2;
  O.Mode = "access-set";
  O.StepRange = "train_step";
  O.Progress = true;
  O.Output = "/tmp/x.pb";
  O.Command = {"true"};
  O.CuptiLibrary = "/opt/cuda/lib/libcupti.so";
  O.AllocatorLibrary = DEEPUM_TEST_INJECTION_LIBRARY; // any existing file
  SessionConfig C = takeOk(makeSessionConfig(O, "/tmp/session"));
  std::vector<std::string> Env = takeOk(childEnvironment(
      O, C, "/lib/inj.so",
      {"PATH=/bin", "LD_PRELOAD=/other.so", "DEEPUM_PROFILE_STEP_RANGE=stale", "HOME=/root"}));
  EXPECT_THAT(Env, Contains("PATH=/bin"));
  EXPECT_THAT(Env, Contains("HOME=/root"));
  EXPECT_THAT(Env, Contains("CUDA_INJECTION64_PATH=/lib/inj.so"));
  EXPECT_THAT(Env, Contains("DEEPUM_PROFILER_LIBRARY=/lib/inj.so"));
  EXPECT_THAT(Env, Contains("DEEPUM_PROFILE_SESSION=/tmp/session"));
  EXPECT_THAT(Env, Contains("DEEPUM_PROFILE_OUTPUT=/tmp/x.pb"));
  EXPECT_THAT(Env, Contains("DEEPUM_PROFILE_ITERATIONS=3"));
  EXPECT_THAT(Env, Contains("DEEPUM_PROFILE_SKIP=2"));
  EXPECT_THAT(Env, Contains("DEEPUM_PROFILE_MODE=access-set"));
  EXPECT_THAT(Env, Contains("DEEPUM_PROFILE_STEP_RANGE=train_step"));
  EXPECT_THAT(Env, Contains("DEEPUM_PROFILE_PROGRESS=1"));
  EXPECT_THAT(Env, Not(Contains("DEEPUM_PROFILE_STEP_RANGE=stale")));
  EXPECT_THAT(Env, Contains("NVTX_INJECTION64_PATH=/opt/cuda/lib/libcupti.so"));
  EXPECT_THAT(Env,
              Contains(std::string("LD_PRELOAD=") + DEEPUM_TEST_INJECTION_LIBRARY + ":/other.so"));

  // The session round-trips through the environment.
  std::map<std::string, std::string> Vars;
  for (const std::string &V : Env)
    Vars[V.substr(0, V.find('='))] = V.substr(V.find('=') + 1);
  SessionConfig Back = takeOk(SessionConfig::fromEnvironment([&](const char *N) -> const char * {
    auto It = Vars.find(N);
    return It == Vars.end() ? nullptr : It->second.c_str();
  }));
  EXPECT_EQ(Back.Iterations, 3u);
  EXPECT_EQ(Back.Skip, 2u);
  EXPECT_EQ(Back.Mode, ProfileMode::AccessSet);
  EXPECT_EQ(Back.StepRange, "train_step");
  EXPECT_TRUE(Back.Progress);
  EXPECT_TRUE(Back.recorderOptions().AccessSetMode);
}

TEST(Launch, RefusesAForeignInjection) {
  ProfileOptions O;
  O.Output = "/tmp/x.pb";
  O.Command = {"true"};
  SessionConfig C = takeOk(makeSessionConfig(O, "/tmp/s"));
  EXPECT_THAT(errorText(childEnvironment(O, C, "/lib/inj.so",
                                         {"CUDA_INJECTION64_PATH=/opt/nsys/libToolsInjection.so"})),
              HasSubstr("another tool injects itself"));
}

//===-- Python commands ----------------------------------------------------===//

/// A file holding `Text`, made executable, in `Dir`.
std::string script(const std::string &Dir, const std::string &Name, const std::string &Text) {
  std::string Path = Dir + "/" + Name;
  std::error_code EC;
  llvm::raw_fd_ostream OS(Path, EC);
  OS << Text;
  OS.close();
  llvm::sys::fs::setPermissions(Path, llvm::sys::fs::all_read | llvm::sys::fs::all_exe |
                                          llvm::sys::fs::owner_write);
  return Path;
}

TEST(Launch, RecognisesPythonCommands) {
  for (std::vector<std::string> C :
       {std::vector<std::string>{"python", "train.py"},
        {"python3", "-m", "torch.distributed.run", "train.py"},
        {"/usr/local/bin/python3.11", "train.py"},
        {"/usr/bin/env", "CUDA_VISIBLE_DEVICES=0", "python3", "-u", "train.py"}})
    EXPECT_TRUE(isPythonCommand(C, "")) << C.front();
  for (std::vector<std::string> C :
       {std::vector<std::string>{"./trainer", "--steps", "3"},
        {"python3-config", "--libs"},
        {"pythonista"},
        {"env", "A=1", "./trainer"},
        {"bash", "-c", "python3 train.py"}})
    EXPECT_FALSE(isPythonCommand(C, "")) << C.front();

  // A script is judged by its #! line.
  std::string Dir = scratchDir("Launch.PythonScripts");
  std::string Env = script(Dir, "env.py", "#!/usr/bin/env -S python3 -u\nprint(1)\n");
  std::string Direct = script(Dir, "direct", "#! /usr/bin/python3.11\t-u\r\n");
  std::string Shell = script(Dir, "run.sh", "#!/bin/sh\nexec python3 train.py\n");
  std::string NoLine = script(Dir, "plain", "python3\n");
  EXPECT_TRUE(isPythonCommand({"./env.py"}, Env));
  EXPECT_TRUE(isPythonCommand({"direct"}, Direct));
  EXPECT_FALSE(isPythonCommand({"./run.sh"}, Shell));
  EXPECT_FALSE(isPythonCommand({"./plain"}, NoLine));
  EXPECT_FALSE(isPythonCommand({"./missing"}, Dir + "/missing"));

  // --python and --no-python override the guess.
  EXPECT_TRUE(wantsPython(PythonMode::On, {"./trainer"}, ""));
  EXPECT_FALSE(wantsPython(PythonMode::Off, {"python3", "train.py"}, ""));
  EXPECT_TRUE(wantsPython(PythonMode::Auto, {"python3", "train.py"}, ""));
}

TEST(Launch, FindsThePythonPackage) {
  // Installed: <prefix>/bin/deepum-profile and <prefix>/share/deepum/python.
  std::string Prefix = scratchDir("Launch.InstalledPython");
  ASSERT_FALSE(llvm::sys::fs::create_directories(Prefix + "/share/deepum/python/deepum/_autoload"));
  script(Prefix, "share/deepum/python/deepum/_autoload/sitecustomize.py", "\n");
  EXPECT_EQ(takeOk(findPythonPackage("", Prefix + "/bin/deepum-profile")),
            Prefix + "/share/deepum/python");

  // Build tree: <source>/build/tools/deepum-profile and <source>/python.
  std::string Lib = DEEPUM_TEST_INJECTION_LIBRARY;
  std::string Build = Lib.substr(0, Lib.rfind("/lib/"));
  std::string Source = Build.substr(0, Build.rfind('/'));
  if (!llvm::sys::fs::exists(Source + "/python/deepum/_autoload/sitecustomize.py"))
    GTEST_SKIP() << "the build folder is not inside the source tree";
  EXPECT_EQ(takeOk(findPythonPackage("", Build + "/tools/deepum-profile")), Source + "/python");
  EXPECT_EQ(takeOk(findPythonPackage(Source + "/python", "/nonexistent/bin/deepum-profile")),
            Source + "/python");
  EXPECT_THAT(errorText(findPythonPackage("", "/nonexistent/bin/deepum-profile")),
              HasSubstr("pass --python-package DIR, or --no-python"));
  EXPECT_THAT(errorText(findPythonPackage("/nonexistent", "")), HasSubstr("holds no"));
}

TEST(Launch, PythonCommandsGetDeepumsAllocator) {
  ProfileOptions O;
  O.Output = "/tmp/x.pb";
  O.Command = {"python3", "train.py"};
  SessionConfig C = takeOk(makeSessionConfig(O, "/tmp/s"));
  std::vector<std::string> Parent = {"PATH=/bin", "PYTHONPATH=/mine", "DEEPUM_PLAN=old.plan.pb",
                                     "DEEPUM_PLAN_TEMPLATE=old{rank}.pb", "DEEPUM_AUTOLOAD=0"};
  std::vector<std::string> Py =
      takeOk(childEnvironment(O, C, "/lib/inj.so", Parent, "/opt/deepum/python"));
  // The start-up hook first, the package, then the user's path.
  EXPECT_THAT(Py, Contains("PYTHONPATH=/opt/deepum/python/deepum/_autoload:/opt/deepum/python:/mine"));
  EXPECT_THAT(Py, Contains("DEEPUM_AUTOLOAD=1"));
  EXPECT_THAT(Py, Not(Contains("DEEPUM_AUTOLOAD=0")));
  // No plan: the profile records the program as it runs by itself.
  EXPECT_THAT(Py, Not(Contains("DEEPUM_PLAN=old.plan.pb")));
  EXPECT_THAT(Py, Not(Contains("DEEPUM_PLAN_TEMPLATE=old{rank}.pb")));
  EXPECT_THAT(Py, Contains("DEEPUM_PROFILER_LIBRARY=/lib/inj.so"));

  // A C++ command keeps its environment as it was.
  O.Command = {"./trainer"};
  std::vector<std::string> Cpp = takeOk(childEnvironment(O, C, "/lib/inj.so", Parent));
  EXPECT_THAT(Cpp, Contains("PYTHONPATH=/mine"));
  EXPECT_THAT(Cpp, Contains("DEEPUM_PLAN=old.plan.pb"));
  EXPECT_THAT(Cpp, Contains("DEEPUM_AUTOLOAD=0"));
  EXPECT_THAT(Cpp, Not(Contains("DEEPUM_AUTOLOAD=1")));

  // Without a PYTHONPATH of the user's, only deepum's.
  Py = takeOk(childEnvironment(O, C, "/lib/inj.so", {"PATH=/bin"}, "/p"));
  EXPECT_THAT(Py, Contains("PYTHONPATH=/p/deepum/_autoload:/p"));
}

TEST(Launch, BadSessionEnvironmentIsReported) {
  auto Get = [](std::map<std::string, std::string> M) {
    return [M](const char *N) -> const char * {
      auto It = M.find(N);
      return It == M.end() ? nullptr : It->second.c_str();
    };
  };
  EXPECT_THAT(errorText(SessionConfig::fromEnvironment(Get({}))),
              HasSubstr("DEEPUM_PROFILE_SESSION is not set"));
  EXPECT_THAT(errorText(SessionConfig::fromEnvironment(
                  Get({{kEnvSession, "/s"}, {kEnvOutput, "/o"}, {kEnvIterations, "x"}}))),
              HasSubstr("DEEPUM_PROFILE_ITERATIONS is not a number"));
  EXPECT_THAT(errorText(SessionConfig::fromEnvironment(
                  Get({{kEnvSession, "/s"}, {kEnvOutput, "/o"}, {kEnvMode, "fast"}}))),
              HasSubstr("unknown mode 'fast'"));
}

TEST(Launch, OneProcessPerSessionIsProfiled) {
  std::string Dir = scratchDir("Launch.Claim");
  ASSERT_FALSE(bool(claimSession(Dir)));
  // A worker that inherited the environment must not profile (nor overwrite the profile).
  EXPECT_THAT(errorText(claimSession(Dir)), HasSubstr("of this run is the one being profiled"));
}

//===-- Running a program -------------------------------------------------===//

TEST(Launch, TheCommandSeesTheProfilerEnvironment) {
  std::string Dir = scratchDir("Launch.Env");
  ProfileOptions O = baseOptions(Dir);
  O.Command = {DEEPUM_TEST_FAKE_PROGRAM, "env", Dir + "/env.txt"};
  RunResult R = run(O);
  // It made no CUDA call, so no profile: said so, with how it ended.
  EXPECT_THAT(R.Error, HasSubstr("exited with status 0 without loading the profiler"));
  auto Buf = llvm::MemoryBuffer::getFile(Dir + "/env.txt");
  ASSERT_TRUE(bool(Buf));
  std::string Env = (*Buf)->getBuffer().str();
  EXPECT_THAT(Env,
              HasSubstr(std::string("CUDA_INJECTION64_PATH=") + DEEPUM_TEST_INJECTION_LIBRARY));
  EXPECT_THAT(Env, HasSubstr("DEEPUM_PROFILE_OUTPUT=" + Dir + "/out.profile.pb"));
  EXPECT_FALSE(llvm::sys::fs::exists(O.Output));
}

TEST(Launch, APythonCommandStartsWithDeepumLoaded) {
  // The interpreter the launcher starts imports deepum before the script: on
  // a machine without CUDA, deepum warns and the script runs unchanged.
  if (!llvm::sys::fs::can_execute("/usr/bin/python3"))
    GTEST_SKIP() << "no /usr/bin/python3";
  std::string Dir = scratchDir("Launch.Python");
  ProfileOptions O = baseOptions(Dir);
  O.ToolPath = DEEPUM_TEST_PROFILE_TOOL;
  O.Command = {"/usr/bin/python3", "-c",
               "import os, sys; open('" + Dir +
                   "/probe.txt', 'w').write(os.environ['DEEPUM_AUTOLOAD'] + ' ' + "
                   "str('deepum' in sys.modules))"};
  RunResult R = run(O);
  EXPECT_THAT(R.Error, HasSubstr("exited with status 0 without loading the profiler"));
  auto Buf = llvm::MemoryBuffer::getFile(Dir + "/probe.txt");
  ASSERT_TRUE(bool(Buf)) << R.Error;
  // sitecustomize ran (it turns DEEPUM_AUTOLOAD off for the script's children).
  EXPECT_EQ((*Buf)->getBuffer(), "0 True");
}

TEST(Launch, RecordsIterationsAndPassesTheExitStatusOn) {
  std::string Dir = scratchDir("Launch.Full");
  ProfileOptions O = baseOptions(Dir);
  O.Skip = 1;
  O.Iterations = 2;
  O.Command = {DEEPUM_TEST_FAKE_PROGRAM, "run", "6", "exit-code", "3"};
  RunResult R = run(O);
  ASSERT_EQ(R.Error, "");
  EXPECT_EQ(R.Exit, 3); // the program's status, after the profile was written
  EXPECT_THAT(R.Log, HasSubstr("exited with status 3 after the profile was written"));
  v1::Profile P = takeOk(format::readProfile(O.Output));
  ASSERT_EQ(P.iterations_size(), 2);
  EXPECT_EQ(P.iterations(0).start_ns(), 1000u); // iteration 0 skipped
  ASSERT_EQ(P.kernels_size(), 2);
  ASSERT_EQ(P.kernels(0).blocks_size(), 1);
  EXPECT_EQ(P.kernels(0).blocks(0).page_mask(), 1u);
}

TEST(Launch, ACrashStillLeavesTheCompleteIterations) {
  std::string Dir = scratchDir("Launch.Crash");
  ProfileOptions O = baseOptions(Dir);
  O.Skip = 1;
  O.Iterations = 5;
  O.Command = {DEEPUM_TEST_FAKE_PROGRAM, "run", "10", "crash-after", "3"};
  RunResult R = run(O);
  ASSERT_EQ(R.Error, "");
  EXPECT_EQ(R.Exit, 128 + SIGSEGV);
  EXPECT_THAT(R.Log, HasSubstr("was killed by signal 11"));
  EXPECT_THAT(R.Log, HasSubstr("wrote the 2 complete iteration(s)"));
  v1::Profile P = takeOk(format::readProfile(O.Output));
  EXPECT_EQ(P.iterations_size(), 2);
  EXPECT_THAT(P.workload().notes(), HasSubstr("before recording finished"));
}

TEST(Launch, AnEarlyExitWritesWhatIsComplete) {
  std::string Dir = scratchDir("Launch.Early");
  ProfileOptions O = baseOptions(Dir);
  O.Iterations = 10;
  O.Command = {DEEPUM_TEST_FAKE_PROGRAM, "run", "3"};
  RunResult R = run(O);
  ASSERT_EQ(R.Error, "");
  EXPECT_EQ(R.Exit, 0);
  EXPECT_EQ(takeOk(format::readProfile(O.Output)).iterations_size(), 3);
}

TEST(Launch, NothingRecordedIsAnError) {
  std::string Dir = scratchDir("Launch.Nothing");
  ProfileOptions O = baseOptions(Dir);
  O.Skip = 5;
  O.Command = {DEEPUM_TEST_FAKE_PROGRAM, "run", "2"};
  RunResult R = run(O);
  EXPECT_THAT(R.Error, HasSubstr("no profile written"));
  EXPECT_THAT(R.Error, HasSubstr("2 iteration(s) ended, 2 skipped (--skip 5)"));
  O.Command = {DEEPUM_TEST_FAKE_PROGRAM, "run", "4", "crash-after", "1"};
  R = run(O);
  EXPECT_THAT(R.Error, HasSubstr("killed by signal 11 (Segmentation fault) before any iteration"));
}

//===-- The tool ----------------------------------------------------------===//

/// Runs deepum-profile through the shell; returns its exit status and output.
std::pair<int, std::string> tool(const std::string &Args) {
  std::string Cmd = std::string(DEEPUM_TEST_PROFILE_TOOL) + " " + Args + " 2>&1";
  std::string Out;
  FILE *P = popen(Cmd.c_str(), "r");
  if (!P)
    return {-1, ""};
  char Buf[4096];
  while (size_t N = fread(Buf, 1, sizeof(Buf), P))
    Out.append(Buf, N);
  int Status = pclose(P);
  return {WIFEXITED(Status) ? WEXITSTATUS(Status) : -1, Out};
}

TEST(Launch, ToolParsesItsCommandLine) {
  std::string Dir = scratchDir("Launch.Tool");
  auto [Code, Out] = tool("--mode bogus -o " + Dir + "/p.pb -- true");
  EXPECT_EQ(Code, 1);
  EXPECT_THAT(Out, HasSubstr("deepum-profile: unknown mode 'bogus'"));
  std::tie(Code, Out) = tool("-- true");
  EXPECT_NE(Code, 0);
  EXPECT_THAT(Out, HasSubstr("-o"));
  // Options after `--` belong to the command; the library is found next to the tool.
  std::tie(Code, Out) = tool("--iterations 2 -o " + Dir + "/p.pb -- " + DEEPUM_TEST_FAKE_PROGRAM +
                             " run 4 exit-code 7");
  EXPECT_EQ(Code, 7) << Out;
  EXPECT_THAT(Out, HasSubstr("deepum-profile: wrote"));
  EXPECT_EQ(takeOk(format::readProfile(Dir + "/p.pb")).iterations_size(), 2);
}

//===-- The allocator's recording interface -------------------------------===//

TEST(Hooks, NotProfilingMeansNoHooks) {
  // Outside deepum-profile the allocator must find nothing and record nothing.
  unsetenv("DEEPUM_PROFILER_LIBRARY");
  EXPECT_EQ(deepum_profiler_find_hooks(), nullptr);
  // Named but not loaded by the driver (no CUDA call yet): still nothing, and
  // it must not load it.
  setenv("DEEPUM_PROFILER_LIBRARY", DEEPUM_TEST_INJECTION_LIBRARY, 1);
  EXPECT_EQ(deepum_profiler_find_hooks(), nullptr);
  unsetenv("DEEPUM_PROFILER_LIBRARY");
}

TEST(Hooks, HandMadeAllocatorCallsReachTheRecorder) {
  // What deepum's allocator does, through the C table, with a fake clock.
  Recorder R({});
  R.setOrigin(0);
  uint64_t Now = 0;
  RecorderHookTarget Target(
      R, [&] { return Now; }, [&] { R.step(Now); });
  const deepum_profiler_hooks *H = hookTable();
  ASSERT_GE(H->version, 2u);
  ASSERT_NE(H->record_alloc_call, nullptr);

  H->record_alloc(reinterpret_cast<void *>(uintptr_t{1} << 40), 1 << 20, 0); // no target yet
  setHookTarget(&Target);
  const void *W = reinterpret_cast<void *>(uintptr_t{1} << 40);
  const void *A = reinterpret_cast<void *>((uintptr_t{1} << 40) + (2 << 20));
  Now = 10;
  H->record_alloc(W, 2 << 20, 0);
  Now = 20;
  H->record_alloc_call(A, 1 << 20, 5, 7); // the allocator's seventh call
  KernelRecord K;
  K.Name = "k";
  K.StartNs = 30;
  K.EndNs = 40;
  R.addKernel(K);
  Now = 50;
  H->record_free(A);
  H->record_free(reinterpret_cast<void *>(0x1234)); // unknown: ignored, counted
  Now = 100;
  H->step();
  setHookTarget(nullptr);
  H->step(); // after the target is gone: nothing happens

  v1::Profile P = takeOk(R.buildProfile());
  ASSERT_EQ(P.allocations_size(), 2);
  EXPECT_EQ(P.allocations(0).alloc_time_ns(), 10u);
  EXPECT_FALSE(P.allocations(0).freed());
  EXPECT_EQ(P.allocations(1).stream(), 5u);
  EXPECT_TRUE(P.allocations(1).freed());
  EXPECT_EQ(P.allocations(1).free_time_ns(), 50u);
  // The call count travels into the profile; version 1's entry has none.
  EXPECT_EQ(P.allocations(0).call_index(), 0u);
  EXPECT_EQ(P.allocations(1).call_index(), 7u);
  ASSERT_EQ(P.iterations_size(), 1);
  EXPECT_EQ(P.iterations(0).end_ns(), 100u);
  EXPECT_THAT(P.workload().notes(), HasSubstr("1 free(s) of unknown addresses ignored"));
}

} // namespace
