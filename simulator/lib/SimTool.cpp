//===- SimTool.cpp - deepum-sim as a library ----------------------------------===//
#include "deepum/sim/SimTool.h"

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

llvm::Error deepum::sim::runSim(const SimToolOptions &Opts, llvm::raw_ostream &OS) {
  const auto Begin = std::chrono::steady_clock::now();
  auto Progress = [&](const llvm::Twine &What) {
    const double S =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - Begin).count();
    if (Opts.Progress && S >= Opts.ProgressDelaySeconds) {
      *Opts.Progress << llvm::formatv("deepum-sim: {0} ({1:f1} s)\n", What.str(), S);
      Opts.Progress->flush();
    }
  };
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
  const llvm::SmallVector<llvm::StringRef, 2> Inputs{Opts.ProfilePath, Opts.PlanPath};
  auto TimelineOf = [&](Policy Pol) {
    return Opts.Compare ? timelinePath(Opts.PerfettoOut, policyName(Pol)) : Opts.PerfettoOut;
  };
  if (!Opts.PerfettoOut.empty()) {
    if (Opts.Compare && Opts.PerfettoOut == "-")
      return usage("--compare --perfetto writes one timeline per policy: give a file name or a "
                   "directory, not '-'");
    if (Opts.Compare && llvm::StringRef(Opts.PerfettoOut).endswith("/"))
      if (std::error_code EC = llvm::sys::fs::create_directories(Opts.PerfettoOut))
        return llvm::createStringError(EC, "%s: cannot create the directory: %s",
                                       Opts.PerfettoOut.c_str(), EC.message().c_str());
    // Before any work: no timeline may replace an input.
    for (Policy Pol : Policies)
      if (llvm::Error E = deepum::format::checkNotAnInput(TimelineOf(Pol), Inputs))
        return E;
  }
  for (Policy Pol : Policies) {
    S.Pol = Pol;
    // One timeline per policy run, written before the next run starts: only
    // one is ever held in memory.
    std::optional<deepum::format::TraceWriter> Trace;
    if (!Opts.PerfettoOut.empty())
      Trace.emplace();
    llvm::Expected<SimResult> R = simulate(*P, S, Trace ? &*Trace : nullptr);
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
    Progress(llvm::formatv(
        "policy {0} simulated{1}", R->PolicyName,
        Opts.Compare ? llvm::formatv(", {0} of {1}", Results.size() + 1, Policies.size()).str()
                     : std::string()));
    if (Trace) {
      if (llvm::Error E = Trace->write(TimelineOf(Pol), Inputs))
        return E;
      Progress("timeline written to " + TimelineOf(Pol));
    }
    Results.push_back(std::move(*R));
  }

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
