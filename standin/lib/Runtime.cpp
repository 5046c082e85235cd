//===- Runtime.cpp - The CUDA 13 runtime API of the stand-in ---------------===//
//
// Each entry point checks its arguments against the contract documented in
// the CUDA Runtime API reference (cuda_runtime_api.h carries the same text),
// returns the documented error code, and records it for cudaGetLastError.
// A sticky error (one the documentation says leaves the process in an
// inconsistent state: cudaErrorIllegalAddress, cudaErrorLaunchFailure, ...)
// is returned by every later call.
//
//===----------------------------------------------------------------------===//
#include "ApiHook.h"
#include "Entry.h"
#include "Model.h"

#include <cupti.h> // with the parameter structs of generated_cuda_*meta.h

#include <dlfcn.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

using deepum::standin::addNode;
using deepum::standin::Allocation;
using deepum::standin::CallConfig;
using deepum::standin::initializeInjection;
using deepum::standin::mapBytes;
using deepum::standin::MemoryKind;
using deepum::standin::Model;
using deepum::standin::refuseInCapture;
using deepum::standin::ret;

namespace {


struct ErrorText {
  cudaError_t Code;
  const char *Name;
  const char *Text;
};
// Generated from driver_types.h (standin/tools/error_table.py): every
// cudaError enumerator with the first sentence of its documentation.
const ErrorText kErrors[] = {
#include "ErrorTable.inc"
};

thread_local cudaError_t LastError = cudaSuccess;
thread_local std::vector<CallConfig> Configs;
thread_local int CurrentDevice = 0;

/// CUDA_INJECTION64_PATH: as NVIDIA's driver does during cuInit, the library
/// it names is loaded and its InitializeInjection() called, once, at the
/// first call that initialises CUDA. Calls the injection makes meanwhile (on
/// any thread) go ahead without waiting for it.
std::atomic<int> InjectionState{0}; // 0 not yet, 1 under way, 2 done
void resourceEvent(uint32_t Cbid, const void *Descriptor);

} // namespace

namespace deepum::standin {

cudaError_t ret(cudaError_t E) {
  if (E != cudaSuccess)
    LastError = E;
  return E;
}

void initializeInjection() {
  if (InjectionState.load(std::memory_order_acquire) != 0)
    return;
  int Expected = 0;
  if (!InjectionState.compare_exchange_strong(Expected, 1))
    return;
  const char *Path = std::getenv("CUDA_INJECTION64_PATH");
  if (Path && *Path) {
    void *H = dlopen(Path, RTLD_NOW);
    if (!H) {
      std::fprintf(stderr, "CUDA stand-in: CUDA_INJECTION64_PATH: %s\n", dlerror());
    } else if (auto *Init = reinterpret_cast<int (*)()>(dlsym(H, "InitializeInjection"))) {
      (void)Init();
    } else {
      std::fprintf(stderr, "CUDA stand-in: CUDA_INJECTION64_PATH: %s has no InitializeInjection\n",
                   Path);
    }
  }
  InjectionState.store(2, std::memory_order_release);
  // The primary context comes to be now: a subscriber that exists (the
  // injection's, typically) hears of it, as CUPTI reports context creation.
  resourceEvent(CUPTI_CBID_RESOURCE_CONTEXT_CREATED, nullptr);
}

// cudaStreamEndCapture then returns cudaErrorStreamCaptureInvalidated.
cudaError_t refuseInCapture(CUstream_st &S) {
  S.CaptureInvalidated = true;
  return cudaErrorStreamCaptureUnsupported;
}

} // namespace deepum::standin

namespace {

/// Any stream capturing in global or thread-local mode forbids "unsafe"
/// calls (synchronisation, cudaMalloc) elsewhere (cudaStreamBeginCapture).
bool unsafeDuringCapture(Model &M) {
  for (CUstream_st *S : M.Streams)
    if (S->Capture && S->CaptureMode != cudaStreamCaptureModeRelaxed) {
      S->CaptureInvalidated = true;
      return true;
    }
  return false;
}

// --- CUPTI callbacks (ApiHook.h) ------------------------------------------------------------

std::atomic<deepum_standin_api_hook_fn> HookFn{nullptr};
std::atomic<void *> HookUser{nullptr};

/// One API call as CUPTI reports it: the enter site now, the exit site at
/// done(). The hook seen at entry is the one used at exit.
class ApiCall {
public:
  ApiCall(CUpti_CallbackDomain D, uint32_t Id, const char *Function, const void *P,
          const char *Sym, uint64_t Correlation)
      : Fn(HookFn.load(std::memory_order_acquire)), User(HookUser.load()),
        C{D, Id, CUPTI_API_ENTER, Function, P, nullptr, Sym, static_cast<uint32_t>(Correlation),
          &Data} {
    if (Fn)
      Fn(&C, User);
  }
  template <class T> T done(T Result) {
    if (Fn) {
      deepum_standin_api_call Exit = C;
      Exit.site = CUPTI_API_EXIT;
      Exit.return_value = &Result;
      Fn(&Exit, User);
    }
    return Result;
  }

private:
  deepum_standin_api_hook_fn Fn;
  void *User;
  uint64_t Data = 0;
  deepum_standin_api_call C;
};

bool hooked() { return HookFn.load(std::memory_order_acquire) != nullptr; }

/// A resource event (CUpti_ResourceData's descriptor is `Descriptor`).
void resourceEvent(uint32_t Cbid, const void *Descriptor) {
  if (deepum_standin_api_hook_fn Fn = HookFn.load(std::memory_order_acquire)) {
    const deepum_standin_api_call C{CUPTI_CB_DOMAIN_RESOURCE, Cbid, 0, nullptr, Descriptor,
                                    nullptr, nullptr, 0, nullptr};
    Fn(&C, HookUser.load());
  }
}

} // namespace

void *deepum::standin::mapBytes(uint64_t Bytes, uint64_t &Mapped) {
  // 2 MiB-aligned so no two allocations share a UM block of the model.
  Mapped = (std::max<uint64_t>(Bytes, 1) + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
  const uint64_t Reserve = Mapped + kBlockBytes;
  void *P = mmap(nullptr, Reserve, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (P == MAP_FAILED)
    return nullptr;
  const auto A = reinterpret_cast<uint64_t>(P);
  const uint64_t Aligned = (A + kBlockBytes - 1) / kBlockBytes * kBlockBytes;
  if (Aligned > A)
    munmap(P, Aligned - A);
  const uint64_t Tail = A + Reserve - (Aligned + Mapped);
  if (Tail)
    munmap(reinterpret_cast<void *>(Aligned + Mapped), Tail);
  return reinterpret_cast<void *>(Aligned);
}

namespace {

cudaError_t allocate(Model &M, void **Ptr, size_t Bytes, MemoryKind Kind) {
  uint64_t Mapped = 0;
  void *P = mapBytes(Bytes, Mapped);
  if (!P)
    return cudaErrorMemoryAllocation;
  Allocation A;
  A.Base = reinterpret_cast<uint64_t>(P);
  A.Bytes = Bytes;
  A.Mapped = Mapped;
  A.Kind = Kind;
  M.Allocs[A.Base] = A;
  if (Kind == MemoryKind::Device)
    M.DeviceBytes += Bytes;
  if (Kind == MemoryKind::Managed)
    M.ManagedBytes += Bytes;
  *Ptr = P;
  return cudaSuccess;
}

cudaError_t release(Model &M, void *Ptr, bool Host) {
  auto It = M.Allocs.find(reinterpret_cast<uint64_t>(Ptr));
  // A registered range is the program's memory: cudaHostUnregister's.
  if (It == M.Allocs.end() || (It->second.Kind == MemoryKind::PinnedHost) != Host ||
      It->second.Registered)
    return cudaErrorInvalidValue;
  const Allocation A = It->second;
  if (A.Pool) {
    // "Callers must ensure that all accesses to these pointer have completed
    // before invoking cudaFree": the piece is free for every stream from now.
    M.poolFree(A.Base, M.hostNs(), nullptr);
    return cudaSuccess;
  }
  if (A.Kind == MemoryKind::Managed) {
    // Freed pages leave the GPU without a copy (not a user discard).
    const uint64_t Before = M.Eng->stats().BytesDiscarded;
    M.Eng->discard(A.Base, A.Mapped);
    M.Count.FreeDiscardBytes += M.Eng->stats().BytesDiscarded - Before;
    M.ManagedBytes -= A.Bytes;
    M.forgetProtection(A.Base, A.Mapped);
  }
  if (A.Kind == MemoryKind::Device)
    M.DeviceBytes -= A.Bytes;
  M.Allocs.erase(It);
  munmap(Ptr, A.Mapped);
  return cudaSuccess;
}

bool validLocation(const cudaMemLocation &L, bool AllowHost) {
  if (L.type == cudaMemLocationTypeDevice)
    return L.id == 0;
  return AllowHost && (L.type == cudaMemLocationTypeHost ||
                       L.type == cudaMemLocationTypeHostNuma ||
                       L.type == cudaMemLocationTypeHostNumaCurrent);
}

/// The checks every batch call shares (cudaMemPrefetchBatchAsync,
/// cudaMemDiscardBatchAsync, cudaMemDiscardAndPrefetchBatchAsync).
cudaError_t checkBatch(Model &M, void **Ptrs, size_t *Sizes, size_t Count,
                       unsigned long long Flags, cudaStream_t Stream, CUstream_st *&S) {
  if (!M.ConcurrentManagedAccess)
    return cudaErrorNotSupported;
  if (Model::isLegacy(Stream) || Flags != 0 || Count == 0 || !Ptrs || !Sizes)
    return cudaErrorInvalidValue;
  S = M.stream(Stream);
  if (!S)
    return cudaErrorInvalidResourceHandle;
  if (S->Capture)
    return refuseInCapture(*S);
  for (size_t I = 0; I < Count; ++I) {
    const Allocation *A = M.findRange(Ptrs[I], Sizes[I]);
    if (Sizes[I] == 0 || !A || A->Kind != MemoryKind::Managed)
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

cudaError_t checkLocations(size_t Count, const cudaMemLocation *Locs, const size_t *Idxs,
                           size_t NumLocs) {
  if (!Locs || !Idxs || NumLocs == 0 || NumLocs > Count || Idxs[0] != 0)
    return cudaErrorInvalidValue;
  for (size_t I = 0; I < NumLocs; ++I) {
    if ((I > 0 && Idxs[I] <= Idxs[I - 1]) || Idxs[I] >= Count)
      return cudaErrorInvalidValue;
    if (!validLocation(Locs[I], true))
      return cudaErrorInvalidValue;
  }
  return cudaSuccess;
}

void prefetchBatch(Model &M, void **Ptrs, size_t *Sizes, size_t Count,
                   const cudaMemLocation *Locs, const size_t *Idxs, size_t NumLocs,
                   CUstream_st &S) {
  // One call, whatever its length: the engine charges the host call once per
  // run of ranges bound for one location (libdeepum sends one location a call).
  for (size_t Loc = 0; Loc < NumLocs; ++Loc) {
    const size_t End = Loc + 1 < NumLocs ? Idxs[Loc + 1] : Count;
    std::vector<deepum::sim::Engine::Range> Ranges;
    for (size_t I = Idxs[Loc]; I < End; ++I)
      Ranges.push_back({reinterpret_cast<uint64_t>(Ptrs[I]), Sizes[I]});
    M.prefetchBatch(Ranges, Locs[Loc].type == cudaMemLocationTypeDevice, S);
  }
}

void discardBatch(Model &M, void **Ptrs, size_t *Sizes, size_t Count, CUstream_st &S) {
  std::vector<deepum::sim::Engine::Range> Ranges;
  for (size_t I = 0; I < Count; ++I)
    Ranges.push_back({reinterpret_cast<uint64_t>(Ptrs[I]), Sizes[I]});
  M.discardBatch(Ranges, S);
}

bool validDims(const dim3 &G, const dim3 &B, const cudaDeviceProp &P) {
  if (!G.x || !G.y || !G.z || !B.x || !B.y || !B.z)
    return false;
  if (B.x > static_cast<unsigned>(P.maxThreadsDim[0]) ||
      B.y > static_cast<unsigned>(P.maxThreadsDim[1]) ||
      B.z > static_cast<unsigned>(P.maxThreadsDim[2]) ||
      uint64_t{B.x} * B.y * B.z > static_cast<uint64_t>(P.maxThreadsPerBlock))
    return false;
  return G.x <= static_cast<unsigned>(P.maxGridSize[0]) &&
         G.y <= static_cast<unsigned>(P.maxGridSize[1]) &&
         G.z <= static_cast<unsigned>(P.maxGridSize[2]);
}

} // namespace

CUgraphNode_st &deepum::standin::addNode(CUgraph_st &G, cudaGraphNodeType T) {
  G.Nodes.push_back(std::make_unique<CUgraphNode_st>());
  CUgraphNode_st &N = *G.Nodes.back();
  N.Graph = &G;
  N.Type = T;
  return N;
}

namespace {

void fixArgPtrs(CUgraphNode_st &N) {
  N.ArgPtrs.clear();
  for (auto &A : N.Args)
    N.ArgPtrs.push_back(A.data());
}

cudaError_t launchKernel(CUkern_st *K, dim3 Grid, dim3 Block, void **Args, size_t SharedMem,
                         cudaStream_t Stream) {
  ENTER();
  if (!K)
    return ret(cudaErrorInvalidDeviceFunction);
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (!validDims(Grid, Block, M.Prop) ||
      SharedMem > static_cast<size_t>(M.Prop.sharedMemPerBlockOptin))
    return ret(cudaErrorInvalidConfiguration);
  if (S->Capture) {
    if (S->CaptureInvalidated)
      return ret(cudaErrorStreamCaptureInvalidated);
    CUgraphNode_st &N = addNode(*S->Capture, cudaGraphNodeTypeKernel);
    N.Kernel = K;
    N.Grid = Grid;
    N.Block = Block;
    N.SharedMem = SharedMem;
    // The arguments are copied now, as the driver does; a kernel whose layout
    // is unknown (see Fatbin.h) is captured without arguments.
    if (K->HaveLayout && Args)
      for (size_t I = 0; I < K->Layout.Sizes.size(); ++I) {
        const auto *P = static_cast<const unsigned char *>(Args[I]);
        N.Args.emplace_back(P, P + K->Layout.Sizes[I]);
      }
    fixArgPtrs(N);
    return cudaSuccess;
  }
  return ret(M.launch(*K, Grid, Block, Args, SharedMem, Stream));
}

/// A launch with its callbacks: the runtime entry point's (`RtCbid`, with
/// `RtParams`), and nested in it the driver's cuLaunchKernel, as the runtime
/// launches through the driver. The correlation id is the kernel record's.
cudaError_t tracedLaunch(uint32_t RtCbid, const char *RtName, const void *RtParams, bool PerThread,
                         CUkern_st *K, dim3 Grid, dim3 Block, void **Args, size_t SharedMem,
                         cudaStream_t Stream) {
  initializeInjection(); // before the hook is looked at: the injection may subscribe
  if (!hooked())
    return launchKernel(K, Grid, Block, Args, SharedMem, Stream);
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M); // keeps the correlation id ours
  const char *Symbol = K ? K->Name.c_str() : nullptr;
  ApiCall Rt(CUPTI_CB_DOMAIN_RUNTIME_API, RtCbid, RtName, RtParams, Symbol, M.NextCorrelation);
  if (!K)
    return Rt.done(launchKernel(K, Grid, Block, Args, SharedMem, Stream));
  const cuLaunchKernel_params P{reinterpret_cast<CUfunction>(K),
                                Grid.x,
                                Grid.y,
                                Grid.z,
                                Block.x,
                                Block.y,
                                Block.z,
                                static_cast<unsigned>(SharedMem),
                                Stream,
                                Args,
                                nullptr};
  ApiCall Dr(CUPTI_CB_DOMAIN_DRIVER_API,
             PerThread ? CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz
                       : CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
             PerThread ? "cuLaunchKernel_ptsz" : "cuLaunchKernel", &P, Symbol, M.NextCorrelation);
  const cudaError_t E = launchKernel(K, Grid, Block, Args, SharedMem, Stream);
  (void)Dr.done(static_cast<CUresult>(E));
  return Rt.done(E);
}

/// Times a copy of `Bytes` from Src to Dst on stream S (the bytes have
/// moved already). GPU memory is cudaMalloc's, and managed memory whose page
/// at the pointer is resident; the rest is the host's (pinned, pageable,
/// host-resident managed). Host to GPU and GPU to host: over the link on a
/// copy engine at the device model's explicit-copy rates (GPU-resident
/// managed memory read in place at its managed-to-host rate); GPU to GPU: on
/// the device at its memory's rate (read and write); host to host: the CPU's,
/// no GPU time.
void timeCopy(Model &M, void *Dst, const void *Src, uint64_t Bytes, CUstream_st &S) {
  using deepum::standin::MemoryKind;
  auto OnGpu = [&](const void *P, const deepum::standin::Allocation *A) {
    return A && (A->Kind == MemoryKind::Device ||
                 (A->Kind == MemoryKind::Managed &&
                  M.Eng->residentAt(reinterpret_cast<uint64_t>(P))));
  };
  const deepum::standin::Allocation *DA = M.find(Dst), *SA = M.find(Src);
  const bool DstGpu = OnGpu(Dst, DA), SrcGpu = OnGpu(Src, SA);
  if (DstGpu && SrcGpu) {
    M.memoryWork({{reinterpret_cast<uint64_t>(Src), Bytes, deepum::sim::Access::Read, SA->Kind},
                  {reinterpret_cast<uint64_t>(Dst), Bytes, deepum::sim::Access::Write, DA->Kind}},
                 2 * Bytes, S);
  } else if (DstGpu || SrcGpu) {
    const uint64_t End =
        M.copy(/*ToDevice=*/DstGpu, Bytes, SrcGpu && SA->Kind == MemoryKind::Managed, S);
    // Into GPU-resident managed memory (libdeepum's copy back after a
    // populate): the pages' contents arrive with the copy.
    if (DstGpu && DA->Kind == MemoryKind::Managed)
      M.Eng->copiedInto(reinterpret_cast<uint64_t>(Dst), Bytes, End);
  }
}

CUkern_st *kernelOf(const void *Func) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  auto It = M.Kernels.find(Func);
  return It == M.Kernels.end() ? nullptr : It->second.get();
}

} // namespace

extern "C" {

// --- Errors ---------------------------------------------------------------

cudaError_t cudaGetLastError(void) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  if (M.Sticky != cudaSuccess)
    return M.Sticky;
  const cudaError_t E = LastError;
  LastError = cudaSuccess;
  return E;
}

cudaError_t cudaPeekAtLastError(void) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  return M.Sticky != cudaSuccess ? M.Sticky : LastError;
}

const char *cudaGetErrorName(cudaError_t E) {
  for (const ErrorText &T : kErrors)
    if (T.Code == E)
      return T.Name;
  return "unrecognized error code";
}

const char *cudaGetErrorString(cudaError_t E) {
  for (const ErrorText &T : kErrors)
    if (T.Code == E)
      return T.Text;
  return "unrecognized error code";
}

// Only a descriptor of its arguments: modelled exactly, though CUDA arrays
// and textures are not.
cudaChannelFormatDesc cudaCreateChannelDesc(int X, int Y, int Z, int W,
                                            cudaChannelFormatKind Kind) {
  cudaChannelFormatDesc D{};
  D.x = X;
  D.y = Y;
  D.z = Z;
  D.w = W;
  D.f = Kind;
  return D;
}

// --- Device ---------------------------------------------------------------

cudaError_t cudaGetDeviceCount(int *Count) {
  if (!Count)
    return ret(cudaErrorInvalidValue);
  ENTER();
  *Count = 1;
  return cudaSuccess;
}

cudaError_t cudaGetDevice(int *Device) {
  if (!Device)
    return ret(cudaErrorInvalidValue);
  ENTER();
  *Device = CurrentDevice;
  return cudaSuccess;
}

cudaError_t cudaSetDevice(int Device) {
  ENTER();
  if (Device != 0)
    return ret(cudaErrorInvalidDevice);
  CurrentDevice = Device;
  return cudaSuccess;
}

cudaError_t cudaInitDevice(int Device, unsigned int, unsigned int) {
  ENTER();
  return Device == 0 ? cudaSuccess : ret(cudaErrorInvalidDevice);
}

cudaError_t cudaSetDeviceFlags(unsigned int) {
  ENTER();
  return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *Prop, int Device) {
  if (!Prop)
    return ret(cudaErrorInvalidValue);
  ENTER();
  if (Device != 0)
    return ret(cudaErrorInvalidDevice);
  *Prop = M.Prop;
  return cudaSuccess;
}

// Every attribute with a field in cudaDeviceProp reads that field, so the
// two queries agree; the few without one are answered below.
cudaError_t cudaDeviceGetAttribute(int *Value, cudaDeviceAttr Attr, int Device) {
  if (!Value)
    return ret(cudaErrorInvalidValue);
  ENTER();
  if (Device != 0)
    return ret(cudaErrorInvalidDevice);
  if (Attr <= 0 || Attr >= cudaDevAttrMax)
    return ret(cudaErrorInvalidValue);
  const cudaDeviceProp &P = M.Prop;
  auto I = [](auto V) { return static_cast<int>(V); };
  switch (Attr) {
  case cudaDevAttrMaxThreadsPerBlock: *Value = P.maxThreadsPerBlock; break;
  case cudaDevAttrMaxBlockDimX: *Value = P.maxThreadsDim[0]; break;
  case cudaDevAttrMaxBlockDimY: *Value = P.maxThreadsDim[1]; break;
  case cudaDevAttrMaxBlockDimZ: *Value = P.maxThreadsDim[2]; break;
  case cudaDevAttrMaxGridDimX: *Value = P.maxGridSize[0]; break;
  case cudaDevAttrMaxGridDimY: *Value = P.maxGridSize[1]; break;
  case cudaDevAttrMaxGridDimZ: *Value = P.maxGridSize[2]; break;
  case cudaDevAttrMaxSharedMemoryPerBlock: *Value = I(P.sharedMemPerBlock); break;
  case cudaDevAttrTotalConstantMemory: *Value = I(P.totalConstMem); break;
  case cudaDevAttrWarpSize: *Value = P.warpSize; break;
  case cudaDevAttrMaxPitch: *Value = I(P.memPitch); break;
  case cudaDevAttrMaxRegistersPerBlock: *Value = P.regsPerBlock; break;
  case cudaDevAttrTextureAlignment: *Value = I(P.textureAlignment); break;
  case cudaDevAttrMultiProcessorCount: *Value = P.multiProcessorCount; break;
  case cudaDevAttrIntegrated: *Value = P.integrated; break;
  case cudaDevAttrCanMapHostMemory: *Value = P.canMapHostMemory; break;
  case cudaDevAttrMaxTexture1DWidth: *Value = P.maxTexture1D; break;
  case cudaDevAttrMaxTexture2DWidth: *Value = P.maxTexture2D[0]; break;
  case cudaDevAttrMaxTexture2DHeight: *Value = P.maxTexture2D[1]; break;
  case cudaDevAttrMaxTexture3DWidth: *Value = P.maxTexture3D[0]; break;
  case cudaDevAttrMaxTexture3DHeight: *Value = P.maxTexture3D[1]; break;
  case cudaDevAttrMaxTexture3DDepth: *Value = P.maxTexture3D[2]; break;
  case cudaDevAttrMaxTexture2DLayeredWidth: *Value = P.maxTexture2DLayered[0]; break;
  case cudaDevAttrMaxTexture2DLayeredHeight: *Value = P.maxTexture2DLayered[1]; break;
  case cudaDevAttrMaxTexture2DLayeredLayers: *Value = P.maxTexture2DLayered[2]; break;
  case cudaDevAttrSurfaceAlignment: *Value = I(P.surfaceAlignment); break;
  case cudaDevAttrConcurrentKernels: *Value = P.concurrentKernels; break;
  case cudaDevAttrEccEnabled: *Value = P.ECCEnabled; break;
  case cudaDevAttrPciBusId: *Value = P.pciBusID; break;
  case cudaDevAttrPciDeviceId: *Value = P.pciDeviceID; break;
  case cudaDevAttrTccDriver: *Value = P.tccDriver; break;
  case cudaDevAttrGlobalMemoryBusWidth: *Value = P.memoryBusWidth; break;
  case cudaDevAttrL2CacheSize: *Value = P.l2CacheSize; break;
  case cudaDevAttrMaxThreadsPerMultiProcessor: *Value = P.maxThreadsPerMultiProcessor; break;
  case cudaDevAttrAsyncEngineCount: *Value = P.asyncEngineCount; break;
  case cudaDevAttrUnifiedAddressing: *Value = P.unifiedAddressing; break;
  case cudaDevAttrMaxTexture1DLayeredWidth: *Value = P.maxTexture1DLayered[0]; break;
  case cudaDevAttrMaxTexture1DLayeredLayers: *Value = P.maxTexture1DLayered[1]; break;
  case cudaDevAttrMaxTexture2DGatherWidth: *Value = P.maxTexture2DGather[0]; break;
  case cudaDevAttrMaxTexture2DGatherHeight: *Value = P.maxTexture2DGather[1]; break;
  case cudaDevAttrMaxTexture3DWidthAlt: *Value = P.maxTexture3DAlt[0]; break;
  case cudaDevAttrMaxTexture3DHeightAlt: *Value = P.maxTexture3DAlt[1]; break;
  case cudaDevAttrMaxTexture3DDepthAlt: *Value = P.maxTexture3DAlt[2]; break;
  case cudaDevAttrPciDomainId: *Value = P.pciDomainID; break;
  case cudaDevAttrTexturePitchAlignment: *Value = I(P.texturePitchAlignment); break;
  case cudaDevAttrMaxTextureCubemapWidth: *Value = P.maxTextureCubemap; break;
  case cudaDevAttrMaxTextureCubemapLayeredWidth: *Value = P.maxTextureCubemapLayered[0]; break;
  case cudaDevAttrMaxTextureCubemapLayeredLayers: *Value = P.maxTextureCubemapLayered[1]; break;
  case cudaDevAttrMaxSurface1DWidth: *Value = P.maxSurface1D; break;
  case cudaDevAttrMaxSurface2DWidth: *Value = P.maxSurface2D[0]; break;
  case cudaDevAttrMaxSurface2DHeight: *Value = P.maxSurface2D[1]; break;
  case cudaDevAttrMaxSurface3DWidth: *Value = P.maxSurface3D[0]; break;
  case cudaDevAttrMaxSurface3DHeight: *Value = P.maxSurface3D[1]; break;
  case cudaDevAttrMaxSurface3DDepth: *Value = P.maxSurface3D[2]; break;
  case cudaDevAttrMaxSurface1DLayeredWidth: *Value = P.maxSurface1DLayered[0]; break;
  case cudaDevAttrMaxSurface1DLayeredLayers: *Value = P.maxSurface1DLayered[1]; break;
  case cudaDevAttrMaxSurface2DLayeredWidth: *Value = P.maxSurface2DLayered[0]; break;
  case cudaDevAttrMaxSurface2DLayeredHeight: *Value = P.maxSurface2DLayered[1]; break;
  case cudaDevAttrMaxSurface2DLayeredLayers: *Value = P.maxSurface2DLayered[2]; break;
  case cudaDevAttrMaxSurfaceCubemapWidth: *Value = P.maxSurfaceCubemap; break;
  case cudaDevAttrMaxSurfaceCubemapLayeredWidth: *Value = P.maxSurfaceCubemapLayered[0]; break;
  case cudaDevAttrMaxSurfaceCubemapLayeredLayers: *Value = P.maxSurfaceCubemapLayered[1]; break;
  case cudaDevAttrMaxTexture2DLinearWidth: *Value = P.maxTexture2DLinear[0]; break;
  case cudaDevAttrMaxTexture2DLinearHeight: *Value = P.maxTexture2DLinear[1]; break;
  case cudaDevAttrMaxTexture2DLinearPitch: *Value = P.maxTexture2DLinear[2]; break;
  case cudaDevAttrMaxTexture2DMipmappedWidth: *Value = P.maxTexture2DMipmap[0]; break;
  case cudaDevAttrMaxTexture2DMipmappedHeight: *Value = P.maxTexture2DMipmap[1]; break;
  case cudaDevAttrComputeCapabilityMajor: *Value = P.major; break;
  case cudaDevAttrComputeCapabilityMinor: *Value = P.minor; break;
  case cudaDevAttrMaxTexture1DMipmappedWidth: *Value = P.maxTexture1DMipmap; break;
  case cudaDevAttrStreamPrioritiesSupported: *Value = P.streamPrioritiesSupported; break;
  case cudaDevAttrGlobalL1CacheSupported: *Value = P.globalL1CacheSupported; break;
  case cudaDevAttrLocalL1CacheSupported: *Value = P.localL1CacheSupported; break;
  case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *Value = I(P.sharedMemPerMultiprocessor); break;
  case cudaDevAttrMaxRegistersPerMultiprocessor: *Value = P.regsPerMultiprocessor; break;
  case cudaDevAttrManagedMemory: *Value = P.managedMemory; break;
  case cudaDevAttrIsMultiGpuBoard: *Value = P.isMultiGpuBoard; break;
  case cudaDevAttrMultiGpuBoardGroupID: *Value = P.multiGpuBoardGroupID; break;
  case cudaDevAttrHostNativeAtomicSupported: *Value = P.hostNativeAtomicSupported; break;
  case cudaDevAttrPageableMemoryAccess: *Value = P.pageableMemoryAccess; break;
  case cudaDevAttrConcurrentManagedAccess: *Value = P.concurrentManagedAccess; break;
  case cudaDevAttrComputePreemptionSupported: *Value = P.computePreemptionSupported; break;
  case cudaDevAttrCanUseHostPointerForRegisteredMem:
    *Value = P.canUseHostPointerForRegisteredMem;
    break;
  case cudaDevAttrCooperativeLaunch: *Value = P.cooperativeLaunch; break;
  case cudaDevAttrMaxSharedMemoryPerBlockOptin: *Value = I(P.sharedMemPerBlockOptin); break;
  case cudaDevAttrHostRegisterSupported: *Value = P.hostRegisterSupported; break;
  case cudaDevAttrPageableMemoryAccessUsesHostPageTables:
    *Value = P.pageableMemoryAccessUsesHostPageTables;
    break;
  case cudaDevAttrDirectManagedMemAccessFromHost: *Value = P.directManagedMemAccessFromHost; break;
  case cudaDevAttrMaxBlocksPerMultiprocessor: *Value = P.maxBlocksPerMultiProcessor; break;
  case cudaDevAttrMaxPersistingL2CacheSize: *Value = P.persistingL2CacheMaxSize; break;
  case cudaDevAttrMaxAccessPolicyWindowSize: *Value = P.accessPolicyMaxWindowSize; break;
  case cudaDevAttrReservedSharedMemoryPerBlock: *Value = I(P.reservedSharedMemPerBlock); break;
  case cudaDevAttrSparseCudaArraySupported: *Value = P.sparseCudaArraySupported; break;
  case cudaDevAttrHostRegisterReadOnlySupported: *Value = P.hostRegisterReadOnlySupported; break;
  case cudaDevAttrTimelineSemaphoreInteropSupported:
    *Value = P.timelineSemaphoreInteropSupported;
    break;
  case cudaDevAttrMemoryPoolsSupported: *Value = P.memoryPoolsSupported; break;
  case cudaDevAttrGPUDirectRDMASupported: *Value = P.gpuDirectRDMASupported; break;
  case cudaDevAttrGPUDirectRDMAFlushWritesOptions:
    *Value = I(P.gpuDirectRDMAFlushWritesOptions);
    break;
  case cudaDevAttrGPUDirectRDMAWritesOrdering: *Value = P.gpuDirectRDMAWritesOrdering; break;
  case cudaDevAttrMemoryPoolSupportedHandleTypes:
    *Value = I(P.memoryPoolSupportedHandleTypes);
    break;
  case cudaDevAttrClusterLaunch: *Value = P.clusterLaunch; break;
  case cudaDevAttrDeferredMappingCudaArraySupported:
    *Value = P.deferredMappingCudaArraySupported;
    break;
  case cudaDevAttrIpcEventSupport: *Value = P.ipcEventSupported; break;
  case cudaDevAttrNumaConfig: *Value = P.deviceNumaConfig; break;
  case cudaDevAttrNumaId: *Value = P.deviceNumaId; break;
  case cudaDevAttrMpsEnabled: *Value = P.mpsEnabled; break;
  case cudaDevAttrHostNumaId: *Value = P.hostNumaId; break;
  case cudaDevAttrGpuPciDeviceId: *Value = I(P.gpuPciDeviceID); break;
  case cudaDevAttrGpuPciSubsystemId: *Value = I(P.gpuPciSubsystemID); break;
  case cudaDevAttrHostNumaMultinodeIpcSupported: *Value = P.hostNumaMultinodeIpcSupported; break;
  // Without a field.
  case cudaDevAttrClockRate: *Value = M.ClockRateKhz; break;
  case cudaDevAttrMemoryClockRate:
    // What gives the model's DRAM bandwidth over the bus, two transfers a
    // clock: a program computing peak bandwidth gets the model's.
    *Value = P.memoryBusWidth > 0
                 ? I(M.Dev.DramBytesPerSecond / (P.memoryBusWidth / 8.0) / 2.0 / 1000.0)
                 : 0;
    break;
  case cudaDevAttrGpuOverlap: *Value = P.asyncEngineCount > 0; break;
  case cudaDevAttrComputeMode: *Value = cudaComputeModeDefault; break;
  case cudaDevAttrSingleToDoublePrecisionPerfRatio: *Value = M.SingleToDoubleRatio; break;
  case cudaDevAttrMemSyncDomainCount: *Value = 1; break; // the default domain alone
  default:
    // No run-time limit, no D3D12/Vulkan CIG, no host memory pools, no
    // remote-write flush, textures bound to linear memory, reserved numbers.
    *Value = 0;
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *Least, int *Greatest) {
  ENTER();
  if (Least)
    *Least = 0;
  if (Greatest)
    *Greatest = -5;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *Version) {
  if (!Version)
    return ret(cudaErrorInvalidValue);
  *Version = CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *Version) {
  if (!Version)
    return ret(cudaErrorInvalidValue);
  *Version = CUDART_VERSION;
  return cudaSuccess;
}

namespace {
cudaError_t deviceSynchronize() {
  ENTER();
  if (unsafeDuringCapture(M))
    return ret(cudaErrorStreamCaptureUnsupported);
  uint64_t Ns = std::max({M.Eng->copyEndNs(true), M.Eng->copyEndNs(false),
                          M.Eng->computeEndNs(), M.Legacy.LastNs});
  for (const CUstream_st *S : M.Streams)
    Ns = std::max(Ns, S->LastNs);
  M.hostWaitUntil(Ns);
  M.poolsAtSynchronize();
  return cudaSuccess;
}
uint64_t nextCorrelation();
} // namespace

// Reported to CUPTI subscribers (runtime, then the driver's cuCtxSynchronize
// nested), as a GPU's CUPTI does: libdeepum brings back what its copy path
// holds before the host reads managed memory.
cudaError_t cudaDeviceSynchronize(void) {
  initializeInjection();
  if (!hooked())
    return deviceSynchronize();
  const uint64_t Corr = nextCorrelation();
  ApiCall Rt(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020,
             "cudaDeviceSynchronize", nullptr, nullptr, Corr);
  ApiCall Dr(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
             "cuCtxSynchronize", nullptr, nullptr, Corr);
  const cudaError_t E = deviceSynchronize();
  (void)Dr.done(static_cast<CUresult>(E));
  return Rt.done(E);
}

cudaError_t cudaDeviceReset(void) {
  // A sticky error survives: the documentation says the process must be
  // terminated. Otherwise the context has no state worth resetting here.
  ENTER();
  LastError = cudaSuccess;
  return cudaSuccess;
}

// --- Memory ---------------------------------------------------------------

namespace {
cudaError_t mallocManaged(void **Ptr, size_t Bytes, unsigned int Flags) {
  ENTER();
  if (!Ptr || Bytes == 0 || (Flags != cudaMemAttachGlobal && Flags != cudaMemAttachHost))
    return ret(cudaErrorInvalidValue);
  if (unsafeDuringCapture(M))
    return ret(cudaErrorStreamCaptureUnsupported);
  return ret(allocate(M, Ptr, Bytes, MemoryKind::Managed));
}

cudaError_t freeMemory(void *Ptr) {
  ENTER();
  if (!Ptr)
    return cudaSuccess;
  return ret(release(M, Ptr, false));
}

/// A correlation id for an API call that launches nothing.
uint64_t nextCorrelation() {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  return M.NextCorrelation++;
}

cudaError_t profilerCheck() {
  ENTER();
  return cudaSuccess;
}

cudaError_t profilerCall(bool Start) {
  initializeInjection();
  if (!hooked())
    return profilerCheck();
  const uint64_t Corr = nextCorrelation();
  ApiCall Rt(CUPTI_CB_DOMAIN_RUNTIME_API,
             Start ? CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000
                   : CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000,
             Start ? "cudaProfilerStart" : "cudaProfilerStop", nullptr, nullptr, Corr);
  ApiCall Dr(CUPTI_CB_DOMAIN_DRIVER_API,
             Start ? CUPTI_DRIVER_TRACE_CBID_cuProfilerStart : CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,
             Start ? "cuProfilerStart" : "cuProfilerStop", nullptr, nullptr, Corr);
  const cudaError_t E = profilerCheck();
  (void)Dr.done(static_cast<CUresult>(E));
  return Rt.done(E);
}
} // namespace

// Managed allocation and free report their runtime callbacks and, nested,
// the driver's cuMemAllocManaged / cuMemFree_v2 (what profilers watch).
cudaError_t cudaMallocManaged(void **Ptr, size_t Bytes, unsigned int Flags) {
  initializeInjection();
  if (!hooked())
    return mallocManaged(Ptr, Bytes, Flags);
  const uint64_t Corr = nextCorrelation();
  const cudaMallocManaged_v6000_params P{Ptr, Bytes, Flags};
  ApiCall Rt(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaMallocManaged_v6000,
             "cudaMallocManaged", &P, nullptr, Corr);
  CUdeviceptr D = 0;
  const cuMemAllocManaged_params DP{&D, Bytes, Flags};
  ApiCall Dr(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
             "cuMemAllocManaged", &DP, nullptr, Corr);
  const cudaError_t E = mallocManaged(Ptr, Bytes, Flags);
  if (E == cudaSuccess)
    D = reinterpret_cast<CUdeviceptr>(*Ptr);
  (void)Dr.done(static_cast<CUresult>(E));
  return Rt.done(E);
}

cudaError_t cudaFree(void *Ptr) {
  initializeInjection();
  if (!hooked())
    return freeMemory(Ptr);
  const uint64_t Corr = nextCorrelation();
  const cudaFree_v3020_params P{Ptr};
  ApiCall Rt(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree", &P,
             nullptr, Corr);
  const cuMemFree_v2_params DP{reinterpret_cast<CUdeviceptr>(Ptr)};
  ApiCall Dr(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, "cuMemFree_v2", &DP,
             nullptr, Corr);
  const cudaError_t E = freeMemory(Ptr);
  (void)Dr.done(static_cast<CUresult>(E));
  return Rt.done(E);
}

cudaError_t cudaMalloc(void **Ptr, size_t Bytes) {
  ENTER();
  if (!Ptr)
    return ret(cudaErrorInvalidValue);
  if (Bytes == 0) {
    *Ptr = nullptr;
    return cudaSuccess;
  }
  if (unsafeDuringCapture(M))
    return ret(cudaErrorStreamCaptureUnsupported);
  // Device memory is not pageable: it must fit beside what cudaMalloc holds.
  if (Bytes > M.CapacityBytes - std::min(M.CapacityBytes, M.DeviceBytes))
    return ret(cudaErrorMemoryAllocation);
  return ret(allocate(M, Ptr, Bytes, MemoryKind::Device));
}

// cudaMallocHost and cudaHostAlloc: HostMemory.cpp.

cudaError_t cudaFreeHost(void *Ptr) {
  ENTER();
  if (!Ptr)
    return cudaSuccess;
  return ret(release(M, Ptr, true));
}

cudaError_t cudaMemGetInfo(size_t *Free, size_t *Total) {
  ENTER();
  if (!Free || !Total)
    return ret(cudaErrorInvalidValue);
  const uint64_t Used = M.Eng->residentBytes() + M.DeviceBytes;
  *Total = M.CapacityBytes;
  *Free = Used >= M.CapacityBytes ? 0 : M.CapacityBytes - Used;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes *Attr, const void *Ptr) {
  ENTER();
  if (!Attr)
    return ret(cudaErrorInvalidValue);
  *Attr = cudaPointerAttributes{};
  const Allocation *A = M.find(Ptr);
  if (!A) {
    Attr->type = cudaMemoryTypeUnregistered;
    Attr->device = -2;
    Attr->hostPointer = const_cast<void *>(Ptr);
    return cudaSuccess;
  }
  Attr->device = 0;
  switch (A->Kind) {
  case MemoryKind::Managed:
    Attr->type = cudaMemoryTypeManaged;
    Attr->devicePointer = Attr->hostPointer = const_cast<void *>(Ptr);
    break;
  case MemoryKind::Device:
    Attr->type = cudaMemoryTypeDevice;
    Attr->devicePointer = const_cast<void *>(Ptr);
    break;
  case MemoryKind::PinnedHost:
    Attr->type = cudaMemoryTypeHost;
    Attr->devicePointer = Attr->hostPointer = const_cast<void *>(Ptr);
    break;
  }
  return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *Dst, const void *Src, size_t Bytes, cudaMemcpyKind Kind,
                            cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (Kind < cudaMemcpyHostToHost || Kind > cudaMemcpyDefault)
    return ret(cudaErrorInvalidMemcpyDirection);
  if (Bytes == 0)
    return cudaSuccess;
  if (!Dst || !Src)
    return ret(cudaErrorInvalidValue);
  // Device-side pointers must lie in live CUDA memory.
  const bool DstDev = Kind == cudaMemcpyHostToDevice || Kind == cudaMemcpyDeviceToDevice;
  const bool SrcDev = Kind == cudaMemcpyDeviceToHost || Kind == cudaMemcpyDeviceToDevice;
  if ((DstDev && !M.findRange(Dst, Bytes)) || (SrcDev && !M.findRange(Src, Bytes)))
    return ret(cudaErrorInvalidValue);
  if (S->Capture) {
    CUgraphNode_st &N = addNode(*S->Capture, cudaGraphNodeTypeMemcpy);
    N.Run = [=](cudaStream_t St) { return cudaMemcpyAsync(Dst, Src, Bytes, Kind, St); };
    return cudaSuccess;
  }
  std::memmove(Dst, Src, Bytes);
  M.Count.MemcpyBytes += Bytes;
  timeCopy(M, Dst, Src, Bytes, *S);
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void *Dst, const void *Src, size_t Bytes, cudaMemcpyKind Kind) {
  {
    ENTER();
    if (unsafeDuringCapture(M))
      return ret(cudaErrorStreamCaptureUnsupported);
  }
  const cudaError_t E = cudaMemcpyAsync(Dst, Src, Bytes, Kind, nullptr);
  if (E == cudaSuccess) {
    // Synchronous for the host: it waits for the copy (and the stream's work before it).
    Model &M = Model::get();
    deepum::standin::ModelLock Lock(M);
    M.hostWaitUntil(M.Legacy.LastNs);
  }
  return E;
}

cudaError_t cudaMemsetAsync(void *Ptr, int Value, size_t Bytes, cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (Bytes == 0)
    return cudaSuccess;
  if (!M.findRange(Ptr, Bytes))
    return ret(cudaErrorInvalidValue);
  if (S->Capture) {
    CUgraphNode_st &N = addNode(*S->Capture, cudaGraphNodeTypeMemset);
    N.Run = [=](cudaStream_t St) { return cudaMemsetAsync(Ptr, Value, Bytes, St); };
    return cudaSuccess;
  }
  std::memset(Ptr, Value, Bytes);
  // On the GPU: it writes device memory at the memory's rate, and faults
  // host-resident managed pages in as a kernel writing them would.
  const deepum::standin::Allocation *A = M.find(Ptr);
  M.memoryWork({{reinterpret_cast<uint64_t>(Ptr), Bytes, deepum::sim::Access::Write, A->Kind}},
               Bytes, *S);
  return cudaSuccess;
}

cudaError_t cudaMemset(void *Ptr, int Value, size_t Bytes) {
  return cudaMemsetAsync(Ptr, Value, Bytes, nullptr);
}

cudaError_t cudaMemPrefetchAsync(const void *Ptr, size_t Bytes, cudaMemLocation Location,
                                 unsigned int Flags, cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (S->Capture)
    return ret(refuseInCapture(*S));
  if (Flags != 0)
    return ret(cudaErrorInvalidValue);
  if (Location.type == cudaMemLocationTypeDevice && Location.id != 0)
    return ret(cudaErrorInvalidDevice);
  if (!validLocation(Location, true))
    return ret(cudaErrorInvalidValue);
  if (Location.type == cudaMemLocationTypeDevice && !M.ConcurrentManagedAccess)
    return ret(cudaErrorInvalidDevice);
  const Allocation *A = M.findRange(Ptr, Bytes);
  if (Bytes == 0 || !A || A->Kind != MemoryKind::Managed)
    return ret(cudaErrorInvalidValue);
  M.prefetch(reinterpret_cast<uint64_t>(Ptr), Bytes, Location.type == cudaMemLocationTypeDevice,
             *S);
  return cudaSuccess;
}

cudaError_t cudaMemPrefetchBatchAsync(void **Ptrs, size_t *Sizes, size_t Count,
                                      cudaMemLocation *Locs, size_t *Idxs, size_t NumLocs,
                                      unsigned long long Flags, cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = nullptr;
  if (cudaError_t E = checkBatch(M, Ptrs, Sizes, Count, Flags, Stream, S))
    return ret(E);
  if (cudaError_t E = checkLocations(Count, Locs, Idxs, NumLocs))
    return ret(E);
  prefetchBatch(M, Ptrs, Sizes, Count, Locs, Idxs, NumLocs, *S);
  return cudaSuccess;
}

cudaError_t cudaMemDiscardBatchAsync(void **Ptrs, size_t *Sizes, size_t Count,
                                     unsigned long long Flags, cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = nullptr;
  if (cudaError_t E = checkBatch(M, Ptrs, Sizes, Count, Flags, Stream, S))
    return ret(E);
  discardBatch(M, Ptrs, Sizes, Count, *S);
  return cudaSuccess;
}

cudaError_t cudaMemDiscardAndPrefetchBatchAsync(void **Ptrs, size_t *Sizes, size_t Count,
                                                cudaMemLocation *Locs, size_t *Idxs,
                                                size_t NumLocs, unsigned long long Flags,
                                                cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = nullptr;
  if (cudaError_t E = checkBatch(M, Ptrs, Sizes, Count, Flags, Stream, S))
    return ret(E);
  if (cudaError_t E = checkLocations(Count, Locs, Idxs, NumLocs))
    return ret(E);
  discardBatch(M, Ptrs, Sizes, Count, *S);
  prefetchBatch(M, Ptrs, Sizes, Count, Locs, Idxs, NumLocs, *S);
  return cudaSuccess;
}

cudaError_t cudaMemAdvise(const void *Ptr, size_t Bytes, cudaMemoryAdvise Advice,
                          cudaMemLocation Location) {
  ENTER();
  const Allocation *A = M.findRange(Ptr, Bytes);
  if (Bytes == 0 || !A || A->Kind != MemoryKind::Managed)
    return ret(cudaErrorInvalidValue);
  const bool NeedsLocation = Advice == cudaMemAdviseSetPreferredLocation ||
                             Advice == cudaMemAdviseSetAccessedBy ||
                             Advice == cudaMemAdviseUnsetAccessedBy;
  if (NeedsLocation) {
    if (Location.type == cudaMemLocationTypeDevice && Location.id != 0)
      return ret(cudaErrorInvalidDevice);
    if (!validLocation(Location, true))
      return ret(cudaErrorInvalidValue);
  }
  const bool Host = Location.type != cudaMemLocationTypeDevice;
  deepum::v1::Advice V = deepum::v1::ADVICE_UNSPECIFIED;
  switch (Advice) {
  case cudaMemAdviseSetReadMostly: V = deepum::v1::ADVICE_SET_READ_MOSTLY; break;
  case cudaMemAdviseUnsetReadMostly: V = deepum::v1::ADVICE_UNSET_READ_MOSTLY; break;
  case cudaMemAdviseSetPreferredLocation:
    V = Host ? deepum::v1::ADVICE_SET_PREFERRED_LOCATION_HOST
             : deepum::v1::ADVICE_SET_PREFERRED_LOCATION_DEVICE;
    break;
  case cudaMemAdviseUnsetPreferredLocation: V = deepum::v1::ADVICE_UNSET_PREFERRED_LOCATION; break;
  case cudaMemAdviseSetAccessedBy: V = deepum::v1::ADVICE_SET_ACCESSED_BY_DEVICE; break;
  case cudaMemAdviseUnsetAccessedBy: V = deepum::v1::ADVICE_UNSET_ACCESSED_BY_DEVICE; break;
  default:
    return ret(cudaErrorInvalidValue);
  }
  M.Eng->advise(V, reinterpret_cast<uint64_t>(Ptr), Bytes);
  return cudaSuccess;
}

// --- Streams and events ---------------------------------------------------------------

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *Stream, unsigned int Flags, int Priority) {
  ENTER();
  if (!Stream || (Flags & ~unsigned{cudaStreamNonBlocking}))
    return ret(cudaErrorInvalidValue);
  auto *S = new CUstream_st();
  S->Flags = Flags;
  S->Priority = Priority;
  M.Streams.insert(S);
  *Stream = S;
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *Stream, unsigned int Flags) {
  return cudaStreamCreateWithPriority(Stream, Flags, 0);
}

cudaError_t cudaStreamCreate(cudaStream_t *Stream) {
  return cudaStreamCreateWithPriority(Stream, cudaStreamDefault, 0);
}

cudaError_t cudaStreamDestroy(cudaStream_t Stream) {
  ENTER();
  if (Model::isLegacy(Stream) || Stream == cudaStreamPerThread || !M.Streams.count(Stream))
    return ret(cudaErrorInvalidResourceHandle);
  M.poolForgetStream(Stream);
  M.Streams.erase(Stream);
  delete Stream;
  return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (S->Capture)
    return ret(refuseInCapture(*S));
  M.hostWaitUntil(S->LastNs);
  M.poolsAtSynchronize();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (S->Capture)
    return ret(refuseInCapture(*S));
  // Done in the model's time when the host's clock has reached its last work.
  return M.poll(S->LastNs, S->Polls) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t Stream, cudaEvent_t Event, unsigned int Flags) {
  ENTER();
  CUstream_st *S = M.stream(Stream);
  if (!S || !M.Events.count(Event))
    return ret(cudaErrorInvalidResourceHandle);
  if (Flags & ~unsigned{cudaEventWaitExternal})
    return ret(cudaErrorInvalidValue);
  if (Event->Recorded) {
    S->LastNs = std::max(S->LastNs, Event->Ns);
    // Its next kernel waits for the populates the event follows (a kernel
    // that writes discarded pages before their populate lands would fault
    // on them: the copy path's dependency), as deepum-sim charges it.
    M.Eng->awaitPopulates(Event->Prefetched);
  }
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *Event, unsigned int Flags) {
  ENTER();
  if (!Event || (Flags & ~unsigned{cudaEventBlockingSync | cudaEventDisableTiming |
                                    cudaEventInterprocess}))
    return ret(cudaErrorInvalidValue);
  if ((Flags & cudaEventInterprocess) && !(Flags & cudaEventDisableTiming))
    return ret(cudaErrorInvalidValue);
  auto *E = new CUevent_st();
  E->Flags = Flags;
  M.Events.insert(E);
  *Event = E;
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *Event) {
  return cudaEventCreateWithFlags(Event, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t Event) {
  ENTER();
  if (!M.Events.count(Event))
    return ret(cudaErrorInvalidResourceHandle);
  M.Events.erase(Event);
  delete Event;
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t Event, cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = M.stream(Stream);
  if (!S || !M.Events.count(Event))
    return ret(cudaErrorInvalidResourceHandle);
  if (S->Capture)
    return ret(refuseInCapture(*S)); // event nodes are not modelled
  Event->Recorded = true;
  Event->Ns = std::max(S->LastNs, M.Eng->issueNs());
  Event->Prefetched = S->LastPrefetch;
  Event->Polls = {};
  return cudaSuccess;
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t Event, cudaStream_t Stream, unsigned int) {
  return cudaEventRecord(Event, Stream);
}

cudaError_t cudaEventQuery(cudaEvent_t Event) {
  ENTER();
  if (!M.Events.count(Event))
    return ret(cudaErrorInvalidResourceHandle);
  // Not ready while the work it stands for lies ahead of the model's clock
  // (cudaErrorNotReady is a status, not an error: not kept as the last error).
  if (Event->Recorded && !M.poll(Event->Ns, Event->Polls))
    return cudaErrorNotReady;
  return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t Event) {
  ENTER();
  if (!M.Events.count(Event))
    return ret(cudaErrorInvalidResourceHandle);
  if (Event->Recorded)
    M.hostWaitUntil(Event->Ns);
  M.poolsAtSynchronize();
  return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *Ms, cudaEvent_t Start, cudaEvent_t End) {
  ENTER();
  if (!Ms)
    return ret(cudaErrorInvalidValue);
  if (!M.Events.count(Start) || !M.Events.count(End))
    return ret(cudaErrorInvalidResourceHandle);
  if ((Start->Flags | End->Flags) & cudaEventDisableTiming)
    return ret(cudaErrorInvalidResourceHandle);
  if (!Start->Recorded || !End->Recorded)
    return ret(cudaErrorInvalidResourceHandle);
  // "If either event has not been completed yet, cudaErrorNotReady is returned."
  if (std::max(Start->Ns, End->Ns) > M.hostNs())
    return cudaErrorNotReady;
  *Ms = static_cast<float>((static_cast<double>(End->Ns) - static_cast<double>(Start->Ns)) / 1e6);
  return cudaSuccess;
}

// --- Stream capture and graphs --------------------------------------------------------

cudaError_t cudaStreamBeginCapture(cudaStream_t Stream, cudaStreamCaptureMode Mode) {
  ENTER();
  if (Model::isLegacy(Stream))
    return ret(cudaErrorStreamCaptureUnsupported);
  CUstream_st *S = M.stream(Stream);
  if (!S || Stream == cudaStreamPerThread)
    return ret(cudaErrorInvalidResourceHandle);
  if (S->Capture)
    return ret(cudaErrorIllegalState);
  if (Mode != cudaStreamCaptureModeGlobal && Mode != cudaStreamCaptureModeThreadLocal &&
      Mode != cudaStreamCaptureModeRelaxed)
    return ret(cudaErrorInvalidValue);
  S->Capture = new CUgraph_st();
  S->CaptureMode = Mode;
  S->CaptureInvalidated = false;
  S->CaptureId = M.NextCaptureId++;
  return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t Stream, cudaGraph_t *Graph) {
  ENTER();
  if (!Graph)
    return ret(cudaErrorInvalidValue);
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (!S->Capture)
    return ret(cudaErrorIllegalState);
  CUgraph_st *G = S->Capture;
  S->Capture = nullptr;
  if (S->CaptureInvalidated) {
    delete G;
    *Graph = nullptr;
    return ret(cudaErrorStreamCaptureInvalidated);
  }
  M.Graphs.insert(G);
  *Graph = G;
  return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t Stream, cudaStreamCaptureStatus *Status) {
  ENTER();
  if (!Status)
    return ret(cudaErrorInvalidValue);
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (!S->Capture)
    *Status = cudaStreamCaptureStatusNone;
  else
    *Status = S->CaptureInvalidated ? cudaStreamCaptureStatusInvalidated
                                    : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t Stream, cudaStreamCaptureStatus *Status,
                                     unsigned long long *Id, cudaGraph_t *Graph,
                                     const cudaGraphNode_t **Deps, const cudaGraphEdgeData **Edges,
                                     size_t *NumDeps) {
  ENTER();
  if (!Status)
    return ret(cudaErrorInvalidValue);
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  *Status = !S->Capture ? cudaStreamCaptureStatusNone
            : S->CaptureInvalidated ? cudaStreamCaptureStatusInvalidated
                                    : cudaStreamCaptureStatusActive;
  if (Id)
    *Id = S->Capture ? S->CaptureId : 0;
  if (Graph)
    *Graph = S->Capture;
  if (Deps)
    *Deps = nullptr;
  if (Edges)
    *Edges = nullptr;
  if (NumDeps)
    *NumDeps = 0;
  return cudaSuccess;
}

cudaError_t cudaGraphGetNodes(cudaGraph_t Graph, cudaGraphNode_t *Nodes, size_t *Count) {
  ENTER();
  if (!Count)
    return ret(cudaErrorInvalidValue);
  if (!M.Graphs.count(Graph))
    return ret(cudaErrorInvalidValue);
  if (!Nodes) {
    *Count = Graph->Nodes.size();
    return cudaSuccess;
  }
  const size_t N = std::min(*Count, Graph->Nodes.size());
  for (size_t I = 0; I < N; ++I)
    Nodes[I] = Graph->Nodes[I].get();
  for (size_t I = N; I < *Count; ++I)
    Nodes[I] = nullptr;
  *Count = N;
  return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t Graph) {
  ENTER();
  if (!M.Graphs.count(Graph))
    return ret(cudaErrorInvalidValue);
  M.Graphs.erase(Graph);
  delete Graph;
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *Exec, cudaGraph_t Graph,
                                 unsigned long long) {
  ENTER();
  if (!Exec || !M.Graphs.count(Graph))
    return ret(cudaErrorInvalidValue);
  auto *X = new CUgraphExec_st();
  X->Graph = new CUgraph_st();
  for (const auto &N : Graph->Nodes) {
    CUgraphNode_st &C = addNode(*X->Graph, N->Type);
    C.Kernel = N->Kernel;
    C.Grid = N->Grid;
    C.Block = N->Block;
    C.SharedMem = N->SharedMem;
    C.Args = N->Args;
    C.Run = N->Run;
    fixArgPtrs(C);
  }
  M.Execs.insert(X);
  *Exec = X;
  CUpti_GraphData G{};
  G.graph = Graph;
  G.graphExec = X;
  resourceEvent(CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED, &G);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t *Exec, cudaGraph_t Graph,
                                          unsigned long long Flags) {
  return cudaGraphInstantiate(Exec, Graph, Flags);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t Exec) {
  ENTER();
  if (!M.Execs.count(Exec))
    return ret(cudaErrorInvalidValue);
  CUpti_GraphData G{};
  G.graphExec = Exec;
  resourceEvent(CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING, &G);
  M.Execs.erase(Exec);
  delete Exec->Graph;
  delete Exec;
  return cudaSuccess;
}

namespace {
cudaError_t graphLaunch(cudaGraphExec_t Exec, cudaStream_t Stream) {
  ENTER();
  if (!M.Execs.count(Exec))
    return ret(cudaErrorInvalidValue);
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (S->Capture)
    return ret(refuseInCapture(*S)); // child graphs are not modelled
  for (const auto &N : Exec->Graph->Nodes) {
    cudaError_t E = cudaSuccess;
    if (N->Type == cudaGraphNodeTypeKernel)
      E = M.launch(*N->Kernel, N->Grid, N->Block, N->ArgPtrs.empty() ? nullptr : N->ArgPtrs.data(),
                   N->SharedMem, Stream, reinterpret_cast<uint64_t>(Exec));
    else if (N->Run)
      E = N->Run(Stream);
    if (E != cudaSuccess)
      return ret(E);
    if (M.Sticky != cudaSuccess)
      return cudaSuccess; // reported by the next call, as an asynchronous fault is
  }
  return cudaSuccess;
}
} // namespace

cudaError_t cudaGraphLaunch(cudaGraphExec_t Exec, cudaStream_t Stream) {
  initializeInjection();
  if (!hooked())
    return graphLaunch(Exec, Stream);
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  const cudaGraphLaunch_v10000_params P{Exec, Stream};
  ApiCall Rt(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000,
             "cudaGraphLaunch", &P, nullptr, M.NextCorrelation);
  const cuGraphLaunch_params D{Exec, Stream};
  ApiCall Dr(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, "cuGraphLaunch",
             &D, nullptr, M.NextCorrelation);
  const cudaError_t E = graphLaunch(Exec, Stream);
  (void)Dr.done(static_cast<CUresult>(E));
  return Rt.done(E);
}

// --- Modules and launches ---------------------------------------------------------------

void **__cudaRegisterFatBinary(void *FatCubin) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  auto **Handle = new void *(FatCubin);
  M.Modules[Handle];
  M.ModuleLayouts[Handle] = deepum::standin::readParamLayouts(FatCubin);
  M.ModuleGlobals[Handle] = deepum::standin::readGlobalInits(FatCubin);
  M.ModuleResources[Handle] =
      deepum::standin::readKernelResources(FatCubin, M.Prop.major * 10 + M.Prop.minor);
  return Handle;
}

void __cudaRegisterFatBinaryEnd(void **) {}

void __cudaUnregisterFatBinary(void **Handle) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  auto It = M.Modules.find(Handle);
  if (It == M.Modules.end())
    return;
  // Kernel records keep their names' pointers: the kernels stay registered
  // (their host functions may be unloaded; the names are ours).
  M.Modules.erase(It);
  M.ModuleLayouts.erase(Handle);
  M.ModuleGlobals.erase(Handle);
  M.ModuleResources.erase(Handle);
  delete Handle;
}

void __cudaRegisterFunction(void **Handle, const char *HostFun, char *, const char *DeviceName,
                            int, uint3 *, uint3 *, dim3 *, dim3 *, int *) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  auto K = std::make_unique<CUkern_st>();
  K->HostFun = HostFun;
  K->Name = DeviceName ? DeviceName : "";
  if (auto L = M.ModuleLayouts.find(Handle); L != M.ModuleLayouts.end())
    if (auto P = L->second.find(K->Name); P != L->second.end()) {
      K->Layout = P->second;
      K->HaveLayout = true;
    }
  if (auto R = M.ModuleResources.find(Handle); R != M.ModuleResources.end())
    if (auto P = R->second.find(K->Name); P != R->second.end())
      K->Resources = P->second;
  if (!K->HaveLayout)
    if (auto T = M.TwinsByHost.find(HostFun); T != M.TwinsByHost.end() && T->second.HaveSizes) {
      K->Layout.Sizes = T->second.ParamSizes;
      K->HaveLayout = true;
    }
  M.Modules[Handle].push_back(HostFun);
  M.Kernels[HostFun] = std::move(K);
}

void __cudaRegisterVar(void **, char *, char *, const char *, int, size_t, int, int) {}
// A __managed__ variable: nvcc's host code reaches it through a pointer
// (`HostVarPtr`, null until registered) that the runtime points at managed
// memory holding the variable's initial value from the cubin. Managed
// memory like any other: kernels fault it in, the host reads it in place.
void __cudaRegisterManagedVar(void **Handle, void **HostVarPtr, char *, const char *DeviceName,
                              int, size_t Size, int, int) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  if (!HostVarPtr || Size == 0)
    return;
  void *P = nullptr;
  if (allocate(M, &P, Size, MemoryKind::Managed) != cudaSuccess) {
    std::fprintf(stderr, "cuda stand-in: cannot allocate __managed__ variable %s (%zu bytes)\n",
                 DeviceName ? DeviceName : "?", Size);
    return;
  }
  std::memset(P, 0, Size);
  if (auto Mod = M.ModuleGlobals.find(Handle); Mod != M.ModuleGlobals.end() && DeviceName)
    if (auto V = Mod->second.find(DeviceName); V != Mod->second.end())
      std::memcpy(P, V->second.data(), std::min(Size, V->second.size()));
  *HostVarPtr = P;
}

char __cudaInitModule(void **) { return 1; }

unsigned __cudaPushCallConfiguration(dim3 Grid, dim3 Block, size_t SharedMem,
                                     struct CUstream_st *Stream) {
  Configs.push_back({Grid, Block, SharedMem, Stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3 *Grid, dim3 *Block, size_t *SharedMem,
                                       void *Stream) {
  if (Configs.empty())
    return ret(cudaErrorMissingConfiguration);
  const CallConfig C = Configs.back();
  Configs.pop_back();
  *Grid = C.Grid;
  *Block = C.Block;
  *SharedMem = C.SharedMem;
  *static_cast<cudaStream_t *>(Stream) = C.Stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t *Kernel, const void *HostFun) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  if (!Kernel)
    return ret(cudaErrorInvalidValue);
  auto It = M.Kernels.find(HostFun);
  if (It == M.Kernels.end())
    return ret(cudaErrorInvalidDeviceFunction);
  *Kernel = It->second.get();
  return cudaSuccess;
}

// __cudaLaunchKernel has a CUPTI callback id but no parameter struct
// (generated_cuda_runtime_api_meta.h): its callbacks carry none.
cudaError_t __cudaLaunchKernel(cudaKernel_t Kernel, dim3 Grid, dim3 Block, void **Args,
                               size_t SharedMem, cudaStream_t Stream) {
  return tracedLaunch(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, "__cudaLaunchKernel",
                      nullptr, false, Kernel, Grid, Block, Args, SharedMem, Stream);
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t Kernel, dim3 Grid, dim3 Block, void **Args,
                                    size_t SharedMem, cudaStream_t Stream) {
  return tracedLaunch(CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
                      "__cudaLaunchKernel_ptsz", nullptr, true, Kernel, Grid, Block, Args,
                      SharedMem, Stream ? Stream : cudaStreamPerThread);
}

cudaError_t cudaLaunchKernel(const void *Func, dim3 Grid, dim3 Block, void **Args,
                             size_t SharedMem, cudaStream_t Stream) {
  const cudaLaunchKernel_v7000_params P{Func, Grid, Block, Args, SharedMem, Stream};
  return tracedLaunch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, "cudaLaunchKernel", &P,
                      false, kernelOf(Func), Grid, Block, Args, SharedMem, Stream);
}

cudaError_t cudaLaunchKernel_ptsz(const void *Func, dim3 Grid, dim3 Block, void **Args,
                                  size_t SharedMem, cudaStream_t Stream) {
  const cudaLaunchKernel_ptsz_v7000_params P{Func, Grid, Block, Args, SharedMem, Stream};
  return tracedLaunch(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
                      "cudaLaunchKernel_ptsz", &P, true, kernelOf(Func), Grid, Block, Args,
                      SharedMem, Stream ? Stream : cudaStreamPerThread);
}

// cudaProfilerStart/Stop: no effect on the model; their callbacks (runtime,
// and the driver's cuProfilerStart/Stop nested; neither has a parameter
// struct) are how profilers see iteration marks.
cudaError_t cudaProfilerStart(void) { return profilerCall(true); }
cudaError_t cudaProfilerStop(void) { return profilerCall(false); }

cudaError_t cudaFuncGetName(const char **Name, const void *Func) {
  ENTER();
  if (!Name)
    return ret(cudaErrorInvalidValue);
  auto It = M.Kernels.find(Func);
  if (It == M.Kernels.end())
    return ret(cudaErrorInvalidDeviceFunction);
  *Name = It->second->Name.c_str();
  return cudaSuccess;
}

// The parameter layout: from the cubin's .nv.info (Fatbin.h), else from the
// sizes a twin declares. `Func` is the host stub or the handle that
// __cudaGetKernel / cudaGetFuncBySymbol gave (one object here, CUkern_st),
// as the runtime accepts either.
int deepum_standin_param_info(const void *Func, size_t Index, size_t *Offset, size_t *Size) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  const CUkern_st *K = nullptr;
  if (auto It = M.Kernels.find(Func); It != M.Kernels.end())
    K = It->second.get();
  else
    for (const auto &[Stub, Kern] : M.Kernels)
      if (Kern.get() == Func)
        K = Kern.get();
  if (!K)
    return cudaErrorInvalidDeviceFunction;
  if (!Offset || !K->HaveLayout || !deepum::standin::paramInfo(K->Layout, Index, Offset, Size))
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

cudaError_t cudaFuncGetParamInfo(const void *Func, size_t Index, size_t *Offset, size_t *Size) {
  ENTER();
  return ret(static_cast<cudaError_t>(deepum_standin_param_info(Func, Index, Offset, Size)));
}

cudaError_t cudaGetFuncBySymbol(cudaFunction_t *Function, const void *Symbol) {
  ENTER();
  if (!Function)
    return ret(cudaErrorInvalidValue);
  auto It = M.Kernels.find(Symbol);
  if (It == M.Kernels.end())
    return ret(cudaErrorInvalidDeviceFunction);
  *Function = reinterpret_cast<cudaFunction_t>(It->second.get());
  return cudaSuccess;
}

} // extern "C"

// --- Driver entry points reached through cudaGetDriverEntryPointByVersion ---------------
// The graph inspection deepum's CUDA backend does at GRAPHEXEC_CREATED.

namespace {

CUresult graphGetNodes(CUgraph G, CUgraphNode *Nodes, size_t *Count) {
  return static_cast<CUresult>(cudaGraphGetNodes(G, Nodes, Count));
}

CUresult graphNodeGetType(CUgraphNode N, CUgraphNodeType *Type) {
  if (!N || !Type)
    return CUDA_ERROR_INVALID_VALUE;
  *Type = static_cast<CUgraphNodeType>(N->Type);
  return CUDA_SUCCESS;
}

CUresult graphKernelNodeGetParams(CUgraphNode N, CUDA_KERNEL_NODE_PARAMS *P) {
  if (!N || !P || N->Type != cudaGraphNodeTypeKernel)
    return CUDA_ERROR_INVALID_VALUE;
  *P = CUDA_KERNEL_NODE_PARAMS{};
  P->func = reinterpret_cast<CUfunction>(N->Kernel);
  P->gridDimX = N->Grid.x;
  P->gridDimY = N->Grid.y;
  P->gridDimZ = N->Grid.z;
  P->blockDimX = N->Block.x;
  P->blockDimY = N->Block.y;
  P->blockDimZ = N->Block.z;
  P->sharedMemBytes = static_cast<unsigned>(N->SharedMem);
  P->kernelParams = N->ArgPtrs.empty() ? nullptr : N->ArgPtrs.data();
  return CUDA_SUCCESS;
}

CUresult graphChildGraphNodeGetGraph(CUgraphNode, CUgraph *) {
  return CUDA_ERROR_INVALID_VALUE; // captures here make no child-graph nodes
}

CUresult funcGetName(const char **Name, CUfunction F) {
  if (!Name || !F)
    return CUDA_ERROR_INVALID_VALUE;
  *Name = reinterpret_cast<CUkern_st *>(F)->Name.c_str();
  return CUDA_SUCCESS;
}

/// cuStreamIsCapturing, as cudaGetDriverEntryPointByVersion hands it out (the
/// default-stream version: a null stream is the legacy stream).
CUresult streamIsCapturing(CUstream Stream, CUstreamCaptureStatus *Status) {
  cudaStreamCaptureStatus S{};
  const cudaError_t E = cudaStreamIsCapturing(Stream, Status ? &S : nullptr);
  if (E == cudaSuccess)
    *Status = static_cast<CUstreamCaptureStatus>(S);
  return static_cast<CUresult>(E);
}

struct DriverEntry {
  const char *Name;
  void *Fn;
};

} // namespace

extern "C" cudaError_t cudaGetDriverEntryPointByVersion(const char *Symbol, void **Fn,
                                                        unsigned int, unsigned long long Flags,
                                                        cudaDriverEntryPointQueryResult *Status) {
  if (!Symbol || !Fn || (Flags & ~0x3ull))
    return ret(cudaErrorInvalidValue);
  const DriverEntry Entries[] = {
      {"cuGraphGetNodes", reinterpret_cast<void *>(&graphGetNodes)},
      {"cuGraphNodeGetType", reinterpret_cast<void *>(&graphNodeGetType)},
      {"cuGraphKernelNodeGetParams", reinterpret_cast<void *>(&graphKernelNodeGetParams)},
      {"cuGraphChildGraphNodeGetGraph", reinterpret_cast<void *>(&graphChildGraphNodeGetGraph)},
      {"cuFuncGetName", reinterpret_cast<void *>(&funcGetName)},
      {"cuStreamIsCapturing", reinterpret_cast<void *>(&streamIsCapturing)},
  };
  for (const DriverEntry &E : Entries)
    if (std::strcmp(E.Name, Symbol) == 0) {
      *Fn = E.Fn;
      if (Status)
        *Status = cudaDriverEntryPointSuccess;
      return cudaSuccess;
    }
  *Fn = nullptr;
  if (Status)
    *Status = cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

extern "C" cudaError_t cudaGetDriverEntryPoint(const char *Symbol, void **Fn,
                                               unsigned long long Flags,
                                               cudaDriverEntryPointQueryResult *Status) {
  return cudaGetDriverEntryPointByVersion(Symbol, Fn, CUDART_VERSION, Flags, Status);
}

// --- The table the stand-in's libcupti.so.13 reads (ApiHook.h) ------------------------------

extern "C" const deepum_standin_cupti_table *deepum_standin_cupti_v1(void) {
  static const deepum_standin_cupti_table Table = {
      sizeof(deepum_standin_cupti_table),
      [](deepum_standin_api_hook_fn Fn, void *User) {
        HookUser.store(User);
        HookFn.store(Fn, std::memory_order_release);
      },
      [] {
        Model &M = Model::get();
        deepum::standin::ModelLock Lock(M);
        return M.stampNs();
      },
      &deepum_standin_kernel_records,
      [](int On) {
        Model &M = Model::get();
        deepum::standin::ModelLock Lock(M);
        M.Eng->setEventLog(On ? &M.UmLog : nullptr);
      },
      [](deepum_standin_um_event *Out, size_t Capacity) -> size_t {
        Model &M = Model::get();
        deepum::standin::ModelLock Lock(M);
        M.skewUmEvents();
        const size_t N = std::min(Capacity, M.UmLog.size());
        using K = deepum::sim::UmEvent::Kind;
        for (size_t I = 0; I < N; ++I) {
          const deepum::sim::UmEvent &E = M.UmLog[I];
          Out[I].kind = E.Type == K::GpuPageFault    ? 0
                        : E.Type == K::MigrationHtoD ? 1
                        : E.Type == K::MigrationDtoH ? 2
                                                     : 3;
          Out[I].cause = static_cast<int>(E.Why);
          Out[I].access = static_cast<int>(E.Mode);
          Out[I].address = E.Address;
          Out[I].bytes = E.Bytes;
          Out[I].start_ns = E.StartNs;
          Out[I].end_ns = E.EndNs;
        }
        M.UmLog.erase(M.UmLog.begin(), M.UmLog.begin() + static_cast<std::ptrdiff_t>(N));
        M.UmSkewed -= N;
        return N;
      },
  };
  return &Table;
}
