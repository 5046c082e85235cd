//===- SimTool.cpp - deepum-sim as a library ----------------------------------===//
#include "deepum/sim/SimTool.h"

#include "deepum/format/Compute.h"
#include "deepum/format/Format.h"
#include "deepum/format/Perfetto.h"
#include "deepum/format/Units.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <chrono>
#include <cmath>
#include <optional>

using namespace deepum::sim;

namespace {

llvm::Error usage(const llvm::Twine &Msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
}

/// Progress lines on SimToolOptions::Progress, timed from the run's start,
/// once the run has taken SimToolOptions::ProgressDelaySeconds.
class ProgressLines {
public:
  explicit ProgressLines(const SimToolOptions &Opts)
      : Out(Opts.Progress), DelaySeconds(Opts.ProgressDelaySeconds),
        Begin(std::chrono::steady_clock::now()) {}

  void operator()(const llvm::Twine &What) const {
    const double S =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - Begin).count();
    if (Out && S >= DelaySeconds) {
      *Out << llvm::formatv("deepum-sim: {0} ({1:f1} s)\n", What.str(), S);
      Out->flush();
    }
  }

private:
  llvm::raw_ostream *const Out;
  const double DelaySeconds;
  const std::chrono::steady_clock::time_point Begin;
};

/// The GPU memory simulated, from --gpu-memory or --oversubscription (of the
/// profile's footprint); 0 when neither is given.
llvm::Expected<uint64_t> capacityBytes(const SimToolOptions &Opts, const deepum::v1::Profile &P) {
  if (!Opts.GpuMemory.empty() && Opts.Oversubscription != 0)
    return usage("give --gpu-memory or --oversubscription, not both");
  if (Opts.Oversubscription < 0 || !std::isfinite(Opts.Oversubscription))
    return usage("--oversubscription must be a positive ratio (footprint / capacity)");
  if (!Opts.GpuMemory.empty()) {
    llvm::Expected<uint64_t> Bytes = deepum::format::parseByteSize(Opts.GpuMemory);
    if (!Bytes)
      return usage("--gpu-memory: " + llvm::toString(Bytes.takeError()));
    if (*Bytes == 0)
      return usage("--gpu-memory must be more than 0 bytes");
    return *Bytes;
  }
  if (Opts.Oversubscription == 0)
    return 0;
  const uint64_t Footprint = footprintBytes(P);
  // Checked in double before converting: a tiny ratio gives more than
  // uint64_t holds; a huge one less than a block (0 would mean "the device's").
  double Bytes = std::floor(static_cast<double>(Footprint) / Opts.Oversubscription);
  if (!(Bytes < 0x1p64))
    return usage(llvm::formatv("--oversubscription {0} gives more than 2^64 bytes of GPU memory",
                               Opts.Oversubscription)
                     .str());
  const uint64_t Capacity = static_cast<uint64_t>(Bytes);
  if (Footprint && Capacity < deepum::format::kUmBlockBytes)
    return usage(llvm::formatv("--oversubscription {0} leaves less than one 2 MiB UM block of "
                               "GPU memory for a footprint of {1}",
                               Opts.Oversubscription, deepum::format::formatBytes(Footprint))
                     .str());
  return Capacity;
}

/// The simulator's options from the tool's, every one checked; notes on
/// standard error a plan compiled for another capacity.
llvm::Expected<SimOptions> simOptions(const SimToolOptions &Opts, const DeviceModel &D,
                                      const deepum::v1::Profile &P,
                                      const deepum::v1::Plan *Plan) {
  SimOptions S;
  S.Device = D;
  S.Iterations = Opts.Iterations;
  S.WarmupIterations = Opts.Warmup;
  S.Lookahead = Opts.Lookahead;
  if (!(Opts.DeepUmWatermark >= 0 && Opts.DeepUmWatermark < 1))
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--deepum-watermark must be a fraction of the capacity in "
                                   "[0, 1), e.g. 0.1 keeps 10% free");
  S.DeepUmLookahead = Opts.DeepUmLookahead;
  S.DeepUmWatermark = Opts.DeepUmWatermark;
  S.CheckInvariants = Opts.Check;
  S.HostWaitsEachIteration = Opts.HostSync;
  S.Plan = Plan;
  if (Opts.Durations == "profile")
    S.Durations = SimOptions::DurationSource::Profile;
  else if (Opts.Durations == "roofline")
    S.Durations = SimOptions::DurationSource::Roofline;
  else if (Opts.Durations != "auto")
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--durations must be auto, profile or roofline, not '" +
                                       Opts.Durations + "'");
  S.PlanName = Opts.PlanPath;
  S.ProfileName = Opts.ProfilePath;
  llvm::Expected<uint64_t> Capacity = capacityBytes(Opts, P);
  if (!Capacity)
    return Capacity.takeError();
  S.GpuMemoryBytes = *Capacity;

  if (Plan && S.GpuMemoryBytes && Plan->metadata().gpu_memory_bytes() &&
      Plan->metadata().gpu_memory_bytes() != S.GpuMemoryBytes)
    llvm::errs() << llvm::formatv(
        "deepum-sim: note: {0} was compiled for {1} of GPU memory; simulating {2}\n",
        Opts.PlanPath, deepum::format::formatBytes(Plan->metadata().gpu_memory_bytes()),
        deepum::format::formatBytes(S.GpuMemoryBytes));

  if (Plan && !Opts.PlanPolicy)
    return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                   "--plan: this build has no plan replay (the executor's "
                                   "simulator backend)");
  S.PlanPolicy = Opts.PlanPolicy;
  return S;
}

/// The policy asked for, or with --compare every one (plan only with a plan).
llvm::Expected<std::vector<Policy>> policiesToRun(const SimToolOptions &Opts, bool HavePlan) {
  if (!Opts.Compare) {
    llvm::Expected<Policy> Pol = parsePolicy(Opts.Policy);
    if (!Pol)
      return Pol.takeError();
    return std::vector<Policy>{*Pol};
  }
  std::vector<Policy> Policies = {Policy::Um, Policy::DeepUm, Policy::SwapLayer,
                                  Policy::SwapOpt, Policy::Offload};
  if (HavePlan)
    Policies.push_back(Policy::Plan);
  Policies.push_back(Policy::Ideal);
  return Policies;
}

/// Where the timeline of `Pol` goes: with --compare, one file per policy.
std::string timelineOf(const SimToolOptions &Opts, Policy Pol) {
  return Opts.Compare ? timelinePath(Opts.PerfettoOut, policyName(Pol)) : Opts.PerfettoOut;
}

/// Before any work: the directory of --compare's timelines made, and no
/// timeline replacing an input.
llvm::Error checkTimelineOutputs(const SimToolOptions &Opts, llvm::ArrayRef<Policy> Policies,
                                 llvm::ArrayRef<llvm::StringRef> Inputs) {
  if (Opts.PerfettoOut.empty())
    return llvm::Error::success();
  if (Opts.Compare && Opts.PerfettoOut == "-")
    return usage("--compare --perfetto writes one timeline per policy: give a file name or a "
                 "directory, not '-'");
  if (Opts.Compare && llvm::StringRef(Opts.PerfettoOut).endswith("/"))
    if (std::error_code EC = llvm::sys::fs::create_directories(Opts.PerfettoOut))
      return llvm::createStringError(EC, "%s: cannot create the directory: %s",
                                     Opts.PerfettoOut.c_str(), EC.message().c_str());
  for (Policy Pol : Policies)
    if (llvm::Error E = deepum::format::checkNotAnInput(timelineOf(Opts, Pol), Inputs))
      return E;
  return llvm::Error::success();
}

/// Simulates each policy in turn, writing its timeline before the next
/// starts: only one is ever held in memory. With --deepum-tune, DeepUM's
/// result is the tuned one and `Tuned` its setting.
llvm::Expected<std::vector<SimResult>>
simulatePolicies(const SimToolOptions &Opts, const deepum::v1::Profile &P, SimOptions S,
                 llvm::ArrayRef<Policy> Policies, llvm::ArrayRef<llvm::StringRef> Inputs,
                 const ProgressLines &Progress, DeepUmSetting &Tuned) {
  std::vector<SimResult> Results;
  for (Policy Pol : Policies) {
    S.Pol = Pol;
    std::optional<deepum::format::TraceWriter> Trace;
    if (!Opts.PerfettoOut.empty())
      Trace.emplace();
    llvm::Expected<SimResult> R = simulate(P, S, Trace ? &*Trace : nullptr);
    if (!R)
      return R.takeError();
    if (Pol == Policy::DeepUm && Opts.DeepUmTune) {
      // The best DeepUM on this profile and capacity (the timeline, if any,
      // is of the setting given; the tuned one is printed to reproduce it).
      llvm::Expected<DeepUmTuning> T = tuneDeepUm(P, S);
      if (!T)
        return T.takeError();
      Tuned = T->Best;
      *R = std::move(T->Result);
    }
    if (Opts.Check && R->InvariantViolations)
      return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                     llvm::formatv("{0}: policy {1}: {2} invariant violations",
                                                   Opts.ProfilePath, R->PolicyName,
                                                   R->InvariantViolations)
                                         .str());
    Progress(llvm::formatv(
        "policy {0} simulated{1}", R->PolicyName,
        Opts.Compare ? llvm::formatv(", {0} of {1}", Results.size() + 1, Policies.size()).str()
                     : std::string()));
    if (Trace) {
      if (llvm::Error E = Trace->write(timelineOf(Opts, Pol), Inputs))
        return E;
      Progress("timeline written to " + timelineOf(Opts, Pol));
    }
    Results.push_back(std::move(*R));
  }
  return Results;
}

/// A result in JSON; DeepUM's carries the setting it ran with (tuned or given).
llvm::json::Value resultJson(const SimResult &R, const DeepUmSetting &Setting, bool Tuned) {
  llvm::json::Value V = toJson(R);
  if (R.PolicyName == policyName(Policy::DeepUm))
    if (llvm::json::Object *O = V.getAsObject()) {
      (*O)["deepum_lookahead"] = static_cast<int64_t>(Setting.Lookahead);
      (*O)["deepum_watermark"] = Setting.Watermark;
      (*O)["deepum_tuned"] = Tuned;
    }
  return V;
}

/// The results as a table (one row each with --compare) or JSON; to
/// standard error when the timeline is standard output (--perfetto -).
void printReport(const SimToolOptions &Opts, const std::vector<SimResult> &Results,
                 const DeepUmSetting &Tuned, llvm::raw_ostream &OS) {
  llvm::raw_ostream &Report = Opts.PerfettoOut == "-" ? llvm::errs() : OS;
  if (Opts.Json) {
    if (Opts.Compare) {
      llvm::json::Array A;
      for (const SimResult &R : Results)
        A.push_back(resultJson(R, Tuned, Opts.DeepUmTune));
      Report << llvm::formatv("{0:2}", llvm::json::Value(std::move(A))) << "\n";
    } else {
      Report << llvm::formatv("{0:2}", resultJson(Results.front(), Tuned, Opts.DeepUmTune))
             << "\n";
    }
    return;
  }
  if (Opts.DeepUmTune &&
      llvm::any_of(Results, [](const SimResult &R) { return R.PolicyName == "deepum"; }))
    Report << llvm::formatv("deepum tuned: --deepum-lookahead {0} --deepum-watermark {1}\n",
                            Tuned.Lookahead, Tuned.Watermark);
  if (Opts.Compare)
    printComparison(Report, Results);
  else
    print(Report, Results.front());
}

} // namespace

llvm::Error deepum::sim::runSim(const SimToolOptions &Opts, llvm::raw_ostream &OS) {
  const ProgressLines Progress(Opts);
  llvm::Expected<deepum::v1::Profile> P = deepum::format::readProfile(Opts.ProfilePath);
  if (!P)
    return P.takeError();
  if (!Opts.ComputeFrom.empty())
    if (llvm::Error E = deepum::format::takeComputeTimesFrom(*P, Opts.ComputeFrom))
      return E;
  std::optional<deepum::v1::Plan> Plan;
  if (!Opts.PlanPath.empty()) {
    llvm::Expected<deepum::v1::Plan> PlanOr = deepum::format::readPlan(Opts.PlanPath);
    if (!PlanOr)
      return PlanOr.takeError();
    Plan = std::move(*PlanOr);
  }
  llvm::Expected<DeviceModel> D = loadDeviceModel(Opts.Device, Opts.DeviceFile);
  if (!D)
    return D.takeError();
  llvm::Expected<SimOptions> S = simOptions(Opts, *D, *P, Plan ? &*Plan : nullptr);
  if (!S)
    return S.takeError();
  llvm::Expected<std::vector<Policy>> Policies = policiesToRun(Opts, Plan.has_value());
  if (!Policies)
    return Policies.takeError();

  DeepUmSetting Tuned{S->DeepUmLookahead ? S->DeepUmLookahead : S->Lookahead, S->DeepUmWatermark};
  const llvm::SmallVector<llvm::StringRef, 3> Inputs{Opts.ProfilePath, Opts.PlanPath,
                                                     Opts.ComputeFrom};
  if (llvm::Error E = checkTimelineOutputs(Opts, *Policies, Inputs))
    return E;
  llvm::Expected<std::vector<SimResult>> Results =
      simulatePolicies(Opts, *P, *S, *Policies, Inputs, Progress, Tuned);
  if (!Results)
    return Results.takeError();
  printReport(Opts, *Results, Tuned, OS);
  return llvm::Error::success();
}

std::string deepum::sim::timelinePath(llvm::StringRef Out, llvm::StringRef Policy) {
  if (Out.endswith("/") || llvm::sys::fs::is_directory(Out)) {
    llvm::SmallString<256> Path(Out);
    llvm::sys::path::append(Path, Policy + ".json");
    return std::string(Path);
  }
  llvm::StringRef Stem = Out;
  Stem.consume_back(".json");
  return (Stem + "." + Policy + ".json").str();
}
