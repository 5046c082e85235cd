//===- Policies.cpp - What each policy does beyond the driver --------------===//
//
// swap-layer and swap-opt compile the iteration into a Schedule of commands;
// deepum learns online; um issues nothing; ideal needs no memory. Each is a
// SimPolicy (deepum/sim/Policy.h) that simulate()'s one loop drives.
//
//===----------------------------------------------------------------------===//
#include "Workload.h"

#include "deepum/format/Format.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <memory>
#include <numeric>
#include <unordered_map>

using namespace deepum::sim;
using namespace deepum::sim::detail;

namespace {

/// Whether object O is allocated (occupies memory) at position P.
bool liveAt(const SwapObject &O, uint32_t P) {
  bool AfterAlloc = O.AllocPos < 0 || P >= O.AllocPos;
  bool BeforeFree = O.FreePos < 0 || P < O.FreePos;
  // Allocated late in the iteration and freed early in the next: wraps.
  if (O.AllocPos >= 0 && O.FreePos >= 0 && O.FreePos < O.AllocPos)
    return P >= O.AllocPos || P < O.FreePos;
  return AfterAlloc && BeforeFree;
}

void addPages(std::vector<std::pair<uint32_t, Command>> &Items, uint32_t Pos, CmdKind Kind,
              const std::vector<BlockUse> &Pages) {
  for (const BlockUse &U : Pages)
    Items.push_back({Pos, Command{Kind, U.Block, U.PageMask}});
}

} // namespace

std::vector<int64_t> detail::liveBytes(const Workload &W,
                                       llvm::function_ref<bool(const SwapObject &)> Counts,
                                       uint64_t *Steps) {
  // Each object is live over at most two runs of positions (liveAt): a
  // difference array adds it in constant time, so the load costs objects +
  // positions, not their product (swap-layer and swap-opt on a profile of
  // 10k launches and 10k objects took 10^8 liveAt calls each).
  const int64_t K = W.Kernels;
  std::vector<int64_t> Diff(static_cast<size_t>(K) + 1, 0);
  uint64_t N = 0;
  auto add = [&](int64_t From, int64_t To, int64_t Bytes) { // positions [From, To)
    From = std::clamp<int64_t>(From, 0, K);
    To = std::clamp<int64_t>(To, 0, K);
    if (From >= To)
      return;
    Diff[static_cast<size_t>(From)] += Bytes;
    Diff[static_cast<size_t>(To)] -= Bytes;
  };
  for (const SwapObject &O : W.Objects) {
    ++N;
    if (!Counts(O))
      continue;
    const int64_t Bytes = static_cast<int64_t>(O.Bytes);
    if (O.AllocPos >= 0 && O.FreePos >= 0 && O.FreePos < O.AllocPos) { // wraps
      add(O.AllocPos, K, Bytes);
      add(0, O.FreePos, Bytes);
    } else {
      add(O.AllocPos < 0 ? 0 : O.AllocPos, O.FreePos < 0 ? K : O.FreePos, Bytes);
    }
  }
  std::vector<int64_t> Load(static_cast<size_t>(K), 0);
  int64_t Live = 0;
  for (size_t P = 0; P < Load.size(); ++P, ++N)
    Load[P] = Live += Diff[P];
  if (Steps)
    *Steps += N;
  return Load;
}

namespace {

/// The objects saved for the backward pass (activations; without that
/// label, those allocated or freed in the iteration) and the forward/backward
/// turn: where they pile up, the position of their peak live bytes. (LMS and
/// vDNN know layers; the trace knows when activations are live.)
struct SavedTensors {
  std::vector<bool> Saved; // per object
  uint32_t Turn = 0;
};

SavedTensors savedTensors(const Workload &W) {
  bool AnyActivation = std::any_of(W.Objects.begin(), W.Objects.end(),
                                   [](const SwapObject &O) { return O.Activation; });
  SavedTensors S;
  S.Saved.reserve(W.Objects.size());
  for (const SwapObject &O : W.Objects)
    S.Saved.push_back(AnyActivation ? O.Activation : (O.AllocPos >= 0 || O.FreePos >= 0));
  const std::vector<int64_t> Load =
      liveBytes(W, [&](const SwapObject &O) { return S.Saved[&O - W.Objects.data()]; });
  S.Turn = static_cast<uint32_t>(std::max_element(Load.begin(), Load.end()) - Load.begin());
  return S;
}

} // namespace

// --- swap-layer ----------------------------------------------------------------

Schedule detail::swapLayerSchedule(const Workload &W, unsigned Lookahead) {
  const SavedTensors S = savedTensors(W);
  const uint32_t Turn = S.Turn;
  auto IsSwappable = [&](const SwapObject &O) { return S.Saved[&O - W.Objects.data()]; };

  std::vector<std::pair<uint32_t, Command>> Items;
  for (const SwapObject &O : W.Objects) {
    if (!IsSwappable(O) || O.Uses.empty())
      continue;
    // Last forward use (at or before the turn) and first backward use.
    auto After = std::upper_bound(O.Uses.begin(), O.Uses.end(), Turn,
                                  [](uint32_t T, const auto &U) { return T < U.first; });
    if (After == O.Uses.begin() || After == O.Uses.end())
      continue;
    uint32_t Fwd = std::prev(After)->first, Bwd = After->first;
    // Swap in `Lookahead` kernels before the backward use; not worth it when
    // that is no later than the swap-out.
    if (Bwd < Fwd + 2 + Lookahead)
      continue;
    addPages(Items, Fwd + 1, CmdKind::Evict, O.Whole);
    addPages(Items, Bwd - Lookahead, CmdKind::Prefetch, O.Overlap);
  }
  return makeSchedule(W.Kernels, std::move(Items));
}

// --- offload: save_on_cpu and side-stream activation offloading ----------------------

Schedule detail::offloadSchedule(const Workload &W, const DeviceModel &D, uint64_t &PeakBytes) {
  const SavedTensors S = savedTensors(W);
  std::vector<SwapGap> Gaps;
  std::vector<int64_t> Load = liveBytes(W, [](const SwapObject &) { return true; });
  for (uint32_t I = 0; I < W.Objects.size(); ++I) {
    const SwapObject &O = W.Objects[I];
    if (!S.Saved[I] || O.Uses.empty())
      continue;
    // Saved at its last forward use, unpacked at its first backward use:
    // copied whatever the capacity (the hooks know no memory budget).
    auto After = std::upper_bound(O.Uses.begin(), O.Uses.end(), S.Turn,
                                  [](uint32_t T, const auto &U) { return T < U.first; });
    if (After == O.Uses.begin() || After == O.Uses.end())
      continue;
    const uint32_t Fwd = std::prev(After)->first, Bwd = After->first;
    if (Bwd <= Fwd + 1)
      continue;
    Gaps.push_back({I, Fwd, Bwd});
    for (uint32_t P = Fwd + 1; P < Bwd; ++P)
      Load[P] -= static_cast<int64_t>(O.Bytes);
  }
  PeakBytes = static_cast<uint64_t>(std::max<int64_t>(0, *std::max_element(Load.begin(), Load.end())));
  return swapScheduleOf(W, Gaps, D);
}

// --- swap-opt: Zhang et al. 2019 ---------------------------------------------------

Schedule detail::swapOptSchedule(const Workload &W, uint64_t CapacityBytes, const DeviceModel &D) {
  const uint32_t K = W.Kernels;
  // Memory load per position: bytes of allocated objects.
  std::vector<int64_t> Load = liveBytes(W, [](const SwapObject &) { return true; });
  const int64_t Limit = static_cast<int64_t>(CapacityBytes);

  // Candidates are >= 1 MiB.
  struct Gap : SwapGap {
    bool Chosen = false;
  };
  std::vector<Gap> Gaps;
  for (const SwapGap &G : swapGaps(W, uint64_t{1} << 20))
    Gaps.push_back({G});
  auto Spans = [&](const Gap &G, uint32_t P) {
    return (P > G.From && P < G.To) || (P + K > G.From && P + K < G.To);
  };
  std::vector<double> Dur(W.DurationNs.begin(), W.DurationNs.end());

  std::vector<size_t> Chosen;
  for (;;) {
    uint32_t Peak =
        static_cast<uint32_t>(std::max_element(Load.begin(), Load.end()) - Load.begin());
    if (Load[Peak] <= Limit)
      break;
    // Prefix sums (over two iterations, for wrapping gaps) of duration and of
    // duration x excess load.
    std::vector<double> SumDur(2 * K + 1, 0), SumOver(2 * K + 1, 0);
    for (uint32_t P = 0; P < 2 * K; ++P) {
      SumDur[P + 1] = SumDur[P] + Dur[P % K];
      SumOver[P + 1] =
          SumOver[P] + Dur[P % K] * static_cast<double>(std::max<int64_t>(0, Load[P % K] - Limit));
    }
    std::vector<size_t> Cands;
    for (size_t G = 0; G < Gaps.size(); ++G)
      if (!Gaps[G].Chosen && Spans(Gaps[G], Peak) && liveAt(W.Objects[Gaps[G].Object], Peak))
        Cands.push_back(G);
    if (Cands.empty())
      break;
    // Three rankings: duration of absence, size x absence, absence weighted by
    // how far the load exceeds the limit; the candidate ranked best by the
    // majority (sum of ranks; ties to the larger, then the earlier) wins.
    size_t N = Cands.size();
    std::vector<std::array<double, 3>> Score(N);
    for (size_t I = 0; I < N; ++I) {
      const Gap &G = Gaps[Cands[I]];
      double Absent = SumDur[G.To] - SumDur[G.From + 1];
      Score[I] = {Absent, Absent * static_cast<double>(W.Objects[G.Object].Bytes),
                  SumOver[G.To] - SumOver[G.From + 1]};
    }
    std::vector<size_t> RankSum(N, 0), Order(N);
    for (int C = 0; C < 3; ++C) {
      std::iota(Order.begin(), Order.end(), 0);
      std::stable_sort(Order.begin(), Order.end(),
                       [&](size_t A, size_t B) { return Score[A][C] > Score[B][C]; });
      for (size_t R = 0; R < N; ++R)
        RankSum[Order[R]] += R;
    }
    size_t Best = 0;
    for (size_t I = 1; I < N; ++I) {
      const auto &A = W.Objects[Gaps[Cands[I]].Object], &B = W.Objects[Gaps[Cands[Best]].Object];
      if (RankSum[I] < RankSum[Best] || (RankSum[I] == RankSum[Best] && A.Bytes > B.Bytes))
        Best = I;
    }
    Gap &G = Gaps[Cands[Best]];
    G.Chosen = true;
    Chosen.push_back(Cands[Best]);
    for (uint32_t P = G.From + 1; P < G.To; ++P)
      Load[P % K] -= static_cast<int64_t>(W.Objects[G.Object].Bytes);
  }
  std::sort(Chosen.begin(), Chosen.end());
  std::vector<SwapGap> Out;
  for (size_t GI : Chosen)
    Out.push_back(Gaps[GI]);
  return swapScheduleOf(W, Out, D);
}

std::vector<SwapGap> detail::swapGaps(const Workload &W, uint64_t MinBytes) {
  // Idle intervals: between consecutive uses (cyclically: the last use of an
  // iteration to the first of the next), strictly between the two positions.
  const uint32_t K = W.Kernels;
  std::vector<SwapGap> Gaps;
  for (uint32_t I = 0; I < W.Objects.size(); ++I) {
    const SwapObject &O = W.Objects[I];
    if (O.Bytes < MinBytes || O.Uses.empty())
      continue;
    for (size_t U = 0; U < O.Uses.size(); ++U) {
      uint32_t From = O.Uses[U].first;
      uint32_t To = U + 1 < O.Uses.size() ? O.Uses[U + 1].first : O.Uses.front().first + K;
      if (To > From + 1)
        Gaps.push_back({I, From, To});
    }
  }
  return Gaps;
}

Schedule detail::swapScheduleOf(const Workload &W, llvm::ArrayRef<SwapGap> Chosen,
                                const DeviceModel &D) {
  const uint32_t K = W.Kernels;
  std::vector<double> Dur(W.DurationNs.begin(), W.DurationNs.end());
  // Timing: out right after the use before the gap; back in as late as still
  // arrives in time (transfer + one fault-batch latency of slack before the
  // use) if the link is free, so the copy never stalls compute; a dead value
  // (next use writes it whole) is discarded and not brought back.
  std::vector<std::pair<uint32_t, Command>> Items;
  for (const SwapGap &G : Chosen) {
    const SwapObject &O = W.Objects[G.Object];
    Access Next = O.Uses[static_cast<size_t>(
                             std::find_if(O.Uses.begin(), O.Uses.end(),
                                          [&](const auto &U) { return U.first == G.To % K; }) -
                             O.Uses.begin())]
                      .second;
    uint32_t Out = G.From + 1;
    if (Next == Access::Write) {
      addPages(Items, Out % K, CmdKind::Discard, O.Whole);
      continue;
    }
    addPages(Items, Out % K, CmdKind::Evict, O.Whole);
    // The copy back runs at the explicit pinned-to-device rate.
    double Need = static_cast<double>(O.Bytes) * 1e9 / D.copyHostToDeviceBytesPerSecond() +
                  D.FaultBatchLatencyUs * 1e3;
    // Commands at position q are issued when launch q is observed, while
    // kernel q-1 runs: the copy has kernels q-1 .. To-1 to arrive.
    uint32_t In = G.To;
    double Ahead = Dur[(In - 1) % K];
    while (In > Out + 1 && Ahead < Need) {
      --In;
      Ahead += Dur[(In - 1) % K];
    }
    addPages(Items, In % K, CmdKind::Prefetch, O.Overlap);
  }
  return makeSchedule(K, std::move(Items));
}

// --- deepum ----------------------------------------------------------------------------

DeepUmPrefetcher::DeepUmPrefetcher(const Workload &Wl, unsigned L, double Wm)
    : W(Wl), Lookahead(L), Watermark(Wm) {
  // Launch IDs: hashes of the profile's kernels or a plan's position IDs, any
  // uint64 (a DenseMap reserves 2^64-1 and 2^64-2).
  std::unordered_map<uint64_t, uint32_t> Dense;
  for (uint64_t Id : W.LaunchIds) {
    auto [It, New] = Dense.try_emplace(Id, static_cast<uint32_t>(Dense.size()));
    (void)New;
    IdOf.push_back(It->second);
  }
  // Both tables start empty: everything is learned while running.
  Succ.assign(Dense.size(), -1);
  Chain.resize(Dense.size());
}

void DeepUmPrefetcher::beforeLaunch(Engine &E, uint32_t P) {
  const uint32_t Cur = IdOf[P];
  // Execution-ID table: the launch that followed the previous one.
  if (Prev >= 0)
    Succ[static_cast<size_t>(Prev)] = static_cast<int32_t>(Cur);
  Prev = static_cast<int32_t>(Cur);

  // The window: this kernel's chain and those of the next `Lookahead`
  // predicted kernels. Protected from pre-eviction while prefetching.
  E.beginProtection();
  Window.clear();
  int32_t Id = static_cast<int32_t>(Cur);
  for (unsigned J = 0; J <= Lookahead && Id >= 0; ++J) {
    for (const BlockUse &U : Chain[static_cast<size_t>(Id)]) {
      E.protect(U.Block, J); // needed J launches from now
      Window.push_back(U);
    }
    Id = Succ[static_cast<size_t>(Id)];
    if (Id == static_cast<int32_t>(Cur))
      break; // predicted a full cycle back to here
  }
  // Prefetch in need order; pre-eviction makes room from the least recently
  // migrated blocks not needed before the one being fetched; stop at the
  // first block that finds no room.
  for (const BlockUse &U : Window)
    if (!E.isResident(U.Block, U.PageMask) &&
        !E.prefetchPages(U.Block, U.PageMask, /*RespectProtection=*/true))
      break;
  // Proactive pre-eviction: keep `Watermark` of the capacity free for what
  // comes next (the faults and prefetches of the following launches), so that
  // their room is not made on their critical path. The victims are those the
  // driver would choose, least recently migrated first, among blocks outside
  // the window (the tables predict no use of them within the lookahead).
  if (Watermark > 0)
    E.preEvictTo(static_cast<uint64_t>(Watermark * static_cast<double>(E.capacityBytes())));
}

void DeepUmPrefetcher::afterLaunch(Engine &E, uint32_t P) {
  // UM-block table: the blocks this launch faulted on, in fault order.
  const uint32_t Cur = IdOf[P];
  for (const BlockUse &F : E.lastFaults()) {
    uint64_t Key = (uint64_t{Cur} << 32) | F.Block;
    auto [It, New] = InChain.try_emplace(Key, static_cast<uint32_t>(Chain[Cur].size()));
    if (New)
      Chain[Cur].push_back({F.Block, F.PageMask, F.Mode});
    else
      Chain[Cur][It->second].PageMask |= F.PageMask;
  }
}

// --- the policies as the loop sees them ---------------------------------------------

deepum::sim::SimPolicy::~SimPolicy() = default;

namespace {

/// Ranges a run of block commands makes: runs of consecutive blocks.
unsigned rangesOf(llvm::ArrayRef<Command> Cmds) {
  unsigned Ranges = 0;
  for (size_t I = 0; I < Cmds.size(); ++I)
    Ranges += I == 0 || Cmds[I].Block != Cmds[I - 1].Block + 1;
  return Ranges;
}

/// Infinite memory: nothing moves.
class IdealPolicy final : public SimPolicy {
public:
  bool usesMemory() const override { return false; }
};

/// The driver alone: demand paging is the engine's own.
class UmPolicy final : public SimPolicy {};

/// What DeepUM and the swapping systems share: memory freed by the program is
/// dropped from the GPU (never written back, repopulated without a copy).
/// DeepUM invalidates it; the swapping systems' memory managers reuse it
/// without copying. Plain UM cannot know it is dead; a plan says so with
/// DISCARD actions.
class InvalidatingPolicy : public SimPolicy {
public:
  void allocationsFreed(Engine &E, uint32_t, llvm::ArrayRef<uint32_t> Blocks) override {
    for (uint32_t B : Blocks)
      E.discardPages(B, ~0u);
  }
};

/// swap-layer, swap-opt and offload: a schedule compiled before the run,
/// each range its own cudaMemcpyAsync call: the systems they stand for move
/// device memory to pinned host memory and back by explicit copies, at the
/// device model's copy rates, never through Unified Memory. Their memory
/// managers hand out device memory from a pool: memory with no contents
/// (never written, or freed) that a launch uses is simply there, with no
/// fault, no driver populate and no call; the engine populates it before the
/// launch.
class SchedulePolicy final : public InvalidatingPolicy {
public:
  SchedulePolicy(const Workload &Wl, Schedule S, uint64_t OwnPeak = 0)
      : W(Wl), Sched(std::move(S)), OwnPeakBytes(OwnPeak) {}
  uint64_t ownPeakBytes() const override { return OwnPeakBytes; }
  void launchObserved(Engine &E, uint32_t P) override {
    issue(E, P);
    for (const BlockUse &U : W.uses(P))
      E.populatePages(U.Block, U.PageMask);
  }

private:
  void issue(Engine &E, uint32_t P) {
    llvm::ArrayRef<Command> Cmds = Sched.at(P);
    for (CmdKind Kind : {CmdKind::Evict, CmdKind::Discard, CmdKind::Prefetch}) {
      llvm::SmallVector<Command, 16> Of;
      for (const Command &C : Cmds)
        if (C.Kind == Kind)
          Of.push_back(C);
      for (unsigned I = 0, N = rangesOf(Of); I < N; ++I)
        E.hostCall(1);
    }
    for (const Command &C : Cmds) {
      switch (C.Kind) {
      case CmdKind::Prefetch:
        E.copyInPages(C.Block, C.Mask);
        break;
      case CmdKind::Evict:
        E.copyOutPages(C.Block, C.Mask);
        break;
      case CmdKind::Discard:
        E.discardPages(C.Block, C.Mask);
        break;
      }
    }
  }

  const Workload &W;
  Schedule Sched;
  uint64_t OwnPeakBytes;
};

class DeepUmPolicy final : public InvalidatingPolicy {
public:
  DeepUmPolicy(const Workload &W, unsigned Lookahead, double Watermark)
      : Prefetcher(W, Lookahead, Watermark) {}
  void launchObserved(Engine &E, uint32_t P) override { Prefetcher.beforeLaunch(E, P); }
  void kernelEnded(Engine &E, uint32_t P) override { Prefetcher.afterLaunch(E, P); }

private:
  DeepUmPrefetcher Prefetcher;
};

} // namespace

std::unique_ptr<SimPolicy> detail::makeSchedulePolicy(const Workload &W, Schedule S) {
  return std::make_unique<SchedulePolicy>(W, std::move(S));
}

std::unique_ptr<SimPolicy> detail::makePolicy(Policy P, const Workload &W, const SimOptions &O,
                                              uint64_t CapacityBytes) {
  switch (P) {
  case Policy::Ideal:
    return std::make_unique<IdealPolicy>();
  case Policy::DeepUm:
    return std::make_unique<DeepUmPolicy>(W, O.DeepUmLookahead ? O.DeepUmLookahead : O.Lookahead,
                                          O.DeepUmWatermark);
  case Policy::SwapLayer:
    return std::make_unique<SchedulePolicy>(W, swapLayerSchedule(W, O.Lookahead));
  case Policy::SwapOpt:
    return std::make_unique<SchedulePolicy>(W, swapOptSchedule(W, CapacityBytes, O.Device));
  case Policy::Offload: {
    uint64_t Peak = 0;
    Schedule S = offloadSchedule(W, O.Device, Peak);
    return std::make_unique<SchedulePolicy>(W, std::move(S), Peak);
  }
  case Policy::Um:
  case Policy::Plan:
    break;
  }
  assert(P == Policy::Um && "the plan policy comes from SimOptions::PlanPolicy");
  return std::make_unique<UmPolicy>();
}

// --- DeepUM tuned per workload -------------------------------------------------------

llvm::Expected<DeepUmTuning> deepum::sim::tuneDeepUm(const deepum::v1::Profile &P,
                                                     const SimOptions &Opts,
                                                     unsigned SearchIterations) {
  SimOptions O = Opts;
  O.Pol = Policy::DeepUm;
  O.Plan = nullptr;
  auto Run = [&](DeepUmSetting S, unsigned Warmup, unsigned Iterations) {
    O.DeepUmLookahead = S.Lookahead;
    O.DeepUmWatermark = S.Watermark;
    O.WarmupIterations = Warmup;
    O.Iterations = Iterations;
    return simulate(P, O);
  };
  DeepUmTuning T;
  // Short runs rank the settings: DeepUM learns online and its first
  // iterations after the warm-up are slower than the rest, so the search
  // warms up three more and measures the remaining ones.
  const unsigned Search = std::max(1u, std::min(SearchIterations, Opts.Iterations));
  auto Try = [&](DeepUmSetting S) -> llvm::Expected<double> {
    llvm::Expected<SimResult> R = Run(S, Opts.WarmupIterations + 3, Search);
    if (!R)
      return R.takeError();
    T.Tried.push_back({S, R->IterationUs});
    return R->IterationUs;
  };
  // Lookahead first, every one: the prefetcher's reach. Iteration time is
  // not unimodal in it (a short window prefetches little but protects little;
  // a long one protects the blocks needed soonest from pre-eviction).
  double Best = 0;
  DeepUmSetting BestS;
  for (unsigned L : kDeepUmLookaheads) {
    llvm::Expected<double> Us = Try({L, 0});
    if (!Us)
      return Us.takeError();
    if (T.Tried.size() == 1 || *Us < Best) {
      Best = *Us;
      BestS = {L, 0};
    }
  }
  for (double Wm : kDeepUmWatermarks) {
    llvm::Expected<double> Us = Try({BestS.Lookahead, Wm});
    if (!Us)
      return Us.takeError();
  }
  // The finalists at full length: the best of the search and the caller's
  // own setting (a short search must never make DeepUM worse).
  std::vector<std::pair<DeepUmSetting, double>> Ranked = T.Tried;
  std::stable_sort(Ranked.begin(), Ranked.end(),
                   [](const auto &A, const auto &B) { return A.second < B.second; });
  std::vector<DeepUmSetting> Finalists;
  auto Add = [&](DeepUmSetting S) {
    for (const DeepUmSetting &F : Finalists)
      if (F.Lookahead == S.Lookahead && F.Watermark == S.Watermark)
        return;
    Finalists.push_back(S);
  };
  Add(Ranked.front().first);
  Add({Opts.DeepUmLookahead ? Opts.DeepUmLookahead : Opts.Lookahead, 0});
  bool First = true;
  for (const DeepUmSetting &S : Finalists) {
    llvm::Expected<SimResult> R = Run(S, Opts.WarmupIterations, Opts.Iterations);
    if (!R)
      return R.takeError();
    if (First || R->IterationUs < T.Result.IterationUs) {
      T.Result = std::move(*R);
      T.Best = S;
      First = false;
    }
  }
  return T;
}
