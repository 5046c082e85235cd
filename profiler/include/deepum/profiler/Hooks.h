/*===- deepum/profiler/Hooks.h - How the allocator talks to the profiler ---===*
 *
 * The recording interface the profiler's injection library exposes to the
 * rest of the process: deepum's allocator reports every allocation and free,
 * and deepum_step() reports the end of each training iteration.
 *
 * The driver dlopen()s the injection library (CUDA_INJECTION64_PATH), so its
 * symbols are not visible to a normal link. The allocator finds the hooks with
 * deepum_profiler_find_hooks() below, after its first CUDA call (the library
 * is loaded at cuInit): it dlopen()s the path in DEEPUM_PROFILER_LIBRARY with
 * RTLD_NOLOAD — never loading it, only finding it — and looks up
 * deepum_profiler_get_hooks. NULL means "not profiling": nothing to report.
 *
 * Contract:
 * - Addresses are device (managed) pointers; sizes are the requested bytes.
 * - record_alloc is called after the memory is obtained, record_free before
 *   it is given back, so no two live records overlap.
 * - The calls are thread-safe, cheap (a lock and a vector push) and never
 *   call CUDA, so they are safe from inside an allocator.
 * - Times are taken by the profiler (CUPTI's clock), not passed in.
 *
 * Plain C so any allocator (C++, Python's ctypes) can use it.
 *===----------------------------------------------------------------------===*/
#ifndef DEEPUM_PROFILER_HOOKS_H
#define DEEPUM_PROFILER_HOOKS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a field is added; a caller checks version >= what it needs. */
#define DEEPUM_PROFILER_HOOKS_VERSION 2

typedef struct deepum_profiler_hooks {
  uint32_t version;
  /* An allocation of `bytes` at `ptr` on `stream` (an opaque cudaStream_t, 0 = default). */
  void (*record_alloc)(const void *ptr, uint64_t bytes, uint64_t stream);
  /* The allocation at `ptr` is about to be freed. */
  void (*record_free)(const void *ptr);
  /* deepum_step(): one training iteration ended and the next begins. Waits for
     the GPU to finish the iteration's work (the profile needs its records),
     so call it from the training loop, not from a CUDA callback. */
  void (*step)(void);
  /* Version 2: record_alloc with the allocator's count of allocation calls in
     this process so far, on every device, this one included (1 for the
     first), which the profile keeps so that a plan can place memory allocated
     before its reference iteration call by call. */
  void (*record_alloc_call)(const void *ptr, uint64_t bytes, uint64_t stream, uint64_t call);
} deepum_profiler_hooks;

/* Exported by the injection library; never NULL there. */
const deepum_profiler_hooks *deepum_profiler_get_hooks(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#if defined(__cplusplus) && defined(__linux__)
#include <cstdlib>
#include <dlfcn.h>

/* The hooks when this process is being profiled, else NULL. */
inline const deepum_profiler_hooks *deepum_profiler_find_hooks() {
  const char *Path = std::getenv("DEEPUM_PROFILER_LIBRARY");
  if (!Path || !*Path)
    return nullptr;
  void *Lib = dlopen(Path, RTLD_NOW | RTLD_NOLOAD);
  if (!Lib)
    return nullptr; /* not loaded (yet): CUDA not initialised, or not profiling */
  auto *Get =
      reinterpret_cast<const deepum_profiler_hooks *(*)()>(dlsym(Lib, "deepum_profiler_get_hooks"));
  const deepum_profiler_hooks *Hooks = Get ? Get() : nullptr;
  dlclose(Lib); /* drops only the reference RTLD_NOLOAD took */
  return Hooks && Hooks->version >= 1 ? Hooks : nullptr;
}
#endif

#endif /* DEEPUM_PROFILER_HOOKS_H */
