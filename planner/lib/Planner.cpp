//===- Planner.cpp - Profile -> plan: tables, metadata, the tool -------------===//
#include "deepum/planner/Planner.h"

#include "deepum/base/Error.h"
#include "deepum/format/AccessSources.h"
#include "deepum/format/Compute.h"
#include "deepum/format/Format.h"
#include "deepum/format/IterationNotes.h"
#include "deepum/format/Roofline.h"
#include "deepum/format/Summary.h"
#include "deepum/format/Units.h"

#include "google/protobuf/arena.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Timer.h"

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

using namespace llvm;
using namespace deepum::v1;

namespace deepum::planner {

namespace {

Error planError(const Twine &Msg) { return base::makeError(Msg); }

/// Progress lines for long runs: silent for the first DelaySeconds, then one
/// line per stage with the elapsed time.
class ProgressLine {
public:
  ProgressLine(raw_ostream *Stream, double DelaySeconds)
      : OS(Stream), Delay(DelaySeconds), Begin(std::chrono::steady_clock::now()) {}
  void stage(StringRef What) {
    double S = seconds();
    if (OS && S >= Delay)
      *OS << formatv("deepum-plan: {0} ({1:f1} s)\n", What, S);
  }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - Begin).count();
  }

private:
  raw_ostream *OS;
  double Delay;
  std::chrono::steady_clock::time_point Begin;
};

void addCorrelationTables(const Profile &P, const IterationAnalysis &A, const Trace &T,
                          unsigned ContextLength, Plan &Out) {
  // Table 1: every ID seen anywhere in the profile, its successors with
  // counts (noise included: the executor must recognise it), its positions.
  std::map<uint64_t, std::map<uint64_t, uint32_t>> Successors;
  // Execution IDs hash profile fields: any uint64, so not a DenseMap (which
  // reserves 2^64-1 and 2^64-2).
  std::unordered_map<uint64_t, int> FirstKernel;
  for (size_t K = 0; K < A.Ids.size(); ++K) {
    FirstKernel.try_emplace(A.Ids[K], static_cast<int>(K));
    auto &Succ = Successors[A.Ids[K]];
    if (K + 1 < A.Ids.size())
      ++Succ[A.Ids[K + 1]];
  }
  std::map<uint64_t, std::vector<uint32_t>> Positions;
  for (uint32_t Pos = 0; Pos < T.Positions; ++Pos)
    Positions[T.Ids[Pos]].push_back(Pos);
  for (auto &[Id, Succ] : Successors) {
    ExecutionIdEntry *E = Out.add_execution_ids();
    E->set_execution_id(Id);
    E->set_signature(format::signatureText(P.kernels(FirstKernel[Id])));
    std::vector<std::pair<uint64_t, uint32_t>> Sorted(Succ.begin(), Succ.end());
    std::stable_sort(Sorted.begin(), Sorted.end(),
                     [](const auto &X, const auto &Y) { return X.second > Y.second; });
    for (auto [Next, Count] : Sorted) {
      Successor *S = E->add_successors();
      S->set_execution_id(Next);
      S->set_count(Count);
    }
    auto It = Positions.find(Id);
    if (It != Positions.end())
      for (uint32_t Pos : It->second)
        E->add_positions(Pos);
  }
  // Table 2: per position, the chain of arena blocks in first-touch order.
  for (uint32_t Pos = 0; Pos < T.Positions; ++Pos) {
    BlockChain *C = Out.add_block_chains();
    C->set_execution_id(T.Ids[Pos]);
    C->set_position(Pos);
    for (const BlockUse &U : T.Uses[Pos]) {
      C->add_blocks(U.Block);
      C->add_modes(U.Mode);
    }
    Out.add_position_ids(T.Ids[Pos]);
    Out.add_position_contexts(contextId(T.Ids, Pos, ContextLength));
  }
}

void addLayout(const Trace &T, Plan &Out) {
  PoolLayout *L = Out.mutable_layout();
  L->set_arena_bytes(T.Pool.ArenaBytes);
  L->set_peak_live_bytes(T.Pool.PeakLiveBytes);
  L->set_best_fit_peak_bytes(T.Pool.BestFitPeakBytes);
  // Lifetimes let a reader check that the layout never places two live
  // allocations on the same bytes (Live[1], when present, starts at tick 0).
  uint32_t Ticks = 0;
  for (const PlannedAllocation &PA : T.Allocations)
    Ticks = std::max({Ticks, PA.Live[0].End, PA.Live[1].End});
  L->set_ticks(Ticks);
  for (uint64_t Bytes : T.PrologueCallBytes)
    L->add_prologue_call_bytes(Bytes);
  for (const PlannedAllocation &PA : T.Allocations) {
    Placement *Pl = L->add_placements();
    Pl->set_sequence(PA.Sequence);
    Pl->set_size_bytes(PA.Size);
    Pl->set_offset(PA.Offset);
    Pl->set_persistent(PA.Persistent);
    if (PA.Persistent && PA.CallIndex != 0)
      Pl->set_call_index(PA.CallIndex);
    if (PA.Persistent || PA.Live[0].empty())
      continue;
    assert(PA.Live[1].empty() || PA.Live[1].Begin == 0);
    Pl->set_live_begin(PA.Live[0].Begin);
    Pl->set_live_end(PA.Live[0].End);
    if (!PA.Live[1].empty())
      Pl->set_wrap_end(PA.Live[1].End);
  }
}

/// Recomputes the trace's kernel durations with the device's roofline when the
/// profile was recorded on another device, exactly as deepum-sim's
/// `--durations auto` does (simulator/lib/Simulator.cpp rooflineDurations,
/// itself python/deepum_trace/devices.py kernel_ns): the schedule's clock must
/// be the one the plan will run on, or a V100 profile planned for an H100
/// predicts no stall at all and the choice among schedules is blind. Returns
/// whether it did; changes nothing when a kernel lacks flops and DRAM bytes.
bool applyRoofline(const Profile &P, const CostModel &M, Trace &T) {
  if (!M.Roofline.valid() || P.device().name().empty() || P.device().name() == M.DeviceName)
    return false;
  std::vector<double> Us(T.Positions);
  for (uint32_t Pos = 0; Pos < T.Positions; ++Pos) {
    const Kernel &K = P.kernels(static_cast<int>(T.FirstKernel + Pos));
    if (!format::hasRooflineInputs(K))
      return false;
    Us[Pos] = static_cast<double>(format::rooflineNs(K, M.Roofline)) / 1000.0;
  }
  T.DurationUs = std::move(Us);
  return true;
}

uint64_t footprintBlocks(const Trace &T) {
  std::vector<uint8_t> Seen(T.Blocks, 0);
  uint64_t N = 0;
  for (const auto &Uses : T.Uses)
    for (const BlockUse &U : Uses)
      if (!Seen[U.Block]) {
        Seen[U.Block] = 1;
        ++N;
      }
  return N;
}

} // namespace

StringRef strategyName(Strategy S) {
  switch (S) {
  case Strategy::Prefetch:
    return "prefetch";
  case Strategy::Swap:
    return "swap";
  case Strategy::Demand:
    return "demand";
  }
  return "prefetch";
}

Expected<Strategy> parseStrategy(StringRef Name) {
  if (Name == "prefetch")
    return Strategy::Prefetch;
  if (Name == "swap")
    return Strategy::Swap;
  if (Name == "demand")
    return Strategy::Demand;
  return planError("unknown strategy '" + Name + "' (expected 'prefetch', 'swap' or 'demand')");
}

static Expected<PlanResult> compileAccessSets(const Profile &P, const PlanOptions &Opts);

/// deepum-plan's line on where the access sets came from.
static void printAccessSources(raw_ostream &OS, const format::AccessSourceReport &S,
                               bool UseArguments) {
  if (S.KernelsScanned + S.KernelsNoLayout == 0) {
    OS << "access sets: recorded accesses only (the profile holds no launch arguments; "
          "deepum-profile records them)\n";
    return;
  }
  const auto B = [](uint64_t N) { return format::formatBytes(N); };
  OS << formatv("access sets: arguments read for {0} of {1} kernel launches{2}; {3} named and "
                "recorded, {4} named only{5}, {6} recorded only, {7} reached indirectly in {8} "
                "allocation(s)\n",
                S.KernelsScanned, S.Kernels,
                S.KernelsNoLayout ? formatv(" ({0} without a layout)", S.KernelsNoLayout).str() : "",
                B(S.Total.NamedAndFaulted), B(S.Total.NamedOnly),
                UseArguments ? "" : " (left out: --ignore-arguments)", B(S.Total.FaultedOnly),
                B(S.Total.Indirect), S.IndirectAllocations);
}

Expected<PlanResult> compilePlan(const Profile &P, const PlanOptions &Opts) {
  // The access sets from both sources: each kernel's named allocations whole,
  // beside its recorded accesses (deepum/format/AccessSources.h).
  if (!Opts.UseArguments || !format::hasArguments(P)) {
    auto R = compileAccessSets(P, Opts);
    if (R)
      R->Sources = format::accessSources(P);
    return R;
  }
  Profile Widened = P;
  format::AccessSourceReport Sources = format::addNamedAccesses(Widened);
  auto R = compileAccessSets(Widened, Opts);
  if (R)
    R->Sources = std::move(Sources);
  return R;
}

/// The blocks the copy path may take (Trace::Copyable): every allocation
/// that ever holds a byte of the block is one the launch-time guard protects
/// (format::guardedAllocations). A block may hold several: the executor
/// copies back only the bytes of those live at the copy-out and still live
/// (ExecutorConfig::CopyTracksAllocations). Returns how many.
static uint64_t markCopyable(const Profile &P, Trace &T) {
  const std::vector<uint64_t> Guarded = format::guardedAllocations(P);
  T.Copyable.assign(T.Blocks, 0);
  uint64_t N = 0;
  for (uint64_t B = 0; B < T.Blocks; ++B) {
    const std::vector<uint32_t> &Owners = T.BlockOwners[B];
    bool Ok = !Owners.empty();
    for (uint32_t Seq : Owners) {
      const PlannedAllocation &A = T.Allocations[Seq];
      Ok = Ok && std::binary_search(Guarded.begin(), Guarded.end(), A.ProfileId);
    }
    T.Copyable[B] = Ok;
    N += Ok;
  }
  return N;
}

/// A trace without a single use has nothing to plan: says what to record.
static Error checkUses(const Profile &P, const IterationAnalysis &A, const Trace &T) {
  const bool NoUses =
      std::all_of(T.Uses.begin(), T.Uses.end(), [](const auto &U) { return U.empty(); });
  // Faults recorded, none of them in the reference iteration's kernels on
  // planned memory: what is missing is a complete iteration with its faults.
  if (NoUses && P.faults_size() > 0)
    return planError("the profile records " + Twine(P.faults_size()) +
                     " page faults but none on its allocations in the kernels of iteration " +
                     Twine(A.Reference) + " of " + Twine(A.Iterations.size()) +
                     ", the one planned: profile complete iterations whose kernels fault "
                     "(deepum-profile --iterations 3, with --skip 0 if the first iteration is "
                     "the only one that faults) or with --mode access-set");
  if (NoUses)
    return planError("the profile records no memory accesses of its kernels (no Unified Memory "
                     "faults or access sets inside its allocations): profile with "
                     "deepum-profile --mode access-set, or check that CUPTI's Unified Memory "
                     "counters are available on this GPU");
  return Error::success();
}

/// The strategy's schedule over one layout's trace, the copy path taken
/// where the cost model predicts it faster.
static Schedule scheduleOn(const Profile &P, const PlanOptions &Opts, const CostModel &M,
                           Trace &T) {
  applyRoofline(P, M, T);
  if (Opts.CopyPath && Opts.Strat == Strategy::Prefetch && M.copyPath())
    markCopyable(P, T);
  Schedule S = Opts.Strat == Strategy::Prefetch ? schedulePrefetch(T, M, Opts.GpuMemoryBytes)
               : Opts.Strat == Strategy::Swap   ? scheduleSwap(T, M, Opts.GpuMemoryBytes)
                                                : scheduleDemand(T, M, Opts.GpuMemoryBytes);
  S.Stats.CopyPoolBytes = assignCopySlots(T, S.Actions);
  if (S.Stats.CopyPoolBytes) {
    // The copies as cut into calls: the prediction again. The cost model
    // chooses: where Unified Memory's path alone is predicted faster (a
    // device whose copies are no faster than its evictions, calls that cost
    // more than the copies save), the plan has no copy path.
    S.Stats.PredictedIterationUs = predictIterationUs(T, M, S.Actions, Opts.GpuMemoryBytes);
    S.Stats.StallUs = std::max(0.0, S.Stats.PredictedIterationUs - S.Stats.ComputeUs);
    std::vector<uint8_t> Copyable = std::move(T.Copyable);
    T.Copyable.clear();
    Schedule Uvm = schedulePrefetch(T, M, Opts.GpuMemoryBytes);
    if (Uvm.Stats.PredictedIterationUs < S.Stats.PredictedIterationUs)
      S = std::move(Uvm);
    else
      T.Copyable = std::move(Copyable);
  }
  return S;
}

static Expected<PlanResult> compileAccessSets(const Profile &P, const PlanOptions &Opts) {
  if (Opts.GpuMemoryBytes == 0)
    return planError("--gpu-memory must be positive");
  if (Opts.GpuMemoryBytes < P.um_block_bytes())
    return planError("--gpu-memory of " + format::formatBytes(Opts.GpuMemoryBytes) +
                     " is smaller than one UM block");
  ProgressLine Progress(Opts.Progress, Opts.ProgressDelaySeconds);
  CostModel M;
  if (Opts.DeviceModel.empty() && !Opts.DeviceFile.empty())
    return planError("--device-file " + Opts.DeviceFile +
                     ": name the model to use with --device NAME");
  if (Opts.DeviceModel.empty()) {
    M.DeviceName = "profile";
    if (P.device().link_bytes_per_second() > 0)
      M.LinkBytesPerSecond = P.device().link_bytes_per_second();
  } else {
    auto Loaded = loadCostModel(Opts.DeviceModel, Opts.DeviceFile);
    if (!Loaded)
      return Loaded.takeError();
    M = *Loaded;
  }

  // A plan from a profile that recorded nothing to plan would be empty and
  // look like success: refuse it, saying what to record instead.
  if (P.allocations_size() == 0)
    return planError("the profile records no allocations: deepum plans memory allocated "
                     "through its allocator; profile with deepum-profile, which installs it "
                     "(deepum-run does the same), or call deepum.enable() before the first "
                     "CUDA allocation");
  auto A = analyzeIterations(P);
  if (!A)
    return A.takeError();
  // deepum-profile writes the iterations it found without marks as Iteration
  // records too; its note says how (deepum/format/IterationNotes.h).
  const std::string &Notes = P.workload().notes();
  const bool WholeRun = Notes.find(format::kWholeRunNote) != std::string::npos;
  const bool ByPeriod = !A->FromMarks || Notes.find(format::kIterationsByPeriodNote) == 0 ||
                        Notes.find(std::string("; ") + format::kIterationsByPeriodNote) !=
                            std::string::npos;
  if (WholeRun && A->Iterations.size() < 2)
    return planError("the profile holds no complete iteration: deepum-profile saw no iteration "
                     "mark and no period in its " +
                     Twine(P.kernels_size()) +
                     " kernels and recorded the whole run as one; profile at least two "
                     "iterations (deepum-profile --iterations 3) or mark them (deepum.step(), "
                     "NVTX, cudaProfilerStart/Stop)");
  if (!A->FromMarks && A->Iterations.size() < 2)
    return planError("the profile holds no complete iteration: it has no iteration marks and "
                     "its kernel sequence does not repeat; profile at least two iterations "
                     "(deepum-profile --iterations 3) or mark them (deepum.step(), NVTX, "
                     "cudaProfilerStart/Stop)");
  Progress.stage("iterations found");
  // The pool is laid out largest first and, for the prefetch strategy, also
  // in the order the program allocates; the cost model keeps the faster.
  // Each layout's plan is a whole search (its best variant and path differ:
  // judged with the first layout's, gpt2-medium on h100-sxm came out 5%
  // slower). Where the machine has a second core the second layout is
  // planned beside the first, on a thread of its own: the two share nothing
  // but the profile and the cost model, read only.
  std::vector<LayoutOrder> Orders = {LayoutOrder::BySize};
  if (Opts.Layout)
    Orders = {*Opts.Layout};
  else if (Opts.Strat == Strategy::Prefetch)
    Orders.push_back(LayoutOrder::ByBirth);
  struct Planned {
    Trace T;
    Schedule S;
  };
  auto planLayout = [&](LayoutOrder By) -> Expected<Planned> {
    auto Built = buildTrace(P, *A, {}, By);
    if (!Built)
      return Built.takeError();
    if (Error E = checkUses(P, *A, *Built))
      return E;
    Schedule Made = scheduleOn(P, Opts, M, *Built);
    return Planned{std::move(*Built), std::move(Made)};
  };
  std::optional<Expected<Planned>> Second;
  std::thread Beside;
  const bool Parallel = Orders.size() > 1 && std::thread::hardware_concurrency() > 1;
  if (Parallel)
    Beside = std::thread([&] { Second.emplace(planLayout(Orders[1])); });
  Expected<Planned> First = planLayout(Orders[0]);
  if (Parallel)
    Beside.join();
  if (!First) {
    if (Second && !*Second)
      consumeError(Second->takeError());
    return First.takeError();
  }
  // Sequentially, a plan that stalls nowhere cannot be bettered by another
  // layout.
  if (!Parallel && Orders.size() > 1 && First->S.Stats.StallUs > 1e-6 * First->S.Stats.ComputeUs)
    Second.emplace(planLayout(Orders[1]));
  Planned *Kept = &*First;
  if (Second) {
    if (!*Second)
      consumeError(Second->takeError()); // the same profile: the first layout's plan stands
    else if ((*Second)->S.Stats.PredictedIterationUs < Kept->S.Stats.PredictedIterationUs * 0.9999)
      Kept = &**Second;
  }
  Trace *T = &Kept->T;
  Schedule &S = Kept->S;
  Progress.stage("schedule computed");

  PlanResult R;
  R.Pool = T->Pool;
  R.Stats = S.Stats;
  R.FootprintBytes = footprintBlocks(*T) * T->BlockBytes;
  Plan &Out = R.Plan;
  Out.set_format_version(format::kPlanFormatVersion);
  PlanMetadata *Meta = Out.mutable_metadata();
  Meta->set_profile_fingerprint(sequenceFingerprint(T->Ids));
  Meta->set_device_model(M.DeviceName);
  Meta->set_gpu_memory_bytes(Opts.GpuMemoryBytes);
  Meta->set_um_block_bytes(T->BlockBytes);
  Meta->set_strategy(Opts.Strat == Strategy::Prefetch ? PLAN_STRATEGY_PREFETCH
                     : Opts.Strat == Strategy::Swap   ? PLAN_STRATEGY_SWAP
                                                      : PLAN_STRATEGY_DEMAND);
  Meta->set_producer("deepum-plan 0.1");
  Meta->set_profile_source(Opts.ProfileSource);
  Meta->set_model(P.workload().model());
  Meta->set_predicted_iteration_us(S.Stats.PredictedIterationUs);
  Meta->set_context_length(Opts.ContextLength);
  Meta->set_reference_iteration(A->Reference);
  Meta->set_profiled_iterations(static_cast<uint32_t>(A->Iterations.size()));
  Meta->set_footprint_bytes(R.FootprintBytes);
  Meta->set_copy_pool_bytes(S.Stats.CopyPoolBytes);
  for (const auto *Lines : {&A->Ignored, &T->Ignored, &S.Ignored})
    for (const std::string &L : *Lines)
      Meta->add_ignored(L);

  addCorrelationTables(P, *A, *T, Opts.ContextLength, Out);
  addLayout(*T, Out);
  for (Action &Act : S.Actions)
    *Out.add_actions() = std::move(Act);

  std::set<uint32_t> Streams;
  const IterationSpan &Ref = A->Iterations[A->Reference];
  for (uint32_t K = Ref.First; K < Ref.First + Ref.Count; ++K)
    Streams.insert(static_cast<uint32_t>(P.kernels(K).stream()));
  double Ratio = static_cast<double>(R.FootprintBytes) / static_cast<double>(Opts.GpuMemoryBytes);
  std::string Summary;
  raw_string_ostream OS(Summary);
  OS << formatv("{0} plan for {1}: {2} launches per iteration ({3} iterations by {4}; iteration "
                "{5} is the reference; {6} stream{7})\n",
                strategyName(Opts.Strat),
                P.workload().model().empty() ? "(unnamed model)" : P.workload().model(),
                T->Positions, A->Iterations.size(), ByPeriod ? "period" : "marks", A->Reference,
                Streams.size(), Streams.size() == 1 ? "" : "s");
  // The arena's footprint: smaller than the profile's when the pool layout
  // packs tensors the profiled allocator spread over more 2 MiB blocks.
  OS << formatv("capacity {0}, footprint {1} after the pool layout ({2:f2}x "
                "oversubscribed); largest kernel working set {3} ({4} blocks)\n",
                format::formatBytes(Opts.GpuMemoryBytes), format::formatBytes(R.FootprintBytes),
                Ratio, format::formatBytes(uint64_t(S.Stats.MaxWorkingSetBlocks) * T->BlockBytes),
                S.Stats.MaxWorkingSetBlocks);
  OS << formatv(
      "pool: layout {0} ({5}), peak live {1} ({2:f3}x), online best-fit {3}, persistent {4}\n",
      format::formatBytes(T->Pool.LayoutBytes), format::formatBytes(T->Pool.PeakLiveBytes),
      T->Pool.PeakLiveBytes ? double(T->Pool.LayoutBytes) / double(T->Pool.PeakLiveBytes) : 0.0,
      format::formatBytes(T->Pool.BestFitPeakBytes), format::formatBytes(T->Pool.PersistentBytes),
      T->Pool.Order == LayoutOrder::BySize ? "largest first" : "in allocation order");
  OS << formatv("per iteration: prefetch {0} blocks ({1} only mapped), evict {2} ({3} written "
                "back), discard {4}\n",
                S.Stats.Prefetches, S.Stats.Populates, S.Stats.Evictions, S.Stats.DirtyEvictions,
                S.Stats.Discards);
  if (S.Stats.CopyOuts || S.Stats.CopyIns || !T->Copyable.empty())
    OS << formatv("copy path: {0} blocks copied out and {1} back per iteration through a {2} "
                  "pinned pool; {3} of {4} blocks only ever hold allocations the launch-time "
                  "guard protects\n",
                  S.Stats.CopyOuts, S.Stats.CopyIns, format::formatBytes(S.Stats.CopyPoolBytes),
                  std::count(T->Copyable.begin(), T->Copyable.end(), 1), T->Blocks);
  if (Opts.Strat == Strategy::Demand)
    OS << formatv("demand faults bring in {0} blocks per iteration; the budget evicts the block "
                  "needed farthest ahead\n",
                  S.Stats.DemandFetches);
  OS << formatv("cost model ({0}): iteration {1} = compute {2} + stalls {3}", M.DeviceName,
                format::formatMicros(S.Stats.PredictedIterationUs),
                format::formatMicros(S.Stats.ComputeUs), format::formatMicros(S.Stats.StallUs));
  OS.flush();
  Meta->set_summary(Summary);
  if (Error E = format::validatePlan(Out))
    return planError("internal error: the compiled plan is invalid: " + toString(std::move(E)));
  Progress.stage("plan assembled");
  return R;
}

Error runPlan(const PlanToolOptions &Opts, raw_ostream &Out, raw_ostream &Err) {
  if (Opts.Output.empty())
    return planError("no output file: use -o PLAN");
  if (Opts.GpuMemory.empty())
    return planError("no capacity: use --gpu-memory SIZE");
  auto Capacity = format::parseByteSize(Opts.GpuMemory);
  if (!Capacity)
    return planError("--gpu-memory: " + toString(Capacity.takeError()));
  auto Strat = parseStrategy(Opts.Strategy);
  if (!Strat)
    return Strat.takeError();
  std::optional<LayoutOrder> Layout;
  if (Opts.Layout == "largest-first")
    Layout = LayoutOrder::BySize;
  else if (Opts.Layout == "allocation-order")
    Layout = LayoutOrder::ByBirth;
  else if (Opts.Layout != "auto")
    return planError("--layout: unknown order '" + Opts.Layout +
                     "' (auto, largest-first or allocation-order)");
  // The device's errors are about the device options, not the profile: said
  // before reading it, as every tool that takes a device says them.
  if (Opts.DeviceModel.empty() && !Opts.DeviceFile.empty())
    return planError("--device-file " + Opts.DeviceFile +
                     ": name the model to use with --device NAME");
  if (!Opts.DeviceModel.empty())
    if (Expected<CostModel> M = loadCostModel(Opts.DeviceModel, Opts.DeviceFile); !M)
      return M.takeError();
  // Before any work: the plan must not replace a profile it is made from.
  std::vector<llvm::StringRef> Inputs = {Opts.Input};
  if (!Opts.ComputeFrom.empty())
    Inputs.push_back(Opts.ComputeFrom);
  if (Error E = format::checkNotAnInput(Opts.Output, Inputs))
    return E;
  // On an arena: a profile is millions of small messages (a block access
  // each), which then cost neither a malloc each to read nor a free each to
  // drop; the arena lives until the plan is written.
  google::protobuf::Arena Arena;
  auto *P = google::protobuf::Arena::CreateMessage<Profile>(&Arena);
  if (Error E = format::readProfileInto(Opts.Input, *P))
    return E;
  if (!Opts.ComputeFrom.empty())
    if (Error E = format::takeComputeTimesFrom(*P, Opts.ComputeFrom))
      return E;
  PlanOptions PO;
  PO.GpuMemoryBytes = *Capacity;
  PO.DeviceModel = Opts.DeviceModel;
  PO.DeviceFile = Opts.DeviceFile;
  PO.Strat = *Strat;
  PO.ProfileSource = Opts.Input;
  PO.Progress = Opts.Progress;
  PO.ProgressDelaySeconds = Opts.ProgressDelaySeconds;
  PO.UseArguments = Opts.UseArguments;
  PO.CopyPath = Opts.CopyPath;
  PO.Layout = Layout;
  auto R = compilePlan(*P, PO);
  if (!R)
    return planError(Opts.Input + ": " + toString(R.takeError()));
  if (Error E = format::writePlan(R->Plan, Opts.Output, {Opts.Input}))
    return E;
  // With -o - the plan itself is standard output: the summary goes beside the progress.
  if (Opts.PrintSummary) {
    llvm::raw_ostream &OS = Opts.Output == "-" ? Err : Out;
    format::print(OS, format::summarize(R->Plan));
    printAccessSources(OS, R->Sources, Opts.UseArguments);
  }
  return Error::success();
}

} // namespace deepum::planner
