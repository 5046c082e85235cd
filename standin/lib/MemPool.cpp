//===- MemPool.cpp - Stream-ordered allocation and the device's memory pool ===//
//
// cudaMallocAsync / cudaFreeAsync / cudaMallocFromPoolAsync over the device's
// default pool, the pool's attributes, cudaMemPoolTrimTo, and the release of
// unused memory at synchronisation. The pool is an allocator on the model's
// device memory: it reserves chunks (each a mapping of whole 2 MiB blocks,
// counted as device memory in use, as cudaMalloc's bytes are) and carves
// allocations out of them at 256-byte granularity. A freed piece stays
// reserved and is reused in stream order, by the policies
// cudaMemPoolSetAttribute names:
//  - by the stream that freed it, always (stream order);
//  - by another stream already ordered after the free (its work, events it
//    waits for included, ends at or after the free's model time:
//    cudaMemPoolReuseFollowEventDependencies);
//  - by any stream once the free is complete for the host
//    (cudaMemPoolReuseAllowOpportunistic);
//  - otherwise by inserting a dependency: the allocating stream's work then
//    starts after the free (cudaMemPoolReuseAllowInternalDependencies).
// Execution being eager, nothing waits on the host; the order shows in the
// model's stream times.
//
//===----------------------------------------------------------------------===//
#include "Entry.h"

#include <sys/mman.h>

#include <algorithm>
#include <iterator>

using deepum::standin::Allocation;
using deepum::standin::MemoryKind;
using deepum::standin::Model;
using deepum::standin::refuseInCapture;
using deepum::standin::ret;
using Piece = CUmemPoolHandle_st::FreePiece;

namespace {

constexpr uint64_t kGranule = 256; // cudaMalloc's alignment guarantee

uint64_t roundUp(uint64_t V, uint64_t To) { return (V + To - 1) / To * To; }

/// How a free piece may serve an allocation on a stream; lower is better
/// (the search prefers pieces that need no new dependency).
enum class Reuse { Ordered = 0, Opportunistic = 1, WithDependency = 2, No = 3 };

Reuse reuseOf(const CUmemPoolHandle_st &P, const Piece &F, const CUstream_st &S, uint64_t HostNs) {
  if (F.Fresh || F.FreedOn == &S)
    return Reuse::Ordered;
  if (P.ReuseFollowEventDependencies && F.FreedNs <= S.LastNs)
    return Reuse::Ordered;
  if (P.ReuseAllowOpportunistic && F.FreedNs <= HostNs)
    return Reuse::Opportunistic;
  if (P.ReuseAllowInternalDependencies)
    return Reuse::WithDependency;
  return Reuse::No;
}

/// One piece standing for two adjacent ones: usable by whom both were.
Piece merged(const Piece &A, const Piece &B) {
  if (A.Fresh)
    return {A.Bytes + B.Bytes, B.FreedNs, B.FreedOn, B.Fresh};
  if (B.Fresh)
    return {A.Bytes + B.Bytes, A.FreedNs, A.FreedOn, false};
  return {A.Bytes + B.Bytes, std::max(A.FreedNs, B.FreedNs),
          A.FreedOn == B.FreedOn ? A.FreedOn : nullptr, false};
}

/// A chunk no allocation holds, whose frees the host has seen complete
/// ("allocations asynchronously freed but whose completion has not been
/// observed on the host ... can count as outstanding").
bool idle(const CUmemPoolHandle_st &P, uint64_t Base, uint64_t Bytes, uint64_t HostNs) {
  auto It = P.Free.find(Base);
  return It != P.Free.end() && It->second.Bytes == Bytes &&
         (It->second.Fresh || It->second.FreedNs <= HostNs);
}

void releaseChunk(Model &M, CUmemPoolHandle_st &P, std::map<uint64_t, uint64_t>::iterator C) {
  const auto [Base, Bytes] = *C;
  P.Free.erase(Base);
  munmap(reinterpret_cast<void *>(Base), Bytes);
  P.ReservedBytes -= Bytes;
  M.DeviceBytes -= Bytes;
  P.Chunks.erase(C);
}

cudaError_t mallocFromPool(void **Ptr, size_t Bytes, cudaMemPool_t Pool, cudaStream_t Stream,
                           bool CurrentPool) {
  ENTER();
  if (!Ptr)
    return ret(cudaErrorInvalidValue);
  if (CurrentPool)
    Pool = M.CurrentPool;
  if (!M.isPool(Pool))
    return ret(cudaErrorInvalidValue);
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (S->Capture) // an allocation node: graph memory is not modelled
    return ret(refuseInCapture(*S));
  if (Bytes == 0) {
    *Ptr = nullptr; // as cudaMalloc: nothing to allocate, nothing to free
    return cudaSuccess;
  }
  return ret(M.poolAllocate(*Pool, Bytes, *S, Ptr));
}

cudaError_t freeToPool(void *Ptr, cudaStream_t Stream) {
  ENTER();
  CUstream_st *S = M.stream(Stream);
  if (!S)
    return ret(cudaErrorInvalidResourceHandle);
  if (S->Capture) // a free node: graph memory is not modelled
    return ret(refuseInCapture(*S));
  // Only what the stream-ordered allocator handed out ("the allocation").
  auto It = M.Allocs.find(reinterpret_cast<uint64_t>(Ptr));
  if (!Ptr || It == M.Allocs.end() || !It->second.Pool)
    return ret(cudaErrorInvalidValue);
  // The free happens when the stream reaches it: after its earlier work,
  // and not before the host asked.
  M.poolFree(It->first, std::max(S->LastNs, M.hostNs()), S);
  return cudaSuccess;
}

} // namespace

namespace deepum::standin {

cudaError_t Model::poolAllocate(CUmemPoolHandle_st &Pool, uint64_t Bytes, CUstream_st &S,
                                void **Ptr) {
  const uint64_t Size = roundUp(Bytes, kGranule);
  // The best free piece: the least new ordering, then the smallest, then
  // the lowest address.
  auto Best = Pool.Free.end();
  Reuse BestReuse = Reuse::No;
  for (auto It = Pool.Free.begin(); It != Pool.Free.end(); ++It) {
    if (It->second.Bytes < Size)
      continue;
    const Reuse R = reuseOf(Pool, It->second, S, hostNs());
    if (R == Reuse::No)
      continue;
    if (Best == Pool.Free.end() || R < BestReuse ||
        (R == BestReuse && It->second.Bytes < Best->second.Bytes)) {
      Best = It;
      BestReuse = R;
    }
  }
  if (Best == Pool.Free.end()) {
    // A new chunk. Device memory is not pageable: it must fit beside
    // cudaMalloc's and the pools' reservations; unused chunks are given
    // back first when it would not.
    const uint64_t ChunkBytes = roundUp(Size, kBlockBytes);
    auto Fits = [&] { return ChunkBytes <= CapacityBytes - std::min(CapacityBytes, DeviceBytes); };
    if (!Fits())
      poolTrim(Pool, 0);
    if (!Fits())
      return cudaErrorMemoryAllocation;
    uint64_t Mapped = 0;
    void *P = mapBytes(ChunkBytes, Mapped);
    if (!P)
      return cudaErrorMemoryAllocation;
    const auto ChunkBase = reinterpret_cast<uint64_t>(P);
    Pool.Chunks[ChunkBase] = Mapped;
    Pool.ReservedBytes += Mapped;
    Pool.ReservedHigh = std::max(Pool.ReservedHigh, Pool.ReservedBytes);
    DeviceBytes += Mapped;
    Piece F;
    F.Bytes = Mapped;
    F.Fresh = true;
    Best = Pool.Free.emplace(ChunkBase, F).first;
    BestReuse = Reuse::Ordered;
  }
  const uint64_t At = Best->first;
  Piece F = Best->second;
  Pool.Free.erase(Best);
  if (F.Bytes > Size) {
    Piece Rest = F;
    Rest.Bytes = F.Bytes - Size;
    Pool.Free.emplace(At + Size, Rest);
  }
  if (BestReuse == Reuse::WithDependency)
    S.LastNs = std::max(S.LastNs, F.FreedNs); // the dependency the allocator inserts
  Pool.UsedBytes += Size;
  Pool.UsedHigh = std::max(Pool.UsedHigh, Pool.UsedBytes);
  Allocation A;
  A.Base = At;
  A.Bytes = Bytes;
  A.Kind = MemoryKind::Device;
  A.Pool = &Pool;
  Allocs[At] = A;
  *Ptr = reinterpret_cast<void *>(At);
  return cudaSuccess;
}

void Model::poolFree(uint64_t Address, uint64_t FreedNs, CUstream_st *FreedOn) {
  auto It = Allocs.find(Address);
  CUmemPoolHandle_st &Pool = *It->second.Pool;
  const uint64_t Size = roundUp(It->second.Bytes, kGranule);
  Allocs.erase(It);
  Pool.UsedBytes -= Size;
  // Its chunk bounds the merging: chunks are separate mappings, even where
  // the system placed them side by side.
  auto C = std::prev(Pool.Chunks.upper_bound(Address));
  const uint64_t ChunkEnd = C->first + C->second;
  uint64_t At = Address;
  Piece F{Size, FreedNs, FreedOn, false};
  if (auto Next = Pool.Free.find(Address + Size);
      Next != Pool.Free.end() && Address + Size < ChunkEnd) {
    F = merged(F, Next->second);
    Pool.Free.erase(Next);
  }
  if (auto Prev = Pool.Free.lower_bound(Address); Prev != Pool.Free.begin()) {
    --Prev;
    if (Prev->first >= C->first && Prev->first + Prev->second.Bytes == Address) {
      At = Prev->first;
      F = merged(Prev->second, F);
      Pool.Free.erase(Prev);
    }
  }
  Pool.Free.emplace(At, F);
}

void Model::poolTrim(CUmemPoolHandle_st &Pool, uint64_t Keep) {
  for (auto C = Pool.Chunks.begin(); C != Pool.Chunks.end();) {
    auto Next = std::next(C);
    if (Pool.ReservedBytes - C->second >= Keep && idle(Pool, C->first, C->second, hostNs()))
      releaseChunk(*this, Pool, C);
    C = Next;
  }
}

void Model::poolsAtSynchronize() {
  CUmemPoolHandle_st &Pool = DefaultPool;
  for (auto C = Pool.Chunks.begin();
       C != Pool.Chunks.end() && Pool.ReservedBytes > Pool.ReleaseThreshold;) {
    auto Next = std::next(C);
    if (idle(Pool, C->first, C->second, hostNs()))
      releaseChunk(*this, Pool, C);
    C = Next;
  }
}

void Model::poolForgetStream(const CUstream_st *S) {
  for (auto &[At, F] : DefaultPool.Free)
    if (F.FreedOn == S)
      F.FreedOn = nullptr;
}

} // namespace deepum::standin

extern "C" {

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *Pool, int Device) {
  ENTER();
  if (!Pool)
    return ret(cudaErrorInvalidValue);
  if (Device != 0)
    return ret(cudaErrorInvalidDevice);
  *Pool = &M.DefaultPool;
  return cudaSuccess;
}

cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *Pool, int Device) {
  ENTER();
  if (!Pool)
    return ret(cudaErrorInvalidValue);
  if (Device != 0)
    return ret(cudaErrorInvalidDevice);
  *Pool = M.CurrentPool;
  return cudaSuccess;
}

// There is one pool (cudaMemPoolCreate is not modelled): setting it is all
// that can be asked.
cudaError_t cudaDeviceSetMemPool(int Device, cudaMemPool_t Pool) {
  ENTER();
  if (Device != 0)
    return ret(cudaErrorInvalidDevice);
  if (!M.isPool(Pool))
    return ret(cudaErrorInvalidValue);
  M.CurrentPool = Pool;
  return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **Ptr, size_t Bytes, cudaStream_t Stream) {
  return mallocFromPool(Ptr, Bytes, nullptr, Stream, true);
}

cudaError_t cudaMallocAsync_ptsz(void **Ptr, size_t Bytes, cudaStream_t Stream) {
  return mallocFromPool(Ptr, Bytes, nullptr, Stream ? Stream : cudaStreamPerThread, true);
}

cudaError_t cudaMallocFromPoolAsync(void **Ptr, size_t Bytes, cudaMemPool_t Pool,
                                    cudaStream_t Stream) {
  return mallocFromPool(Ptr, Bytes, Pool, Stream, false);
}

cudaError_t cudaMallocFromPoolAsync_ptsz(void **Ptr, size_t Bytes, cudaMemPool_t Pool,
                                         cudaStream_t Stream) {
  return mallocFromPool(Ptr, Bytes, Pool, Stream ? Stream : cudaStreamPerThread, false);
}

cudaError_t cudaFreeAsync(void *Ptr, cudaStream_t Stream) { return freeToPool(Ptr, Stream); }

cudaError_t cudaFreeAsync_ptsz(void *Ptr, cudaStream_t Stream) {
  return freeToPool(Ptr, Stream ? Stream : cudaStreamPerThread);
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t Pool, size_t Keep) {
  ENTER();
  if (!M.isPool(Pool))
    return ret(cudaErrorInvalidValue);
  M.poolTrim(*Pool, Keep);
  return cudaSuccess;
}

cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t Pool, cudaMemPoolAttr Attr, void *Value) {
  ENTER();
  if (!M.isPool(Pool) || !Value)
    return ret(cudaErrorInvalidValue);
  // The value's type is the attribute's: int for the policies, cuuint64_t
  // for amounts of memory.
  const auto Flag = [Value] { return *static_cast<const int *>(Value); };
  const auto Bytes = [Value] { return *static_cast<const uint64_t *>(Value); };
  switch (Attr) {
  case cudaMemPoolReuseFollowEventDependencies:
    Pool->ReuseFollowEventDependencies = Flag();
    break;
  case cudaMemPoolReuseAllowOpportunistic:
    Pool->ReuseAllowOpportunistic = Flag();
    break;
  case cudaMemPoolReuseAllowInternalDependencies:
    Pool->ReuseAllowInternalDependencies = Flag();
    break;
  case cudaMemPoolAttrReleaseThreshold:
    Pool->ReleaseThreshold = Bytes();
    break;
  // "It is illegal to set this attribute to a non-zero value": zero resets
  // the high watermark to what is held now.
  case cudaMemPoolAttrReservedMemHigh:
    if (Bytes() != 0)
      return ret(cudaErrorInvalidValue);
    Pool->ReservedHigh = Pool->ReservedBytes;
    break;
  case cudaMemPoolAttrUsedMemHigh:
    if (Bytes() != 0)
      return ret(cudaErrorInvalidValue);
    Pool->UsedHigh = Pool->UsedBytes;
    break;
  default: // the current amounts are read-only; anything else is no attribute
    return ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t Pool, cudaMemPoolAttr Attr, void *Value) {
  ENTER();
  if (!M.isPool(Pool) || !Value)
    return ret(cudaErrorInvalidValue);
  auto *Flag = static_cast<int *>(Value);
  auto *Bytes = static_cast<uint64_t *>(Value);
  switch (Attr) {
  case cudaMemPoolReuseFollowEventDependencies:
    *Flag = Pool->ReuseFollowEventDependencies;
    break;
  case cudaMemPoolReuseAllowOpportunistic:
    *Flag = Pool->ReuseAllowOpportunistic;
    break;
  case cudaMemPoolReuseAllowInternalDependencies:
    *Flag = Pool->ReuseAllowInternalDependencies;
    break;
  case cudaMemPoolAttrReleaseThreshold:
    *Bytes = Pool->ReleaseThreshold;
    break;
  case cudaMemPoolAttrReservedMemCurrent:
    *Bytes = Pool->ReservedBytes;
    break;
  case cudaMemPoolAttrReservedMemHigh:
    *Bytes = Pool->ReservedHigh;
    break;
  case cudaMemPoolAttrUsedMemCurrent:
    *Bytes = Pool->UsedBytes;
    break;
  case cudaMemPoolAttrUsedMemHigh:
    *Bytes = Pool->UsedHigh;
    break;
  default:
    return ret(cudaErrorInvalidValue);
  }
  return cudaSuccess;
}

} // extern "C"
