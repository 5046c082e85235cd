//===- CudaBackend.cpp - The executor on a real GPU ------------------------===//
//
// Launch observation: CUPTI API callbacks for the runtime and driver launch
// entry points. One launch can fire several of them (the runtime calls the
// driver; CUDA 13's <<<>>> goes through __cudaLaunchKernel), so a per-thread
// depth counter reports only the outermost decodable one. __cudaLaunchKernel
// has no published parameter struct: it is treated as opaque and the launch
// is decoded from the call nested in it.
//
// Stream capture: a launch into a capturing stream fires the same callbacks,
// but its kernel does not run (it becomes a graph node, reported when the
// graph is launched). The launch's stream is queried (cudaStreamIsCapturing
// for runtime callbacks, cuStreamIsCapturing for driver ones: a non-blocking
// query) and a captured launch is counted, not reported, with the callbacks
// nested in it.
//
// CUDA graphs: a graph launch is one callback for many kernels. When a graph
// is instantiated (resource callback GRAPHEXEC_CREATED) its kernel nodes are
// read once (in node order, which for captured graphs is capture order) and
// their execution IDs cached; a graph launch then reports them all. A launch
// of a graph never read (instantiated before tracking started) reports
// nothing: it is counted and logged once, and the plan steps aside for it.
//
// Streams: a _ptsz entry point's null stream is reported as the per-thread
// stream handle, so the executor orders its actions after the right stream.
//
// Driver functions for graph inspection come from cudaGetDriverEntryPointByVersion,
// so libdeepum has no link-time dependency on libcuda.
//
//===----------------------------------------------------------------------===//
#include "deepum/executor/cuda/CudaBackend.h"

#include "deepum/base/Hash.h"
#include "deepum/cupti/KernelParams.h"
#include "deepum/cupti/Subscriber.h"
#include "deepum/executor/Log.h"
#include "deepum/executor/cuda/LaunchDecoding.h"
#include "deepum/executor/cuda/Nvtx.h"
#include "deepum/format/Signature.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>

// Header-only NVTX3, from the CUDA toolkit; without it the ranges are no-ops.
#if __has_include(<nvtx3/nvToolsExt.h>)
#include <nvtx3/nvToolsExt.h>
#define DEEPUM_HAVE_NVTX 1
#endif

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

#include <unistd.h>

namespace deepum::executor::cuda {

using cupti::CuptiHandlerId;
using cupti::CuptiSubscriber;

namespace {

#ifdef DEEPUM_HAVE_NVTX
nvtxDomainHandle_t nvtxDeepumDomain() {
  static nvtxDomainHandle_t D = nvtxDomainCreateA("deepum");
  return D;
}
void nvtxPush(const char *Message) {
  nvtxEventAttributes_t A{};
  A.version = NVTX_VERSION;
  A.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  A.messageType = NVTX_MESSAGE_TYPE_ASCII;
  A.message.ascii = Message;
  nvtxDomainRangePushEx(nvtxDeepumDomain(), &A);
}
void nvtxPop() { nvtxDomainRangePop(nvtxDeepumDomain()); }
#else
void nvtxPush(const char *) {}
void nvtxPop() {}
#endif

} // namespace

NvtxHooks &nvtxHooks() {
  static NvtxHooks Hooks{&nvtxPush, &nvtxPop};
  return Hooks;
}

NvtxBatchRange::NvtxBatchRange(const char *What, size_t Ranges, uint64_t Bytes) {
  char Message[96];
  std::snprintf(Message, sizeof(Message), "%s %zu range%s, %.1f MiB", What, Ranges,
                Ranges == 1 ? "" : "s", static_cast<double>(Bytes) / (1024.0 * 1024.0));
  nvtxHooks().Push(Message);
}

namespace {

/// The runtime keeps one last error per thread, and libdeepum's calls run on
/// the program's threads (inside its launches' callbacks, its allocations).
/// A failing call of ours must not surface in the program's next
/// cudaGetLastError, so it is cleared; but clearing would also swallow an
/// error of the program's own still pending (a failed launch that PyTorch
/// checks right after it returns), so then it is left: the program sees an
/// error either way. ErrorScope notes, for the backend call that opens it,
/// whether the program had one pending.
thread_local bool ProgramErrorPending = false;

class ErrorScope {
public:
  ErrorScope() : Outer(ProgramErrorPending) {
    ProgramErrorPending = cudaPeekAtLastError() != cudaSuccess;
  }
  ~ErrorScope() { ProgramErrorPending = Outer; }
  ErrorScope(const ErrorScope &) = delete;
  ErrorScope &operator=(const ErrorScope &) = delete;

private:
  bool Outer;
};

/// Clears the error a call of ours just left, unless the program's own is pending.
void clearOwnError() {
  if (!ProgramErrorPending)
    (void)cudaGetLastError();
}

BackendStatus check(cudaError_t E, const char *Call) {
  if (E == cudaSuccess)
    return BackendStatus::success();
  clearOwnError();
  return BackendStatus::failure(static_cast<int>(E), Call, cudaGetErrorString(E));
}

/// Makes `Device` current for the scope when it is not already (and opens the
/// call's ErrorScope first).
class DeviceGuard {
public:
  explicit DeviceGuard(int Device) {
    if (cudaGetDevice(&Previous) == cudaSuccess && Previous != Device &&
        cudaSetDevice(Device) == cudaSuccess)
      Restore = true;
  }
  ~DeviceGuard() {
    if (Restore)
      (void)cudaSetDevice(Previous);
  }
  DeviceGuard(const DeviceGuard &) = delete;
  DeviceGuard &operator=(const DeviceGuard &) = delete;

private:
  ErrorScope Errors; // before any call of the guard's own
  int Previous = 0;
  bool Restore = false;
};

cudaMemLocation locationOf(int Location) {
  cudaMemLocation L{};
  if (Location == kHostLocation) {
    L.type = cudaMemLocationTypeHost;
    L.id = 0;
  } else {
    L.type = cudaMemLocationTypeDevice;
    L.id = Location;
  }
  return L;
}

struct DriverApi {
  decltype(&cuGraphGetNodes) GetNodes = nullptr;
  decltype(&cuGraphNodeGetType) NodeGetType = nullptr;
  decltype(&cuGraphKernelNodeGetParams_v2) KernelNodeGetParams = nullptr;
  decltype(&cuGraphChildGraphNodeGetGraph) ChildGraph = nullptr;
  decltype(&cuFuncGetName) FuncGetName = nullptr;
  bool Ok = false;
  // Optional (not part of Ok): without it driver-domain launches are taken as
  // not captured.
  CUresult (*StreamIsCapturing)(CUstream, CUstreamCaptureStatus *) = nullptr;
};

template <typename F> bool entry(const char *Name, F &Out) {
  void *P = nullptr;
  cudaDriverEntryPointQueryResult Q{};
  if (cudaGetDriverEntryPointByVersion(Name, &P, 13000, cudaEnableDefault, &Q) != cudaSuccess ||
      Q != cudaDriverEntryPointSuccess || !P)
    return false;
  Out = reinterpret_cast<F>(P);
  return true;
}

const DriverApi &driver() {
  static const DriverApi Api = [] {
    DriverApi A;
    A.Ok = entry("cuGraphGetNodes", A.GetNodes) && entry("cuGraphNodeGetType", A.NodeGetType) &&
           entry("cuGraphKernelNodeGetParams", A.KernelNodeGetParams) &&
           entry("cuGraphChildGraphNodeGetGraph", A.ChildGraph) &&
           entry("cuFuncGetName", A.FuncGetName);
    (void)entry("cuStreamIsCapturing", A.StreamIsCapturing);
    return A;
  }();
  return Api;
}

/// The FNV-1a state after a kernel's name, cached per function: names are long
/// and hashing them at every launch would dominate the hook's cost. A function
/// handle can be reused after its module is unloaded, so a hit is trusted only
/// when the name is the same (same pointer, or else the same text).
uint64_t nameHash(const void *Function, const char *Name) {
  struct Entry {
    const char *Pointer;
    std::string Text;
    uint64_t Hash;
  };
  thread_local std::unordered_map<const void *, Entry> Cache;
  const char *N = Name ? Name : "";
  if (Function) {
    auto It = Cache.find(Function);
    if (It != Cache.end()) {
      if (It->second.Pointer == N)
        return It->second.Hash;
      if (It->second.Text == N) {
        It->second.Pointer = N;
        return It->second.Hash;
      }
    }
  }
  uint64_t H = base::fnv1a(N, std::strlen(N));
  if (Function && Cache.size() < 65536)
    Cache[Function] = Entry{N, N, H};
  return H;
}

uint64_t finishId(uint64_t H, const format::LaunchConfig &C) {
  for (uint32_t W : {C.GridX, C.GridY, C.GridZ, C.BlockX, C.BlockY, C.BlockZ, C.SharedMemoryBytes})
    H = base::fnv1aWord(W, H);
  return H;
}

class CudaBackend;

/// The launch tracker: CUPTI handlers and the graph table.
struct Tracker {
  std::atomic<LaunchObserver *> Observer{nullptr};
  std::shared_mutex GraphsMu;
  std::unordered_map<const void *, std::vector<uint64_t>> Graphs; // CUgraphExec -> IDs
  std::atomic<uint64_t> Undecoded{0};
  std::atomic<uint64_t> Captured{0};            // launches into a capturing stream, not reported
  std::atomic<uint64_t> UnseenGraphLaunches{0}; // graphs whose kernels were never read
  std::atomic<bool> UnseenGraphWarned{false};
  std::vector<CuptiHandlerId> Handlers;
  /// Kernels' parameter layouts, for the launch-time guard's words.
  deepum::cupti::ParamLayouts Layouts;
};

Tracker &tracker() {
  static Tracker *T = new Tracker(); // callbacks may arrive during exit
  return *T;
}

struct ThreadLaunch {
  int Depth = 0;  // decodable launch callbacks in progress
  int Opaque = 0; // opaque outer launches in progress
  bool DecodedInOpaque = false;
  bool Silent = false; // the outermost launch in progress is captured or unseen
  int Device = 0;
  StreamHandle Stream = 0;
};
thread_local ThreadLaunch TL;

int deviceOf(CUcontext Ctx) {
  thread_local CUcontext LastCtx = nullptr;
  thread_local int LastDevice = 0;
  if (Ctx && Ctx == LastCtx)
    return LastDevice;
  uint32_t Id = 0;
  if (Ctx && cuptiGetDeviceId(Ctx, &Id) == CUPTI_SUCCESS) {
    LastCtx = Ctx;
    LastDevice = static_cast<int>(Id);
    return LastDevice;
  }
  int Dev = 0;
  (void)cudaGetDevice(&Dev);
  return Dev;
}

void appendGraphKernels(CUgraph G, std::vector<uint64_t> &Ids, int Depth) {
  const DriverApi &D = driver();
  size_t N = 0;
  if (Depth > 8 || D.GetNodes(G, nullptr, &N) != CUDA_SUCCESS || N == 0)
    return;
  std::vector<CUgraphNode> Nodes(N);
  if (D.GetNodes(G, Nodes.data(), &N) != CUDA_SUCCESS)
    return;
  for (size_t I = 0; I < N; ++I) {
    CUgraphNodeType Type{};
    if (D.NodeGetType(Nodes[I], &Type) != CUDA_SUCCESS)
      continue;
    if (Type == CU_GRAPH_NODE_TYPE_GRAPH) {
      CUgraph Child = nullptr;
      if (D.ChildGraph(Nodes[I], &Child) == CUDA_SUCCESS)
        appendGraphKernels(Child, Ids, Depth + 1);
      continue;
    }
    if (Type != CU_GRAPH_NODE_TYPE_KERNEL)
      continue;
    CUDA_KERNEL_NODE_PARAMS P{};
    if (D.KernelNodeGetParams(Nodes[I], &P) != CUDA_SUCCESS)
      continue;
    const char *Name = nullptr;
    if (D.FuncGetName(&Name, P.func) != CUDA_SUCCESS)
      Name = nullptr;
    Ids.push_back(finishId(nameHash(P.func, Name), {P.gridDimX, P.gridDimY, P.gridDimZ, P.blockDimX,
                                                    P.blockDimY, P.blockDimZ, P.sharedMemBytes}));
  }
}

void onResource(void *, CUpti_CallbackDomain, CUpti_CallbackId Cbid, const void *Data) {
  const auto *R = static_cast<const CUpti_ResourceData *>(Data);
  const auto *G = static_cast<const CUpti_GraphData *>(R->resourceDescriptor);
  if (!G)
    return;
  Tracker &T = tracker();
  if (Cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
    if (!driver().Ok)
      return;
    std::vector<uint64_t> Ids;
    appendGraphKernels(G->graph, Ids, 0);
    std::unique_lock<std::shared_mutex> Lock(T.GraphsMu);
    T.Graphs[G->graphExec] = std::move(Ids);
  } else if (Cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING) {
    std::unique_lock<std::shared_mutex> Lock(T.GraphsMu);
    T.Graphs.erase(G->graphExec);
  }
}

/// Whether a launch into `Stream` is captured rather than run. `PerThread`: a
/// _ptsz entry point, where the null stream is the per-thread stream. A failed
/// query is taken as "not capturing" (the launch reports as before).
bool capturing(CUpti_CallbackDomain Domain, StreamHandle Stream, bool PerThread) {
  if (Domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    cudaStream_t S = reinterpret_cast<cudaStream_t>(Stream);
    if (!S && PerThread)
      S = cudaStreamPerThread;
    cudaStreamCaptureStatus Status = cudaStreamCaptureStatusNone;
    ErrorScope Errors;
    if (cudaStreamIsCapturing(S, &Status) != cudaSuccess) {
      clearOwnError();
      return false;
    }
    return Status != cudaStreamCaptureStatusNone;
  }
  const DriverApi &D = driver();
  if (!D.StreamIsCapturing)
    return false;
  CUstream S = reinterpret_cast<CUstream>(Stream);
  if (!S && PerThread)
    S = CU_STREAM_PER_THREAD;
  CUstreamCaptureStatus Status = CU_STREAM_CAPTURE_STATUS_NONE;
  return D.StreamIsCapturing(S, &Status) == CUDA_SUCCESS && Status != CU_STREAM_CAPTURE_STATUS_NONE;
}

enum class Decoded {
  No,       // carries no launch we can name
  Reported, // reported to the observer
  Captured, // a launch into a capturing stream: counted, not reported
  Unseen,   // a graph launch whose kernels were never read: counted, not reported
};

void begin(int Device, StreamHandle Stream, const uint64_t *Ids, size_t Count) {
  TL.Device = Device;
  TL.Stream = Stream;
  if (LaunchObserver *O = tracker().Observer.load(std::memory_order_acquire))
    O->launchBegin(Device, Stream, Ids, Count);
}

/// The words of a launch's arguments to the observer (its launch-time guard):
/// read by the kernel's parameter layout from its parameter pointers, or from
/// the `extra` buffer (deepum::cupti::launchArgumentsOf); when neither can
/// be read, that they are unknown (the kernel may touch anything).
void sendArguments(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                   const CUpti_CallbackData *Cb) {
  LaunchObserver *O = tracker().Observer.load(std::memory_order_acquire);
  if (!O)
    return;
  const auto L = deepum::cupti::launchArgumentsOf(Domain, Cbid, Cb->functionParams);
  if (!L || !L->Function)
    return O->launchArgumentsUnknown(TL.Device, TL.Stream);
  const void *Fn = L->Function;
  void *const *Args = L->Params;
  const bool HostStub = L->HostStub;
  thread_local std::vector<uint64_t> Words;
  Words.clear();
  const std::vector<deepum::cupti::ParamSlot> *Layout = nullptr;
  if (HostStub) {
    ErrorScope Errors; // cudaGetFuncBySymbol's error, should it fail, is ours
    Layout = tracker().Layouts.ofHostStub(Fn);
    if (!Layout)
      clearOwnError();
  } else {
    Layout = tracker().Layouts.ofFunction(Fn);
  }
  if (Layout && Args)
    deepum::cupti::appendArgumentWords(*Layout, Args, Words);
  else if (!deepum::cupti::appendExtraBufferWords(L->Extra, Words))
    return O->launchArgumentsUnknown(TL.Device, TL.Stream);
  O->launchArguments(TL.Device, TL.Stream, Words);
}

/// The stream a launch runs on: a _ptsz entry point's null stream is the
/// calling thread's per-thread stream (cudaStreamPerThread, CU_STREAM_PER_THREAD:
/// the same handle), not the legacy default stream.
StreamHandle launchStream(StreamHandle Stream, bool PerThread) {
  return !Stream && PerThread ? reinterpret_cast<StreamHandle>(cudaStreamPerThread) : Stream;
}

/// A graph launch: the kernels cached when the graph was instantiated. A graph
/// instantiated before tracking started (or whose nodes could not be read) is
/// unknown: its kernels run unseen, so the plan steps aside for them; that is
/// counted and said once.
Decoded decodeGraph(CUpti_CallbackDomain Domain, const void *Exec, StreamHandle Stream,
                    bool PerThread, const CUpti_CallbackData *Cb) {
  Tracker &T = tracker();
  std::vector<uint64_t> Ids;
  {
    std::shared_lock<std::shared_mutex> Lock(T.GraphsMu);
    auto It = T.Graphs.find(Exec);
    if (It == T.Graphs.end()) {
      T.UnseenGraphLaunches.fetch_add(1, std::memory_order_relaxed);
      DEEPUM_LOG_ONCE(T.UnseenGraphWarned, LogLevel::Warn,
                      "a CUDA graph launch whose kernels deepum cannot see (graph instantiated "
                      "before deepum started, or its nodes unreadable): the plan steps aside for "
                      "such launches");
      // Its kernels may touch anything: nothing may stay copied out.
      if (LaunchObserver *O = T.Observer.load(std::memory_order_acquire))
        O->launchArgumentsUnknown(deviceOf(Cb->context), launchStream(Stream, PerThread));
      return Decoded::Unseen;
    }
    if (It->second.empty()) // no kernel nodes (copies, memsets): nothing to report
      return Decoded::No;
    Ids = It->second;
  }
  Stream = launchStream(Stream, PerThread);
  if (capturing(Domain, Stream, PerThread)) // becomes a child-graph node
    return Decoded::Captured;
  begin(deviceOf(Cb->context), Stream, Ids.data(), Ids.size());
  // A graph's kernels' arguments are not read at launch.
  if (LaunchObserver *O = T.Observer.load(std::memory_order_acquire))
    O->launchArgumentsUnknown(TL.Device, TL.Stream);
  return Decoded::Reported;
}

/// Decodes one launch callback.
Decoded decode(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid, const CUpti_CallbackData *Cb) {
  format::LaunchConfig C;
  const void *Fn = nullptr;
  StreamHandle Stream = 0;
  bool PerThread = false;
  if (Domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    switch (Cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      // The cooperative params struct has the same layout.
      PerThread = Cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
                  Cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000;
      const auto *P = static_cast<const cudaLaunchKernel_v7000_params *>(Cb->functionParams);
      Fn = P->func;
      C = {P->gridDim.x,
           P->gridDim.y,
           P->gridDim.z,
           P->blockDim.x,
           P->blockDim.y,
           P->blockDim.z,
           static_cast<uint32_t>(P->sharedMem)};
      Stream = reinterpret_cast<StreamHandle>(P->stream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto *P = static_cast<const cudaLaunchKernelExC_v11060_params *>(Cb->functionParams);
      if (!P->config)
        return Decoded::No;
      PerThread = Cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060;
      Fn = P->func;
      C = {P->config->gridDim.x,
           P->config->gridDim.y,
           P->config->gridDim.z,
           P->config->blockDim.x,
           P->config->blockDim.y,
           P->config->blockDim.z,
           static_cast<uint32_t>(P->config->dynamicSmemBytes)};
      Stream = reinterpret_cast<StreamHandle>(P->config->stream);
      break;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: {
      const auto *P = static_cast<const cudaGraphLaunch_v10000_params *>(Cb->functionParams);
      return decodeGraph(Domain, P->graphExec, reinterpret_cast<StreamHandle>(P->stream),
                         Cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000, Cb);
    }
    default:
      return Decoded::No;
    }
  } else {
    switch (Cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto *P = static_cast<const cuLaunchKernel_params *>(Cb->functionParams);
      PerThread = Cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
                  Cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz;
      Fn = P->f;
      C = {P->gridDimX,  P->gridDimY,  P->gridDimZ,      P->blockDimX,
           P->blockDimY, P->blockDimZ, P->sharedMemBytes};
      Stream = reinterpret_cast<StreamHandle>(P->hStream);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto *P = static_cast<const cuLaunchKernelEx_params *>(Cb->functionParams);
      if (!P->config)
        return Decoded::No;
      PerThread = Cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz;
      Fn = P->f;
      C = {P->config->gridDimX,      P->config->gridDimY,  P->config->gridDimZ,
           P->config->blockDimX,     P->config->blockDimY, P->config->blockDimZ,
           P->config->sharedMemBytes};
      Stream = reinterpret_cast<StreamHandle>(P->config->hStream);
      break;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
    case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: {
      const auto *P = static_cast<const cuGraphLaunch_params *>(Cb->functionParams);
      return decodeGraph(Domain, P->hGraph, reinterpret_cast<StreamHandle>(P->hStream),
                         Cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz, Cb);
    }
    default:
      return Decoded::No;
    }
  }
  if (capturing(Domain, Stream, PerThread))
    return Decoded::Captured;
  Stream = launchStream(Stream, PerThread);
  const char *Name = Cb->symbolName;
  if (!Name && Domain == CUPTI_CB_DOMAIN_DRIVER_API && driver().FuncGetName &&
      driver().FuncGetName(&Name, static_cast<CUfunction>(const_cast<void *>(Fn))) != CUDA_SUCCESS)
    Name = nullptr;
  uint64_t Id = finishId(nameHash(Fn, Name), C);
  begin(deviceOf(Cb->context), Stream, &Id, 1);
  sendArguments(Domain, Cbid, Cb);
  return Decoded::Reported;
}

void onLaunch(void *, CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid, const void *Data) {
  const auto *Cb = static_cast<const CUpti_CallbackData *>(Data);
  const bool Opaque = Domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
                      (Cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000 ||
                       Cbid == CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000);
  if (Cb->callbackSite == CUPTI_API_ENTER) {
    if (Opaque) {
      if (TL.Opaque++ == 0)
        TL.DecodedInOpaque = false;
      return;
    }
    if (TL.Depth++ > 0)
      return; // nested in a launch already reported (or captured)
    const Decoded D = decode(Domain, Cbid, Cb);
    if (D == Decoded::No) {
      TL.Depth--;
      return;
    }
    // Captured or unseen: the callbacks nested in it (cudaGraphLaunch calls
    // cuGraphLaunch) belong to the same launch and are not counted again.
    TL.Silent = D != Decoded::Reported;
    if (D == Decoded::Captured)
      tracker().Captured.fetch_add(1, std::memory_order_relaxed);
    TL.DecodedInOpaque = true;
    return;
  }
  if (Opaque) {
    if (--TL.Opaque == 0 && !TL.DecodedInOpaque)
      tracker().Undecoded.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (TL.Depth == 0)
    return; // enter was not decodable
  if (--TL.Depth > 0)
    return;
  if (TL.Silent) {
    TL.Silent = false;
    return;
  }
  if (LaunchObserver *O = tracker().Observer.load(std::memory_order_acquire))
    O->launchEnd(TL.Device, TL.Stream);
}

/// cudaDeviceSynchronize / cuCtxSynchronize at entry: the observer hears of
/// it before the host waits (the copy path brings back what it holds). The
/// runtime call's nested driver call is the same synchronization: once.
void onSynchronize(void *, CUpti_CallbackDomain Domain, CUpti_CallbackId, const void *Data) {
  const auto *Cb = static_cast<const CUpti_CallbackData *>(Data);
  thread_local int Depth = 0;
  if (Cb->callbackSite == CUPTI_API_EXIT) {
    Depth = std::max(0, Depth - 1);
    return;
  }
  if (Depth++ > 0)
    return;
  (void)Domain;
  if (LaunchObserver *O = tracker().Observer.load(std::memory_order_acquire))
    O->hostSynchronize(deviceOf(Cb->context));
}

class CudaBackend final : public Backend {
public:
  const char *name() const override { return "cuda"; }

  int deviceCount() override {
    ErrorScope Errors;
    int N = 0;
    if (cudaGetDeviceCount(&N) != cudaSuccess) {
      clearOwnError();
      return 0;
    }
    return N;
  }

  uint64_t deviceMemoryBytes(int Device) override {
    DeviceGuard G(Device);
    size_t Free = 0, Total = 0;
    if (cudaMemGetInfo(&Free, &Total) != cudaSuccess) {
      clearOwnError();
      return 0;
    }
    return Total;
  }

  BackendStatus allocateManaged(int Device, uint64_t Bytes, void **Out) override {
    DeviceGuard G(Device);
    return check(cudaMallocManaged(Out, Bytes, cudaMemAttachGlobal), "cudaMallocManaged");
  }

  BackendStatus freeManaged(int Device, void *Ptr) override {
    DeviceGuard G(Device);
    return check(cudaFree(Ptr), "cudaFree");
  }

  BackendStatus createStream(int Device, StreamHandle *Out) override {
    DeviceGuard G(Device);
    cudaStream_t S = nullptr;
    // Non-blocking: the action stream must not serialise with the legacy
    // default stream (batch calls also refuse the legacy stream).
    BackendStatus St =
        check(cudaStreamCreateWithFlags(&S, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    *Out = reinterpret_cast<StreamHandle>(S);
    return St;
  }

  BackendStatus createEvent(int Device, EventHandle *Out) override {
    return createEventWithFlags(Device, cudaEventDisableTiming, Out);
  }

  BackendStatus createTimedEvent(int Device, EventHandle *Out) override {
    return createEventWithFlags(Device, cudaEventDefault, Out);
  }

  bool elapsedNs(int, EventHandle Start, EventHandle End, uint64_t &Ns) override {
    ErrorScope Errors;
    float Ms = 0;
    if (cudaEventElapsedTime(&Ms, reinterpret_cast<cudaEvent_t>(Start),
                             reinterpret_cast<cudaEvent_t>(End)) != cudaSuccess) {
      clearOwnError();
      return false;
    }
    Ns = static_cast<uint64_t>(std::max(0.0f, Ms) * 1e6f);
    return true;
  }

  BackendStatus destroyEvent(int, EventHandle Event) override {
    ErrorScope Errors;
    return check(cudaEventDestroy(reinterpret_cast<cudaEvent_t>(Event)), "cudaEventDestroy");
  }

  BackendStatus recordEvent(int, EventHandle Event, StreamHandle Stream) override {
    ErrorScope Errors;
    return check(cudaEventRecord(reinterpret_cast<cudaEvent_t>(Event),
                                 reinterpret_cast<cudaStream_t>(Stream)),
                 "cudaEventRecord");
  }

  BackendStatus streamWaitEvent(int, StreamHandle Stream, EventHandle Event) override {
    ErrorScope Errors;
    return check(cudaStreamWaitEvent(reinterpret_cast<cudaStream_t>(Stream),
                                     reinterpret_cast<cudaEvent_t>(Event), 0),
                 "cudaStreamWaitEvent");
  }

  EventState queryEvent(int, EventHandle Event) override {
    ErrorScope Errors;
    cudaError_t E = cudaEventQuery(reinterpret_cast<cudaEvent_t>(Event));
    if (E == cudaSuccess)
      return EventState::Complete;
    clearOwnError();
    return E == cudaErrorNotReady ? EventState::Pending : EventState::Error;
  }

  BackendStatus prefetchBatch(int Device, std::span<const MemRange> Ranges, int Location,
                              StreamHandle Stream) override {
    if (Ranges.empty())
      return BackendStatus::success();
    DeviceGuard G(Device);
    std::vector<void *> Ptrs(Ranges.size());
    std::vector<size_t> Sizes(Ranges.size());
    uint64_t Bytes = 0;
    for (size_t I = 0; I < Ranges.size(); ++I) {
      Ptrs[I] = reinterpret_cast<void *>(Ranges[I].Address);
      Sizes[I] = Ranges[I].Bytes;
      Bytes += Ranges[I].Bytes;
    }
    NvtxBatchRange Nvtx(Location == kHostLocation ? "evict" : "prefetch", Ranges.size(), Bytes);
    cudaMemLocation Loc = locationOf(Location);
    size_t LocIdx = 0;
    cudaError_t E = cudaMemPrefetchBatchAsync(Ptrs.data(), Sizes.data(), Ptrs.size(), &Loc, &LocIdx,
                                              1, 0, reinterpret_cast<cudaStream_t>(Stream));
    if (E != cudaErrorNotSupported && E != cudaErrorInvalidValue)
      return check(E, "cudaMemPrefetchBatchAsync");
    // Older drivers: one call per range.
    clearOwnError();
    for (size_t I = 0; I < Ptrs.size(); ++I) {
      BackendStatus S = check(
          cudaMemPrefetchAsync(Ptrs[I], Sizes[I], Loc, 0, reinterpret_cast<cudaStream_t>(Stream)),
          "cudaMemPrefetchAsync");
      if (!S.ok())
        return S;
    }
    return BackendStatus::success();
  }

  BackendStatus discardBatch(int Device, std::span<const MemRange> Ranges,
                             StreamHandle Stream) override {
    if (Ranges.empty())
      return BackendStatus::success();
    DeviceGuard G(Device);
    std::vector<void *> Ptrs(Ranges.size());
    std::vector<size_t> Sizes(Ranges.size());
    uint64_t Bytes = 0;
    for (size_t I = 0; I < Ranges.size(); ++I) {
      Ptrs[I] = reinterpret_cast<void *>(Ranges[I].Address);
      Sizes[I] = Ranges[I].Bytes;
      Bytes += Ranges[I].Bytes;
    }
    NvtxBatchRange Nvtx("discard", Ranges.size(), Bytes);
    return check(cudaMemDiscardBatchAsync(Ptrs.data(), Sizes.data(), Ptrs.size(), 0,
                                          reinterpret_cast<cudaStream_t>(Stream)),
                 "cudaMemDiscardBatchAsync");
  }

  /// Refused without a call where it would take more than half of the
  /// machine's memory: pinned pages cannot be swapped, and the training
  /// process needs the rest.
  BackendStatus allocatePinned(int Device, uint64_t Bytes, void **Out) override {
    *Out = nullptr;
    const long Pages = sysconf(_SC_PHYS_PAGES), Page = sysconf(_SC_PAGESIZE);
    const uint64_t Physical =
        Pages > 0 && Page > 0 ? static_cast<uint64_t>(Pages) * static_cast<uint64_t>(Page) : 0;
    if (Physical && Bytes > Physical / 2)
      return BackendStatus::failure(
          static_cast<int>(cudaErrorMemoryAllocation), "cudaHostAlloc",
          "more than half of this machine's " + std::to_string(Physical >> 20) + " MiB of memory");
    DeviceGuard G(Device);
    return check(cudaHostAlloc(Out, Bytes, cudaHostAllocPortable), "cudaHostAlloc");
  }

  BackendStatus freePinned(int Device, void *Ptr) override {
    DeviceGuard G(Device);
    return check(cudaFreeHost(Ptr), "cudaFreeHost");
  }

  BackendStatus copyAsync(int Device, void *Dst, const void *Src, uint64_t Bytes,
                          StreamHandle Stream) override {
    DeviceGuard G(Device);
    NvtxBatchRange Nvtx("copy", 1, Bytes);
    return check(cudaMemcpyAsync(Dst, Src, Bytes, cudaMemcpyDefault,
                                 reinterpret_cast<cudaStream_t>(Stream)),
                 "cudaMemcpyAsync");
  }

  /// Every decoded launch reaches the observer with its words or as
  /// unknown, and so does a graph launch whose kernels are unseen.
  bool reportsLaunchArguments() const override { return true; }

  BackendStatus advise(int Device, MemRange Range, MemAdvice Advice) override {
    ErrorScope Errors;
    cudaMemoryAdvise A = cudaMemAdviseSetReadMostly;
    cudaMemLocation Loc = locationOf(Device);
    switch (Advice) {
    case MemAdvice::SetReadMostly:
      A = cudaMemAdviseSetReadMostly;
      break;
    case MemAdvice::UnsetReadMostly:
      A = cudaMemAdviseUnsetReadMostly;
      break;
    case MemAdvice::SetPreferredLocationDevice:
      A = cudaMemAdviseSetPreferredLocation;
      break;
    case MemAdvice::SetPreferredLocationHost:
      A = cudaMemAdviseSetPreferredLocation;
      Loc = locationOf(kHostLocation);
      break;
    case MemAdvice::UnsetPreferredLocation:
      A = cudaMemAdviseUnsetPreferredLocation;
      break;
    case MemAdvice::SetAccessedByDevice:
      A = cudaMemAdviseSetAccessedBy;
      break;
    case MemAdvice::UnsetAccessedByDevice:
      A = cudaMemAdviseUnsetAccessedBy;
      break;
    }
    return check(cudaMemAdvise(reinterpret_cast<void *>(Range.Address), Range.Bytes, A, Loc),
                 "cudaMemAdvise");
  }

  bool startLaunchTracking(LaunchObserver *Observer, std::string &Why) override {
    CuptiSubscriber &S = CuptiSubscriber::instance();
    if (!S.acquire()) {
      Why = S.unavailableReason();
      return false;
    }
    Tracker &T = tracker();
    T.Observer.store(Observer, std::memory_order_release);
    if (!T.Handlers.empty())
      return true; // handlers already in place (a second executor in one process)
    int Added = 0;
    for (const detail::LaunchCallback &L : detail::launchCallbacks())
      if (CuptiHandlerId H = S.addHandler(L.Domain, L.Id, &onLaunch, nullptr)) {
        T.Handlers.push_back(H);
        ++Added;
      }
    for (const auto &[Domain, Id] :
         {std::pair{CUPTI_CB_DOMAIN_RUNTIME_API,
                    CUpti_CallbackId{CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020}},
          std::pair{CUPTI_CB_DOMAIN_DRIVER_API,
                    CUpti_CallbackId{CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize}}})
      if (CuptiHandlerId H = S.addHandler(Domain, Id, &onSynchronize, nullptr))
        T.Handlers.push_back(H);
    for (CUpti_CallbackId Id : {CUpti_CallbackId{CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED},
                                CUpti_CallbackId{CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING}})
      if (CuptiHandlerId H = S.addHandler(CUPTI_CB_DOMAIN_RESOURCE, Id, &onResource, nullptr))
        T.Handlers.push_back(H);
    if (Added == 0) {
      T.Observer.store(nullptr);
      Why = "no CUPTI launch callback could be enabled";
      return false;
    }
    return true;
  }

  void stopLaunchTracking() override {
    Tracker &T = tracker();
    T.Observer.store(nullptr, std::memory_order_release);
  }

private:
  static BackendStatus createEventWithFlags(int Device, unsigned Flags, EventHandle *Out) {
    DeviceGuard G(Device);
    cudaEvent_t E = nullptr;
    BackendStatus St = check(cudaEventCreateWithFlags(&E, Flags), "cudaEventCreateWithFlags");
    *Out = reinterpret_cast<EventHandle>(E);
    return St;
  }
};

} // namespace

std::unique_ptr<Backend> createCudaBackend() { return std::make_unique<CudaBackend>(); }

namespace detail {
void onLaunchCallback(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                      const CUpti_CallbackData *Data) {
  onLaunch(nullptr, Domain, Cbid, Data);
}
void setLaunchObserver(LaunchObserver *Observer) {
  tracker().Observer.store(Observer, std::memory_order_release);
}
void setGraphKernels(const void *GraphExec, std::vector<uint64_t> Ids) {
  Tracker &T = tracker();
  std::unique_lock<std::shared_mutex> Lock(T.GraphsMu);
  T.Graphs[GraphExec] = std::move(Ids);
}
std::span<const LaunchCallback> launchCallbacks() {
  // Every id here must have a case in decode() (or be an opaque
  // __cudaLaunchKernel): LaunchDecodingTest checks both directions.
  static const LaunchCallback Ids[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000},
      {CUPTI_CB_DOMAIN_RUNTIME_API,
       CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000},
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz},
  };
  return Ids;
}
uint64_t undecodedLaunches() { return tracker().Undecoded.load(); }
uint64_t unseenGraphLaunches() { return tracker().UnseenGraphLaunches.load(); }
uint64_t capturedLaunches() { return tracker().Captured.load(); }
} // namespace detail

} // namespace deepum::executor::cuda
