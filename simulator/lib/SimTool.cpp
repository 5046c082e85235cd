//===- SimTool.cpp - deepum-sim as a library ----------------------------------===//
#include "deepum/sim/SimTool.h"

#include "deepum/format/Format.h"
#include "deepum/format/Perfetto.h"
#include "deepum/format/Units.h"
#include "deepum/sim/Simulator.h"

#include "llvm/Support/FormatVariadic.h"

#include <cmath>
#include <optional>

using namespace deepum::sim;

llvm::Error deepum::sim::runSim(const SimToolOptions &Opts, llvm::raw_ostream &OS) {
  llvm::Expected<deepum::v1::Profile> P = deepum::format::readProfile(Opts.ProfilePath);
  if (!P)
    return P.takeError();
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

  SimOptions S;
  S.Device = *D;
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
  S.Plan = Plan ? &*Plan : nullptr;
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
  auto usage = [](const llvm::Twine &Msg) {
    return llvm::createStringError(llvm::inconvertibleErrorCode(), Msg);
  };
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
    S.GpuMemoryBytes = *Bytes;
  } else if (Opts.Oversubscription > 0) {
    const uint64_t Footprint = footprintBytes(*P);
    // Checked in double before converting: a tiny ratio gives more than
    // uint64_t holds; a huge one less than a block (0 would mean "the device's").
    double Bytes = std::floor(static_cast<double>(Footprint) / Opts.Oversubscription);
    if (!(Bytes < 0x1p64))
      return usage(llvm::formatv("--oversubscription {0} gives more than 2^64 bytes of GPU memory",
                                 Opts.Oversubscription)
                       .str());
    S.GpuMemoryBytes = static_cast<uint64_t>(Bytes);
    if (Footprint && S.GpuMemoryBytes < deepum::format::kUmBlockBytes)
      return usage(llvm::formatv("--oversubscription {0} leaves less than one 2 MiB UM block of "
                                 "GPU memory for a footprint of {1}",
                                 Opts.Oversubscription, deepum::format::formatBytes(Footprint))
                       .str());
  }

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

  std::vector<Policy> Policies;
  if (Opts.Compare) {
    Policies = {Policy::Um, Policy::DeepUm, Policy::SwapLayer, Policy::SwapOpt};
    if (Plan)
      Policies.push_back(Policy::Plan);
    Policies.push_back(Policy::Ideal);
  } else {
    llvm::Expected<Policy> Pol = parsePolicy(Opts.Policy);
    if (!Pol)
      return Pol.takeError();
    Policies = {*Pol};
  }

  std::vector<SimResult> Results;
  DeepUmSetting Tuned{S.DeepUmLookahead ? S.DeepUmLookahead : S.Lookahead, S.DeepUmWatermark};
  std::optional<deepum::format::TraceWriter> Trace;
  if (!Opts.PerfettoOut.empty()) {
    // Before any work: the timeline must not replace an input.
    if (llvm::Error E =
            deepum::format::checkNotAnInput(Opts.PerfettoOut, {Opts.ProfilePath, Opts.PlanPath}))
      return E;
    Trace.emplace();
  }
  for (Policy Pol : Policies) {
    S.Pol = Pol;
    // One timeline, of the first policy run (the selected one without --compare).
    const bool Traced = Trace && Results.empty();
    llvm::Expected<SimResult> R = simulate(*P, S, Traced ? &*Trace : nullptr);
    if (!R)
      return R.takeError();
    if (Pol == Policy::DeepUm && Opts.DeepUmTune) {
      // The best DeepUM on this profile and capacity (the timeline, if any,
      // is of the setting given; the tuned one is printed to reproduce it).
      llvm::Expected<DeepUmTuning> T = tuneDeepUm(*P, S);
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
    Results.push_back(std::move(*R));
  }
  if (Trace)
    if (llvm::Error E = Trace->write(Opts.PerfettoOut, {Opts.ProfilePath, Opts.PlanPath}))
      return E;

  // With --perfetto - the timeline is standard output: the report goes to standard error.
  llvm::raw_ostream &Report = Opts.PerfettoOut == "-" ? llvm::errs() : OS;
  // DeepUM's results carry the setting they ran with (tuned or given).
  auto ToJson = [&](const SimResult &R) {
    llvm::json::Value V = toJson(R);
    if (R.PolicyName == policyName(Policy::DeepUm))
      if (llvm::json::Object *O = V.getAsObject()) {
        (*O)["deepum_lookahead"] = static_cast<int64_t>(Tuned.Lookahead);
        (*O)["deepum_watermark"] = Tuned.Watermark;
        (*O)["deepum_tuned"] = Opts.DeepUmTune;
      }
    return V;
  };
  if (Opts.Json) {
    if (Opts.Compare) {
      llvm::json::Array A;
      for (const SimResult &R : Results)
        A.push_back(ToJson(R));
      Report << llvm::formatv("{0:2}", llvm::json::Value(std::move(A))) << "\n";
    } else {
      Report << llvm::formatv("{0:2}", ToJson(Results.front())) << "\n";
    }
    return llvm::Error::success();
  }
  if (Opts.DeepUmTune &&
      llvm::any_of(Results, [](const SimResult &R) { return R.PolicyName == "deepum"; }))
    Report << llvm::formatv("deepum tuned: --deepum-lookahead {0} --deepum-watermark {1}\n",
                        Tuned.Lookahead, Tuned.Watermark);
  if (Opts.Compare)
    printComparison(Report, Results);
  else
    print(Report, Results.front());
  return llvm::Error::success();
}
