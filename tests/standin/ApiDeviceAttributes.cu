// Device attributes on the stand-in (docs/standin.md, "What is modelled"):
// every cudaDeviceGetAttribute with a field in cudaDeviceProp equals that
// field; those without one have their documented values; the features the
// properties claim work (stream priorities, host registration, memory pools,
// mapped memory). Run as each device model it is given (ctest: the default
// h100-pcie, and v100-pcie-16gb without concurrent managed access). Exits 1
// on any mismatch.
#include "ApiTest.h"

#include <cstring>

struct Field {
  cudaDeviceAttr Attr;
  const char *Name;
  long long Value;
};

#define F(attr, field)                                                                             \
  { attr, #attr, static_cast<long long>(P.field) }

static int attribute(cudaDeviceAttr A) {
  int V = -12345;
  CHECK(cudaDeviceGetAttribute(&V, A, 0));
  return V;
}

int main() {
  cudaDeviceProp P{};
  CHECK(cudaGetDeviceProperties(&P, 0));
  const Field Fields[] = {
      F(cudaDevAttrMaxThreadsPerBlock, maxThreadsPerBlock),
      F(cudaDevAttrMaxBlockDimX, maxThreadsDim[0]),
      F(cudaDevAttrMaxBlockDimY, maxThreadsDim[1]),
      F(cudaDevAttrMaxBlockDimZ, maxThreadsDim[2]),
      F(cudaDevAttrMaxGridDimX, maxGridSize[0]),
      F(cudaDevAttrMaxGridDimY, maxGridSize[1]),
      F(cudaDevAttrMaxGridDimZ, maxGridSize[2]),
      F(cudaDevAttrMaxSharedMemoryPerBlock, sharedMemPerBlock),
      F(cudaDevAttrTotalConstantMemory, totalConstMem),
      F(cudaDevAttrWarpSize, warpSize),
      F(cudaDevAttrMaxPitch, memPitch),
      F(cudaDevAttrMaxRegistersPerBlock, regsPerBlock),
      F(cudaDevAttrTextureAlignment, textureAlignment),
      F(cudaDevAttrMultiProcessorCount, multiProcessorCount),
      F(cudaDevAttrIntegrated, integrated),
      F(cudaDevAttrCanMapHostMemory, canMapHostMemory),
      F(cudaDevAttrMaxTexture1DWidth, maxTexture1D),
      F(cudaDevAttrMaxTexture2DWidth, maxTexture2D[0]),
      F(cudaDevAttrMaxTexture2DHeight, maxTexture2D[1]),
      F(cudaDevAttrMaxTexture3DWidth, maxTexture3D[0]),
      F(cudaDevAttrMaxTexture3DHeight, maxTexture3D[1]),
      F(cudaDevAttrMaxTexture3DDepth, maxTexture3D[2]),
      F(cudaDevAttrMaxTexture2DLayeredWidth, maxTexture2DLayered[0]),
      F(cudaDevAttrMaxTexture2DLayeredHeight, maxTexture2DLayered[1]),
      F(cudaDevAttrMaxTexture2DLayeredLayers, maxTexture2DLayered[2]),
      F(cudaDevAttrSurfaceAlignment, surfaceAlignment),
      F(cudaDevAttrConcurrentKernels, concurrentKernels),
      F(cudaDevAttrEccEnabled, ECCEnabled),
      F(cudaDevAttrPciBusId, pciBusID),
      F(cudaDevAttrPciDeviceId, pciDeviceID),
      F(cudaDevAttrTccDriver, tccDriver),
      F(cudaDevAttrGlobalMemoryBusWidth, memoryBusWidth),
      F(cudaDevAttrL2CacheSize, l2CacheSize),
      F(cudaDevAttrMaxThreadsPerMultiProcessor, maxThreadsPerMultiProcessor),
      F(cudaDevAttrAsyncEngineCount, asyncEngineCount),
      F(cudaDevAttrUnifiedAddressing, unifiedAddressing),
      F(cudaDevAttrMaxTexture1DLayeredWidth, maxTexture1DLayered[0]),
      F(cudaDevAttrMaxTexture1DLayeredLayers, maxTexture1DLayered[1]),
      F(cudaDevAttrMaxTexture2DGatherWidth, maxTexture2DGather[0]),
      F(cudaDevAttrMaxTexture2DGatherHeight, maxTexture2DGather[1]),
      F(cudaDevAttrMaxTexture3DWidthAlt, maxTexture3DAlt[0]),
      F(cudaDevAttrMaxTexture3DHeightAlt, maxTexture3DAlt[1]),
      F(cudaDevAttrMaxTexture3DDepthAlt, maxTexture3DAlt[2]),
      F(cudaDevAttrPciDomainId, pciDomainID),
      F(cudaDevAttrTexturePitchAlignment, texturePitchAlignment),
      F(cudaDevAttrMaxTextureCubemapWidth, maxTextureCubemap),
      F(cudaDevAttrMaxTextureCubemapLayeredWidth, maxTextureCubemapLayered[0]),
      F(cudaDevAttrMaxTextureCubemapLayeredLayers, maxTextureCubemapLayered[1]),
      F(cudaDevAttrMaxSurface1DWidth, maxSurface1D),
      F(cudaDevAttrMaxSurface2DWidth, maxSurface2D[0]),
      F(cudaDevAttrMaxSurface2DHeight, maxSurface2D[1]),
      F(cudaDevAttrMaxSurface3DWidth, maxSurface3D[0]),
      F(cudaDevAttrMaxSurface3DHeight, maxSurface3D[1]),
      F(cudaDevAttrMaxSurface3DDepth, maxSurface3D[2]),
      F(cudaDevAttrMaxSurface1DLayeredWidth, maxSurface1DLayered[0]),
      F(cudaDevAttrMaxSurface1DLayeredLayers, maxSurface1DLayered[1]),
      F(cudaDevAttrMaxSurface2DLayeredWidth, maxSurface2DLayered[0]),
      F(cudaDevAttrMaxSurface2DLayeredHeight, maxSurface2DLayered[1]),
      F(cudaDevAttrMaxSurface2DLayeredLayers, maxSurface2DLayered[2]),
      F(cudaDevAttrMaxSurfaceCubemapWidth, maxSurfaceCubemap),
      F(cudaDevAttrMaxSurfaceCubemapLayeredWidth, maxSurfaceCubemapLayered[0]),
      F(cudaDevAttrMaxSurfaceCubemapLayeredLayers, maxSurfaceCubemapLayered[1]),
      F(cudaDevAttrMaxTexture2DLinearWidth, maxTexture2DLinear[0]),
      F(cudaDevAttrMaxTexture2DLinearHeight, maxTexture2DLinear[1]),
      F(cudaDevAttrMaxTexture2DLinearPitch, maxTexture2DLinear[2]),
      F(cudaDevAttrMaxTexture2DMipmappedWidth, maxTexture2DMipmap[0]),
      F(cudaDevAttrMaxTexture2DMipmappedHeight, maxTexture2DMipmap[1]),
      F(cudaDevAttrComputeCapabilityMajor, major),
      F(cudaDevAttrComputeCapabilityMinor, minor),
      F(cudaDevAttrMaxTexture1DMipmappedWidth, maxTexture1DMipmap),
      F(cudaDevAttrStreamPrioritiesSupported, streamPrioritiesSupported),
      F(cudaDevAttrGlobalL1CacheSupported, globalL1CacheSupported),
      F(cudaDevAttrLocalL1CacheSupported, localL1CacheSupported),
      F(cudaDevAttrMaxSharedMemoryPerMultiprocessor, sharedMemPerMultiprocessor),
      F(cudaDevAttrMaxRegistersPerMultiprocessor, regsPerMultiprocessor),
      F(cudaDevAttrManagedMemory, managedMemory),
      F(cudaDevAttrIsMultiGpuBoard, isMultiGpuBoard),
      F(cudaDevAttrMultiGpuBoardGroupID, multiGpuBoardGroupID),
      F(cudaDevAttrHostNativeAtomicSupported, hostNativeAtomicSupported),
      F(cudaDevAttrPageableMemoryAccess, pageableMemoryAccess),
      F(cudaDevAttrConcurrentManagedAccess, concurrentManagedAccess),
      F(cudaDevAttrComputePreemptionSupported, computePreemptionSupported),
      F(cudaDevAttrCanUseHostPointerForRegisteredMem, canUseHostPointerForRegisteredMem),
      F(cudaDevAttrCooperativeLaunch, cooperativeLaunch),
      F(cudaDevAttrMaxSharedMemoryPerBlockOptin, sharedMemPerBlockOptin),
      F(cudaDevAttrHostRegisterSupported, hostRegisterSupported),
      F(cudaDevAttrPageableMemoryAccessUsesHostPageTables, pageableMemoryAccessUsesHostPageTables),
      F(cudaDevAttrDirectManagedMemAccessFromHost, directManagedMemAccessFromHost),
      F(cudaDevAttrMaxBlocksPerMultiprocessor, maxBlocksPerMultiProcessor),
      F(cudaDevAttrMaxPersistingL2CacheSize, persistingL2CacheMaxSize),
      F(cudaDevAttrMaxAccessPolicyWindowSize, accessPolicyMaxWindowSize),
      F(cudaDevAttrReservedSharedMemoryPerBlock, reservedSharedMemPerBlock),
      F(cudaDevAttrSparseCudaArraySupported, sparseCudaArraySupported),
      F(cudaDevAttrHostRegisterReadOnlySupported, hostRegisterReadOnlySupported),
      F(cudaDevAttrTimelineSemaphoreInteropSupported, timelineSemaphoreInteropSupported),
      F(cudaDevAttrMemoryPoolsSupported, memoryPoolsSupported),
      F(cudaDevAttrGPUDirectRDMASupported, gpuDirectRDMASupported),
      F(cudaDevAttrGPUDirectRDMAFlushWritesOptions, gpuDirectRDMAFlushWritesOptions),
      F(cudaDevAttrGPUDirectRDMAWritesOrdering, gpuDirectRDMAWritesOrdering),
      F(cudaDevAttrMemoryPoolSupportedHandleTypes, memoryPoolSupportedHandleTypes),
      F(cudaDevAttrClusterLaunch, clusterLaunch),
      F(cudaDevAttrDeferredMappingCudaArraySupported, deferredMappingCudaArraySupported),
      F(cudaDevAttrIpcEventSupport, ipcEventSupported),
      F(cudaDevAttrNumaConfig, deviceNumaConfig),
      F(cudaDevAttrNumaId, deviceNumaId),
      F(cudaDevAttrMpsEnabled, mpsEnabled),
      F(cudaDevAttrHostNumaId, hostNumaId),
      F(cudaDevAttrGpuPciDeviceId, gpuPciDeviceID),
      F(cudaDevAttrGpuPciSubsystemId, gpuPciSubsystemID),
      F(cudaDevAttrHostNumaMultinodeIpcSupported, hostNumaMultinodeIpcSupported),
  };
  int Compared = 0;
  for (const Field &Fd : Fields) {
    const int V = attribute(Fd.Attr);
    if (V != Fd.Value) {
      std::printf("FAIL %s is %d, cudaDeviceProp says %lld\n", Fd.Name, V, Fd.Value);
      ++apitest::Failures;
    }
    ++Compared;
  }
  EXPECT_EQ(Compared,
            110); // every attribute with a field (the others: below, and reserved numbers)

  // The attributes no field holds, as documented: the GPU's boost clock, and
  // the memory clock that gives the model's DRAM bandwidth over the bus.
  struct Gpu {
    const char *Name;
    int ClockKhz, MemoryClockKhz;
  };
  const Gpu Gpus[] = {
      {"NVIDIA H100 PCIe", 1755000, 1562500},    // 2.0e12 B/s over 5120 bits
      {"Tesla V100-PCIE-16GB", 1380000, 878906}, // 0.9e12 B/s over 4096 bits
  };
  const Gpu *This = nullptr;
  for (const Gpu &G : Gpus)
    if (std::strcmp(G.Name, P.name) == 0)
      This = &G;
  if (!This) {
    std::printf("FAIL: no expected clocks for %s\n", P.name);
    ++apitest::Failures;
  } else {
    EXPECT_EQ(attribute(cudaDevAttrClockRate), This->ClockKhz);
    EXPECT_EQ(attribute(cudaDevAttrMemoryClockRate), This->MemoryClockKhz);
  }
  EXPECT_EQ(attribute(cudaDevAttrGpuOverlap), P.asyncEngineCount > 0);
  EXPECT_EQ(attribute(cudaDevAttrComputeMode), cudaComputeModeDefault);
  EXPECT_EQ(attribute(cudaDevAttrKernelExecTimeout), 0);
  EXPECT_EQ(attribute(cudaDevAttrSingleToDoublePrecisionPerfRatio), 2);
  EXPECT_EQ(attribute(cudaDevAttrMemSyncDomainCount), 1);
  for (int A = 1; A < cudaDevAttrMax; ++A) { // every number below the end answers
    int V = 0;
    EXPECT_ERROR(cudaDeviceGetAttribute(&V, static_cast<cudaDeviceAttr>(A), 0), cudaSuccess);
  }

  // What the properties claim works.
  EXPECT_EQ(P.streamPrioritiesSupported, 1);
  int Least = 0, Greatest = 0;
  CHECK(cudaDeviceGetStreamPriorityRange(&Least, &Greatest));
  EXPECT(Greatest < Least);
  cudaStream_t S;
  CHECK(cudaStreamCreateWithPriority(&S, cudaStreamNonBlocking, Greatest));
  CHECK(cudaStreamDestroy(S));
  EXPECT_EQ(P.hostRegisterSupported, 1);
  static char Page[4096];
  CHECK(cudaHostRegister(Page, sizeof(Page), cudaHostRegisterMapped));
  CHECK(cudaHostUnregister(Page));
  EXPECT_EQ(P.memoryPoolsSupported, 1);
  cudaMemPool_t Pool = nullptr;
  CHECK(cudaDeviceGetDefaultMemPool(&Pool, 0));
  EXPECT_EQ(P.canMapHostMemory, 1);
  void *Host = nullptr, *Dev = nullptr;
  CHECK(cudaHostAlloc(&Host, 64, cudaHostAllocMapped));
  CHECK(cudaHostGetDevicePointer(&Dev, Host, 0));
  EXPECT(Dev == Host);
  CHECK(cudaFreeHost(Host));
  size_t Free = 0, Total = 0;
  CHECK(cudaMemGetInfo(&Free, &Total));
  EXPECT_EQ(Total, P.totalGlobalMem);

  // Refusals.
  int V = 0;
  EXPECT_ERROR(cudaDeviceGetAttribute(&V, static_cast<cudaDeviceAttr>(0), 0),
               cudaErrorInvalidValue);
  EXPECT_ERROR(cudaDeviceGetAttribute(&V, cudaDevAttrMax, 0), cudaErrorInvalidValue);
  EXPECT_ERROR(cudaDeviceGetAttribute(&V, cudaDevAttrWarpSize, 1), cudaErrorInvalidDevice);
  EXPECT_ERROR(cudaDeviceGetAttribute(nullptr, cudaDevAttrWarpSize, 0), cudaErrorInvalidValue);
  std::printf("%s: %d attributes equal their cudaDeviceProp fields\n", P.name, Compared);
  return apitest::finish("ApiDeviceAttributes");
}
