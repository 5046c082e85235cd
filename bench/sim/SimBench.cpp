//===- SimBench.cpp - How fast deepum-sim simulates -------------------------===//
//
// Targets (issue 3): at least 1 M block accesses simulated per second on one
// core, and a 20-iteration `um` run of gpt2-medium in under 10 s. Both are
// printed as counters: block_accesses_per_s, and the wall time of
// Gpt2MediumUm20 (one run per benchmark iteration, in seconds).
//
//===----------------------------------------------------------------------===//
#include "deepum/format/Format.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/FileSystem.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>

using namespace deepum;

namespace {

/// A synthetic training-like iteration: `Kernels` kernels, each touching
/// `PerKernel` consecutive blocks of a footprint of `Blocks` blocks (a sweep
/// forward, then back), full page masks, mixed modes. Deterministic.
v1::Profile synthetic(int Kernels, int PerKernel, int Blocks) {
  v1::Profile P;
  P.set_format_version(format::kProfileFormatVersion);
  P.set_um_block_bytes(format::kUmBlockBytes);
  std::mt19937 Rng(42);
  uint64_t T = 0;
  for (int K = 0; K < Kernels; ++K) {
    v1::Kernel *Kr = P.add_kernels();
    Kr->set_name(K < Kernels / 2 ? "fwd" : "bwd");
    Kr->set_start_ns(T);
    T += 50'000 + Rng() % 100'000;
    Kr->set_end_ns(T);
    int Phase = K < Kernels / 2 ? K : Kernels - 1 - K;
    int First = (Phase * Blocks / (Kernels / 2 + 1)) % Blocks;
    for (int B = 0; B < PerKernel; ++B) {
      v1::BlockAccess *A = Kr->add_blocks();
      A->set_block(uint64_t{1} << 20 | static_cast<uint64_t>((First + B) % Blocks));
      A->set_mode(static_cast<v1::AccessMode>(1 + Rng() % 3));
    }
    // Blocks must ascend within a kernel.
    std::sort(Kr->mutable_blocks()->begin(), Kr->mutable_blocks()->end(),
              [](const auto &X, const auto &Y) { return X.block() < Y.block(); });
  }
  v1::Iteration *It = P.add_iterations();
  It->set_kernel_count(static_cast<uint32_t>(Kernels));
  It->set_end_ns(T);
  return P;
}

uint64_t blockAccesses(const v1::Profile &P) {
  uint64_t N = 0;
  const v1::Iteration &It = P.iterations(P.iterations_size() - 1);
  for (uint32_t K = It.first_kernel(); K < It.first_kernel() + It.kernel_count(); ++K)
    N += static_cast<uint64_t>(P.kernels(static_cast<int>(K)).blocks_size());
  return N;
}

void runUm(benchmark::State &State, const v1::Profile &P, unsigned Iterations, unsigned Warmup) {
  sim::SimOptions O;
  llvm::Expected<sim::DeviceModel> D = sim::loadDeviceModel("v100-pcie-16gb");
  if (!D) {
    State.SkipWithError(llvm::toString(D.takeError()).c_str());
    return;
  }
  O.Device = *D;
  O.GpuMemoryBytes = sim::footprintBytes(P) / 2;
  O.Pol = sim::Policy::Um;
  O.Iterations = Iterations;
  O.WarmupIterations = Warmup;
  double Faults = 0;
  for (auto _ : State) {
    llvm::Expected<sim::SimResult> R = sim::simulate(P, O);
    if (!R) {
      State.SkipWithError(llvm::toString(R.takeError()).c_str());
      return;
    }
    Faults = R->Faults;
    benchmark::DoNotOptimize(R->IterationUs);
  }
  double Accesses = static_cast<double>(blockAccesses(P)) * (Iterations + Warmup);
  State.counters["block_accesses_per_s"] =
      benchmark::Counter(Accesses, benchmark::Counter::kIsIterationInvariantRate);
  State.counters["faults_per_iteration"] = Faults;
}

void SyntheticUm(benchmark::State &State) {
  static const v1::Profile P = synthetic(4000, 32, 4096);
  runUm(State, P, 5, 1);
}
BENCHMARK(SyntheticUm)->Unit(benchmark::kMillisecond)->UseRealTime();

void Gpt2MediumUm20(benchmark::State &State) {
  std::string Path = DEEPUM_SOURCE_DIR "/tests/data/gpt2-medium.profile.pb.gz";
  if (!llvm::sys::fs::exists(Path)) {
    State.SkipWithError("tests/data/gpt2-medium.profile.pb.gz is not generated yet");
    return;
  }
  static llvm::Expected<v1::Profile> P = format::readProfile(Path);
  if (!P) {
    State.SkipWithError(llvm::toString(P.takeError()).c_str());
    return;
  }
  // 20 iterations simulated in all: 2 warm-up + 18 measured.
  runUm(State, *P, 18, 2);
}
BENCHMARK(Gpt2MediumUm20)->Unit(benchmark::kSecond)->UseRealTime()->Iterations(2);

} // namespace

BENCHMARK_MAIN();
