//===- Model.cpp - The stand-in's state: one GPU under Unified Memory ------===//
#include "Model.h"

#include "deepum/format/Units.h"
#include "deepum/sim/Simulator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace deepum::standin {

namespace {

// Kernel records kept for the counters' readers (the later CUPTI layer);
// beyond this, launches are still counted but not recorded.
constexpr size_t kMaxRecords = size_t{1} << 20;

/// What NVIDIA's device query reports for the GPUs the device models name
/// (datasheets; deviceQuery output): marketing name, compute capability, SMs,
/// L2 cache, memory bus width, shared memory per SM / per block with opt-in /
/// reserved per block (the architecture's, in KiB), boost clock, and the
/// ratio of single- to double-precision throughput.
struct Identity {
  const char *Model;
  const char *Name;
  int Major, Minor, Sms;
  int L2MiB, BusBits;
  int SharedPerSmKiB, SharedOptinKiB, SharedReservedKiB;
  int ClockMHz, SingleToDouble;
};
constexpr Identity kIdentities[] = {
    {"v100-pcie-16gb", "Tesla V100-PCIE-16GB", 7, 0, 80, 6, 4096, 96, 96, 0, 1380, 2},
    {"v100-pcie-32gb", "Tesla V100-PCIE-32GB", 7, 0, 80, 6, 4096, 96, 96, 0, 1380, 2},
    {"a100-40gb", "NVIDIA A100-PCIE-40GB", 8, 0, 108, 40, 5120, 164, 163, 1, 1410, 2},
    {"h100-pcie", "NVIDIA H100 PCIe", 9, 0, 114, 50, 5120, 228, 227, 1, 1755, 2},
    {"h100-sxm", "NVIDIA H100 80GB HBM3", 9, 0, 132, 50, 5120, 228, 227, 1, 1980, 2},
    {"h200", "NVIDIA H200", 9, 0, 132, 50, 6144, 228, 227, 1, 1980, 2},
};

deepum::sim::Access accessOf(int A) {
  switch (A) {
  case DEEPUM_STANDIN_READ:
    return deepum::sim::Access::Read;
  case DEEPUM_STANDIN_WRITE:
    return deepum::sim::Access::Write;
  default:
    return deepum::sim::Access::ReadWrite;
  }
}

/// Behind deepum_standin_launch::internal while a twin runs.
struct LaunchState {
  Model *M = nullptr;
  std::vector<Range> Ranges;
  bool Declared = false;
  double Flops = 0;
  cudaError_t Error = cudaSuccess;
};

} // namespace

Model &Model::get() {
  // Never destroyed: CUDA calls may come from other libraries' destructors.
  static Model *M = new Model();
  return *M;
}

Model::Model() {
  const char *Name = std::getenv("DEEPUM_STANDIN_DEVICE");
  DeviceModelName = Name && *Name ? Name : "h100-pcie";
  // A device file's fields over the built-in model (as --device-file).
  const char *File = std::getenv("DEEPUM_STANDIN_DEVICE_FILE");
  auto D = deepum::sim::loadDeviceModel(DeviceModelName, File ? File : "");
  if (!D) {
    ConfigError =
        std::string(File && *File ? "DEEPUM_STANDIN_DEVICE_FILE" : "DEEPUM_STANDIN_DEVICE") + ": " +
        llvm::toString(D.takeError());
    Dev.Name = DeviceModelName;
    Dev.MemoryBytes = uint64_t{80} << 30;
  } else {
    Dev = *D;
  }
  CapacityBytes = Dev.MemoryBytes;
  if (const char *C = std::getenv("DEEPUM_STANDIN_GPU_MEMORY"); C && *C) {
    auto Bytes = deepum::format::parseByteSize(C);
    if (!Bytes)
      ConfigError = "DEEPUM_STANDIN_GPU_MEMORY: " + llvm::toString(Bytes.takeError());
    else if (*Bytes < kBlockBytes)
      ConfigError = "DEEPUM_STANDIN_GPU_MEMORY: less than one 2 MiB UM block";
    else
      CapacityBytes = *Bytes;
  }
  if (const char *C = std::getenv("DEEPUM_STANDIN_CONCURRENT_MANAGED_ACCESS"))
    ConcurrentManagedAccess = std::strcmp(C, "0") != 0;
  if (!ConfigError.empty())
    std::fprintf(stderr, "deepum stand-in: %s\n", ConfigError.c_str());
  Eng = std::make_unique<deepum::sim::Engine>(Dev, CapacityBytes);
  if (const char *C = std::getenv("DEEPUM_STANDIN_HOST_FAULTS"); !C || std::strcmp(C, "0") != 0)
    startHostFaults();

  const Identity *Id = nullptr;
  for (const Identity &I : kIdentities)
    if (DeviceModelName == I.Model)
      Id = &I;
  cudaDeviceProp &P = Prop;
  std::snprintf(P.name, sizeof(P.name), "%s",
                Id ? Id->Name : ("deepum stand-in " + DeviceModelName).c_str());
  P.totalGlobalMem = CapacityBytes;
  P.sharedMemPerBlock = 48 << 10;
  P.regsPerBlock = 65536;
  P.warpSize = 32;
  P.memPitch = 2147483647;
  P.maxThreadsPerBlock = 1024;
  P.maxThreadsDim[0] = 1024;
  P.maxThreadsDim[1] = 1024;
  P.maxThreadsDim[2] = 64;
  P.maxGridSize[0] = 2147483647;
  P.maxGridSize[1] = 65535;
  P.maxGridSize[2] = 65535;
  P.totalConstMem = 64 << 10;
  P.major = Id ? Id->Major : 9;
  P.minor = Id ? Id->Minor : 0;
  P.textureAlignment = 512;
  P.texturePitchAlignment = 32;
  P.multiProcessorCount = Id ? Id->Sms : 114;
  P.integrated = 0;
  P.canMapHostMemory = 1;
  P.concurrentKernels = 1;
  P.pciBusID = 1;
  P.asyncEngineCount = static_cast<int>(Dev.CopyEnginesPerDirection) * 2;
  P.unifiedAddressing = 1;
  P.memoryBusWidth = Id ? Id->BusBits : 5120;
  P.l2CacheSize = (Id ? Id->L2MiB : 50) << 20;
  P.maxThreadsPerMultiProcessor = 2048;
  P.streamPrioritiesSupported = 1;
  P.globalL1CacheSupported = 1;
  P.localL1CacheSupported = 1;
  P.sharedMemPerMultiprocessor = static_cast<size_t>(Id ? Id->SharedPerSmKiB : 228) << 10;
  P.regsPerMultiprocessor = 65536;
  P.managedMemory = 1;
  P.isMultiGpuBoard = 0;
  P.pageableMemoryAccess = 0;
  P.concurrentManagedAccess = ConcurrentManagedAccess ? 1 : 0;
  P.computePreemptionSupported = 1;
  P.sharedMemPerBlockOptin = static_cast<size_t>(Id ? Id->SharedOptinKiB : 227) << 10;
  P.maxBlocksPerMultiProcessor = 32;
  P.reservedSharedMemPerBlock = static_cast<size_t>(Id ? Id->SharedReservedKiB : 1) << 10;
  P.hostRegisterSupported = 1;
  // Registered and allocated pinned memory alike: the device pointer is the
  // host pointer (HostMemory.cpp).
  P.canUseHostPointerForRegisteredMem = 1;
  P.memoryPoolsSupported = 1;
  P.gpuDirectRDMASupported = 0;
  P.unifiedFunctionPointers = 1;
  // Plain facts of these GPUs, whatever the model does with them.
  P.surfaceAlignment = 512;
  P.ECCEnabled = 1;
  // Features the stand-in does not model read 0 (a program that asks skips
  // them instead of calling entry points that answer "not supported"):
  // cooperative and cluster launches, L2 persistence (persistingL2CacheMaxSize,
  // accessPolicyMaxWindowSize), CUDA arrays, textures and surfaces (every
  // maxTexture* / maxSurface* limit), read-only registration, external
  // semaphores, IPC, GPUDirect RDMA, MPS, NUMA.
  P.cooperativeLaunch = 0;
  P.deviceNumaId = -1; // no NUMA node holds the GPU's memory
  P.hostNumaId = -1;   // "-1 when system does not support NUMA"
  // No property field holds these two (cudaDevAttrClockRate,
  // cudaDevAttrSingleToDoublePrecisionPerfRatio).
  ClockRateKhz = Id ? Id->ClockMHz * 1000 : 0;
  SingleToDoubleRatio = Id ? Id->SingleToDouble : 0;
}

const Allocation *Model::find(const void *P) const {
  const auto A = reinterpret_cast<uint64_t>(P);
  auto It = Allocs.upper_bound(A);
  if (It == Allocs.begin())
    return nullptr;
  --It;
  const Allocation &Al = It->second;
  return A - Al.Base < std::max<uint64_t>(Al.Bytes, 1) ? &Al : nullptr;
}

const Allocation *Model::findRange(const void *P, uint64_t Bytes) const {
  const Allocation *A = find(P);
  if (!A)
    return nullptr;
  const uint64_t Off = reinterpret_cast<uint64_t>(P) - A->Base;
  return Bytes <= A->Bytes - Off ? A : nullptr;
}

const Twin *Model::twinOf(const CUkern_st &K) const {
  if (auto It = TwinsByHost.find(K.HostFun); It != TwinsByHost.end())
    return &It->second;
  if (auto It = TwinsByName.find(K.Name); It != TwinsByName.end())
    return &It->second;
  return nullptr;
}

CUstream_st *Model::stream(cudaStream_t S) {
  if (S == nullptr || S == cudaStreamLegacy || S == cudaStreamPerThread)
    return &Legacy; // eager execution: the per-thread stream needs no state of its own
  return Streams.count(S) ? S : nullptr;
}

uint64_t Model::nowNs() const { return std::max(Eng->computeEndNs(), Eng->issueNs()); }

bool Model::poll(uint64_t Ns, PollCount &P) {
  if (Ns <= hostNs())
    return true;
  if (P.AtNs != hostNs()) {
    P.AtNs = hostNs();
    P.Count = 0;
  }
  if (++P.Count < kSpinPolls)
    return false;
  hostWaitUntil(Ns);
  return true;
}

void Model::skewUmEvents() {
  for (size_t I = UmSkewed; I < UmLog.size(); ++I) {
    UmLog[I].StartNs += SkewNs;
    UmLog[I].EndNs += SkewNs;
  }
  UmSkewed = UmLog.size();
}

void Model::afterLastStamp(uint64_t EngineNs) {
  if (EngineNs + SkewNs > LastStampNs)
    return;
  skewUmEvents();
  SkewNs = LastStampNs + 1 - EngineNs;
}

uint64_t Model::stampNs() {
  uint64_t T = nowNs() + SkewNs;
  if (T <= LastStampNs) {
    skewUmEvents(); // logged under the old skew
    SkewNs += LastStampNs + 1 - T;
    T = LastStampNs + 1;
  }
  LastStampNs = T;
  return T;
}

void Model::prefetch(uint64_t Address, uint64_t Bytes, bool ToDevice, CUstream_st &S) {
  prefetchBatch({{Address, Bytes}}, ToDevice, S); // a batch of one costs one call
}

void Model::prefetchBatch(llvm::ArrayRef<deepum::sim::Engine::Range> Ranges, bool ToDevice,
                          CUstream_st &S) {
  afterLastStamp(nowNs());
  // Stream-ordered: the migration starts after the work the stream waits for
  // (events of other streams, cudaStreamWaitEvent), and the stream's work now
  // ends with its last transfer.
  S.LastPrefetch.clear();
  if (ToDevice) {
    Eng->prefetchBatchToDevice(Ranges, S.LastNs);
    S.LastPrefetch.assign(Ranges.begin(), Ranges.end());
  } else {
    // The driver migrates whole 64 KiB pages: a range to the host moves every
    // page it overlaps, a partial one included. The engine's eviction keeps
    // only pages wholly inside a range; deepum-sim's replays are left so.
    std::vector<deepum::sim::Engine::Range> Pages;
    Pages.reserve(Ranges.size());
    for (const deepum::sim::Engine::Range &R : Ranges) {
      if (R.Bytes == 0)
        continue;
      const uint64_t Lo = R.Address / kPageBytes * kPageBytes;
      const uint64_t Hi = (R.Address + R.Bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
      Pages.push_back({Lo, Hi - Lo});
    }
    Eng->evictBatchToHost(Pages, S.LastNs);
  }
  S.LastNs = std::max({S.LastNs, hostNs(), Eng->copyEndNs(ToDevice)});
}

void Model::discardBatch(llvm::ArrayRef<deepum::sim::Engine::Range> Ranges, CUstream_st &S) {
  Eng->discardBatch(Ranges, S.LastNs);
  S.LastNs = std::max(S.LastNs, hostNs());
  // Discarded memory has undefined contents. Its bytes here are the only
  // copy (kernels run on the host), so those the engine dropped (the 64 KiB
  // pages wholly inside a range) are overwritten with a poison pattern, not
  // left as they were (a stray read would see the old data and pass) nor
  // zeroed (zeros often pass too): 0xFF bytes read as NaN floats and
  // doubles, -1 integers. Only managed memory the model knows.
  for (const deepum::sim::Engine::Range &R : Ranges) {
    const Allocation *A = find(reinterpret_cast<const void *>(R.Address));
    if (!A || A->Kind != MemoryKind::Managed || R.Bytes == 0)
      continue;
    const uint64_t Lo = (R.Address + kPageBytes - 1) / kPageBytes * kPageBytes;
    const uint64_t Hi = std::min((R.Address + R.Bytes) / kPageBytes * kPageBytes,
                                 A->Base + A->Mapped);
    if (Hi > Lo) {
      std::memset(reinterpret_cast<void *>(Lo), kDiscardPoison, Hi - Lo);
      Count.PoisonedBytes += Hi - Lo;
    }
  }
}

void Model::discard(uint64_t Address, uint64_t Bytes, CUstream_st &S) {
  discardBatch({{Address, Bytes}}, S);
}

void Model::runOversubscribed(llvm::ArrayRef<deepum::sim::Engine::AddressUse> Uses, uint64_t Pages,
                              uint64_t DurationNs) {
  // A GPU runs a kernel whose pages exceed its memory: it faults pages in,
  // the driver evicts others (the kernel's own among them) to make room, and
  // the kernel goes on. Modelled as the kernel's blocks in address order, in
  // pieces whose whole blocks fit the capacity, each faulting its pages in
  // and evicting the least recently migrated, with its share of the time.
  ++Count.Oversubscribed;
  const size_t PerPiece = std::max<size_t>(1, Eng->capacityBytes() / kBlockBytes);
  uint64_t Ran = 0;
  for (size_t First = 0; First < Uses.size(); First += PerPiece) {
    const auto Piece = Uses.slice(First, std::min(PerPiece, Uses.size() - First));
    uint64_t PiecePages = 0;
    for (const deepum::sim::Engine::AddressUse &U : Piece)
      PiecePages += static_cast<uint64_t>(__builtin_popcount(U.PageMask));
    const uint64_t Ns =
        std::max<uint64_t>(1, DurationNs * PiecePages / std::max<uint64_t>(1, Pages));
    if (llvm::Error E = Eng->launchByAddress(Piece, Ns)) {
      llvm::consumeError(std::move(E));
      ++Count.ModelRefused;
      continue;
    }
    ++Ran;
  }
  if (Ran > 1)
    Count.ExtraPieces += Ran - 1; // the engine counts each piece as a kernel
}

/// GPU work over `Ranges` taking `DurationNs` on the device (a kernel, a
/// memset, a device-to-device copy): its managed pages by 2 MiB block go to
/// the engine, which faults in what is not resident; after the explicit
/// copies its stream issued before it. Returns when it became ready to run.
uint64_t Model::runOnDevice(llvm::ArrayRef<Range> Ranges, uint64_t DurationNs, CUstream_st *S) {
  std::map<uint64_t, deepum::sim::Engine::AddressUse> Uses;
  for (const Range &R : Ranges) {
    if (R.Kind != MemoryKind::Managed || R.Bytes == 0)
      continue;
    const uint64_t End = R.Address + R.Bytes;
    for (uint64_t B = R.Address / kBlockBytes; B <= (End - 1) / kBlockBytes; ++B) {
      const uint64_t Lo = std::max(R.Address, B * kBlockBytes) - B * kBlockBytes;
      const uint64_t Hi = std::min(End, (B + 1) * kBlockBytes) - 1 - B * kBlockBytes;
      uint32_t Mask = 0;
      for (uint64_t Pg = Lo / kPageBytes; Pg <= Hi / kPageBytes; ++Pg)
        Mask |= uint32_t{1} << Pg;
      auto [It, New] = Uses.try_emplace(B, deepum::sim::Engine::AddressUse{B, Mask, R.Mode});
      if (!New) {
        It->second.PageMask |= Mask;
        if (It->second.Mode != R.Mode)
          It->second.Mode = deepum::sim::Access::ReadWrite;
      }
    }
  }
  std::vector<deepum::sim::Engine::AddressUse> UseList;
  UseList.reserve(Uses.size());
  for (auto &KV : Uses)
    UseList.push_back(KV.second);
  // Stream order: after the explicit copies its stream issued before it.
  if (S)
    Eng->computeNotBefore(S->CopyEndNs);
  // A kernel runs from when the GPU takes it; its demand faults stall it, so
  // they lie inside [start, end], as on a GPU (CUPTI kernel records include
  // the stall).
  const uint64_t ReadyNs = std::max(Eng->computeEndNs(), Eng->issueNs());
  afterLastStamp(ReadyNs);
  uint64_t Pages = 0;
  for (const deepum::sim::Engine::AddressUse &U : UseList)
    Pages += static_cast<uint64_t>(__builtin_popcount(U.PageMask));
  if (Pages * kPageBytes <= Eng->capacityBytes()) {
    if (llvm::Error E = Eng->launchByAddress(UseList, DurationNs)) {
      // The kernel's blocks hold more pages than it touches and they do not
      // fit together: run it as an oversubscribed one.
      llvm::consumeError(std::move(E));
      runOversubscribed(UseList, Pages, DurationNs);
    }
  } else {
    runOversubscribed(UseList, Pages, DurationNs);
  }
  if (S)
    S->LastNs = std::max(S->LastNs, Eng->computeEndNs());
  return ReadyNs;
}

uint64_t Model::memoryWork(llvm::ArrayRef<Range> Ranges, uint64_t Bytes, CUstream_st &S) {
  double Ns = Dev.KernelMinUs * 1e3;
  if (Dev.DramBytesPerSecond > 0)
    Ns = std::max(Ns, static_cast<double>(Bytes) /
                          (Dev.DramBytesPerSecond * std::max(Dev.MemoryEfficiency, 0.01)) * 1e9);
  const uint64_t KernelsBefore = Eng->stats().Kernels;
  runOnDevice(Ranges, std::max<uint64_t>(1, static_cast<uint64_t>(Ns)), &S);
  // Not a kernel: the engine's count of them is the program's kernels.
  Count.MemoryWork += Eng->stats().Kernels - KernelsBefore;
  return Eng->computeEndNs();
}

uint64_t Model::copy(bool ToDevice, uint64_t Bytes, bool FromManaged, CUstream_st &S) {
  afterLastStamp(nowNs());
  const uint64_t End = Eng->explicitCopy(ToDevice, Bytes, S.LastNs, FromManaged);
  S.LastNs = std::max({S.LastNs, hostNs(), End});
  S.CopyEndNs = std::max(S.CopyEndNs, End);
  Count.MemcpyTimedBytes += Bytes;
  return End;
}

cudaError_t Model::launch(CUkern_st &K, dim3 Grid, dim3 Block, void **Args, size_t SharedMem,
                          cudaStream_t Stream, uint64_t GraphExec) {
  CUstream_st *S = stream(Stream);
  LaunchState St;
  St.M = this;
  deepum_standin_launch L{};
  L.name = K.Name.c_str();
  L.grid[0] = Grid.x;
  L.grid[1] = Grid.y;
  L.grid[2] = Grid.z;
  L.block[0] = Block.x;
  L.block[1] = Block.y;
  L.block[2] = Block.z;
  L.shared_mem_bytes = SharedMem;
  L.stream = Stream;
  L.internal = &St;

  const Twin *T = twinOf(K);
  if (T) {
    T->Fn(&L, Args, T->User);
  } else if (!K.HaveLayout && !K.SaidNoLayout) {
    // Nothing to model it by: said once per kernel, never a silent no-op.
    K.SaidNoLayout = true;
    std::fprintf(stderr,
                 "cuda stand-in: kernel %s has no parameter layout (a compressed or PTX-only "
                 "fat binary) and no twin: its launches touch nothing in the model\n",
                 K.Name.c_str());
  }
  if (!St.Declared && K.HaveLayout && Args) {
    // No declaration: every argument of pointer size that points into live
    // CUDA memory touches it from there to the allocation's end.
    for (size_t I = 0; I < K.Layout.Sizes.size(); ++I) {
      if (K.Layout.Sizes[I] != sizeof(void *) || !Args[I])
        continue;
      void *P = nullptr;
      std::memcpy(&P, Args[I], sizeof(P));
      if (const Allocation *A = find(P); A && A->Kind != MemoryKind::PinnedHost) {
        const uint64_t Off = reinterpret_cast<uint64_t>(P) - A->Base;
        St.Ranges.push_back({reinterpret_cast<uint64_t>(P), A->Bytes - Off,
                             deepum::sim::Access::ReadWrite, A->Kind});
      }
    }
  }
  if (St.Error != cudaSuccess && Sticky == cudaSuccess)
    Sticky = St.Error;

  uint64_t Bytes = 0;
  for (const Range &R : St.Ranges)
    Bytes += R.Bytes;
  double Ns = Dev.KernelMinUs * 1e3;
  if (Dev.DramBytesPerSecond > 0)
    Ns = std::max(Ns, static_cast<double>(Bytes) /
                          (Dev.DramBytesPerSecond * std::max(Dev.MemoryEfficiency, 0.01)) * 1e9);
  if (Dev.VectorFlopsPerSecond > 0)
    Ns = std::max(Ns, St.Flops / Dev.VectorFlopsPerSecond * 1e9);
  const uint64_t DurationNs = std::max<uint64_t>(1, static_cast<uint64_t>(Ns));
  const uint64_t FaultsBefore = Eng->stats().Faults;
  const uint64_t ReadyNs = runOnDevice(St.Ranges, DurationNs, S); // S's clock moved there
  const uint64_t EndNs = Eng->computeEndNs();
  if (Records.size() < kMaxRecords) {
    deepum_standin_kernel_record R{};
    R.name = K.Name.c_str();
    R.correlation_id = NextCorrelation;
    R.stream = Stream;
    std::memcpy(R.grid, L.grid, sizeof(R.grid));
    std::memcpy(R.block, L.block, sizeof(R.block));
    R.end_ns = EndNs + SkewNs;
    R.start_ns = std::min(ReadyNs, EndNs >= DurationNs ? EndNs - DurationNs : 0) + SkewNs;
    R.faults = Eng->stats().Faults - FaultsBefore;
    R.graph_exec = GraphExec;
    R.shared_mem_bytes = static_cast<uint32_t>(SharedMem);
    Records.push_back(R);
  }
  ++NextCorrelation;
  return cudaSuccess;
}

} // namespace deepum::standin

using deepum::standin::Model;

extern "C" {

int deepum_standin_register_twin(const void *HostFun, const char *Name, deepum_standin_twin_fn Fn,
                                 void *User, const uint32_t *ParamSizes, uint32_t ParamCount) {
  if (!Fn || (!HostFun && (!Name || !*Name)) || (ParamCount && !ParamSizes))
    return cudaErrorInvalidValue;
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  deepum::standin::Twin T;
  T.Fn = Fn;
  T.User = User;
  if (ParamSizes) {
    T.ParamSizes.assign(ParamSizes, ParamSizes + ParamCount);
    T.HaveSizes = true;
  }
  if (HostFun) {
    // The twin's declared parameters give the layout when the fat binary did not.
    if (auto It = M.Kernels.find(HostFun); It != M.Kernels.end() && !It->second->HaveLayout &&
                                           T.HaveSizes) {
      It->second->Layout.Sizes = T.ParamSizes;
      It->second->HaveLayout = true;
    }
    M.TwinsByHost[HostFun] = std::move(T);
  } else {
    M.TwinsByName[Name] = std::move(T);
  }
  return cudaSuccess;
}

int deepum_standin_access(deepum_standin_launch *L, const void *P, size_t Bytes, int Access) {
  if (!L || !L->internal)
    return 0;
  auto *St = static_cast<deepum::standin::LaunchState *>(L->internal);
  if (!St->Declared) {
    St->Declared = true;
    St->Ranges.clear();
  }
  if (St->Error != cudaSuccess)
    return 0;
  if (Bytes == 0)
    return 1;
  const deepum::standin::Allocation *A = St->M->findRange(P, Bytes);
  if (!A) {
    St->Error = cudaErrorIllegalAddress;
    return 0;
  }
  St->Ranges.push_back({reinterpret_cast<uint64_t>(P), Bytes,
                        deepum::standin::accessOf(Access), A->Kind});
  return 1;
}

void deepum_standin_add_flops(deepum_standin_launch *L, double Flops) {
  if (L && L->internal && Flops > 0)
    static_cast<deepum::standin::LaunchState *>(L->internal)->Flops += Flops;
}

int deepum_standin_get_stats(deepum_standin_stats *Out, size_t OutSize) {
  if (!Out || OutSize == 0)
    return cudaErrorInvalidValue;
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  const deepum::sim::EngineStats &S = M.Eng->stats();
  const deepum::sim::EngineStats &B = M.Base;
  deepum_standin_stats R{};
  R.kernels = S.Kernels - B.Kernels - M.Count.ExtraPieces - M.Count.MemoryWork;
  R.faults = S.Faults - B.Faults;
  R.fault_batches = S.FaultBatches - B.FaultBatches;
  R.bytes_htod = S.BytesHtoD - B.BytesHtoD;
  R.bytes_dtoh = S.BytesDtoH - B.BytesDtoH;
  R.bytes_prefetched = S.BytesPrefetched - B.BytesPrefetched;
  R.bytes_driver_prefetched = S.BytesDriverPrefetched - B.BytesDriverPrefetched;
  R.bytes_demand = S.BytesDemand - B.BytesDemand;
  R.evictions = S.Evictions - B.Evictions;
  R.host_calls = S.HostCalls - B.HostCalls;
  R.host_call_ns = S.HostCallNs - B.HostCallNs;
  R.bytes_discarded = S.BytesDiscarded - B.BytesDiscarded - (M.Count.FreeDiscardBytes - M.FreeDiscardBase);
  R.thrashing_events = S.ThrashingEvents - B.ThrashingEvents;
  R.model_refused_launches = M.Count.ModelRefused;
  R.oversubscribed_launches = M.Count.Oversubscribed;
  R.memcpy_bytes = M.Count.MemcpyBytes;
  R.bytes_copied = M.Count.MemcpyTimedBytes;
  R.bytes_poisoned = M.Count.PoisonedBytes;
  R.host_faults = S.HostFaults - B.HostFaults;
  R.resident_bytes = M.Eng->residentBytes();
  R.capacity_bytes = M.CapacityBytes;
  R.device_allocated_bytes = M.DeviceBytes;
  R.managed_allocated_bytes = M.ManagedBytes;
  R.model_time_ns = M.Eng->computeEndNs();
  std::memcpy(Out, &R, std::min(OutSize, sizeof(R)));
  return cudaSuccess;
}

size_t deepum_standin_kernel_records(deepum_standin_kernel_record *Out, size_t Capacity,
                                     size_t First) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  if (!Out)
    return M.Records.size();
  size_t N = 0;
  for (size_t I = First; I < M.Records.size() && N < Capacity; ++I)
    Out[N++] = M.Records[I];
  return N;
}

void deepum_standin_reset_stats(void) {
  Model &M = Model::get();
  deepum::standin::ModelLock Lock(M);
  M.Base = M.Eng->stats();
  M.FreeDiscardBase = M.Count.FreeDiscardBytes;
  M.Count.ModelRefused = 0;
  M.Count.Oversubscribed = 0;
  M.Count.ExtraPieces = 0;
  M.Count.MemoryWork = 0;
  M.Count.MemcpyBytes = 0;
  M.Count.MemcpyTimedBytes = 0;
  M.Count.PoisonedBytes = 0;
  M.Records.clear();
}

} // extern "C"
