//===- Cupti.cpp - libcupti.so.13 of the stand-in ---------------------------===//
//
// The CUPTI entry points deepum calls (executor/cuda, profiler/cuda), over the
// stand-in runtime's API hook and kernel records (ApiHook.h):
//
// - callbacks: one subscriber at a time; every callback id disabled until
//   cuptiEnableCallback/cuptiEnableDomain; runtime- and driver-domain API
//   callbacks with CUpti_CallbackData, resource callbacks with
//   CUpti_ResourceData (graph execs);
// - activity: kernel records as CUpti_ActivityKernel10, for kernels launched
//   while CUPTI_ACTIVITY_KIND_KERNEL (or CONCURRENT_KERNEL) is enabled,
//   delivered in client buffers at cuptiActivityFlushAll;
// - the context is the stand-in driver's primary context (cuCtxGetCurrent),
//   device 0; timestamps are the model's nanoseconds.
//
// Record layouts, enums and ids come from the installed CUPTI headers.
//
//===----------------------------------------------------------------------===//
#include "ApiHook.h"
#include "deepum/standin/StandIn.h"

#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

struct CUpti_Subscriber_st {
  CUpti_CallbackFunc Fn = nullptr;
  void *User = nullptr;
  bool Domain[CUPTI_CB_DOMAIN_SIZE] = {};
  std::set<std::pair<int, CUpti_CallbackId>> Ids;
};

namespace {

struct ResultName {
  CUptiResult Code;
  const char *Name;
};
// Generated from cupti_result.h (standin/tools/cupti_result_table.py).
const ResultName kResults[] = {
#include "CuptiResultTable.inc"
};

struct State {
  std::mutex Mu;
  CUpti_Subscriber_st *Sub = nullptr; // the one subscriber
  const deepum_standin_cupti_table *Rt = nullptr;
  bool RtLooked = false;
  CUpti_BuffersCallbackRequestFunc Request = nullptr;
  CUpti_BuffersCallbackCompleteFunc Complete = nullptr;
  bool Kinds[CUPTI_ACTIVITY_KIND_COUNT] = {};
  size_t KernelCursor = 0; // next kernel record of the runtime to deliver
  bool UmKinds[CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT] = {};
  size_t Dropped = 0;
  std::unordered_map<const void *, uint32_t> StreamIds;
};

State &state() {
  static State *S = new State(); // callbacks may arrive during exit
  return *S;
}

/// The stand-in runtime's table, looked up once (S.Mu held).
const deepum_standin_cupti_table *runtime(State &S) {
  if (S.RtLooked)
    return S.Rt;
  S.RtLooked = true;
  void *Sym = dlsym(RTLD_DEFAULT, "deepum_standin_cupti_v1");
  if (!Sym)
    if (void *H = dlopen("libcudart.so.13", RTLD_NOW | RTLD_GLOBAL))
      Sym = dlsym(H, "deepum_standin_cupti_v1");
  if (!Sym)
    return nullptr;
  const deepum_standin_cupti_table *T = reinterpret_cast<deepum_standin_cupti_v1_fn>(Sym)();
  if (T && T->size >= sizeof(deepum_standin_cupti_table))
    S.Rt = T;
  return S.Rt;
}

CUcontext currentContext() {
  CUcontext C = nullptr;
  return cuCtxGetCurrent(&C) == CUDA_SUCCESS ? C : nullptr;
}

bool kernelKind(CUpti_ActivityKind K) {
  return K == CUPTI_ACTIVITY_KIND_KERNEL || K == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
}

/// A stream's CUPTI id: 1 for the legacy stream, then 2, 3, ... in the order
/// streams first appear in a record (S.Mu held).
uint32_t streamId(State &S, const void *Stream) {
  auto [It, New] = S.StreamIds.emplace(Stream, 0);
  if (New)
    It->second = Stream == nullptr ? 1 : static_cast<uint32_t>(S.StreamIds.size() + 1);
  return It->second;
}

CUpti_ActivityKernel10 kernelRecord(State &S, const deepum_standin_kernel_record &K,
                                    CUpti_ActivityKind Kind) {
  CUpti_ActivityKernel10 R{};
  R.kind = Kind;
  R.start = K.start_ns;
  R.end = K.end_ns;
  R.completed = K.end_ns;
  R.queued = K.start_ns;
  R.submitted = K.start_ns;
  R.deviceId = 0;
  R.contextId = 1;
  R.streamId = streamId(S, K.stream);
  R.gridX = static_cast<int32_t>(K.grid[0]);
  R.gridY = static_cast<int32_t>(K.grid[1]);
  R.gridZ = static_cast<int32_t>(K.grid[2]);
  R.blockX = static_cast<int32_t>(K.block[0]);
  R.blockY = static_cast<int32_t>(K.block[1]);
  R.blockZ = static_cast<int32_t>(K.block[2]);
  R.dynamicSharedMemory = static_cast<int32_t>(K.shared_mem_bytes);
  R.correlationId = static_cast<uint32_t>(K.correlation_id);
  R.gridId = static_cast<int64_t>(K.correlation_id);
  R.name = K.name;
  R.graphId = K.graph_exec ? 1 : 0;
  return R;
}

size_t recordSize(CUpti_ActivityKind Kind) {
  if (kernelKind(Kind))
    return sizeof(CUpti_ActivityKernel10);
  if (Kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
    return sizeof(CUpti_ActivityUnifiedMemoryCounter3);
  return 0;
}

/// A model event as a Unified Memory counter record; false when its counter
/// kind is not configured.
bool umRecord(const State &S, const deepum_standin_um_event &E,
              CUpti_ActivityUnifiedMemoryCounter3 &R) {
  R = CUpti_ActivityUnifiedMemoryCounter3{};
  R.kind = CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
  R.address = E.address;
  R.start = E.start_ns;
  R.end = E.end_ns;
  R.processId = static_cast<uint32_t>(getpid());
  switch (E.kind) {
  case 0:
    R.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT;
    R.value = 1; // one fault group for this page
    R.srcId = 0;
    // A read-write access faults as a write.
    R.flags = E.access == 0 ? CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_READ
                            : CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE;
    break;
  case 1:
  case 2: {
    const bool ToDevice = E.kind == 1;
    R.counterKind = ToDevice ? CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD
                             : CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH;
    R.value = E.bytes;
    R.srcId = 0; // the device for DtoH; the host (CPU 0) for HtoD
    R.dstId = 0;
    static const CUpti_ActivityUnifiedMemoryMigrationCause Causes[] = {
        CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_UNKNOWN,
        CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE, // a demand fault
        CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_PREFETCH,  // the driver's prefetcher
        CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER,      // cudaMemPrefetchAsync
        CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_EVICTION};
    R.flags = E.cause >= 0 && E.cause < 5 ? Causes[E.cause]
                                          : CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_UNKNOWN;
    break;
  }
  default:
    R.counterKind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_THRASHING;
    R.value = E.bytes;
    R.srcId = 1; // device 0's bit
    R.processors[0] = 1;
    break;
  }
  return S.UmKinds[R.counterKind];
}

void CUPTIAPI noHook(const deepum_standin_api_call *, void *) {}

/// The runtime's hook: forwards a call site to the subscriber when its id is enabled.
void onApi(const deepum_standin_api_call *Call, void *) {
  State &S = state();
  CUpti_CallbackFunc Fn = nullptr;
  void *User = nullptr;
  {
    std::lock_guard<std::mutex> Lock(S.Mu);
    CUpti_Subscriber_st *Sub = S.Sub;
    if (!Sub || Call->domain <= CUPTI_CB_DOMAIN_INVALID || Call->domain >= CUPTI_CB_DOMAIN_SIZE)
      return;
    if (!Sub->Domain[Call->domain] && !Sub->Ids.count({Call->domain, Call->cbid}))
      return;
    Fn = Sub->Fn;
    User = Sub->User;
  }
  const auto Domain = static_cast<CUpti_CallbackDomain>(Call->domain);
  if (Domain == CUPTI_CB_DOMAIN_RESOURCE) {
    CUpti_ResourceData R{};
    R.context = currentContext();
    R.resourceDescriptor = const_cast<void *>(Call->params);
    Fn(User, Domain, Call->cbid, &R);
    return;
  }
  CUpti_CallbackData D{};
  D.callbackSite = static_cast<CUpti_ApiCallbackSite>(Call->site);
  D.functionName = Call->function_name;
  D.functionParams = Call->params;
  D.functionReturnValue = Call->return_value;
  D.symbolName = Call->symbol_name;
  D.context = currentContext();
  D.contextUid = 1;
  D.correlationData = Call->correlation_data;
  D.correlationId = Call->correlation_id;
  Fn(User, Domain, Call->cbid, &D);
}

bool validId(CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid) {
  switch (Domain) {
  case CUPTI_CB_DOMAIN_RUNTIME_API:
    return Cbid > CUPTI_RUNTIME_TRACE_CBID_INVALID && Cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE;
  case CUPTI_CB_DOMAIN_DRIVER_API:
    return Cbid > CUPTI_DRIVER_TRACE_CBID_INVALID && Cbid < CUPTI_DRIVER_TRACE_CBID_SIZE;
  case CUPTI_CB_DOMAIN_RESOURCE:
    return Cbid > CUPTI_CBID_RESOURCE_INVALID && Cbid < CUPTI_CBID_RESOURCE_SIZE;
  default:
    return Domain > CUPTI_CB_DOMAIN_INVALID && Domain < CUPTI_CB_DOMAIN_SIZE;
  }
}

} // namespace

extern "C" {

CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult Result, const char **Str) {
  if (!Str)
    return CUPTI_ERROR_INVALID_PARAMETER;
  for (const ResultName &R : kResults)
    if (R.Code == Result) {
      *Str = R.Name;
      return CUPTI_SUCCESS;
    }
  return CUPTI_ERROR_INVALID_PARAMETER;
}

// --- Callbacks ----------------------------------------------------------------------------

CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *Subscriber, CUpti_CallbackFunc Callback,
                                    void *UserData) {
  if (!Subscriber)
    return CUPTI_ERROR_INVALID_PARAMETER;
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (S.Sub)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  const deepum_standin_cupti_table *Rt = runtime(S);
  if (!Rt)
    return CUPTI_ERROR_NOT_INITIALIZED;
  S.Sub = new CUpti_Subscriber_st();
  S.Sub->Fn = Callback;
  S.Sub->User = UserData;
  Rt->set_api_hook(&onApi, nullptr);
  *Subscriber = S.Sub;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle Subscriber) {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (!Subscriber || Subscriber != S.Sub)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (S.Rt)
    S.Rt->set_api_hook(&noHook, nullptr); // a call in flight may still hold onApi
  S.Sub = nullptr;
  // Never freed: a callback already past the check above may still read it.
  Subscriber->Fn = nullptr;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t Enable, CUpti_SubscriberHandle Subscriber,
                                         CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid) {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (!Subscriber || Subscriber != S.Sub || Domain <= CUPTI_CB_DOMAIN_INVALID ||
      Domain >= CUPTI_CB_DOMAIN_SIZE || !validId(Domain, Cbid))
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (Enable)
    Subscriber->Ids.insert({Domain, Cbid});
  else
    Subscriber->Ids.erase({Domain, Cbid});
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiEnableDomain(uint32_t Enable, CUpti_SubscriberHandle Subscriber,
                                       CUpti_CallbackDomain Domain) {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (!Subscriber || Subscriber != S.Sub || Domain <= CUPTI_CB_DOMAIN_INVALID ||
      Domain >= CUPTI_CB_DOMAIN_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  Subscriber->Domain[Domain] = Enable != 0;
  if (!Enable)
    for (auto It = Subscriber->Ids.begin(); It != Subscriber->Ids.end();)
      It = It->first == Domain ? Subscriber->Ids.erase(It) : std::next(It);
  return CUPTI_SUCCESS;
}

// --- Devices, contexts, time --------------------------------------------------------------

CUptiResult CUPTIAPI cuptiGetDeviceId(CUcontext Context, uint32_t *DeviceId) {
  if (!DeviceId)
    return CUPTI_ERROR_INVALID_PARAMETER;
  const CUcontext Current = currentContext();
  if (!Current || (Context && Context != Current))
    return CUPTI_ERROR_INVALID_CONTEXT;
  *DeviceId = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetContextId(CUcontext Context, uint32_t *ContextId) {
  if (!ContextId)
    return CUPTI_ERROR_INVALID_PARAMETER;
  const CUcontext Current = currentContext();
  if (!Current || (Context && Context != Current))
    return CUPTI_ERROR_INVALID_CONTEXT;
  *ContextId = 1;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *Timestamp) {
  if (!Timestamp)
    return CUPTI_ERROR_INVALID_PARAMETER;
  State &S = state();
  const deepum_standin_cupti_table *Rt = nullptr;
  {
    std::lock_guard<std::mutex> Lock(S.Mu);
    Rt = runtime(S);
  }
  if (!Rt)
    return CUPTI_ERROR_NOT_INITIALIZED;
  // Each read is after the last, as a clock's are (see Model::stampNs).
  *Timestamp = Rt->now_ns();
  return CUPTI_SUCCESS;
}

// --- Activity -----------------------------------------------------------------------------

CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc Request,
                                                    CUpti_BuffersCallbackCompleteFunc Complete) {
  if (!Request || !Complete)
    return CUPTI_ERROR_INVALID_PARAMETER;
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  S.Request = Request;
  S.Complete = Complete;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind Kind) {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (Kind <= CUPTI_ACTIVITY_KIND_INVALID || Kind >= CUPTI_ACTIVITY_KIND_COUNT)
    return CUPTI_ERROR_INVALID_KIND;
  const deepum_standin_cupti_table *Rt = runtime(S);
  if (!Rt)
    return CUPTI_ERROR_NOT_INITIALIZED;
  if (Kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
    Rt->set_um_log(1); // records only for the counter kinds configured

  if (kernelKind(Kind) && !S.Kinds[CUPTI_ACTIVITY_KIND_KERNEL] &&
      !S.Kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL])
    S.KernelCursor = Rt->kernel_records(nullptr, 0, 0); // kernels from now on
  S.Kinds[Kind] = true;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind Kind) {
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  if (Kind <= CUPTI_ACTIVITY_KIND_INVALID || Kind >= CUPTI_ACTIVITY_KIND_COUNT)
    return CUPTI_ERROR_INVALID_KIND;
  if (Kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER && S.Kinds[Kind] && S.Rt)
    S.Rt->set_um_log(0);
  S.Kinds[Kind] = false;
  return CUPTI_SUCCESS;
}

/// Delivers every pending record: buffers from the client's request
/// callback, handed back full (or at the end) through its complete callback.
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t) {
  State &S = state();
  CUpti_BuffersCallbackRequestFunc Request = nullptr;
  CUpti_BuffersCallbackCompleteFunc Complete = nullptr;
  std::vector<uint8_t> Pending; // records, back to back
  std::vector<size_t> Sizes;
  {
    std::lock_guard<std::mutex> Lock(S.Mu);
    const deepum_standin_cupti_table *Rt = runtime(S);
    if (!Rt)
      return CUPTI_SUCCESS;
    Request = S.Request;
    Complete = S.Complete;
    auto Add = [&](const void *R, size_t Size) {
      const auto *P = static_cast<const uint8_t *>(R);
      Pending.insert(Pending.end(), P, P + Size);
      Sizes.push_back(Size);
    };
    if (S.Kinds[CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER]) {
      deepum_standin_um_event E[256];
      while (size_t N = Rt->take_um_events(E, 256))
        for (size_t I = 0; I < N; ++I) {
          CUpti_ActivityUnifiedMemoryCounter3 R;
          if (umRecord(S, E[I], R))
            Add(&R, sizeof R);
        }
    }
    if (S.Kinds[CUPTI_ACTIVITY_KIND_KERNEL] || S.Kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]) {
      const CUpti_ActivityKind Kind = S.Kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL]
                                          ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                          : CUPTI_ACTIVITY_KIND_KERNEL;
      const size_t Held = Rt->kernel_records(nullptr, 0, 0);
      if (Held < S.KernelCursor)
        S.KernelCursor = 0; // the runtime's records were reset
      std::vector<deepum_standin_kernel_record> New(Held - S.KernelCursor);
      if (!New.empty()) // a NULL `out` asks for the count
        New.resize(Rt->kernel_records(New.data(), New.size(), S.KernelCursor));
      S.KernelCursor += New.size();
      for (const auto &K : New) {
        const CUpti_ActivityKernel10 R = kernelRecord(S, K, Kind);
        Add(&R, sizeof R);
      }
    }
    if (!Request || !Complete) {
      S.Dropped += Sizes.size();
      return CUPTI_SUCCESS;
    }
  }
  size_t Next = 0, Offset = 0;
  while (Next < Sizes.size()) {
    uint8_t *Buffer = nullptr;
    size_t Size = 0, MaxRecords = 0;
    Request(&Buffer, &Size, &MaxRecords);
    size_t Used = 0, N = 0;
    while (Buffer && Next + N < Sizes.size() && Used + Sizes[Next + N] <= Size &&
           (MaxRecords == 0 || N < MaxRecords))
      Used += Sizes[Next + N++];
    if (N == 0) {
      // No (usable) buffer: the rest is dropped, as CUPTI drops records.
      std::lock_guard<std::mutex> Lock(S.Mu);
      S.Dropped += Sizes.size() - Next;
      if (Buffer)
        Complete(nullptr, 0, Buffer, Size, 0);
      break;
    }
    std::memcpy(Buffer, Pending.data() + Offset, Used);
    Offset += Used;
    Next += N;
    Complete(nullptr, 0, Buffer, Size, Used);
  }
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *Buffer, size_t ValidBufferSizeBytes,
                                                CUpti_Activity **Record) {
  if (!Buffer || !Record)
    return CUPTI_ERROR_INVALID_PARAMETER;
  size_t Offset = 0;
  if (*Record) {
    const size_t Size = recordSize((*Record)->kind);
    if (!Size)
      return CUPTI_ERROR_INVALID_KIND;
    Offset = static_cast<size_t>(reinterpret_cast<uint8_t *>(*Record) - Buffer) + Size;
  }
  if (Offset + sizeof(CUpti_Activity) > ValidBufferSizeBytes)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto *R = reinterpret_cast<CUpti_Activity *>(Buffer + Offset);
  const size_t Size = recordSize(R->kind);
  if (!Size)
    return CUPTI_ERROR_INVALID_KIND;
  if (Offset + Size > ValidBufferSizeBytes)
    return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *Record = R;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t *Dropped) {
  if (!Dropped)
    return CUPTI_ERROR_INVALID_PARAMETER;
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  *Dropped = S.Dropped;
  S.Dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult CUPTIAPI cuptiActivityConfigureUnifiedMemoryCounter(
    CUpti_ActivityUnifiedMemoryCounterConfig *Config, uint32_t Count) {
  if (!Config || Count == 0)
    return CUPTI_ERROR_INVALID_PARAMETER;
  for (uint32_t I = 0; I < Count; ++I) {
    const CUpti_ActivityUnifiedMemoryCounterConfig &C = Config[I];
    if (C.scope <= CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_UNKNOWN ||
        C.scope >= CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_COUNT ||
        C.kind <= CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_UNKNOWN ||
        C.kind >= CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_COUNT ||
        (C.scope == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE &&
         C.deviceId != 0))
      return CUPTI_ERROR_INVALID_PARAMETER;
  }
  // A device without concurrentManagedAccess: the stand-in reports it as the
  // devices where CUPTI cannot profile Unified Memory.
  int Managed = 1;
  if (cudaDeviceGetAttribute(&Managed, cudaDevAttrConcurrentManagedAccess, 0) != cudaSuccess ||
      !Managed)
    return CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE;
  State &S = state();
  std::lock_guard<std::mutex> Lock(S.Mu);
  for (uint32_t I = 0; I < Count; ++I)
    S.UmKinds[Config[I].kind] = Config[I].enable != 0;
  return CUPTI_SUCCESS;
}

} // extern "C"
