//===- HostMemory.cpp - Pinned and registered host memory ------------------===//
//
// cudaHostAlloc (and cudaMallocHost), cudaHostRegister / cudaHostUnregister,
// cudaHostGetDevicePointer and cudaHostGetFlags. Pinned memory is host memory
// the model knows: each range is a PinnedHost allocation, so
// cudaPointerGetAttributes says cudaMemoryTypeHost, a twin may declare that
// its kernel touches it, and copies accept it; the UM model never pages it.
// The device has unified addressing and canUseHostPointerForRegisteredMem, so
// every pinned range is mapped, and its device pointer is its host pointer
// (the driver API's "Automatic Mapping of Host Allocated Host Memory").
//
//===----------------------------------------------------------------------===//
#include "Entry.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <iterator>
#include <vector>

using deepum::standin::Allocation;
using deepum::standin::mapBytes;
using deepum::standin::MemoryKind;
using deepum::standin::Model;
using deepum::standin::ret;

namespace {

constexpr unsigned kHostAllocFlags =
    cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
constexpr unsigned kHostRegisterFlags = cudaHostRegisterPortable | cudaHostRegisterMapped |
                                        cudaHostRegisterIoMemory | cudaHostRegisterReadOnly;

/// Whether every page of [P, P+Bytes) is mapped in this process: mincore
/// fails with ENOMEM on a range with a hole. Asked a gigabyte at a time, so
/// the residency vector stays small whatever the range.
bool hostMapped(const void *P, size_t Bytes) {
  const auto Page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  uint64_t Lo = reinterpret_cast<uint64_t>(P) / Page * Page;
  const uint64_t End = reinterpret_cast<uint64_t>(P) + Bytes;
  if (End < Lo)
    return false; // wraps around the address space
  constexpr uint64_t kStep = uint64_t{1} << 30;
  std::vector<unsigned char> Resident;
  while (Lo < End) {
    const uint64_t Len = std::min(kStep, End - Lo);
    Resident.resize((Len + Page - 1) / Page);
    if (mincore(reinterpret_cast<void *>(Lo), Len, Resident.data()) != 0)
      return false;
    Lo += Len;
  }
  return true;
}

/// An allocation of the model that shares an address with [Lo, Hi): the
/// whole mapping of the stand-in's own allocations counts, not only the
/// bytes asked for.
const Allocation *overlapping(const Model &M, uint64_t Lo, uint64_t Hi) {
  auto It = M.Allocs.lower_bound(Lo);
  if (It != M.Allocs.begin()) {
    const Allocation &Prev = std::prev(It)->second;
    if (Prev.Base + std::max({Prev.Mapped, Prev.Bytes, uint64_t{1}}) > Lo)
      return &Prev;
  }
  if (It != M.Allocs.end() && It->first < Hi)
    return &It->second;
  return nullptr;
}

/// Whether [Lo, Hi) shares an address with the memory pool's chunks: device
/// memory, though no allocation may hold the part asked about.
bool inPool(const Model &M, uint64_t Lo, uint64_t Hi) {
  for (const auto &[Base, Bytes] : M.DefaultPool.Chunks)
    if (Base < Hi && Lo < Base + Bytes)
      return true;
  return false;
}

/// The pinned range holding `P` (allocated or registered), or null.
const Allocation *pinned(const Model &M, const void *P) {
  const Allocation *A = M.find(P);
  return A && A->Kind == MemoryKind::PinnedHost ? A : nullptr;
}

} // namespace

extern "C" {

// "All of these flags are orthogonal to one another": any combination of
// the three is valid; another bit is not a flag.
cudaError_t cudaHostAlloc(void **Ptr, size_t Bytes, unsigned int Flags) {
  ENTER();
  if (!Ptr || (Flags & ~kHostAllocFlags))
    return ret(cudaErrorInvalidValue);
  uint64_t Mapped = 0;
  void *P = mapBytes(Bytes, Mapped);
  if (!P)
    return ret(cudaErrorMemoryAllocation);
  Allocation A;
  A.Base = reinterpret_cast<uint64_t>(P);
  A.Bytes = Bytes;
  A.Mapped = Mapped;
  A.Kind = MemoryKind::PinnedHost;
  A.HostFlags = Flags;
  M.Allocs[A.Base] = A;
  *Ptr = P;
  return cudaSuccess;
}

cudaError_t cudaMallocHost(void **Ptr, size_t Bytes) {
  return cudaHostAlloc(Ptr, Bytes, cudaHostAllocDefault);
}

// The range becomes pinned memory the model knows, until cudaHostUnregister.
// Not modelled, and refused as the header says a device without the feature
// refuses them: read-only registration (hostRegisterReadOnlySupported is 0)
// and I/O memory (the model has no other PCIe device).
cudaError_t cudaHostRegister(void *Ptr, size_t Bytes, unsigned int Flags) {
  ENTER();
  if (!Ptr || Bytes == 0 || (Flags & ~kHostRegisterFlags))
    return ret(cudaErrorInvalidValue);
  if (Flags & (cudaHostRegisterReadOnly | cudaHostRegisterIoMemory))
    return ret(cudaErrorNotSupported);
  const auto Lo = reinterpret_cast<uint64_t>(Ptr);
  if (Lo + Bytes < Lo)
    return ret(cudaErrorInvalidValue);
  if (const Allocation *A = overlapping(M, Lo, Lo + Bytes))
    // Pinned already (registered, or from cudaHostAlloc); managed and device
    // memory are not the host's to register.
    return ret(A->Kind == MemoryKind::PinnedHost ? cudaErrorHostMemoryAlreadyRegistered
                                                 : cudaErrorInvalidValue);
  if (inPool(M, Lo, Lo + Bytes))
    return ret(cudaErrorInvalidValue);
  // The driver pins the pages, which fails on addresses nothing maps.
  if (!hostMapped(Ptr, Bytes))
    return ret(cudaErrorInvalidValue);
  Allocation A;
  A.Base = Lo;
  A.Bytes = Bytes;
  A.Kind = MemoryKind::PinnedHost;
  A.HostFlags = Flags;
  A.Registered = true;
  M.Allocs[A.Base] = A;
  return cudaSuccess;
}

// "The base address must be the same one specified to cudaHostRegister()."
cudaError_t cudaHostUnregister(void *Ptr) {
  ENTER();
  if (!Ptr)
    return ret(cudaErrorInvalidValue);
  auto It = M.Allocs.find(reinterpret_cast<uint64_t>(Ptr));
  if (It == M.Allocs.end() || !It->second.Registered)
    return ret(cudaErrorHostMemoryNotRegistered);
  M.Allocs.erase(It); // the memory is the program's: nothing to unmap
  return cudaSuccess;
}

// Any address inside a pinned range, allocated or registered, with whatever
// flags: under unified addressing all of them are mapped, at the same address.
cudaError_t cudaHostGetDevicePointer(void **Device, void *Host, unsigned int Flags) {
  ENTER();
  if (!Device || Flags != 0 || !pinned(M, Host))
    return ret(cudaErrorInvalidValue);
  *Device = Host;
  return cudaSuccess;
}

// "Will fail if the input pointer does not reside in an address range
// allocated by cudaHostAlloc()": a registered range has no such flags.
cudaError_t cudaHostGetFlags(unsigned int *Flags, void *Host) {
  ENTER();
  const Allocation *A = pinned(M, Host);
  if (!Flags || !A || A->Registered)
    return ret(cudaErrorInvalidValue);
  *Flags = A->HostFlags;
  return cudaSuccess;
}

} // extern "C"
