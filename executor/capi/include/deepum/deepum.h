/*===- deepum/deepum.h - libdeepum's C ABI ---------------------------------===
 *
 * The only symbols libdeepum.so exports. deepum_malloc/deepum_free match
 * PyTorch's pluggable allocator:
 *
 *   alloc = torch.cuda.memory.CUDAPluggableAllocator("libdeepum.so",
 *                                                    "deepum_malloc", "deepum_free")
 *   torch.cuda.memory.change_current_allocator(alloc)   # before any CUDA allocation
 *
 * Configuration comes from the environment at the first call (DEEPUM_PLAN,
 * DEEPUM_GPU_MEMORY, DEEPUM_LOG) unless deepum_init was called first. Every
 * entry point is thread-safe and never aborts the process: on internal
 * failure deepum falls back to a plain managed-memory pool, then to nothing.
 *
 *===----------------------------------------------------------------------===*/
#ifndef DEEPUM_DEEPUM_H
#define DEEPUM_DEEPUM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Statistics of one device. Fields are only ever appended: callers pass
 * sizeof(deepum_stats_t) and an older library fills what it knows. */
typedef struct deepum_stats {
  uint64_t allocations; /* deepum_malloc calls served */
  uint64_t frees;
  uint64_t bytes_in_use; /* live bytes (arena + pool) */
  uint64_t peak_bytes_in_use; /* most live bytes (arena + pool) at one time */
  uint64_t bytes_reserved;    /* managed bytes held (arena + pool segments) */
  uint64_t arena_placements;  /* allocations placed where the plan said */
  uint64_t placement_misses;  /* calls not placed in the arena: during iterations every one,
                                 before them those a placement names by call (docs/executor.md) */
  uint64_t launches;          /* kernel launches observed */
  uint64_t launches_matched;  /* ... that matched the plan */
  uint64_t launches_inserted; /* ... not in the plan where one was expected */
  uint64_t positions_missing; /* planned launches that did not happen */
  uint64_t resyncs;           /* times the cursor found its place again */
  uint64_t iterations;        /* plan iterations completed */
  uint64_t prefetch_batches;
  uint64_t prefetch_bytes;
  uint64_t evict_batches;
  uint64_t evict_bytes;
  uint64_t discard_batches;
  uint64_t discard_bytes;
  uint64_t discards_kept_live; /* discard bytes turned into evictions: data was live */
  uint64_t advises;
  uint64_t budget_evictions; /* bytes evicted to keep under DEEPUM_GPU_MEMORY */
  uint64_t resident_bytes;   /* modelled GPU-resident managed bytes */
  uint64_t budget_bytes;     /* 0 = no budget */
  uint64_t backend_errors;   /* failing CUDA calls (counted, logged, never fatal) */
  uint32_t plan_active;      /* 1 while a plan is being replayed */
  uint32_t launch_tracking;  /* 1 when launches are observed (CUPTI subscriber held) */
  /* The launch-time guard: launches whose arguments named arena blocks the
   * plan had not left on the GPU, brought back before the kernel ran (0 with
   * a plan that knows every kernel's tensors); the bytes brought back; how
   * many of those launches waited for a release of the same blocks still in
   * flight. */
  uint64_t guard_restores;
  uint64_t guard_restore_bytes;
  uint64_t guard_waits;
  /* The copy path (docs/executor.md): the pinned pool (0: off); bytes copied
   * out to it and back; bytes the plan said to copy out that went through
   * Unified Memory instead (not in one live allocation, slot taken, a failed
   * copy); bytes the guard copied back for launches naming them; bytes in
   * the pool now and at most; launches whose arguments were unknown while
   * the pool held data (everything came back before them); bytes brought
   * back all at once before a device synchronization or as the plan turned
   * off. */
  uint64_t copy_pool_bytes;
  uint64_t copy_out_bytes;
  uint64_t copy_in_bytes;
  uint64_t copy_fallback_bytes;
  uint64_t guard_copy_in_bytes;
  uint64_t pooled_bytes;
  uint64_t peak_pooled_bytes;
  uint64_t blind_launches;
  uint64_t copy_restore_all_bytes;
  /* GPU time the guard's launches spent waiting for what it brought back
   * (their streams' time from before the restore to after it; measured
   * where the backend can time events, else 0), ns. */
  uint64_t guard_wait_ns;
} deepum_stats_t;

/* Starts deepum explicitly: `plan_path` applies to every device (NULL = no
 * plan, or DEEPUM_PLAN). Returns 0 on success, -1 when deepum was already
 * started (the earlier configuration stays). */
int deepum_init(const char *plan_path);

/* PyTorch pluggable-allocator entry points. */
void *deepum_malloc(ssize_t size, int device, void *stream);
void deepum_free(void *ptr, ssize_t size, int device, void *stream);

/* Marks the end of a training iteration (optional: the plan cursor also finds
 * iteration boundaries itself). */
void deepum_step(void);

/* Fills `out` (of `out_size` bytes) for `device`. Returns 0, or -1 for an
 * unknown device or when deepum is not started. */
int deepum_get_stats(int device, deepum_stats_t *out, size_t out_size);

/* The report of `device` (-1: every device in use, {"schema":1,"devices":[...]})
 * as one JSON object: the plan's path and profile fingerprint, whether it is
 * replayed and if not why ("why_not"), launches seen / matched / undecoded,
 * resyncs, prefetch / evict / discard / advise calls and bytes, backend
 * errors, budget, peak resident bytes (docs/executor.md lists the keys).
 * snprintf-style: writes at most `size` bytes including the terminating NUL
 * (`buf` may be NULL when `size` is 0) and returns the length of the whole
 * report, or -1 for an unknown device or when deepum is not started. With
 * DEEPUM_STATS=path set when deepum starts, the report of every device is
 * written to that path at exit. */
int deepum_stats_json(int device, char *buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* DEEPUM_DEEPUM_H */
