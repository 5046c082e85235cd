//===- PlanSpeed.cpp - deepum-plan's time and memory on large profiles -------===//
//
// Large profiles are made by repeating a real one: the steady-state iteration
// is copied K times into each of `--iterations` iterations (allocations made
// in the iteration get fresh ids per copy, so lifetimes, layout and block use
// scale with K; persistent allocations are shared). Each size is written to
// disk and `deepum-plan` is run on it as a child process, so the wall time and
// peak resident memory reported are the tool's own, reading included.
//
// With --instructions it runs under valgrind's callgrind instead and reports
// the instructions deepum-plan executes per block use: flat along a series
// when its work is linear in the profile, whatever the caches do to its time.
//
//===----------------------------------------------------------------------===//
#include "deepum/format/Format.h"
#include "deepum/format/Perfetto.h"
#include "deepum/format/Units.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <set>

using namespace llvm;
using namespace deepum::v1;

static cl::OptionCategory Category("deepum-plan-speed options");
static cl::opt<std::string> Input(cl::Positional, cl::desc("<profile to repeat>"), cl::Required,
                                  cl::cat(Category));
static cl::opt<std::string> Tool("tool", cl::desc("deepum-plan binary"), cl::Required,
                                 cl::cat(Category));
static cl::opt<std::string> WorkDir("work", cl::desc("Directory for the generated profiles"),
                                    cl::init("/tmp"), cl::cat(Category));
static cl::list<unsigned> Sizes("kernels", cl::desc("Kernels per iteration to generate"),
                                cl::CommaSeparated, cl::cat(Category));
static cl::list<unsigned> UseSizes("block-uses",
                                   cl::desc("Block uses per iteration to generate (instead of "
                                            "--kernels)"),
                                   cl::CommaSeparated, cl::cat(Category));
static cl::opt<unsigned> ProfileIterations("iterations", cl::desc("Iterations per profile"),
                                           cl::init(2), cl::cat(Category));
static cl::opt<bool> Instructions("instructions",
                                  cl::desc("Count instructions under valgrind --tool=callgrind "
                                           "instead of timing"),
                                  cl::cat(Category));
static cl::opt<std::string> OutMd("md", cl::desc("Markdown table to write"), cl::init(""),
                                  cl::cat(Category));

namespace {

Profile repeatProfile(const Profile &P, unsigned Copies, unsigned Iterations) {
  uint32_t First = 0, Count = static_cast<uint32_t>(P.kernels_size());
  if (P.iterations_size()) {
    First = P.iterations(P.iterations_size() - 1).first_kernel();
    Count = P.iterations(P.iterations_size() - 1).kernel_count();
  }
  uint64_t WS = P.kernels(static_cast<int>(First)).start_ns(), WE = WS;
  for (uint32_t K = First; K < First + Count; ++K)
    WE = std::max(WE, P.kernels(static_cast<int>(K)).end_ns() + 1);
  const uint64_t D = WE - WS;
  Profile Out = P;
  Out.clear_allocations();
  Out.clear_kernels();
  Out.clear_iterations();
  Out.clear_faults();
  Out.clear_migrations();
  Out.clear_um_events();
  uint64_t MaxId = 0;
  std::set<uint64_t> Carried, Window;
  for (const Allocation &A : P.allocations()) {
    MaxId = std::max(MaxId, A.id());
    uint64_t Free = A.freed() ? A.free_time_ns() : UINT64_MAX;
    if (A.alloc_time_ns() < WS) {
      if (Free >= WE) {
        *Out.add_allocations() = A;
      } else if (Free >= WS) {
        Carried.insert(A.id());
        *Out.add_allocations() = A;
      }
    } else if (A.alloc_time_ns() < WE) {
      Window.insert(A.id());
    }
  }
  const unsigned Total = Copies * Iterations;
  for (unsigned C = 0; C < Total; ++C) {
    uint64_t Shift = C * D, IdShift = (C + 1) * (MaxId + 1);
    for (const Allocation &A : P.allocations()) {
      if (!Window.count(A.id()))
        continue;
      Allocation *N = Out.add_allocations();
      *N = A;
      N->set_id(A.id() + IdShift);
      N->set_alloc_time_ns(A.alloc_time_ns() + Shift);
      uint64_t Free = A.freed() && A.free_time_ns() < WE ? A.free_time_ns() : WE - 1;
      N->set_freed(true);
      N->set_free_time_ns(std::max(Free, A.alloc_time_ns()) + Shift);
    }
    for (uint32_t K = First; K < First + Count; ++K) {
      Kernel *N = Out.add_kernels();
      *N = P.kernels(static_cast<int>(K));
      N->set_start_ns(N->start_ns() + Shift);
      N->set_end_ns(N->end_ns() + Shift);
      auto *Tensors = N->mutable_tensors();
      for (int I = Tensors->size() - 1; I >= 0; --I) {
        TensorAccess *T = Tensors->Mutable(I);
        if (Window.count(T->allocation_id()))
          T->set_allocation_id(T->allocation_id() + IdShift);
        else if (Carried.count(T->allocation_id()) && C > 0)
          Tensors->DeleteSubrange(I, 1);
      }
    }
  }
  for (unsigned It = 0; It < Iterations; ++It) {
    Iteration *I = Out.add_iterations();
    I->set_index(It);
    I->set_first_kernel(It * Copies * Count);
    I->set_kernel_count(Copies * Count);
    I->set_start_ns(Out.kernels(static_cast<int>(It * Copies * Count)).start_ns());
    I->set_end_ns(Out.kernels(static_cast<int>((It + 1) * Copies * Count - 1)).end_ns());
  }
  return Out;
}

struct Measured {
  double Seconds = 0;
  double CpuSeconds = 0;
  uint64_t MaxRssBytes = 0;
  int Status = 0;
};

Measured runTool(const std::vector<std::string> &Args) {
  std::vector<char *> Argv;
  for (const std::string &A : Args)
    Argv.push_back(const_cast<char *>(A.c_str()));
  Argv.push_back(nullptr);
  Measured M;
  auto Begin = std::chrono::steady_clock::now();
  pid_t Pid = fork();
  if (Pid == 0) {
    execv(Argv[0], Argv.data());
    _exit(127);
  }
  int Status = 0;
  struct rusage Usage {};
  wait4(Pid, &Status, 0, &Usage);
  M.Seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - Begin).count();
  M.MaxRssBytes = static_cast<uint64_t>(Usage.ru_maxrss) * 1024;
  M.CpuSeconds = double(Usage.ru_utime.tv_sec + Usage.ru_stime.tv_sec) +
                 double(Usage.ru_utime.tv_usec + Usage.ru_stime.tv_usec) / 1e6;
  M.Status = Status;
  return M;
}

/// The instruction count callgrind wrote to `Path` (its "summary:" line).
Expected<uint64_t> callgrindTotal(const std::string &Path) {
  auto Buffer = MemoryBuffer::getFile(Path);
  if (!Buffer)
    return createStringError(Buffer.getError(), Path + ": cannot read");
  SmallVector<StringRef, 0> Lines;
  (*Buffer)->getBuffer().split(Lines, '\n');
  for (StringRef L : Lines) {
    uint64_t N = 0;
    if (L.consume_front("summary: ") && !L.trim().getAsInteger(10, N))
      return N;
  }
  return createStringError(inconvertibleErrorCode(), Path + ": no summary line");
}

Error run() {
  std::string Valgrind;
  if (Instructions) {
    auto Found = sys::findProgramByName("valgrind");
    if (!Found)
      return createStringError(Found.getError(), "--instructions needs valgrind on the PATH");
    Valgrind = *Found;
  }
  auto P = deepum::format::readProfile(Input);
  if (!P)
    return P.takeError();
  uint32_t PerIteration = static_cast<uint32_t>(P->kernels_size());
  uint64_t BlockUses = 0;
  if (P->iterations_size()) {
    const Iteration &Last = P->iterations(P->iterations_size() - 1);
    PerIteration = Last.kernel_count();
    for (uint32_t K = Last.first_kernel(); K < Last.first_kernel() + Last.kernel_count(); ++K)
      BlockUses += P->kernels(static_cast<int>(K)).blocks_size();
  }
  std::vector<unsigned> Targets(Sizes.begin(), Sizes.end());
  bool ByUses = !UseSizes.empty();
  if (ByUses)
    Targets.assign(UseSizes.begin(), UseSizes.end());
  if (Targets.empty())
    Targets = {25000, 50000, 100000};
  if (ByUses && BlockUses == 0)
    return createStringError(inconvertibleErrorCode(), Input + ": no block uses to repeat");
  std::string Md = Instructions
                       ? "| profile | kernels / iteration | block uses / iteration | "
                         "instructions (G) | instructions per block use |\n|---|---|---|---|---|\n"
                       : "| profile | kernels / iteration | block uses / iteration | file size | "
                         "deepum-plan wall (s) | CPU (s) | peak RSS (MiB) | CPU s per 1M block "
                         "uses |\n|---|---|---|---|---|---|---|---|\n";
  for (unsigned Target : Targets) {
    double Unit = ByUses ? double(BlockUses) : double(PerIteration);
    unsigned Copies = std::max(1u, static_cast<unsigned>(std::ceil(double(Target) / Unit)));
    Profile R = repeatProfile(*P, Copies, ProfileIterations);
    std::string Path = WorkDir + "/repeated-" + std::to_string(Target) + ".profile.pb";
    if (Error E = deepum::format::writeProfile(R, Path))
      return E;
    std::string Plan = WorkDir + "/repeated-" + std::to_string(Target) + ".plan.pb";
    // Half the steady-state footprint: a 2x oversubscribed plan.
    uint64_t Capacity = uint64_t{64} << 20;
    std::set<uint64_t> Blocks;
    for (uint32_t K = 0; K < Copies * PerIteration; ++K)
      for (const BlockAccess &B : R.kernels(static_cast<int>(K)).blocks())
        Blocks.insert(B.block());
    Capacity = std::max<uint64_t>(Capacity, Blocks.size() * deepum::format::kUmBlockBytes / 2);
    std::vector<std::string> Args = {Tool, Path, "--gpu-memory", std::to_string(Capacity),
                                     "--device", "v100-pcie-16gb", "--quiet", "-o", Plan};
    const std::string Counts = WorkDir + "/repeated-" + std::to_string(Target) + ".callgrind";
    if (Instructions)
      Args.insert(Args.begin(), {Valgrind, "--tool=callgrind", "--quiet",
                                 "--callgrind-out-file=" + Counts});
    Measured M = runTool(Args);
    if (M.Status != 0)
      return createStringError(inconvertibleErrorCode(), "deepum-plan failed on " + Path +
                                                             " (status " +
                                                             std::to_string(M.Status) + ")");
    if (Instructions) {
      Expected<uint64_t> Total = callgrindTotal(Counts);
      if (!Total)
        return Total.takeError();
      std::string Line = formatv("| {0} x{1} | {2} | {3} | {4:f2} | {5:f0} |\n",
                                 P->workload().model(), Copies, Copies * PerIteration,
                                 Copies * BlockUses, double(*Total) / 1e9,
                                 double(*Total) / double(std::max<uint64_t>(1, Copies * BlockUses)))
                             .str();
      outs() << Line;
      outs().flush();
      Md += Line;
      continue;
    }
    uint64_t Bytes = static_cast<uint64_t>(R.ByteSizeLong());
    std::string Line =
        formatv("| {0} x{1} | {2} | {3} | {4} | {5:f2} | {6:f2} | {7:f0} | {8:f2} |\n",
                P->workload().model(), Copies, Copies * PerIteration, Copies * BlockUses,
                deepum::format::formatBytes(Bytes), M.Seconds, M.CpuSeconds,
                double(M.MaxRssBytes) / 1048576.0,
                M.CpuSeconds * 1e6 / double(std::max<uint64_t>(1, Copies * BlockUses)))
            .str();
    outs() << Line;
    outs().flush();
    Md += Line;
  }
  if (!OutMd.empty())
    return deepum::format::writeFileAtomically(OutMd, Md);
  return Error::success();
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::HideUnrelatedOptions(Category);
  cl::ParseCommandLineOptions(argc, argv, "time deepum-plan on repeated profiles\n");
  ExitOnError ExitOnErr("deepum-plan-speed: ");
  ExitOnErr(run());
  return 0;
}
