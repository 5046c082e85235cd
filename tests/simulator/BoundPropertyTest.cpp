//===- BoundPropertyTest.cpp - No policy beats a lower bound -----------------===//
//
// A lower bound is a theorem about every policy, so it is tested against
// workloads nobody tuned it for: random training-like iterations whose
// tensors are allocated, written, freed and whose memory is reused by later
// allocations, with READ_WRITE accesses (what deepum-profile records) as
// well as exact modes. Every policy and every plan strategy, at several
// capacities, must take at least every bound the simulator reports.
//
//===----------------------------------------------------------------------===//
#include "SimTestSupport.h"
#include "TestSupport.h"
#include "Workload.h"

#include "deepum/executor/sim/SimBackend.h"
#include "deepum/format/Format.h"
#include "deepum/planner/Planner.h"
#include "deepum/sim/Simulator.h"

#include "gtest/gtest.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <string>
#include <vector>

using namespace deepum;
using namespace deepum::test;

namespace {

constexpr uint64_t KiB = uint64_t{1} << 10;

/// One random iteration, repeated three times (marked), with the same
/// addresses each time, as a steady training loop has.
/// `MidStep`: the profile marks its iterations from a launch inside the step
/// (drawn by the seed apart from the rest), so that temporaries live across
/// the mark: made in one marked iteration, freed in the next.
v1::Profile randomWorkload(uint64_t Seed, bool ExactModes, bool MidStep = false) {
  std::mt19937_64 Rng(Seed);
  auto uniform = [&](uint64_t Lo, uint64_t Hi) {
    return std::uniform_int_distribution<uint64_t>(Lo, Hi)(Rng);
  };
  const uint32_t K = static_cast<uint32_t>(uniform(6, 14));
  std::vector<uint64_t> Duration(K);
  // Most iterations transfer-bound; one seed in four has a few long
  // launches beside short ones, where what must move between two launches
  // stalls the GPU and compute hides the rest.
  const bool LongLaunches = Seed % 4 == 3;
  for (uint64_t &D : Duration)
    D = uniform(1, 80) * 1000 * (LongLaunches && uniform(0, 3) == 0 ? 40 : 1);

  // Temporaries: live from a first to a last use, placed first-fit in one
  // region so that freed memory is reused within the iteration.
  struct Temp {
    uint32_t First, Last;
    uint64_t Bytes, Address = 0;
  };
  std::vector<Temp> Temps(uniform(3, 12));
  for (Temp &T : Temps) {
    T.First = static_cast<uint32_t>(uniform(0, K - 1));
    T.Last = static_cast<uint32_t>(uniform(T.First, std::min<uint64_t>(K - 1, T.First + 4)));
    T.Bytes = uniform(1, 400) * 16 * KiB; // not whole pages: tensors share pages
  }
  const uint64_t Region = uint64_t{1} << 41;
  std::map<uint64_t, uint64_t> Busy; // address -> end
  for (uint32_t P = 0; P < K; ++P) {
    for (Temp &T : Temps) // frees before allocations at a boundary
      if (T.Last + 1 == P)
        Busy.erase(T.Address);
    for (Temp &T : Temps) {
      if (T.First != P)
        continue;
      uint64_t At = Region;
      for (auto [Begin, End] : Busy) {
        if (Begin >= At + T.Bytes)
          break;
        At = std::max(At, (End + 16 * KiB - 1) / (16 * KiB) * (16 * KiB));
      }
      T.Address = At;
      Busy[At] = At + T.Bytes;
    }
  }

  ProfileBuilder B;
  std::vector<uint64_t> Params;
  for (uint64_t I = 0, N = uniform(1, 3); I < N; ++I)
    Params.push_back(B.allocate(uniform(4, 64) * 64 * KiB, 0, -1, v1::ALLOCATION_ROLE_PARAMETER));
  // Each position's uses, fixed across iterations.
  struct Pick {
    int Temp; // -1: a parameter
    size_t Param;
    v1::AccessMode Mode;
  };
  std::vector<std::vector<Pick>> Picks(K);
  auto randomMode = [&](bool Produces) {
    if (!ExactModes)
      return uniform(0, 3) == 0 ? v1::ACCESS_MODE_READ : v1::ACCESS_MODE_READ_WRITE;
    if (Produces)
      return uniform(0, 1) ? v1::ACCESS_MODE_WRITE : v1::ACCESS_MODE_READ_WRITE;
    const uint64_t M = uniform(0, 2);
    return M == 0 ? v1::ACCESS_MODE_READ : M == 1 ? v1::ACCESS_MODE_WRITE
                                                  : v1::ACCESS_MODE_READ_WRITE;
  };
  for (uint32_t P = 0; P < K; ++P) {
    for (size_t T = 0; T < Temps.size(); ++T)
      if (Temps[T].First == P || Temps[T].Last == P || (Temps[T].First < P && P < Temps[T].Last &&
                                                        uniform(0, 1)))
        Picks[P].push_back({static_cast<int>(T), 0, randomMode(Temps[T].First == P)});
    if (Picks[P].empty() || uniform(0, 2) == 0)
      Picks[P].push_back({-1, static_cast<size_t>(uniform(0, Params.size() - 1)),
                          uniform(0, 4) == 0 ? v1::ACCESS_MODE_READ_WRITE
                                             : v1::ACCESS_MODE_READ});
  }

  uint64_t Clock = 0;
  std::vector<uint64_t> Start(3 * K);
  for (uint32_t I = 0; I < 3 * K; ++I) {
    Start[I] = Clock;
    Clock += Duration[I % K];
  }
  for (uint32_t It = 0; It < 3; ++It) {
    std::vector<uint64_t> Ids(Temps.size());
    for (size_t T = 0; T < Temps.size(); ++T) {
      const Temp &Tp = Temps[T];
      // Allocated at its first use's launch (which it precedes), freed while
      // its last use runs (PyTorch frees when the last use is queued).
      const uint32_t First = It * K + Tp.First, Last = It * K + Tp.Last;
      const uint64_t AllocNs = Start[First];
      const uint64_t FreeNs = Start[Last] + Duration[Tp.Last] - 1;
      Ids[T] = B.allocate(Tp.Bytes, AllocNs, static_cast<int64_t>(FreeNs),
                          v1::ALLOCATION_ROLE_ACTIVATION, Tp.Address);
    }
    for (uint32_t P = 0; P < K; ++P) {
      std::vector<ProfileBuilder::Use> Uses;
      for (const Pick &Pk : Picks[P])
        Uses.push_back({Pk.Temp < 0 ? Params[Pk.Param] : Ids[static_cast<size_t>(Pk.Temp)],
                        Pk.Mode});
      B.kernel("k" + std::to_string(P), Duration[P], Uses);
    }
    if (!MidStep)
      B.iteration(It * K, K);
  }
  if (MidStep) // the last marked iteration is launches K+R .. 2K+R-1
    for (uint32_t It = 0, R = 1 + static_cast<uint32_t>(Seed % (K - 1)); It < 2; ++It)
      B.iteration(It * K + R, K);
  return B.build();
}

struct Row {
  std::string What;
  sim::SimResult R;
};

/// A baseline policy, with DeepUM's setting (0, 0: the default).
struct Setting {
  sim::Policy Pol;
  unsigned Lookahead = 0;
  double Watermark = 0;
  std::string name() const {
    std::string N(sim::policyName(Pol));
    if (Lookahead)
      N += " lookahead " + std::to_string(Lookahead) + " watermark " + std::to_string(Watermark);
    return N;
  }
};

/// The five baselines at their defaults, and DeepUM at one of the settings
/// its tuning sweeps (sim::kDeepUmLookaheads, no watermark or one of
/// sim::kDeepUmWatermarks), drawn by `Seed`.
std::vector<Setting> settingsFor(uint64_t Seed) {
  constexpr size_t Lookaheads = std::size(sim::kDeepUmLookaheads);
  constexpr size_t Watermarks = std::size(sim::kDeepUmWatermarks);
  const size_t W = Seed / Lookaheads % (Watermarks + 1);
  return {{sim::Policy::Um},
          {sim::Policy::DeepUm},
          {sim::Policy::SwapLayer},
          {sim::Policy::SwapOpt},
          {sim::Policy::Offload},
          {sim::Policy::DeepUm, sim::kDeepUmLookaheads[Seed % Lookaheads],
           W == 0 ? 0.0 : sim::kDeepUmWatermarks[W - 1]}};
}

void expectAboveEveryBound(const Row &X) {
  SCOPED_TRACE(X.What);
  const sim::SimResult &R = X.R;
  // The bounds are exact; the engine rounds each transfer to the nearest
  // nanosecond, which may take up to half a nanosecond off every one (seed
  // 298 at 1.25x on h100-pcie: deepum 548.941 us against a bound of
  // 548.9413 us, 19 pages each way).
  const double Pages = static_cast<double>(R.BytesHtoD + R.BytesDtoH) / (64.0 * KiB);
  const double SlackUs = 0.5e-3 * (Pages + 1);
  EXPECT_GE(R.IterationUs + SlackUs, R.BoundOrIdealUs);
  EXPECT_GE(R.IterationUs + SlackUs, R.CutBoundUs);
  EXPECT_GE(R.IterationUs + SlackUs, R.LowerBoundUs);
  // A policy can only beat a bound by destroying data: none may read
  // contents it dropped (swap-opt did, on tensors living across the mark).
  EXPECT_EQ(R.LostContents, 0);
}

/// Warm-up iterations before the measured ones: a policy whose transfers
/// outrun the iteration (deepum on some of these workloads) builds a
/// backlog, and two warm-up iterations measured it before its steady state
/// (seed 3351 at 1.25x on the hand device: 2022 us after 2, 2915 us after 20)
/// and below a bound it does not beat in steady state.
constexpr unsigned kWarmup = 10;
/// Measured iterations: a policy's steady state may repeat every few
/// iterations rather than every one, and a bound holds for the average over
/// whole repeats (deepum on seed 15159 at 1.25x on the hand device
/// alternates 4254 and 12742 us: three iterations average 7083 us, under
/// the bound of 7302 us; any even count, 8498 us). Twelve is a whole number
/// of repeats of 1, 2, 3, 4 or 6 iterations.
constexpr unsigned kMeasured = 12;

/// Seeds First..Last.
std::vector<uint64_t> seeds(uint64_t First, uint64_t Last) {
  std::vector<uint64_t> S;
  for (uint64_t I = First; I <= Last; ++I)
    S.push_back(I);
  return S;
}

/// DEEPUM_BOUND_SEEDS=FIRST-LAST, when set, replaces `Seeds`.
void seedsFromEnvironment(std::vector<uint64_t> &Seeds) {
  if (const char *Range = std::getenv("DEEPUM_BOUND_SEEDS")) {
    unsigned long long F = 0, L = 0;
    ASSERT_EQ(std::sscanf(Range, "%llu-%llu", &F, &L), 2) << "DEEPUM_BOUND_SEEDS=" << Range;
    Seeds = seeds(F, L);
  }
}

/// The hand device: no per-call costs and clean evictions dropped, the
/// cheapest transfers the engine allows, so a policy is as fast as it can be;
/// and h100-pcie.
std::vector<sim::DeviceModel> handAndH100() {
  return {handDevice(), takeOk(sim::loadDeviceModel("h100-pcie"))};
}

/// Every baseline (DeepUM also in a tuned setting) and every plan strategy
/// on the random workloads of `Seeds` at 1.25x, 2x and 3x, on `Devices`
/// (plans for the hand device are compiled for v100-pcie-16gb): none beats
/// a bound. Prints how tight the bound is.
void checkRandomWorkloads(const std::vector<uint64_t> &Seeds, bool MidStep,
                          const std::vector<sim::DeviceModel> &Devices = handAndH100()) {
  for (const sim::DeviceModel &D : Devices) {
    unsigned Checked = 0, PlansChecked = 0;
    // How tight the bound is: per case, the fastest policy or plan over the
    // lower bound. Where some policy meets the bound, the bound is the
    // optimum; elsewhere the truth lies between the two.
    std::vector<std::pair<double, std::string>> Tightness;
    for (uint64_t Seed : Seeds) {
      const bool Exact = Seed % 2 == 0;
      v1::Profile P = randomWorkload(Seed, Exact, MidStep);
      if (llvm::Error E = format::validateProfile(P))
        FAIL() << "seed " << Seed << ": " << llvm::toString(std::move(E));
      const uint64_t Footprint = sim::footprintBytes(P);
      for (double Ratio : {1.25, 2.0, 3.0}) {
        const uint64_t Capacity =
            static_cast<uint64_t>(static_cast<double>(Footprint) / Ratio) / (64 * KiB) * (64 * KiB);
        const std::string Where = D.Name + ", seed " + std::to_string(Seed) + " at " +
                                  std::to_string(Ratio) + "x";
        double Fastest = 0, Lower = 0;
        auto note = [&](const sim::SimResult &R) {
          Fastest = Fastest == 0 ? R.IterationUs : std::min(Fastest, R.IterationUs);
          Lower = R.LowerBoundUs;
        };
        // Every baseline, and DeepUM once more in a setting the tuning
        // sweeps (a lookahead and a watermark drawn by the seed).
        for (const Setting &St : settingsFor(Seed)) {
          sim::SimOptions O;
          O.Device = D;
          O.GpuMemoryBytes = Capacity;
          O.Pol = St.Pol;
          O.DeepUmLookahead = St.Lookahead;
          O.DeepUmWatermark = St.Watermark;
          O.Iterations = kMeasured;
          O.WarmupIterations = kWarmup;
          auto R = sim::simulate(P, O);
          if (!R) { // a kernel alone larger than the capacity
            llvm::consumeError(R.takeError());
            continue;
          }
          expectAboveEveryBound({Where + ", " + St.name(), *R});
          note(*R);
          ++Checked;
        }
        for (planner::Strategy S : planner::kStrategies) {
          planner::PlanOptions PO;
          PO.GpuMemoryBytes = Capacity;
          PO.DeviceModel = llvm::StringRef(D.Name).startswith("hand") ? "v100-pcie-16gb" : D.Name;
          PO.Strat = S;
          auto Plan = planner::compilePlan(P, PO);
          if (!Plan) {
            llvm::consumeError(Plan.takeError()); // capacity below one block
            continue;
          }
          sim::SimOptions O;
          O.Device = D;
          O.GpuMemoryBytes = Capacity;
          O.Pol = sim::Policy::Plan;
          O.PlanPolicy = executor::sim::executorPlanPolicy;
          O.Plan = &Plan->Plan;
          O.Iterations = kMeasured;
          O.WarmupIterations = kWarmup;
          auto R = sim::simulate(P, O);
          if (!R) {
            llvm::consumeError(R.takeError());
            continue;
          }
          expectAboveEveryBound(
              {Where + ", plan (" + planner::strategyName(S).str() + ")",
               *R});
          note(*R);
          ++PlansChecked;
        }
        if (Lower > 0)
          Tightness.push_back({Fastest / Lower, Where + llvm::formatv(": {0:f1} us, bound {1:f1} us",
                                                                      Fastest, Lower).str()});
      }
    }
    std::sort(Tightness.begin(), Tightness.end());
    auto within = [&](double X) {
      return std::count_if(Tightness.begin(), Tightness.end(),
                           [&](const auto &T) { return T.first <= X; });
    };
    if (!Tightness.empty())
      std::printf("%s%s: fastest policy or plan / lower bound over %zu cases: within 0.1%% in %zu, "
                  "1%% in %zu, 10%% in %zu; median %.4f; widest %.4f (%s)\n",
                  D.Name.c_str(), MidStep ? " (marked mid-step)" : "", Tightness.size(),
                  static_cast<size_t>(within(1.001)),
                  static_cast<size_t>(within(1.01)), static_cast<size_t>(within(1.10)),
                  Tightness[Tightness.size() / 2].first, Tightness.back().first,
                  Tightness.back().second.c_str());
    // Not every case runs (a launch alone may exceed the capacity), but most
    // seeds run at 1.25x.
    EXPECT_GT(Checked, 2 * Seeds.size()) << D.Name;
    EXPECT_GT(PlansChecked, Seeds.size() / 2) << D.Name;
  }
}

TEST(SimBoundProperty, NoPolicyBeatsABoundOnRandomWorkloads) {
  // Seeds 1-200, and those of longer runs that found a defect: 5654 (room
  // of a pending free handed out early), 15159 (a steady state of period
  // two), 15155, 17835 and 19270 (plans beat bounds that counted pages at the
  // profile's addresses). DEEPUM_BOUND_SEEDS=FIRST-LAST tries others instead.
  std::vector<uint64_t> Seeds = seeds(1, 200);
  for (uint64_t S : {5654, 15155, 15159, 17835, 19270})
    Seeds.push_back(S);
  ASSERT_NO_FATAL_FAILURE(seedsFromEnvironment(Seeds));
  checkRandomWorkloads(Seeds, false);
}

/// Write-backs slower than fetches, as on an H100 (9.16 against 47.8 GB/s:
/// docs/results/gpu.md): the bounds charge each direction at its own rate,
/// and still no policy or plan beats them. The hand device with write-backs
/// at a fifth of its link, and h100-sxm, whose rates are the measured ones.
TEST(SimBoundProperty, NoPolicyBeatsABoundWhenWriteBacksAreSlower) {
  sim::DeviceModel Slow = handDevice();
  Slow.Name = "hand-slow-dtoh";
  Slow.DeviceToHostBytesPerSecond = Slow.LinkBytesPerSecond / 5;
  const sim::DeviceModel Sxm = takeOk(sim::loadDeviceModel("h100-sxm"));
  ASSERT_LT(Sxm.deviceToHostBytesPerSecond(), Sxm.LinkBytesPerSecond / 4);
  std::vector<uint64_t> Seeds = seeds(1, 60);
  ASSERT_NO_FATAL_FAILURE(seedsFromEnvironment(Seeds));
  checkRandomWorkloads(Seeds, false, {Slow, Sxm});
}

/// Explicit copies faster than Unified Memory both ways, as on an H100
/// (55 GB/s out by cudaMemcpyAsync against 9.16 by UVM): swap-layer,
/// swap-opt and offload move data by copies, and the bounds charge the
/// fastest legal path of each direction, so that none of them beats a bound
/// either. With the bounds at Unified Memory's rates the swapping policies
/// run below them on these workloads.
TEST(SimBoundProperty, NoPolicyBeatsABoundWhenCopiesAreFaster) {
  sim::DeviceModel Copies = handDevice();
  Copies.Name = "hand-fast-copies";
  Copies.DeviceToHostBytesPerSecond = Copies.LinkBytesPerSecond / 5;
  Copies.CopyHostToDeviceBytesPerSecond = Copies.LinkBytesPerSecond * 1.25;
  Copies.CopyDeviceToHostBytesPerSecond = Copies.LinkBytesPerSecond * 1.25;
  Copies.CopyManagedToHostBytesPerSecond = Copies.LinkBytesPerSecond;
  sim::DeviceModel Own = Copies;
  Own.Name = "hand-fast-copies-own-engines";
  Own.CopiesShareUmEngines = false;
  const sim::DeviceModel Sxm = takeOk(sim::loadDeviceModel("h100-sxm"));
  ASSERT_GT(Sxm.copyDeviceToHostBytesPerSecond(), 5 * Sxm.deviceToHostBytesPerSecond());
  std::vector<uint64_t> Seeds = seeds(1, 60);
  ASSERT_NO_FATAL_FAILURE(seedsFromEnvironment(Seeds));
  checkRandomWorkloads(Seeds, false, {Copies, Own, Sxm});
}

/// Every swap schedule of small random workloads: each subset of the idle
/// intervals of every object, timed as swap-opt times its own choice. They
/// are policies nobody tuned against the bounds, 2^gaps of them per case,
/// and no bound may be beaten by any; the best of them is an achievable
/// time, so the optimum lies between the lower bound and it. Workloads with
/// more than kMaxGaps intervals are skipped. Prints how close the best comes
/// to the bound, and how far swap-opt's greedy choice is from the best.
TEST(SimBoundProperty, NoSwapScheduleBeatsABoundOnSmallWorkloads) {
  constexpr size_t kMaxGaps = 12;
  std::vector<uint64_t> Seeds = seeds(1, 40);
  ASSERT_NO_FATAL_FAILURE(seedsFromEnvironment(Seeds));
  const sim::DeviceModel D = takeOk(sim::loadDeviceModel("h100-pcie"));
  std::vector<double> BestOverBound, GreedyOverBest;
  size_t Schedules = 0;
  for (uint64_t Seed : Seeds)
    for (bool MidStep : {false, true}) {
      v1::Profile P = randomWorkload(Seed, Seed % 2 == 0, MidStep);
      const uint64_t Footprint = sim::footprintBytes(P);
      for (double Ratio : {1.25, 2.0, 3.0}) {
        sim::SimOptions O;
        O.Device = D;
        O.GpuMemoryBytes = static_cast<uint64_t>(static_cast<double>(Footprint) / Ratio) /
                           (64 * KiB) * (64 * KiB);
        O.Iterations = kMeasured;
        O.WarmupIterations = kWarmup;
        size_t Gaps = 0;
        auto Subset = [&](uint32_t Mask) {
          return [&, Mask](const sim::detail::Workload &W) {
            std::vector<sim::detail::SwapGap> All = sim::detail::swapGaps(W, 0), Chosen;
            Gaps = All.size();
            for (size_t G = 0; G < All.size() && G < 32; ++G)
              if (Mask >> G & 1)
                Chosen.push_back(All[G]);
            return sim::detail::swapScheduleOf(W, Chosen, D);
          };
        };
        auto None = sim::detail::simulateSchedule(P, O, Subset(0));
        if (!None) { // a kernel alone larger than the capacity
          llvm::consumeError(None.takeError());
          continue;
        }
        if (Gaps > kMaxGaps)
          continue;
        const std::string Where = "seed " + std::to_string(Seed) + (MidStep ? " mid-step" : "") +
                                  " at " + std::to_string(Ratio) + "x";
        // The empty subset is the run above.
        expectAboveEveryBound({Where + ", swap schedule 0", *None});
        double Best = None->IterationUs;
        ++Schedules;
        for (uint32_t Mask = 1; Mask < (uint32_t{1} << Gaps); ++Mask) {
          sim::SimResult R = takeOk(sim::detail::simulateSchedule(P, O, Subset(Mask)));
          expectAboveEveryBound({Where + ", swap schedule " + std::to_string(Mask), R});
          Best = std::min(Best, R.IterationUs);
          ++Schedules;
        }
        O.Pol = sim::Policy::SwapOpt;
        const double Greedy = takeOk(sim::simulate(P, O)).IterationUs;
        BestOverBound.push_back(Best / None->LowerBoundUs);
        GreedyOverBest.push_back(Greedy / Best);
      }
    }
  ASSERT_GE(4 * BestOverBound.size(), Seeds.size()) << "too few small workloads searched";
  auto Median = [](std::vector<double> V) {
    std::sort(V.begin(), V.end());
    return V[V.size() / 2];
  };
  const size_t Exact = static_cast<size_t>(
      std::count_if(BestOverBound.begin(), BestOverBound.end(), [](double X) { return X < 1.001; }));
  std::printf("best of every swap schedule / lower bound over %zu cases (%zu schedules): within "
              "0.1%% in %zu, median %.4f, widest %.4f; swap-opt / best: median %.4f, widest "
              "%.4f\n",
              BestOverBound.size(), Schedules, Exact, Median(BestOverBound),
              *std::max_element(BestOverBound.begin(), BestOverBound.end()),
              Median(GreedyOverBest),
              *std::max_element(GreedyOverBest.begin(), GreedyOverBest.end()));
}

TEST(SimBoundProperty, SwapOptKeepsTheDataOfATensorLivingAcrossTheMark) {
  // Seed 130 marked mid-step: three temporaries are made in one iteration
  // and freed in the next, at one address. swap-opt took each instance for
  // a tensor of its own, found the one made next written first, discarded
  // it, and ran at 280.0 us, moving nothing, under a cut bound of 327.2 us
  // that counts what the next iteration reads: the next iteration read
  // nothing. As one object, what it reads is kept. (The cut bound is 320.5 us
  // since the bounds take the fastest path each way, h100-pcie's explicit
  // copies at 55 GB/s.)
  v1::Profile P = randomWorkload(130, true, true);
  sim::SimOptions O;
  O.Device = takeOk(sim::loadDeviceModel("h100-pcie"));
  O.GpuMemoryBytes = static_cast<uint64_t>(static_cast<double>(sim::footprintBytes(P)) / 1.25) /
                     (64 * KiB) * (64 * KiB);
  O.Pol = sim::Policy::SwapOpt;
  O.Iterations = kMeasured;
  O.WarmupIterations = kWarmup;
  sim::SimResult R = takeOk(sim::simulate(P, O));
  EXPECT_NEAR(R.CutBoundUs, 320.5, 0.1);
  EXPECT_GT(R.BytesDtoH, 0);
  expectAboveEveryBound({"swap-opt", R});
}

TEST(SimBoundProperty, NoPolicyBeatsABoundWhereTheIterationIsMarkedMidStep) {
  // The same workloads marked from a launch inside the step: temporaries
  // live across the mark, and the bounds, like the planner, pair each with
  // its previous instance (docs/simulator.md, "Data, not pages"). Seeds 1-100.
  std::vector<uint64_t> Seeds = seeds(1, 100);
  ASSERT_NO_FATAL_FAILURE(seedsFromEnvironment(Seeds));
  checkRandomWorkloads(Seeds, true);
}

TEST(SimBoundProperty, NoPolicyOrPlanBeatsABoundOnTheShippedProfiles) {
  const sim::DeviceModel D = takeOk(sim::loadDeviceModel("h100-pcie"));
  std::vector<std::string> Models = shippedModels();
  Models.push_back("resnet50-b32"); // shipped for the planner's speed series
  for (size_t M = 0; M < Models.size(); ++M) {
    const std::string &Model = Models[M];
    const std::string Path = shippedProfilePath(Model);
    v1::Profile P = takeOk(format::readProfile(Path));
    const uint64_t Footprint = sim::footprintBytes(P);
    // The baselines at 1.5x and 3x (DeepUM also in a tuned setting, one per
    // model), the plans (slower to make) at 2x.
    for (double Ratio : {1.5, 2.0, 3.0}) {
      const uint64_t Capacity = static_cast<uint64_t>(static_cast<double>(Footprint) / Ratio);
      const std::string Where = Model + " at " + std::to_string(Ratio) + "x";
      for (const Setting &St : settingsFor(M * 7 + 3)) {
        if (Ratio == 2.0)
          break;
        sim::SimOptions O;
        O.Device = D;
        O.GpuMemoryBytes = Capacity;
        O.Pol = St.Pol;
        O.DeepUmLookahead = St.Lookahead;
        O.DeepUmWatermark = St.Watermark;
        O.Iterations = 2;
        O.WarmupIterations = 1;
        expectAboveEveryBound({Where + ", " + St.name(), takeOk(sim::simulate(P, O))});
      }
      for (planner::Strategy S : planner::kStrategies) {
        if (Ratio != 2.0)
          break;
        planner::PlanOptions PO;
        PO.GpuMemoryBytes = Capacity;
        PO.DeviceModel = D.Name;
        PO.Strat = S;
        planner::PlanResult Plan = takeOk(planner::compilePlan(P, PO));
        sim::SimOptions O;
        O.Device = D;
        O.GpuMemoryBytes = Capacity;
        O.Pol = sim::Policy::Plan;
        O.PlanPolicy = executor::sim::executorPlanPolicy;
        O.Plan = &Plan.Plan;
        O.Iterations = 2;
        O.WarmupIterations = 1;
        expectAboveEveryBound(
            {Where + ", plan (" + planner::strategyName(S).str() + ")",
             takeOk(sim::simulate(P, O))});
      }
    }
  }
}

} // namespace

TEST(SimBoundProperty, AnUnsteadyOrCyclicSteadyStateIsReported) {
  // DeepUM on seed 15159 at 1.25x alternates two iteration times: the
  // result says so, and the mean over an even count is the cycle's.
  v1::Profile P = randomWorkload(15159, /*ExactModes=*/false);
  const uint64_t Capacity =
      static_cast<uint64_t>(static_cast<double>(sim::footprintBytes(P)) / 1.25) / (64 * KiB) *
      (64 * KiB);
  sim::SimOptions O;
  O.Device = handDevice();
  O.GpuMemoryBytes = Capacity;
  O.Pol = sim::Policy::DeepUm;
  O.WarmupIterations = kWarmup;
  O.Iterations = 4;
  sim::SimResult Even = takeOk(sim::simulate(P, O));
  EXPECT_EQ(Even.RepeatsEvery, 2u);
  EXPECT_GT(Even.IterationSpreadUs, 1000.0);
  O.Iterations = 8;
  EXPECT_NEAR(takeOk(sim::simulate(P, O)).IterationUs, Even.IterationUs, 1e-6);
  O.Iterations = 3; // not enough to see the cycle
  EXPECT_EQ(takeOk(sim::simulate(P, O)).RepeatsEvery, 0u);
  // Measured from a cold start, the first iteration differs from the rest.
  O.WarmupIterations = 0;
  O.Iterations = 6;
  EXPECT_EQ(takeOk(sim::simulate(P, O)).RepeatsEvery, 0u);
  // Where everything fits, every iteration is alike.
  O.WarmupIterations = kWarmup;
  O.GpuMemoryBytes = sim::footprintBytes(P);
  sim::SimResult Fits = takeOk(sim::simulate(P, O));
  EXPECT_EQ(Fits.RepeatsEvery, 1u);
  EXPECT_EQ(Fits.IterationSpreadUs, 0.0);
}
