//===- FakeProfiledProgram.cpp - A "training program" that needs no GPU -----===//
//
// Stands in for a CUDA program under deepum-profile in the launcher's tests.
// Where the driver would load the injection library, this program checks
// that CUDA_INJECTION64_PATH names one and then runs the same session code
// (Session, Recorder, the CUPTI boundary) with hand-built CUPTI records.
//
//   env FILE                 write the environment to FILE; never "load" the profiler
//   exit N                   exit with N; never load the profiler
//   run ITERS [crash-after K | exit-code N]
//                            run ITERS training iterations (deepum_step after each);
//                            crash with SIGSEGV after K, or exit with N at the end
//
//===----------------------------------------------------------------------===//
#include "deepum/profiler/Recorder.h"
#include "deepum/profiler/Session.h"
#include "deepum/profiler/cuda/CuptiRecords.h"

#include "llvm/Support/raw_ostream.h"

#include <cupti_activity.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <unistd.h>

using namespace deepum::profiler;

static constexpr uint64_t kBase = uint64_t{1} << 40;
static constexpr uint64_t kMiB = uint64_t{1} << 20;

int main(int argc, char **argv) {
  if (argc < 3) {
    llvm::errs() << "usage: profiler_fake_program env FILE | exit N | run ITERS [...]\n";
    return 2;
  }
  std::string Cmd = argv[1];
  if (Cmd == "env") {
    std::ofstream Out(argv[2]);
    for (char **E = environ; *E; ++E)
      Out << *E << "\n";
    return 0;
  }
  if (Cmd == "exit")
    return std::atoi(argv[2]);
  if (Cmd != "run")
    return 2;
  int Iters = std::atoi(argv[2]);
  int CrashAfter = -1, ExitCode = 0;
  if (argc >= 5 && std::strcmp(argv[3], "crash-after") == 0)
    CrashAfter = std::atoi(argv[4]);
  if (argc >= 5 && std::strcmp(argv[3], "exit-code") == 0)
    ExitCode = std::atoi(argv[4]);

  // What the driver does with CUDA_INJECTION64_PATH.
  const char *Injection = std::getenv("CUDA_INJECTION64_PATH");
  if (!Injection || access(Injection, R_OK) != 0) {
    llvm::errs() << "fake program: CUDA_INJECTION64_PATH does not name a readable library\n";
    return 3;
  }
  auto Config = SessionConfig::fromEnvironment([](const char *N) { return std::getenv(N); });
  if (!Config) {
    llvm::errs() << "fake program: " << llvm::toString(Config.takeError()) << "\n";
    return 4;
  }
  if (llvm::Error E = claimSession(Config->Directory)) {
    llvm::errs() << "fake program: not profiled: " << llvm::toString(std::move(E)) << "\n";
    return ExitCode;
  }
  static Recorder *R = new Recorder(Config->recorderOptions());
  static Session *S = new Session(*Config, *R, llvm::errs());
  R->setOrigin(0);
  R->setUmCounters(true);
  S->started();
  std::atexit([] { S->finish(); }); // as the injection library does
  R->addAllocation(kBase, 4 * kMiB, 0, 1, AllocationSource::Allocator);

  for (int It = 0; It < Iters; ++It) {
    uint64_t T = uint64_t(It) * 1000;
    CUpti_ActivityKernel10 K = {};
    K.kind = CUPTI_ACTIVITY_KIND_KERNEL;
    K.name = "_Z4stepPf";
    K.gridX = K.gridY = K.gridZ = 1;
    K.blockX = K.blockY = K.blockZ = 32;
    K.start = T + 100;
    K.end = T + 200;
    K.correlationId = static_cast<uint32_t>(It + 1);
    cuda::translateActivity(&K, *R);
    CUpti_ActivityUnifiedMemoryCounter3 F = {};
    F.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    F.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT;
    F.address = kBase + 2 * kMiB;
    F.start = T + 150;
    F.end = T + 160;
    F.flags = CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ;
    cuda::translateActivity(&F, *R);
    S->afterMark(R->step(T + 1000));
    if (It + 1 == CrashAfter) {
      std::signal(SIGSEGV, SIG_DFL);
      std::raise(SIGSEGV);
    }
  }
  return ExitCode;
}
