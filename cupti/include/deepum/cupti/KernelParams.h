//===- deepum/cupti/KernelParams.h - What a launch's arguments name ---------===//
//
// Every launch hands the GPU a parameter buffer, and whatever memory a kernel
// reaches through its own arguments is named there: a tensor's pointer, or
// pointers inside a by-value struct (PyTorch's TensorListMetadata, a cuBLAS
// kernel's raw pointers). The profiler reads these words at each launch to
// record which allocations each kernel may touch (a census, where faults are
// a sample); the executor's launch-time guard will read them to see what a
// launch is about to touch.
//
// A kernel's layout (each parameter's offset and size in the buffer) comes
// from the driver, once per function: cuFuncGetParamInfo (CUDA 12.4 and
// later), for a host stub through the runtime's cudaGetFuncBySymbol. Both are
// looked up in the libraries already loaded (dlopen RTLD_NOLOAD, then the
// global scope), so nothing here links the runtime or needs a new driver: a
// layout that cannot be had is reported as such and its launches name
// nothing.
//
// Thread safety: ParamLayouts may be used from any thread; the readers are
// pure functions.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_CUPTI_KERNELPARAMS_H
#define DEEPUM_CUPTI_KERNELPARAMS_H

#include <cstdint>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

namespace deepum::cupti {

/// One parameter's place in a kernel's parameter buffer.
struct ParamSlot {
  uint32_t Offset = 0;
  uint32_t Size = 0;
};

/// The largest parameter buffer a launch may pass (32,764 bytes since CUDA
/// 12.1); a layout or buffer past it is not read.
inline constexpr uint64_t kMaxParamBufferBytes = 32768;

/// Appends every 8-byte word at an 8-byte-aligned offset of the buffer that
/// lies inside one parameter (a pointer never straddles two; a struct's
/// pointers are inside it), reading parameter I from Params[I] (the
/// kernelParams / args form: one pointer per parameter). A null Params or
/// parameter pointer adds nothing.
void appendArgumentWords(const std::vector<ParamSlot> &Layout, void *const *Params,
                         std::vector<uint64_t> &Out);

/// The same from a launch's `extra` array (CU_LAUNCH_PARAM_BUFFER_POINTER and
/// CU_LAUNCH_PARAM_BUFFER_SIZE, ended by CU_LAUNCH_PARAM_END): false when it
/// names no buffer (or one over kMaxParamBufferBytes), so the words are unknown.
bool appendExtraBufferWords(void *const *Extra, std::vector<uint64_t> &Out);

/// Where a launch callback's parameter struct keeps its kernel and arguments.
struct LaunchArgumentsOf {
  /// A runtime host stub (HostStub) or a CUfunction.
  const void *Function = nullptr;
  bool HostStub = false;
  /// One pointer per parameter (kernelParams / args); null when not given.
  void *const *Params = nullptr;
  /// The driver's `extra` array (cuLaunchKernel, cuLaunchKernelEx); null otherwise.
  void *const *Extra = nullptr;
};

/// The kernel and arguments of one launch callback's parameter struct
/// (`Domain` a CUpti_CallbackDomain, `Cbid` its callback id): for
/// cudaLaunchKernel, cudaLaunchKernelExC, cudaLaunchCooperativeKernel,
/// cuLaunchKernel, cuLaunchCooperativeKernel (which has no `extra`) and
/// cuLaunchKernelEx, each with its _ptsz form. Nothing for other callbacks,
/// or without a parameter struct (CUDA 13's __cudaLaunchKernel has none).
std::optional<LaunchArgumentsOf> launchArgumentsOf(int Domain, uint32_t Cbid,
                                                   const void *FunctionParams);

/// Parameter layouts, asked of the driver once per function.
class ParamLayouts {
public:
  /// The layout of a driver function (CUfunction); null when it cannot be had.
  const std::vector<ParamSlot> *ofFunction(const void *Function);
  /// The layout of a kernel by its host stub (cudaLaunchKernel's func); null likewise.
  const std::vector<ParamSlot> *ofHostStub(const void *Stub);

private:
  using Query = int (*)(const void *, size_t, size_t *, size_t *);
  using BySymbol = int (*)(void **, const void *);
  /// Finds cuFuncGetParamInfo and cudaFuncGetParamInfo, once.
  void resolveLocked();
  const std::vector<ParamSlot> *lookUp(std::unordered_map<const void *,
                                                          std::optional<std::vector<ParamSlot>>> &Cache,
                                       Query Q, const void *Key);

  std::mutex Mu;
  bool Resolved = false;
  Query Driver = nullptr;
  BySymbol FuncBySymbol = nullptr;
  std::unordered_map<const void *, std::optional<std::vector<ParamSlot>>> ByFunction;
  /// cudaGetFuncBySymbol's answer per host stub (null: none).
  std::unordered_map<const void *, void *> FunctionOfStub;
};

} // namespace deepum::cupti

#endif // DEEPUM_CUPTI_KERNELPARAMS_H
