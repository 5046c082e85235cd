//===- KernelParams.cpp - What a launch's arguments name -------------------===//
#include "deepum/cupti/KernelParams.h"

#include <cuda.h>
#include <cupti.h> // the callbacks' parameter structs

#include <algorithm>
#include <cstring>
#include <dlfcn.h>

namespace deepum::cupti {

namespace {

/// Words at 8-byte-aligned buffer offsets of one parameter placed at Offset.
void appendWords(const unsigned char *Bytes, uint64_t Offset, uint64_t Size,
                 std::vector<uint64_t> &Out) {
  for (uint64_t At = (Offset + 7) / 8 * 8; At + 8 <= Offset + Size; At += 8) {
    uint64_t V = 0;
    std::memcpy(&V, Bytes + (At - Offset), sizeof(V));
    Out.push_back(V);
  }
}

/// A function of a library already loaded: the named libraries first (the
/// runtime loads the driver with RTLD_LOCAL), then the global scope.
void *loadedSymbol(const char *Name, std::initializer_list<const char *> Libraries) {
  for (const char *L : Libraries)
    if (void *H = dlopen(L, RTLD_LAZY | RTLD_NOLOAD)) {
      void *F = dlsym(H, Name);
      dlclose(H);
      if (F)
        return F;
    }
  return dlsym(RTLD_DEFAULT, Name);
}

} // namespace

void appendArgumentWords(const std::vector<ParamSlot> &Layout, void *const *Params,
                         std::vector<uint64_t> &Out) {
  if (!Params)
    return;
  for (size_t I = 0; I < Layout.size(); ++I)
    if (Params[I])
      appendWords(static_cast<const unsigned char *>(Params[I]), Layout[I].Offset, Layout[I].Size,
                  Out);
}

std::optional<LaunchArgumentsOf> launchArgumentsOf(int Domain, uint32_t Cbid,
                                                   const void *FunctionParams) {
  if (!FunctionParams)
    return std::nullopt;
  LaunchArgumentsOf L;
  if (Domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    L.HostStub = true;
    switch (Cbid) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      // The cooperative struct has the same layout.
      const auto *A = static_cast<const cudaLaunchKernel_v7000_params *>(FunctionParams);
      L.Function = A->func;
      L.Params = A->args;
      return L;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto *A = static_cast<const cudaLaunchKernelExC_v11060_params *>(FunctionParams);
      L.Function = A->func;
      L.Params = A->args;
      return L;
    }
    default:
      return std::nullopt;
    }
  }
  if (Domain != CUPTI_CB_DOMAIN_DRIVER_API)
    return std::nullopt;
  switch (Cbid) {
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
    const auto *A = static_cast<const cuLaunchKernel_params *>(FunctionParams);
    L.Function = A->f;
    L.Params = A->kernelParams;
    L.Extra = A->extra;
    return L;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
    // Ends at kernelParams: no `extra`.
    const auto *A = static_cast<const cuLaunchCooperativeKernel_params *>(FunctionParams);
    L.Function = A->f;
    L.Params = A->kernelParams;
    return L;
  }
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
  case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
    const auto *A = static_cast<const cuLaunchKernelEx_params *>(FunctionParams);
    L.Function = A->f;
    L.Params = A->kernelParams;
    L.Extra = A->extra;
    return L;
  }
  default:
    return std::nullopt;
  }
}

bool appendExtraBufferWords(void *const *Extra, std::vector<uint64_t> &Out) {
  if (!Extra)
    return false;
  const void *Buffer = nullptr;
  size_t Size = 0;
  // Pairs of (key, value) up to CU_LAUNCH_PARAM_END; at most a few are legal.
  for (int I = 0; I < 64 && Extra[I] != CU_LAUNCH_PARAM_END; I += 2) {
    if (Extra[I] == CU_LAUNCH_PARAM_BUFFER_POINTER)
      Buffer = Extra[I + 1];
    else if (Extra[I] == CU_LAUNCH_PARAM_BUFFER_SIZE && Extra[I + 1])
      std::memcpy(&Size, Extra[I + 1], sizeof(Size));
  }
  if (!Buffer || Size > kMaxParamBufferBytes)
    return false;
  appendWords(static_cast<const unsigned char *>(Buffer), 0, Size, Out);
  return true;
}

const std::vector<ParamSlot> *
ParamLayouts::lookUp(std::unordered_map<const void *, std::optional<std::vector<ParamSlot>>> &Cache,
                     Query Q, const void *Key) {
  // Entries are never erased: a pointer to one stays valid after the lock.
  auto [It, New] = Cache.try_emplace(Key);
  if (New && Q && Key) {
    std::vector<ParamSlot> Slots;
    uint64_t End = 0;
    for (size_t I = 0;; ++I) {
      size_t Offset = 0, Size = 0;
      const int R = Q(Key, I, &Offset, &Size);
      if (R != 0) {
        // Past the last parameter both answer "invalid value" (CUDA_ERROR_INVALID_VALUE
        // and cudaErrorInvalidValue are both 1); anything else: no layout.
        if (R == CUDA_ERROR_INVALID_VALUE)
          It->second = std::move(Slots);
        break;
      }
      End = std::max<uint64_t>(End, uint64_t{Offset} + Size);
      if (End > kMaxParamBufferBytes)
        break;
      Slots.push_back({static_cast<uint32_t>(Offset), static_cast<uint32_t>(Size)});
    }
  }
  return It->second ? &*It->second : nullptr;
}

void ParamLayouts::resolveLocked() {
  if (Resolved)
    return;
  Resolved = true;
  Driver = reinterpret_cast<Query>(loadedSymbol("cuFuncGetParamInfo", {"libcuda.so.1"}));
  FuncBySymbol = reinterpret_cast<BySymbol>(
      loadedSymbol("cudaGetFuncBySymbol", {"libcudart.so.13", "libcudart.so.12"}));
}

const std::vector<ParamSlot> *ParamLayouts::ofFunction(const void *Function) {
  std::lock_guard<std::mutex> L(Mu);
  resolveLocked();
  return lookUp(ByFunction, Driver, Function);
}

const std::vector<ParamSlot> *ParamLayouts::ofHostStub(const void *Stub) {
  std::lock_guard<std::mutex> L(Mu);
  resolveLocked();
  auto [It, New] = FunctionOfStub.try_emplace(Stub, nullptr);
  // The runtime's own cudaFuncGetParamInfo would set the thread's last error
  // past the last parameter, which the program may read: the driver's does not.
  if (New && FuncBySymbol && FuncBySymbol(&It->second, Stub) != 0)
    It->second = nullptr;
  return It->second ? lookUp(ByFunction, Driver, It->second) : nullptr;
}

} // namespace deepum::cupti
