//===- deepum-sim.cpp - Simulate Unified Memory under oversubscription ------===//
#include "deepum/executor/sim/SimBackend.h"
#include "deepum/sim/SimTool.h"
#include "deepum/tools/Cli.h"
#include "deepum/tools/Progress.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"

using namespace llvm;

static cl::OptionCategory Category("deepum-sim options");
static cl::opt<std::string> Input(cl::Positional, cl::desc("<profile>"), cl::Required,
                                  cl::cat(Category));
static cl::opt<std::string> PolicyOpt("policy",
                                      cl::desc("um, deepum, swap-layer, swap-opt, offload, plan, ideal"),
                                      cl::init("um"), cl::cat(Category));
static cl::opt<std::string> PlanOpt("plan", cl::desc("Plan to replay (--policy plan)"),
                                    cl::value_desc("FILE"), cl::cat(Category));
static cl::opt<std::string> DeviceOpt("device", cl::desc(deepum::tools::kDeviceHelp),
                                      cl::value_desc("NAME"), cl::init("v100-pcie-16gb"),
                                      cl::cat(Category));
static cl::opt<std::string> DeviceFile("device-file", cl::desc(deepum::tools::kDeviceFileHelp),
                                       cl::value_desc("FILE"), cl::cat(Category));
static cl::opt<std::string> GpuMemory("gpu-memory",
                                      cl::desc("Capacity: the GPU memory simulated, e.g. 16GiB"),
                                      cl::value_desc("SIZE"), cl::cat(Category));
static cl::opt<double> Ratio("oversubscription",
                             cl::desc("Oversubscription ratio: capacity = footprint / RATIO "
                                      "(when no --gpu-memory)"),
                             cl::value_desc("RATIO"),
                             cl::init(0), cl::cat(Category));
static cl::opt<unsigned> Iterations("iterations", cl::desc("Measured iterations"), cl::init(10),
                                    cl::cat(Category));
static cl::opt<unsigned> Warmup("warmup", cl::desc("Warm-up iterations, excluded"), cl::init(2),
                                cl::cat(Category));
static cl::opt<unsigned> Lookahead("lookahead", cl::desc("Kernels the prefetchers look ahead"),
                                   cl::init(8), cl::cat(Category));
static cl::opt<unsigned>
    DeepUmLookahead("deepum-lookahead",
                    cl::desc("Launches DeepUM's prefetcher looks ahead (default: --lookahead)"),
                    cl::init(0), cl::cat(Category));
static cl::opt<double>
    DeepUmWatermark("deepum-watermark",
                    cl::desc("Fraction of the capacity DeepUM's pre-eviction keeps free after "
                             "each launch it observes (0: pre-evict only for its prefetches)"),
                    cl::init(0), cl::cat(Category));
static cl::opt<bool> DeepUmTune("deepum-tune",
                                cl::desc("Report DeepUM at its best lookahead and watermark for "
                                         "this profile and capacity (searched)"),
                                cl::cat(Category));
static cl::opt<std::string>
    Durations("durations",
              cl::desc("Kernel durations: auto (roofline of --device when the profile was "
                       "recorded on another device and has flops/bytes), profile, roofline"),
              cl::init("auto"), cl::cat(Category));
static cl::opt<std::string> ComputeFrom("compute-from",
                                        cl::desc(deepum::tools::kComputeFromHelp),
                                        cl::value_desc("PROFILE"), cl::cat(Category));
static cl::opt<bool> Json("json", cl::desc("Print results as JSON"), cl::cat(Category));
static cl::opt<bool> Compare("compare", cl::desc("Run every policy and print one table"),
                             cl::cat(Category));
static cl::opt<bool> Check("check", cl::desc("Check the model's invariants on every kernel"),
                           cl::cat(Category));
static cl::opt<bool> HostSync(
    "host-sync",
    cl::desc("The host waits for the GPU at the end of each iteration, as a loop reading its "
             "loss does (default true; --host-sync=false: it stays one launch ahead)"),
    cl::init(true), cl::cat(Category));
static cl::opt<std::string> Perfetto(
    "perfetto",
    cl::desc("Write a Perfetto timeline of the last iteration (with --compare, one per policy: "
             "OUT.POLICY.json, or DIR/POLICY.json when OUT is a directory or ends in '/')"),
    cl::value_desc("OUT.json"), cl::cat(Category));

static cl::opt<bool> Quiet("quiet", cl::desc("No progress lines on standard error"),
                           cl::cat(Category));

int main(int argc, char **argv) {
  InitLLVM X(argc, argv);
  cl::HideUnrelatedOptions(Category);
  deepum::tools::parseCommandLine(argc, argv, "simulate Unified Memory under oversubscription\n");
  deepum::sim::SimToolOptions Opts;
  Opts.ProfilePath = Input;
  Opts.Policy = PolicyOpt;
  Opts.PlanPath = PlanOpt;
  Opts.PlanPolicy = deepum::executor::sim::executorPlanPolicy;
  Opts.Device = DeviceOpt;
  Opts.DeviceFile = DeviceFile;
  Opts.GpuMemory = GpuMemory;
  // 0 means "not given" in the options struct: an explicit 0 is an error here.
  Opts.Oversubscription = Ratio.getNumOccurrences() && Ratio == 0 ? -1 : double(Ratio);
  Opts.Iterations = Iterations;
  Opts.Warmup = Warmup;
  Opts.Lookahead = Lookahead;
  Opts.DeepUmLookahead = DeepUmLookahead;
  Opts.DeepUmWatermark = DeepUmWatermark;
  Opts.DeepUmTune = DeepUmTune;
  Opts.Durations = Durations;
  Opts.ComputeFrom = ComputeFrom;
  Opts.Json = Json;
  Opts.Compare = Compare;
  Opts.Check = Check;
  Opts.HostSync = HostSync;
  Opts.PerfettoOut = Perfetto;
  deepum::tools::ProgressSettings Progress = deepum::tools::progressSettings(errs(), Quiet);
  Opts.Progress = Progress.Stream;
  Opts.ProgressDelaySeconds = Progress.DelaySeconds;
  ExitOnError ExitOnErr("deepum-sim: ");
  ExitOnErr(deepum::sim::runSim(Opts, outs()));
  return 0;
}
