//===- Occupancy.cpp - Function attributes and the occupancy calculator ----===//
//
// cudaFuncGetAttributes / cudaFuncSetAttribute and the occupancy queries
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor[WithFlags],
// cudaOccupancyAvailableDynamicSMemPerBlock; cudaOccupancyMaxPotentialBlockSize
// is a template of the header's over these and cudaFuncGetAttributes). A
// kernel's needs come from its cubin (Fatbin.h: registers, static shared
// memory, launch bounds), the SM's resources from the device properties, so
// every answer agrees with cudaGetDeviceProperties. The model, per SM:
//  - at most maxBlocksPerMultiProcessor blocks and maxThreadsPerMultiProcessor
//    threads, counted in whole warps;
//  - registers allocated per warp in units of 256, from four equal register
//    files (one per sub-partition);
//  - shared memory per block: static + dynamic + reservedSharedMemPerBlock,
//    in units of 128 bytes, out of sharedMemPerMultiprocessor.
// A kernel with no cubin (PTX only, or compressed) has no known registers
// and no static shared memory: only threads, blocks and dynamic shared
// memory limit it. The carveout preference is recorded, not modelled: the
// whole of sharedMemPerMultiprocessor is assumed available.
//
//===----------------------------------------------------------------------===//
#include "Entry.h"

#include <algorithm>

using deepum::standin::Model;
using deepum::standin::ret;

namespace {

constexpr int kRegisterUnit = 256; // registers per warp are allocated in these
constexpr int kRegisterFiles = 4;  // per SM, one per sub-partition
constexpr int kSharedUnit = 128;   // shared memory per block is allocated in these

int roundUp(int V, int To) { return (V + To - 1) / To * To; }

/// The kernel a host stub names, or a kernel handle used as is ("if the
/// specified function does not exist, then it is assumed to be a
/// cudaKernel_t"); null when it is neither.
CUkern_st *kernelOf(Model &M, const void *Func) {
  if (auto It = M.Kernels.find(Func); It != M.Kernels.end())
    return It->second.get();
  for (const auto &[Stub, K] : M.Kernels)
    if (K.get() == Func)
      return K.get();
  return nullptr;
}

/// Registers one warp of the kernel holds; 0 when its cubin did not say.
int warpRegisters(const cudaDeviceProp &P, const CUkern_st &K) {
  return roundUp(static_cast<int>(K.Resources.Registers) * P.warpSize, kRegisterUnit);
}

/// Beyond this a launch of the kernel fails: the device's limit, its launch
/// bounds, and the registers of one block.
int maxThreadsPerBlock(const cudaDeviceProp &P, const CUkern_st &K) {
  int Threads = P.maxThreadsPerBlock;
  if (K.Resources.MaxThreads)
    Threads = std::min<int>(Threads, static_cast<int>(K.Resources.MaxThreads));
  if (const int W = warpRegisters(P, K))
    Threads = std::min(Threads, P.regsPerBlock / W * P.warpSize);
  return Threads;
}

/// cudaFuncAttributeMaxDynamicSharedMemorySize: by default what the 48 KiB
/// a block may use without opting in leaves beside the static memory.
int maxDynamicShared(const cudaDeviceProp &P, const CUkern_st &K) {
  if (K.MaxDynamicSharedBytes >= 0)
    return K.MaxDynamicSharedBytes;
  return std::max(0, static_cast<int>(P.sharedMemPerBlock) -
                         static_cast<int>(K.Resources.SharedBytes));
}

/// Blocks of `Threads` threads using `Dynamic` bytes of dynamic shared
/// memory that one SM holds at once; 0 when such a block cannot launch.
int activeBlocks(const cudaDeviceProp &P, const CUkern_st &K, int Threads, size_t Dynamic) {
  if (Threads > maxThreadsPerBlock(P, K) || Dynamic > static_cast<size_t>(maxDynamicShared(P, K)))
    return 0;
  const int Warps = (Threads + P.warpSize - 1) / P.warpSize;
  int Blocks = P.maxBlocksPerMultiProcessor;
  Blocks = std::min(Blocks, P.maxThreadsPerMultiProcessor / P.warpSize / Warps);
  if (const int W = warpRegisters(P, K))
    Blocks =
        std::min(Blocks, P.regsPerMultiprocessor / kRegisterFiles / W * kRegisterFiles / Warps);
  const int Shared =
      roundUp(static_cast<int>(K.Resources.SharedBytes + Dynamic + P.reservedSharedMemPerBlock),
              kSharedUnit);
  return std::min(Blocks, static_cast<int>(P.sharedMemPerMultiprocessor) / Shared);
}

cudaError_t maxActiveBlocks(int *Blocks, const void *Func, int BlockSize, size_t Dynamic,
                            unsigned Flags) {
  ENTER();
  if (!Blocks || (Flags & ~unsigned{cudaOccupancyDisableCachingOverride}))
    return ret(cudaErrorInvalidValue);
  const CUkern_st *K = kernelOf(M, Func);
  if (!K)
    return ret(cudaErrorInvalidDeviceFunction);
  if (BlockSize <= 0)
    return ret(cudaErrorInvalidValue);
  // Global caching does not change occupancy in this model: the flag that
  // turns its override off changes nothing.
  *Blocks = activeBlocks(M.Prop, *K, BlockSize, Dynamic);
  return cudaSuccess;
}

} // namespace

extern "C" {

cudaError_t cudaFuncGetAttributes(cudaFuncAttributes *Attr, const void *Func) {
  ENTER();
  if (!Attr)
    return ret(cudaErrorInvalidValue);
  const CUkern_st *K = kernelOf(M, Func);
  if (!K)
    return ret(cudaErrorInvalidDeviceFunction);
  *Attr = cudaFuncAttributes{};
  Attr->sharedSizeBytes = K->Resources.SharedBytes;
  Attr->localSizeBytes = K->Resources.LocalBytes;
  Attr->maxThreadsPerBlock = maxThreadsPerBlock(M.Prop, *K);
  Attr->numRegs = static_cast<int>(K->Resources.Registers);
  // The PTX a cubin came from is not read: its architecture stands for both.
  Attr->ptxVersion = Attr->binaryVersion = K->Resources.Arch;
  Attr->maxDynamicSharedSizeBytes = maxDynamicShared(M.Prop, *K);
  Attr->preferredShmemCarveout = K->PreferredCarveout;
  return cudaSuccess;
}

// "If the specified attribute cannot be written, or if the value is
// incorrect, then cudaErrorInvalidValue is returned." Cluster attributes are
// for cluster launches, which the stand-in does not model (clusterLaunch 0).
cudaError_t cudaFuncSetAttribute(const void *Func, cudaFuncAttribute Attr, int Value) {
  ENTER();
  CUkern_st *K = kernelOf(M, Func);
  if (!K)
    return ret(cudaErrorInvalidDeviceFunction);
  switch (Attr) {
  case cudaFuncAttributeMaxDynamicSharedMemorySize:
    // "The sum of this value and the function attribute sharedSizeBytes
    // cannot exceed the device attribute cudaDevAttrMaxSharedMemoryPerBlockOptin."
    if (Value < 0 ||
        static_cast<size_t>(Value) + K->Resources.SharedBytes > M.Prop.sharedMemPerBlockOptin)
      return ret(cudaErrorInvalidValue);
    K->MaxDynamicSharedBytes = Value;
    return cudaSuccess;
  case cudaFuncAttributePreferredSharedMemoryCarveout:
    // A percentage, or -1 (cudaSharedmemCarveoutDefault).
    if (Value < -1 || Value > 100)
      return ret(cudaErrorInvalidValue);
    K->PreferredCarveout = Value;
    return cudaSuccess;
  case cudaFuncAttributeClusterDimMustBeSet:
  case cudaFuncAttributeRequiredClusterWidth:
  case cudaFuncAttributeRequiredClusterHeight:
  case cudaFuncAttributeRequiredClusterDepth:
  case cudaFuncAttributeNonPortableClusterSizeAllowed:
  case cudaFuncAttributeClusterSchedulingPolicyPreference:
    return ret(cudaErrorNotSupported);
  default:
    return ret(cudaErrorInvalidValue);
  }
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *Blocks, const void *Func,
                                                          int BlockSize, size_t Dynamic) {
  return maxActiveBlocks(Blocks, Func, BlockSize, Dynamic, cudaOccupancyDefault);
}

cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *Blocks, const void *Func,
                                                                   int BlockSize, size_t Dynamic,
                                                                   unsigned int Flags) {
  return maxActiveBlocks(Blocks, Func, BlockSize, Dynamic, Flags);
}

// The most dynamic shared memory a block may use for `NumBlocks` blocks to
// fit on an SM: the SM's shared memory shared out in whole 128-byte units,
// less each block's static and reserved memory, within what the kernel may
// use (its maximum dynamic size). 0 when that many blocks do not fit even
// without dynamic shared memory.
cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *Dynamic, const void *Func,
                                                      int NumBlocks, int BlockSize) {
  ENTER();
  if (!Dynamic)
    return ret(cudaErrorInvalidValue);
  const CUkern_st *K = kernelOf(M, Func);
  if (!K)
    return ret(cudaErrorInvalidDeviceFunction);
  if (NumBlocks <= 0 || BlockSize <= 0)
    return ret(cudaErrorInvalidValue);
  const cudaDeviceProp &P = M.Prop;
  if (activeBlocks(P, *K, BlockSize, 0) < NumBlocks) {
    *Dynamic = 0;
    return cudaSuccess;
  }
  const int PerBlock =
      static_cast<int>(P.sharedMemPerMultiprocessor) / NumBlocks / kSharedUnit * kSharedUnit;
  const int Left = PerBlock - static_cast<int>(P.reservedSharedMemPerBlock) -
                   static_cast<int>(K->Resources.SharedBytes);
  *Dynamic = static_cast<size_t>(std::clamp(Left, 0, maxDynamicShared(P, *K)));
  return cudaSuccess;
}

} // extern "C"
