//===- Model.h - The stand-in's state: one GPU under Unified Memory --------===//
//
// Everything the CUDA entry points act on, behind one lock: the device, the
// UM model (deepum::sim::Engine at the configured capacity), allocations,
// streams, events, graphs, registered kernels and twins, and the counters.
//
// Execution is eager: work is done when it is issued, in issue order, on the
// calling thread. That is one valid schedule of any stream program (streams
// may run in any interleaving their dependencies allow), so results are
// those of a real GPU for programs free of races. Times are the model's, in
// stream order: a migration starts after the events its stream waits for,
// and an event completes when the work issued before it ends.
//
//===----------------------------------------------------------------------===//
#ifndef DEEPUM_STANDIN_MODEL_H
#define DEEPUM_STANDIN_MODEL_H

#include "Fatbin.h"
#include "deepum/sim/Engine.h"
#include "deepum/standin/StandIn.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

// Handle types the CUDA headers leave incomplete.
struct CUkern_st {
  const void *HostFun = nullptr;
  std::string Name;
  bool HaveLayout = false;
  bool SaidNoLayout = false; // the model has said it cannot model the kernel
  deepum::standin::ParamLayout Layout;
  // From the cubin (all 0 without one), and cudaFuncSetAttribute's settings
  // (-1: not set). Occupancy.cpp.
  deepum::standin::KernelResources Resources;
  int MaxDynamicSharedBytes = -1;
  int PreferredCarveout = -1;
};
/// Polls of work not yet done, at one model time (Model::poll).
struct PollCount {
  uint64_t AtNs = 0;
  unsigned Count = 0;
};
struct CUstream_st {
  unsigned Flags = 0;
  int Priority = 0;
  uint64_t LastNs = 0; // model time of the stream's last work
  uint64_t CopyEndNs = 0; // when its last explicit copy ends: its next kernel starts after it
  std::vector<deepum::sim::Engine::Range> LastPrefetch; // its last prefetch call to the GPU
  PollCount Polls;
  CUgraph_st *Capture = nullptr;
  cudaStreamCaptureMode CaptureMode = cudaStreamCaptureModeGlobal;
  bool CaptureInvalidated = false;
  unsigned long long CaptureId = 0;
};
struct CUevent_st {
  unsigned Flags = 0;
  bool Recorded = false;
  uint64_t Ns = 0;
  std::vector<deepum::sim::Engine::Range> Prefetched; // the prefetch call it follows
  PollCount Polls;
};
struct CUgraphNode_st {
  CUgraph_st *Graph = nullptr;
  cudaGraphNodeType Type = cudaGraphNodeTypeEmpty;
  // Kernel nodes: the kernel, its configuration and its arguments' bytes.
  CUkern_st *Kernel = nullptr;
  dim3 Grid, Block;
  size_t SharedMem = 0;
  std::vector<std::vector<unsigned char>> Args;
  std::vector<void *> ArgPtrs;
  std::function<cudaError_t(cudaStream_t)> Run; // memcpy and memset nodes
};
struct CUgraph_st {
  std::vector<std::unique_ptr<CUgraphNode_st>> Nodes; // in capture order
};
struct CUgraphExec_st {
  CUgraph_st *Graph = nullptr; // a private copy
};
/// A stream-ordered memory pool (MemPool.cpp): device memory reserved in
/// chunks of whole 2 MiB blocks and carved into allocations; a freed piece
/// stays reserved, reusable in stream order, until a synchronisation or a
/// trim gives a wholly free chunk back.
struct CUmemPoolHandle_st {
  // cudaMemPoolSetAttribute's settings (the reuse policies are booleans).
  uint64_t ReleaseThreshold = 0;
  int ReuseFollowEventDependencies = 1;
  int ReuseAllowOpportunistic = 1;
  int ReuseAllowInternalDependencies = 1;
  // What cudaMemPoolGetAttribute reports.
  uint64_t ReservedBytes = 0, ReservedHigh = 0, UsedBytes = 0, UsedHigh = 0;
  std::map<uint64_t, uint64_t> Chunks; // base -> bytes, each its own mapping
  /// Reserved bytes no allocation holds. `Fresh`: never allocated, free for
  /// any stream; otherwise free since `FreedNs` (model time) on `FreedOn`
  /// (null: no one stream, as after cudaFree or pieces of two streams merged).
  struct FreePiece {
    uint64_t Bytes = 0;
    uint64_t FreedNs = 0;
    CUstream_st *FreedOn = nullptr;
    bool Fresh = false;
  };
  std::map<uint64_t, FreePiece> Free; // by address; adjacent pieces of a chunk merged
};

namespace deepum::standin {

enum class MemoryKind { Managed, Device, PinnedHost };

/// The model's UM block (2 MiB) and page (64 KiB).
inline constexpr uint64_t kBlockBytes = uint64_t{2} << 20;
inline constexpr uint64_t kPageBytes = deepum::sim::Engine::PageBytes;

class Model;

/// The model's lock. A thread holding it acts for the GPU: its touches of
/// managed memory (twins, copies, memsets, poison) are the device's, never
/// host faults. When it lets go, the host's page protections follow the
/// model's residency (HostFault.cpp).
class ModelLock {
public:
  explicit ModelLock(Model &M);
  ~ModelLock();
  ModelLock(const ModelLock &) = delete;
  ModelLock &operator=(const ModelLock &) = delete;

private:
  Model &M;
};

/// The program's own code run by a thread that holds the model's lock (a
/// graph's host node): its touches of managed memory are the host's.
class HostCodeScope {
public:
  explicit HostCodeScope(Model &M);
  ~HostCodeScope();
  HostCodeScope(const HostCodeScope &) = delete;
  HostCodeScope &operator=(const HostCodeScope &) = delete;

private:
  int SavedDepth;
};

/// What a discarded byte of managed memory reads as (Model::discardBatch).
inline constexpr unsigned char kDiscardPoison = 0xFF;

/// Memory a piece of GPU work touches, and how.
struct Range {
  uint64_t Address, Bytes;
  deepum::sim::Access Mode;
  MemoryKind Kind;
};

struct Allocation {
  uint64_t Base = 0;
  uint64_t Bytes = 0;  // as requested
  uint64_t Mapped = 0; // mmap length; 0: not a mapping of its own (registered, a pool's piece)
  MemoryKind Kind = MemoryKind::Managed;
  unsigned HostFlags = 0;             // PinnedHost: the flags it was allocated or registered with
  bool Registered = false;            // PinnedHost: the program's own memory (cudaHostRegister)
  CUmemPoolHandle_st *Pool = nullptr; // Device: a piece of this pool's memory (cudaMallocAsync)
};

struct Twin {
  deepum_standin_twin_fn Fn = nullptr;
  void *User = nullptr;
  std::vector<uint32_t> ParamSizes;
  bool HaveSizes = false;
};

/// The state behind every entry point. Methods expect the lock held.
class Model {
public:
  static Model &get();
  std::recursive_mutex Mu;

  // Device.
  cudaDeviceProp Prop{};
  std::string DeviceModelName;
  uint64_t CapacityBytes = 0;
  bool ConcurrentManagedAccess = true;
  std::unique_ptr<deepum::sim::Engine> Eng;
  deepum::sim::DeviceModel Dev;
  std::string ConfigError; // non-empty: cudaErrorInitializationError
  int ClockRateKhz = 0;       // the GPU's boost clock (0: a device model of no known GPU)
  int SingleToDoubleRatio = 0;

  // Errors: the first sticky error, returned by every later call.
  cudaError_t Sticky = cudaSuccess;

  // Memory.
  std::map<uint64_t, Allocation> Allocs; // by base
  uint64_t DeviceBytes = 0, ManagedBytes = 0; // device: cudaMalloc + pools' reserved bytes
  const Allocation *find(const void *P) const;
  /// The allocation holding all of [P, P+Bytes), or null.
  const Allocation *findRange(const void *P, uint64_t Bytes) const;

  // Modules and kernels.
  std::unordered_map<const void *, std::unique_ptr<CUkern_st>> Kernels; // by host function
  std::unordered_map<void **, std::vector<const void *>> Modules;       // handle -> host functions
  std::unordered_map<void **, std::unordered_map<std::string, ParamLayout>> ModuleLayouts;
  /// Initial values of each module's global variables (__managed__ ones).
  std::unordered_map<void **, std::unordered_map<std::string, std::vector<uint8_t>>> ModuleGlobals;
  std::unordered_map<void **, std::unordered_map<std::string, KernelResources>> ModuleResources;
  std::unordered_map<const void *, Twin> TwinsByHost;
  std::unordered_map<std::string, Twin> TwinsByName;
  const Twin *twinOf(const CUkern_st &K) const;

  // Handles.
  std::unordered_set<CUstream_st *> Streams;
  std::unordered_set<CUevent_st *> Events;
  std::unordered_set<CUgraph_st *> Graphs;
  std::unordered_set<CUgraphExec_st *> Execs;
  CUstream_st Legacy;                    // the NULL / cudaStreamLegacy stream
  unsigned long long NextCaptureId = 1;
  /// The stream behind a handle (legacy and per-thread included), or null.
  CUstream_st *stream(cudaStream_t S);
  static bool isLegacy(cudaStream_t S) { return S == nullptr || S == cudaStreamLegacy; }

  // Stream-ordered allocation (MemPool.cpp): the device's one pool.
  CUmemPoolHandle_st DefaultPool;
  CUmemPoolHandle_st *CurrentPool = &DefaultPool; // cudaDeviceSetMemPool
  bool isPool(cudaMemPool_t P) const { return P == &DefaultPool; }
  /// `Bytes` (> 0) from `Pool` in `S`'s order.
  cudaError_t poolAllocate(CUmemPoolHandle_st &Pool, uint64_t Bytes, CUstream_st &S, void **Ptr);
  /// The pool allocation at `Address` goes back to its pool, free from
  /// `FreedNs` on `FreedOn` (null: for every stream).
  void poolFree(uint64_t Address, uint64_t FreedNs, CUstream_st *FreedOn);
  /// Wholly free chunks whose frees the host has seen complete go back to
  /// the system while the pool keeps at least `Keep` bytes (cudaMemPoolTrimTo).
  void poolTrim(CUmemPoolHandle_st &Pool, uint64_t Keep);
  /// At a stream, event or device synchronisation: each pool holding more
  /// than its release threshold gives back such chunks until it holds no more.
  void poolsAtSynchronize();
  /// A stream is destroyed: what it freed stays free from when it did, for
  /// no one stream (a new stream may come to have its address).
  void poolForgetStream(const CUstream_st *S);

  // Work.
  cudaError_t launch(CUkern_st &K, dim3 Grid, dim3 Block, void **Args, size_t SharedMem,
                     cudaStream_t S, uint64_t GraphExec = 0);
  /// GPU work over `Ranges` lasting `DurationNs` on stream S (a kernel, a
  /// memset, a device-to-device copy); returns when it was ready to run.
  uint64_t runOnDevice(llvm::ArrayRef<Range> Ranges, uint64_t DurationNs, CUstream_st *S);
  /// A memset or device-to-device copy moving `Bytes` of device memory over
  /// `Ranges`, at the device's memory rate; returns when it ends.
  uint64_t memoryWork(llvm::ArrayRef<Range> Ranges, uint64_t Bytes, CUstream_st &S);
  /// An explicit copy over the link on stream S, on a copy engine at the
  /// device model's rate (Engine::explicitCopy).
  /// Returns when the copy ends.
  uint64_t copy(bool ToDevice, uint64_t Bytes, bool FromManaged, CUstream_st &S);
  /// A kernel whose pages exceed the capacity, run in pieces that fit.
  void runOversubscribed(llvm::ArrayRef<deepum::sim::Engine::AddressUse> Uses, uint64_t Pages,
                         uint64_t DurationNs);
  void prefetch(uint64_t Address, uint64_t Bytes, bool ToDevice, CUstream_st &S);
  void discard(uint64_t Address, uint64_t Bytes, CUstream_st &S);
  /// Batch calls: the host pays for one call, not one per range.
  void prefetchBatch(llvm::ArrayRef<deepum::sim::Engine::Range> Ranges, bool ToDevice,
                     CUstream_st &S);
  void discardBatch(llvm::ArrayRef<deepum::sim::Engine::Range> Ranges, CUstream_st &S);
  uint64_t nowNs() const;
  /// The host waits for work ending at `Ns` (cudaEventSynchronize,
  /// cudaStreamSynchronize, cudaDeviceSynchronize): the model's host clock
  /// moves there, so what it issues next comes after that work.
  void hostWaitUntil(uint64_t Ns) { Eng->hostWaitUntil(Ns); }
  /// The host's clock: it issues work, and sees work done, at this time
  /// (the GPU may run ahead of it).
  uint64_t hostNs() const { return Eng->issueNs(); }
  /// Whether work ending at `Ns` is complete for the host
  /// (cudaEventQuery, cudaStreamQuery). Time passes for a program that spins
  /// on a query: after kSpinPolls unanswered polls at one host time, its
  /// clock moves to the work's end.
  bool poll(uint64_t Ns, PollCount &P);
  static constexpr unsigned kSpinPolls = 1000;

  // Host-side faults (HostFault.cpp): GPU-resident managed pages are
  // protected on the host, and a host touch brings its page back.
  struct HostProtection {
    uint32_t None = 0, ReadOnly = 0; // page masks of a UM block
  };
  std::unordered_map<uint64_t, HostProtection> Protected; // by UM block
  std::vector<uint32_t> ResidencyLog;                     // the engine's, drained here
  bool HostFaultsOn = false;
  /// Installs the SIGSEGV handler and starts following residency
  /// (DEEPUM_STANDIN_HOST_FAULTS=0: never).
  void startHostFaults();
  /// Brings the host's protections in step with the model's residency.
  void syncProtection();
  /// An allocation's mapping is about to go: its protections are dropped.
  void forgetProtection(uint64_t Address, uint64_t Bytes);

  // Counters.
  struct Counters {
    uint64_t ModelRefused = 0, MemcpyBytes = 0, FreeDiscardBytes = 0;
    uint64_t PoisonedBytes = 0; // discarded bytes overwritten with kDiscardPoison
    uint64_t MemoryWork = 0;      // memsets and device copies the engine ran as kernels
    uint64_t MemcpyTimedBytes = 0; // copies over the link, timed on a copy engine
    uint64_t Oversubscribed = 0; // launches whose pages exceeded the capacity
    uint64_t ExtraPieces = 0;    // engine kernels beyond one per such launch
  } Count;
  deepum::sim::EngineStats Base; // engine stats at the last reset
  uint64_t FreeDiscardBase = 0;
  std::vector<deepum_standin_kernel_record> Records;
  std::vector<deepum::sim::UmEvent> UmLog; // while CUPTI records UM counters
  /// CUPTI's clock (cuptiGetTimestamp, activity records): the model's, plus a
  /// skew that grows when reads would repeat (the model charges host calls
  /// nothing; a clock read never returns the same time twice). Records take
  /// the skew of when they happened, so host reads and GPU records keep their
  /// order.
  uint64_t SkewNs = 0, LastStampNs = 0;
  size_t UmSkewed = 0; // UmLog entries whose times include the skew
  uint64_t stampNs();
  void skewUmEvents();
  /// Work the model starts at `EngineNs` comes after every clock read so far.
  void afterLastStamp(uint64_t EngineNs);
  uint64_t NextCorrelation = 1;

private:
  Model();
};

/// The call configuration pushed by <<<>>> (per thread, a stack).
struct CallConfig {
  dim3 Grid, Block;
  size_t SharedMem;
  cudaStream_t Stream;
};

} // namespace deepum::standin

#endif // DEEPUM_STANDIN_MODEL_H
