//===- deepum/sim/Simulator.h - Unified Memory under oversubscription -----===//
//
// deepum-sim as a library: one GPU of a given capacity behind a host link,
// kernels replayed in profile order, demand paging as the nvidia-uvm driver
// does it, and the policies that try to do better (DeepUM's online
// correlation prefetcher, layer swapping, Zhang et al.'s swap selection, a
// deepum plan). The model is described, parameter by parameter, in
// docs/simulator.md; the mechanisms live in deepum/sim/Engine.h.
//
// Steady state: a profile holds a few iterations; simulate() replays the
// profile's last complete iteration `WarmupIterations + Iterations` times and
// reports the mean over the last `Iterations` (per-iteration figures).
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_SIM_SIMULATOR_H
#define DEEPUM_SIM_SIMULATOR_H

#include "deepum/base/DeviceModel.h"
#include "deepum/format/Perfetto.h"
#include "deepum/v1/plan.pb.h"
#include "deepum/v1/profile.pb.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace deepum::sim {

/// One GPU and its host link, loaded by name (and --device-file): the one
/// device model of deepum (deepum/base/DeviceModel.h).
using base::DeviceModel;
using base::deviceModelNames;
using base::loadDeviceModel;

enum class Policy { Um, DeepUm, SwapLayer, SwapOpt, Offload, Plan, Ideal };

class SimPolicy; // deepum/sim/Policy.h
struct SimOptions;
/// Makes the `plan` policy for a plan: the executor driving the engine
/// (deepum::executor::sim::executorPlanPolicy). The simulator does not link
/// the executor, so whoever links both hands it in.
using PlanPolicyFactory = std::function<llvm::Expected<std::unique_ptr<SimPolicy>>(
    const deepum::v1::Plan &, const SimOptions &)>;

/// "um", "deepum", "swap-layer", "swap-opt", "offload", "plan", "ideal".
llvm::StringRef policyName(Policy P);
llvm::Expected<Policy> parsePolicy(llvm::StringRef Name);

struct SimOptions {
  DeviceModel Device;
  /// Capacity simulated, bytes. 0 = the device's memory, or for `plan` the
  /// plan's metadata gpu_memory_bytes.
  uint64_t GpuMemoryBytes = 0;
  Policy Pol = Policy::Um;
  /// Measured iterations (steady state) and warm-up iterations before them.
  unsigned Iterations = 10;
  unsigned WarmupIterations = 2;
  /// The plan to replay for Policy::Plan (arena space; see plan.proto), and
  /// who replays it: without PlanPolicy, Policy::Plan is an error.
  const deepum::v1::Plan *Plan = nullptr;
  PlanPolicyFactory PlanPolicy;
  /// Used in error messages about the plan / profile.
  std::string PlanName = "plan";
  std::string ProfileName = "profile";
  /// Kernels the deepum and swap-layer prefetchers look ahead.
  unsigned Lookahead = 8;
  /// DeepUM's own settings (docs/simulator.md), tuned per model by the result
  /// generators: the launches its prefetcher looks ahead (0 = Lookahead), and
  /// the free-memory watermark its pre-eviction keeps after each
  /// observation, as a fraction of the capacity (0 = room is made only for
  /// the prefetches themselves). In [0, 1).
  unsigned DeepUmLookahead = 0;
  double DeepUmWatermark = 0;
  /// Timeline: how many of the last measured iterations to record.
  unsigned TimelineIterations = 1;
  /// Check the model's invariants on every kernel (costs ~20% time).
  bool CheckInvariants = false;
  /// The host waits for the GPU at the end of each iteration, as a training
  /// loop does that reads its loss (`loss.item()`): the next iteration's
  /// first launch, and what a policy issues when it sees it, come after the
  /// last kernel has ended. Without it the host stays one launch ahead
  /// across the iteration mark.
  bool HostWaitsEachIteration = true;
  /// Kernel durations: as recorded, or recomputed with Device's roofline from
  /// the kernels' flops and dram_bytes. Auto = roofline when the profile was
  /// recorded (or modelled) on another device and every kernel has roofline
  /// inputs, as recorded otherwise.
  enum class DurationSource { Auto, Profile, Roofline };
  DurationSource Durations = DurationSource::Auto;
};

/// Results per steady-state iteration (means over the measured iterations),
/// of every policy alike: the plan's executor replay fills the same struct.
/// JSON keys (stable) in brackets.
struct SimResult {
  std::string PolicyName;           // [policy]
  std::string DeviceName;           // [device]
  std::string Model;                // [model]
  uint64_t GpuMemoryBytes = 0;      // [gpu_memory_bytes]
  uint64_t FootprintBytes = 0;      // [footprint_bytes] distinct UM blocks x 2 MiB
  unsigned MeasuredIterations = 0;  // [iterations]
  unsigned WarmupIterations = 0;    // [warmup_iterations]
  uint64_t KernelsPerIteration = 0; // [kernels_per_iteration]
  std::string Durations;            // [durations] "profile" or "roofline"
  std::string ProfileDevice;        // [profile_device]
  double IterationUs = 0;           // [iteration_us]
  /// [repeats_every] the measured iterations' times repeat every this many
  /// iterations (1: all alike); 0: they do not repeat within the measured
  /// ones (a backlog still growing, or one measured iteration), so the mean
  /// is not yet a steady state's. Compare with [iterations]: the mean is the
  /// cycle's only over a whole number of repeats.
  unsigned RepeatsEvery = 0;
  double IterationSpreadUs = 0;     // [iteration_spread_us] slowest - fastest measured iteration
  double IdealUs = 0;               // [ideal_us] compute alone
  double BoundUs = 0;               // [bound_us] transfer lower bound
  double BoundOrIdealUs = 0;        // [bound_or_ideal_us] max(ideal, bound)
  /// [cut_bound_us] per launch boundary, write-backs before it and fetches
  /// after it cannot overlap each other (see cutBoundNs); includes compute.
  double CutBoundUs = 0;
  double LowerBoundUs = 0;          // [lower_bound_us] max(ideal, bound, cut bound)
  /// [bounds_compute_only] the profile's data was too costly to count (very
  /// many small allocations under very many launches): every bound is the
  /// ideal time.
  bool BoundsComputeOnly = false;
  double StallUs = 0;               // [stall_us] compute lane idle
  double SlowdownOverIdeal = 0;     // [slowdown]
  double Faults = 0;                // [faults] 64 KiB pages demand-faulted
  double FaultBatches = 0;          // [fault_batches]
  double BytesHtoD = 0;             // [bytes_htod]
  double BytesDtoH = 0;             // [bytes_dtoh]
  double BytesPrefetched = 0;       // [bytes_prefetched] explicit prefetches (USER) and copies in
  double BytesDriverPrefetched = 0; // [bytes_driver_prefetched] density prefetcher
  double BytesDemand = 0;           // [bytes_demand] faulted pages (COHERENCE)
  double Evictions = 0;             // [evictions] 2 MiB chunks evicted
  double BytesDiscarded = 0;        // [bytes_discarded] dropped without write-back
  double PrefetchHits = 0;          // [prefetch_hits] blocks found prefetched
  double LatePrefetches = 0;        // [late_prefetches] in flight when needed
  double ThrashingEvents = 0;       // [thrashing_events]
  double ThrottledBatches = 0;      // [throttled_batches]
  double LostReads = 0;             // [lost_reads] pages read after a discard
  double LostContents = 0;          // [lost_contents] pages read whose contents had to be kept, gone
  uint64_t PeakResidentBytes = 0;   // [peak_resident_bytes] incl. evictions in flight
  double BytesCopiedOut = 0;        // [bytes_copied_out] explicit copies to pinned host memory
  double BytesCopiedIn = 0;         // [bytes_copied_in] and back (in bytes_dtoh / bytes_htod too)
  /// [policy_peak_bytes] the device memory the policy's own schedule needs
  /// at its peak when it does not adapt to the capacity (offload copies out
  /// every saved tensor, whatever the capacity); 0 = it adapts. Above
  /// gpu_memory_bytes the system it stands for runs out of memory; the time
  /// is the engine's with Unified Memory paging the rest.
  uint64_t PolicyPeakBytes = 0;
  uint64_t InvariantViolations = 0; // [invariant_violations] with CheckInvariants
};

/// One setting of DeepUM (SimOptions::DeepUmLookahead, DeepUmWatermark).
struct DeepUmSetting {
  unsigned Lookahead = 8;
  double Watermark = 0;
};
/// DeepUM tuned for one profile and capacity: the best setting found and its
/// result, and every setting tried with its iteration time in the search.
struct DeepUmTuning {
  DeepUmSetting Best;
  SimResult Result; // Best, simulated with the caller's iterations
  std::vector<std::pair<DeepUmSetting, double>> Tried; // iteration_us in the search
};
/// The lookaheads and watermarks tuneDeepUm searches.
inline constexpr unsigned kDeepUmLookaheads[] = {1, 2, 4, 8, 16, 32, 64, 128, 256};
inline constexpr double kDeepUmWatermarks[] = {0.05, 0.10, 0.20};
/// Tunes DeepUM on `P` at the capacity of `Opts` (whose Pol is ignored):
/// every lookahead with no watermark, then each watermark at the best
/// lookahead. The search measures `SearchIterations` iterations after
/// Opts.WarmupIterations + 3 (DeepUM's first iterations after a short warm-up
/// are not yet its steady state); the best setting found and Opts' own
/// (lookahead Opts.DeepUmLookahead or Opts.Lookahead, no watermark) are then
/// simulated as Opts says and the faster is Best.
llvm::Expected<DeepUmTuning> tuneDeepUm(const deepum::v1::Profile &P, const SimOptions &Opts,
                                        unsigned SearchIterations = 2);

/// Simulates `P` under `Opts`. `Timeline`, when given, receives compute,
/// copy-engine, fault, eviction and discard events and the resident-MiB
/// counter of the last iteration, and one slice per simulated iteration.
llvm::Expected<SimResult> simulate(const deepum::v1::Profile &P, const SimOptions &Opts,
                                   deepum::format::TraceWriter *Timeline = nullptr);

/// Names the timeline's process after the run (model, policy, device,
/// capacity) and its lanes: compute, copy engines, fault batches, host API
/// calls, discards, iterations (the engine's lanes, Engine.cpp).
void nameTimelineLanes(deepum::format::TraceWriter &T, const SimResult &R);
/// The slice of iteration `It` on the iterations lane: [BeginNs, EndNs) of
/// the compute lane; the first `Warmup` are marked warm-up.
void timelineIteration(deepum::format::TraceWriter &T, unsigned It, unsigned Warmup,
                       uint64_t BeginNs, uint64_t EndNs);

llvm::json::Value toJson(const SimResult &R);
void print(llvm::raw_ostream &OS, const SimResult &R);
/// One row per result: the --compare table.
void printComparison(llvm::raw_ostream &OS, const std::vector<SimResult> &Results);

/// Bytes of distinct UM blocks touched by the steady-state iteration.
uint64_t footprintBytes(const deepum::v1::Profile &P);

/// Index range {first kernel, kernel count} of the steady-state iteration
/// simulate() replays: the profile's last marked iteration (all kernels when
/// none is marked).
std::pair<uint32_t, uint32_t> steadyStateIteration(const deepum::v1::Profile &P);

/// The kernels a plan replays, {first kernel, kernel count}: the iteration the
/// plan was compiled from (metadata.reference_iteration, when the profile marks
/// it) or else the last run of kernels whose execution IDs are the plan's
/// launch sequence. A plan whose sequence occurs nowhere in the profile was
/// compiled for another workload: an error naming both files.
llvm::Expected<std::pair<uint32_t, uint32_t>>
planIteration(const deepum::v1::Plan &Plan, const deepum::v1::Profile &P,
              llvm::StringRef PlanName = "plan", llvm::StringRef ProfileName = "profile");

/// Durations (ns) of the steady-state iteration's kernels (or of `Range`,
/// {first kernel, count}, when given) as simulate() uses them for `Device`
/// (recorded, or recomputed with its roofline; see SimOptions::Durations).
/// Sets *Roofline to whether they were recomputed.
llvm::Expected<std::vector<uint64_t>>
kernelDurations(const deepum::v1::Profile &P, const DeviceModel &Device,
                SimOptions::DurationSource Source = SimOptions::DurationSource::Auto,
                bool *Roofline = nullptr,
                std::optional<std::pair<uint32_t, uint32_t>> Range = std::nullopt);

} // namespace deepum::sim

#endif // DEEPUM_SIM_SIMULATOR_H
