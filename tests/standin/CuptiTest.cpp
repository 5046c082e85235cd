//===- CuptiTest.cpp - The stand-in's libcupti.so.13 keeps CUPTI's contracts ===//
//
// Each test quotes the CUPTI API reference (CUDA 13; the same text is in
// cupti_callbacks.h / cupti_activity.h) for the behaviour it checks. Linked
// against the stand-in's libcupti.so.13, libcudart.so.13 and libcuda.so.1;
// ctest runs each test in its own process.
//
//===----------------------------------------------------------------------===//
#include "deepum/standin/StandIn.h"

#include "NvccEntryPoints.h"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr const char *kName = "_Z6addOnePfi";

void hostSymbol() {}
void addOne(deepum_standin_launch *L, void **Args, void *) {
  float *P = *static_cast<float **>(Args[0]);
  const int N = *static_cast<int *>(Args[1]);
  if (!deepum_standin_access(L, P, N * sizeof(float), DEEPUM_STANDIN_READ_WRITE))
    return;
  for (int I = 0; I < N; ++I)
    P[I] += 1;
}

const void *kernel() {
  static const void *Fn = [] {
    const void *F = reinterpret_cast<const void *>(&hostSymbol);
    void **H = __cudaRegisterFatBinary(nullptr);
    __cudaRegisterFunction(H, static_cast<const char *>(F), nullptr, kName, -1, nullptr, nullptr,
                           nullptr, nullptr, nullptr);
    __cudaRegisterFatBinaryEnd(H);
    const uint32_t Sizes[] = {sizeof(float *), sizeof(int)};
    EXPECT_EQ(deepum_standin_register_twin(F, nullptr, &addOne, nullptr, Sizes, 2), 0);
    return F;
  }();
  return Fn;
}

struct Buffer {
  float *P = nullptr;
  int N = 256;
  Buffer() {
    EXPECT_EQ(cudaMallocManaged(&P, N * sizeof(float), cudaMemAttachGlobal), cudaSuccess);
  }
  ~Buffer() { (void)cudaFree(P); }
};

cudaError_t launch(Buffer &B, dim3 Grid = dim3(1)) {
  void *Args[] = {&B.P, &B.N};
  return cudaLaunchKernel(kernel(), Grid, dim3(32), Args, 0, nullptr);
}

cudaError_t launchTripleChevronPath(Buffer &B) {
  cudaKernel_t K = nullptr;
  if (cudaError_t E = __cudaGetKernel(&K, kernel()))
    return E;
  void *Args[] = {&B.P, &B.N};
  return __cudaLaunchKernel(K, dim3(2), dim3(64), Args, 0, nullptr);
}

struct Site {
  CUpti_CallbackDomain Domain;
  CUpti_CallbackId Cbid;
  CUpti_ApiCallbackSite Where;
  std::string Symbol;
  uint32_t Correlation;
  uint64_t *CorrelationData;
  CUcontext Context;
  // Decoded parameters of cudaLaunchKernel / cuLaunchKernel.
  uint64_t DataAtExit = 0;
  const void *Func = nullptr;
  unsigned GridX = 0, BlockX = 0;
  int Result = -1;
};

struct Log {
  std::vector<Site> Sites;
};

void CUPTIAPI record(void *User, CUpti_CallbackDomain Domain, CUpti_CallbackId Cbid,
                     const void *Data) {
  auto *L = static_cast<Log *>(User);
  const auto *D = static_cast<const CUpti_CallbackData *>(Data);
  Site S{Domain,           Cbid,
         D->callbackSite,  D->symbolName ? D->symbolName : "",
         D->correlationId, D->correlationData,
         D->context};
  if (Domain == CUPTI_CB_DOMAIN_RUNTIME_API &&
      Cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000) {
    const auto *P = static_cast<const cudaLaunchKernel_v7000_params *>(D->functionParams);
    S.Func = P->func;
    S.GridX = P->gridDim.x;
    S.BlockX = P->blockDim.x;
    if (D->callbackSite == CUPTI_API_EXIT)
      S.Result = *static_cast<const cudaError_t *>(D->functionReturnValue);
  }
  if (Domain == CUPTI_CB_DOMAIN_DRIVER_API && Cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) {
    const auto *P = static_cast<const cuLaunchKernel_params *>(D->functionParams);
    S.Func = P->f;
    S.GridX = P->gridDimX;
    S.BlockX = P->blockDimX;
    if (D->callbackSite == CUPTI_API_EXIT)
      S.Result = *static_cast<const CUresult *>(D->functionReturnValue);
  }
  if (D->callbackSite == CUPTI_API_ENTER)
    *D->correlationData = 0x5eed + S.Correlation;
  else
    S.DataAtExit = *D->correlationData;
  L->Sites.push_back(S);
}

// --- Callback API ----------------------------------------------------------------------

// cuptiSubscribe: "Only a single subscriber can be registered at a time. ...
// In case profiling session is already started by another CUPTI client, this
// function returns the error code CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED."
// "\retval CUPTI_ERROR_INVALID_PARAMETER if subscriber is NULL".
TEST(CuptiCallbacks, OneSubscriberAtATime) {
  Log L;
  CUpti_SubscriberHandle A = nullptr, B = nullptr;
  EXPECT_EQ(cuptiSubscribe(nullptr, &record, &L), CUPTI_ERROR_INVALID_PARAMETER);
  ASSERT_EQ(cuptiSubscribe(&A, &record, &L), CUPTI_SUCCESS);
  EXPECT_EQ(cuptiSubscribe(&B, &record, &L), CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  const char *Str = nullptr;
  ASSERT_EQ(cuptiGetResultString(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, &Str),
            CUPTI_SUCCESS);
  EXPECT_STREQ(Str, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
  // Unsubscribing frees the place.
  ASSERT_EQ(cuptiUnsubscribe(A), CUPTI_SUCCESS);
  EXPECT_EQ(cuptiUnsubscribe(A), CUPTI_ERROR_INVALID_PARAMETER);
  ASSERT_EQ(cuptiSubscribe(&B, &record, &L), CUPTI_SUCCESS);
  EXPECT_EQ(cuptiUnsubscribe(B), CUPTI_SUCCESS);
}

// cuptiSubscribe: "This function does not enable any callbacks."
// cuptiEnableCallback: "\retval CUPTI_ERROR_INVALID_PARAMETER if subscriber,
// domain or cbid is invalid."
TEST(CuptiCallbacks, NoneUntilEnabledAndInvalidIdsRefused) {
  Log L;
  CUpti_SubscriberHandle S = nullptr;
  ASSERT_EQ(cuptiSubscribe(&S, &record, &L), CUPTI_SUCCESS);
  Buffer B;
  ASSERT_EQ(launch(B), cudaSuccess);
  EXPECT_TRUE(L.Sites.empty());
  EXPECT_EQ(cuptiEnableCallback(1, S, CUPTI_CB_DOMAIN_INVALID, 1), CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiEnableCallback(1, S, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE),
            CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiEnableCallback(1, nullptr, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
            CUPTI_ERROR_INVALID_PARAMETER);
  EXPECT_EQ(cuptiEnableDomain(1, S, CUPTI_CB_DOMAIN_SIZE), CUPTI_ERROR_INVALID_PARAMETER);
  // Disabling a domain turns every id of it off.
  ASSERT_EQ(cuptiEnableDomain(1, S, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
  ASSERT_EQ(launch(B), cudaSuccess);
  EXPECT_EQ(L.Sites.size(), 2u); // the nested cuLaunchKernel, enter and exit
  ASSERT_EQ(cuptiEnableDomain(0, S, CUPTI_CB_DOMAIN_DRIVER_API), CUPTI_SUCCESS);
  L.Sites.clear();
  ASSERT_EQ(launch(B), cudaSuccess);
  EXPECT_TRUE(L.Sites.empty());
  EXPECT_EQ(cuptiUnsubscribe(S), CUPTI_SUCCESS);
}

// CUpti_CallbackData: the callback is made at API entry and exit
// (callbackSite); functionParams is the API's parameter structure;
// functionReturnValue "is only valid for CUPTI_API_EXIT"; symbolName is "the
// name of the symbol ... for example the kernel name for a launch call";
// correlationId "is the same for both the enter and exit callback" and
// correlationData is "a pointer to ... data that is passed from the enter
// callback to the exit callback". The runtime launches through the driver:
// the driver's cuLaunchKernel callback is nested in the runtime's.
TEST(CuptiCallbacks, LaunchesReportRuntimeAndNestedDriverCallbacks) {
  Log L;
  CUpti_SubscriberHandle S = nullptr;
  ASSERT_EQ(cuptiSubscribe(&S, &record, &L), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiEnableCallback(1, S, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
            CUPTI_SUCCESS);
  ASSERT_EQ(cuptiEnableCallback(1, S, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000),
            CUPTI_SUCCESS);
  ASSERT_EQ(
      cuptiEnableCallback(1, S, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel),
      CUPTI_SUCCESS);
  Buffer B;
  ASSERT_EQ(launch(B, dim3(3)), cudaSuccess);
  CUcontext Ctx = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&Ctx), CUDA_SUCCESS);
  ASSERT_EQ(L.Sites.size(), 4u);
  const CUpti_CallbackDomain Rt = CUPTI_CB_DOMAIN_RUNTIME_API, Dr = CUPTI_CB_DOMAIN_DRIVER_API;
  EXPECT_EQ(L.Sites[0].Domain, Rt);
  EXPECT_EQ(L.Sites[0].Where, CUPTI_API_ENTER);
  EXPECT_EQ(L.Sites[0].Func, kernel());
  EXPECT_EQ(L.Sites[1].Domain, Dr);
  EXPECT_EQ(L.Sites[1].Where, CUPTI_API_ENTER);
  EXPECT_EQ(L.Sites[2].Domain, Dr);
  EXPECT_EQ(L.Sites[2].Where, CUPTI_API_EXIT);
  EXPECT_EQ(L.Sites[2].Result, CUDA_SUCCESS);
  EXPECT_EQ(L.Sites[3].Domain, Rt);
  EXPECT_EQ(L.Sites[3].Where, CUPTI_API_EXIT);
  EXPECT_EQ(L.Sites[3].Result, cudaSuccess);
  for (const Site &X : L.Sites) {
    EXPECT_EQ(X.Symbol, kName);
    EXPECT_EQ(X.GridX, 3u);
    EXPECT_EQ(X.BlockX, 32u);
    EXPECT_EQ(X.Correlation, L.Sites[0].Correlation);
    EXPECT_EQ(X.Context, Ctx);
  }
  EXPECT_EQ(L.Sites[3].DataAtExit, 0x5eed + L.Sites[0].Correlation);
  EXPECT_EQ(L.Sites[2].DataAtExit, 0x5eed + L.Sites[1].Correlation);
  // The driver's CUfunction names the kernel through cuFuncGetName (reached
  // through cudaGetDriverEntryPointByVersion, as deepum's backend does).
  void *Fn = nullptr;
  cudaDriverEntryPointQueryResult Q{};
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuFuncGetName", &Fn, 12000, cudaEnableDefault, &Q),
            cudaSuccess);
  const char *Name = nullptr;
  ASSERT_EQ(reinterpret_cast<CUresult (*)(const char **, CUfunction)>(Fn)(
                &Name, static_cast<CUfunction>(const_cast<void *>(L.Sites[1].Func))),
            CUDA_SUCCESS);
  EXPECT_STREQ(Name, kName);

  // CUDA 13's <<<>>> path: __cudaLaunchKernel (no parameter struct) around cuLaunchKernel.
  L.Sites.clear();
  ASSERT_EQ(launchTripleChevronPath(B), cudaSuccess);
  ASSERT_EQ(L.Sites.size(), 4u);
  EXPECT_EQ(L.Sites[0].Cbid, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000);
  EXPECT_EQ(L.Sites[1].Cbid, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
  EXPECT_EQ(L.Sites[1].GridX, 2u);
  EXPECT_EQ(L.Sites[1].BlockX, 64u);
  EXPECT_EQ(L.Sites[1].Symbol, kName);
  EXPECT_EQ(cuptiUnsubscribe(S), CUPTI_SUCCESS);
}

// cuptiGetDeviceId: "Get the ID of a device" for a context;
// "\retval CUPTI_ERROR_INVALID_CONTEXT if unable to get device ID for context".
TEST(CuptiContext, DeviceIdOfTheCurrentContext) {
  CUcontext Ctx = nullptr;
  ASSERT_EQ(cuCtxGetCurrent(&Ctx), CUDA_SUCCESS);
  uint32_t Id = 7;
  ASSERT_EQ(cuptiGetDeviceId(Ctx, &Id), CUPTI_SUCCESS);
  EXPECT_EQ(Id, 0u);
  int Other = 0;
  EXPECT_EQ(cuptiGetDeviceId(reinterpret_cast<CUcontext>(&Other), &Id),
            CUPTI_ERROR_INVALID_CONTEXT);
  EXPECT_EQ(cuptiGetDeviceId(Ctx, nullptr), CUPTI_ERROR_INVALID_PARAMETER);
}

// cuptiGetTimestamp: "Get the CUPTI timestamp", in nanoseconds. The stand-in's
// is the model's clock, which host calls do not advance; reads still
// increase, as a clock's do, so host-ordered events never share a timestamp.
TEST(CuptiContext, TimestampsIncreaseWithoutKernels) {
  uint64_t A = 0, B = 0;
  ASSERT_EQ(cuptiGetTimestamp(&A), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiGetTimestamp(&B), CUPTI_SUCCESS);
  EXPECT_LT(A, B);
  EXPECT_EQ(cuptiGetTimestamp(nullptr), CUPTI_ERROR_INVALID_PARAMETER);
}

// --- Activity API ----------------------------------------------------------------------

struct Delivered {
  std::vector<std::vector<uint8_t>> Buffers;
  size_t Requested = 0;
};
Delivered G;

void CUPTIAPI requested(uint8_t **Buffer, size_t *Size, size_t *MaxRecords) {
  // 8-byte aligned, small: several buffers for a handful of records.
  *Size = 3 * sizeof(CUpti_ActivityKernel10);
  *Buffer = static_cast<uint8_t *>(std::aligned_alloc(8, *Size));
  *MaxRecords = 0;
  ++G.Requested;
}
void CUPTIAPI completed(CUcontext, uint32_t, uint8_t *Buffer, size_t, size_t Valid) {
  G.Buffers.emplace_back(Buffer, Buffer + Valid);
  std::free(Buffer);
}

// cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL): kernel records
// (CUpti_ActivityKernel10 in CUDA 13) for kernels executed while enabled;
// cuptiActivityFlushAll hands every buffer with records to the completion
// callback; cuptiActivityGetNextRecord: "If input value is NULL, returns the
// first activity record in the buffer", "\retval CUPTI_ERROR_MAX_LIMIT_REACHED
// if no more records in the buffer". CUpti_ActivityKernel10::correlationId is
// the correlation id of the launch's API callbacks.
TEST(CuptiActivity, KernelRecordsInClientBuffers) {
  Buffer B;
  ASSERT_EQ(launch(B), cudaSuccess); // before enabling: no record
  EXPECT_EQ(cuptiActivityRegisterCallbacks(nullptr, &completed), CUPTI_ERROR_INVALID_PARAMETER);
  ASSERT_EQ(cuptiActivityRegisterCallbacks(&requested, &completed), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_SUCCESS);
  Log L;
  CUpti_SubscriberHandle S = nullptr;
  ASSERT_EQ(cuptiSubscribe(&S, &record, &L), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiEnableCallback(1, S, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000),
            CUPTI_SUCCESS);
  uint64_t T0 = 0, T1 = 0;
  ASSERT_EQ(cuptiGetTimestamp(&T0), CUPTI_SUCCESS);
  constexpr unsigned kLaunches = 5;
  for (unsigned I = 1; I <= kLaunches; ++I)
    ASSERT_EQ(launch(B, dim3(I)), cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiGetTimestamp(&T1), CUPTI_SUCCESS);
  EXPECT_EQ(G.Buffers.size(), 2u); // 3 + 2 records
  std::vector<CUpti_ActivityKernel10> K;
  for (auto &Buf : G.Buffers) {
    CUpti_Activity *R = nullptr;
    CUptiResult E;
    while ((E = cuptiActivityGetNextRecord(Buf.data(), Buf.size(), &R)) == CUPTI_SUCCESS) {
      ASSERT_EQ(R->kind, CUPTI_ACTIVITY_KIND_KERNEL);
      K.push_back(*reinterpret_cast<CUpti_ActivityKernel10 *>(R));
    }
    EXPECT_EQ(E, CUPTI_ERROR_MAX_LIMIT_REACHED);
  }
  ASSERT_EQ(K.size(), kLaunches);
  for (unsigned I = 0; I < kLaunches; ++I) {
    EXPECT_STREQ(K[I].name, kName);
    EXPECT_EQ(K[I].gridX, static_cast<int32_t>(I + 1));
    EXPECT_EQ(K[I].blockX, 32);
    EXPECT_EQ(K[I].deviceId, 0u);
    EXPECT_LE(T0, K[I].start);
    EXPECT_LE(K[I].start, K[I].end);
    EXPECT_LE(K[I].end, T1);
    if (I) {
      EXPECT_LE(K[I - 1].end, K[I].start); // serial execution
    }
    EXPECT_EQ(K[I].correlationId, L.Sites.at(2 * I).Correlation);
  }
  // A second flush has nothing more.
  G.Buffers.clear();
  ASSERT_EQ(cuptiActivityFlushAll(0), CUPTI_SUCCESS);
  EXPECT_TRUE(G.Buffers.empty());
  size_t Dropped = 1;
  ASSERT_EQ(cuptiActivityGetNumDroppedRecords(nullptr, 0, &Dropped), CUPTI_SUCCESS);
  EXPECT_EQ(Dropped, 0u);
  EXPECT_EQ(cuptiUnsubscribe(S), CUPTI_SUCCESS);
}

// cuptiActivityGetNextRecord: "\retval CUPTI_ERROR_INVALID_PARAMETER if buffer is NULL."
TEST(CuptiActivity, NextRecordOfNoBufferIsInvalidParameter) {
  CUpti_Activity *R = nullptr;
  EXPECT_EQ(cuptiActivityGetNextRecord(nullptr, 0, &R), CUPTI_ERROR_INVALID_PARAMETER);
  uint8_t Empty[8] = {};
  EXPECT_EQ(cuptiActivityGetNextRecord(Empty, 0, &R), CUPTI_ERROR_MAX_LIMIT_REACHED);
}

} // namespace

namespace {

std::vector<CUpti_ActivityUnifiedMemoryCounterConfig> umConfig() {
  std::vector<CUpti_ActivityUnifiedMemoryCounterConfig> C;
  for (auto K : {CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
                 CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
                 CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT}) {
    CUpti_ActivityUnifiedMemoryCounterConfig X{};
    X.scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    X.kind = K;
    X.deviceId = 0;
    X.enable = 1;
    C.push_back(X);
  }
  return C;
}

bool inside(uint64_t Address, const void *P, size_t Bytes) {
  const auto Base = reinterpret_cast<uint64_t>(P);
  return Address >= Base && Address < Base + Bytes;
}

} // namespace

// cuptiActivityConfigureUnifiedMemoryCounter: "\retval
// CUPTI_ERROR_INVALID_PARAMETER if config is NULL or any parameter in the
// config structures is not a valid value".
TEST(CuptiActivity, UnifiedMemoryCounterConfigurationIsChecked) {
  EXPECT_EQ(cuptiActivityConfigureUnifiedMemoryCounter(nullptr, 1), CUPTI_ERROR_INVALID_PARAMETER);
  auto C = umConfig();
  C[0].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_UNKNOWN;
  EXPECT_EQ(cuptiActivityConfigureUnifiedMemoryCounter(C.data(), 3), CUPTI_ERROR_INVALID_PARAMETER);
  C = umConfig();
  C[1].deviceId = 1; // no such device
  EXPECT_EQ(cuptiActivityConfigureUnifiedMemoryCounter(C.data(), 3), CUPTI_ERROR_INVALID_PARAMETER);
  C = umConfig();
  EXPECT_EQ(cuptiActivityConfigureUnifiedMemoryCounter(C.data(), 3), CUPTI_SUCCESS);
}

// CUpti_ActivityUnifiedMemoryCounter3: for GPU page faults "address" is "the
// virtual address for the page that faulted" and start is "captured when CUDA
// driver started processing the fault"; for BYTES_TRANSFER_HTOD/DTOH "value"
// is "the size of the memory region in bytes", start/end are when the
// transfer starts and finishes on the GPU, and flags is the
// CUpti_ActivityUnifiedMemoryMigrationCause (USER: "explicit prefetch",
// COHERENCE: "to ensure memory coherence, e.g. ... page fault").
TEST(CuptiActivity, UnifiedMemoryCounterRecordsFromTheModel) {
  auto C = umConfig();
  ASSERT_EQ(cuptiActivityConfigureUnifiedMemoryCounter(C.data(), 3), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiActivityRegisterCallbacks(&requested, &completed), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER), CUPTI_SUCCESS);
  ASSERT_EQ(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_KERNEL), CUPTI_SUCCESS);
  deepum_standin_stats S0{}, S1{};
  ASSERT_EQ(deepum_standin_get_stats(&S0, sizeof S0), 0);

  Buffer Faulted, Prefetched;
  ASSERT_EQ(launch(Faulted), cudaSuccess); // cold: demand faults
  cudaMemLocation Dev{};
  Dev.type = cudaMemLocationTypeDevice;
  cudaStream_t St = nullptr;
  ASSERT_EQ(cudaStreamCreate(&St), cudaSuccess);
  const size_t Bytes = Prefetched.N * sizeof(float);
  ASSERT_EQ(cudaMemPrefetchAsync(Prefetched.P, Bytes, Dev, 0, St), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(St), cudaSuccess);
  ASSERT_EQ(deepum_standin_get_stats(&S1, sizeof S1), 0);
  G.Buffers.clear();
  ASSERT_EQ(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), CUPTI_SUCCESS);

  std::vector<CUpti_ActivityUnifiedMemoryCounter3> Um;
  std::vector<CUpti_ActivityKernel10> K;
  for (auto &Buf : G.Buffers) {
    CUpti_Activity *R = nullptr;
    while (cuptiActivityGetNextRecord(Buf.data(), Buf.size(), &R) == CUPTI_SUCCESS) {
      if (R->kind == CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER)
        Um.push_back(*reinterpret_cast<CUpti_ActivityUnifiedMemoryCounter3 *>(R));
      else if (R->kind == CUPTI_ACTIVITY_KIND_KERNEL)
        K.push_back(*reinterpret_cast<CUpti_ActivityKernel10 *>(R));
    }
  }
  ASSERT_EQ(K.size(), 1u);
  uint64_t HtoD = 0;
  int Faults = 0, Coherence = 0, User = 0;
  for (const auto &R : Um) {
    if (R.counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT) {
      ++Faults;
      EXPECT_TRUE(inside(R.address, Faulted.P, Bytes));
      EXPECT_EQ(R.flags, CUPTI_ACTIVITY_UNIFIED_MEMORY_ACCESS_TYPE_WRITE); // read-write twin
      EXPECT_LE(R.start, R.end);
      // The faults stalled the kernel: they lie within its record.
      EXPECT_LE(K[0].start, R.start);
      EXPECT_LE(R.end, K[0].end);
    }
    if (R.counterKind == CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD) {
      HtoD += R.value;
      EXPECT_LE(R.start, R.end);
      if (R.flags == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_COHERENCE) {
        ++Coherence;
        EXPECT_TRUE(inside(R.address, Faulted.P, Bytes));
      }
      if (R.flags == CUPTI_ACTIVITY_UNIFIED_MEMORY_MIGRATION_CAUSE_USER) {
        ++User;
        EXPECT_TRUE(inside(R.address, Prefetched.P, Bytes));
      }
    }
  }
  EXPECT_EQ(Faults, 1);
  EXPECT_EQ(Coherence, 1);
  EXPECT_EQ(User, 1);
  EXPECT_EQ(HtoD, S1.bytes_htod - S0.bytes_htod) << "records and the model's counters agree";
  (void)cudaStreamDestroy(St);
}
