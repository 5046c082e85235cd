//===- Interpose.cpp - A CUDA program's own allocations through libdeepum ---===//
//
// libdeepum_interpose.so, preloaded by deepum-run (and by deepum-profile
// --allocator-library) into a program that calls the CUDA runtime's
// cudaMallocManaged / cudaMalloc / cudaFree itself, built with
// `nvcc -cudart shared`: those calls become deepum_malloc / deepum_free, so
// that an unmodified C++ training binary is profiled, planned and replayed
// as a PyTorch one is through its pluggable allocator.
//
// Never a second allocator beside libdeepum: every decision is libdeepum's.
// This file only routes calls, and steps aside (the real runtime's call)
// wherever libdeepum cannot serve one:
//   - libdeepum not found, or deepum_malloc returning NULL;
//   - cudaMallocManaged with cudaMemAttachHost (deepum's memory is attached
//     globally);
//   - a call made from inside libdeepum itself (a libdeepum linked against
//     the shared runtime reaches these symbols too): a thread-local guard;
//   - cudaFree of a pointer deepum did not hand out.
// The symbols carry the version node of NVIDIA's runtime (interpose.map),
// so a program's versioned references bind here first.
//
//===----------------------------------------------------------------------===//
#include <dlfcn.h>

#include <cstddef>
#include <cstdio>
#include <climits>
#include <cstdlib>
#include <mutex>
#include <unordered_set>

#include <sys/types.h>

namespace {

// The runtime's types as plain integers: this library needs no CUDA headers
// (cudaError_t is an enum of int; 0 is cudaSuccess, 2 cudaErrorMemoryAllocation).
using RtError = int;
constexpr RtError kSuccess = 0;
constexpr RtError kErrorMemoryAllocation = 2;
constexpr unsigned kMemAttachGlobal = 0x01;

using MallocManagedFn = RtError (*)(void **, size_t, unsigned);
using MallocFn = RtError (*)(void **, size_t);
using FreeFn = RtError (*)(void *);
using GetDeviceFn = RtError (*)(int *);
using SyncFn = RtError (*)();
using DeepumMallocFn = void *(*)(ssize_t, int, void *);
using DeepumFreeFn = void (*)(void *, ssize_t, int, void *);

thread_local bool InsideDeepum = false;

/// Sets the guard for the lifetime of a call into libdeepum.
struct Inside {
  Inside() { InsideDeepum = true; }
  ~Inside() { InsideDeepum = false; }
  Inside(const Inside &) = delete;
  Inside &operator=(const Inside &) = delete;
};

void say(const char *What, const char *Detail) {
  // libdeepum's log switch: DEEPUM_LOG=off silences this too; never fatal.
  const char *Level = std::getenv("DEEPUM_LOG");
  if (Level && Level[0] == 'o')
    return;
  std::fprintf(stderr, "deepum: interpose: %s%s%s\n", What, Detail ? ": " : "",
               Detail ? Detail : "");
}

template <typename Fn> Fn next(const char *Name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, Name));
}

/// The runtime's own entry points, next after this library in lookup order.
/// Looked up without loading anything, so that a call from inside libdeepum's
/// start-up never re-enters the start-up.
struct Runtime {
  MallocManagedFn MallocManaged = next<MallocManagedFn>("cudaMallocManaged");
  MallocFn Malloc = next<MallocFn>("cudaMalloc");
  FreeFn Free = next<FreeFn>("cudaFree");
  GetDeviceFn GetDevice = next<GetDeviceFn>("cudaGetDevice");
  SyncFn DeviceSynchronize = next<SyncFn>("cudaDeviceSynchronize");
};

const Runtime &runtime() {
  static const Runtime R;
  return R;
}

/// libdeepum's allocator entry points, or null where it cannot be had.
struct Deepum {
  DeepumMallocFn Malloc = nullptr;
  DeepumFreeFn Free = nullptr;
};

const Deepum &deepum() {
  static const Deepum D = [] {
    Deepum Out;
    // DEEPUM_LIBRARY as deepum-run sets it (python/deepum/__init__.py,
    // library_path), else the soname beside this library (RUNPATH $ORIGIN).
    const char *Path = std::getenv("DEEPUM_LIBRARY");
    Inside Guard; // libdeepum's start-up may call the runtime: those go straight to it
    void *H = dlopen(Path && *Path ? Path : "libdeepum.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!H) {
      say("libdeepum not loaded, the program allocates as without deepum", dlerror());
      return Out;
    }
    Out.Malloc = reinterpret_cast<DeepumMallocFn>(dlsym(H, "deepum_malloc"));
    Out.Free = reinterpret_cast<DeepumFreeFn>(dlsym(H, "deepum_free"));
    if (!Out.Malloc || !Out.Free) {
      say("libdeepum lacks deepum_malloc/deepum_free, the program allocates as without deepum",
          Path);
      Out = Deepum();
    }
    return Out;
  }();
  return D;
}

/// The pointers deepum handed out: cudaFree sends those back to deepum.
struct Handed {
  std::mutex Mu;
  std::unordered_set<void *> Ptrs;
};
Handed &handed() {
  static Handed *H = new Handed(); // never destroyed: frees may come at exit
  return *H;
}

/// deepum_malloc on the current device, or NULL where deepum cannot serve.
void *fromDeepum(size_t Size) {
  if (Size == 0 || Size > static_cast<size_t>(SSIZE_MAX))
    return nullptr;
  const Deepum &D = deepum();
  const Runtime &R = runtime();
  if (!D.Malloc)
    return nullptr;
  int Device = 0;
  if (R.GetDevice && R.GetDevice(&Device) != kSuccess)
    return nullptr;
  void *P = nullptr;
  {
    Inside Guard;
    P = D.Malloc(static_cast<ssize_t>(Size), Device, nullptr);
  }
  if (P) {
    Handed &H = handed();
    std::lock_guard<std::mutex> Lock(H.Mu);
    H.Ptrs.insert(P);
  }
  return P;
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) RtError cudaMallocManaged(void **DevPtr, size_t Size,
                                                                  unsigned Flags) {
  if (!InsideDeepum && DevPtr && Flags == kMemAttachGlobal)
    if (void *P = fromDeepum(Size)) {
      *DevPtr = P;
      return kSuccess;
    }
  const Runtime &R = runtime();
  return R.MallocManaged ? R.MallocManaged(DevPtr, Size, Flags) : kErrorMemoryAllocation;
}

__attribute__((visibility("default"))) RtError cudaMalloc(void **DevPtr, size_t Size) {
  // Managed memory is valid wherever device memory is: a kernel cannot tell.
  if (!InsideDeepum && DevPtr)
    if (void *P = fromDeepum(Size)) {
      *DevPtr = P;
      return kSuccess;
    }
  const Runtime &R = runtime();
  return R.Malloc ? R.Malloc(DevPtr, Size) : kErrorMemoryAllocation;
}

__attribute__((visibility("default"))) RtError cudaFree(void *DevPtr) {
  const Runtime &R = runtime();
  bool Ours = false;
  if (DevPtr && !InsideDeepum) {
    Handed &H = handed();
    std::lock_guard<std::mutex> Lock(H.Mu);
    Ours = H.Ptrs.erase(DevPtr) != 0;
  }
  if (!Ours)
    return R.Free ? R.Free(DevPtr) : kSuccess;
  // cudaFree waits for the device before the memory can be reused; deepum_free
  // is stream-ordered on the stream it is given (the legacy one here).
  if (R.DeviceSynchronize)
    R.DeviceSynchronize();
  int Device = 0;
  if (R.GetDevice)
    R.GetDevice(&Device);
  Inside Guard;
  deepum().Free(DevPtr, 0, Device, nullptr);
  return kSuccess;
}

} // extern "C"
