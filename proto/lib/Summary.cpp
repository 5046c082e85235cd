//===- Summary.cpp - What a profile or plan holds, in numbers ---------------===//
#include "deepum/format/Summary.h"
#include "deepum/format/Units.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <vector>

using namespace llvm;
using namespace deepum::v1;

namespace deepum::format {

StringRef roleName(AllocationRole R) {
  switch (R) {
  case ALLOCATION_ROLE_PARAMETER:
    return "parameter";
  case ALLOCATION_ROLE_GRADIENT:
    return "gradient";
  case ALLOCATION_ROLE_OPTIMIZER_STATE:
    return "optimizer_state";
  case ALLOCATION_ROLE_ACTIVATION:
    return "activation";
  case ALLOCATION_ROLE_INPUT:
    return "input";
  case ALLOCATION_ROLE_WORKSPACE:
    return "workspace";
  default:
    return "unspecified";
  }
}

StringRef causeName(MigrationCause C) {
  switch (C) {
  case MIGRATION_CAUSE_USER:
    return "user";
  case MIGRATION_CAUSE_COHERENCE:
    return "coherence";
  case MIGRATION_CAUSE_PREFETCH:
    return "prefetch";
  case MIGRATION_CAUSE_EVICTION:
    return "eviction";
  case MIGRATION_CAUSE_ACCESS_COUNTERS:
    return "access_counters";
  default:
    return "unspecified";
  }
}

StringRef actionName(ActionKind K) {
  switch (K) {
  case ACTION_KIND_PREFETCH:
    return "prefetch";
  case ACTION_KIND_EVICT:
    return "evict";
  case ACTION_KIND_DISCARD:
    return "discard";
  case ACTION_KIND_ADVISE:
    return "advise";
  case ACTION_KIND_COPY_OUT:
    return "copy_out";
  case ACTION_KIND_COPY_IN:
    return "copy_in";
  default:
    return "unspecified";
  }
}

static StringRef accessSourceName(AccessSource S) {
  switch (S) {
  case ACCESS_SOURCE_DERIVED_TRACE:
    return "derived_trace";
  case ACCESS_SOURCE_MEASURED_FAULTS:
    return "measured_faults";
  case ACCESS_SOURCE_MEASURED_ACCESS_SET:
    return "measured_access_set";
  default:
    return "unspecified";
  }
}

static StringRef strategyName(PlanStrategy S) {
  switch (S) {
  case PLAN_STRATEGY_PREFETCH:
    return "prefetch";
  case PLAN_STRATEGY_SWAP:
    return "swap";
  case PLAN_STRATEGY_DEMAND:
    return "demand";
  default:
    return "unspecified";
  }
}

std::string signatureText(const Kernel &K) {
  return formatv("{0}<<<({1},{2},{3}),({4},{5},{6}),{7}>>>", K.name(), K.grid().x(), K.grid().y(),
                 K.grid().z(), K.block().x(), K.block().y(), K.block().z(),
                 K.shared_memory_bytes())
      .str();
}

ProfileSummary summarize(const Profile &P) {
  ProfileSummary S;
  S.Producer = P.producer();
  S.DeviceName = P.device().name();
  S.DeviceMemoryBytes = P.device().memory_bytes();
  S.Model = P.workload().model();
  S.BatchSize = P.workload().batch_size();
  S.SequenceLength = P.workload().sequence_length();
  S.Iterations = P.iterations_size();
  S.Kernels = P.kernels_size();
  S.KernelsPerIteration =
      P.iterations_size() > 0 ? P.iterations(0).kernel_count() : uint64_t(P.kernels_size());
  S.Allocations = P.allocations_size();
  S.Faults = P.faults_size();
  S.UmEvents = P.um_events_size();
  S.DroppedRecords = P.recording().dropped_records();
  S.AccessSource = accessSourceName(P.access_source()).str();

  StringSet<> Signatures;
  uint64_t MaxKernelBlocks = 0;
  for (const Kernel &K : P.kernels()) {
    Signatures.insert(signatureText(K));
    S.BlockAccesses += K.blocks_size();
    DenseSet<uint64_t> KernelBlocks;
    for (const BlockAccess &B : K.blocks())
      KernelBlocks.insert(B.block());
    MaxKernelBlocks = std::max<uint64_t>(MaxKernelBlocks, KernelBlocks.size());
  }
  S.DistinctSignatures = Signatures.size();
  S.MaxKernelWorkingSetBytes = saturateBytes(WideBytes(MaxKernelBlocks) * P.um_block_bytes());
  // The footprint is one iteration's, the last (deepum-sim's steady state):
  // blocks of every iteration would count each iteration's fresh placements again.
  uint64_t First = 0, Count = P.kernels_size();
  if (P.iterations_size() > 0) {
    const Iteration &Last = P.iterations(P.iterations_size() - 1);
    First = std::min<uint64_t>(Last.first_kernel(), P.kernels_size());
    Count = std::min<uint64_t>(Last.kernel_count(), P.kernels_size() - First);
  }
  DenseSet<uint64_t> Blocks;
  for (uint64_t K = First; K < First + Count; ++K)
    for (const BlockAccess &B : P.kernels(static_cast<int>(K)).blocks())
      Blocks.insert(B.block());
  S.FootprintBytes = saturateBytes(WideBytes(Blocks.size()) * P.um_block_bytes());

  // Byte totals are uint64 and saturate rather than wrap: a file may claim
  // any size, and a summary must not print a small number for a huge one.
  // Peak live bytes: sweep allocation and free events; a free at the same
  // instant as an allocation happens first (the caching allocator reuses it).
  // The running level is exact in 128 bits.
  // Per role the same sweep: the most bytes of that role live at once (not
  // a sum over the profile, which would count each iteration's activations
  // again).
  struct Ev {
    uint64_t T;
    WideBytes Delta;
    int Role;
    bool operator<(const Ev &O) const { return std::tie(T, Delta) < std::tie(O.T, O.Delta); }
  };
  std::vector<Ev> Events;
  for (const Allocation &A : P.allocations()) {
    const int Role = static_cast<int>(A.role());
    Events.push_back({A.alloc_time_ns(), WideBytes(A.size_bytes()), Role});
    if (A.freed())
      Events.push_back({A.free_time_ns(), -WideBytes(A.size_bytes()), Role});
    else
      S.PersistentBytes = addBytes(S.PersistentBytes, A.size_bytes());
  }
  std::sort(Events.begin(), Events.end());
  WideBytes Live = 0, Peak = 0;
  std::map<int, std::pair<WideBytes, WideBytes>> ByRole; // role -> live, peak
  for (const Ev &E : Events) {
    Live += E.Delta;
    Peak = std::max(Peak, Live);
    auto &[RoleLive, RolePeak] = ByRole[E.Role];
    RoleLive += E.Delta;
    RolePeak = std::max(RolePeak, RoleLive);
  }
  for (auto &[Role, LivePeak] : ByRole)
    S.PeakLiveBytesByRole[roleName(static_cast<AllocationRole>(Role)).str()] =
        saturateBytes(LivePeak.second);
  S.PeakLiveBytes = saturateBytes(Peak);

  if (P.iterations_size() > 0) {
    double Total = 0;
    for (const Iteration &It : P.iterations())
      Total += static_cast<double>(It.end_ns() - It.start_ns());
    S.IterationNs = Total / P.iterations_size();
  }
  for (const Migration &M : P.migrations()) {
    std::string Dir = M.direction() == MIGRATION_DIRECTION_HOST_TO_DEVICE ? "htod" : "dtoh";
    MigrationTotals &T = S.Migrations[Dir][causeName(M.cause()).str()];
    ++T.Count;
    T.Bytes = addBytes(T.Bytes, M.bytes());
  }
  return S;
}

PlanSummary summarize(const Plan &P) {
  PlanSummary S;
  const PlanMetadata &M = P.metadata();
  S.Producer = M.producer();
  S.Model = M.model();
  S.DeviceModel = M.device_model();
  S.Strategy = strategyName(M.strategy()).str();
  S.GpuMemoryBytes = M.gpu_memory_bytes();
  S.ProfileFingerprint = M.profile_fingerprint();
  S.Positions = P.position_ids_size();
  S.ExecutionIds = P.execution_ids_size();
  S.BlockChains = P.block_chains_size();
  for (const Action &A : P.actions()) {
    MigrationTotals &T = S.Actions[actionName(A.kind()).str()];
    ++T.Count;
    for (const ArenaRange &R : A.ranges())
      T.Bytes = addBytes(T.Bytes, R.bytes());
  }
  S.ArenaBytes = P.layout().arena_bytes();
  S.PeakLiveBytes = P.layout().peak_live_bytes();
  S.BestFitPeakBytes = P.layout().best_fit_peak_bytes();
  S.Placements = P.layout().placements_size();
  S.PredictedIterationUs = M.predicted_iteration_us();
  S.Text = M.summary();
  S.Ignored.assign(M.ignored().begin(), M.ignored().end());
  return S;
}

json::Value toJson(const ProfileSummary &S) {
  json::Object Roles;
  for (auto &[Role, Bytes] : S.PeakLiveBytesByRole)
    Roles[Role] = Bytes;
  json::Object Migr;
  for (auto &[Dir, ByCause] : S.Migrations) {
    json::Object Causes;
    for (auto &[Cause, T] : ByCause)
      Causes[Cause] = json::Object{{"count", T.Count}, {"bytes", T.Bytes}};
    Migr[Dir] = std::move(Causes);
  }
  return json::Object{
      {"schema", kSummarySchema},
      {"kind", "profile"},
      {"producer", S.Producer},
      {"device", json::Object{{"name", S.DeviceName}, {"memory_bytes", S.DeviceMemoryBytes}}},
      {"model", S.Model},
      {"batch_size", S.BatchSize},
      {"sequence_length", S.SequenceLength},
      {"access_source", S.AccessSource},
      {"iterations", S.Iterations},
      {"kernels", S.Kernels},
      {"kernels_per_iteration", S.KernelsPerIteration},
      {"distinct_signatures", S.DistinctSignatures},
      {"allocations", S.Allocations},
      {"footprint_bytes", S.FootprintBytes},
      {"max_kernel_working_set_bytes", S.MaxKernelWorkingSetBytes},
      {"peak_live_bytes", S.PeakLiveBytes},
      {"persistent_bytes", S.PersistentBytes},
      {"peak_live_bytes_by_role", std::move(Roles)},
      {"iteration_us", S.IterationNs / 1e3},
      {"block_accesses", S.BlockAccesses},
      {"faults", S.Faults},
      {"um_events", S.UmEvents},
      {"dropped_records", S.DroppedRecords},
      {"migrations", std::move(Migr)},
  };
}

json::Value toJson(const PlanSummary &S) {
  json::Object Actions;
  for (auto &[Kind, T] : S.Actions)
    Actions[Kind] = json::Object{{"count", T.Count}, {"bytes", T.Bytes}};
  json::Array Ignored;
  for (const std::string &I : S.Ignored)
    Ignored.push_back(I);
  return json::Object{
      {"schema", kSummarySchema},
      {"kind", "plan"},
      {"producer", S.Producer},
      {"model", S.Model},
      {"device_model", S.DeviceModel},
      {"strategy", S.Strategy},
      {"gpu_memory_bytes", S.GpuMemoryBytes},
      {"profile_fingerprint", formatv("{0:x16}", S.ProfileFingerprint).str()},
      {"positions", S.Positions},
      {"execution_ids", S.ExecutionIds},
      {"block_chains", S.BlockChains},
      {"actions", std::move(Actions)},
      {"arena_bytes", S.ArenaBytes},
      {"peak_live_bytes", S.PeakLiveBytes},
      {"best_fit_peak_bytes", S.BestFitPeakBytes},
      {"placements", S.Placements},
      {"predicted_iteration_us", S.PredictedIterationUs},
      {"ignored", std::move(Ignored)},
  };
}

void print(raw_ostream &OS, const ProfileSummary &S) {
  OS << "profile of " << (S.Model.empty() ? "an unnamed workload" : S.Model);
  if (S.BatchSize)
    OS << ", batch " << S.BatchSize;
  if (S.SequenceLength)
    OS << ", sequence " << S.SequenceLength;
  OS << "\n";
  OS << formatv("  device             {0} ({1})\n", S.DeviceName, formatBytes(S.DeviceMemoryBytes));
  OS << formatv("  producer           {0}\n", S.Producer);
  OS << formatv("  access sets        {0}\n", S.AccessSource);
  OS << formatv("  iterations         {0}\n", S.Iterations);
  OS << formatv("  kernels            {0} ({1} per iteration, {2} distinct signatures)\n", S.Kernels,
                S.KernelsPerIteration, S.DistinctSignatures);
  if (S.IterationNs > 0)
    OS << formatv("  iteration time     {0}\n", formatMicros(S.IterationNs / 1e3));
  OS << formatv("  allocations        {0}\n", S.Allocations);
  OS << formatv("  footprint          {0} (distinct 2 MiB UM blocks of the last iteration)\n",
                formatBytes(S.FootprintBytes));
  OS << formatv("  working set        {0} (the most one kernel touches)\n",
                formatBytes(S.MaxKernelWorkingSetBytes));
  OS << formatv("  peak live bytes    {0}\n", formatBytes(S.PeakLiveBytes));
  OS << formatv("  persistent bytes   {0}\n", formatBytes(S.PersistentBytes));
  OS << "  peak live by role\n";
  for (auto &[Role, Bytes] : S.PeakLiveBytesByRole)
    OS << formatv("    {0,-16} {1}\n", Role, formatBytes(Bytes));
  OS << formatv("  block accesses     {0}\n", S.BlockAccesses);
  OS << formatv("  page faults        {0}\n", S.Faults);
  OS << formatv("  UM events          {0}\n", S.UmEvents);
  if (S.DroppedRecords)
    OS << formatv("  dropped records    {0}\n", S.DroppedRecords);
  if (S.Migrations.empty())
    OS << "  migrations         none recorded\n";
  for (auto &[Dir, ByCause] : S.Migrations)
    for (auto &[Cause, T] : ByCause)
      OS << formatv("  migrated {0} {1,-9} {2} in {3} transfers\n", Dir, Cause,
                    formatBytes(T.Bytes), T.Count);
}

void print(raw_ostream &OS, const PlanSummary &S) {
  OS << "plan for " << (S.Model.empty() ? "an unnamed workload" : S.Model) << " on "
     << S.DeviceModel << ", capacity " << formatBytes(S.GpuMemoryBytes) << " (" << S.Strategy
     << ")\n";
  OS << formatv("  producer           {0}\n", S.Producer);
  OS << formatv("  fingerprint        {0:x16}\n", S.ProfileFingerprint);
  OS << formatv("  positions          {0} launches per iteration, {1} execution ids, {2} chains\n",
                S.Positions, S.ExecutionIds, S.BlockChains);
  if (S.Actions.empty())
    OS << "  actions            none\n";
  for (auto &[Kind, T] : S.Actions)
    OS << formatv("  {0,-18} {1} actions, {2}\n", Kind, T.Count, formatBytes(T.Bytes));
  OS << formatv("  pool layout        {0} for {1} placements (peak live {2}, best-fit {3})\n",
                formatBytes(S.ArenaBytes), S.Placements, formatBytes(S.PeakLiveBytes),
                formatBytes(S.BestFitPeakBytes));
  if (S.PredictedIterationUs > 0)
    OS << formatv("  predicted iteration {0}\n", formatMicros(S.PredictedIterationUs));
  for (const std::string &I : S.Ignored)
    OS << "  ignored: " << I << "\n";
  if (!S.Text.empty())
    OS << S.Text << (StringRef(S.Text).endswith("\n") ? "" : "\n");
}

} // namespace deepum::format
