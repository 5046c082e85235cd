//===- StatsAtExitProgram.cpp - DEEPUM_STATS writes the report at exit ------===//
//
// The C ABI built over the fake backend (libdeepum_fake_capi.so, no GPU).
// Each case runs a child process (this program again) that uses deepum and
// exits normally, then checks what the exit handler left behind:
//
//   written DIR     DEEPUM_STATS=DIR/stats.json: the file holds the report of
//                   every device, with the child's allocations, and no
//                   temporary file is left
//   bad-path DIR    DEEPUM_STATS names a missing directory: the child still
//                   exits 0, with exactly one warning line naming the path
//   unset DIR       without DEEPUM_STATS nothing is written
//
// Exit status 0 when every check passed; each failure is printed.
//
//===----------------------------------------------------------------------===//
#include "deepum/deepum.h"

#include "ProgramCheck.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>

namespace {

using deepum::test::Failures;

/// What a training process does: allocate, free, step, then exit normally.
int child() {
  void *A = deepum_malloc(3000, 0, nullptr);
  void *B = deepum_malloc(5000, 0, nullptr);
  if (!A || !B)
    return 4;
  deepum_free(A, 3000, 0, nullptr);
  deepum_step();
  return 0; // B stays allocated; the report is written by the exit handler
}

struct Outcome {
  int Status = -1;
  std::string Stderr;
};

/// Runs `Self child` with DEEPUM_STATS = `Stats` (nullptr: unset).
Outcome runChild(const char *Self, const char *Stats, const std::string &Dir) {
  Outcome O;
  const std::string ErrPath = Dir + "/child.stderr";
  pid_t Pid = fork();
  if (Pid == 0) {
    if (Stats)
      setenv("DEEPUM_STATS", Stats, 1);
    else
      unsetenv("DEEPUM_STATS");
    if (!std::freopen(ErrPath.c_str(), "w", stderr))
      _exit(5);
    execl(Self, Self, "child", static_cast<char *>(nullptr));
    _exit(6);
  }
  int Raw = 0;
  if (Pid < 0 || waitpid(Pid, &Raw, 0) != Pid)
    return O;
  O.Status = WIFEXITED(Raw) ? WEXITSTATUS(Raw) : 128 + WTERMSIG(Raw);
  std::ifstream In(ErrPath);
  std::stringstream SS;
  SS << In.rdbuf();
  O.Stderr = SS.str();
  return O;
}

std::string slurp(const std::string &Path) {
  std::ifstream In(Path);
  if (!In)
    return {};
  std::stringstream SS;
  SS << In.rdbuf();
  return SS.str();
}

bool contains(const std::string &S, const char *Part) { return S.find(Part) != std::string::npos; }

/// Files in `Dir` whose name starts with `Prefix`.
int countFiles(const std::string &Dir, const std::string &Prefix) {
  int N = 0;
  if (DIR *D = opendir(Dir.c_str())) {
    while (dirent *E = readdir(D))
      N += std::strncmp(E->d_name, Prefix.c_str(), Prefix.size()) == 0;
    closedir(D);
  }
  return N;
}

} // namespace

int main(int argc, char **argv) {
  setenv("DEEPUM_LOG", "warn", 1);
  unsetenv("DEEPUM_PLAN");
  unsetenv("DEEPUM_PROFILER_LIBRARY");
  if (argc >= 2 && std::strcmp(argv[1], "child") == 0)
    return child();
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s written|bad-path|unset DIR\n", argv[0]);
    return 2;
  }
  const std::string Mode = argv[1], Dir = argv[2];
  for (size_t Slash = 1; Slash != std::string::npos; Slash = Dir.find('/', Slash + 1))
    (void)mkdir(Dir.substr(0, Slash).c_str(), 0755);
  (void)mkdir(Dir.c_str(), 0755);
  const std::string Path = Dir + "/stats.json";
  std::remove(Path.c_str());

  if (Mode == "written") {
    Outcome O = runChild(argv[0], Path.c_str(), Dir);
    CHECK(O.Status == 0);
    std::string J = slurp(Path);
    CHECK(!J.empty());
    CHECK(J.rfind("{\"schema\":1,\"devices\":[{\"schema\":1,\"device\":0,", 0) == 0);
    CHECK(contains(J, "\"allocations\":2,"));
    CHECK(contains(J, "\"frees\":1,"));
    CHECK(contains(J, "\"bytes_in_use\":5120,")); // 5000 in 512-byte granules
    CHECK(contains(J, "\"active\":false"));
    CHECK(contains(J, "\"why_not\":\"no plan"));
    CHECK(!J.empty() && J.back() == '\n');
    CHECK(countFiles(Dir, "stats.json.tmp") == 0);
    CHECK(O.Stderr.empty());
    if (!O.Stderr.empty())
      std::fprintf(stderr, "child said: %s", O.Stderr.c_str());
  } else if (Mode == "bad-path") {
    const std::string Bad = Dir + "/no-such-directory/stats.json";
    Outcome O = runChild(argv[0], Bad.c_str(), Dir);
    CHECK(O.Status == 0);
    CHECK(contains(O.Stderr, "DEEPUM_STATS: cannot write"));
    CHECK(contains(O.Stderr, Bad.c_str()));
    CHECK(std::count(O.Stderr.begin(), O.Stderr.end(), '\n') == 1);
    if (Failures)
      std::fprintf(stderr, "child said: %s", O.Stderr.c_str());
  } else if (Mode == "unset") {
    Outcome O = runChild(argv[0], nullptr, Dir);
    CHECK(O.Status == 0);
    CHECK(slurp(Path).empty());
    CHECK(countFiles(Dir, "stats.json") == 0);
  } else {
    return 2;
  }
  if (Failures == 0)
    std::printf("%s: ok\n", Mode.c_str());
  return Failures ? 1 : 0;
}
