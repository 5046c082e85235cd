//===- Injection.cpp - The profiler inside the profiled program -------------===//
//
// libdeepum_profiler_injection.so. deepum-profile names it in
// CUDA_INJECTION64_PATH; the driver loads it during cuInit and calls
// InitializeInjection(). From then on it records, through CUPTI, kernels
// (CUPTI_ACTIVITY_KIND_KERNEL, which serialises them: that makes fault
// attribution by time unambiguous), memcpy/memset, UM counters, the device,
// managed allocations (driver callbacks and the allocator's hooks) and
// iteration marks; the session (deepum/profiler/Session.h) turns marks into
// checkpoints and the final profile.
//
// Rule for everything here: never crash or stop the program. CUPTI and CUDA
// calls are checked, the first failure is kept and reported with the
// profile, and recording degrades (kernels only, no marks) instead of failing.
//
//===----------------------------------------------------------------------===//
#include "CuptiPort.h"

#include "deepum/cupti/KernelParams.h"
#include "deepum/profiler/HookTarget.h"
#include "deepum/profiler/IterationMarker.h"
#include "deepum/profiler/Recorder.h"
#include "deepum/profiler/Session.h"
#include "deepum/profiler/cuda/CuptiRecords.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/raw_ostream.h"

#include <cuda.h>
#include <cupti.h>
#include <generated_nvtx_meta.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

using namespace deepum::profiler;
using namespace deepum::profiler::cuda;
using llvm::Error;

namespace {

/// Activity buffers: CUPTI recommends 1-10 MiB. 4 MiB holds about 20,000
/// kernel records, so a training iteration fills a few, and a forced flush at
/// each mark keeps none pending for long.
constexpr size_t kActivityBufferBytes = size_t{4} << 20;
/// CUPTI requires activity buffers aligned to 8 bytes.
constexpr size_t kActivityBufferAlign = 8;

/// Activity kinds recorded while the window is open. KERNEL, not
/// CONCURRENT_KERNEL: it serialises kernels, so each fault has one kernel.
/// --mode kernels records no faults and takes CONCURRENT_KERNEL instead, which
/// leaves the program's kernels as they run without a profiler.
constexpr CUpti_ActivityKind kRecordedKinds[] = {
    CUPTI_ACTIVITY_KIND_KERNEL,
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMSET,
};

class Profiler final : public HookTarget {
public:
  explicit Profiler(SessionConfig C)
      : Rec(C.recorderOptions()), Log(2, /*shouldClose=*/false, /*unbuffered=*/true),
        S(std::move(C), Rec, Log), Marker(S.config().StepRange) {}

  void start();
  void step() override;
  void beginIteration();
  void endIteration();
  /// Applies what the IterationMarker made of a callback.
  void mark(MarkAction A);
  void finishAtExit();
  // HookTarget: deepum's allocator and deepum_step().
  void allocation(const void *Ptr, uint64_t Bytes, uint64_t Stream, uint64_t Call) override;
  void release(const void *Ptr) override;

  // CUPTI entry points.
  static void CUPTIAPI bufferRequested(uint8_t **Buffer, size_t *Size, size_t *MaxRecords);
  static void CUPTIAPI bufferCompleted(CUcontext Ctx, uint32_t StreamId, uint8_t *Buffer,
                                       size_t Size, size_t ValidSize);
  static void onContextCreated(void *Self, CUpti_CallbackDomain, CUpti_CallbackId, const void *);
  static void onDriverApi(void *Self, CUpti_CallbackDomain, CUpti_CallbackId, const void *);
  static void onRuntimeLaunch(void *Self, CUpti_CallbackDomain, CUpti_CallbackId, const void *);
  static void onRuntimeProfiler(void *Self, CUpti_CallbackDomain, CUpti_CallbackId, const void *);
  static void onLaunchArguments(void *Self, CUpti_CallbackDomain, CUpti_CallbackId, const void *);
  static void onNvtx(void *Self, CUpti_CallbackDomain, CUpti_CallbackId, const void *);

private:
  uint64_t now();
  /// Logs a failed CUPTI call once and keeps the first failure for the profile.
  bool check(CUptiResult R, const char *What);
  void warn(const std::string &Msg) { Log << "deepum-profile: " << Msg << "\n"; }
  /// Waits for the GPU, so a mark's time is after all work launched before it.
  void synchronize();
  void afterMark(const MarkEffect &E);
  void stopRecording();
  void setUpDevice();
  void sendTouchedBlocksHome();

  Recorder Rec;
  llvm::raw_fd_ostream Log;
  Session S;
  std::mutex MarkMu;
  std::once_flag DeviceOnce;
  bool HaveCallbacks = false;
  bool Buffers = false;
  std::atomic<bool> Stopped{false};
  /// Which profiler-API and NVTX callbacks are iteration marks.
  IterationMarker Marker;
  /// Kernels' parameter layouts, for the words of each launch's arguments.
  deepum::cupti::ParamLayouts Layouts;
  /// Functions without a layout already reported (a few, then silence).
  std::mutex NoLayoutMu;
  std::vector<const void *> NoLayoutSaid;
  /// Records a launch's arguments: the words of its parameter buffer, or that
  /// it names nothing (no layout).
  void recordArguments(uint64_t Correlation, const std::vector<deepum::cupti::ParamSlot> *Layout,
                       void *const *Params, void *const *Extra, const void *Function,
                       const char *Symbol);
};

Profiler *G = nullptr; // the one session of this process (InitializeInjection runs once)
/// The process that owns G: a fork()ed child (a DataLoader worker) inherits G
/// and must neither record nor write the profile at its exit.
pid_t OwnerPid = 0;
thread_local bool InsideProfiler = false; // our own CUDA calls must not re-enter the handlers
/// Depth of runtime launch calls on this thread (__cudaLaunchKernel may wrap
/// cudaLaunchKernel): blocks are sent home once, at the outermost exit, and
/// not again for the driver launch inside.
thread_local int RuntimeLaunchDepth = 0;
/// The arguments of launches: depth of runtime launch calls on this thread
/// (counted whatever the mode), the outermost one's correlation id (the one
/// the kernel record carries), and whether its arguments were recorded yet.
thread_local int ArgumentsDepth = 0;
thread_local uint64_t ArgumentsCorrelation = 0;
thread_local bool ArgumentsTaken = false;
/// This thread's part of the Marker's state: its NVTX push/pop nesting, and
/// whether it is inside cudaProfilerStart/Stop (whose own cuProfilerStart/Stop
/// is the same mark).
thread_local IterationMarker::ThreadState MarkThread;

CallSite siteOf(CUpti_ApiCallbackSite Site) {
  return Site == CUPTI_API_ENTER ? CallSite::Enter : CallSite::Exit;
}

bool isOwner() { return G && getpid() == OwnerPid; }

struct ReentryGuard {
  bool Active;
  ReentryGuard() : Active(!InsideProfiler) { InsideProfiler = true; }
  ~ReentryGuard() {
    if (Active)
      InsideProfiler = false;
  }
};

uint64_t Profiler::now() {
  uint64_t T = 0;
  if (cuptiGetTimestamp(&T) != CUPTI_SUCCESS)
    return 0;
  return T;
}

bool Profiler::check(CUptiResult R, const char *What) {
  if (R == CUPTI_SUCCESS)
    return true;
  const char *Str = nullptr;
  cuptiGetResultString(R, &Str);
  std::string Msg = std::string(What) + ": " + (Str ? Str : "unknown CUPTI error") + " (" +
                    std::to_string(static_cast<int>(R)) + ")";
  if (Rec.firstError().empty())
    warn(Msg);
  Rec.noteError(Msg);
  return false;
}

void CUPTIAPI Profiler::bufferRequested(uint8_t **Buffer, size_t *Size, size_t *MaxRecords) {
  *Buffer = static_cast<uint8_t *>(
      ::operator new(kActivityBufferBytes, std::align_val_t(kActivityBufferAlign), std::nothrow));
  *Size = *Buffer ? kActivityBufferBytes : 0; // 0: CUPTI drops (and counts) the records
  *MaxRecords = 0;                            // as many as fit
}

void CUPTIAPI Profiler::bufferCompleted(CUcontext Ctx, uint32_t StreamId, uint8_t *Buffer,
                                        size_t /*Size*/, size_t ValidSize) {
  if (G && Buffer) {
    size_t Dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(Ctx, StreamId, &Dropped) != CUPTI_SUCCESS)
      Dropped = 0;
    drainBuffer(
        [&](const void *Prev) -> const void * {
          CUpti_Activity *R =
              const_cast<CUpti_Activity *>(static_cast<const CUpti_Activity *>(Prev));
          if (cuptiActivityGetNextRecord(Buffer, ValidSize, &R) != CUPTI_SUCCESS)
            return nullptr;
          return R;
        },
        Dropped, G->Rec);
    if (Dropped)
      G->warn("CUPTI dropped " + std::to_string(Dropped) +
              " activity record(s) for lack of buffer space");
  }
  ::operator delete(Buffer, std::align_val_t(kActivityBufferAlign));
}

void Profiler::synchronize() {
  CUcontext Ctx = nullptr;
  if (cuCtxGetCurrent(&Ctx) != CUDA_SUCCESS || !Ctx)
    return; // no CUDA work on this thread's context: nothing to wait for
  if (cuCtxSynchronize() != CUDA_SUCCESS)
    Rec.noteError("cuCtxSynchronize failed at an iteration mark");
}

void Profiler::start() {
  Rec.setOrigin(now());
  S.started();
  CuptiPort &Port = processCuptiPort();
  Buffers = Port.registerActivityBuffers(&Profiler::bufferRequested, &Profiler::bufferCompleted);
  if (!Buffers) {
    std::string Msg = "CUPTI activity buffers are taken by another component; nothing can be "
                      "recorded";
    warn(Msg);
    Rec.noteError(Msg);
  }
  for (CUpti_ActivityKind K : kRecordedKinds)
    check(Port.enableActivity(K == CUPTI_ACTIVITY_KIND_KERNEL &&
                                      S.config().Mode == ProfileMode::Kernels
                                  ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                  : K),
          "enabling CUPTI activity");
  // Device facts; refused on some platforms without harm to the rest.
  (void)Port.enableActivity(CUPTI_ACTIVITY_KIND_DEVICE);
  (void)Port.enableActivity(CUPTI_ACTIVITY_KIND_PCIE);

  HaveCallbacks = Port.acquire();
  if (!HaveCallbacks) {
    std::string Why = Port.unavailableReason();
    if (Why.find("recording without callbacks") == std::string::npos)
      Why += "; " + withoutCallbacks(); // the executor's reason names the cause only
    warn(Why);
    Rec.noteError(Why);
    // UM counters need a context; without the resource callback try now.
    setUpDevice();
    return;
  }
  // A callback that cannot be enabled loses one feature, not the recording.
  auto Add = [&](CUpti_CallbackDomain Domain, CUpti_CallbackId Id, CuptiHandler H) {
    if (!Port.addHandler(Domain, Id, H, this))
      Rec.noteError("cannot enable CUPTI callback " + std::to_string(Id) + " of domain " +
                    std::to_string(static_cast<int>(Domain)));
  };
  Add(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &Profiler::onContextCreated);
  for (CUpti_CallbackId Id :
       {CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
        CUPTI_DRIVER_TRACE_CBID_cuProfilerStart, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop})
    Add(CUPTI_CB_DOMAIN_DRIVER_API, Id, &Profiler::onDriverApi);
  // cudaProfilerStart/Stop may or may not reach the driver's callbacks; both
  // are watched and a runtime call's own driver call is not counted twice.
  for (CUpti_CallbackId Id : {CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000})
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, Id, &Profiler::onRuntimeProfiler);
  // Every launch's arguments: in the runtime's call where it has a parameter
  // struct, else in the driver's (nested in the runtime's, or called alone).
  for (CUpti_CallbackId Id :
       {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
        CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz})
    Add(CUPTI_CB_DOMAIN_DRIVER_API, Id, &Profiler::onLaunchArguments);
  for (CUpti_CallbackId Id : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                              CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                              CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000})
    Add(CUPTI_CB_DOMAIN_RUNTIME_API, Id, &Profiler::onLaunchArguments);
  if (S.config().Mode == ProfileMode::AccessSet) {
    // Driver launches (Triton, graphs) and runtime launches, which may reach
    // the driver through entry points that fire no driver callback.
    for (CUpti_CallbackId Id :
         {CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
          CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz})
      Add(CUPTI_CB_DOMAIN_DRIVER_API, Id, &Profiler::onDriverApi);
    for (CUpti_CallbackId Id : {CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
                                CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
                                CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
                                CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
                                CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000})
      Add(CUPTI_CB_DOMAIN_RUNTIME_API, Id, &Profiler::onRuntimeLaunch);
  }
  if (Marker.usesRanges())
    for (CUpti_CallbackId Id :
         {CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
          CUPTI_CBID_NVTX_nvtxRangePop, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
          CUPTI_CBID_NVTX_nvtxDomainRangePop, CUPTI_CBID_NVTX_nvtxRangeStartA,
          CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxRangeEnd,
          CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeEnd})
      Add(CUPTI_CB_DOMAIN_NVTX, Id, &Profiler::onNvtx);
}

void Profiler::setUpDevice() {
  std::call_once(DeviceOnce, [this] {
    ReentryGuard Guard;
    int Driver = 0;
    cuDriverGetVersion(&Driver);
    int Runtime = 0;
    // The program's runtime, if it has one: the driver API cannot tell.
    using GetVersion = int (*)(int *);
    if (auto *F = reinterpret_cast<GetVersion>(dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion")))
      F(&Runtime);
    Rec.setVersions(static_cast<uint32_t>(Driver), static_cast<uint32_t>(Runtime));

    CUdevice Dev = 0;
    bool HaveDevice = cuCtxGetDevice(&Dev) == CUDA_SUCCESS;
    int Managed = 0;
    if (HaveDevice) {
      DeviceRecord D;
      D.Ordinal = static_cast<uint32_t>(Dev);
      char Name[256] = {};
      if (cuDeviceGetName(Name, sizeof(Name), Dev) == CUDA_SUCCESS)
        D.Name = Name;
      size_t Bytes = 0;
      if (cuDeviceTotalMem(&Bytes, Dev) == CUDA_SUCCESS)
        D.MemoryBytes = Bytes;
      int Major = 0, Minor = 0;
      cuDeviceGetAttribute(&Major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, Dev);
      cuDeviceGetAttribute(&Minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, Dev);
      D.ComputeCapability = static_cast<uint32_t>(Major * 10 + Minor);
      Rec.addDevice(D);
      cuDeviceGetAttribute(&Managed, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, Dev);
      Rec.setConcurrentManagedAccess(Managed != 0);
    }
    if (S.config().Mode == ProfileMode::Kernels) {
      // Their tracking slows memory-bound kernels: the durations would not be
      // the program's.
      Rec.setUmCounters(false, "--mode kernels records no Unified Memory counters");
      return;
    }
    if (HaveDevice && !Managed) {
      std::string Why = noConcurrentManagedAccessReason();
      warn(Why);
      Rec.setUmCounters(false, Why);
      return;
    }
    CUpti_ActivityUnifiedMemoryCounterConfig Config[5] = {};
    const CUpti_ActivityUnifiedMemoryCounterKind Kinds[5] = {
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THROTTLING};
    for (int I = 0; I < 5; ++I) {
      Config[I].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
      Config[I].kind = Kinds[I];
      Config[I].deviceId = static_cast<uint32_t>(Dev);
      Config[I].enable = 1;
    }
    CUptiResult R = cuptiActivityConfigureUnifiedMemoryCounter(Config, 5);
    if (R == CUPTI_SUCCESS) {
      // Remote map is missing on some drivers; the other counters suffice.
      CUpti_ActivityUnifiedMemoryCounterConfig Remote = Config[0];
      Remote.kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_REMOTE_MAP;
      (void)cuptiActivityConfigureUnifiedMemoryCounter(&Remote, 1);
      R = processCuptiPort().enableActivity(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
    }
    if (R != CUPTI_SUCCESS) {
      std::string Why = umCounterRefusal(static_cast<int>(R));
      warn(Why);
      Rec.setUmCounters(false, Why);
      return;
    }
    Rec.setUmCounters(true);
    if (S.config().Mode == ProfileMode::AccessSet && !HaveCallbacks)
      warn("--mode access-set needs CUPTI callbacks; recording natural faults");
  });
}

void Profiler::onContextCreated(void *Self, CUpti_CallbackDomain, CUpti_CallbackId, const void *) {
  static_cast<Profiler *>(Self)->setUpDevice();
}

void Profiler::onDriverApi(void *Self, CUpti_CallbackDomain, CUpti_CallbackId Cbid,
                           const void *Data) {
  auto *P = static_cast<Profiler *>(Self);
  const auto *CB = static_cast<const CUpti_CallbackData *>(Data);
  if (InsideProfiler || !isOwner())
    return;
  switch (Cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
    if (CB->callbackSite == CUPTI_API_EXIT &&
        *static_cast<const CUresult *>(CB->functionReturnValue) == CUDA_SUCCESS) {
      const auto *A = static_cast<const cuMemAllocManaged_params *>(CB->functionParams);
      P->Rec.addAllocation(static_cast<uint64_t>(*A->dptr), A->bytesize, 0, P->now(),
                           AllocationSource::Driver);
    }
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
    if (CB->callbackSite == CUPTI_API_ENTER) {
      const auto *A = static_cast<const cuMemFree_v2_params *>(CB->functionParams);
      P->Rec.addFree(static_cast<uint64_t>(A->dptr), P->now(), AllocationSource::Driver);
    }
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuProfilerStart:
    P->mark(P->Marker.profilerStart(MarkThread, ProfilerApi::Driver, siteOf(CB->callbackSite)));
    return;
  case CUPTI_DRIVER_TRACE_CBID_cuProfilerStop:
    P->mark(P->Marker.profilerStop(MarkThread, ProfilerApi::Driver, siteOf(CB->callbackSite)));
    return;
  default:
    // A kernel or graph launch in access-set mode.
    if (CB->callbackSite == CUPTI_API_EXIT && RuntimeLaunchDepth == 0)
      P->sendTouchedBlocksHome();
    return;
  }
}

void Profiler::onRuntimeProfiler(void *Self, CUpti_CallbackDomain, CUpti_CallbackId Cbid,
                                 const void *Data) {
  auto *P = static_cast<Profiler *>(Self);
  const auto *CB = static_cast<const CUpti_CallbackData *>(Data);
  if (InsideProfiler || !isOwner())
    return;
  CallSite Site = siteOf(CB->callbackSite);
  P->mark(Cbid == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
              ? P->Marker.profilerStart(MarkThread, ProfilerApi::Runtime, Site)
              : P->Marker.profilerStop(MarkThread, ProfilerApi::Runtime, Site));
}

void Profiler::onRuntimeLaunch(void *Self, CUpti_CallbackDomain, CUpti_CallbackId,
                               const void *Data) {
  const auto *CB = static_cast<const CUpti_CallbackData *>(Data);
  if (InsideProfiler || !isOwner())
    return;
  if (CB->callbackSite == CUPTI_API_ENTER) {
    ++RuntimeLaunchDepth;
    return;
  }
  if (RuntimeLaunchDepth > 0 && --RuntimeLaunchDepth > 0)
    return;
  static_cast<Profiler *>(Self)->sendTouchedBlocksHome();
}

void Profiler::recordArguments(uint64_t Correlation,
                               const std::vector<deepum::cupti::ParamSlot> *Layout,
                               void *const *Params, void *const *Extra, const void *Function,
                               const char *Symbol) {
  std::vector<uint64_t> Words;
  bool Known = false;
  if (Layout && Params) {
    deepum::cupti::appendArgumentWords(*Layout, Params, Words);
    Known = true;
  } else if (Extra) {
    Known = deepum::cupti::appendExtraBufferWords(Extra, Words);
  }
  Rec.addLaunchArguments(Correlation, now(), Known, Words);
  if (Known || !Function)
    return;
  std::lock_guard<std::mutex> L(NoLayoutMu);
  if (llvm::is_contained(NoLayoutSaid, Function) || NoLayoutSaid.size() > 8)
    return;
  NoLayoutSaid.push_back(Function);
  warn(std::string("no parameter layout for kernel ") + (Symbol ? Symbol : "(unnamed)") +
       (NoLayoutSaid.size() > 8 ? " (and others, not said)" : "") +
       ": its launches name no memory (cuFuncGetParamInfo needs CUDA 12.4 or later)");
}

void Profiler::onLaunchArguments(void *Self, CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                                 const void *Data) {
  auto *P = static_cast<Profiler *>(Self);
  const auto *CB = static_cast<const CUpti_CallbackData *>(Data);
  if (InsideProfiler || !isOwner())
    return;
  ReentryGuard Guard; // the layout queries are CUDA calls of our own
  if (Domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (CB->callbackSite == CUPTI_API_EXIT) {
      // A runtime launch whose arguments neither it nor a driver call showed
      // (CUDA 13's __cudaLaunchKernel has no parameter struct; a graph launch
      // runs kernels whose arguments were set at capture): they name nothing.
      if (ArgumentsDepth > 0 && --ArgumentsDepth == 0 && !ArgumentsTaken)
        P->Rec.addLaunchArguments(ArgumentsCorrelation, P->now(), false, {});
      return;
    }
    if (ArgumentsDepth++ > 0)
      return; // __cudaLaunchKernel wrapping cudaLaunchKernel: the outermost call's id
    ArgumentsCorrelation = CB->correlationId;
    ArgumentsTaken = false;
    const auto L = deepum::cupti::launchArgumentsOf(Domain, Cbid, CB->functionParams);
    const void *Func = L ? L->Function : nullptr;
    if (!Func)
      return; // the driver call inside may show them
    if (const auto *Layout = P->Layouts.ofHostStub(Func)) {
      P->recordArguments(CB->correlationId, Layout, L->Params, nullptr, Func, CB->symbolName);
      ArgumentsTaken = true;
    }
    return;
  }
  if (CB->callbackSite != CUPTI_API_ENTER || (ArgumentsDepth > 0 && ArgumentsTaken))
    return;
  const uint64_t Correlation = ArgumentsDepth > 0 ? ArgumentsCorrelation : CB->correlationId;
  // A graph launch has no arguments to read: its kernels' were set at capture.
  const auto L = deepum::cupti::launchArgumentsOf(Domain, Cbid, CB->functionParams);
  const void *Function = L ? L->Function : nullptr;
  P->recordArguments(Correlation, Function ? P->Layouts.ofFunction(Function) : nullptr,
                     L ? L->Params : nullptr, L ? L->Extra : nullptr, Function, CB->symbolName);
  if (ArgumentsDepth > 0)
    ArgumentsTaken = true;
}

/// The ASCII message of an NVTX event, or null (unicode, registered strings: no step range).
static const char *nvtxMessage(const nvtxEventAttributes_t *A) {
  if (!A || A->messageType != NVTX_MESSAGE_TYPE_ASCII)
    return nullptr;
  return A->message.ascii;
}

void Profiler::onNvtx(void *Self, CUpti_CallbackDomain, CUpti_CallbackId Cbid, const void *Data) {
  auto *P = static_cast<Profiler *>(Self);
  const auto *CB = static_cast<const CUpti_NvtxData *>(Data);
  if (!isOwner())
    return;
  IterationMarker &M = P->Marker;
  switch (Cbid) {
  case CUPTI_CBID_NVTX_nvtxRangePushA:
    P->mark(M.rangePush(MarkThread,
                        static_cast<const nvtxRangePushA_params *>(CB->functionParams)->message));
    return;
  case CUPTI_CBID_NVTX_nvtxRangePushEx:
    P->mark(M.rangePush(
        MarkThread,
        nvtxMessage(static_cast<const nvtxRangePushEx_params *>(CB->functionParams)->eventAttrib)));
    return;
  case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
    P->mark(M.rangePush(MarkThread, nvtxMessage(static_cast<const nvtxDomainRangePushEx_params *>(
                                                    CB->functionParams)
                                                    ->core.eventAttrib)));
    return;
  case CUPTI_CBID_NVTX_nvtxRangePop:
  case CUPTI_CBID_NVTX_nvtxDomainRangePop:
    P->mark(M.rangePop(MarkThread));
    return;
  case CUPTI_CBID_NVTX_nvtxRangeStartA:
  case CUPTI_CBID_NVTX_nvtxRangeStartEx:
  case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx: {
    const char *Name =
        Cbid == CUPTI_CBID_NVTX_nvtxRangeStartA
            ? static_cast<const nvtxRangeStartA_params *>(CB->functionParams)->message
        : Cbid == CUPTI_CBID_NVTX_nvtxRangeStartEx
            ? nvtxMessage(
                  static_cast<const nvtxRangeStartEx_params *>(CB->functionParams)->eventAttrib)
            : nvtxMessage(static_cast<const nvtxDomainRangeStartEx_params *>(CB->functionParams)
                              ->core.eventAttrib);
    std::optional<uint64_t> Id;
    if (CB->functionReturnValue)
      Id = *static_cast<const nvtxRangeId_t *>(CB->functionReturnValue);
    P->mark(M.rangeStart(Name, Id));
    return;
  }
  case CUPTI_CBID_NVTX_nvtxRangeEnd:
  case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
    P->mark(M.rangeEnd(
        Cbid == CUPTI_CBID_NVTX_nvtxRangeEnd
            ? static_cast<const nvtxRangeEnd_params *>(CB->functionParams)->id
            : static_cast<const nvtxDomainRangeEnd_params *>(CB->functionParams)->core.id));
    return;
  default:
    return;
  }
}

void Profiler::afterMark(const MarkEffect &E) {
  // Access-set mode: what the skipped iterations left on the GPU goes home
  // before the first recorded kernel.
  if (E.RecordingStarted)
    sendTouchedBlocksHome();
  if (E.IterationRecorded || E.RecordingFinished) {
    // The iteration's records must be in the recorder before it is written.
    check(processCuptiPort().flushActivity(), "flushing CUPTI activity buffers");
  }
  if (E.RecordingFinished)
    stopRecording();
  S.afterMark(E);
}

void Profiler::stopRecording() {
  if (Stopped.exchange(true))
    return;
  // The program carries on unprofiled: no more serialised kernels or UM counters.
  CuptiPort &Port = processCuptiPort();
  for (CUpti_ActivityKind K : kRecordedKinds)
    (void)Port.disableActivity(K);
  (void)Port.disableActivity(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  (void)Port.disableActivity(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
  (void)Port.flushActivity();
}

void Profiler::allocation(const void *Ptr, uint64_t Bytes, uint64_t Stream, uint64_t Call) {
  if (isOwner())
    Rec.addAllocation(reinterpret_cast<uint64_t>(Ptr), Bytes, Stream, now(),
                      AllocationSource::Allocator, Call);
}

void Profiler::release(const void *Ptr) {
  if (isOwner())
    Rec.addFree(reinterpret_cast<uint64_t>(Ptr), now(), AllocationSource::Allocator);
}

void Profiler::step() {
  if (!isOwner())
    return;
  ReentryGuard Guard;
  if (!Guard.Active || S.finished())
    return;
  std::lock_guard<std::mutex> L(MarkMu);
  synchronize();
  afterMark(Rec.step(now()));
}

void Profiler::beginIteration() {
  ReentryGuard Guard;
  if (!Guard.Active || S.finished())
    return;
  std::lock_guard<std::mutex> L(MarkMu);
  afterMark(Rec.beginIteration(now()));
}

void Profiler::endIteration() {
  ReentryGuard Guard;
  if (!Guard.Active || S.finished())
    return;
  std::lock_guard<std::mutex> L(MarkMu);
  synchronize();
  afterMark(Rec.endIteration(now()));
}

void Profiler::mark(MarkAction A) {
  switch (A) {
  case MarkAction::None:
    return;
  case MarkAction::Begin:
    beginIteration();
    return;
  case MarkAction::End:
    endIteration();
    return;
  }
}

void Profiler::sendTouchedBlocksHome() {
  // After each launch: wait for the kernel, collect the blocks that may have
  // come to the GPU (Recorder::takeRangesToSendHome), and migrate them back
  // to the host so the next kernel faults on all it touches. Only inside the
  // recorded window (or before any mark, when the iterations are found from
  // the period at the end): skipped iterations run natural.
  if (!Rec.accessSetActive() || Stopped)
    return;
  ReentryGuard Guard;
  if (!Guard.Active)
    return;
  synchronize();
  if (!check(processCuptiPort().flushActivity(), "flushing CUPTI activity buffers"))
    return;
  CUmemLocation Host = {};
  Host.type = CU_MEM_LOCATION_TYPE_HOST;
  bool Failed = false;
  for (auto [Begin, End] : Rec.takeRangesToSendHome())
    if (cuMemPrefetchAsync(static_cast<CUdeviceptr>(Begin), End - Begin, Host, 0, nullptr) !=
        CUDA_SUCCESS)
      Failed = true;
  if (Failed)
    Rec.noteError("cuMemPrefetchAsync to the host failed in access-set mode");
  // The migrations must finish before the next kernel runs, or it finds its
  // blocks still resident and does not fault.
  synchronize();
}

void Profiler::finishAtExit() {
  if (S.finished())
    return;
  std::lock_guard<std::mutex> L(MarkMu);
  // Buffers still held by CUPTI hold the last iteration's records.
  if (Buffers)
    (void)processCuptiPort().flushActivity();
  S.finish();
}

void atExit() {
  if (isOwner())
    G->finishAtExit();
}

} // namespace

extern "C" {

/// Called by the CUDA driver during cuInit when CUDA_INJECTION64_PATH names
/// this library. Returns 1 (success) even when the session is unusable: a
/// profiler must not stop the program.
__attribute__((visibility("default"))) int InitializeInjection(void) {
  if (G)
    return 1;
  auto Config = SessionConfig::fromEnvironment([](const char *N) { return std::getenv(N); });
  if (!Config) {
    llvm::errs() << "deepum-profile: not profiling: " << llvm::toString(Config.takeError()) << "\n";
    return 1;
  }
  // Every process of the run inherits the environment; the first to start
  // CUDA is the one profiled (a second one would overwrite the profile).
  if (Error E = claimSession(Config->Directory)) {
    llvm::errs() << "deepum-profile: not profiling process " << getpid() << ": "
                 << llvm::toString(std::move(E)) << "\n";
    return 1;
  }
  OwnerPid = getpid();
  G = new Profiler(std::move(*Config)); // never deleted: CUPTI may call back during exit
  G->start();
  setHookTarget(G);
  std::atexit(atExit);
  return 1;
}

__attribute__((visibility("default"))) const deepum_profiler_hooks *
deepum_profiler_get_hooks(void) {
  return hookTable();
}

} // extern "C"
